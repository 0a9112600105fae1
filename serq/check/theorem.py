"""`serq explore --theorem`: the completion theorem's hypotheses, checked
statically on an instance, then the exploration of its conclusion: every
admitted session completes (`completes`, where a state whose unfinished
sessions all wait for an admission they never had counts as done). A
session that can never be admitted is a finding of its own, with its
witness and the gate that refuses it.

The theorem (seed note section 7): under `preempt lifo` and reservation, if
every session fits the pool alone (cap ≥ prompt + max_out) and no session
joins while holding a finite pool, every admitted session completes.

Hypotheses, each evaluated over every value of the finite domains:
  H1 lifo      every finite pool that a run grows preempts `lifo`;
  H2 reserve   every hold on such a pool takes what it needs (take = need);
  H3 fits      every session's largest demand on every finite pool, in
               blocks, is at most the pool's capacity in blocks;
  H4 bounded   every hidden drawn value is at most its declared bound
               (`max_<name>`, or `max_out`);
  H5 no-join   no `join` inside a hold of a finite pool;
  H6 one-hold  no hold of a finite pool inside a hold of another finite
               pool (one admission decision per session at a time: nested
               acquisitions can deadlock in lock order, which the theorem's
               single-pool induction does not cover).
H3 and H4 are measured by running each workload session alone on the same
step function with every finite pool made infinite, over every drawn value
(the peak of its holds is its demand): one semantics, no second reading of
the program.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from explorer.runtime.interrupt import Interrupted
from serq.cli.exits import EXIT_THEOREM
from explorer.check import walk
from serq import ir
from serq.ir.util import enclosing_pools, same_expr, walk_expr
from serq.check.explore import explore
from serq.check.admission import refusals
from serq.semantics.model import Model
from serq.words import blocks_over_cap

SOLO_LIMIT = 200_000  # states per solo exploration



@dataclass
class Hypothesis:
    code: str
    name: str
    text: str
    holds: bool | None  # None: could not be decided (bound)
    witnesses: list[str] = field(default_factory=list)




def grown_pools(prog: ir.Program) -> list[str]:
    out = []
    for s in prog.sessions:
        for st in s.states:
            if isinstance(st, ir.SRun) and st.growing and st.growing not in out:
                out.append(st.growing)
    return [p for p in out if prog.pool(p) and prog.pool(p).cap is not None]


def h1_lifo(prog: ir.Program) -> Hypothesis:
    wit = []
    for name in grown_pools(prog):
        v = prog.pool(name).victim
        is_lifo = v is not None and not v.keys and v.tie.event == "admitted" and v.tie.desc
        if not is_lifo:
            what = "none" if v is None else ("fifo" if not v.keys and not v.tie.desc else "a custom victim order")
            wit.append(f"pool `{name}` (line {prog.pool(name).at[0] if prog.pool(name).at else '?'}) preempts {what}")
    return Hypothesis("H1", "lifo", "every finite pool that a run grows preempts lifo", not wit, wit)


def h2_reserve(prog: ir.Program, prefill_growth: list[str] = ()) -> Hypothesis:
    """Static: take is need. Measured (`prefill_growth`, from the solo
    runs): what a hold takes at admission covers what its prefill grows it
    to, so `take 0` (need and take both 0) does not hold vacuously. Decode
    growth is not counted: the reservation is the prompt's, and H3 is what
    covers the answer."""
    grown = set(grown_pools(prog))
    wit = []
    for s in prog.sessions:
        for st in s.states:
            if isinstance(st, ir.SAcquire):
                for it in st.hold.items:
                    if it.pool in grown and not same_expr(it.need, it.take):
                        line = f"line {it.at[0]}" if it.at else "?"
                        wit.append(f"`{s.name}` ({line}): hold on `{it.pool}` needs one amount and takes another")
    wit.extend(prefill_growth)
    return Hypothesis("H2", "reserve", "every hold on a grown finite pool takes what it needs (reserve)", not wit, wit)


def h5_nojoin(prog: ir.Program) -> Hypothesis:
    wit = []
    for s in prog.sessions:
        for st in s.states:
            if isinstance(st, ir.SJoin):
                fin = sorted(p for p in enclosing_pools(s, st.scope) if prog.pool(p) and prog.pool(p).cap is not None)
                if fin:
                    wit.append(f"`{s.name}` (line {st.at[0] if st.at else '?'}) joins while holding {', '.join(fin)}")
    return Hypothesis("H5", "no-join", "no join inside a hold of a finite pool", not wit, wit)


def h6_one_hold(prog: ir.Program) -> Hypothesis:
    wit = []
    finite = {p.name for p in prog.pools if p.cap is not None}
    for s in prog.sessions:
        for st in s.states:
            if isinstance(st, ir.SAcquire):
                inner = sorted({i.pool for i in st.hold.items} & finite)
                held = sorted(enclosing_pools(s, st.scope) & finite)
                if inner and held:
                    wit.append(f"`{s.name}` (line {st.at[0] if st.at else '?'}) acquires "
                               f"{', '.join(inner)} while holding {', '.join(held)}")
    return Hypothesis("H6", "one-hold", "no hold of a finite pool nested in a hold of another", not wit, wit)


def solo_programs(prog: ir.Program):
    """One instance per distinct workload entry: that session alone, every
    finite pool made infinite."""
    pools = tuple(p.model_copy(update={"cap": None}) for p in prog.pools)
    seen = []
    for line in prog.workload:
        key = (line.program, line.args)
        if key in seen or line.count == 0:
            continue
        seen.append(key)
        yield line, prog.model_copy(update={
            "pools": pools, "checks": (),
            "workload": (line.model_copy(update={"count": 1, "arrival": None}),)})


def _bound_slot(sp: ir.SessionProgram, attr: str) -> str | None:
    names = {a.name for a in sp.attrs}
    for cand in (f"max_{attr}", "max_out"):
        if cand in names and cand != attr:
            return cand
    return None


def _taken(m: Model, state, sid: int, pool: str, scope: int | None):
    """Units the hold of session sid took at admission (take rounded up to
    blocks, plus reuse), from its attributes in `state`, by the kernel's
    evaluator over the clauses' lowered code; None if its clauses read more
    than attributes or the hold is not known (`scope` None: released in the
    same step, found only if one hold of the program is on the pool)."""
    prog = state.sessions[sid].prog
    states = m.progs[prog].states
    acqs = [pc for pc, st in enumerate(states) if isinstance(st, ir.SAcquire)
            and (st.opens == scope or scope is None) and any(i.pool == pool for i in st.hold.items)]
    if len(acqs) != 1:
        return None
    i, item = next((i, it) for i, it in enumerate(states[acqs[0]].hold.items) if it.pool == pool)
    if any(isinstance(x, (ir.Ctx, ir.PoolRef)) for e in (item.take, item.reuse) for x in walk_expr(e)):
        return None  # a clause reading the context or a pool: not decided here
    code = m.engine.low.hold_codes[prog, acqs[0]][i]
    bs = m.blocks[m.pool_index[pool]]
    try:
        take = m.engine.eval_session(state, sid, code.take, code.take_real)
        reuse = m.engine.eval_session(state, sid, code.reuse, code.reuse_real) if code.reuse >= 0 else 0
    except ValueError:  # a clause that cannot be evaluated: not decided here
        return None
    # as the kernel admits (kernel/admission.py): a real take rounded up, then at least 0, in whole
    # blocks; a real reuse truncated
    take = max(math.ceil(take), 0)
    return -(-take // bs) * bs + int(reuse)


def _prefill_growth(prog, m, st, nxt, e, grown) -> str | None:
    """A witness if serve event `e` is a prefill growing a hold of a grown
    finite pool past what the hold took at admission."""
    sid, p, after = e.sid, e.pool, e.held
    pool = m.pools[p].name if p is not None else None
    if e.phase != "prefill" or pool not in grown:
        return None
    cp = m.progs[nxt.sessions[sid].prog]
    held = [h for h in st.sessions[sid].holds if h.pool == p] if sid < len(st.sessions) else []
    if held:
        before = held[0].own
    else:  # admitted in this very step: what the hold's clauses took
        scope = next((h.scope for h in nxt.sessions[sid].holds if h.pool == p), None)
        before = _taken(m, nxt, sid, pool, scope)
        if before is None:
            return None
    bs = m.blocks[p]
    b0, b1 = -(-before // bs), -(-after // bs)
    if b1 <= b0:
        return None
    vals = ", ".join(f"{a.name}={v}" for a, v in zip(cp.attrs, nxt.sessions[sid].attrs)
                     if a.origin in ("draw", "choose", "param"))
    return (f"{cp.name}({vals})" if vals else cp.name) + \
        f": its prefill grows its hold on `{pool}` from {b0} to {b1} blocks, past what the hold took at admission"


def measure(prog: ir.Program, *, deadline: float | None = None, time_limit: float | None = None,
            max_states: int = SOLO_LIMIT):
    """(peaks, bound_failures, undecided, prefill_growth, signal): peaks[(program,
    pool)] = (blocks, witness text) over every solo run; bound failures and
    H2's measured witnesses as text. Each solo run is a walk of the
    explorer (explorer/graph/walk.py) over the same step function, within
    `max_states` states each and the `deadline` (a time.perf_counter()
    value; `time_limit` is what is reported); a solo run cut short by
    either, or by SIGINT/SIGTERM, is listed in `undecided`; a signal
    ends the measure (`signal` is its name, else None)."""
    peaks: dict[tuple[str, str], tuple[int, str]] = {}
    bound_fail: list[str] = []
    undecided: list[str] = []
    growth: list[str] = []
    grown_by: set[str] = set()
    grown = set(grown_pools(prog))
    for line, solo in solo_programs(prog):
        m = Model(solo, ties="seq")
        hidden = {}
        for cp in m.progs:
            sp = prog.session(cp.name)
            hidden[cp.index] = [(cp.slots[a.name], a.name, _bound_slot(sp, a.name))
                                for a in sp.attrs if a.hidden and a.origin == "draw"]

        def peak(state, sid, p, own):
            s = state.sessions[sid]
            cp = m.progs[s.prog]
            blocks = -(-own // m.blocks[p])
            key = (cp.name, m.pools[p].name)
            if blocks > peaks.get(key, (-1, ""))[0]:
                vals = ", ".join(f"{a.name}={v}" for a, v in zip(cp.attrs, s.attrs)
                                 if a.origin in ("draw", "choose", "param"))
                peaks[key] = (blocks, f"{cp.name}({vals})" if vals else cp.name)

        def on_state(st):
            for sid, s in enumerate(st.sessions):
                cp = m.progs[s.prog]
                if cp.states[s.pc].kind == "arrive":
                    continue
                attrs = s.attrs
                for h in s.holds:
                    peak(st, sid, h.pool, h.own)
                for slot, name, bound in hidden[s.prog]:
                    if bound is None:
                        msg = f"`{cp.name}`: hidden `{name}` has no declared bound (declare `max_{name}` or `max_out`)"
                    elif attrs[slot] > attrs[cp.slots[bound]]:
                        msg = f"`{cp.name}`: hidden {name}={attrs[slot]} exceeds its bound {bound}={attrs[cp.slots[bound]]}"
                    else:
                        continue
                    if msg not in bound_fail:
                        bound_fail.append(msg)

        def on_edge(st, _a, nxt, events):
            # a hold never shrinks: its size at release is its peak (a
            # hold can grow and be released within one action)
            for e in events:
                if e.kind == "release":
                    peak(nxt, e.sid, e.pool, e.units)
                elif e.kind == "serve" and line.program not in grown_by:  # one witness a program
                    msg = _prefill_growth(prog, m, st, nxt, e, grown)
                    if msg is not None:
                        grown_by.add(line.program)
                        growth.append(msg)

        end = walk([m.initial_state()], m.transitions, on_state=on_state, on_edge=on_edge,
                   max_states=max_states, deadline=deadline, time_limit=time_limit)
        if end.reason == "max_states":
            undecided.append(f"`{line.program}` alone has more than {max_states} states")
        elif end.reason == "time_limit":
            undecided.append(f"`{line.program}` alone: the time limit ({time_limit} s) came after "
                             f"{end.states} states")
        elif end.reason is not None:
            undecided.append(f"`{line.program}` alone: interrupted by {end.reason} after {end.states} states")
            return peaks, bound_fail, undecided, growth, end.reason
    return peaks, bound_fail, undecided, growth, None


class TheoremInterrupted(Interrupted):
    """SIGINT/SIGTERM during the hypotheses' solo runs: `hypotheses` holds
    the table so far (the measured ones unknown)."""

    def __init__(self, signame: str, hs: list) -> None:
        super().__init__(signame)
        self.hypotheses = hs


def hypotheses(prog: ir.Program, *, deadline: float | None = None, time_limit: float | None = None,
               max_states: int = SOLO_LIMIT) -> list[Hypothesis]:
    """The six hypotheses (limits as `measure`); raises TheoremInterrupted
    on SIGINT/SIGTERM."""
    peaks, bound_fail, undecided, growth, stopped = measure(prog, deadline=deadline, time_limit=time_limit,
                                                            max_states=max_states)
    fit_wit = []
    for (pname, pool), (blocks, wit) in sorted(peaks.items()):
        over = blocks_over_cap(prog.pool(pool), blocks)
        if over:
            fit_wit.append(f"{wit} {over}")
    und = bool(undecided)
    h3 = Hypothesis("H3", "fits", "every session's largest demand fits each finite pool alone (in blocks)",
                    None if (und and not fit_wit) else not fit_wit, fit_wit + undecided)
    h4 = Hypothesis("H4", "bounded", "every hidden drawn value is at most its declared bound",
                    None if (und and not bound_fail) else not bound_fail, bound_fail + (undecided if und else []))
    hs = [h1_lifo(prog), h2_reserve(prog, growth), h3, h4, h5_nojoin(prog), h6_one_hold(prog)]
    if stopped:
        raise TheoremInterrupted(stopped, hs)
    return hs


def table(hs: list[Hypothesis]) -> str:
    rows = [("hypothesis", "", "holds", "witness")]
    for h in hs:
        status = "yes" if h.holds else ("no" if h.holds is False else "unknown")
        wit = h.witnesses[0] if h.witnesses else "-"
        rows.append((h.code, h.text, status, wit))
        for more in h.witnesses[1:]:
            rows.append(("", "", "", more))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    return "\n".join(f"{a:<{w0}}  {b:<{w1}}  {c:<{w2}}  {d}".rstrip() for a, b, c, d in rows) + "\n"


def never_admitted(prog: ir.Program, result) -> list[str] | None:
    """When `result` is a deadlock whose unfinished sessions all wait for an
    admission they never had: why each waiting session is refused."""
    from serq.check.model import SerqModel

    if result.verdict != "deadlock" or not result.trace:
        return None
    sm = SerqModel(prog, checks=None)
    state = result.trace[-1].state
    state = state.tuple() if hasattr(state, "tuple") else state
    if not sm.unadmitted(state):
        return None
    # the deadlock diagnosis's own words: the kernel's admission, evaluated in this state
    return [line for r in refusals(sm.m, state).values() for line in r.lines]


def theorem_verdict(hs: list[Hypothesis], result, refused: list[str] | None = None) -> tuple[str, int]:
    failed = [h for h in hs if h.holds is False]
    unknown = [h for h in hs if h.holds is None]
    if refused:
        holds = "every admitted session completes: the theorem's conclusion holds"
        if failed or unknown:
            names = ", ".join(f"{h.code} ({h.name})" for h in failed + unknown)
            holds = f"hypothesis {names} {'fails' if len(failed + unknown) == 1 else 'fail'}, yet {holds}"
        return (f"never admitted: {'; '.join(refused)}; {holds}; the deadlock below is the witness",
                result.exit_code)
    if result.verdict == "violation" and result.kind in ("error", "assert"):
        return (f"the instance fails on its own ({result.kind}), whatever the theorem says: see below",
                result.exit_code)
    if result.verdict == "bound":
        return ("no violation within the bound: the theorem's conclusion could not be checked fully", result.exit_code)
    if result.verdict in ("interrupted", "failed"):
        return (f"{result.verdict}: the theorem's conclusion could not be checked fully", result.exit_code)
    if not failed and not unknown:
        if result.verdict == "pass":
            return ("theorem holds on this instance: every hypothesis holds and every admitted session completes", 0)
        return ("THEOREM VIOLATED: every hypothesis holds, yet the explorer found a counterexample "
                "(a bug in the semantics or in the theorem)", EXIT_THEOREM)
    names = ", ".join(f"{h.code} ({h.name})" for h in failed + unknown)
    verb = "fails" if len(failed + unknown) == 1 else "fail"
    if result.verdict == "pass":
        return (f"hypothesis {names} {verb}; the explorer found no counterexample on this instance", 0)
    return (f"hypothesis {names} {verb}; the counterexample below is what {'it prevents' if len(failed) == 1 else 'they prevent'}",
            result.exit_code)


def check_theorem(prog: ir.Program, **explore_kw):
    """The hypotheses, then the exploration of the conclusion (keyword
    arguments as `serq.check.explore.explore`): (hypotheses, result, verdict
    line, exit code). `completes` is explored first; a deadlock in which
    every session left waits for an admission it never had is explored
    again with such states counted as done (`Checks.admitted`): what that
    finds is the theorem's counterexample; if nothing, the first deadlock
    is the witness of a session never admitted. The limits hold over both: the solo runs share the
    time limit (the exploration gets what they leave) and keep within
    `max_states` each; SIGINT/SIGTERM during them gives the verdict
    "interrupted" with the table so far."""
    from explorer.outcome import bounded, interrupted
    from explorer.result import Stats

    t0 = time.perf_counter()
    tl = explore_kw.get("time_limit")
    ms = explore_kw.get("max_states")
    try:
        hs = hypotheses(prog, deadline=None if tl is None else t0 + tl, time_limit=tl,
                        max_states=SOLO_LIMIT if ms is None else min(SOLO_LIMIT, ms))
    except TheoremInterrupted as e:
        result = interrupted(Stats(elapsed=time.perf_counter() - t0), e)
        result.message = f"stopped by {e.signame} while checking the hypotheses; nothing explored yet"
        return e.hypotheses, result, *theorem_verdict(e.hypotheses, result)
    if tl is not None:
        left = tl - (time.perf_counter() - t0)
        if left <= 0:
            result = bounded(Stats(elapsed=time.perf_counter() - t0), "time_limit", tl)
            result.message = (f"the time limit ({tl} s) came while checking the hypotheses; nothing explored "
                              "yet; exploration incomplete")
            return hs, result, *theorem_verdict(hs, result)
        explore_kw = dict(explore_kw, time_limit=left)
    result = explore(prog, checks=["completes"], **explore_kw)
    refused = never_admitted(prog, result)
    if refused:
        from dataclasses import replace

        from serq.check.model import Checks

        if tl is not None:
            explore_kw = dict(explore_kw, time_limit=max(tl - (time.perf_counter() - t0), 1e-3))
        admitted = explore(prog, checks=replace(Checks.of_program(prog, ["completes"]), admitted=True),
                           **explore_kw)
        if admitted.verdict in ("bound", "interrupted", "failed"):  # the finding stands; the conclusion is unknown
            line, code = theorem_verdict(hs, admitted)
            return hs, admitted, f"never admitted: {'; '.join(refused)}; {line}", code
        if admitted.verdict != "pass":
            result, refused = admitted, None
    line, code = theorem_verdict(hs, result, refused)
    return hs, result, line, code
