"""`serq sweep --require`: what a cell must show to pass, and the exit code.

A requirement is one or more clauses, every one of which must hold:

- `verdict=pass` (or `verdict=pass|livelock`, `verdict!=deadlock`): the
  cell's explorer verdict is (is not) one of those named; a bare `pass`
  (`pass|livelock`) is short for `verdict=pass` (`verdict=pass|livelock`);
- `METRIC<=N` or `METRIC<N` (`ttft<=4`, `queue:kv<3`): the worst case of a
  `--worst` metric over every behaviour of the cell (serq/check/worst.py)
  is at most (below) N; the metric is computed for every cell.

Without a verdict clause the verdict must be `pass`: the report says so.
A clause is true, false or unknown: a `bound` or `error` verdict is
unknown, and so is a worst case whose graph was cut below N (the true
value may be larger) or that has no value; an unbounded worst case (a
cycle adds to it) is above every N. A cell passes when every clause is
true and fails when one is false.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from serq.diagnostics import flag_error

VERDICTS = ("pass", "deadlock", "livelock", "violation")
_CLAUSE = re.compile(r"^(?P<name>[^<>=!\s]*)\s*(?P<op><=|>=|==|!=|=|<|>)\s*(?P<rhs>.*)$")


@dataclass(frozen=True)
class Clause:
    text: str
    metric: str | None  # the metric as written for --worst (`queue:kv`), None: the verdict
    op: str  # "<=" | "<" | "=" | "!="
    bound: int | None = None
    verdicts: tuple = ()

    @property
    def words(self) -> str:
        if self.metric is None:
            names = " or ".join(self.verdicts)
            return f"verdict {names}" if self.op == "=" else f"verdict not {names}"
        return f"worst {self.metric} {self.op} {self.bound}"

    def judge(self, cell) -> bool | None:
        if self.metric is None:
            if cell.verdict not in VERDICTS:
                return None
            return (cell.verdict in self.verdicts) == (self.op == "=")
        w = cell.worst.get(self.metric)
        if w is None or w.error is not None:
            return None
        if w.value is None:  # unbounded
            return False
        ok = w.value <= self.bound if self.op == "<=" else w.value < self.bound
        return ok if (w.complete or not ok) else None  # a cut graph: the true value is at least this


@dataclass(frozen=True)
class Requirement:
    clauses: tuple

    @property
    def metrics(self) -> list[str]:
        return [c.metric for c in self.clauses if c.metric is not None]

    @property
    def words(self) -> str:
        return " and ".join(c.words for c in self.clauses)

    def judge(self, cell) -> str | None:
        """"pass", "fail", or None (no clause false, some unknown)."""
        got = [c.judge(cell) for c in self.clauses]
        if False in got:
            return "fail"
        return None if None in got else "pass"


DEFAULT_VERDICT = Clause("verdict=pass", None, "=", verdicts=("pass",))


def _similar(name: str, options) -> str | None:
    m = difflib.get_close_matches(name, list(options), n=1, cutoff=0.6)
    return m[0] if m else None


def parse_clause(text: str, program) -> Clause:
    """One `--require` value; a located E015 (E014 for a metric) otherwise."""
    from serq.check.worst import METRICS, MetricError, parse_metric

    bare = text.strip().split("|")
    if all(v in VERDICTS for v in bare):  # `pass`, `pass|livelock`: short for verdict=...
        return Clause(text, None, "=", verdicts=tuple(bare))
    m = _CLAUSE.match(text.strip())
    lead = len(text) - len(text.lstrip())
    if m is None or not m["name"]:
        raise flag_error("--require", text, "E015", "expected METRIC<=N or verdict=VERDICT, e.g. ttft<=4 or "
                         "verdict=pass", 1, max(len(text), 1))
    name, op, rhs = m["name"], m["op"], m["rhs"].strip()
    op_at = text.index(op, lead + len(name)) + 1
    rhs_at = text.index(rhs, op_at - 1 + len(op)) + 1 if rhs else op_at + len(op)
    if name == "verdict":
        if op not in ("=", "!="):
            raise flag_error("--require", text, "E015", f"the verdict is compared with = or !=, not {op}",
                             op_at, len(op))
        names = tuple(rhs.split("|")) if rhs else ("",)
        at = rhs_at
        for v in names:
            if v not in VERDICTS:
                hint = _similar(v, VERDICTS)
                raise flag_error("--require", text, "E015", f"unknown verdict `{v}`; a requirement names "
                                 f"{', '.join(VERDICTS)}", at, max(len(v), 1),
                                 notes=(f"did you mean `{hint}`?",) if hint else ())
            at += len(v) + 1
        return Clause(text, None, op, verdicts=names)
    try:
        parse_metric(name, program)
    except MetricError as e:
        base = name.partition(":")[0]
        hint = _similar(base, METRICS) if base not in METRICS else None
        if base not in METRICS and hint is None:
            hint = _similar(base, [*METRICS, "verdict"])
        span = e.span if e.span is not None else len(name) - e.col + 1  # to the metric's end, not the bound's
        raise flag_error("--require", text, "E014", str(e), lead + e.col, span,
                         notes=(f"did you mean `{hint}`?",) if hint else ()) from None
    if op not in ("<=", "<"):
        raise flag_error("--require", text, "E015", f"a requirement bounds a worst case from above: "
                         f"use {name}<=N or {name}<N, not {op}", op_at, len(op))
    if not re.fullmatch(r"\d+", rhs):
        raise flag_error("--require", text, "E015", f"expected a whole number after {op}, got `{rhs}`",
                         rhs_at, max(len(rhs), 1))
    return Clause(text, name, op, bound=int(rhs))


def parse_requirement(texts: list[str] | None, program) -> Requirement | None:
    """Every `--require` value; without a verdict clause, `verdict=pass` is
    added (and printed with the rest)."""
    if not texts:
        return None
    clauses = [parse_clause(t, program) for t in texts]
    if not any(c.metric is None for c in clauses):
        clauses.insert(0, DEFAULT_VERDICT)
    return Requirement(tuple(clauses))
