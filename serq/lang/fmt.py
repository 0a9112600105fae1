"""`serq fmt`: print an instance in canonical layout.

Formats from the lark tree, not from the IR (the IR has constants folded
and statements laid out as an automaton). The property the tests check:
parse → fmt → parse gives an equal IR up to positions, and fmt is
idempotent.

Layout rules (docs/language.md, "Canonical layout"):
- 2-space indentation, one statement per line; a session body, a hold
  body, an `if`/`while`/`repeat` body is always a block on its own lines;
  `} keep (...);` closes a hold that keeps something.
- a `pool`, `stage` or `workload` declaration written on one line stays on
  one line if it fits in `WIDTH` columns; otherwise one option per line.
- a hold header that does not fit in `WIDTH` columns puts `at admission`
  and `admit if` on continuation lines.
- spaces around binary operators, none inside parentheses; the minimal
  parentheses by precedence, except that hold clauses, keep amounts and
  run lengths that are not atoms are parenthesised (`need (prompt - c)`),
  and an `if ... then ... else` inside an operator is parenthesised.
- declarations, options and statements stay in source order; at most one
  blank line is kept where the source has blank lines, none after `{` or
  before `}`.

Comments: whole-line comments are kept on their own line before the
next line of output, at its indentation (at the body's indentation before
a `}`); a comment after code is kept at the end of the output line that
holds that source line, and trailing comments of adjacent lines are
aligned. Where a construct that spans several source lines is printed on
one (an expression broken over lines, a hold header), a whole-line comment
inside it moves to just after it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import lark
from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from serq import exprtext  # the printer without the IR: `serq fmt` loads no pydantic
from serq.diagnostics import Diagnostic, SerqError
from serq.lang.parser import check_depth, make_parser, syntax_diagnostic

WIDTH = 100
INDENT = "  "

# ------------------------------------------------------------------ parsing with comments

_lock = threading.Lock()
_comments: list[Token] = []


@lru_cache(maxsize=1)
def _parser() -> lark.Lark:
    # cached as the parser without comments is (serq.lang.parser.grammar_parser)
    return make_parser(cache=True, lexer_callbacks={"COMMENT": _comments.append, "BLOCK_COMMENT": _comments.append})


def parse_with_comments(text: str, file: str) -> tuple[Tree, list[Token]]:
    text = text.removeprefix("\ufeff")
    parser = _parser()
    with _lock:
        _comments.clear()
        try:
            tree = parser.parse(text)
        except UnexpectedInput as e:
            raise SerqError([syntax_diagnostic(parser, e, text, file)], text) from None
        comments = list(_comments)
        _comments.clear()
    check_depth(tree, text, file)
    return tree, comments


# ------------------------------------------------------------------ expressions

ATOM = exprtext.ATOM


def expr(t: Tree, least: int = 0) -> str:
    """Print an expression (the one printer, serq.ir.text); parenthesise it
    if its level is below `least`."""
    return exprtext.tree_text(t, least)


def wrapped(t: Tree) -> str:
    """An amount next to keywords (hold clauses, keep, runs): an atom or
    parenthesised, as in `need (prompt - c) take 0`."""
    return expr(t, ATOM)


def order(t: Tree) -> str:
    keys = []
    for k in t.children:
        desc, e = k.children
        keys.append(("desc " if desc is not None else "") + expr(e))
    return f"({', '.join(keys)})"


def call_args(t: Tree | None) -> str:
    if t is None:
        return ""
    args = []
    for a in t.children:
        if a is None:
            continue
        if a.data == "kwarg":
            args.append(f"{a.children[0]}={expr(a.children[1])}")
        else:
            args.append(expr(a.children[0]))
    return f"({', '.join(args)})" if args else ""


def domain(t: Tree) -> str:
    if t.data == "domain_set":
        return "{" + ", ".join(expr(v) for v in t.children) + "}"
    return f"{expr(t.children[0], 5)}..{expr(t.children[1], 5)}"


# ------------------------------------------------------------------ output lines


@dataclass
class Line:
    """One line of output (or several, for a broken hold header), with the
    source lines it stands for: comments are attached by those."""

    indent: int
    text: str
    start: tuple[int, int]  # source (line, col) where it starts
    end_line: int  # last source line it stands for
    kind: str = "plain"  # "plain" | "open" (ends with `{`) | "close" (starts with `}`)
    before: list[Token] = field(default_factory=list)  # whole-line comments, in order
    trailing: list[str] = field(default_factory=list)
    blank_before: bool = False


def _start(t) -> tuple[int, int]:
    if isinstance(t, Token):
        return (t.line, t.column)
    return (t.meta.line, t.meta.column)


def _end_line(t) -> int:
    if isinstance(t, Token):
        return t.end_line
    return t.meta.end_line


class Printer:
    def __init__(self):
        self.lines: list[Line] = []

    def emit(self, depth: int, text: str, start, end_line: int, kind: str = "plain") -> None:
        self.lines.append(Line(depth, text, start, end_line, kind))

    # ---------------------------------------------------------- declarations
    def program(self, tree: Tree) -> None:
        for it in tree.children:
            getattr(self, it.data)(it)

    def const_decl(self, t: Tree) -> None:
        self.emit(0, f"const {t.children[0]} = {expr(t.children[1])};", _start(t), _end_line(t))

    def prefix_decl(self, t: Tree) -> None:
        self.emit(0, f"prefix {t.children[0]} = {expr(t.children[1])};", _start(t), _end_line(t))

    def tick_decl(self, t: Tree) -> None:
        self.emit(0, f"tick {t.children[0]} before {t.children[1]};", _start(t), _end_line(t))

    def _option_block(self, t: Tree, head: str, options: list[tuple[Tree, str]]) -> None:
        one = f"{head} {{ {' '.join(s for _, s in options)} }}" if options else f"{head} {{}}"
        if t.meta.line == t.meta.end_line and len(one) <= WIDTH:
            self.emit(0, one, _start(t), _end_line(t))
            return
        self.emit(0, f"{head} {{", _start(t), _start(t)[0], "open")
        for opt, s in options:
            self.emit(1, s, _start(opt), _end_line(opt))
        self.emit(0, "}", (t.meta.end_line, t.meta.end_column - 1), t.meta.end_line, "close")

    def pool_decl(self, t: Tree) -> None:
        self._option_block(t, f"pool {t.children[0]}", [(o, self.pool_opt(o)) for o in t.children[1:]])

    @staticmethod
    def pool_opt(o: Tree) -> str:
        a = o.children[0]
        if o.data == "pool_cap":
            return f"cap {expr(a)};"
        if o.data == "pool_block":
            return f"block {expr(a)};"
        if o.data == "pool_admit":
            return f"admit via {a};"
        if o.data == "pool_queue":
            return f"queue {order(a)};"
        if o.data == "pool_preempt":
            v = a.children[0]
            return f"preempt {v if isinstance(v, Token) else order(v)};"
        if o.data == "pool_evict":
            v = a.children[0]
            return f"evict {v if isinstance(v, Token) else order(v)};"
        if o.data == "pool_requeue":
            return f"requeue {a};"
        if o.data == "pool_hol":
            return f"hol {a};"
        if o.data == "pool_copies":
            return f"copies {a};"
        if o.data == "pool_cache":
            return f"cache {a};"
        raise AssertionError(o.data)

    def stage_decl(self, t: Tree) -> None:
        opts = []
        for o in t.children[1:]:
            word = o.data.removeprefix("stage_")
            a = o.children[0]
            if word == "self_preempt":
                opts.append((o, f"self_preempt {a};"))
                continue
            opts.append((o, f"serve {order(a)};" if word == "serve" else f"{word} {expr(a)};"))
        self._option_block(t, f"stage {t.children[0]}", opts)

    def workload_decl(self, t: Tree) -> None:
        self._option_block(t, "workload", [(l, self.wl_line(l)) for l in t.children])

    @staticmethod
    def wl_line(t: Tree) -> str:
        count, prog, args, arr = t.children
        s = f"{expr(count)} x {prog}{call_args(args)}"
        if arr is not None:
            a = arr.children
            if arr.data == "arrive_every":
                s += f" every {expr(a[0])}"
            elif arr.data == "arrive_at":
                s += f" at {expr(a[0])}"
            elif arr.data == "arrive_poisson":
                s += f" poisson {a[0]}/{a[1]}" + (f" seed {a[2]}" if a[2] is not None else "")
            elif arr.data == "arrive_trace":
                s += f" trace {a[0]}"
        return s + ";"

    def check_decl(self, t: Tree) -> None:
        items = []
        for c in t.children:
            if c.data == "check_simple":
                items.append(str(c.children[0]))
            elif c.data == "check_slo":
                items.append(f"{expr(c.children[0])} {c.children[1]} {expr(c.children[2])}")
            elif c.data == "check_eventually":
                goal, fair = c.children
                items.append(f"eventually {goal}" + (f" under {fair}" if fair is not None else ""))
            else:
                kind = "sometimes" if c.data == "check_sometimes" else "invariant"
                items.append(f"{kind} {expr(c.children[0])}")
        self.emit(0, f"check {', '.join(items)};", _start(t), _end_line(t))

    def session_decl(self, t: Tree) -> None:
        name, params, body = t.children
        ps = []
        if params is not None:
            for p in params.children:
                if p is None:
                    continue
                ps.append(str(p.children[0]) + (f"={expr(p.children[1])}" if p.children[1] is not None else ""))
        head = f"session {name}" + (f"({', '.join(ps)})" if ps else "")
        self.emit(0, head + " {", _start(t), body.meta.line, "open")
        self.block_body(body, 1)
        self.emit(0, "}", (body.meta.end_line, body.meta.end_column - 1), t.meta.end_line, "close")

    # ---------------------------------------------------------- statements
    def block_body(self, block: Tree, depth: int) -> None:
        for s in block.children:
            self.stmt(s, depth)

    def close(self, block: Tree, depth: int, text: str, end_line: int | None = None) -> None:
        self.emit(depth, text, (block.meta.end_line, block.meta.end_column - 1),
                  end_line if end_line is not None else block.meta.end_line, "close")

    def stmt(self, t: Tree, depth: int) -> None:
        d, c = t.data, t.children
        simple = None
        if d == "let_stmt":
            simple = f"let {c[0]} = {expr(c[1])};"
        elif d == "set_stmt":
            simple = f"set {c[0]} = {expr(c[1])};"
        elif d == "draw_stmt":
            name, dom, dist, hidden = c
            simple = f"draw {name} in {domain(dom)}"
            if dist is not None:
                dname, *dps = dist.children
                dps = [p for p in dps if p is not None]
                simple += f" ~ {dname}" + (f"({', '.join(expr(p) for p in dps)})" if dps else "")
            if hidden is not None:
                simple += " hidden"
            simple += ";"
        elif d == "choose_stmt":
            name, dom, key = c
            simple = f"choose {name} in {domain(dom)}" + (f" by {expr(key)}" if key is not None else "") + ";"
        elif d == "turn_stmt":
            simple = "turn" + (f" think {expr(c[0])}" if c[0] is not None else "") + ";"
        elif d == "run_stmt":
            kind, amount, *opts = c
            simple = f"{kind} {wrapped(amount)}"
            for o in opts:
                simple += f" {o.data.removeprefix('run_')} {o.children[0]}"
            simple += ";"
        elif d == "spawn_stmt":
            prog, args, times = c
            simple = f"spawn {prog}{call_args(args)}" + (f" x {expr(times)}" if times is not None else "") + ";"
        elif d == "join_stmt":
            simple = "join;"
        elif d == "drop_stmt":
            simple = f"drop {c[0]};"
        elif d == "end_stmt":
            simple = "end;"
        elif d == "assert_stmt":
            simple = f"assert {expr(c[0])};"
        if simple is not None:
            self.emit(depth, simple, _start(t), _end_line(t))
            return
        if d == "if_stmt":
            self.if_stmt(t, depth, "if")
        elif d == "while_stmt":
            self.loop(t, depth, "while")
        elif d == "repeat_stmt":
            self.loop(t, depth, "repeat")
        elif d == "hold_stmt":
            self.hold(t, depth)
        else:
            raise AssertionError(d)

    def loop(self, t: Tree, depth: int, word: str) -> None:
        cond, body = t.children
        self.emit(depth, f"{word} {expr(cond)} {{", _start(t), body.meta.line, "open")
        self.block_body(body, depth + 1)
        self.close(body, depth, "}")

    def if_stmt(self, t: Tree, depth: int, word: str) -> None:
        cond, then_b, else_b = t.children
        if word == "if":
            self.emit(depth, f"if {expr(cond)} {{", _start(t), then_b.meta.line, "open")
        self.block_body(then_b, depth + 1)
        if else_b is None:
            self.close(then_b, depth, "}")
        elif else_b.data == "if_stmt":
            econd = else_b.children[0]
            self.emit(depth, f"}} else if {expr(econd)} {{", (then_b.meta.end_line, then_b.meta.end_column - 1),
                      else_b.children[1].meta.line, "close")
            self.if_stmt(else_b, depth, "else if")
        else:
            self.emit(depth, "} else {", (then_b.meta.end_line, then_b.meta.end_column - 1), else_b.meta.line, "close")
            self.block_body(else_b, depth + 1)
            self.close(else_b, depth, "}")

    def hold(self, t: Tree, depth: int) -> None:
        children = list(t.children)
        keep_t = children.pop()
        body = children.pop()
        admit_if_t = children.pop()
        admission_t = children.pop()
        items = [self.hold_item(it) for it in children]
        parts = ["hold " + ", ".join(items)]
        if admission_t is not None:
            binds = ", ".join(f"{b.children[0]} = {expr(b.children[1])}" for b in admission_t.children)
            parts.append(f"at admission ({binds})")
        if admit_if_t is not None:
            parts.append(f"admit if {expr(admit_if_t.children[0])}")
        one = " ".join(parts) + " {"
        if len(INDENT * depth) + len(one) <= WIDTH:
            head = one
        else:
            cont = "\n" + INDENT * depth + " " * len("hold ")
            head = cont.join(parts) + " {"
        self.emit(depth, head, _start(t), body.meta.line, "open")
        self.block_body(body, depth + 1)
        if keep_t is None:
            self.close(body, depth, "}")
        else:
            kept = []
            for k in keep_t.children:
                kept.append(f"{k.children[0]} full" if k.data == "keep_full" else f"{k.children[0]} {wrapped(k.children[1])}")
            self.close(body, depth, f"}} keep ({', '.join(kept)});", t.meta.end_line)

    @staticmethod
    def hold_item(t: Tree) -> str:
        pool, short, *clauses = t.children
        s = str(pool)
        if short is not None:
            s += f" {wrapped(short)}"
        for cl in clauses:
            if cl.data == "clause_prefix":
                s += f" prefix {cl.children[0]}"
                continue
            s += f" {cl.data.removeprefix('clause_')} {wrapped(cl.children[0])}"
        return s


# ------------------------------------------------------------------ comments and blank lines


def _whole_line(c: Token, src_lines: list[str]) -> bool:
    line = src_lines[c.line - 1] if 0 < c.line <= len(src_lines) else ""
    return line[: c.column - 1].strip() == ""


def _attach(lines: list[Line], comments: list[Token], src_lines: list[str]) -> list[Token]:
    """Attach comments to output lines; return the ones left for the end."""
    tail: list[Token] = []
    for c in comments:
        text = str(c).rstrip()
        if not _whole_line(c, src_lines) and "\n" not in text:
            holder = None
            for ln in lines:  # the last output line standing for the comment's line
                if ln.start[0] <= c.line <= ln.end_line:
                    holder = ln
            if holder is not None:
                holder.trailing.append(text)
                continue
        nxt = next((ln for ln in lines if ln.start > (c.line, c.column)), None)
        if nxt is None:
            tail.append(c)
        else:
            nxt.before.append(c)
    return tail


def render(lines: list[Line], comments: list[Token], source: str) -> str:
    src_lines = source.splitlines()
    blank = [i + 1 for i, s in enumerate(src_lines) if not s.strip()]
    tail = _attach(lines, comments, src_lines)
    out: list[tuple[str, str | None]] = []  # (code, trailing comment)
    prev_end = 0
    prev_open = True  # the start of the file behaves like an opening line

    def gap(start: int) -> bool:
        """A blank source line between the last printed thing and `start`."""
        return any(prev_end < b < start for b in blank)

    for ln in lines:
        ind = INDENT * (ln.indent + (1 if ln.kind == "close" else 0))
        for c in ln.before:
            if not prev_open and gap(c.line):
                out.append(("", None))
            out.append((ind + str(c).rstrip(), None))
            prev_end, prev_open = c.end_line, False
        if not prev_open and ln.kind != "close" and gap(ln.start[0]):
            out.append(("", None))
        out.append((INDENT * ln.indent + ln.text, " ".join(ln.trailing) if ln.trailing else None))
        prev_end, prev_open = ln.end_line, ln.text.endswith("{")
    for c in tail:
        if out and gap(c.line):
            out.append(("", None))
        out.append((str(c).rstrip(), None))
        prev_end = c.end_line
    return _align(out)


def _align(out: list[tuple[str, str | None]]) -> str:
    """Trailing comments of adjacent lines start in one column."""
    res: list[str] = []
    i = 0
    while i < len(out):
        if out[i][1] is None:
            res.append(out[i][0])
            i += 1
            continue
        j = i
        while j < len(out) and out[j][1] is not None:
            j += 1
        col = max(len(out[k][0].split("\n")[-1]) for k in range(i, j)) + 2
        for k in range(i, j):
            code, com = out[k]
            last = code.split("\n")[-1]
            res.append(code + " " * (col - len(last)) + com)
        i = j
    return "\n".join(res) + "\n"


# ------------------------------------------------------------------ entry points


def format_program_source(text: str, file: str = "<input>") -> str:
    """The canonical layout of an instance's source. Raises `SerqError` on a
    syntax error (formatting needs only the syntax, not a valid program)."""
    text = text.removeprefix("\ufeff")
    tree, comments = parse_with_comments(text, file)  # nesting within the limits (E004)
    p = Printer()
    p.program(tree)
    return render(p.lines, comments, text)


def format_path(path: str | Path) -> str:
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise SerqError([Diagnostic(0, 0, "E011", f"cannot read {path}: {getattr(e, 'strerror', None) or e}",
                                    file=str(path))]) from None
    return format_program_source(text, str(path))
