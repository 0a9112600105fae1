"""`serq sweep x.sq --vary NAME=LO..HI [--vary ...]`: the explorer's verdict
for every value of one `const`, or every cell of two or three, and the
boundary between passing and failing values.

Each cell recompiles the source with the constants replaced (everything
that reads them -- a capacity, a block size, a workload count, a budget --
follows) and explores it; with `--worst METRIC` it also computes the worst
case of the metric there (serq/check/worst.py, as `serq explore --worst`).
Cells run in parallel, one process per core, and the table is in value
order whatever order they finish in.

A cell passes when its verdict is `pass`, or, with `--require`, when it
meets the requirement (serq/check/require.py); a `bound` verdict, an input
error at a value, or a requirement that cannot be decided there is
neither pass nor fail.

One constant -- the boundary: with every value evaluated, the outcomes are
*monotone* when they change between pass and fail exactly once; the
report names the last failing and the first passing value and prints the
counterexample at the failing one (with its point of no return). With
`--bisect` only O(log n) values are evaluated -- the ends, then points
between the closest pair that differs -- which is exact only if the
verdict is monotone in the constant; the report says so. Bisection stops
at a value that is neither pass nor fail.

Two or three constants -- a grid: rows are the first constant's values,
columns the second's, one grid per value of the third. `--bisect` bisects
every row along the second constant, as for one constant. The
monotonicity, the boundary in each row and the Pareto frontier are read
from the cells evaluated (serq/check/frontier.py), never assumed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import NamedTuple

from explorer.runtime.interrupt import Interrupted, interrupt_of, signal_name
from explorer.outcome import WorkerFailed
from serq.diagnostics import SerqError, flag_error

MAX_VALUES = 10_000  # of one constant
MAX_CELLS = 10_000  # of the whole grid
MAX_CONSTS = 3

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


@dataclass(frozen=True)
class Axis:
    name: str
    lo: int
    hi: int

    @property
    def values(self) -> list[int]:
        return list(range(self.lo, self.hi + 1))


def parse_varies(texts: list[str], consts: list[str]) -> list[Axis]:
    """Every `--vary`, in order: one to three different constants, at most
    MAX_CELLS cells in all; a located E015 at the flag that breaks a rule."""
    axes: list[Axis] = []
    for k, text in enumerate(texts):
        if k == MAX_CONSTS:
            raise flag_error("--vary", text, "E015", f"a sweep varies at most {MAX_CONSTS} constants; this is "
                             f"the {k + 1}th --vary")
        name, lo, hi = parse_vary(text, consts)
        prev = next((a for a in axes if a.name == name), None)
        if prev is not None:
            raise flag_error("--vary", text, "E015", f"`{name}` is varied twice: already {name}={prev.lo}..{prev.hi}",
                             1, len(name), notes=("give each constant one range",))
        axes.append(Axis(name, lo, hi))
        cells = 1
        for a in axes:
            cells *= a.hi - a.lo + 1
        if cells > MAX_CELLS:
            at = len(name) + 2
            sizes = " x ".join(str(a.hi - a.lo + 1) for a in axes)
            raise flag_error("--vary", text, "E015", f"{sizes} = {cells} cells; a sweep takes at most {MAX_CELLS}",
                             at, len(text) - at + 1)
    return axes


@dataclass
class CellWorst:
    """The worst case of one metric at one cell (a `Worst` without its trace)."""
    value: int | None  # None: unbounded, or no value (`error`)
    complete: bool  # False: the graph was cut, the value is a lower bound
    bound_reason: str | None
    text: str  # the headline, or the error
    error: str | None = None

    @property
    def short(self) -> str:
        """`3`, `>=3` (the graph was cut), `inf` (unbounded), `error`."""
        if self.error is not None:
            return "error"
        if self.value is None:
            return "inf"
        return str(self.value) if self.complete else f">={self.value}"


@dataclass
class Row:
    value: int | tuple  # the value; with two or three constants, the cell's values
    verdict: str  # an explorer verdict, or "error" (the instance is invalid at this value)
    kind: str | None
    message: str
    exit_code: int
    states: int
    worst: dict = field(default_factory=dict)  # metric -> CellWorst
    req: object = None  # the Requirement that judges it; None: the verdict alone
    warnings: list = field(default_factory=list)  # the instance's warnings at this value (Diagnostic)

    @property
    def outcome(self) -> str | None:
        """"pass", "fail", or None (a bound or an error: neither)."""
        if self.req is not None:
            return self.req.judge(self)
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
    # the instance at last_fail and the model's options, to give the counterexample's trace as data
    counterexample_model: dict | None = None
    interrupted: str | None = None  # the signal that stopped the sweep (rows: the values finished)
    failed: str | None = None  # the worker lost, and why (rows: the values finished)
    axes: list = field(default_factory=list)  # Axis per constant (empty: the one of name, lo, hi)
    metrics: list = field(default_factory=list)  # the --worst metrics, computed at every cell
    requirement: object = None  # serq.check.require.Requirement, or None
    mono: object = None  # frontier.Monotony (two or three constants)
    bounds: list = field(default_factory=list)  # frontier.Boundary per row (two or three constants)
    frontier: list = field(default_factory=list)  # the Pareto frontier's cells
    # the exit code's question: does "every" value evaluated pass (meet the requirement), or "some" (`--any`)
    quantifier: str = "every"

    def __post_init__(self):
        if not self.axes:
            self.axes = [Axis(self.name, self.lo, self.hi)]

    @property
    def grid(self) -> dict:
        """cell (a tuple of values) -> outcome, for the cells evaluated."""
        return {(r.value if isinstance(r.value, tuple) else (r.value,)): r.outcome for r in self.rows}

    @property
    def met(self) -> int:
        return sum(r.outcome == "pass" for r in self.rows)

    @property
    def unknown(self) -> int:
        return sum(r.outcome is None for r in self.rows)

    @property
    def note(self) -> str:
        passes = [r.value for r in self.rows if r.outcome == "pass"]
        fails = [r.value for r in self.rows if r.outcome == "fail"]
        unknown = [r.value for r in self.rows if r.outcome is None]
        none = "no verdict" if self.requirement is None else "undecided"
        extra = f"; {none} at {_values(unknown)}" if unknown else ""
        if not fails:
            nothing = "no value has a verdict" if self.requirement is None else "no value is decided"
            return f"every value evaluated passes{extra}" if passes else f"{nothing}{extra}"
        if not passes:
            return f"every value evaluated fails{extra}"
        if len(self.axes) > 1:  # a grid: its frontier, and whether the cells evaluated are monotone
            cells = "; ".join(", ".join(f"{a.name}={v}" for a, v in zip(self.axes, c)) for c in self.frontier)
            shape = "" if self.mono is None or self.mono.holds is not False else "not monotone; "
            return f"{shape}{len(passes)} of {len(self.rows)} cells pass; frontier: {cells or 'none'}{extra}"
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


class Job(NamedTuple):
    text: str
    file: str
    name: str | tuple  # the constant, or the constants of a cell
    value: int | tuple
    opts: dict  # for `explore`
    metrics: tuple = ()  # --worst metrics


def _consts(name, value) -> dict:
    return dict(zip(name, value)) if isinstance(name, tuple) else {name: value}


def at_words(name, value) -> str:
    """`KV = 5`, or `KV = 5, BS = 2`"""
    return ", ".join(f"{n} = {v}" for n, v in _consts(name, value).items())


def _load(text: str, file: str, name, value, warnings: list | None = None):
    """The program at these values; its warnings appended to `warnings`."""
    from serq.lang.load import load_text, require_sessions

    loaded = load_text(text, file, explorer=True, consts=_consts(name, value))
    require_sessions(loaded, file, "sweep")  # a value that starts no session checks nothing: never `pass`
    if warnings is not None:
        warnings.extend(d for d in loaded.warnings if not d.is_error)
    return loaded.program


def _explore_value(job) -> tuple[Row, object | None]:
    """One cell, in a worker: compile with the constants replaced, explore,
    and compute each metric's worst case. A failing cell's Result comes
    back too (its counterexample)."""
    text, file, name, value, opts, *more = job
    from serq.check.explore import explore

    warnings: list = []
    try:
        prog = _load(text, file, name, value, warnings)
    except SerqError as e:
        d = e.diagnostics[0]
        return Row(value, "error", None, f"{d.code}: {d.message}", 2, 0), None
    r = explore(prog, graph_limit=0, **opts)
    row = Row(value, r.verdict, r.kind, r.message, r.exit_code, r.stats.distinct, warnings=warnings)
    if r.verdict != "interrupted":
        for metric in (more[0] if more else ()):
            row.worst[metric] = _worst(prog, metric, opts)
    return row, (r if row.outcome == "fail" else None)


def _worst(prog, metric: str, opts: dict) -> CellWorst:
    """`serq explore --worst METRIC` at this cell (over every behaviour: no check)."""
    from serq.check.worst import MetricError, find_worst, headline

    try:
        w = find_worst(prog, metric, ties=opts.get("ties", "all"), symmetry=opts.get("symmetry", True),
                       max_states=opts.get("max_states"), time_limit=opts.get("time_limit"))
    except MetricError as e:  # e.g. a cost that cannot be evaluated at this cell
        return CellWorst(None, False, None, str(e), error=str(e))
    return CellWorst(w.value, w.complete, w.bound_reason, headline(w))


class _Runner:
    """Runs batches of cells: in this process with one worker (or a first
    batch of one cell), else in one supervised pool of worker processes
    (explorer/runtime/supervise.py) kept for every batch of the sweep -- a
    bisection's rounds do not start processes again. A worker that dies
    or raises is `WorkerFailed`, naming it and its cell; the others are
    stopped. The workers leave SIGINT (a Ctrl-C reaches the process group)
    to the sweep, which stops them and keeps the cells finished so far."""

    def __init__(self, workers: int, cells: int):
        self.n = min(workers, cells)
        self.pool = None

    def run(self, jobs: list):
        """Yields (row, result) per job as each ends (in any order with workers)."""
        if self.pool is None and (self.n <= 1 or len(jobs) <= 1):
            for j in jobs:
                yield _explore_value(j)
            return
        if self.pool is None:
            from explorer.runtime.supervise import Supervised

            def name(wid: int, job) -> str:
                return f"worker {wid}" if job is None else f"worker {wid} (at {at_words(job[2], job[3])})"

            self.pool = Supervised(_explore_value, self.n, name=name)
        for _, got in self.pool.imap_unordered(jobs):
            yield got

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def sweep(text: str, file: str, vary: str | list[str], *, bisect: bool = False, workers: int | None = None,
          graph_limit: int | None = None, worst: list[str] | None = None, require: list[str] | None = None,
          **opts) -> Sweep:
    """Sweep one to three constants of the source `text`; `opts` go to
    `explore`, `worst` names metrics to compute at every cell, `require`
    states what a cell must show to pass (serq/check/require.py)."""
    from serq.check.explore import GRAPH_LIMIT, mark_no_return
    from serq.check.require import parse_requirement
    from serq.lang.load import load_text

    base = load_text(text, file, explorer=True).program
    axes = parse_varies([vary] if isinstance(vary, str) else list(vary), [n for n, _ in base.consts])
    requirement = parse_requirement(require, base)
    metrics = _metrics(worst or [], requirement, base)
    workers = workers or os.cpu_count() or 1
    one = len(axes) == 1
    sw = Sweep(axes[0].name, axes[0].lo, axes[0].hi, "bisect" if bisect else "all", axes=axes, metrics=metrics,
               requirement=requirement)
    names = axes[0].name if one else tuple(a.name for a in axes)
    done: dict = {}
    results: dict = {}

    def evaluate(cells: list) -> None:
        todo = [c for c in cells if c not in done]
        try:
            for row, result in runner.run([Job(text, file, names, c, opts, tuple(metrics)) for c in todo]):
                row.req = requirement
                done[row.value] = row
                if result is not None:
                    results[row.value] = result
                if row.verdict == "interrupted":  # a one-process sweep: the signal reached the search
                    raise Interrupted(row.message.split()[2] if row.message.startswith("stopped by") else "SIGINT")
                cut = [w.bound_reason for w in row.worst.values() if w.bound_reason in ("SIGINT", "SIGTERM")]
                if cut:
                    raise Interrupted(cut[0])
        except (KeyboardInterrupt, SystemError) as e:
            e = interrupt_of(e)
            sw.interrupted = signal_name(e)
            raise _Stop from None
        except WorkerFailed as e:
            sw.failed = str(e)
            raise _Stop from None

    cells = 1
    for a in axes:
        cells *= a.hi - a.lo + 1
    runner = _Runner(workers, cells)
    try:
        _evaluate_all(evaluate, done, bisect, axes, workers)
    except _Stop:
        pass
    finally:
        runner.close()
    sw.rows = [done[v] for v in sorted(done)]
    if not one:
        analyse(sw)
        return sw
    _boundary(sw)
    if sw.last_fail in results and sw.interrupted is None and sw.failed is None:
        sw.counterexample = results[sw.last_fail]
        prog = _load(text, file, names, sw.last_fail)
        mark_no_return(prog, sw.counterexample,
                       graph_limit=GRAPH_LIMIT if graph_limit is None else graph_limit,
                       **{k: v for k, v in opts.items() if k in ("ties", "symmetry", "checks", "max_states", "time_limit")})
        sw.counterexample_model = {"program": prog, **{k: v for k, v in opts.items()
                                                       if k in ("ties", "symmetry", "checks")}}
    return sw


def _metrics(worst: list[str], requirement, program) -> list[str]:
    """The --worst metrics, then those only a requirement names; a located
    E014 for a bad one (before any work)."""
    from serq.check.worst import MetricError, parse_metric

    out: list[str] = []
    for m in worst:
        try:
            parse_metric(m, program)
        except MetricError as e:
            raise flag_error("--worst", m, "E014", str(e), e.col, e.span) from None
        if m in out:
            raise flag_error("--worst", m, "E014", f"`{m}` is given twice", 1, len(m))
        out.append(m)
    for m in (requirement.metrics if requirement else ()):
        if m not in out:
            out.append(m)
    return out


class _Stop(Exception):
    pass


def _evaluate_all(evaluate, done: dict, bisect: bool, axes: list, workers: int) -> None:
    """Every cell, or with `bisect` a bisection of every row along the
    column's constant (the only one, or the second), the rows' points of a
    round evaluated together."""
    from serq.check.frontier import cell_at, rows_of

    values = [a.values for a in axes]
    one = len(axes) == 1
    col = 0 if one else 1
    key = (lambda row, v: v) if one else (lambda row, v: cell_at(row, col, v))  # noqa: E731
    rows = rows_of(values, col)
    if not bisect:
        evaluate([key(row, v) for row in rows for v in values[col]])
        return
    lo, hi = axes[col].lo, axes[col].hi
    pairs = {row: (lo, hi) for row in rows}
    evaluate([key(row, v) for row in rows for v in (lo, hi)])
    while True:
        live = {row: (a, b) for row, (a, b) in pairs.items() if b - a > 1 and _differ(done, key(row, a), key(row, b))}
        if not live:
            return
        k = max(1, workers // len(live))
        points = {row: sorted({a + (b - a) * (i + 1) // (min(k, b - a - 1) + 1) for i in range(min(k, b - a - 1))}
                              - {a, b}) for row, (a, b) in live.items()}
        evaluate([key(row, v) for row, ps in points.items() for v in ps])
        for row, (a, b) in live.items():
            chain = [a] + points[row] + [b]
            if any(done[key(row, v)].outcome is None for v in points[row]):
                pairs[row] = (a, a)  # bisection stops there
                continue
            pairs[row] = next((x, y) for x, y in zip(chain, chain[1:])
                              if done[key(row, x)].outcome != done[key(row, y)].outcome)


def _differ(done: dict, x, y) -> bool:
    return bool(done[x].outcome and done[y].outcome and done[x].outcome != done[y].outcome)


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


def exit_code(sw: Sweep) -> int:
    """16 interrupted, 18 a worker lost; else the answer to the sweep's
    question (`quantifier`). "every" (the default, a gate for CI): 0 when
    every value (cell) evaluated passes -- its verdict is `pass`, or it
    meets --require --, 12 when one fails, 13 when none fails but some is
    undecided (a bound, an error, a worst case cut). "some" (`--any`, the
    design search's question): 0 when some value passes, 12 when every
    value evaluated fails, 13 when none passes but some is undecided."""
    from explorer.runtime.verdict import EXIT_BOUND, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_PASS, EXIT_VIOLATION

    if sw.interrupted:
        return EXIT_INTERRUPTED
    if sw.failed:
        return EXIT_FAILED
    if sw.quantifier == "some":
        if sw.met:
            return EXIT_PASS
        return EXIT_BOUND if sw.unknown else EXIT_VIOLATION
    if any(r.outcome == "fail" for r in sw.rows):
        return EXIT_VIOLATION
    return EXIT_BOUND if sw.unknown else EXIT_PASS


def analyse(sw: Sweep) -> None:
    """The monotonicity check, the boundary per row, the frontier."""
    from serq.check.frontier import boundaries, monotony, pareto

    grid = sw.grid
    sw.mono = monotony(grid, len(sw.axes))
    sw.bounds = boundaries(grid, [a.values for a in sw.axes], 1, sw.mono.orient[1])
    sw.frontier = pareto(grid, sw.mono.orient)
