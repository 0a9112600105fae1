"""Admission: a session's hold asked of its pools (try_admit, admit_hold),
what refuses it (explain_admit), a pool's queue admitted in order
(admit_pool), and the sessions moved on once admitted (settle).
Above the session automaton (it advances admitted sessions), below
the iteration."""

from __future__ import annotations

from serq.semantics.kernel.jit import internal

from serq.semantics.kernel.abi import (
    ADMIT_LIMIT, BIG, CE_OWNER, CE_UNITS, CW, CX_BUDGET, CX_NOW, EV_ADMIT, EV_HIT, F_ADM, F_ATTR,
    F_PC, F_PROG, FT_ADMIT_CONS, FT_ADMITS, FT_REUSE_BLOCK, FT_REUSE_NEG, FT_REUSE_OVER,
    FT_UNITS_OVERFLOW, H_NA, H_NP, HS_OWN, OV_HOLD, OV_ROUND, P_CN, P_FREE, P_Q, P_QN, R_FA3,
    R_FAULT, S_ADMITS, S_CTX, S_CTXOK, S_PLAN, S_SEGCUR, S_TRIAL,
)
from serq.semantics.kernel.abi import (  # the tables' field offsets
    ACQ_GATE, ACQ_OPENS, ACQ_SPEC, AI_ADMIT_IF, AI_ITEMS, AI_NITEMS, AQ_BIND, AQ_NBIND, BDW, BD_EXPR,
    BD_SLOT, IT_NEED, IT_NEED_REAL, IT_POOL, IT_PREFIX, IT_REUSE, IT_REUSE_REAL, IT_TAKE, IT_TAKE_REAL,
    IW, PL_BLOCK, PL_CAP, PL_HOL, ST_NEXT,
)
from serq.semantics.kernel.core import (
    add, add_over, cached_for, cbase, ceil_over, event, evictable_sum, fault, halted, next_seq,
    pbase, pool_row, put, reuse_evictable, sbase, seg_end, st_row, to_int,
)
from serq.semantics.kernel.evaluate import ev
from serq.semantics.kernel.pools import (
    cache_remove, free_block, hold_append, q_remove,
)
from serq.semantics.kernel.session import advance

# ---------------------------------------------------------------- admission


@internal
def admit_ctx(K, w, budget_left):
    w[K[S_CTX] + CX_BUDGET] = budget_left
    w[K[S_CTXOK]] = (1 << CX_BUDGET) | (1 << CX_NOW)


@internal
def segments(K, w, sid, on):
    """While a queued hold's header runs, `cached(P)` is the hold's hit
    (S_SEGCUR: the prefix its content in each pool begins with); off: none."""
    SC = K[S_SEGCUR]
    if not on:
        for p in range(K[H_NP]):
            w[SC + p] = -1
        return
    sb = sbase(K, sid)
    r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
    hs = K[r + ACQ_SPEC]
    ai = hs + AQ_BIND + BDW * K[hs + AQ_NBIND]
    for i in range(K[ai + AI_NITEMS]):
        it = ai + AI_ITEMS + IW * i
        w[SC + K[it + IT_POOL]] = K[it + IT_PREFIX]


@internal
def try_admit(K, w, sid, budget_left):
    """Evaluate a queued hold's admission header; admit it if it fits."""
    segments(K, w, sid, True)
    ok = admit_hold(K, w, sid, budget_left)
    segments(K, w, sid, False)
    return ok


@internal
def explain_admit(K, w, sid, budget_left, out):
    """Why a queued hold is or is not admitted: admit_plan's explanation
    (below) into out; nothing is admitted."""
    segments(K, w, sid, True)
    admit_plan(K, w, sid, budget_left, True, out)
    segments(K, w, sid, False)


@internal
def admit_plan(K, w, sid, budget_left, explain, out):
    """A queued hold's header evaluated (its bindings into the trial
    attributes S_TRIAL, `admit if`, each pool's reuse, need and take) and
    its admission planned (S_PLAN: reuse and take per pool): True if it
    fits. `explain`: go on past a refusal and write into out: out[0] the
    pools evaluated, out[1] the `admit if` (-1 none, 0 false, 1 true), then
    per pool five ints: the pool, reuse, need and take (in units, whole
    blocks) and what it can obtain (free + evictable - the evictable part
    of the reuse; -1: an infinite pool). A fault stops it either way."""
    sb = sbase(K, sid)
    prog = w[sb + F_PROG]
    r = st_row(K, prog, w[sb + F_PC])
    hs = K[r + ACQ_SPEC]
    TR = K[S_TRIAL]
    NA = K[H_NA]
    for i in range(NA):
        w[TR + i] = w[sb + F_ATTR + i]
    nb = K[hs + AQ_NBIND]
    for i in range(nb):
        admit_ctx(K, w, budget_left)
        v = ev(K, K[hs + AQ_BIND + BDW * i + BD_EXPR], w, TR, sid)
        if halted(K, w):
            return False
        w[TR + K[hs + AQ_BIND + BDW * i + BD_SLOT]] = v
    ai = hs + AQ_BIND + BDW * nb
    fits = True
    if explain:
        out[0] = 0
        out[1] = -1
    if K[ai + AI_ADMIT_IF] >= 0:
        admit_ctx(K, w, budget_left)
        ok = ev(K, K[ai + AI_ADMIT_IF], w, TR, sid)
        if halted(K, w):
            return False
        if explain:
            out[1] = 1 if ok != 0 else 0
        if ok == 0:
            if not explain:
                return False
            fits = False
    ni = K[ai + AI_NITEMS]
    PL = K[S_PLAN]
    for i in range(ni):
        it = ai + AI_ITEMS + IW * i
        p = K[it + IT_POOL]
        pr = pool_row(K, p)
        bs = K[pr + PL_BLOCK]
        reuse = 0
        if K[it + IT_REUSE] >= 0:
            admit_ctx(K, w, budget_left)
            reuse = to_int(K, w, ev(K, K[it + IT_REUSE], w, TR, sid), K[it + IT_REUSE_REAL] == 1, 0, K[it + IT_REUSE])
            if halted(K, w):
                return False
        have = cached_for(K, w, sid, p)
        if reuse < 0 or reuse > have or reuse % bs:
            code = FT_REUSE_OVER if reuse > have else (FT_REUSE_BLOCK if reuse % bs else FT_REUSE_NEG)
            if w[R_FAULT] == 0:
                put(K, w, R_FA3, have)
            fault(K, w, code, sid, p, reuse)
            return False
        admit_ctx(K, w, budget_left)
        need = to_int(K, w, ev(K, K[it + IT_NEED], w, TR, sid), K[it + IT_NEED_REAL] == 1, 1, K[it + IT_NEED])
        if halted(K, w):
            return False
        admit_ctx(K, w, budget_left)
        take = to_int(K, w, ev(K, K[it + IT_TAKE], w, TR, sid), K[it + IT_TAKE_REAL] == 1, 1, K[it + IT_TAKE])
        if halted(K, w):
            return False
        need = max(need, 0)
        take = max(take, 0)
        if ceil_over(need, bs) or ceil_over(take, bs):
            fault(K, w, FT_UNITS_OVERFLOW, sid, OV_ROUND, p)
            return False
        need = -(-need // bs) * bs
        take = -(-take // bs) * bs
        obt = -1
        if K[pr + PL_CAP] >= 0:
            obt = w[pbase(K, p) + P_FREE] + evictable_sum(K, w, p) - reuse_evictable(K, w, p, K[it + IT_PREFIX], reuse)
            if need > obt or take > obt:
                if not explain:
                    return False
                fits = False
        if explain:
            o = 2 + 5 * i
            out[o] = p
            out[o + 1] = reuse
            out[o + 2] = need
            out[o + 3] = take
            out[o + 4] = obt
            out[0] = i + 1
        w[PL + 2 * i] = reuse
        w[PL + 2 * i + 1] = take
    return fits


@internal
def admit_hold(K, w, sid, budget_left):
    """admit_plan, then the admission: the attributes, the holds, the units."""
    if not admit_plan(K, w, sid, budget_left, False, w):
        return False
    sb = sbase(K, sid)
    prog = w[sb + F_PROG]
    r = st_row(K, prog, w[sb + F_PC])
    hs = K[r + ACQ_SPEC]
    TR = K[S_TRIAL]
    NA = K[H_NA]
    ai = hs + AQ_BIND + BDW * K[hs + AQ_NBIND]
    ni = K[ai + AI_NITEMS]
    PL = K[S_PLAN]
    w[K[S_ADMITS]] += 1
    if w[K[S_ADMITS]] > ADMIT_LIMIT:
        fault(K, w, FT_ADMITS, sid, 0, 0)
        return False
    for i in range(NA):
        put(K, w, sb + F_ATTR + i, w[TR + i])
    seq = next_seq(K, w)
    put(K, w, sb + F_ADM, seq)
    for i in range(ni):
        it = ai + AI_ITEMS + IW * i
        p = K[it + IT_POOL]
        pr = pool_row(K, p)
        reuse = w[PL + 2 * i]
        take = w[PL + 2 * i + 1]
        b = pbase(K, p)
        q = K[it + IT_PREFIX]
        priv = reuse  # the hit's private part moves into the hold; a shared part is used in place
        if q >= 0:
            priv = max(reuse - seg_end(K, q, K[pr + PL_BLOCK]), 0)
        if priv:
            c = cbase(K, p)
            for k in range(w[b + P_CN]):
                e = c + CW * k
                if w[e + CE_OWNER] == sid:
                    add(K, w, e + CE_UNITS, -priv)
                    if w[e + CE_UNITS] == 0:
                        cache_remove(K, w, p, k)
                    break
        if reuse:
            event(K, w, EV_HIT, (sid, p, reuse))
        h = hold_append(K, w, sid, K[r + ACQ_OPENS], p, priv, reuse, seq)  # its shared part is pinned from now
        if K[pr + PL_CAP] >= 0:
            while w[b + P_FREE] < take:
                if not free_block(K, w, p, sid):
                    if halted(K, w):
                        return False
                    if not free_block(K, w, p, -2):
                        if not halted(K, w):
                            fault(K, w, FT_ADMIT_CONS, p, 0, 0)
                        return False
                if halted(K, w):
                    return False
            add(K, w, b + P_FREE, -take)
        if add_over(w[h + HS_OWN], take):  # a pool without a cap: any number of units
            fault(K, w, FT_UNITS_OVERFLOW, sid, OV_HOLD, p)
            return False
        add(K, w, h + HS_OWN, take)
    q_remove(K, w, K[r + ACQ_GATE], sid)
    event(K, w, EV_ADMIT, (sid, prog, w[sb + F_PC]))
    put(K, w, sb + F_PC, K[r + ST_NEXT])
    return True


@internal
def admit_pool(K, w, p, budget_left, skip, nskip):
    """One admission from p's queue (head-of-line rules), or -1. Sessions
    at w[skip..skip+nskip] are passed over."""
    b = pbase(K, p)
    hol_skip = K[pool_row(K, p) + PL_HOL] == 1
    j = 0
    while j < w[b + P_QN]:
        sid = w[b + P_Q + j]
        skipped = False
        for t in range(nskip):
            if w[skip + t] == sid:
                skipped = True
        if skipped:
            j += 1
            continue
        if try_admit(K, w, sid, budget_left):
            return sid
        if halted(K, w):
            return -1
        if not hol_skip:
            return -1
        j += 1
    return -1


@internal
def settle(K, w, nevp, evpo):
    """Event-driven pools admit whenever their head fits: a zero-time
    consequence of whatever freed the units."""
    if nevp == 0:
        return
    changed = True
    while changed:
        changed = False
        for i in range(nevp):
            p = K[evpo + i]
            sid = admit_pool(K, w, p, BIG, 0, 0)
            if halted(K, w):
                return
            if sid >= 0:
                advance(K, w, sid)
                if halted(K, w):
                    return
                changed = True
