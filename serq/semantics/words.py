"""The kernel's codes in words: fault codes as (kind, message), and
attribute values as the language's (the event records are decoded in
serq/semantics/events.py)."""

from __future__ import annotations

from serq.semantics.kernel.abi import (
    ADMIT_LIMIT, CTX_NAMES, FT_ADMIT_CONS, FT_ADMITS, FT_ASSERT, FT_BIG_DOMAIN, FT_CONSERV,
    FT_DIV0, FT_EMPTY_DOMAIN, FT_MACRO, FT_MOD0, FT_NOTINT, FT_NOVALUE, FT_OVERFLOW, FT_REUSE_BLOCK,
    FT_REUSE_NEG, FT_REUSE_OVER, FT_SPAWN_DEEP, FT_SPAWN_MANY, FT_SPAWN_NEG, FT_UNITS_OVERFLOW, MACRO_LIMIT,
    MAX_DOMAIN, MAX_SESSIONS, OV_CACHE, OV_HOLD, OV_KVB, OV_LEVEL, OV_PROGRESS, OV_ROUND, OV_USE, SPAWN_DEPTH,
    T_BOOL, T_REAL,
)
from serq.semantics.lower import MAXQ, bits2f


def value(t: int, raw: int):
    """An attribute's raw row value as the language's value."""
    if t == T_REAL:
        return bits2f(raw)
    if t == T_BOOL:
        return bool(raw)
    return int(raw)


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
