"""Source text → lark tree, with lark's errors turned into located
diagnostics whose expected-token lists are in words."""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from serq.diagnostics import Diagnostic, SerqError
from serq.vocab import MAX_EXPR_DEPTH, MAX_STMT_DEPTH

# Words for the terminals that are patterns; literal terminals print as `text`.
_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "INT": "an integer",
    "DURATION": "a duration (e.g. `14ms`)",
    "STRING": "a string",
    "CMP": "a comparison",
    "ADDOP": "`+` or `-`",
    "MULOP": "`*`, `/` or `%`",
    "$END": "end of input",
}

# Readable groups: when these terminals are all expected, say one word.
_EXPR_START = {"NAME", "NUMBER", "DURATION", "LPAR", "MINUS", "TRUE", "FALSE", "NOT", "IF", "FORALL", "EXISTS"}
_STMT_START = {"LET", "SET", "DRAW", "IF", "REPEAT", "WHILE", "CHOOSE", "TURN", "HOLD",
               "PREFILL", "DECODE", "SPAWN", "JOIN", "DROP", "END", "ASSERT"}
_ITEM_START = {"CONST", "POOL", "STAGE", "SESSION", "WORKLOAD", "CHECK"}


class KeywordsAreWords:
    """A no-op post-lexer whose only job is `always_accept`: with NAME in
    every state's lexer, lark's contextual lexer reads `capacity` as one
    word (then rejects it) instead of the keyword `cap` followed by `acity`;
    a keyword stays a keyword only where the grammar can take it."""

    always_accept = ("NAME",)

    def process(self, stream):
        return stream


def make_parser(**options) -> lark.Lark:
    text = resources.files("serq.lang").joinpath("grammar.lark").read_text()
    return lark.Lark(text, parser="lalr", propagate_positions=True, maybe_placeholders=True,
                     postlex=KeywordsAreWords(), **options)


@lru_cache(maxsize=1)
def grammar_parser() -> lark.Lark:
    # lark keeps the analysed grammar in a cache file keyed by its hash:
    # loading it takes a tenth of building the LALR tables again
    return make_parser(cache=True)


def _terminal_word(parser: lark.Lark, name: str) -> str:
    if name in _WORDS:
        return _WORDS[name]
    try:
        term = parser.get_terminal(name)
    except KeyError:
        return name.lower()
    pat = term.pattern
    if isinstance(pat, lark.lexer.PatternStr):
        return f"`{pat.value}`"
    return name.lower()


def expected_words(parser: lark.Lark, expected: set[str]) -> list[str]:
    """Turn a set of terminal names into a short sorted list of words."""
    exp = set(expected)
    words: list[str] = []
    if _ITEM_START <= exp:
        words.append("a declaration (`const`, `pool`, `stage`, `session`, `workload`, `check`)")
        exp -= _ITEM_START
    if _STMT_START <= exp:
        words.append("a statement")
        exp -= _STMT_START
    if {"NAME", "NUMBER", "LPAR"} <= exp:
        words.append("an expression")
        exp -= _EXPR_START
    words.extend(sorted({_terminal_word(parser, n) for n in exp}))
    return words


def _join_words(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    if len(words) > 8:
        return ", ".join(words[:8]) + ", ..."
    return ", ".join(words[:-1]) + " or " + words[-1]


def parse_tree(text: str, file: str = "<input>") -> lark.Tree:
    """Parse or raise SerqError with one located syntax diagnostic."""
    text = text.removeprefix("\ufeff")  # a byte order mark: not part of the text
    parser = grammar_parser()
    try:
        tree = parser.parse(text)
    except UnexpectedInput as e:
        raise SerqError([syntax_diagnostic(parser, e, text, file)], text) from None
    check_depth(tree, text, file)
    return tree


EXPR_RULES = frozenset({"number", "duration", "true", "false", "name", "call", "binop", "cmp",
                        "and_", "or_", "not_", "neg", "cond", "forall", "exists", "count", "of"})


def check_depth(tree: lark.Tree, text: str, file: str) -> None:
    """E004 where the tree nests deeper than the limits, at the start of the
    expression or of the statement too deep: one iterative pass, so any
    depth costs no stack."""
    stack = [(tree, 0, 0, None, tree.data)]
    while stack:
        t, ed, sd, top, parent = stack.pop()
        if t.data in EXPR_RULES:
            ed += 1
            top = top if ed > 1 else t
            if ed > MAX_EXPR_DEPTH:
                raise SerqError([_deep(top, file, f"this expression nests more than {MAX_EXPR_DEPTH} operations",
                                       "a chain such as `a + b + c + ...` nests one per operator",
                                       "compute it in steps with `let`")], text)
        elif t.data == "block" or (t.data == "if_stmt" and parent == "if_stmt"):  # a body, an `else if`
            sd += 1
            if sd > MAX_STMT_DEPTH:
                raise SerqError([_deep(t, file, f"statements nested more than {MAX_STMT_DEPTH} deep",
                                       "move the inner part into a session of its own and `spawn` it")], text)
        else:
            ed, top = 0, None
        for c in t.children:
            if isinstance(c, lark.Tree):
                stack.append((c, ed, sd, top, t.data))


def _deep(t: lark.Tree, file: str, message: str, *notes: str) -> Diagnostic:
    line, col = (t.meta.line, t.meta.column) if not t.meta.empty else (1, 1)
    return Diagnostic(line, col, "E004", message, file=file, notes=notes)


def syntax_diagnostic(parser: lark.Lark, e: UnexpectedInput, text: str, file: str) -> Diagnostic:
    d = _syntax_diagnostic(parser, e, text, file)
    hints = slip_hints(e, text, d.line, d.col)
    if not hints:
        return d
    # a named slip explains the error better than a guess about a missing `;`
    notes = tuple(n for n in d.notes if n != _SEMI_NOTE) + hints
    return Diagnostic(d.line, d.col, d.code, d.message, file=d.file, notes=notes, span=d.span)


_SEMI_NOTE = "is a `;` missing before it?"
_EXPONENT = re.compile(r"[eE][+-]?\d+")


def slip_hints(e: UnexpectedInput, text: str, line: int, col: int) -> tuple[str, ...]:
    """Notes for the common slips: `=` for `==`, `&&`/`||`/`!` for
    `and`/`or`/`not`, `1e3` for 1000, and a `//` that started a comment
    (there is no floor division operator)."""
    lines = text.splitlines() or [""]
    here = lines[line - 1] if 0 < line <= len(lines) else ""
    rest = here[col - 1:]
    out: list[str] = []
    if isinstance(e, UnexpectedToken) and e.token.type != "$END":
        tok = str(e.token.value)
        if tok == "=" and "CMP" in (e.accepts or e.expected or ()):
            out.append("to compare, write `==`; a single `=` gives a value (`let`, `set`, `const`, arguments)")
        before = here[: col - 1]
        q = re.search(r"\bcount\s*\(\s*([A-Za-z_]\w*)\s+where\s*$", before)
        if q and "WHERE" in (e.accepts or e.expected or ()):
            out.append(f"a quantifier names its session: `count({q.group(1)} x where x.{tok} ...)`")
        m = _EXPONENT.match(rest)
        if m and tok[:1] in "eE" and before[-1:].isdigit():
            num, exp = re.search(r"[\d.]+$", before).group(), m.group()
            full = _expand(num, exp)
            out.append(f"numbers have no exponent: write `{num}{exp}` out in full" + (f" (`{full}`)" if full else ""))
    if isinstance(e, UnexpectedCharacters):
        if rest.startswith("&&"):
            out.append("write `and` for `&&`")
        elif rest.startswith("||"):
            out.append("write `or` for `||`")
        elif rest.startswith("&") or rest.startswith("|"):
            out.append("there are no bit operators: write `and` or `or` for conditions")
        elif rest.startswith("!"):
            out.append("write `not` for `!` (`!=` compares)")
    for ln in range(line, max(line - 3, 0), -1):  # this line or the two before
        src = lines[ln - 1] if ln <= len(lines) else ""
        cut = _comment_start(src)
        if cut is None:
            continue
        code = src[:cut].rstrip()
        if code and code[-1] not in ";{}" and (ln < line or col > cut):
            out.append(f"`//` at line {ln}, column {cut + 1} starts a comment: the rest of that line is not read; "
                       "for floor division write `floor(a / b)`")
        break
    return tuple(out)


def _expand(num: str, exp: str) -> str | None:
    try:
        v = float(num + exp)
    except ValueError:
        return None
    return str(int(v)) if v.is_integer() and abs(v) < 1e19 else None


def _comment_start(line: str) -> int | None:
    """Index of a `//` that starts a comment (outside a string), or None."""
    in_str = False
    for i, c in enumerate(line):
        if c == '"':
            in_str = not in_str
        elif not in_str and line.startswith("//", i):
            return i
    return None


def _syntax_diagnostic(parser: lark.Lark, e: UnexpectedInput, text: str, file: str) -> Diagnostic:
    line = getattr(e, "line", None) or 1
    col = getattr(e, "column", None) or 1
    if line < 1:  # lark reports -1 at end of input
        lines = text.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if 0 <= e.pos_in_stream < len(text) else "?"
        allowed = expected_words(parser, set(e.allowed or ()))
        msg = f"unexpected character {ch!r}"
        if allowed:
            msg += f"; expected {_join_words(allowed)}"
        return Diagnostic(line, col, "E002", msg, file=file)
    if isinstance(e, UnexpectedEOF):
        words = expected_words(parser, set(e.expected or ()))
        return Diagnostic(line, col, "E003", f"unexpected end of input; expected {_join_words(words)}", file=file,
                          notes=_unclosed(text))
    if isinstance(e, UnexpectedToken):
        tok = e.token
        if tok.type == "$END":
            found = "end of input"
        else:
            found = f"`{tok.value}`"
        words = expected_words(parser, set(e.accepts or e.expected or ()))
        notes = list(_unclosed(text)) if tok.type == "$END" else []
        if tok.type != "$END" and "SEMICOLON" in (e.accepts or ()):
            notes.append(_SEMI_NOTE)
        code = "E003" if tok.type == "$END" else "E001"
        return Diagnostic(line, col, code, f"unexpected {found}; expected {_join_words(words)}",
                          file=file, notes=tuple(notes), span=max(1, len(str(tok.value))) if tok.type != "$END" else 1)
    return Diagnostic(line, col, "E001", "syntax error", file=file)


def _unclosed(text: str) -> tuple[str, ...]:
    """A note naming the innermost `{` never closed, for errors at the end
    of the input (skips comments and strings)."""
    stack: list[tuple[int, int]] = []
    line, col, i, n = 1, 1, 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            col = j - (text.rfind("\n", 0, j) + 1) + 1
            i = j
            continue
        if c == '"':
            j = text.find('"', i + 1)
            j = n if j < 0 else j + 1
            col += j - i
            i = j
            continue
        if c == "{":
            stack.append((line, col))
        elif c == "}" and stack:
            stack.pop()
        if c == "\n":
            line, col = line + 1, 1
        else:
            col += 1
        i += 1
    if not stack:
        return ()
    l, c = stack[-1]
    return (f"the `{{` at line {l}, column {c} is never closed",)
