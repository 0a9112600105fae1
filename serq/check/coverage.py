"""Event coverage of an exploration (`serq explore --coverage`): for each
kind of event a scheduler designer asks about, how many explored
transitions had it, and on request a shortest witness trace of each.

The kinds are read from the step's own events (serq.semantics.events, the
kernel's event records), never from a second reading of the program:

| kind | a transition that has |
| --- | --- |
| `admission` | an `admit` event |
| `admission-blocked` | after it, a waiting hold that the step could admit (below) is refused by its `admit if` or by a pool's `need` (a gate, a watermark written into `need`), by the admission's own evaluation (serq.check.admission) |
| `preemption` | a `preempt` event, whatever the victim was doing |
| `preemption-prefill` | a `preempt` of a session in a prefill run |
| `preemption-decode` | a `preempt` of a session in a decode run |
| `self-preemption` | a `preempt` whose victim is the grower itself |
| `cache-hit` | a `hit` event (units reused from the cache) |
| `eviction` | an `evict` event |
| `requeue` | a `queued` event of a session preempted in the same step |
| `spawn` | a `spawn` event |
| `join` | a `joined` event (a session passes its `join`) |

A victim's phase is that of the last tokens the step served it before its
preemption, else its run's in the state before the step. A waiting hold
the step could admit: the head of its first pool's queue (any waiting hold
under `hol skip`), and the step one that admits into that pool: any step
for an event-driven pool, for `admit via S` an iteration of S that
preempted no one (an iteration that preempts admits nothing).

It rides on the exploration's one search as a visitor
(explorer/visitor.py); counts are per transition (an edge of the explored
graph, between states as the search identifies them), each counted once
per kind however many events of the kind it has. A witness is the first
such transition met by the breadth-first search, after the path by which
its source state was first stored: a shortest one."""

from __future__ import annotations

from dataclasses import dataclass, field

from explorer.visitor import Visitor
from serq.check.admission import refusal
from serq.check.model import session_phase
from serq.defaults import COVERAGE_KINDS
from serq.semantics.model import ITERATE

__all__ = ["KINDS", "Coverage", "CoverageVisitor", "kinds_of", "blocked", "could_preempt", "could_evict",
           "vacuity", "render_text", "render_json"]

KINDS = COVERAGE_KINDS

_PLAIN = {"admit": "admission", "hit": "cache-hit", "evict": "eviction", "spawn": "spawn", "joined": "join"}


def kinds_of(sm, state, action, events, nxt) -> set[str]:
    """The coverage kinds of one transition `state` -(action)-> `nxt`
    with the step's `events` (sm: the SerqModel)."""
    out: set[str] = set()
    preempted: set[int] = set()
    served: dict[int, str] = {}  # the phase of the last tokens served to each session in this step
    for e in events:
        k = e.kind
        if k == "serve":
            served[e.sid] = e.phase
        elif k == "preempt":
            out.add("preemption")
            preempted.add(e.sid)
            if e.why == "self":
                out.add("self-preemption")
            phase = served.get(e.sid) or session_phase(sm, state, e.sid)
            if phase in ("prefill", "decode"):
                out.add(f"preemption-{phase}")
        elif k == "queued":
            if e.sid in preempted:
                out.add("requeue")
        elif k == "hit":
            if e.units > 0:
                out.add("cache-hit")
        elif k in _PLAIN:
            out.add(_PLAIN[k])
    if nxt is not None and blocked(sm, action, events, nxt):
        out.add("admission-blocked")
    return out


def blocked(sm, action, events, nxt) -> bool:
    """Whether a waiting hold that this step could admit is refused after
    it by its `admit if` or a pool's `need` (the module's docstring)."""
    m = sm.m
    preempts = None
    for sid, s in enumerate(nxt.sessions):
        if m.progs[s.prog].states[s.pc].kind != "acquire":
            continue
        gate = m.gates[s.prog][s.pc]
        pool = m.pools[gate]
        if pool.admit_via is not None:
            if action[0] != ITERATE or action[1] != m.stage_index[pool.admit_via]:
                continue
            if preempts is None:
                preempts = any(e.kind == "preempt" for e in events)
            if preempts:
                continue
        queue = nxt.pools[gate].queue
        if pool.hol != "skip" and (not queue or queue[0] != sid):
            continue
        r = refusal(m, nxt, sid)
        if r.fault is None and (r.gate is not None or r.short):
            return True
    return False


@dataclass
class Coverage:
    """What `--coverage` reports: per kind, the transitions that had it,
    and the witnesses asked for (kind -> the trace whose last step has
    it, None when no explored transition had it)."""

    counts: dict = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    transitions: int = 0
    complete: bool = False  # the search explored every reachable state (an exhaustive result)
    verdict: str = ""  # the search's
    witnesses: dict = field(default_factory=dict)  # kind asked -> its trace (explorer Steps), None if never
    sm: object = field(default=None, repr=False)  # the SerqModel whose words the witnesses' data are in


class CoverageVisitor(Visitor):
    """Counts each explored transition's kinds; with `witness` (a set of
    kinds) keeps the parent of every stored state and the first
    transition of each asked kind."""

    def __init__(self, witness=(), sm=None) -> None:
        self.model = self.sm = sm
        self.cov = Coverage()
        self.want = set(witness)
        self.parents: dict[int, tuple[int | None, int]] = {}
        self.first: dict[str, tuple[int, int, int]] = {}  # kind -> (source fp, action index, target fp)
        self._cur: int | None = None
        self._skip = False
        self._done: set[int] = set()

    def bind(self, model) -> None:
        """The search's model (serq's, or the SLO search's product over it)."""
        self.model = model
        self.sm = getattr(model, "sm", model)

    def on_state(self, state, fp, parent, ai, depth):
        if self.want:
            self.parents[fp] = (parent, ai)
        return None

    def on_edge(self, state, fp, ai, action, nxt, nfp, events):
        if fp != self._cur:  # a new expansion: DFS with a depth bound may expand a state again
            self._cur = fp
            self._skip = fp in self._done
            self._done.add(fp)
        if self._skip:
            return None
        sm = self.sm
        base = getattr(state, "state", state)  # a product state (the SLO search's) carries serq's
        after = getattr(nxt, "state", nxt)
        _n, evs = sm.m.step_events(base, action)
        c = self.cov
        c.transitions += 1
        for k in kinds_of(sm, base, action, evs, after):
            c.counts[k] += 1
            if k in self.want and k not in self.first:
                self.first[k] = (fp, ai, nfp)
        return None

    def chain(self, fp: int) -> list[tuple[int, int]]:
        out = []
        cur: int | None = fp
        while cur is not None:
            parent, ai = self.parents[cur]
            out.append((cur, ai))
            cur = parent
        out.reverse()
        return out

    def kinds(self) -> list[str]:
        """The kinds whose witness is asked, in KINDS's order."""
        return [k for k in KINDS if k in self.want]

    def finish(self, result) -> Coverage:
        """The coverage of the search that ended with `result`, each asked
        witness rebuilt by replay (as a counterexample's trace is)."""
        from explorer.trace import rebuild

        c = self.cov
        # the sequential search judges livelocks once every state is expanded: exhaustive too
        c.complete = result.verdict in ("pass", "livelock")
        c.verdict = result.verdict
        c.sm = self.sm
        for k in self.kinds():
            if k in self.first:
                fp, ai, nfp = self.first[k]
                c.witnesses[k] = rebuild(self.model, self.chain(fp) + [(nfp, ai)])
            else:
                c.witnesses[k] = None
        return c


# ---------------------------------------------------------------- vacuity


def could_preempt(program) -> list[str]:
    """The pools a preemption can take back: finite, grown by some run,
    with a victim order (as W504 and W511 read them)."""
    from serq import ir

    grown = {st.growing for sp in program.sessions for st in sp.states if isinstance(st, ir.SRun) and st.growing}
    return [p.name for p in program.pools if p.cap is not None and p.victim is not None and p.name in grown]


def could_evict(program) -> list[str]:
    """The finite pools whose cache can fill: a hold keeps units of it
    (`keep`) or names a prefix on it."""
    from serq import ir

    kept = {k.pool for sp in program.sessions for sc in sp.scopes for k in sc.keep}
    kept.update(i.pool for sp in program.sessions for st in sp.states if isinstance(st, ir.SAcquire)
                for i in st.hold.items if i.prefix)
    return [p.name for p in program.pools if p.cap is not None and p.name in kept]


def vacuity(program, cov: Coverage) -> list:
    """W520 on a pass of the whole state space that never preempted
    (evicted) although a pool could preempt (evict): the pass says nothing
    about preemption (eviction) on this instance."""
    from serq.diagnostics import Diagnostic

    if not cov.complete or cov.verdict != "pass":
        return []
    out = []
    for kind, pools, verb, why in (
            ("preemption", could_preempt(program), "preempts", "finite, grown by a run, with a victim order"),
            ("eviction", could_evict(program), "evicts", "finite, and a hold keeps units of it in its cache")):
        if pools and cov.counts[kind] == 0:
            pool = next(p for p in program.pools if p.name == pools[0])
            at = pool.at or (0, 0)
            names = ", ".join(f"`{p}`" for p in pools)
            could = "could" if len(pools) == 1 else "each could"
            out.append(Diagnostic(at[0], at[1], "W520",
                                  f"vacuous pass: no explored transition {verb}, although {names} {could} "
                                  f"({why}); this pass says nothing about {kind}", "warning", program.source,
                                  ("`serq explore --coverage` counts each kind of event; a larger workload or "
                                   "a smaller pool may reach it",), len(pool.name)))
    return out


# ---------------------------------------------------------------- words and data


def render_text(cov: Coverage) -> str:
    from explorer.report import trace_lines

    scope = ("every reachable transition" if cov.complete else
             "the transitions explored before the search stopped (not every reachable one)")
    out = [f"coverage: {cov.transitions} transition(s), {scope}"]
    width = max(len(k) for k in KINDS)
    for k in KINDS:
        n = cov.counts[k]
        out.append(f"  {k:<{width}}  {n}" + ("  (never)" if n == 0 else ""))
    for k, trace in cov.witnesses.items():
        if trace is None:
            out.append(f"witness {k}: none: no explored transition had it")
            continue
        out.append(f"witness {k}: {len(trace) - 1} step(s), the last one has it")
        out.extend(trace_lines(trace))
        out.append(f"replay: {'/'.join(str(s.action_index) for s in trace)}")
    return "\n".join(out) + "\n"


def render_json(cov: Coverage) -> dict:
    """`--coverage` in `serq explore --json` (its `coverage`, docs/json.md):
    each witness's steps with their data, as a counterexample's."""
    from types import SimpleNamespace

    from explorer.fingerprint import format_fp
    from serq.check.tracedata import trace_data

    witnesses = {}
    for k, trace in cov.witnesses.items():
        if trace is None:
            witnesses[k] = None
            continue
        # a product state (the SLO search's) carries serq's state
        plain = [SimpleNamespace(state=getattr(s.state, "state", s.state), action=s.action) for s in trace]
        data = trace_data(cov.sm, plain)
        witnesses[k] = {"replay_path": "/".join(str(s.action_index) for s in trace), "steps": len(trace) - 1,
                        "trace": [{"step": s.index, "action_index": s.action_index, "action": s.action_text,
                                   "diff": list(s.diff), "fingerprint": format_fp(s.fingerprint), **d}
                                  for s, d in zip(trace, data)]}
    return {"complete": cov.complete, "transitions": cov.transitions,
            "counts": {k: cov.counts[k] for k in KINDS}, "witnesses": witnesses}
