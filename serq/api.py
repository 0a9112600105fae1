"""serq as a library: `serq.explore`, `serq.run`, `serq.check`,
`serq.sweep` and `serq.diff`, what `serq explore`, `serq run`, `serq
check`, `serq sweep` and `serq diff` do, returning objects instead of
printing (docs/api.md).

    import serq
    r = serq.explore("instances/self_preempt.sq", max_states=100_000)
    r.verdict, r.ok, r.distinct, len(r.trace)
    print(r.text())           # the words `serq explore` prints
    r                         # in a notebook: the timeline page

Each takes an instance as a path (`str` or `Path`: a `.sq` or `.ir.json`
file) or as the text of a `.sq` instance, and the command's limits as
keywords. Bad input raises `serq.SerqError`, whose message is the located
diagnostics the command prints; a bad keyword value raises ValueError.
Every result has a short `repr` and, in a notebook, renders as the page
`--html` writes (the `view` extra: jinja2, plotly), in an iframe.
"""

from __future__ import annotations

import html
import math
from pathlib import Path

from serq.defaults import DEFAULT_MAX_STEPS, GRAPH_LIMIT

__all__ = ["explore", "run", "check", "sweep", "diff", "Result", "Run", "Checked", "Swept", "Differed"]


# ---------------------------------------------------------------- inputs


def _is_path(source) -> bool:
    if isinstance(source, Path):
        return True
    if not isinstance(source, str):
        raise TypeError(f"an instance is a path or the text of a .sq instance, not {type(source).__name__}")
    return "\n" not in source and ";" not in source and "{" not in source


def _load(source, *, explorer: bool = False, simulate: bool = False):
    """(the loaded program, the name it is shown by)."""
    from serq.lang.load import load_path, load_text

    if _is_path(source):
        return load_path(source, explorer=explorer, simulate=simulate), str(source)
    return load_text(source, "<text>", explorer=explorer, simulate=simulate), "<text>"


def _text_of(source) -> tuple[str, str]:
    """(the .sq text, its name) for a sweep, which changes a constant in the text."""
    from serq.diagnostics import Diagnostic, SerqError

    if not _is_path(source):
        return source, "<text>"
    path = Path(source)
    if path.name.endswith(".json"):
        raise SerqError([Diagnostic(0, 0, "E016", "a sweep needs the .sq source: an .ir.json has its constants "
                                    "folded into the program", file=str(path))])
    try:
        return path.read_text(), str(path)
    except (OSError, UnicodeDecodeError) as e:
        raise SerqError([Diagnostic(0, 0, "E011", f"cannot read {path}: {getattr(e, 'strerror', None) or e}",
                                    file=str(path))]) from None


def _limits(**given) -> None:
    """The keyword limits, checked as the command checks its flags."""
    from serq.cli.flags import LIMITS

    for flag, (attr, least, unit) in LIMITS.items():
        v = given.get(attr)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not math.isfinite(v)):
            raise ValueError(f"{attr} must be a finite number of {unit}, got {v!r}")
        if v < least:
            raise ValueError(f"{attr} must be {'at least 1' if least == 1 else 'non-negative'} ({unit}), got {v!r}")


def _memory(memory) -> int | None:
    """`memory`: bytes, a size such as "4G", or None for the command's
    default (four fifths of the memory available now)."""
    from explorer.runtime.memory import default_limit, parse_size

    if memory is None:
        return default_limit()
    if isinstance(memory, str):
        return parse_size(memory)
    if isinstance(memory, int) and not isinstance(memory, bool) and memory > 0:
        return memory
    raise ValueError(f"memory must be a size such as \"4G\" or a positive number of bytes, got {memory!r}")


def _checks(checks, slo: bool = True, sometimes: bool = False) -> list[str] | None:
    """The properties asked for; `slo`: an SLO (`"ttft<=4"`) is one (the
    explorer's; the simulator's `check` has none), parsed against the
    instance when it is explored; `sometimes`: the `check sometimes`
    lines are one (`serq.explore`'s alone)."""
    from serq.defaults import ALL_CHECKS, EXPLORE_CHECKS, SEARCH_CHECKS

    if checks is None:
        return None
    checks = [checks] if isinstance(checks, str) else list(checks)
    for c in checks:
        if c not in (SEARCH_CHECKS if sometimes else EXPLORE_CHECKS if slo else ALL_CHECKS + ("completes",)):
            raise ValueError(f"unknown property {c!r}; the properties are {', '.join(ALL_CHECKS + ('completes',))}"
                             + (" or an SLO such as 'ttft<=4'" if slo else ""))
    return checks


def _frame(page: str, height: int) -> str:
    """A whole page inside a notebook cell: an iframe, so that its styles
    and scripts stay its own."""
    return (f'<iframe srcdoc="{html.escape(page, quote=True)}" style="width: 100%; height: {height}px; '
            'border: 1px solid #ddd"></iframe>')


# ---------------------------------------------------------------- explore


class Result:
    """What `serq.explore` found: the verdict, the shortest counterexample
    (`trace`), the statistics; `raw` is the engine's Result."""

    def __init__(self, raw, program, name: str, model_args: dict, warnings=(), sometimes=()):
        self.raw, self.program, self.name = raw, program, name
        self._model_args = model_args
        self.warnings = list(warnings)  # the instance's warnings (serq.diagnostics.Diagnostic)
        # each `check sometimes` line's verdict (serq.check.sometimes.Sometimes: verdict, result.trace)
        self.sometimes = list(sometimes)
        self.coverage = None  # with coverage=True: serq.check.coverage.Coverage (counts, witnesses)

    verdict = property(lambda self: self.raw.verdict, doc="pass, deadlock, livelock, violation, bound, ...")
    ok = property(lambda self: self.raw.ok, doc="the verdict is pass")
    @property
    def exit_code(self) -> int:
        """The exit code `serq explore` ends with (a `check sometimes` line
        without a witness included)."""
        from serq.check.sometimes import exit_code

        return exit_code(self.raw, self.sometimes)

    message = property(lambda self: self.raw.message)
    trace = property(lambda self: self.raw.trace, doc="the counterexample's steps (none for pass or bound)")
    stats = property(lambda self: self.raw.stats)
    distinct = property(lambda self: self.raw.stats.distinct, doc="distinct states explored")
    replay_path = property(lambda self: self.raw.replay_path, doc="the counterexample as `serq explore --replay`")
    no_return = property(lambda self: self.raw.no_return, doc="the step after which no run completes")

    def text(self, timing: bool = True) -> str:
        from explorer.report import render_text

        import serq.check.sometimes as sometimes

        text = render_text(self.raw, with_timing=timing) + sometimes.render_text(self.sometimes, with_timing=timing)
        if self.coverage is not None:
            from serq.check.coverage import render_text as coverage_text

            text += coverage_text(self.coverage)
        return text

    def json(self, timing: bool = True) -> dict:
        """What `serq explore --json` prints (format serq-explore, docs/json.md)."""
        from serq.check.tracedata import explore_json

        d = explore_json(self._model, self.raw, with_timing=timing, warnings=self.warnings)
        if self.sometimes:
            from serq.check.sometimes import render_json

            d["sometimes"] = render_json(self._model, self.sometimes, with_timing=timing)
        if self.coverage is not None:
            from serq.check.coverage import render_json as coverage_json

            d["coverage"] = coverage_json(self.coverage)
        return d

    def _model(self):
        from serq.check.model import Checks
        from serq.check.slo import make_model

        a = self._model_args
        return make_model(self.program, ties=a["ties"], symmetry=a["symmetry"],
                          checks=Checks.of_program(self.program, a["checks"]), reduce_ranks=a.get("reduce_ranks", False))

    def page(self) -> str:
        """The timeline page (`serq explore --html`), as HTML text."""
        from serq.view.timeline import timeline_page

        return timeline_page(self._model(), self.raw, self.name)

    def _repr_html_(self) -> str | None:
        from serq.diagnostics import SerqError

        try:
            return _frame(self.page(), 640)
        except SerqError:  # no `view` extra: the notebook shows the repr
            return None

    def __repr__(self) -> str:
        what = f"trace of {len(self.trace)} steps, " if self.trace else ""
        return f"<serq.Result {self.verdict}: {what}{self.distinct} distinct states, {self.name}>"


def explore(source, *, strategy: str = "bfs", max_states: int | None = None, max_depth: int | None = None,
            time_limit: float | None = None, memory=None, ties: str = "all", symmetry: bool = True,
            workers: int = 1, checks=None, exact: bool = False, graph_limit: int = GRAPH_LIMIT,
            coverage: bool = False, witness=(), reduce: str | None = None, disk: str | None = None) -> Result:
    """Explore every arrival order, tie and drawn value of a small instance
    (`serq explore`); the keywords are its flags (`reduce="ranks"`: `--reduce
    ranks`; `disk="DIR"`: `--disk DIR`). `coverage` (`--coverage`) counts the explored transitions of
    each event kind (`Result.coverage`) and adds W520 to the warnings when a
    pool that could preempt or evict never did; `witness` (kinds, or "all";
    implies `coverage`) keeps a shortest trace for each."""
    from serq.check.explore import explore as search
    from serq.check.model import Checks
    from serq.lang.load import require_sessions

    if reduce not in (None, "ranks"):
        raise ValueError(f"reduce is None or 'ranks'; got {reduce!r}")
    if strategy not in ("bfs", "dfs") or ties not in ("all", "seq"):
        raise ValueError(f"strategy is bfs or dfs, ties all or seq; got {strategy!r}, {ties!r}")
    _limits(max_states=max_states, max_depth=max_depth, time_limit=time_limit, workers=workers,
            graph_limit=graph_limit)
    checks, limit = _checks(checks, sometimes=True), _memory(memory)
    visitor = _coverage_visitor(coverage, witness, workers)
    loaded, name = _load(source, explorer=True)
    require_sessions(loaded, name, "explore")
    if reduce == "ranks":
        from serq.semantics.ranks import seq_reader

        if (reader := seq_reader(loaded.program)) is not None:  # said, as serq explore says it
            import warnings

            warnings.warn(f"reduce='ranks' reduces nothing here: {reader} reads a sequence number, so every rank "
                          "is kept", stacklevel=2)
    if checks and "sometimes" in checks and not Checks.of_program(loaded.program, checks).sometimes:
        raise ValueError("checks: 'sometimes' selects the instance's `check sometimes` lines, and it has none")
    if disk is not None and Checks.of_program(loaded.program, checks).sometimes:
        raise ValueError("disk: the `check sometimes` lines are searched apart, in memory; select other checks")
    raw = search(loaded.program, strategy=strategy, max_states=max_states, max_depth=max_depth,
                 time_limit=time_limit, ties=ties, symmetry=symmetry, workers=workers, checks=checks,
                 graph_limit=graph_limit, memory_limit=limit, exact=exact, visitor=visitor,
                 reduce_ranks=reduce == "ranks", disk=disk)
    warnings, cov = list(loaded.warnings), None
    if visitor is not None:
        from serq.check.coverage import vacuity

        cov = visitor.finish(raw)
        warnings += vacuity(loaded.program, cov)
    found = []
    if Checks.of_program(loaded.program, checks).sometimes and raw.verdict not in ("interrupted", "failed"):
        from serq.check.sometimes import search_witnesses

        found = search_witnesses(loaded.program, ties=ties, symmetry=symmetry, max_states=max_states,
                                 max_depth=max_depth, time_limit=time_limit, workers=workers, memory_limit=limit,
                                 exact=exact, reduce_ranks=reduce == "ranks")
    r = Result(raw, loaded.program, name, {"ties": ties, "symmetry": symmetry, "checks": checks,
                                           "reduce_ranks": reduce == "ranks"}, warnings, found)
    r.coverage = cov
    return r


def _coverage_visitor(coverage: bool, witness, workers: int):
    """The visitor of `serq explore --coverage [--witness KIND]`, or None."""
    from serq.check.coverage import KINDS, CoverageVisitor

    kinds = [witness] if isinstance(witness, str) else list(witness or ())
    wrong = [k for k in kinds if k != "all" and k not in KINDS]
    if wrong:
        raise ValueError(f"witness: unknown event kind {wrong[0]!r}; the kinds are {', '.join(KINDS)} and all")
    if not (coverage or kinds):
        return None
    if workers > 1:
        raise ValueError("coverage counts the transitions of the one-process search: workers=1")
    return CoverageVisitor(witness=KINDS if "all" in kinds else tuple(dict.fromkeys(kinds)))


# ---------------------------------------------------------------- run, check


class Run:
    """What `serq.run` simulated: `report` is the report `serq run --json`
    prints (a dict), `result` the simulator's own result."""

    def __init__(self, result, name: str, warnings=()):
        from serq.sim.report import build_report

        self.result, self.name = result, name
        self.report = build_report(result, instance=name)
        self.warnings = list(warnings)  # the instance's warnings (serq.diagnostics.Diagnostic)

    def json(self) -> dict:
        """What `serq run --json` prints (format serq-run, docs/json.md): the report with its format,
        version and warnings."""
        from serq.sim.report import report_json

        return report_json(self.report, warnings=self.warnings)

    @property
    def requests(self) -> list[dict]:
        """A row per request (`serq run --requests`, docs/simulator.md): the
        run must have been made with requests=True."""
        log = getattr(self.result.stats, "log", None)
        if log is None:
            raise ValueError("this run recorded no requests: run it with serq.run(..., requests=True)")
        return log.rows

    stopped = property(lambda self: self.result.stopped, doc="why the run ended")
    now = property(lambda self: self.result.now, doc="the simulated time at the end, in ticks")

    def text(self) -> str:
        """The report as `serq run` prints it."""
        import io

        from rich.console import Console

        from serq.sim.report import render

        buf = io.StringIO()
        render(self.report, Console(file=buf, width=140, no_color=True, highlight=False, soft_wrap=False))
        return buf.getvalue()

    def page(self) -> str:
        """The plots' page (`serq run --html`), as HTML text: the run must
        have been made with plots=True."""
        from serq.view.simplots import Recorder, sim_page

        if not isinstance(self.result.stats, Recorder):
            raise ValueError("this run recorded no plots: run it with serq.run(..., plots=True)")
        return sim_page(self.report, self.result.stats)

    def _repr_html_(self) -> str | None:
        from serq.diagnostics import SerqError

        try:
            return _frame(self.page(), 900)
        except (SerqError, ValueError):  # no `view` extra, or no plots: the notebook shows the repr
            return None

    def __repr__(self) -> str:
        from serq.durations import span_text, time_unit

        now = span_text(self.now, time_unit(self.result.program))
        return (f"<serq.Run {self.name}: {self.report['iterations_simulated']} iterations, {now} simulated, "
                f"stopped: {self.stopped}>")


def _simulate(source, *, check: bool, checks, seed: int, horizon, warmup, coalesce: bool, max_steps: int,
              time_limit, memory, plots: bool, requests: bool = False):
    from serq.check.model import Checks
    from serq.sim.simulator import SimConfig, Simulator

    _limits(max_steps=max_steps, time_limit=time_limit)
    checks, limit = _checks(checks, slo=False), _memory(memory)
    ticks = _duration("horizon", horizon)
    if ticks is not None and ticks <= 0:
        raise ValueError("horizon must be a positive time (a run up to time 0 simulates nothing)")
    loaded, name = _load(source, simulate=True)
    if check:
        from serq.lang.load import require_sessions

        require_sessions(loaded, name, "check")
    cfg = SimConfig(seed=seed, horizon=ticks, warmup=_duration("warmup", warmup) or 0, coalesce=coalesce,
                    stop_on_violation=check, checks=Checks.of_program(loaded.program, checks) if check else None,
                    max_steps=max_steps, time_limit=time_limit, memory_limit=limit)
    sim = Simulator(loaded.program, cfg)
    if plots:
        from serq.view.simplots import attach

        attach(sim)
    if requests:
        from serq.sim.requests import attach as log_requests

        log_requests(sim)
    return sim.run(), name, loaded.warnings


def _duration(what: str, v) -> int | None:
    """A time as `serq run` takes it ("60s", "500ms"; a number is seconds), in ticks."""
    from serq.sim.arrivals import parse_duration

    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise ValueError(f"{what} is a time such as \"60s\" or a number of seconds, got {v!r}")
    return parse_duration(str(v))


def run(source, *, seed: int = 0, horizon=None, warmup=0, coalesce: bool = True,
        max_steps: int = DEFAULT_MAX_STEPS, time_limit: float | None = None, memory=None,
        plots: bool = True, requests: bool = False) -> Run:
    """Simulate an instance (`serq run`). `plots`: record the series of the
    plots' page (the notebook's picture; it costs time on long runs);
    `requests`: record a row per request (`Run.requests`, as `serq run
    --requests` writes them)."""
    result, name, warnings = _simulate(source, check=False, checks=None, seed=seed, horizon=horizon,
                                       warmup=warmup, coalesce=coalesce, max_steps=max_steps,
                                       time_limit=time_limit, memory=memory, plots=plots, requests=requests)
    return Run(result, name, warnings)


class Checked(Run):
    """What `serq.check` found: the verdict and the lines `serq check`
    prints, with the run it judged."""

    def __init__(self, result, name: str, judgement, warnings=()):
        super().__init__(result, name, warnings)
        self.judgement = judgement

    def json(self) -> dict:
        """What `serq check --json` prints (format serq-check, docs/json.md)."""
        from serq.sim.report import report_json

        return report_json(self.report, warnings=self.warnings, check=self.judgement)

    verdict = property(lambda self: self.judgement.verdict)
    ok = property(lambda self: self.judgement.ok)
    exit_code = property(lambda self: self.judgement.exit_code)
    lines = property(lambda self: list(self.judgement.lines), doc="what `serq check` prints")

    def __repr__(self) -> str:
        return f"<serq.Checked {self.verdict}: {self.name}>"


def check(source, *, checks=None, seed: int = 0, horizon=None, warmup=0, coalesce: bool = True,
          max_steps: int = DEFAULT_MAX_STEPS, time_limit: float | None = None, memory=None,
          plots: bool = False) -> Checked:
    """Simulate and judge what the instance's `check` lines (or `checks`)
    select (`serq check`)."""
    from serq.sim.checking import judge

    result, name, warnings = _simulate(source, check=True, checks=checks, seed=seed, horizon=horizon,
                                       warmup=warmup, coalesce=coalesce, max_steps=max_steps,
                                       time_limit=time_limit, memory=memory, plots=plots)
    return Checked(result, name, judge(result, label=name, seed=seed, max_steps=max_steps), warnings)


# ---------------------------------------------------------------- sweep


class Swept:
    """What `serq.sweep` found: a row per value or cell (`rows`: value --
    a tuple of values with two or three constants --, verdict, states),
    the boundary, the counterexample just on its failing side (one
    constant), the frontier (`frontier`: the Pareto frontier's cells with
    two or three), and the requirement's exit code (`exit_code`)."""

    def __init__(self, raw, name: str):
        self.raw, self.name = raw, name

    rows = property(lambda self: self.raw.rows)
    first_pass = property(lambda self: self.raw.first_pass, doc="the passing value at the boundary")
    last_fail = property(lambda self: self.raw.last_fail, doc="the failing value at the boundary")
    note = property(lambda self: self.raw.note, doc="the boundary in words")
    frontier = property(lambda self: self.raw.frontier, doc="the Pareto frontier (two or three constants)")

    @property
    def exit_code(self) -> int:
        """What `serq sweep` exits with: 0 when every value evaluated passes
        (meets `require`), 12 when one fails, 13 when none fails but some is
        undecided; with `any`: 0 when some value passes."""
        from serq.check.sweep import exit_code

        return exit_code(self.raw)

    def verdicts(self) -> dict[int, str]:
        return {r.value: r.verdict for r in self.raw.rows}

    def text(self, timing: bool = True) -> str:
        from serq.check.sweepreport import render_text

        return render_text(self.raw, with_timing=timing)

    def json(self, timing: bool = True) -> dict:
        from serq.check.sweepreport import render_json

        return render_json(self.raw, with_timing=timing)

    def _repr_html_(self) -> str:
        names = ", ".join(a.name for a in self.raw.axes)
        head = f"<tr><th>{html.escape(names)}</th><th>verdict</th><th>states</th></tr>"
        body = "".join(f"<tr><td>{html.escape(str(r.value))}</td><td>{html.escape(r.label)}</td><td>{r.states}</td></tr>"
                       for r in self.raw.rows)
        return f"<table>{head}{body}</table><p>{html.escape(self.note)}</p>"

    def __repr__(self) -> str:
        ranges = " ".join(f"{a.name}={a.lo}..{a.hi}" for a in self.raw.axes)
        return f"<serq.Swept {ranges}: {self.note}, {self.name}>"


def sweep(source, vary: str | list[str], *, bisect: bool = False, workers: int | None = None,
          max_states: int | None = None, max_depth: int | None = None, time_limit: float | None = None,
          ties: str = "all", symmetry: bool = True, checks=None, worst: list[str] | None = None,
          require: list[str] | None = None, any: bool = False) -> Swept:
    """Explore the instance once per value of a constant, or per cell of
    two or three (`serq sweep --vary NAME=LO..HI ...`): `vary` is one
    range or a list of them; `worst`, `require` and `any` as `--worst`,
    `--require` and `--any` (what `exit_code` answers)."""
    from serq.check.sweep import sweep as run_sweep

    _limits(max_states=max_states, max_depth=max_depth, time_limit=time_limit, workers=workers)
    text, name = _text_of(source)
    raw = run_sweep(text, name, vary, bisect=bisect, workers=workers, max_states=max_states, max_depth=max_depth,
                    time_limit=time_limit, ties=ties, symmetry=symmetry, checks=_checks(checks),
                    worst=worst, require=require)
    raw.quantifier = "some" if any else "every"
    return Swept(raw, name)


# ---------------------------------------------------------------- diff


class Differed:
    """What `serq.diff` found: the shortest behaviour, each way, where one
    variant fails and the other completes (`witnesses`), the verdict
    (`same`, `differ`, `bound`, `interrupted`), the joint states, and with
    `worst` the largest difference of a metric each way (`worst`)."""

    def __init__(self, raw, names: tuple[str, str]):
        self.raw, self.names = raw, names

    verdict = property(lambda self: self.raw.verdict)
    exit_code = property(lambda self: self.raw.exit_code, doc="what `serq diff` exits with")
    witnesses = property(lambda self: self.raw.witnesses, doc="per failing variant: (side, how, message, trace, ...)")
    states = property(lambda self: self.raw.states, doc="the joint states explored")
    worst = property(lambda self: self.raw.worst, doc="with `worst`: serq.check.diffworst.WorstDiff")
    notes = property(lambda self: list(self.raw.notes))
    warnings = property(lambda self: list(self.raw.warnings[0]) + list(self.raw.warnings[1]),
                        doc="each variant's warnings (W515: a `check eventually` the joint search does not compare)")

    @property
    def same(self) -> bool:
        return self.verdict == "same"

    def text(self) -> str:
        from serq.check.diffreport import render_text

        return render_text(self.raw)

    def json(self) -> dict:
        """What `serq diff --json` prints (format serq-diff, docs/json.md)."""
        from serq.check.diffreport import render_json

        return render_json(self.raw)

    def html(self) -> str:
        """The page `serq diff --html` writes (the `view` extra)."""
        from serq.view import need
        from serq.view.diffpage import diff_page

        need("jinja2", "serq.diff(...).html()")
        return diff_page(self.raw)

    def _repr_html_(self) -> str:
        return _frame(self.html(), 640)

    def __repr__(self) -> str:
        return f"<serq.Differed {self.verdict}: {self.names[0]} vs {self.names[1]}, {self.states} joint states>"


def diff(a, b, *, ties: str = "seq", checks=None, max_states: int | None = None, time_limit: float | None = None,
         memory=None, worst: str | None = None) -> Differed:
    """Explore two variants of one instance over the same arrivals, ties
    and drawn values (`serq diff a b`); `worst` names a metric as `--worst`
    does. Variants that cannot be matched raise serq.SerqError (E028)."""
    from serq.check.diff import diff as run_diff, not_compared
    from serq.check.diffmatch import match
    from serq.check.worst import MetricError, parse_metric
    from serq.lang.load import require_sessions

    if ties not in ("all", "seq"):
        raise ValueError(f"ties is all or seq; got {ties!r}")
    _limits(max_states=max_states, time_limit=time_limit)
    checks, limit = _checks(checks, slo=False), _memory(memory)
    (la, na), (lb, nb) = _load(a, explorer=True), _load(b, explorer=True)
    for one, name in ((la, na), (lb, nb)):
        require_sessions(one, name, "diff")
    match(la.program, lb.program, na, nb, lb.source)
    if worst is not None:
        for p in (la.program, lb.program):
            try:
                parse_metric(worst, p)
            except MetricError as e:
                raise ValueError(f"worst: {e}") from None
    raw = run_diff(la.program, lb.program, (na, nb), ties=ties, checks=checks, max_states=max_states,
                   time_limit=time_limit, memory_limit=limit, worst=worst)
    raw.warnings = tuple(tuple(one.warnings) + tuple(not_compared(one.program)) for one in (la, lb))
    return Differed(raw, (na, nb))
