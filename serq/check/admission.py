"""Why a waiting hold is not admitted, in words: what the deadlock
diagnosis (`serq explore`), the stalled sessions of `serq check` and the
`--html` page say, from the admission's own evaluation in the kernel
(`Engine.explain_admission`), never from a second reading of the program.

For each waiting hold: the `admit if` that refuses it, each pool that is
short (what the hold needs, what it can obtain: free + evictable - the
evictable part of what it reuses, who holds the rest, and whether it fits
the pool alone), or the head of the queue it waits behind. Also the
resident that cannot grow under `preempt none`, and why a stuck session
was preempted again."""

from __future__ import annotations

from dataclasses import dataclass, field

from serq.ir.text import expr_text
from serq.words import blocks_over_cap


@dataclass
class Refusal:
    """Why session `sid`'s waiting hold is not admitted."""
    sid: int
    behind: int | None = None  # the head of the queue it waits behind (hol block)
    gate: str | None = None  # the `admit if` that is false, as source text
    short: list[int] = field(default_factory=list)  # the pools it cannot obtain enough of
    why: str = ""  # the words after the session's label
    lines: list[str] = field(default_factory=list)
    pools: list[dict] = field(default_factory=list)  # each pool of the hold, as data (`pool_data`)
    fault: str | None = None  # a header that cannot be evaluated

    def data(self, m, state) -> dict:
        """The refusal as data (`--json`'s `blocked`, docs/json.md)."""
        lab = lambda sid: None if sid is None else m.session_label(state, sid)  # noqa: E731
        return {"session": lab(self.sid), "behind": lab(self.behind), "admit_if": self.gate,
                "fault": self.fault, "pools": self.pools, "text": self.lines[0] if self.lines else ""}


def _n(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def _holders(m, state, p: int, sid: int, evictable: int) -> str:
    """Who holds what pool p cannot give: the holds of the sessions other
    than sid and the cached units a hold uses (pinned)."""
    parts = [f"{m.session_label(state, o)} holds {_n(h.own, 'unit')}" for o, s in enumerate(state.sessions)
             if o != sid for h in s.holds if h.pool == p and h.own]
    pinned = sum(e.units for e in state.pools[p].cache) - evictable
    if pinned:
        parts.append(f"{_n(pinned, 'unit')} {'are' if pinned != 1 else 'is'} pinned in the cache")
    return ", ".join(parts) if parts else "no other session holds a unit"


def holders_data(m, state, p: int, sid: int, evictable: int) -> dict:
    """`_holders` as data: the other sessions' units of pool p, and the
    cached units pinned (used by a hold, not evictable)."""
    return {"holders": [{"session": m.session_label(state, o), "units": h.own} for o, s in enumerate(state.sessions)
                        if o != sid for h in s.holds if h.pool == p and h.own],
            "pinned": sum(e.units for e in state.pools[p].cache) - evictable}


def pool_data(m, state, sid: int, item: tuple, evictable: int) -> dict:
    """One pool of a waiting hold (`item`: the admission's (pool, reuse,
    need, take, obtainable)), as data: what it needs and takes (units;
    `blocks` the same in blocks), what it can obtain (free + evictable -
    the evictable part of what it reuses), who holds the rest, whether
    it is short and whether it fits the pool alone."""
    p, reuse, need, take, obt = item
    pool = m.pools[p]
    bs, free = pool.block, state.pools[p].free
    want = max(need, take)
    d = {"pool": pool.name, "reuse": reuse, "needs": need, "takes": take, "obtainable": obt,
         "short": obt is not None and want > obt, "block": bs, "cap": pool.cap}
    if obt is not None:
        d.update(free=free, evictable=evictable, reused=free + evictable - obt,
                 blocks={"needs": want // bs, "obtainable": max(obt, 0) // bs, "cap": pool.cap // bs},
                 fits_alone=blocks_over_cap(pool, want // bs) is None, **holders_data(m, state, p, sid, evictable))
    return d


def _short_text(m, state, sid: int, p: int, need: int, take: int, obt: int, evictable: int) -> str:
    pool = m.pools[p]
    bs = pool.block
    free = state.pools[p].free
    reused = free + evictable - obt  # the evictable part of the hit: taken, not obtained again
    want = max(need, take)
    verb = "needs" if need >= take else "takes"
    minus = f" - reused {reused}" if reused else ""
    text = (f"`{pool.name}` is short: it {verb} {_n(want // bs, 'block')} ({_n(want, 'unit')}) and can obtain "
            f"{_n(max(obt, 0) // bs, 'block')} (free {free} + evictable {evictable}{minus} units); "
            f"{_holders(m, state, p, sid, evictable)}")
    over = blocks_over_cap(pool, want // bs)
    return text + ("; it never fits alone: it " + over if over else
                   f"; it fits `{pool.name}` alone ({_n(pool.cap // bs, 'block')} in all)")


def refusal(m, state, sid: int, now: int = 0) -> Refusal:
    """Why the waiting hold of session sid (in an acquire state) is not
    admitted now."""
    s = state.sessions[sid]
    st = m.progs[s.prog].states[s.pc]
    gate = m.gates[s.prog][s.pc]
    r = Refusal(sid)
    queue = state.pools[gate].queue
    pool = m.pools[gate]
    si = m.stage_index[pool.admit_via] if pool.admit_via is not None else -1
    admit_if, items, fault = m.engine.explain_admission(state, sid, si, now)
    evictable = m.engine.evictable(state)
    why = []
    if admit_if is False:
        hold = st.hold
        r.gate = expr_text(hold.admit_if)
        at = hold.admit_if.at or st.at
        why.append(f"its `admit if {r.gate}`{f' (line {at[0]})' if at else ''} is false")
    fit = []
    for p, reuse, need, take, obt in items:
        r.pools.append(pool_data(m, state, sid, (p, reuse, need, take, obt), evictable[p]))
        if obt is not None and max(need, take) > obt:
            r.short.append(p)
            why.append(_short_text(m, state, sid, p, need, take, obt, evictable[p]))
        elif obt is not None:
            bs = m.pools[p].block
            fit.append(f"`{m.pools[p].name}` {_n(max(need, take) // bs, 'block')} of {obt // bs} obtainable")
    r.fault = fault
    if fault is not None:
        why.append(f"its header cannot be evaluated: {fault}")
    elif r.gate is not None and not r.short and fit:
        why[-1] += f" (its pools would fit: {', '.join(fit)})"
    if queue and queue[0] != sid and sid in queue and pool.hol != "skip":
        r.behind = queue[0]
        r.why = (f"is behind {m.session_label(state, queue[0])}, the head of `{pool.name}`'s queue "
                 f"(`hol block`)" + ("; at the head it would be refused too: " + "; ".join(why) if why else ""))
    else:
        r.why = "is not admitted: " + "; ".join(why or [_fits_yet_waits(si, pool)])
    r.lines.append(f"{m.session_label(state, sid)} {r.why}")
    return r


def _fits_yet_waits(si: int, pool) -> str:
    """A header that fits, in a state where nothing admits it."""
    if si < 0:
        return "its header fits"
    return (f"its header fits, but `{pool.admit_via}` admits a hold only while its budget is not spent "
            "and when the blocks of the hold's first chunk are free or evictable")


def refusals(m, state, now: int = 0) -> dict[int, Refusal]:
    """Every waiting hold's refusal, by session."""
    out = {}
    for sid, s in enumerate(state.sessions):
        if m.progs[s.prog].states[s.pc].kind == "acquire":
            out[sid] = refusal(m, state, sid, now)
    return out


def grower_text(m, state, sid: int) -> str | None:
    """The words for a resident that cannot take one more token: its run
    grows a finite pool that preempts no one, its hold has no unit to
    spare, and less than a block is free or evictable. None otherwise."""
    d = grower_data(m, state, sid)
    return None if d is None else d["text"]


def grower_data(m, state, sid: int) -> dict | None:
    """`grower_text` as data (`--json`'s `blocked`): the session, the pool,
    its free and evictable units, its block, the holders; None when the
    session is no such resident."""
    s = state.sessions[sid]
    run = m.runs[s.prog][s.pc]
    if run is None or s.run_done >= s.run_total or run.growing is None:
        return None
    p = run.growing
    pool = m.pools[p]
    hold = next((h for h in s.holds if h.pool == p), None)
    if pool.cap is None or pool.victim is not None or hold is None or hold.own > hold.use:
        return None
    free, ev = state.pools[p].free, m.engine.evictable(state)[p]
    if free + ev >= pool.block:
        return None
    text = (f"{m.session_label(state, sid)} cannot grow its hold on `{pool.name}` by a block: free {free} + "
            f"evictable {ev} units, less than a block ({pool.block}), and `{pool.name}` preempts no one "
            f"(`preempt none`); {_holders(m, state, p, -1, ev)}")
    return {"session": m.session_label(state, sid), "pool": pool.name, "free": free, "evictable": ev,
            "block": pool.block, **holders_data(m, state, p, -1, ev), "text": text}


def stuck_why(m, before, stuck, events) -> str | None:
    """Why a session was preempted again at the same position (the step's
    `stuck` event, among its `events`), from the state before the step:
    how much of the pool it held, and who holds the rest; a session that
    preempted itself holding the whole pool never fits it alone. None if
    it held nothing of the pool before the step."""
    sid, p = stuck.sid, stuck.pool
    self_preempted = any(e.kind == "preempt" and e.sid == sid and e.why == "self" for e in events)
    hold = next((h for h in before.sessions[sid].holds if h.pool == p), None) if sid < len(before.sessions) else None
    pool = m.pools[p]
    if hold is None or pool.cap is None:
        return None
    bs = pool.block
    held, cap = -(-hold.own // bs), pool.cap // bs
    if self_preempted and held >= cap:
        return (f"it held all {_n(cap, 'block')} of `{pool.name}` and needed another: "
                f"it never fits `{pool.name}` alone")
    text = f"it held {held} of `{pool.name}`'s {_n(cap, 'block')}"
    if self_preempted:
        text += " and needed another"
    return text + "; " + _holders(m, before, p, sid, m.engine.evictable(before)[p])
