"""The session automaton: a macro step through internal states (advance),
draws and chooses, spawn, join and end, and admission (try_admit).

`advance` drives a stack of frames instead of recursing (see below)."""

from __future__ import annotations

from numba import njit

from serq.semantics.kernel.abi import (
    R_HALT,
    ADMIT_LIMIT, BIG, CE_OWNER, CE_UNITS, CW, CX_BUDGET, CX_NOW, EV_ADMIT, EV_AT_TURN, EV_CHOOSE,
    EV_DRAW, EV_END, EV_HIT, EV_JOINED, EV_SPAWN, F_ADM, F_ARR, F_ATTR, F_LIVE, F_LP0, F_LP1, F_NH,
    F_PARENT, F_PC, F_PROG, F_RD, F_RT, FT_ADMIT_CONS, FT_ADMITS, FT_ASSERT, FT_BIG_DOMAIN, FT_EMPTY_DOMAIN,
    FT_MACRO, FT_REUSE_BLOCK, FT_REUSE_NEG, FT_REUSE_OVER, FT_SPAWN_DEEP, FT_SPAWN_MANY,
    H_CAP, H_NA, H_SF, H_TIESALL, HALT_CAP, HS_SCOPE, HW, K_ACQUIRE, K_ASSERT, K_BRANCH,
    K_CHOOSE, K_DRAW, K_DROP, K_END, K_EXIT, K_JOIN, K_RUN, K_SET, K_SPAWN, K_TURN, MACRO_LIMIT, MAX_DOMAIN,
    MAX_SESSIONS, P_CN, P_FREE, P_Q, P_QN, R_FA3, R_FAULT, PROG_W, H_PROGT, R_NSESS, REQ_ORDER, S_ADMITS, S_CTX, S_CTXOK,
    S_DEPTH, S_FRAMES, S_NFRAMES, FRAMES, S_PLAN, S_QSTATE, S_QVALS, S_TRIAL, S_VALS, SPAWN_DEPTH,
    H_NP, HS_OWN, S_SEGCUR,
)
from serq.semantics.kernel.core import (
    f2b, add, ask, b2f, cached_for, cbase, event, evictable_sum, fault, halted, hbase, next_seq, pbase, pool_row,
    put, reuse_evictable, sbase, seg_end, st_row, to_int,
)
from serq.semantics.kernel.evaluate import ev, ev_s
from serq.semantics.kernel.pools import (
    cache_remove, drop, enqueue, free_block, hold_append, q_remove, release_scope,
)

# ---------------------------------------------------------------- draw and choose


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def domain(K, w, sid, r):
    """The values of a draw or choose at w[S_VALS..]: a set keeps first
    occurrences in order; a range lo..hi. Returns the count (0 faults)."""
    V = K[S_VALS]
    nv = K[r + 4]
    if nv >= 0:
        n = 0
        for i in range(nv):
            v = ev_s(K, K[K[r + 5] + i], w, sid)
            if halted(K, w):
                return 0
            dup = False
            for j in range(n):
                if w[V + j] == v:
                    dup = True
            if not dup:
                w[V + n] = v
                n += 1
        return n
    lo = ev_s(K, K[r + 5], w, sid)
    if halted(K, w):
        return 0
    hi = ev_s(K, K[r + 6], w, sid)
    if halted(K, w):
        return 0
    if hi - lo + 1 > MAX_DOMAIN:
        fault(K, w, FT_BIG_DOMAIN, sid, hi - lo + 1, 0)
        return 0
    n = hi - lo + 1 if hi >= lo else 0
    for i in range(n):
        w[V + i] = lo + i
    return n


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def draw_index(K, w, sid, r, n):
    """The answer to a draw: the oracle's when there is a choice. The
    distribution's parameters are evaluated (a fault there is a fault) and
    left after the values for the simulator's sampling."""
    spec = K[r + 7]
    V = K[S_VALS]
    for i in range(K[spec + 1]):
        v = ev_s(K, K[spec + 2 + 2 * i], w, sid)
        if halted(K, w):
            return 0
        w[V + n + i] = v
    if n <= 1:
        return 0
    for i in range(n):
        w[K[S_QVALS] + i] = w[V + i]
    w[K[S_QSTATE]] = w[sbase(K, sid) + F_PROG]
    w[K[S_QSTATE] + 1] = w[sbase(K, sid) + F_PC]
    return ask(K, w, n, 0)


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def choose_index(K, w, sid, r, n):
    key = K[r + 7]
    if key < 0:
        if n <= 1:
            return 0
        for i in range(n):
            w[K[S_QVALS] + i] = w[K[S_VALS] + i]
        w[K[S_QSTATE]] = w[sbase(K, sid) + F_PROG]
        w[K[S_QSTATE] + 1] = w[sbase(K, sid) + F_PC]
        return ask(K, w, n, 0)
    sb = sbase(K, sid)
    TR = K[S_TRIAL]
    NA = K[H_NA]
    slot = K[r + 3]
    V = K[S_VALS]
    best = 0.0
    for i in range(n):  # the smallest key; a second pass collects the values tied with it
        for a in range(NA):
            w[TR + a] = w[sb + F_ATTR + a]
        w[TR + slot] = w[V + i]
        k = b2f(K, w, ev(K, key, w, TR, sid))
        if halted(K, w):
            return 0
        w[V + n + i] = f2b(K, w, k)
        if i == 0 or k < best:
            best = k
    tied = 0
    first = -1
    for i in range(n):
        k = b2f(K, w, w[V + n + i])
        if k == best:
            w[K[S_QVALS] + tied] = i
            if first < 0:
                first = i
            tied += 1
    if tied > 1 and K[H_TIESALL]:
        return w[K[S_QVALS] + ask(K, w, tied, 1)]
    return first


# ---------------------------------------------------------------- the automaton
#
# A spawned child runs until it blocks before its parent goes on, and a
# child's end wakes a parent waiting at `join`: a recursion in the language,
# run here by a driver over explicit frames (numba's cache cannot hold
# mutually recursive functions). Frame: (kind, session, count, budget).

FR_ADV, FR_SPAWN = 0, 1


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def push(K, w, kind, sid, count, budget):
    n = w[K[S_NFRAMES]]
    if n >= FRAMES:
        fault(K, w, FT_SPAWN_DEEP, sid, 0, 0)
        return
    f = K[S_FRAMES] + 4 * n
    w[f] = kind
    w[f + 1] = sid
    w[f + 2] = count
    w[f + 3] = budget
    w[K[S_NFRAMES]] = n + 1


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def advance(K, w, sid):
    """Run the session's internal states until it blocks (a macro step),
    and whatever that starts: spawned children, a woken parent."""
    w[K[S_NFRAMES]] = 0
    push(K, w, FR_ADV, sid, 0, MACRO_LIMIT)
    while w[K[S_NFRAMES]] > 0 and not halted(K, w):
        n = w[K[S_NFRAMES]] - 1
        f = K[S_FRAMES] + 4 * n
        kind = w[f]
        s = w[f + 1]
        count = w[f + 2]
        budget = w[f + 3]
        w[K[S_NFRAMES]] = n
        if kind == FR_ADV:
            run_states(K, w, s, budget)
        else:
            spawn_next(K, w, s, count, budget)


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def run_states(K, w, sid, budget):
    sb = sbase(K, sid)
    prog = w[sb + F_PROG]
    ab = sb + F_ATTR
    for left in range(budget, 0, -1):
        if halted(K, w):
            return
        pc = w[sb + F_PC]
        r = st_row(K, prog, pc)
        k = K[r]
        if k == K_SET:
            v = ev_s(K, K[r + 4], w, sid)
            if halted(K, w):
                return
            put(K, w, ab + K[r + 3], v)
            put(K, w, sb + F_PC, K[r + 1])
        elif k == K_BRANCH:
            c = ev_s(K, K[r + 3], w, sid)
            if halted(K, w):
                return
            put(K, w, sb + F_PC, K[r + 1] if c != 0 else K[r + 4])
        elif k == K_DRAW or k == K_CHOOSE:
            n = domain(K, w, sid, r)
            if halted(K, w):
                return
            if n == 0:
                fault(K, w, FT_EMPTY_DOMAIN, sid, pc, 0)
                return
            if k == K_DRAW:
                i = draw_index(K, w, sid, r, n)
            else:
                i = choose_index(K, w, sid, r, n)
            if halted(K, w):
                return
            v = w[K[S_VALS] + i]
            put(K, w, ab + K[r + 3], v)
            event(K, w, EV_DRAW if k == K_DRAW else EV_CHOOSE, sid, K[r + 3], v, K[r + 8], 0, 0, 0)
            put(K, w, sb + F_PC, K[r + 1])
        elif k == K_TURN:
            event(K, w, EV_AT_TURN, sid, 0, 0, 0, 0, 0, 0)
            return
        elif k == K_ACQUIRE:
            enqueue(K, w, sid, K[r + 4], REQ_ORDER)
            return
        elif k == K_RUN:
            total = to_int(K, w, ev_s(K, K[r + 3], w, sid), K[r + 8] == 1, 1, K[r + 3])
            if halted(K, w):
                return
            if total <= 0:  # a zero-work run is a no-op
                put(K, w, sb + F_PC, K[r + 1])
                continue
            put(K, w, sb + F_RD, 0)
            put(K, w, sb + F_RT, total)
            return
        elif k == K_SPAWN:
            spawn_start(K, w, sid, r, left - 1)
            return  # the driver runs the children, then this session on
        elif k == K_JOIN:
            if w[sb + F_LIVE] > 0:
                return
            put(K, w, sb + F_PC, K[r + 1])
        elif k == K_DROP:
            drop(K, w, sid, K[r + 3])
            put(K, w, sb + F_PC, K[r + 1])
        elif k == K_ASSERT:
            c = ev_s(K, K[r + 3], w, sid)
            if halted(K, w):
                return
            if c == 0:
                fault(K, w, FT_ASSERT, sid, pc, 0)
                return
            put(K, w, sb + F_PC, K[r + 1])
        elif k == K_EXIT:
            release_scope(K, w, sid, K[r + 3])
            if halted(K, w):
                return
            put(K, w, sb + F_LP0, -1)  # the scope was completed: a new one starts afresh
            put(K, w, sb + F_LP1, -1)
            put(K, w, sb + F_PC, K[r + 1])
        elif k == K_END:
            finish(K, w, sid)
            return
        else:  # K_ARRIVE
            return
    fault(K, w, FT_MACRO, sid, 0, 0)


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def spawn_start(K, w, sid, r, budget):
    spec = K[r + 3]
    n = to_int(K, w, ev_s(K, K[spec + 1], w, sid), K[spec + 2] == 1, 0, K[spec + 1])
    if halted(K, w):
        return
    if n < 0:
        n = 0
    if w[R_NSESS] + n > MAX_SESSIONS:
        fault(K, w, FT_SPAWN_MANY, sid, n, 0)
        return
    w[K[S_DEPTH]] += 1
    if w[K[S_DEPTH]] > SPAWN_DEPTH:
        fault(K, w, FT_SPAWN_DEEP, sid, 0, 0)
        return
    push(K, w, FR_SPAWN, sid, n, budget)


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def spawn_next(K, w, sid, left, budget):
    """The next child of a spawn (it runs until it blocks before the one
    after it is made); after the last, the parent goes on."""
    sb = sbase(K, sid)
    r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
    if left == 0:
        w[K[S_DEPTH]] -= 1
        put(K, w, sb + F_PC, K[r + 1])
        push(K, w, FR_ADV, sid, 0, budget)
        return
    spec = K[r + 3]
    ci = K[spec]
    na = K[spec + 3]
    cid = w[R_NSESS]
    if cid >= K[H_CAP]:
        w[R_HALT] = HALT_CAP  # Python grows the row and runs the step again
        return
    TR = K[S_TRIAL]
    for a in range(na):
        if K[spec + 4 + 2 * a]:
            w[TR + a] = ev_s(K, K[spec + 5 + 2 * a], w, sid)
            if halted(K, w):
                return
        else:
            w[TR + a] = K[spec + 5 + 2 * a]
    cb = sbase(K, cid)
    for f in range(K[H_SF]):
        put(K, w, cb + f, 0)
    put(K, w, R_NSESS, cid + 1)
    put(K, w, cb + F_PROG, ci)
    pt = K[H_PROGT] + PROG_W * ci
    put(K, w, cb + F_PC, K[st_row(K, ci, K[pt]) + 1])
    for a in range(na):
        put(K, w, cb + F_ATTR + a, w[TR + a])
    put(K, w, cb + F_PARENT, sid)
    put(K, w, cb + F_ARR, next_seq(K, w))
    put(K, w, cb + F_LP0, -1)
    put(K, w, cb + F_LP1, -1)
    add(K, w, sb + F_LIVE, 1)
    event(K, w, EV_SPAWN, sid, cid, 0, 0, 0, 0, 0)
    push(K, w, FR_SPAWN, sid, left - 1, budget)
    push(K, w, FR_ADV, cid, 0, MACRO_LIMIT)


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def finish(K, w, sid):
    """`end` closes every open scope, innermost first, and wakes a parent
    that waits at `join` for its last child."""
    sb = sbase(K, sid)
    while w[sb + F_NH] > 0:
        release_scope(K, w, sid, w[hbase(K, sid) + HW * (w[sb + F_NH] - 1) + HS_SCOPE])
        if halted(K, w):
            return
    put(K, w, sb + F_RD, 0)
    put(K, w, sb + F_RT, 0)
    event(K, w, EV_END, sid, 0, 0, 0, 0, 0, 0)
    par = w[sb + F_PARENT]
    if par >= 0:
        pb = sbase(K, par)
        add(K, w, pb + F_LIVE, -1)
        r = st_row(K, w[pb + F_PROG], w[pb + F_PC])
        if w[pb + F_LIVE] == 0 and K[r] == K_JOIN:
            put(K, w, pb + F_PC, K[r + 1])
            event(K, w, EV_JOINED, par, 0, 0, 0, 0, 0, 0)
            push(K, w, FR_ADV, par, 0, MACRO_LIMIT)


# ---------------------------------------------------------------- admission


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def admit_ctx(K, w, budget_left):
    w[K[S_CTX] + CX_BUDGET] = budget_left
    w[K[S_CTXOK]] = (1 << CX_BUDGET) | (1 << CX_NOW)


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
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
    hs = K[r + 5]
    ai = hs + 1 + 2 * K[hs]
    for i in range(K[ai + 1]):
        it = ai + 2 + 8 * i
        w[SC + K[it]] = K[it + 7]


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def try_admit(K, w, sid, budget_left):
    """Evaluate a queued hold's admission header; admit it if it fits."""
    segments(K, w, sid, True)
    ok = admit_hold(K, w, sid, budget_left)
    segments(K, w, sid, False)
    return ok


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def explain_admit(K, w, sid, budget_left, out):
    """Why a queued hold is or is not admitted: admit_plan's explanation
    (below) into out; nothing is admitted."""
    segments(K, w, sid, True)
    admit_plan(K, w, sid, budget_left, True, out)
    segments(K, w, sid, False)


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
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
    hs = K[r + 5]
    TR = K[S_TRIAL]
    NA = K[H_NA]
    for i in range(NA):
        w[TR + i] = w[sb + F_ATTR + i]
    nb = K[hs]
    for i in range(nb):
        admit_ctx(K, w, budget_left)
        v = ev(K, K[hs + 2 + 2 * i], w, TR, sid)
        if halted(K, w):
            return False
        w[TR + K[hs + 1 + 2 * i]] = v
    ai = hs + 1 + 2 * nb
    fits = True
    if explain:
        out[0] = 0
        out[1] = -1
    if K[ai] >= 0:
        admit_ctx(K, w, budget_left)
        ok = ev(K, K[ai], w, TR, sid)
        if halted(K, w):
            return False
        if explain:
            out[1] = 1 if ok != 0 else 0
        if ok == 0:
            if not explain:
                return False
            fits = False
    ni = K[ai + 1]
    PL = K[S_PLAN]
    for i in range(ni):
        it = ai + 2 + 8 * i
        p = K[it]
        pr = pool_row(K, p)
        bs = K[pr + 1]
        reuse = 0
        if K[it + 1] >= 0:
            admit_ctx(K, w, budget_left)
            reuse = to_int(K, w, ev(K, K[it + 1], w, TR, sid), K[it + 4] == 1, 0, K[it + 1])
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
        need = to_int(K, w, ev(K, K[it + 2], w, TR, sid), K[it + 5] == 1, 1, K[it + 2])
        if halted(K, w):
            return False
        admit_ctx(K, w, budget_left)
        take = to_int(K, w, ev(K, K[it + 3], w, TR, sid), K[it + 6] == 1, 1, K[it + 3])
        if halted(K, w):
            return False
        need = -(-max(need, 0) // bs) * bs
        take = -(-max(take, 0) // bs) * bs
        obt = -1
        if K[pr] >= 0:
            obt = w[pbase(K, p) + P_FREE] + evictable_sum(K, w, p) - reuse_evictable(K, w, p, K[it + 7], reuse)
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


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def admit_hold(K, w, sid, budget_left):
    """admit_plan, then the admission: the attributes, the holds, the units."""
    if not admit_plan(K, w, sid, budget_left, False, w):
        return False
    sb = sbase(K, sid)
    prog = w[sb + F_PROG]
    r = st_row(K, prog, w[sb + F_PC])
    hs = K[r + 5]
    TR = K[S_TRIAL]
    NA = K[H_NA]
    ai = hs + 1 + 2 * K[hs]
    ni = K[ai + 1]
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
        it = ai + 2 + 8 * i
        p = K[it]
        pr = pool_row(K, p)
        reuse = w[PL + 2 * i]
        take = w[PL + 2 * i + 1]
        b = pbase(K, p)
        q = K[it + 7]
        priv = reuse  # the hit's private part moves into the hold; a shared part is used in place
        if q >= 0:
            priv = max(reuse - seg_end(K, q, K[pr + 1]), 0)
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
            event(K, w, EV_HIT, sid, p, reuse, 0, 0, 0, 0)
        h = hold_append(K, w, sid, K[r + 3], p, priv, reuse, seq)  # its shared part is pinned from now
        if K[pr] >= 0:
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
        add(K, w, h + HS_OWN, take)
    q_remove(K, w, K[r + 4], sid)
    event(K, w, EV_ADMIT, sid, prog, w[sb + F_PC], 0, 0, 0, 0)
    put(K, w, sb + F_PC, K[r + 1])
    return True


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
def admit_pool(K, w, p, budget_left, skip, nskip):
    """One admission from p's queue (head-of-line rules), or -1. Sessions
    at w[skip..skip+nskip] are passed over."""
    b = pbase(K, p)
    hol_skip = K[pool_row(K, p) + 7] == 1
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


@njit(cache=True, error_model="numpy", _nrt=False, nogil=True)
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
