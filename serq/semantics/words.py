"""The kernel's codes in words: event records as the event tuples traces
and the simulator's report read, fault codes as (kind, message)."""

from __future__ import annotations

from serq.semantics.kernel.abi import (
    ADMIT_LIMIT, CTX_NAMES, EV_ADMIT, EV_ARRIVE, EV_AT_TURN, EV_CHOOSE, EV_DRAW, EV_DROP, EV_END,
    EV_EVICT, EV_HIT, EV_ITERATE, EV_JOINED, EV_PREEMPT, EV_QUEUED, EV_RELEASE, EV_RUN_DONE, EV_SERVE,
    EV_SPAWN, EV_STUCK, EV_TURN, FT_ADMIT_CONS, FT_ADMITS, FT_ASSERT, FT_BIG_DOMAIN, FT_CONSERV,
    FT_DIV0, FT_EMPTY_DOMAIN, FT_MACRO, FT_MOD0, FT_NOTINT, FT_NOVALUE, FT_OVERFLOW, FT_REUSE_BLOCK,
    FT_REUSE_NEG, FT_REUSE_OVER, FT_SPAWN_DEEP, FT_SPAWN_MANY, FT_SPAWN_NEG, FT_UNITS_OVERFLOW, MACRO_LIMIT,
    MAX_DOMAIN, MAX_SESSIONS, OV_CACHE, OV_HOLD, OV_KVB, OV_LEVEL, OV_PROGRESS, OV_ROUND, OV_USE, SPAWN_DEPTH,
    T_BOOL, T_REAL,
)
from serq.semantics.lower import MAXQ, bits2f

_RUN = ("prefill", "decode")


def first_token(e) -> bool:
    """Whether event `e` is a request's first token (for its session
    e[1]): the end of a prefill run, or a decode token. What ttft ends at,
    in the simulator's report and in `--worst ttft`."""
    return (e[0] == "run_done" and e[2] == "prefill") or (e[0] == "serve" and e[3] == "decode")


def value(t: int, raw: int):
    """An attribute's raw row value as the language's value."""
    if t == T_REAL:
        return bits2f(raw)
    if t == T_BOOL:
        return bool(raw)
    return int(raw)


def events(low, rec, prog_of) -> list[tuple]:
    """Event tuples from kernel records (rows of 8 ints); `prog_of(sid)`
    gives a session's program (draw values are typed by its attributes)."""
    prog = low.program
    out = []
    for r in rec.tolist():
        c = r[0]
        if c == EV_ARRIVE:
            out.append(("arrive", r[1]))
        elif c == EV_TURN:
            out.append(("turn", r[1]))
        elif c in (EV_DRAW, EV_CHOOSE):
            pi = prog_of(r[1])
            sp = prog.sessions[pi]
            out.append(("draw" if c == EV_DRAW else "choose", r[1], sp.attrs[r[2]].name,
                        value(low.types[pi][r[2]], r[3])))
        elif c == EV_AT_TURN:
            out.append(("at_turn", r[1]))
        elif c == EV_SPAWN:
            out.append(("spawn", r[1], r[2]))
        elif c == EV_END:
            out.append(("end", r[1]))
        elif c == EV_JOINED:
            out.append(("joined", r[1]))
        elif c == EV_QUEUED:
            out.append(("queued", r[1], r[2]))
        elif c == EV_EVICT:
            out.append(("evict", r[1], r[2], r[3]))
        elif c == EV_RELEASE:
            out.append(("release", r[1], r[2], r[3], r[4]))
        elif c == EV_DROP:
            out.append(("drop", r[1], r[2], r[3]))
        elif c == EV_HIT:
            out.append(("hit", r[1], r[2], r[3]))
        elif c == EV_ADMIT:
            st = prog.sessions[r[2]].states[r[3]]
            out.append(("admit", r[1], tuple(low.pool_ix[i.pool] for i in st.hold.items)))
        elif c == EV_PREEMPT:
            out.append(("preempt", r[1], r[2], "self" if r[3] else f"{prog.pools[r[2]].name} full"))
        elif c == EV_STUCK:
            out.append(("stuck", r[1], r[2]))
        elif c == EV_ITERATE:
            out.append(("iterate", r[1], {"ntok": r[2], "ndec": r[3], "nreq": r[4], "kvb": r[5]}))
        elif c == EV_SERVE:
            g = r[6] if r[6] >= 0 else None
            out.append(("serve", r[1], r[2], _RUN[r[3]], r[4], r[5], g, r[7] if g is not None else None))
        elif c == EV_RUN_DONE:
            out.append(("run_done", r[1], _RUN[r[2]]))
        else:
            raise AssertionError(f"unknown event code {c}")
    return out


def _where(low, code: int) -> str:
    at = low.expr_at.get(code)
    return f" at line {at[0]}:{at[1]}" if at else ""


def _units_overflow(prog, sid: int, what: int, c: int, label, pc_of) -> str:
    """A count the kernel keeps left the 64-bit range (FT_UNITS_OVERFLOW:
    session, which count, a pool or a progress attribute's slot)."""
    pool = f"`{prog.pools[c].name}`" if 0 <= c < len(prog.pools) else "a pool"
    if what == OV_PROGRESS:
        attr = prog.sessions[pc_of(sid)[0]].attrs[c].name if c >= 0 else None
        text = f"progress attribute `{attr}`" if attr else "the sum of the progress attributes"
    else:
        text = {OV_USE: f"the tokens its hold on {pool} uses", OV_ROUND: f"units of {pool} rounded up to whole blocks",
                OV_HOLD: f"the units its hold on {pool} owns", OV_CACHE: f"its cached units of {pool}",
                OV_LEVEL: f"a level of pool {pool} (a sum over its holds or its cache)",
                OV_KVB: "`kvb` (the blocks of an iteration's residents)"}.get(what, "a count")
    who = f"{label(sid)}: " if sid >= 0 else ""
    return f"{who}integer overflow: {text} would pass the 64-bit range (2^63 - 1)"


def fault(low, code: int, a: int, b: int, c: int, d: int, *, label, pc_of, pool_levels, describe) -> tuple[str, str]:
    """(kind, message) of a fault code and its arguments. `label(sid)`,
    `pc_of(sid)`, `pool_levels(p)` -> (allocated, cached, free) and
    `describe()` (the step's action) read the faulted row."""
    prog = low.program

    def state(sid):
        return prog.sessions[pc_of(sid)[0]].states[pc_of(sid)[1]]

    if code == FT_EMPTY_DOMAIN:
        st = state(a)
        return "error", (f"{label(a)}: empty domain for `{st.attr}` at line {st.at[0]}" if st.at else "empty domain")
    if code == FT_BIG_DOMAIN:  # b..c: the range (its count computed here, beyond 64 bits if need be)
        st = state(a)
        line = f" at line {st.at[0]}" if st.at else ""
        return "error", f"`{st.attr}` would range over {c - b + 1} values{line} (at most {MAX_DOMAIN})"
    if code == FT_ASSERT:
        st = state(a)
        line = f" (line {st.at[0]})" if st.at else ""
        return "assert", f"{label(a)}: assertion failed{line}"
    if code == FT_MACRO:
        return "error", (f"{label(a)}: more than {MACRO_LIMIT} internal steps without blocking "
                         "(a loop that never blocks?)")
    if code == FT_SPAWN_MANY:
        return "error", f"{label(a)}: spawning {b} more sessions passes {MAX_SESSIONS}"
    if code == FT_SPAWN_NEG:
        st = state(a)
        line = f" at line {st.at[0]}" if st.at else ""
        return "error", f"{label(a)}: a spawn count of {b} is negative{line}"
    if code == FT_UNITS_OVERFLOW:
        return "error", _units_overflow(prog, a, b, c, label, pc_of)
    if code == FT_SPAWN_DEEP:
        return "error", (f"{label(a)}: spawns nest more than {SPAWN_DEPTH} deep in one step "
                         "(a program that spawns itself before it blocks?)")
    if code in (FT_REUSE_OVER, FT_REUSE_BLOCK, FT_REUSE_NEG):
        why = {FT_REUSE_OVER: f"exceeds the session's cached units {d}",
               FT_REUSE_BLOCK: "is not a whole number of blocks", FT_REUSE_NEG: "is negative"}[code]
        return "error", f"{label(a)}: reuse {c} of `{prog.pools[b].name}` {why}"
    if code == FT_ADMITS:
        return "error", (f"{label(a)}: more than {ADMIT_LIMIT} admissions in one step "
                         "(a loop whose holds never block?)")
    if code == FT_ADMIT_CONS:
        return "conservation", f"pool `{prog.pools[a].name}`: admission found fewer units than it counted"
    if code == FT_CONSERV:
        alloc, cached, free = pool_levels(a)
        return "conservation", (f"pool `{prog.pools[a].name}` after {describe()}: allocated {alloc} + "
                                f"cached {cached} + free {free} != cap {prog.pools[a].cap}")
    if code == FT_DIV0:
        return "error", f"division by zero{_where(low, a)}"
    if code == FT_MOD0:
        return "error", f"modulo by zero{_where(low, a)}"
    if code == FT_OVERFLOW:
        if a == 1:
            return "error", (f"more than {MAXQ} draws, chooses and ties in one step "
                             "(a loop that draws without blocking?)")
        return "error", f"cannot evaluate: integer overflow{_where(low, a)}"
    if code == FT_NOVALUE:
        return "error", f"`{CTX_NAMES[b]}` has no value here{_where(low, a)}"
    if code == FT_NOTINT:
        return "error", f"cannot evaluate: cannot convert an infinite or undefined real to an integer{_where(low, a)}"
    return "error", f"internal fault code {code}"
