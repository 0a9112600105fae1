"""Pools: queues, holds, the cache, orders and their ties, eviction,
release with keep moves, drop.

Orders compare keys as int64 (a real key is mapped to an int with the same
order, a descending key is bit-inverted), then the tie event, then the
session's arrival (unique, so an order never falls back on session ids,
which the explorer's symmetry reduction permutes)."""

from __future__ import annotations

from serq.semantics.kernel.jit import internal

from serq.semantics.kernel.abi import (
    CE_OWNER, CE_REL, CE_TICK, CE_UNITS, CW, CX_ADM, CX_AGE, CX_ARR, CX_LAST, CX_NOW, CX_REL, CX_SIZE,
    EV_DROP, EV_EVICT, EV_QUEUED, EV_RELEASE, F_ADM, F_ATTR, F_ARR, F_NH, F_PROG, H_KW, H_NPROG, H_TIESALL,
    HS_ADM, HS_OWN, HS_POOL, HS_SCOPE, HS_USE, HW, P_CN, P_FREE, P_Q, P_QN, R_NSESS, REQ_BACK,
    REQ_FRONT, S_CTX, S_CTXOK, S_GIVEN, S_KEYS, S_NOW, S_TMP, TIE_ADMITTED, SCP, SCW_BASE, SEG_OWNER, H_NSEG,
    FT_UNITS_OVERFLOW, OV_CACHE, COPY_OWNER, HS_COPY,
)
from serq.semantics.kernel.abi import (  # the tables' field offsets
    OK_CODE, OK_DESC, OK_REAL, OR_KEYS, OR_NKEYS, OR_REAL, OR_TIE, OR_TIE_DESC, PL_BLOCK, PL_CAP,
    PL_COPIES, PL_EVICT, PL_QUEUE, SCK_EXPR, SCK_MODE,
)
from serq.semantics.kernel.core import (
    add_over, fault, add, ask, b2f, cbase, entry_evictable, event, f2b, halted, hbase, hold_of, hold_ref, hold_seg,
    next_seq, pbase, pinned, pool_row, put, sbase, scope_row, seg_end, seg_entry, seg_parent, seg_start, to_int,
    copy_for,
)
from serq.semantics.kernel.evaluate import ev, ev_s

# ---------------------------------------------------------------- queues


@internal
def q_insert(K, w, p, pos, sid):
    b = pbase(K, p)
    n = w[b + P_QN]
    q = b + P_Q
    for i in range(n, pos, -1):
        put(K, w, q + i, w[q + i - 1])
    put(K, w, q + pos, sid)
    put(K, w, b + P_QN, n + 1)


@internal
def q_remove(K, w, p, sid):
    b = pbase(K, p)
    n = w[b + P_QN]
    q = b + P_Q
    for j in range(n):
        if w[q + j] == sid:
            for i in range(j, n - 1):
                put(K, w, q + i, w[q + i + 1])
            put(K, w, q + n - 1, -1)
            put(K, w, b + P_QN, n - 1)
            return


@internal
def q_has(K, w, p, sid):
    b = pbase(K, p)
    for j in range(w[b + P_QN]):
        if w[b + P_Q + j] == sid:
            return True
    return False


# ---------------------------------------------------------------- the cache


@internal
def cache_remove(K, w, p, k):
    """Remove entry k, keeping the others in their order."""
    b = pbase(K, p)
    n = w[b + P_CN]
    c = cbase(K, p)
    for j in range(k, n - 1):
        for f in range(CW):
            put(K, w, c + CW * j + f, w[c + CW * (j + 1) + f])
    for f in range(CW):
        put(K, w, c + CW * (n - 1) + f, 0)
    put(K, w, b + P_CN, n - 1)


@internal
def cache_put(K, w, sid, p, units):
    seq = next_seq(K, w)
    b = pbase(K, p)
    c = cbase(K, p)
    n = w[b + P_CN]
    for k in range(n):
        e = c + CW * k
        if w[e + CE_OWNER] == sid:
            if add_over(w[e + CE_UNITS], units):  # a pool without a cap: any number of units
                fault(K, w, FT_UNITS_OVERFLOW, sid, OV_CACHE, p)
                return
            add(K, w, e + CE_UNITS, units)
            put(K, w, e + CE_REL, seq)
            put(K, w, e + CE_TICK, w[K[S_NOW]])
            return
    e = c + CW * n
    put(K, w, e + CE_OWNER, sid)
    put(K, w, e + CE_UNITS, units)
    put(K, w, e + CE_REL, seq)
    put(K, w, e + CE_TICK, w[K[S_NOW]])
    put(K, w, b + P_CN, n + 1)


@internal
def seg_touch(K, w, p, q):
    """Prefix q's entry was released now (its last user let go of some of it)."""
    e = seg_entry(K, w, p, q)
    if e >= 0:
        put(K, w, e + CE_REL, next_seq(K, w))
        put(K, w, e + CE_TICK, w[K[S_NOW]])


@internal
def publish(K, w, sid, h, upto):
    """The hold's use is growing to `upto`: each shared block it completes
    leaves the hold for the cache, or, if the cache has it already, the
    hold's copy is freed and it uses the cache's (`copies free`) or it
    keeps its copy as its own (`copies keep`)."""
    q = hold_seg(K, w, sid, h)
    if q < 0:
        return
    p = w[h + HS_POOL]
    pr = pool_row(K, p)
    bs = K[pr + PL_BLOCK]
    S = seg_end(K, q, bs)
    r0 = min((w[h + HS_USE] // bs) * bs, S)
    r1 = min((upto // bs) * bs, S)
    pos = r0
    while pos < r1:
        x = q
        while seg_start(K, x, bs) > pos:
            x = seg_parent(K, x)
        a = seg_start(K, x, bs)
        e = seg_entry(K, w, p, x)
        if e >= 0 and a + w[e + CE_UNITS] > pos:
            if K[pr + PL_COPIES]:
                add(K, w, h + HS_COPY, bs)
            else:
                add(K, w, h + HS_OWN, -bs)
                if K[pr + PL_CAP] >= 0:
                    add(K, w, pbase(K, p) + P_FREE, bs)
        else:
            add(K, w, h + HS_OWN, -bs)
            if e >= 0:
                add(K, w, e + CE_UNITS, bs)
            else:
                cache_put(K, w, SEG_OWNER - x, p, bs)
        pos += bs


# ---------------------------------------------------------------- keys


@internal
def key_of(K, w, code, real, order_real, ab, sid):
    """One declared key's value as a comparable int64."""
    if code < 0:
        v = 0
        if not order_real:
            return v
        x = 0.0
    else:
        v = ev(K, code, w, ab, sid)
        if not order_real:
            return v
        x = b2f(K, w, v) if real else float(v)
    bits = f2b(K, w, x + 0.0)  # -0.0 and 0.0 are one key
    if bits < 0:
        bits = bits ^ 0x7FFFFFFFFFFFFFFF
    return bits


@internal
def sess_keys(K, w, oo, sid, adm, out):
    """The declared keys of order `oo` for a session, at w[out..]; the
    context gives `arrived` and `admitted` (`adm`: the session's, or its
    hold's for a victim)."""
    nk = K[oo + OR_NKEYS]
    if nk == 0:
        return 0
    sb = sbase(K, sid)
    CX = K[S_CTX]
    prog = w[sb + F_PROG]
    nprog = K[H_NPROG]
    rw = 1 + 2 * nprog + 2
    for k in range(nk):
        w[CX + CX_ARR] = w[sb + F_ARR]
        w[CX + CX_ADM] = adm
        w[K[S_CTXOK]] = (1 << CX_ARR) | (1 << CX_ADM) | (1 << CX_NOW)
        rec = oo + OR_KEYS + k * rw
        v = key_of(K, w, K[rec + OK_CODE + 2 * prog], K[rec + OK_REAL + 2 * prog], K[oo + OR_REAL], sb + F_ATTR, sid)
        w[out + k] = ~v if K[rec + OK_DESC] else v
    return nk


@internal
def lex_cmp(w, a, b, n):
    for i in range(n):
        if w[a + i] != w[b + i]:
            return -1 if w[a + i] < w[b + i] else 1
    return 0


# ---------------------------------------------------------------- orders over sessions


@internal
def ordered(K, w, oo, items, n, out):
    """Sort sessions w[items..items+n] by (keys, tie, arrival) into w[out..];
    with `--ties all`, each group tied on the declared keys comes out in an
    order the oracle picks (the first pick asked first)."""
    KW = K[H_KW]
    KS = K[S_KEYS]
    nk = K[oo + OR_NKEYS]
    sgn = -1 if K[oo + OR_TIE_DESC] else 1
    tie_adm = K[oo + OR_TIE] == TIE_ADMITTED
    for i in range(n):
        sid = w[items + i]
        sb = sbase(K, sid)
        b = KS + i * KW
        sess_keys(K, w, oo, sid, w[sb + F_ADM], b)
        w[b + nk] = sgn * (w[sb + F_ADM] if tie_adm else w[sb + F_ARR])  # the declared tie event
        w[b + nk + 1] = w[sb + F_ARR]
    T = K[S_TMP]
    for i in range(n):  # stable insertion sort of indices
        j = i
        while j > 0 and lex_cmp(w, KS + i * KW, KS + w[T + j - 1] * KW, nk + 2) < 0:
            w[T + j] = w[T + j - 1]
            j -= 1
        w[T + j] = i
    if nk == 0 or K[H_TIESALL] == 0:
        for i in range(n):
            w[out + i] = w[items + w[T + i]]
        return
    i = 0
    o = 0
    while i < n:
        j = i
        while j < n and lex_cmp(w, KS + w[T + i] * KW, KS + w[T + j] * KW, nk) == 0:
            j += 1
        gend = j
        while gend - i > 1:
            c = ask(K, w, gend - i, 1)
            if halted(K, w):
                return
            x = w[T + i + c]
            for t in range(i + c, gend - 1):
                w[T + t] = w[T + t + 1]
            gend -= 1
            w[out + o] = w[items + x]
            o += 1
        w[out + o] = w[items + w[T + i]]
        o += 1
        i = j


@internal
def pick_victim(K, w, p, oo):
    """The first holder of p in the victim order (key `admitted` and an
    `admitted` tie are the hold's admission, an `arrived` tie the session's
    arrival); ties on declared keys go to the oracle."""
    KS = K[S_KEYS]
    KW = K[H_KW]
    nk = K[oo + OR_NKEYS]
    sgn = -1 if K[oo + OR_TIE_DESC] else 1
    tie_adm = K[oo + OR_TIE] == TIE_ADMITTED
    best = -1
    for s in range(w[R_NSESS]):
        h = hold_of(K, w, s, p)
        if h < 0:
            continue
        b = KS + s * KW
        sess_keys(K, w, oo, s, w[h + HS_ADM], b)
        w[b + nk] = sgn * (w[h + HS_ADM] if tie_adm else w[sbase(K, s) + F_ARR])
        w[b + nk + 1] = w[sbase(K, s) + F_ARR]
        if best < 0 or lex_cmp(w, b, KS + best * KW, nk + 2) < 0:
            best = s
    if nk > 0 and K[H_TIESALL] and best >= 0:
        T = K[S_TMP]
        nt = 0
        for s in range(w[R_NSESS]):
            if hold_of(K, w, s, p) < 0:
                continue
            if lex_cmp(w, KS + s * KW, KS + best * KW, nk) == 0:
                j = nt
                while j > 0 and lex_cmp(w, KS + w[T + j - 1] * KW + nk, KS + s * KW + nk, 2) > 0:
                    w[T + j] = w[T + j - 1]
                    j -= 1
                w[T + j] = s
                nt += 1
        if nt > 1:
            best = w[T + ask(K, w, nt, 1)]
    return best


# ---------------------------------------------------------------- eviction


@internal
def free_block(K, w, p, protect):
    """Free one block of p by evicting from the cache in evict order
    (entries of `protect` spared; -2 spares none)."""
    b = pbase(K, p)
    c = cbase(K, p)
    n = w[b + P_CN]
    pr = pool_row(K, p)
    oo = K[pr + PL_EVICT]
    nk = K[oo + OR_NKEYS]
    sgn = -1 if K[oo + OR_TIE_DESC] else 1
    KS = K[S_KEYS]
    KW = K[H_KW]
    CX = K[S_CTX]
    nprog = K[H_NPROG]
    rw = 1 + 2 * nprog + 2
    bs = K[pr + PL_BLOCK]
    nseg = K[H_NSEG] > 0  # pinned prefix blocks cannot be evicted
    best = -1
    for k in range(n):
        e = c + CW * k
        if w[e + CE_OWNER] == protect or (nseg and entry_evictable(K, w, p, e) < bs):
            continue
        kb = KS + k * KW
        for q in range(nk):
            w[CX + CX_SIZE] = w[e + CE_UNITS]
            w[CX + CX_LAST] = w[e + CE_REL]
            w[CX + CX_REL] = w[e + CE_REL]
            w[CX + CX_AGE] = w[K[S_NOW]] - w[e + CE_TICK]
            w[K[S_CTXOK]] = (1 << CX_SIZE) | (1 << CX_LAST) | (1 << CX_REL) | (1 << CX_AGE) | (1 << CX_NOW)
            rec = oo + OR_KEYS + q * rw
            v = key_of(K, w, K[rec + OK_CODE + 2 * nprog], K[rec + OK_REAL + 2 * nprog], K[oo + OR_REAL], 0, -1)
            if halted(K, w):
                return False
            w[kb + q] = ~v if K[rec + OK_DESC] else v
        w[kb + nk] = sgn * w[e + CE_REL]
        if best < 0 or lex_cmp(w, kb, KS + best * KW, nk + 1) < 0:
            best = k
    if best < 0:
        return False
    if nk > 0 and K[H_TIESALL]:
        T = K[S_TMP]
        nt = 0
        for k in range(n):
            e = c + CW * k
            if w[e + CE_OWNER] == protect or (nseg and entry_evictable(K, w, p, e) < bs):
                continue
            if lex_cmp(w, KS + k * KW, KS + best * KW, nk) == 0:
                j = nt
                while j > 0 and w[KS + w[T + j - 1] * KW + nk] > w[KS + k * KW + nk]:
                    w[T + j] = w[T + j - 1]
                    j -= 1
                w[T + j] = k
                nt += 1
        if nt > 1:
            best = w[T + ask(K, w, nt, 1)]
            if halted(K, w):
                return False
    e = c + CW * best
    ow = w[e + CE_OWNER]
    if COPY_OWNER < ow <= SEG_OWNER and K[pr + PL_COPIES]:
        # the first copy of a prefix block goes; another copy of it, if any,
        # is the one a hit finds from now (the map's next copy in vLLM)
        k = copy_for(K, w, p, SEG_OWNER - ow)
        if k >= 0:
            ce = c + CW * k
            if w[ce + CE_UNITS] <= bs:
                # the last released copy takes the first's place: the prefix's
                # blocks are those copies now, released when they were
                put(K, w, e + CE_REL, max(w[e + CE_REL], w[ce + CE_REL]))
                put(K, w, e + CE_TICK, max(w[e + CE_TICK], w[ce + CE_TICK]))
            best = k
            e = ce
        elif k < -1:  # a hold's own copy: it becomes the cache's, and the hold uses it in place
            add(K, w, -k - 2 + HS_OWN, -bs)
            add(K, w, -k - 2 + HS_COPY, -bs)
            add(K, w, b + P_FREE, bs)
            event(K, w, EV_EVICT, (p, ow, bs))
            return True
    add(K, w, e + CE_UNITS, -bs)
    add(K, w, b + P_FREE, bs)
    event(K, w, EV_EVICT, (p, ow, bs))
    if w[e + CE_UNITS] <= 0:
        cache_remove(K, w, p, best)
    return True


# ---------------------------------------------------------------- holds


@internal
def hold_append(K, w, sid, scope, p, own, use, adm):
    sb = sbase(K, sid)
    nh = w[sb + F_NH]
    h = hbase(K, sid) + HW * nh
    put(K, w, h + HS_SCOPE, scope)
    put(K, w, h + HS_POOL, p)
    put(K, w, h + HS_OWN, own)
    put(K, w, h + HS_USE, use)
    put(K, w, h + HS_ADM, adm)
    put(K, w, h + HS_COPY, 0)
    put(K, w, sb + F_NH, nh + 1)
    return h


@internal
def release_one(K, w, sid, scope):
    """Release the holds of one scope, in hold order: the kept part to the
    cache under the session's key, the rest to free."""
    sb = sbase(K, sid)
    prog = w[sb + F_PROG]
    sr = scope_row(K, prog, scope)
    hb = hbase(K, sid)
    j = 0
    while j < w[sb + F_NH]:
        h = hb + HW * j
        if w[h + HS_SCOPE] != scope:
            j += 1
            continue
        p = w[h + HS_POOL]
        own = w[h + HS_OWN]
        use = w[h + HS_USE]
        pr = pool_row(K, p)
        bs = K[pr + PL_BLOCK]
        kept = 0
        ref = hold_ref(K, w, sid, h) if K[H_NSEG] else 0  # shared units: the cache's already
        cp = w[h + HS_COPY]  # the hold's own copies of shared blocks: cached below
        full = ref + cp
        mode = K[sr + SCW_BASE + SCP * p + SCK_MODE]
        if w[K[S_GIVEN]] > 0 and w[K[S_GIVEN] + 1] == p:
            use += w[K[S_GIVEN]]  # `cache scheduled`: the blocks its given-back tokens fill are cached
        if mode == 1:
            kept = (min(use - full, own - cp) // bs) * bs
        elif mode >= 2:
            code = K[sr + SCW_BASE + SCP * p + SCK_EXPR]
            v = to_int(K, w, ev_s(K, code, w, sid), mode == 3, 0, code)
            if halted(K, w):
                return
            kept = 0 if v <= full else (min(v - full, own - cp) // bs) * bs  # v - full only when it cannot overflow
        if kept:
            cache_put(K, w, sid, p, kept)
        if K[pr + PL_CAP] >= 0:
            add(K, w, pbase(K, p) + P_FREE, own - cp - kept)
        # its copies stay cached (they are the units [ref, full)), the longest prefix's first
        x = hold_seg(K, w, sid, h) if cp > 0 else -1
        while x >= 0:
            a = seg_start(K, x, bs)
            mine = min(full, seg_end(K, x, bs)) - max(ref, a)
            if mine > 0:
                cache_put(K, w, COPY_OWNER - x, p, mine)
            x = seg_parent(K, x)
        # shared blocks only this hold used become evictable now, the
        # longest prefix's first (a request's tail blocks are evicted first)
        x = hold_seg(K, w, sid, h) if ref > 0 else -1
        while x >= 0:
            a = seg_start(K, x, bs)
            mine = min(max(ref - a, 0), seg_end(K, x, bs) - a)
            if mine > pinned(K, w, p, x, h):
                seg_touch(K, w, p, x)
            x = seg_parent(K, x)
        event(K, w, EV_RELEASE, (sid, p, own, kept + cp))
        j += 1
    # drop the scope's holds, keeping the others in order
    n = w[sb + F_NH]
    o = 0
    for j in range(n):
        h = hb + HW * j
        if w[h + HS_SCOPE] == scope:
            continue
        if o != j:
            for f in range(HW):
                put(K, w, hb + HW * o + f, w[h + f])
        o += 1
    for j in range(o, n):
        for f in range(HW):
            put(K, w, hb + HW * j + f, 0)
    put(K, w, sb + F_NH, o)


@internal
def release_scope(K, w, sid, scope):
    """Inner scopes first (the holds taken after this scope's), then it."""
    sb = sbase(K, sid)
    hb = hbase(K, sid)
    while True:
        n = w[sb + F_NH]
        if n == 0:
            break
        last = w[hb + HW * (n - 1) + HS_SCOPE]
        if last == scope:
            break
        found = False
        for j in range(n):
            if w[hb + HW * j + HS_SCOPE] == scope:
                found = True
        if not found:
            break
        release_one(K, w, sid, last)
        if halted(K, w):
            return
    release_one(K, w, sid, scope)


@internal
def drop(K, w, sid, p):
    b = pbase(K, p)
    c = cbase(K, p)
    k = 0
    while k < w[b + P_CN]:
        e = c + CW * k
        if w[e + CE_OWNER] == sid:
            units = w[e + CE_UNITS]
            cache_remove(K, w, p, k)
            if K[pool_row(K, p) + PL_CAP] >= 0:
                add(K, w, b + P_FREE, units)
            event(K, w, EV_DROP, (sid, p, units))
        else:
            k += 1


# ---------------------------------------------------------------- enqueue


@internal
def enqueue(K, w, sid, p, where):
    """Put a waiting hold into p's queue: at the front or back (a requeue
    after preemption) or by the queue order; with `--ties all` a hold tied
    with others on the declared keys may go anywhere among them."""
    b = pbase(K, p)
    n = w[b + P_QN]
    if where == REQ_FRONT:
        q_insert(K, w, p, 0, sid)
    elif where == REQ_BACK:
        q_insert(K, w, p, n, sid)
    else:
        oo = K[pool_row(K, p) + PL_QUEUE]
        nk = K[oo + OR_NKEYS]
        sgn = -1 if K[oo + OR_TIE_DESC] else 1
        tie_adm = K[oo + OR_TIE] == TIE_ADMITTED
        KS = K[S_KEYS]
        KW = K[H_KW]
        q = b + P_Q
        mine = KS
        sb = sbase(K, sid)
        sess_keys(K, w, oo, sid, w[sb + F_ADM], mine)
        w[mine + nk] = sgn * (w[sb + F_ADM] if tie_adm else w[sb + F_ARR])
        other = KS + KW
        i = n
        while i > 0:
            o = w[q + i - 1]
            ob = sbase(K, o)
            sess_keys(K, w, oo, o, w[ob + F_ADM], other)
            w[other + nk] = sgn * (w[ob + F_ADM] if tie_adm else w[ob + F_ARR])
            if lex_cmp(w, other, mine, nk + 1) > 0:
                i -= 1
            else:
                break
        if halted(K, w):
            return
        if nk > 0 and K[H_TIESALL]:
            lo = i
            while lo > 0:
                o = w[q + lo - 1]
                sess_keys(K, w, oo, o, w[sbase(K, o) + F_ADM], other)
                if lex_cmp(w, other, mine, nk) == 0:
                    lo -= 1
                else:
                    break
            hi = i
            while hi < n:
                o = w[q + hi]
                sess_keys(K, w, oo, o, w[sbase(K, o) + F_ADM], other)
                if lex_cmp(w, other, mine, nk) == 0:
                    hi += 1
                else:
                    break
            nopt = hi - lo + 1
            if nopt > 1:
                c = ask(K, w, nopt, 1)
                if halted(K, w):
                    return
                if c > 0:  # options: [i] + [j for j in lo..hi if j != i]
                    j = lo + c - 1
                    if j >= i:
                        j += 1
                    i = j
        q_insert(K, w, p, i, sid)
    event(K, w, EV_QUEUED, (sid, p))
