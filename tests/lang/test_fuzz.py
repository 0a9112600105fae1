"""Property tests of the front end.

- Robustness: mutated instances and random token soups fed to
  `serq.lang.load.load_text` raise nothing but `SerqError`, and every diagnostic
  they carry points at a real line.
- fmt: random syntactically valid programs (and the mutants that still
  compile) keep their IR through `serq fmt`, up to positions, and fmt is
  idempotent on them.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serq.diagnostics import SerqError
from serq.lang.fmt import format_program_source
from serq.ir.util import strip_positions
from serq.lang.load import compile_source, load_text

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [p.read_text() for p in sorted((ROOT / "instances").glob("*.sq"))]

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ---------------------------------------------------------------- robustness

CHARS = list("{}();,=+-*/%<>.~\"$#@ \n\t0123456789aexz_") + ["//", "/*", "*/", ".."]
TOKENS = ["pool", "stage", "session", "workload", "check", "const", "hold", "keep", "reuse", "need",
          "take", "reserve", "at", "admission", "admit", "if", "else", "then", "while", "repeat",
          "draw", "choose", "in", "by", "turn", "think", "prefill", "decode", "on", "growing",
          "progress", "spawn", "join", "drop", "end", "assert", "hidden", "full", "x", "every",
          "poisson", "seed", "trace", "cap", "block", "via", "queue", "preempt", "evict", "requeue",
          "hol", "lifo", "fifo", "none", "lru", "desc", "front", "back", "skip", "copies", "free", "budget", "serve",
          "chunk", "cost", "invariant", "completes", "deadlock", "not", "and", "or", "true", "false",
          "kv", "gpu", "chat", "o", "g", "min", "cached", "floor", "budget_left", "ntok", "now",
          "arrived", "admitted", "released", "0", "1", "4", "2.5", "14ms", "3s", '"f.csv"',
          "{", "}", "(", ")", ";", ",", "=", "==", "<=", "+", "-", "*", "/", "%", "..", "~"]


def assert_clean(text: str, **kw) -> None:
    """Only located diagnostics may come out."""
    try:
        loaded = load_text(text, "fuzz.sq", **kw)
    except SerqError as e:
        assert e.diagnostics, "a SerqError must carry diagnostics"
        for d in e.diagnostics:
            assert d.line >= 1 and d.col >= 1, d.render(text)
            assert d.line <= max(text.count("\n") + 1, 1), d.render(text)
        e.render()
        return
    for d in loaded.warnings:
        assert d.line >= 1 and d.col >= 1, d.render(text)


@st.composite
def mutants(draw):
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["delete", "insert", "duplicate", "delete_word", "insert_token"]))
        if op == "delete":
            j = min(len(text), i + draw(st.integers(1, 3)))
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(CHARS)) + text[i:]
        elif op == "duplicate":
            j = min(len(text), i + draw(st.integers(1, 40)))
            text = text[:j] + text[i:j] + text[j:]
        elif op == "delete_word":
            j = i
            while j < len(text) and not text[j].isspace():
                j += 1
            text = text[:i] + text[j:]
        else:
            text = text[:i] + " " + draw(st.sampled_from(TOKENS)) + " " + text[i:]
    return text


@FAST
@given(mutants(), st.booleans())
def test_mutated_instances_give_only_diagnostics(text, theorem):
    assert_clean(text, theorem=theorem, explorer=theorem)


@FAST
@given(st.lists(st.sampled_from(TOKENS), max_size=40))
def test_token_soup_gives_only_diagnostics(tokens):
    assert_clean(" ".join(tokens))


@FAST
@given(st.lists(st.sampled_from(CHARS + TOKENS), max_size=60))
def test_character_soup_gives_only_diagnostics(pieces):
    assert_clean("".join(pieces))


def test_deep_nesting_is_a_diagnostic():
    assert_clean("const A = " + "(" * 5000 + "1" + ")" * 5000 + ";\n")
    assert_clean("session s {\n" + "if true {\n" * 3000 + "}\n" * 3000 + "}\n")


# ---------------------------------------------------------------- fmt round trip


def compiled(text: str):
    """The IR without positions, or the set of error codes."""
    try:
        return strip_positions(compile_source(text, "gen.sq")[0])
    except SerqError as e:
        return frozenset(d.code for d in e.diagnostics)


def assert_fmt_property(text: str) -> None:
    out = format_program_source(text, "gen.sq")
    assert format_program_source(out, "gen.sq") == out, "fmt is not idempotent"
    assert compiled(out) == compiled(text), "fmt changed the program"


@FAST
@given(mutants())
def test_fmt_keeps_mutants_that_parse(text):
    try:
        format_program_source(text, "gen.sq")
    except SerqError:
        return
    assert_fmt_property(text)


# Random programs, built as trees and printed with every parenthesis (and
# random spacing and comments), so fmt has something to canonicalise.

NAMES = ["a", "b", "prompt", "g"]


def exprs(depth: int = 3):
    leaf = st.one_of(
        st.sampled_from(NAMES),
        st.integers(0, 30).map(str),
        st.sampled_from(["0.5", "2.25", "3ms", "1.5s", "true", "false", "K", "budget_left", "cached(kv)"]),
    )
    if depth == 0:
        return leaf

    sub = exprs(depth - 1)
    return st.one_of(
        leaf,
        st.tuples(sub, st.sampled_from(["+", "-", "*", "/", "%", "==", "<", ">=", "and", "or"]), sub)
        .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        sub.map(lambda e: f"(-{e})"),
        sub.map(lambda e: f"(not {e})"),
        st.tuples(sub, sub, sub).map(lambda t: f"(if {t[0]} then {t[1]} else {t[2]})"),
        st.tuples(st.sampled_from(["min", "max"]), sub, sub).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        sub.map(lambda e: f"floor({e})"),
    )


EXPR = exprs()
SMALL = exprs(1)


class Fresh:
    """Declared names must be unique in a session: number them."""

    def __init__(self):
        self.n = 0

    def __call__(self) -> str:
        self.n += 1
        return f"v{self.n}"


@st.composite
def blocks(draw, depth: int, fresh: Fresh, in_hold: bool = False):
    out = []
    for _ in range(draw(st.integers(0 if depth < 2 else 1, 3))):
        out.append(draw(stmts(depth, fresh, in_hold)))
    return "{ " + " ".join(out) + " }"


@st.composite
def stmts(draw, depth: int, fresh: Fresh, in_hold: bool):
    kinds = ["let", "set", "draw", "choose", "turn", "run", "spawn", "join", "drop", "assert", "end"]
    if depth > 0:
        kinds += ["if", "while", "repeat", "hold", "hold"]
    k = draw(st.sampled_from(kinds))
    if k == "let":
        return f"let {fresh()} = {draw(EXPR)};"
    if k == "set":
        return f"set {draw(st.sampled_from(NAMES))} = {draw(EXPR)};"
    if k in ("draw", "choose"):
        dom = draw(st.one_of(st.lists(SMALL, min_size=1, max_size=3).map(lambda v: "{" + ", ".join(v) + "}"),
                             st.tuples(SMALL, SMALL).map(lambda t: f"{t[0]}..{t[1]}")))
        if k == "draw":
            dist = draw(st.sampled_from(["", " ~ uniform", " ~ geometric(0.3)", " ~ poisson(2)"]))
            return f"draw {fresh()} in {dom}{dist}{draw(st.sampled_from(['', ' hidden']))};"
        by = draw(st.sampled_from(["", f" by {draw(SMALL)}"]))
        return f"choose {fresh()} in {dom}{by};"
    if k == "turn":
        return draw(st.sampled_from(["turn;", f"turn think {draw(SMALL)};"]))
    if k == "run":
        opts = draw(st.sampled_from(["", " on gpu", " growing kv", " on gpu growing kv progress g", " progress g"]))
        return f"{draw(st.sampled_from(['prefill', 'decode']))} {draw(EXPR)}{opts};"
    if k == "spawn":
        args = draw(st.sampled_from(["", "()", "(n=1)", f"(n={draw(SMALL)})"]))
        times = draw(st.sampled_from(["", f" x {draw(SMALL)}"]))
        return f"spawn child{args}{times};"
    if k == "join":
        return "join;"
    if k == "drop":
        return "drop kv;"
    if k == "assert":
        return f"assert {draw(EXPR)};"
    if k == "end":
        return "end;"
    if k in ("while", "repeat"):
        return f"{k} {draw(EXPR)} {draw(blocks(depth - 1, fresh, in_hold))}"
    if k == "if":
        s = f"if {draw(EXPR)} {draw(blocks(depth - 1, fresh, in_hold))}"
        tail = draw(st.sampled_from(["", "else", "else if"]))
        if tail == "else":
            s += f" else {draw(blocks(depth - 1, fresh, in_hold))}"
        elif tail == "else if":
            s += f" else if {draw(EXPR)} {draw(blocks(depth - 1, fresh, in_hold))}"
        return s
    # hold
    pools = draw(st.sampled_from([["kv"], ["seqs"], ["seqs", "kv"]]))
    items = []
    for p in pools:
        form = draw(st.sampled_from(["short", "reserve", "need", "take", "needtake", "reuse"]))
        e, e2 = draw(SMALL), draw(SMALL)
        items.append({"short": f"{p} ({e})", "reserve": f"{p} reserve ({e})", "need": f"{p} need ({e})",
                      "take": f"{p} take {e2}", "needtake": f"{p} need ({e}) take ({e2})",
                      "reuse": f"{p} reuse ({e2}) need {e}"}[form])
    s = "hold " + ", ".join(items)
    if draw(st.booleans()):
        s += f" at admission ({fresh()} = {draw(SMALL)})"
    if draw(st.booleans()):
        s += f" admit if {draw(EXPR)}"
    s += " " + draw(blocks(depth - 1, fresh, True))
    keep = draw(st.sampled_from(["", f" keep ({pools[-1]} full)", f" keep ({pools[0]} ({draw(SMALL)}))"]))
    return s + keep + draw(st.sampled_from(["", ";"]))


@st.composite
def programs(draw):
    fresh = Fresh()
    parts = ["const K = " + draw(st.sampled_from(["4", "2 * 3", "(1 + 1) * 2", "8 / 2 * 1"])) + ";"]
    kv_opts = draw(st.permutations(["cap 16;", "block K;", "admit via gpu;", "preempt lifo;", "evict lru;",
                                    "queue (desc a, arrived);", "requeue back;", "hol skip;", "copies keep;"]))
    kv_opts = kv_opts[: draw(st.integers(0, len(kv_opts)))]
    parts.append("pool kv { " + " ".join(kv_opts) + " }")
    parts.append("pool seqs { cap 4; " + draw(st.sampled_from(["", "admit via gpu;", "preempt none;"])) + " }")
    st_opts = draw(st.permutations(["budget 8;", "chunk 4;", "serve (desc a, admitted);", "cost 14ms + 30us * ntok;"]))
    parts.append("stage gpu { " + " ".join(st_opts[: draw(st.integers(0, 4))]) + " }")
    parts.append("session child(n = 1) { decode n; }")
    params = draw(st.sampled_from(["", "(a, b = 2)", "(a = 1, b = 2, prompt = 3, g = 0)"]))
    body = draw(blocks(2, fresh))
    parts.append(f"session main{params} {body}")
    lines = []
    for _ in range(draw(st.integers(0, 3))):
        arr = draw(st.sampled_from(["", " every 2.5s", " poisson 0.5/s seed 3", ' trace "t.csv"', " at 1ms"]))
        args = draw(st.sampled_from(["", "(a=1)", "(a=1, b=2)"])) if params else ""
        lines.append(f"{draw(st.integers(0, 3))} x main{args}{arr};")
    parts.append("workload { " + " ".join(lines) + " }")
    parts.append(draw(st.sampled_from(["check completes;", "check deadlock, livelock;", "check invariant allocated(kv) <= 16;", ""])))
    # random layout: newlines or spaces between parts, comments sprinkled in
    text = ""
    for p in parts:
        sep = draw(st.sampled_from([" ", "\n", "\n\n", "\n// a comment\n", "  // trailing\n", " /* block */ "]))
        text += p + sep
    return text


@FAST
@given(programs())
def test_fmt_round_trip_on_generated_programs(text):
    before = compiled(text)
    assert not isinstance(before, frozenset), f"the generator made a program that does not compile: {before}"
    out = format_program_source(text, "gen.sq")
    assert format_program_source(out, "gen.sq") == out, "fmt is not idempotent"
    assert compiled(out) == before, "fmt changed the program"
