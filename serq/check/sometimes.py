"""Reachability witnesses: `check sometimes C;` (Stateright's `sometimes`).

Each `sometimes` line is searched for by a breadth-first search of its
own over the same states as the instance's other checks (the kernel's
steps, canonical form and symmetry), whose one "violation" is a state
where the condition holds: the engine stops at the first such state, so
its trace is a shortest witness (BFS), replayable with `--replay` like a
counterexample. When the whole state space is explored and no state meets
the condition, the verdict is `never` (exit 20); a search cut by a limit
is `bound` (no witness within it: it cannot say never). The condition is
evaluated by the kernel's evaluator over the lowered table, as an
invariant is (`Engine.sometimes`); a condition that cannot be evaluated
in a reachable state (a division by zero) is an error of the instance,
reported with the trace to that state (`violation (error)`, exit 12).

The witness searches check nothing else: the instance's other properties
(deadlock, an assert...) are the main search's (serq/check/explore.py);
a state that faults ends its path here as there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from explorer.check import check
from explorer.model import ModelFactory
from explorer.report import stats_line, trace_lines
from explorer.result import Result
from explorer.settings import Settings
from serq import ir
from serq.check.model import Checks, SerqModel
from serq.ir.text import expr_text
from serq.semantics.rowstate import F_FAULT

WITNESS, NEVER = "witness", "never"
NEVER_EXIT = 20  # serq/cli/exits.py: "never"
HIT, EVAL_ERROR = "sometimes", "error"  # the witness model's two kinds of "violation"


class WitnessModel(SerqModel):
    """serq's model whose one property is the `index`-th `sometimes`
    condition holding (reported as a violation of kind "sometimes"), or
    failing to evaluate (kind "error"). Every state is handed to
    `invariants` (`_plain_invariants` off)."""

    def __init__(self, program: ir.Program, *, index: int, ties: str = "all", symmetry: bool = True,
                 reduce_ranks: bool = False) -> None:
        super().__init__(program, ties=ties, symmetry=symmetry, reduce_ranks=reduce_ranks,
                         checks=Checks(deadlock=False, livelock=False, invariant=False, watch_stuck=False))
        self.index = index
        self._plain_invariants = False
        c = self.m.engine.low.sometimes[index]
        self.where = f"`sometimes` at line {c.at[0] if c.at else '?'}"

    def invariants(self, state, *, stuck: bool | None = None):
        rs = self.rows.pack(state)
        if rs.flags & F_FAULT:  # a faulted state ends its path; its fault is the main search's
            return []
        hit, fault = self.m.engine.sometimes(rs, self.index)  # the row loaded as it is (no tuple)
        if fault is not None:
            return [(EVAL_ERROR, f"{self.where} cannot be evaluated: {fault}")]
        return [(HIT, f"{self.where} holds{self.m.engine.met_by(rs, self.index)}")] if hit else []


@dataclass
class Sometimes:
    """One `sometimes` line's verdict: `witness` (its shortest trace in
    `result`), `never` (every reachable state explored, none meets it),
    or the search's own `bound`, `interrupted`, `failed`, `violation`
    (the condition cannot be evaluated: `result` has the trace)."""

    line: int
    text: str  # the condition, in the language's words
    verdict: str
    message: str
    result: Result

    @property
    def exit_code(self) -> int:
        if self.verdict == WITNESS:
            return 0
        return NEVER_EXIT if self.verdict == NEVER else self.result.exit_code

    @property
    def head(self) -> str:
        return f"{self.verdict} (sometimes at line {self.line}: {self.text}): {self.message}"


def sometimes_lines(program: ir.Program) -> list[ir.Check]:
    return [c for c in program.checks if c.kind == "sometimes"]


def search_witnesses(program: ir.Program, *, ties: str = "all", symmetry: bool = True,
                     max_states: int | None = None, max_depth: int | None = None,
                     time_limit: float | None = None, workers: int = 1, memory_limit: int | None = None,
                     exact: bool = False, progress=None, ray: str | None = None,
                     partitions: int | None = None, reduce_ranks: bool = False) -> list[Sometimes]:
    """Each `sometimes` line's verdict, in the order of the lines; each
    search breadth-first (the witness is a shortest one) within the
    limits given (each search has them whole), over hash partitions with
    `ray` or `partitions` (the same breadth-first levels), with the ranks
    reduced as the main search's (`reduce_ranks`). A search stopped by a
    signal ends the list there (the lines after it are not searched)."""
    out = []
    part = ray is not None or partitions is not None
    for i, c in enumerate(sometimes_lines(program)):
        factory = ModelFactory(WitnessModel, (program,), {"index": i, "ties": ties, "symmetry": symmetry,
                                                          "reduce_ranks": reduce_ranks})
        r = check(factory, Settings(strategy="partitioned" if part else "bfs", max_states=max_states,
                                    max_depth=max_depth, time_limit=time_limit, check_deadlock=False,
                                    check_livelock=False, workers=workers, memory_limit=memory_limit, exact=exact,
                                    progress=progress, ray=ray, partitions=partitions))
        out.append(judge(c, r))
        if r.verdict == "interrupted":
            break
    return out


def judge(c: ir.Check, r: Result) -> Sometimes:
    """A witness search's Result in the words of `sometimes`."""
    line, text = c.at[0] if c.at else 0, expr_text(c.e)
    if r.verdict == "violation" and r.kind == HIT:
        n = len(r.trace) - 1
        who = r.message.partition(" holds by ")[2]  # an `exists`: the session meeting it
        return Sometimes(line, text, WITNESS, f"a shortest witness, {n} step{'s' * (n != 1)}"
                         + (f", met by {who}" if who else ""), r)
    if r.verdict == "pass":
        return Sometimes(line, text, NEVER, f"no reachable state meets it ({r.stats.distinct} distinct states, "
                         "every reachable state explored)", r)
    if r.verdict == "bound":
        return Sometimes(line, text, "bound", f"no witness within the bound ({r.bound_reason}); "
                         "the search is incomplete, it cannot say never", r)
    return Sometimes(line, text, r.verdict, r.message, r)


def exit_code(main: Result, witnesses: list[Sometimes]) -> int:
    """The run's exit code: the main search's when it fails; else that of
    the first `sometimes` line without a witness; else 0."""
    if main.verdict != "pass":
        return main.exit_code
    return next((w.exit_code for w in witnesses if w.verdict != WITNESS), 0)


def page_result(w: Sometimes) -> Result:
    """The Result the page (`--html`) shows for a line: its trace, its
    words; a witness is no failure (the verdict `pass`)."""
    verdict = "pass" if w.verdict == WITNESS else w.result.verdict
    return replace(w.result, verdict=verdict, kind=None, message=w.head, no_return=None)


def render_text(witnesses: list[Sometimes], *, with_timing: bool = True) -> str:
    """Each line's verdict, its witness (or the trace to the state where it
    cannot be evaluated) and the replay path, then its search's stats."""
    out = []
    for w in witnesses:
        out.append(w.head)
        out.extend(trace_lines(w.result.trace))
        if w.result.replay_path is not None:
            out.append(f"replay: {w.result.replay_path}")
        out.append(stats_line(w.result.stats, with_timing))
    return "".join(x + "\n" for x in out)


def render_json(model, witnesses: list[Sometimes], *, with_timing: bool = True) -> list[dict]:
    """Each line's verdict as data (the `sometimes` list of serq-explore):
    its trace with each step's data, as a counterexample's. `model`: a
    SerqModel, or a function making one (called only for a trace)."""
    from serq.check.tracedata import explore_json

    out = []
    for w in witnesses:
        d = explore_json(model, w.result, with_timing=with_timing)
        out.append({"line": w.line, "condition": w.text, "verdict": w.verdict, "message": w.message,
                    "exit_code": w.exit_code, "replay_path": w.result.replay_path, "trace": d["trace"],
                    "stats": d["stats"]})
    return out


def replay_note(program: ir.Program, model: SerqModel, state) -> str:
    """The `sometimes` lines the last state of a replayed trace meets, in
    words (empty when none): a witness replayed says it is one."""
    if not isinstance(model, SerqModel):  # the SLO search's product (serq/check/slo.py): serq's state inside
        model, state = model.sm, state.state
    met = [c for i, c in enumerate(sometimes_lines(program)) if model.m.engine.sometimes(state, i)[0]]
    if not met:
        return ""
    lines = ", ".join(str(c.at[0] if c.at else "?") for c in met)
    return f"; its last state meets `sometimes` at line{'s' * (len(met) > 1)} {lines}"
