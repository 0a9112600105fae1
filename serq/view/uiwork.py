"""The background work of `serq ui`, and its status panel.

One thread, started by the explorer's own page (the token of
serq.view.uilimits) or by `serq ui --search`, does three things in turn:

1. the search for the first violation: `explore`, as `serq explore` runs
   it on the instance's checks (the shortest path to it, /violation), its
   distinct states counted as it goes;
2. the point-of-no-return analysis on the whole state graph
   (`serq.check.explore.completion_graph`, the analysis behind a
   counterexample's point of no return): for every state, whether some run
   from it completes -- the marks on the pages' states and actions;
3. the properties the first search left open (it stops at the first
   violation): each with a search of its own that checks it alone, and
   each `check sometimes` line's witness search (serq/check/sometimes.py).

Each property of the status panel is one of the instance's checks
(deadlock, livelock, stuck, invariants with the asserts, each SLO, each
`eventually`, each `sometimes`), with its status and the replay path of
its counterexample or witness.

Supervision, as for every background job of serq: the work runs on one
thread (a thread cannot be killed alone); a step that ends by any
exception, SystemExit included, is `failed` with its message on the
status and the pages, never a search done without a verdict, and the next
step still runs.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from serq.check.model import Checks, SerqModel
from serq.defaults import GRAPH_LIMIT

# one property alone: every other selectable check off (asserts and run-time errors are always checked)
ALONE = {"deadlock": False, "livelock": False, "stuck": False, "invariant": False, "watch_stuck": False}
GOOD = ("holds", "witnessed")  # statuses of a property that the instance meets


@dataclass
class Prop:
    """One property of the status panel. `checks`: the search that checks
    it alone (None for a `sometimes` line, searched by its witness search);
    `kind`: the kind of its violations (an SLO's, an `eventually`'s)."""

    key: str
    name: str
    checks: Checks | None
    kind: str | None = None
    status: str = "pending"  # pending, searching, holds, fails, witnessed, never, bound, undecided, failed
    message: str = ""
    path: str | None = None
    states: int | None = None

    def json(self) -> dict:
        return {"key": self.key, "name": self.name, "status": self.status, "message": self.message,
                "path": self.path, "states": self.states, "good": self.status in GOOD,
                "bad": self.status in ("fails", "never", "failed")}


def properties(program, ch: Checks) -> list[Prop]:
    """The properties `ch` selects, in the order of the status panel."""
    from serq.check.sometimes import sometimes_lines
    from serq.ir.text import expr_text

    out = [Prop(n, n, Checks(**{**ALONE, n: True})) for n in ("deadlock", "livelock", "stuck") if getattr(ch, n)]
    out.append(Prop("invariant", "invariants and asserts" if ch.invariant else "asserts and run-time errors",
                    Checks(**{**ALONE, "invariant": ch.invariant})))
    out += [Prop(f"slo:{s.text}", s.text, Checks(**ALONE, slo=(s,)), kind=s.kind) for s in ch.slo]
    out += [Prop(f"eventually:{e.text}", e.text, Checks(**ALONE, eventually=(e,)), kind=e.kind) for e in ch.eventually]
    if ch.sometimes:
        out += [Prop(f"sometimes:{i}", f"sometimes {expr_text(c.e)}" + (f" (line {c.at[0]})" if c.at else ""), None)
                for i, c in enumerate(sometimes_lines(program))]
    return out


def property_of(result, props: list[Prop]) -> Prop | None:
    """The property a counterexample violates (None: not a counterexample)."""
    v, kind = result.verdict, result.kind or ""
    if v in ("deadlock", "livelock"):
        key = v
    elif v != "violation":
        return None
    elif kind == "stuck":
        key = "stuck"
    elif kind.startswith(("slo", "eventually")):
        return next((p for p in props if p.kind == kind), None)
    else:
        key = "invariant"  # an invariant, an assert, a run-time error, conservation
    return next((p for p in props if p.key == key), None)


class Marks:
    """Whether some run completes from a state, by its fingerprint: the
    stored graph's `completable` nodes (its edges dropped once known)."""

    def __init__(self, g, good: list[bool]) -> None:
        g.succ, g.parent, g.via = [], [], []  # what the marks need is the index and `good`
        self.g, self.good = g, good
        self.complete, self.states, self.reason = g.complete, len(g), g.bound_reason
        self.doomed = sum(1 for x in good if not x)

    def of(self, fp: int) -> str:
        """"completes" (some run from it completes), "doomed" (none does),
        or "unknown" (the graph was cut before it showed the answer)."""
        u = self.g.index.get(fp)
        if u is not None and self.good[u]:
            return "completes"
        return "doomed" if u is not None and self.complete else "unknown"

    def no_return(self, fps: list[int]):
        """The point of no return of a path given by its fingerprints
        (explorer's `no_return`, as a counterexample's)."""
        from explorer.check import no_return

        return no_return(self.g, fps, self.good)


@dataclass
class Background:
    """The background work of one explorer; `status()` is the panel."""

    program: object
    ties: str = "all"
    symmetry: bool = True
    check_names: list[str] | None = None
    max_states: int | None = None
    time_limit: float | None = None
    memory_limit: int | None = None
    graph_limit: int = GRAPH_LIMIT
    props: list[Prop] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.checks = Checks.of_program(self.program, self.check_names)
        self.props = properties(self.program, self.checks)
        self._lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.started = 0.0
        self.main_done = threading.Event()
        self.finished = False
        self.violation = None  # the first search's Result
        self.error: str | None = None  # why the first search has none
        self.job: str | None = None  # what runs now, in words
        self.states = 0  # the first search's distinct states so far
        self.job_states = 0  # the running search's
        self.marks: Marks | None = None
        self.marks_status, self.marks_message = "pending", ""

    def start(self) -> None:
        with self._lock:
            if self.thread is None:
                self.started = time.monotonic()
                self.thread = threading.Thread(target=self._run, name="serq ui search", daemon=True)
                self.thread.start()

    def _progress(self, main: bool):
        def seen(stats) -> None:
            self.job_states = stats.distinct
            if main:
                self.states = stats.distinct
        return seen

    def _run(self) -> None:
        """Each step in turn; one that raises outside its own search (in
        judging what the search found) fails what it left undecided, and
        the next step still runs."""
        steps = ((self._first, "the search"), (self._marks, "the point-of-no-return analysis"),
                 (self._each, "the property searches"), (self._witnesses, "the witness search"))
        try:
            for step, what in steps:
                try:
                    step()
                except BaseException as e:  # supervised: said on the page, never a thread ended silently
                    self._failed(what, e)
        finally:
            self.job, self.finished = None, True

    def _failed(self, what: str, e: BaseException) -> None:
        """What the step `what` left undecided is `failed`, with why."""
        message = failure(what, e)
        if what == "the search":
            self.main_done.set()
            if self.error is None:
                self.violation, self.error = None, message
        elif what == "the point-of-no-return analysis":
            self.marks, self.marks_status, self.marks_message = None, "failed", message
        else:  # the property searches, or the witness searches (the properties without `checks`)
            for p in self.props:
                if p.status in ("pending", "searching") and (p.checks is None) == (what == "the witness search"):
                    p.status, p.message = "failed", message

    def _first(self) -> None:
        from serq.check.explore import explore

        self.job, self.job_states = "searching for the first violation", 0
        try:
            r = explore(self.program, ties=self.ties, symmetry=self.symmetry, checks=self.check_names,
                        max_states=self.max_states, time_limit=self.time_limit, memory_limit=self.memory_limit,
                        progress=self._progress(True))
        except BaseException as e:  # said on the page, never a stack trace (nor a thread ended silently)
            self.error = failure("the search", e)
            return
        finally:
            self.main_done.set()
        if r is None:  # never shown as a search done
            self.error = "the search ended without a verdict"
            return
        if r.stats is not None:
            self.states = r.stats.distinct
        self.violation = r
        self._judge_all(r)

    def _judge_all(self, r) -> None:
        """The properties the first search decides: all of them when it
        passes; the one it finds violated; none when it is cut."""
        searched = [p for p in self.props if p.checks is not None]
        if r.verdict == "pass":
            for p in searched:
                p.status, p.message, p.states = "holds", r.message, self.states
        elif r.verdict in ("violation", "deadlock", "livelock"):
            p = property_of(r, self.props)
            if p is not None:
                p.status, p.message, p.path, p.states = "fails", r.message, r.replay_path, self.states
        elif r.verdict == "bound":
            for p in searched:
                p.status, p.message = "bound", r.message
        else:
            for p in searched:
                p.status, p.message = "failed", r.message

    def _marks(self) -> None:
        from serq.check.explore import completion_graph

        if self.graph_limit <= 0:
            self.marks_status, self.marks_message = "off", "not computed (--graph-limit 0)"
            return
        self.job, self.marks_status = "the point-of-no-return analysis (the whole state graph)", "running"
        limit = self.graph_limit if self.max_states is None else min(self.graph_limit, self.max_states)
        try:
            model = SerqModel(self.program, ties=self.ties, symmetry=self.symmetry, checks=self.checks)
            g, good = completion_graph(model, max_states=limit, time_limit=self.time_limit,
                                       memory_limit=self.memory_limit)
        except BaseException as e:
            self.marks_status, self.marks_message = "failed", failure("the point-of-no-return analysis", e)
            return
        self.marks = Marks(g, good)
        self.marks_status = "complete" if g.complete else "cut"
        flag = {"max_states": f"--graph-limit {limit}" if limit == self.graph_limit else f"--max-states {limit}",
                "time_limit": "--time-limit", "memory": "the memory bound"}.get(g.bound_reason, g.bound_reason)
        self.marks_message = (f"{len(g):,} states, {self.marks.doomed:,} from which no run completes"
                              if g.complete else f"cut by {flag} at {len(g):,} states: only states from which a "
                              "run completes are known")

    def _each(self) -> None:
        from serq.check.explore import explore

        for p in self.props:
            if p.checks is None or p.status != "pending":
                continue
            self.job, self.job_states, p.status = f"checking {p.name}", 0, "searching"
            try:
                r = explore(self.program, ties=self.ties, symmetry=self.symmetry, checks=p.checks,
                            max_states=self.max_states, time_limit=self.time_limit, memory_limit=self.memory_limit,
                            progress=self._progress(False), graph_limit=0)
            except BaseException as e:
                p.status, p.message = "failed", failure(f"the search for {p.name}", e)
                continue
            self._judge(p, r)

    def _judge(self, p: Prop, r) -> None:
        p.states = r.stats.distinct if r.stats is not None else None
        p.message = r.message
        if r.verdict == "pass":
            p.status = "holds"
        elif r.verdict in ("violation", "deadlock", "livelock"):
            other = property_of(r, self.props)
            p.path = r.replay_path
            if other is p:
                p.status = "fails"
            else:
                p.status = "undecided"
                p.message = (f"its search met another violation first ({r.verdict}"
                             f"{f' ({r.kind})' if r.kind else ''}): {r.message}")
        else:
            p.status = "bound" if r.verdict == "bound" else "failed"

    def _witnesses(self) -> None:
        from serq.check.sometimes import NEVER, WITNESS, search_witnesses

        some = [p for p in self.props if p.checks is None]
        if not some:
            return
        self.job, self.job_states = "searching for the `sometimes` witnesses", 0
        for p in some:
            p.status = "searching"
        try:
            found = search_witnesses(self.program, ties=self.ties, symmetry=self.symmetry,
                                     max_states=self.max_states, time_limit=self.time_limit,
                                     memory_limit=self.memory_limit, progress=self._progress(False))
        except BaseException as e:
            for p in some:
                p.status, p.message = "failed", failure("the witness search", e)
            return
        for p, w in zip(some, found):
            p.status = {WITNESS: "witnessed", NEVER: "never"}.get(w.verdict, "bound" if w.verdict == "bound"
                                                                   else "failed")
            p.message, p.path = w.message, w.result.replay_path
            p.states = w.result.stats.distinct if w.result.stats is not None else None
        for p in some[len(found):]:
            p.status, p.message = "failed", "not searched: a search before it was stopped"

    def search(self) -> tuple[str, object]:
        """The first search: ("idle", None), ("running", seconds so far),
        ("done", Result) or ("failed", message)."""
        if self.thread is None:
            return "idle", None
        if not self.main_done.is_set():
            return "running", time.monotonic() - self.started
        if self.error is not None:
            return "failed", self.error
        return "done", self.violation

    def status(self) -> dict:
        """The status panel, as data (`/api/status`)."""
        state, r = self.search()
        first = {"status": state}
        if state == "running":
            first["seconds"] = round(r, 1)
        elif state == "failed":
            first["message"] = r
        elif state == "done":
            first.update(verdict=r.verdict, kind=r.kind, message=r.message, path=r.replay_path)
        return {"started": self.thread is not None, "done": self.finished, "job": self.job,
                "states": self.states, "job_states": self.job_states, "search": first,
                "marks": {"status": self.marks_status, "message": self.marks_message,
                          "states": self.marks.states if self.marks else None,
                          "doomed": self.marks.doomed if self.marks else None},
                "properties": [p.json() for p in self.props]}


def failure(what: str, e: BaseException) -> str:
    from serq.diagnostics import SerqError

    if isinstance(e, SerqError):
        return "; ".join(d.message for d in e.diagnostics)
    return f"{what} failed: {type(e).__name__}: {e}"
