"""Iterations and the step: serve in order, grow holds (evicting, then
preempting), admit tentatively (an undo log rolls a failed admission
back), complete; then event-driven admissions and conservation."""

from __future__ import annotations

from serq.semantics.kernel.jit import internal

from serq.semantics.kernel.abi import (
    R_ULOG,
    A_ARRIVE, A_ITERATE, BIG, CX_BUDGET, CX_KVB, CX_NDEC, CX_NOW, CX_NREQ, EV_ARRIVE, EV_ITERATE,
    EV_PREEMPT, EV_RUN_DONE, EV_SERVE, EV_STUCK, EV_TURN, F_ARR, F_ATTR, F_LP0, F_LP1, F_PC, F_PROG,
    F_RD, F_RT, F_STUCK, FT_CONSERV, H_EVPO, H_NEVP, H_NP, H_PROGT, H_STAGET, HS_COPY, HS_OWN, HS_SCOPE, HS_USE,
    K_ARRIVE, K_RUN, K_TURN, P_FREE, P_QN, PROG_W, R_NSESS, S_ADMITS, S_CTX, S_CTXOK, S_DEPTH, S_EVN,
    S_GIVEN, S_ORDER, S_QPOS, S_RES, S_SERVED, S_SKIP, S_SSUM, S_STOPNEW, S_ULOGN, STAGE_W, S_PSNAPON, H_NSEG,
    FT_UNITS_OVERFLOW, OV_KVB, OV_PROGRESS, OV_ROUND, OV_USE,
)
from serq.semantics.kernel.abi import (  # the tables' field offsets
    ACQ_GATE, PG_NPROGRESS, PG_PROGRESS, PL_BLOCK, PL_CACHE, PL_CAP, PL_HOL, PL_REQUEUE, PL_VICTIM, RUN_DECODE,
    RUN_GROWING, RUN_PROGRESS, RUN_STAGE, SC_REENTRY, SG_BUDGET, SG_CHUNK, SG_CONTINUE, SG_NVIA,
    SG_READS_POOLS, SG_SERVE, SG_VIA, ST_KIND, ST_NEXT,
)
from serq.semantics.kernel.core import (
    add_over, ceil_over, add, allocated, cache_sum, event, evictable_sum, fault, halted, hold_of, hold_ref,
    level_add, next_seq, pbase, pool_row, put, sbase, scope_row, snapshot_pools, st_row, undo,
)
from serq.semantics.kernel.evaluate import ev
from serq.semantics.kernel.pools import (
    enqueue, free_block, ordered, pick_victim, publish, q_has, q_remove, release_scope,
)
from serq.semantics.kernel.admission import admit_pool, settle
from serq.semantics.kernel.session import advance

# ---------------------------------------------------------------- preemption and growth


@internal
def preempt(K, w, victim, p, is_self):
    """Release every hold of the scope holding p (inner ones first); the
    victim goes back to that scope's acquire, attributes intact. Its
    position — the progress counters, then the units its hold uses — not
    passing the previous preemption's marks it stuck."""
    sb = sbase(K, victim)
    prog = w[sb + F_PROG]
    h = hold_of(K, w, victim, p)
    scope = w[h + HS_SCOPE]
    pt = K[H_PROGT] + PROG_W * prog
    p0 = 0
    for i in range(K[pt + PG_NPROGRESS]):
        x = w[sb + F_ATTR + K[K[pt + PG_PROGRESS] + i]]
        if add_over(p0, x):
            fault(K, w, FT_UNITS_OVERFLOW, victim, OV_PROGRESS, -1)
            return
        p0 += x
    p1 = w[h + HS_USE]
    l0 = w[sb + F_LP0]
    l1 = w[sb + F_LP1]
    stuck = l0 != -1 and (p0 < l0 or (p0 == l0 and p1 <= l1))
    put(K, w, sb + F_LP0, p0)
    put(K, w, sb + F_LP1, p1)
    for q in range(K[H_NP]):
        if q_has(K, w, q, victim):
            q_remove(K, w, q, victim)
    event(K, w, EV_PREEMPT, (victim, p, is_self))
    release_scope(K, w, victim, scope)
    if halted(K, w):
        return
    re = K[scope_row(K, prog, scope) + SC_REENTRY]
    put(K, w, sb + F_PC, re)
    put(K, w, sb + F_RD, 0)
    put(K, w, sb + F_RT, 0)
    enqueue(K, w, victim, K[st_row(K, prog, re) + ACQ_GATE], K[pool_row(K, p) + PL_REQUEUE])
    if stuck:
        put(K, w, sb + F_STUCK, 1)
        event(K, w, EV_STUCK, (victim, p))


@internal
def served_pop(K, w, sid):
    """A victim served earlier in this iteration gives its tokens back (its
    hold's use grew when it was served). Under `cache scheduled` its
    release (next) still caches the blocks those tokens fill: S_GIVEN says
    how many tokens and on which pool, until `grow` clears it."""
    n = w[K[S_SERVED] + sid]
    if n > 0:
        w[K[S_SSUM]] -= n
        w[K[S_SERVED] + sid] = 0
        sb = sbase(K, sid)
        gp = K[st_row(K, w[sb + F_PROG], w[sb + F_PC]) + RUN_GROWING]
        if gp >= 0:
            h = hold_of(K, w, sid, gp)
            if h >= 0:
                add(K, w, h + HS_USE, -n)
                if K[pool_row(K, gp) + PL_CACHE]:
                    w[K[S_GIVEN]] = n
                    w[K[S_GIVEN] + 1] = gp


@internal
def grow(K, w, sid, p, units, may_preempt):
    """Make the session's hold on p own `units`: 0 ok, 1 wait (it may not
    preempt, or nothing is left to preempt), 2 it was preempted itself;
    +4 when it preempted someone. All or nothing, as vLLM's allocate_slots:
    while free + evictable cannot give every block it needs, it takes none
    and evicts none, and preempts a victim (when it may) before trying again."""
    h = hold_of(K, w, sid, p)
    pr = pool_row(K, p)
    bs = K[pr + PL_BLOCK]
    cap = K[pr + PL_CAP]
    vo = K[pr + PL_VICTIM]
    b = pbase(K, p)
    pre = 0
    # an eviction may hand one of this hold's own copies to the cache (`copies
    # keep`): it then owns a block less and uses the cache's in place, so
    # what it owns is counted with the copies it has handed over
    cp0 = w[h + HS_COPY]
    fits = False
    while w[h + HS_OWN] + cp0 - w[h + HS_COPY] < units:
        if cap < 0:
            if ceil_over(units, bs):
                fault(K, w, FT_UNITS_OVERFLOW, sid, OV_ROUND, p)
                return pre
            put(K, w, h + HS_OWN, -(-units // bs) * bs)
            break
        if not fits:
            short = units - w[h + HS_OWN]
            if ceil_over(short, bs):
                fault(K, w, FT_UNITS_OVERFLOW, sid, OV_ROUND, p)
                return pre
            fits = w[b + P_FREE] + evictable_sum(K, w, p) >= -(-short // bs) * bs
        if fits:
            if w[b + P_FREE] >= bs:
                add(K, w, b + P_FREE, -bs)
                add(K, w, h + HS_OWN, bs)
                continue
            if free_block(K, w, p, -2):
                continue
            if halted(K, w):
                return pre
            return 1 + pre  # not reached: what was evictable is
        if vo < 0 or not may_preempt:
            return 1 + pre
        victim = pick_victim(K, w, p, vo)
        if halted(K, w):
            return pre
        served_pop(K, w, victim)
        preempt(K, w, victim, p, 1 if victim == sid else 0)
        w[K[S_GIVEN]] = 0
        pre = 4
        if halted(K, w) or victim == sid:
            return 2 + pre
        h = hold_of(K, w, sid, p)
    return pre


@internal
def serve_one(K, w, sid, budget_left, chunk, has_chunk, admitting):
    """Tokens for one resident and a status: tokens -1 when a session being
    admitted cannot grow; status bit 1 wait, bit 2 stop (self-preempted),
    bit 4 preempted someone."""
    sb = sbase(K, sid)
    r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
    if K[r + RUN_DECODE]:
        n = 1
    else:
        n = min(w[sb + F_RT] - w[sb + F_RD], budget_left)
        if has_chunk:
            n = min(n, chunk)
    if n <= 0:
        return 0, 0
    gp = K[r + RUN_GROWING]
    if gp < 0:
        return n, 0
    h = hold_of(K, w, sid, gp)
    if add_over(w[h + HS_USE], n):
        fault(K, w, FT_UNITS_OVERFLOW, sid, OV_USE, gp)
        return 0, 0
    # own units cover the content past the shared units the hold uses in place
    ref = hold_ref(K, w, sid, h) if K[H_NSEG] else 0
    st = grow(K, w, sid, gp, w[h + HS_USE] + n - ref, not admitting)
    pre = st & 4
    st = st & 3
    if st == 2:
        return 0, 2 | pre
    if st == 1:
        return (-1 if admitting else 0), 1 | pre
    # the tokens are scheduled: the hold uses them from now (a shared block
    # they complete goes to the cache now, as vLLM caches it at allocation)
    h = hold_of(K, w, sid, gp)
    if K[H_NSEG]:
        publish(K, w, sid, h, w[h + HS_USE] + n)
    add(K, w, h + HS_USE, n)
    return n, pre


# ---------------------------------------------------------------- the iteration


@internal
def shape_ctx(K, w, nreq, ndec, kvb):
    CX = K[S_CTX]
    w[CX + CX_NREQ] = nreq
    w[CX + CX_NDEC] = ndec
    w[CX + CX_KVB] = kvb
    w[K[S_CTXOK]] = (1 << CX_NREQ) | (1 << CX_NDEC) | (1 << CX_KVB) | (1 << CX_NOW)


@internal
def kv_blocks(K, w, sid):
    """The blocks a resident's growing hold owns (the `kvb` of a shape)."""
    sb = sbase(K, sid)
    r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
    g = K[r + RUN_GROWING]
    if g < 0:
        return 0
    h = hold_of(K, w, sid, g)
    if h < 0:
        return 0
    ref = hold_ref(K, w, sid, h) if K[H_NSEG] else 0
    bs = K[pool_row(K, g) + PL_BLOCK]
    return w[h + HS_OWN] // bs + ref // bs  # own is whole blocks: (own + ref) // bs, without a sum that overflows


@internal
def kvb_add(K, w, t, sid):
    """t plus a resident's blocks (`kvb` sums them; a pool without a cap
    holds any number)."""
    x = kv_blocks(K, w, sid)
    if add_over(t, x):
        fault(K, w, FT_UNITS_OVERFLOW, sid, OV_KVB, -1)
        return t
    return t + x


@internal
def chunk_of(K, w, code, nreq, ndec, kvb, budget_left):
    shape_ctx(K, w, nreq, ndec, kvb)
    w[K[S_CTX] + CX_BUDGET] = budget_left
    w[K[S_CTXOK]] |= 1 << CX_BUDGET
    w[K[S_PSNAPON]] = 1  # pool functions read the levels at the iteration's start
    v = ev(K, code, w, 0, -1)
    w[K[S_PSNAPON]] = 0
    return v


@internal
def stage_shape(K, w, si):
    """The residents of stage si with work left, into S_RES (every
    session's served count zeroed), and the step's shape: (nreq, ndec, kvb)."""
    RES = K[S_RES]
    SV = K[S_SERVED]
    nr = 0
    ndec = 0
    kvb = 0
    for sid in range(w[R_NSESS]):
        sb = sbase(K, sid)
        r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
        w[SV + sid] = 0
        if K[r + ST_KIND] == K_RUN and K[r + RUN_STAGE] == si and w[sb + F_RD] < w[sb + F_RT]:
            w[RES + nr] = sid
            nr += 1
            ndec += K[r + RUN_DECODE]
            kvb = kvb_add(K, w, kvb, sid)
    return nr, ndec, kvb


@internal
def stage_budget(K, w, si, nr, ndec, kvb):
    """Stage si's budget for an iteration of this shape (BIG: none); the
    pools snapshotted first when the stage reads them at @step."""
    stt = K[H_STAGET] + STAGE_W * si
    if K[stt + SG_READS_POOLS]:
        snapshot_pools(K, w)
    if K[stt + SG_BUDGET] < 0:
        return BIG
    shape_ctx(K, w, nr, ndec, kvb)
    w[K[S_PSNAPON]] = 1
    budget = ev(K, K[stt + SG_BUDGET], w, 0, -1)
    w[K[S_PSNAPON]] = 0
    return budget


@internal
def iterate(K, w, si):
    """One iteration of stage si, atomically: serve, admit, complete.
    Returns False for a zero-work iteration (not an action)."""
    stt = K[H_STAGET] + STAGE_W * si
    RES = K[S_RES]
    SV = K[S_SERVED]
    OR = K[S_ORDER]
    nr, ndec, kvb = stage_shape(K, w, si)
    if halted(K, w):
        return True
    w[K[S_SSUM]] = 0
    inf = K[stt + SG_BUDGET] < 0
    budget = stage_budget(K, w, si, nr, ndec, kvb)
    if halted(K, w):
        return True
    budget_left = budget
    has_chunk = K[stt + SG_CHUNK] >= 0
    chunk = 0
    # the serve order over the residents (S_SKIP holds the ranking)
    RK = K[S_SKIP]
    ordered(K, w, K[stt + SG_SERVE], RES, nr, RK)
    if halted(K, w):
        return True
    no = 0
    pre_any = False
    for i in range(nr):
        if budget_left <= 0:
            break
        sid = w[RK + i]
        sb = sbase(K, sid)
        if K[st_row(K, w[sb + F_PROG], w[sb + F_PC]) + ST_KIND] != K_RUN:
            continue  # preempted earlier in this iteration
        if has_chunk:
            chunk = chunk_of(K, w, K[stt + SG_CHUNK], nr, ndec, kvb, budget_left)
            if halted(K, w):
                return True
        n, st = serve_one(K, w, sid, budget_left, chunk, has_chunk, False)
        if halted(K, w):
            return True
        if st & 4:
            pre_any = True
        if st & 2:
            if K[stt + SG_CONTINUE] == 0:
                break  # `self_preempt stop`
            budget_left = budget - w[K[S_SSUM]]
            continue
        if n > 0:
            w[SV + sid] = n
            w[K[S_SSUM]] += n
            w[OR + no] = sid
            no += 1
        budget_left = budget - w[K[S_SSUM]]
    admitted = False
    if not pre_any and budget_left > 0:
        nvia = K[stt + SG_NVIA]
        for vi in range(nvia):
            p = K[K[stt + SG_VIA] + vi]
            SK = K[S_RES]  # the residents are ranked already: reuse their space for the skipped
            nsk = 0
            while budget_left > 0:
                if w[pbase(K, p) + P_QN] <= nsk:
                    break  # nobody left to try
                # a tentative admission: until its first chunk has its blocks
                w[R_ULOG] = 1
                w[K[S_ULOGN]] = 0
                ev0 = w[K[S_EVN]]
                q0 = w[K[S_QPOS]]
                ab = budget_left if not inf else BIG
                sid = admit_pool(K, w, p, ab, SK, nsk)
                if halted(K, w):
                    return True
                if sid < 0:
                    w[R_ULOG] = 0
                    break
                advance(K, w, sid)
                if halted(K, w):
                    return True
                sb = sbase(K, sid)
                r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
                if K[r + ST_KIND] == K_RUN and K[r + RUN_STAGE] == si and w[sb + F_RD] < w[sb + F_RT]:
                    if has_chunk:
                        chunk = chunk_of(K, w, K[stt + SG_CHUNK], nr, ndec, kvb, budget_left)
                        if halted(K, w):
                            return True
                    n, st = serve_one(K, w, sid, budget_left, chunk, has_chunk, True)
                    if halted(K, w):
                        return True
                    if n < 0:
                        # like vLLM, a waiting request whose allocation fails is
                        # not admitted and preempts no one: roll it back
                        undo(K, w)
                        w[R_ULOG] = 0
                        w[K[S_EVN]] = ev0
                        if w[K[S_STOPNEW]] == 0:
                            w[K[S_QPOS]] = q0  # its draws are undone with it
                        if K[pool_row(K, p) + PL_HOL] == 0:
                            break
                        w[SK + nsk] = sid
                        nsk += 1
                        continue
                    w[R_ULOG] = 0
                    if n > 0:
                        w[SV + sid] = n
                        w[K[S_SSUM]] += n
                        w[OR + no] = sid
                        no += 1
                    budget_left = budget - w[K[S_SSUM]]
                w[R_ULOG] = 0
                admitted = True
    w[R_ULOG] = 0
    if w[K[S_SSUM]] == 0 and not admitted and not pre_any:
        any_served = False
        for k in range(no):
            if w[SV + w[OR + k]] > 0:
                any_served = True
        if not any_served:
            return False
    ntok = 0
    nd = 0
    nq = 0
    kb = 0
    for k in range(no):
        sid = w[OR + k]
        if w[SV + sid] > 0:
            ntok += w[SV + sid]
            sb = sbase(K, sid)
            nd += K[st_row(K, w[sb + F_PROG], w[sb + F_PC]) + 7]
            nq += 1
            kb = kvb_add(K, w, kb, sid)
    if halted(K, w):
        return True
    event(K, w, EV_ITERATE, (si, ntok, nd, nq, kb))
    # completion, in serve order (admitted ones after, in admission order)
    for k in range(no):
        sid = w[OR + k]
        n = w[SV + sid]
        if n == 0:
            continue
        sb = sbase(K, sid)
        r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
        add(K, w, sb + F_RD, n)
        if K[r + RUN_PROGRESS] >= 0:
            if add_over(w[sb + F_ATTR + K[r + RUN_PROGRESS]], n):  # a progress attribute may start anywhere
                fault(K, w, FT_UNITS_OVERFLOW, sid, OV_PROGRESS, K[r + RUN_PROGRESS])
                return True
            add(K, w, sb + F_ATTR + K[r + RUN_PROGRESS], n)
        gp = K[r + RUN_GROWING]
        own = -1
        if gp >= 0:  # its hold's use grew when it was served
            own = w[hold_of(K, w, sid, gp) + HS_OWN]
        event(K, w, EV_SERVE, (sid, n, K[r + RUN_DECODE], w[sb + F_RD], w[sb + F_RT], gp, own))
    for k in range(no):
        sid = w[OR + k]
        if w[SV + sid] == 0:
            continue
        sb = sbase(K, sid)
        r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
        if K[r + ST_KIND] == K_RUN and w[sb + F_RD] >= w[sb + F_RT]:
            event(K, w, EV_RUN_DONE, (sid, K[r + RUN_DECODE]))
            put(K, w, sb + F_RD, 0)
            put(K, w, sb + F_RT, 0)
            put(K, w, sb + F_PC, K[r + ST_NEXT])
            advance(K, w, sid)
            if halted(K, w):
                return True
    return True


# ---------------------------------------------------------------- the step


@internal
def conservation(K, w, kind, subj):
    for p in range(K[H_NP]):
        cap = K[pool_row(K, p) + PL_CAP]
        if cap < 0:
            # no cap bounds its units: their total leaving 64 bits faults
            # here (level_add), so every level of a state fits
            level_add(K, w, p, allocated(K, w, p), cache_sum(K, w, p))
            if halted(K, w):
                return
            continue
        f = w[pbase(K, p) + P_FREE]
        if allocated(K, w, p) + cache_sum(K, w, p) + f != cap or f < 0:
            fault(K, w, FT_CONSERV, p, kind, subj)
            return


@internal
def step(K, w, kind, subj):
    """One action on the row in w (loaded, scratch set by the caller).
    Returns 1 with a successor in w, 0 when the action does not apply (a
    zero-work iteration, or the session is not at that state). A halt
    (R_HALT) other than a fault means the caller must act and run again."""
    for sid in range(w[R_NSESS]):
        w[sbase(K, sid) + F_STUCK] = 0  # marks only the state right after a stuck preemption
    w[K[S_ADMITS]] = 0
    w[K[S_DEPTH]] = 0
    w[R_ULOG] = 0
    if kind == A_ITERATE:
        if not iterate(K, w, subj):
            return 0
    else:
        sb = sbase(K, subj)
        r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
        if K[r + ST_KIND] != (K_ARRIVE if kind == A_ARRIVE else K_TURN):
            return 0
        event(K, w, EV_ARRIVE if kind == A_ARRIVE else EV_TURN, (subj,))
        put(K, w, sb + F_ARR, next_seq(K, w))
        put(K, w, sb + F_LP0, -1)  # a new request
        put(K, w, sb + F_LP1, -1)
        put(K, w, sb + F_PC, K[r + ST_NEXT])
        advance(K, w, subj)
    if not halted(K, w):
        settle(K, w, K[H_NEVP], K[H_EVPO])
    if not halted(K, w):
        conservation(K, w, kind, subj)
    return 1
