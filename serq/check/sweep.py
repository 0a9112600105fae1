"""`serq sweep x.sq --vary NAME=LO..HI`: the explorer's verdict for every
value of one `const`, and the boundary between passing and failing values.

Each value recompiles the source with the constant replaced (everything
that reads it -- a capacity, a block size, a workload count, a budget --
follows) and explores it; values run in parallel, one process per core,
and the table is in value order whatever order they finish in.

The boundary: with every value evaluated, the verdicts are *monotone* when
they change between pass and fail exactly once; the report names the last
failing and the first passing value and prints the counterexample at the
failing one (with its point of no return). With `--bisect` only O(log n)
values are evaluated -- the ends, then points between the closest pair that
differs -- which is exact only if the verdict is monotone in the constant;
the report says so. A `bound` verdict or an input error at a value is
neither pass nor fail: bisection stops there.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from explorer.runtime.interrupt import Interrupted, interrupt_of, signal_name
from explorer.outcome import WorkerFailed
from serq.diagnostics import SerqError, flag_error

MAX_VALUES = 10_000

_VARY = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<lo>-?\d+)\.\.(?P<hi>-?\d+)$")


def parse_vary(text: str, consts: list[str]) -> tuple[str, int, int]:
    """`NAME=LO..HI` -> (name, lo, hi); located errors (E015) otherwise."""
    name, eq, rng = text.partition("=")
    if not eq or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise flag_error("--vary", text, "E015", "expected NAME=LO..HI, e.g. KV=8..32", 1, max(len(name), 1))
    m = _VARY.match(text)
    at = len(name) + 2
    if m is None:
        raise flag_error("--vary", text, "E015", f"bad range `{rng}`: expected LO..HI with integers LO <= HI",
                         at, max(len(rng), 1))
    lo, hi = int(m["lo"]), int(m["hi"])
    if lo > hi:
        raise flag_error("--vary", text, "E015", f"empty range: {lo} is above {hi}", at, len(rng))
    if hi - lo + 1 > MAX_VALUES:
        raise flag_error("--vary", text, "E015", f"{hi - lo + 1} values; a sweep takes at most {MAX_VALUES}",
                         at, len(rng))
    if name not in consts:
        declared = ", ".join(consts) if consts else "none"
        raise flag_error("--vary", text, "E015", f"unknown constant `{name}`; the instance declares {declared}",
                         1, len(name), notes=("a sweep varies a `const` of the instance: declare one and use it",))
    return name, lo, hi


@dataclass
class Row:
    value: int
    verdict: str  # an explorer verdict, or "error" (the instance is invalid at this value)
    kind: str | None
    message: str
    exit_code: int
    states: int

    @property
    def outcome(self) -> str | None:
        """"pass", "fail", or None (a bound or an error: neither)."""
        if self.verdict == "pass":
            return "pass"
        if self.verdict in ("deadlock", "livelock", "violation"):
            return "fail"
        return None

    @property
    def label(self) -> str:
        return f"{self.verdict} ({self.kind})" if self.kind else self.verdict


@dataclass
class Sweep:
    name: str
    lo: int
    hi: int
    mode: str  # "all" | "bisect"
    rows: list[Row] = field(default_factory=list)
    monotone: bool | None = None  # None: not decided (no change, or unknowns)
    last_fail: int | None = None
    first_pass: int | None = None
    counterexample: object | None = None  # the explorer Result at last_fail
    interrupted: str | None = None  # the signal that stopped the sweep (rows: the values finished)
    failed: str | None = None  # the worker lost, and why (rows: the values finished)

    @property
    def note(self) -> str:
        passes = [r.value for r in self.rows if r.outcome == "pass"]
        fails = [r.value for r in self.rows if r.outcome == "fail"]
        unknown = [r.value for r in self.rows if r.outcome is None]
        extra = f"; no verdict at {_values(unknown)}" if unknown else ""
        if not fails:
            return f"every value evaluated passes{extra}" if passes else f"no value has a verdict{extra}"
        if not passes:
            return f"every value evaluated fails{extra}"
        if self.monotone is False:
            return (f"not monotone: passes at {_values(passes)}, fails at {_values(fails)}{extra}; "
                    "no single boundary")
        up = self.first_pass > self.last_fail
        where = (f"smallest passing {self.name} = {self.first_pass}" if up
                 else f"largest passing {self.name} = {self.first_pass}")
        how = ("monotone: one change of verdict over every value" if self.mode == "all"
               else "found by bisection, which assumes the verdict is monotone in the constant")
        return f"{where}; fails at {self.name} = {self.last_fail} ({how}){extra}"


def _values(vs: list[int]) -> str:
    """3, 4, 5, 7 -> 3..5, 7"""
    out, i = [], 0
    while i < len(vs):
        j = i
        while j + 1 < len(vs) and vs[j + 1] == vs[j] + 1:
            j += 1
        out.append(str(vs[i]) if i == j else f"{vs[i]}..{vs[j]}")
        i = j + 1
    return ", ".join(out)


def _load(text: str, file: str, name: str, value: int):
    from serq.lang.load import load_text, require_sessions

    loaded = load_text(text, file, explorer=True, consts={name: value})
    require_sessions(loaded, file, "sweep")  # a value that starts no session checks nothing: never `pass`
    return loaded.program


def _explore_value(job) -> tuple[Row, object | None]:
    """One value, in a worker: compile with the constant replaced, explore.
    A failing value's Result comes back too (its counterexample)."""
    text, file, name, value, opts = job
    from serq.check.explore import explore

    try:
        prog = _load(text, file, name, value)
    except SerqError as e:
        d = e.diagnostics[0]
        return Row(value, "error", None, f"{d.code}: {d.message}", 2, 0), None
    r = explore(prog, graph_limit=0, **opts)
    row = Row(value, r.verdict, r.kind, r.message, r.exit_code, r.stats.distinct)
    return row, (r if row.outcome == "fail" else None)


def _run(jobs: list, workers: int):
    """Yields (row, result) per job as each ends (in any order with workers).
    The worker processes are supervised (explorer/runtime/supervise.py): one that
    dies or raises is `WorkerFailed`, naming it and its value; the others
    are stopped. They leave SIGINT (a Ctrl-C reaches the process group) to
    the sweep, which stops them and keeps the values finished so far."""
    if workers <= 1 or len(jobs) <= 1:
        for j in jobs:
            yield _explore_value(j)
        return
    from explorer.runtime.supervise import Supervised

    def name(wid: int, job) -> str:
        return f"worker {wid}" if job is None else f"worker {wid} (at {job[2]} = {job[3]})"

    with Supervised(_explore_value, min(workers, len(jobs)), name=name) as pool:
        for _, got in pool.imap_unordered(jobs):
            yield got


def sweep(text: str, file: str, vary: str, *, bisect: bool = False, workers: int | None = None,
          graph_limit: int | None = None, **opts) -> Sweep:
    """Sweep a constant of the source `text`; `opts` go to `explore`."""
    from serq.check.explore import GRAPH_LIMIT, mark_no_return
    from serq.lang.load import load_text

    base = load_text(text, file, explorer=True).program
    name, lo, hi = parse_vary(vary, [n for n, _ in base.consts])
    workers = workers or os.cpu_count() or 1
    sw = Sweep(name, lo, hi, "bisect" if bisect else "all")
    done: dict[int, Row] = {}
    results: dict[int, object] = {}

    def evaluate(values: list[int]) -> None:
        todo = [v for v in values if v not in done]
        try:
            for row, result in _run([(text, file, name, v, opts) for v in todo], workers):
                done[row.value] = row
                if result is not None:
                    results[row.value] = result
                if row.verdict == "interrupted":  # a one-process sweep: the signal reached the search
                    raise Interrupted(row.message.split()[2] if row.message.startswith("stopped by") else "SIGINT")
        except (KeyboardInterrupt, SystemError) as e:
            e = interrupt_of(e)
            sw.interrupted = signal_name(e)
            raise _Stop from None
        except WorkerFailed as e:
            sw.failed = str(e)
            raise _Stop from None

    try:
        _evaluate_all(evaluate, done, bisect, lo, hi, workers)
    except _Stop:
        pass
    sw.rows = [done[v] for v in sorted(done)]
    _boundary(sw)
    if sw.last_fail is not None and sw.interrupted is None and sw.failed is None:
        sw.counterexample = results[sw.last_fail]
        mark_no_return(_load(text, file, name, sw.last_fail), sw.counterexample,
                       graph_limit=GRAPH_LIMIT if graph_limit is None else graph_limit,
                       **{k: v for k, v in opts.items() if k in ("ties", "symmetry", "checks", "max_states", "time_limit")})
    return sw


class _Stop(Exception):
    pass


def _evaluate_all(evaluate, done: dict, bisect: bool, lo: int, hi: int, workers: int) -> None:
    if not bisect:
        evaluate(list(range(lo, hi + 1)))
        return
    a, b = lo, hi
    evaluate([a, b])
    while b - a > 1 and done[a].outcome and done[b].outcome and done[a].outcome != done[b].outcome:
        k = min(workers, b - a - 1)
        points = sorted({a + (b - a) * (i + 1) // (k + 1) for i in range(k)} - {a, b})
        evaluate(points)
        chain = [a] + points + [b]
        if any(done[v].outcome is None for v in points):
            break
        for x, y in zip(chain, chain[1:]):
            if done[x].outcome != done[y].outcome:
                a, b = x, y
                break


def _boundary(sw: Sweep) -> None:
    known = [r for r in sw.rows if r.outcome is not None]
    changes = [(x, y) for x, y in zip(known, known[1:]) if x.outcome != y.outcome]
    if not changes:
        return
    sw.monotone = len(changes) == 1
    if sw.monotone:
        x, y = changes[0]
        fail, ok = (x, y) if x.outcome == "fail" else (y, x)
        sw.last_fail, sw.first_pass = fail.value, ok.value


def render_text(sw: Sweep, with_timing: bool = True) -> str:
    from explorer.report import render_text as render_result

    n = sw.hi - sw.lo + 1
    how = "every value" if sw.mode == "all" else f"{len(sw.rows)} by bisection"
    out = [f"sweep {sw.name} over {sw.lo}..{sw.hi} ({n} value{'s' if n != 1 else ''}, {how})"]
    w0 = max([len(sw.name)] + [len(str(r.value)) for r in sw.rows])  # no row: interrupted before the first
    w1 = max([len("verdict")] + [len(r.label) for r in sw.rows])
    out.append(f"{sw.name:>{w0}}  {'verdict':<{w1}}  {'states':>8}  message")
    for r in sw.rows:
        out.append(f"{r.value:>{w0}}  {r.label:<{w1}}  {r.states:>8}  {r.message}".rstrip())
    out.append(sw.note)
    if sw.interrupted:
        out.append(f"interrupted by {sw.interrupted}: the values above are those finished before it; "
                   "the sweep is incomplete")
    if sw.failed:
        out.append(f"failed: {sw.failed}; the other workers were stopped; the values above are those "
                   "finished before it; the sweep is incomplete")
    if sw.counterexample is not None:
        out.append(f"\nthe counterexample at {sw.name} = {sw.last_fail}:")
        out.append(render_result(sw.counterexample, with_timing=with_timing).rstrip("\n"))
    return "\n".join(out) + "\n"


def render_json(sw: Sweep, with_timing: bool = True) -> dict:
    from explorer.report import render_json as result_json

    return {
        "const": sw.name, "lo": sw.lo, "hi": sw.hi, "mode": sw.mode,
        "rows": [{"value": r.value, "verdict": r.verdict, "kind": r.kind, "message": r.message,
                  "exit_code": r.exit_code, "states": r.states} for r in sw.rows],
        "monotone": sw.monotone, "last_fail": sw.last_fail, "first_pass": sw.first_pass, "note": sw.note,
        "interrupted": sw.interrupted,
        "failed": sw.failed,
        "counterexample": (None if sw.counterexample is None else
                           {"value": sw.last_fail, "result": result_json(sw.counterexample, with_timing=with_timing)}),
    }
