"""The explorer's side of the kernel: the canonical form of a row, its
fingerprint, and every successor of a row in one call (the odometer over
oracle answers).

The canonical form (what identifies a state) drops the sequence counter
and the release ticks, replaces sequence numbers by their ranks, blanks
finished sessions (only their cache entries still matter), and with
symmetry sorts sessions by their record, then their parent's record,
renaming ids in parents, queues and cache owners. It is written compactly
(no unused slots), so a state's fingerprint does not depend on the row's
session capacity."""

from __future__ import annotations

import numpy as np
from serq.semantics.kernel.jit import internal

from serq.semantics.kernel.abi import (
    R_HALT, FT_OVERFLOW, BIG,
    A_ARRIVE, A_ITERATE, CE_OWNER, CE_REL, CE_UNITS, CW, F_ADM, F_ARR, F_ATTR, F_LIVE, F_LP0, F_LP1, F_NH,
    F_PARENT, F_PC, F_PROG, F_STUCK, H_NP, H_NST, H_SF, HALT_FAULT, HALT_NONE, HS_ADM, HW, K_ARRIVE,
    K_TURN, P_CN, P_FREE, P_Q, P_QN, R_FA0, R_FA1, R_FA2, R_FA3, R_FAULT, R_NSESS, S_ARITY, S_PERM,
    S_QPOS, S_SCRIPT, S_TMP, H_W, H_RANKS, RK_OK, RK_ARR_DEAD, RK_ADM_FREE, RK_ADM_NONE, CO_KEEP_POS, CO_RANKS,
    TIE_ADMITTED,
)
from serq.semantics.kernel.abi import (  # the tables' field offsets
    ST_KIND, OR_TIE, PL_VICTIM, HS_POOL,
)
from serq.semantics.kernel.core import cbase, hbase, pbase, pool_row, sbase, st_row
from serq.semantics.kernel.entry import is_end, row_flags, run_step  # noqa: F401 (row_flags: API)


@internal
def fat(o, f):
    """Where field f of a session record lands once its parent is removed."""
    return o + f - (1 if f > F_PARENT else 0)


@internal
def rank_of(w, T, u, x):
    if u <= 32:  # a few values: count those below x (no branch to mispredict)
        r = 0
        for i in range(u):
            r += 1 if w[T + i] < x else 0
        return r if r < u and w[T + r] == x else -1
    lo = 0
    hi = u - 1
    while lo <= hi:  # T[0:u] is sorted and unique
        mid = (lo + hi) // 2
        if w[T + mid] < x:
            lo = mid + 1
        elif w[T + mid] > x:
            hi = mid - 1
        else:
            return mid
    return -1


@internal
def rec_cmp(out, a, b, n):
    for i in range(n):
        if out[a + i] != out[b + i]:
            return -1 if out[a + i] < out[b + i] else 1
    return 0


@internal
def sess_cmp(out, a, b, pa, pb, RW):
    """Records first, then the parents' records (no parent comes first)."""
    c = rec_cmp(out, a * RW, b * RW, RW)
    if c != 0:
        return c
    if pa < 0 or pb < 0:
        if pa < 0 and pb < 0:
            return 0
        return -1 if pa < 0 else 1
    return rec_cmp(out, pa * RW, pb * RW, RW)


@internal
def popcount(x):
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    x = x + (x >> np.uint64(8))  # byte sums (no multiply: no overflow when run as plain Python)
    x = x + (x >> np.uint64(16))
    x = x + (x >> np.uint64(32))
    return np.int64(x & np.uint64(0x7F))


@internal
def bit_of(d):
    return np.uint64(1) << np.uint64(d & 63)


@internal
def rank(w, T, u, x, lo, bits, counts):
    """The rank of x among the live sequence numbers: from the bitmap
    bits (four words) of the values' offsets from lo (u < 0), counts
    holding how many are set in the words before the second, third and
    fourth, or from the sorted values T[0:u]."""
    if u >= 0:
        return rank_of(w, T, u, x)
    b0, b1, b2, b3 = bits
    c1, c2, c3 = counts
    d = x - lo
    m = bit_of(d) - np.uint64(1)
    q = d >> 6
    if q == 0:
        return popcount(b0 & m)
    if q == 1:
        return c1 + popcount(b1 & m)
    if q == 2:
        return c2 + popcount(b2 & m)
    return c3 + popcount(b3 & m)


@internal
def rank_prep(w, T, nv):
    """What `rank` needs to rank among the values w[T:T+nv]: (u, lo, bits,
    counts); the values are sorted in place when they are not within 256
    of each other."""
    lo = BIG
    hi = -BIG
    for i in range(nv):
        lo = min(lo, w[T + i])
        hi = max(hi, w[T + i])
    # their ranks: within 256 of each other (the usual case) from a bitmap
    # of them (popcounts, `rank`), otherwise from them sorted (`rank_of`)
    z = np.uint64(0)
    b0 = z
    b1 = z
    b2 = z
    b3 = z
    c1 = 0
    c2 = 0
    c3 = 0
    if hi - lo < 256:
        u = -1
        for i in range(nv):
            d = w[T + i] - lo
            q = d >> 6
            if q == 0:
                b0 |= bit_of(d)
            elif q == 1:
                b1 |= bit_of(d)
            elif q == 2:
                b2 |= bit_of(d)
            else:
                b3 |= bit_of(d)
        c1 = popcount(b0)
        c2 = c1 + popcount(b1)
        c3 = c2 + popcount(b2)
    else:
        for i in range(1, nv):  # insertion sort: a handful of values
            x = w[T + i]
            j = i - 1
            while j >= 0 and w[T + j] > x:
                w[T + j + 1] = w[T + j]
                j -= 1
            w[T + j + 1] = x
        u = 0
        for i in range(nv):
            if u == 0 or w[T + i] != w[T + u - 1]:
                w[T + u] = w[T + i]
                u += 1
    bits = (b0, b1, b2, b3)
    counts = (c1, c2, c3)
    return u, lo, bits, counts


@internal
def idle(K, w, sb):
    """A session that holds nothing and waits for its (next) arrival: its
    arrival is written again before anything reads it."""
    if w[sb + F_NH] != 0:
        return False
    k = K[st_row(K, w[sb + F_PROG], w[sb + F_PC]) + ST_KIND]
    return k == K_ARRIVE or k == K_TURN


@internal
def hold_adm_read(K, w, h):
    """Whether a hold's admission can be read: its pool's victim order ties
    on `admitted` (no declared key reads it when RK_OK)."""
    oo = K[pool_row(K, w[h + HS_POOL]) + PL_VICTIM]
    return oo >= 0 and K[oo + OR_TIE] == TIE_ADMITTED


@internal
def ranks_reduced(K, w, out, base, stride):
    """The arrival and admission ranks of the records at out[base + sid *
    stride] (`--reduce ranks`): only those some future step can read (an
    order that may fall back on them, serq/semantics/ranks.py), each kind
    ranked among its own kind (no order compares two kinds), the others
    -1. w's S_TMP is used; ended sessions (EN) are left as they are."""
    n = w[R_NSESS]
    T = K[S_TMP]
    EN = K[S_PERM] + 2 * n
    fl = K[H_RANKS]
    arr_dead = (fl & RK_ARR_DEAD) != 0
    adm_none = (fl & RK_ADM_NONE) != 0
    adm_free = (fl & RK_ADM_FREE) != 0
    nv = 0
    for sid in range(n):
        sb = sbase(K, sid)
        if not w[EN + sid] and not arr_dead and not idle(K, w, sb):
            w[T + nv] = w[sb + F_ARR]
            nv += 1
    u, lo, bits, counts = rank_prep(w, T, nv)
    for sid in range(n):
        sb = sbase(K, sid)
        if w[EN + sid]:
            continue
        o = base + sid * stride
        if not arr_dead and not idle(K, w, sb):
            out[fat(o, F_ARR)] = rank(w, T, u, w[sb + F_ARR], lo, bits, counts)
        else:
            out[fat(o, F_ARR)] = -1
    nv = 0
    for sid in range(n):
        if w[EN + sid]:
            continue
        sb = sbase(K, sid)
        nh = w[sb + F_NH]
        if not adm_none and not (adm_free and nh == 0):
            w[T + nv] = w[sb + F_ADM]
            nv += 1
        hb = hbase(K, sid)
        for j in range(nh):
            if hold_adm_read(K, w, hb + HW * j):
                w[T + nv] = w[hb + HW * j + HS_ADM]
                nv += 1
    u, lo, bits, counts = rank_prep(w, T, nv)
    for sid in range(n):
        if w[EN + sid]:
            continue
        sb = sbase(K, sid)
        o = base + sid * stride
        nh = w[sb + F_NH]
        if not adm_none and not (adm_free and nh == 0):
            out[fat(o, F_ADM)] = rank(w, T, u, w[sb + F_ADM], lo, bits, counts)
        else:
            out[fat(o, F_ADM)] = -1
        hb = hbase(K, sid)
        hoff = fat(o, F_ATTR) + (hb - (sb + F_ATTR))
        for j in range(nh):
            h = hb + HW * j
            out[hoff + HW * j + HS_ADM] = rank(w, T, u, w[h + HS_ADM], lo, bits, counts) if hold_adm_read(K, w, h) \
                else -1


@internal
def canon(K, w, out, sym, opts):
    """The canonical form of the row in w[0:W] into `out`; returns its
    length. w's scratch S_TMP and S_PERM are used. opts: CO_KEEP_POS keeps
    the preemption positions; CO_RANKS reduces ranks (`ranks_reduced`)
    where the instance allows it (RK_OK)."""
    keep_pos = opts & CO_KEEP_POS
    red = (opts & CO_RANKS) != 0 and (K[H_RANKS] & RK_OK) != 0
    n = w[R_NSESS]
    SF = K[H_SF]
    NP = K[H_NP]
    RW = SF - 1  # a session's record without its parent
    T = K[S_TMP]
    PM = K[S_PERM]
    NW = PM + n
    EN = PM + 2 * n  # whether each session has ended
    # the live sequence numbers, gathered in T
    nv = 0
    for sid in range(n):
        e = is_end(K, w, sid)
        w[EN + sid] = 1 if e else 0
        if e or red:
            continue
        sb = sbase(K, sid)
        w[T + nv] = w[sb + F_ARR]
        w[T + nv + 1] = w[sb + F_ADM]
        nv += 2
        hb = hbase(K, sid)
        for j in range(w[sb + F_NH]):
            w[T + nv] = w[hb + HW * j + HS_ADM]
            nv += 1
    if not red:
        for p in range(NP):
            c = cbase(K, p)
            for k in range(w[pbase(K, p) + P_CN]):
                w[T + nv] = w[c + CW * k + CE_REL]
                nv += 1
    u, lo, bits, counts = rank_prep(w, T, nv)
    # records: with symmetry in `out` temporarily, at its end (the form is
    # written at its front and never reaches them, `out` being three rows
    # long); without, sessions keep their order and their records are
    # written where the form puts them
    if sym:
        base = out.shape[0] - n * RW
        stride = RW
    else:
        base = 6
        stride = RW + 1
    for sid in range(n):
        sb = sbase(K, sid)
        o = base + sid * stride
        for f in range(F_PARENT):
            out[o + f] = w[sb + f]
        for f in range(F_PARENT + 1, SF):
            out[o + f - 1] = w[sb + f]
    # fields in the record (the parent removed shifts those after it)
    for sid in range(n):
        sb = sbase(K, sid)
        o = base + sid * stride
        if w[EN + sid]:
            for f in range(SF):
                if f != F_PROG and f != F_PC and f != F_PARENT and f != F_LIVE and f != F_STUCK:
                    out[fat(o, f)] = 0
            out[fat(o, F_ARR)] = -1
            out[fat(o, F_ADM)] = -1
            out[fat(o, F_LP0)] = -1
            out[fat(o, F_LP1)] = -1
        else:
            if not red:
                out[fat(o, F_ARR)] = rank(w, T, u, w[sb + F_ARR], lo, bits, counts)
                out[fat(o, F_ADM)] = rank(w, T, u, w[sb + F_ADM], lo, bits, counts)
                hoff = fat(o, F_ATTR) + (hbase(K, sid) - (sb + F_ATTR))
                for j in range(w[sb + F_NH]):
                    out[hoff + HW * j + HS_ADM] = rank(w, T, u, w[hbase(K, sid) + HW * j + HS_ADM], lo, bits, counts)
            if not keep_pos:
                out[fat(o, F_LP0)] = -1
                out[fat(o, F_LP1)] = -1
                out[fat(o, F_STUCK)] = 0
    if red:
        ranks_reduced(K, w, out, base, stride)
    # the permutation: sessions sorted by (record, parent's record), stably
    for i in range(n):
        w[PM + i] = i
    if sym:
        for i in range(1, n):
            x = w[PM + i]
            px = w[sbase(K, x) + F_PARENT]
            j = i - 1
            while j >= 0:
                y = w[PM + j]
                py = w[sbase(K, y) + F_PARENT]
                if sess_cmp(out[base:], x, y, px, py, RW) < 0:
                    w[PM + j + 1] = y
                    j -= 1
                else:
                    break
            w[PM + j + 1] = x
    for pos in range(n):
        w[NW + w[PM + pos]] = pos
    # write: header, sessions in order (records copied after the tail), pools
    o = 0
    out[o] = n
    out[o + 1] = w[R_FAULT]
    out[o + 2] = w[R_FA0]
    out[o + 3] = w[R_FA1]
    out[o + 4] = w[R_FA2]
    out[o + 5] = w[R_FA3]
    o += 6
    for pos in range(n):
        old = w[PM + pos]
        if sym:
            r = base + old * RW
            for i in range(RW):
                out[o + i] = out[r + i]
        pa = w[sbase(K, old) + F_PARENT]
        out[o + RW] = w[NW + pa] if pa >= 0 else -1
        o += RW + 1
    if red:  # release ranks among the releases alone
        nv = 0
        for p in range(NP):
            c = cbase(K, p)
            for k in range(w[pbase(K, p) + P_CN]):
                w[T + nv] = w[c + CW * k + CE_REL]
                nv += 1
        u, lo, bits, counts = rank_prep(w, T, nv)
    for p in range(NP):
        b = pbase(K, p)
        out[o] = w[b + P_FREE]
        qn = w[b + P_QN]
        out[o + 1] = qn
        o += 2
        for i in range(qn):
            out[o + i] = w[NW + w[b + P_Q + i]]
        o += qn
        cn = w[b + P_CN]
        out[o] = cn
        o += 1
        c = cbase(K, p)
        for k in range(cn):  # entries sorted by (owner, units, rank)
            e = c + CW * k
            ow = w[e + CE_OWNER]
            # a shared prefix's entry keeps its owner (<= -3); a finished session's is -1
            a0 = ow if ow < 0 else (-1 if w[EN + ow] else w[NW + ow])
            a1 = w[e + CE_UNITS]
            a2 = rank(w, T, u, w[e + CE_REL], lo, bits, counts)
            j = k
            while j > 0:
                q = o + 3 * (j - 1)
                if out[q] > a0 or (out[q] == a0 and (out[q + 1] > a1 or (out[q + 1] == a1 and out[q + 2] > a2))):
                    out[q + 3] = out[q]
                    out[q + 4] = out[q + 1]
                    out[q + 5] = out[q + 2]
                    j -= 1
                else:
                    break
            out[o + 3 * j] = a0
            out[o + 3 * j + 1] = a1
            out[o + 3 * j + 2] = a2
        o += 3 * cn
    return o


@internal
def fingerprint(out, m):
    """A 64-bit hash of out[0:m] (never 0): four independent lanes (word i
    into lane i mod 4: one multiply per word, the lanes' multiplies
    overlap), joined by rotations, a splitmix finish."""
    C = np.uint64(0x9FB21C651E98DF25)
    h0 = np.uint64(0x9E3779B97F4A7C15) ^ np.uint64(m)
    h1 = np.uint64(0xC2B2AE3D27D4EB4F)
    h2 = np.uint64(0x165667B19E3779F9)
    h3 = np.uint64(0x27D4EB2F165667C5)
    s29 = np.uint64(29)
    i = 0
    while i + 4 <= m:
        h0 = (h0 ^ np.uint64(out[i])) * C
        h1 = (h1 ^ np.uint64(out[i + 1])) * C
        h2 = (h2 ^ np.uint64(out[i + 2])) * C
        h3 = (h3 ^ np.uint64(out[i + 3])) * C
        h0 ^= h0 >> s29
        h1 ^= h1 >> s29
        h2 ^= h2 >> s29
        h3 ^= h3 >> s29
        i += 4
    while i < m:
        h0 = (h0 ^ np.uint64(out[i])) * C
        h0 ^= h0 >> s29
        i += 1
    h = h0 ^ ((h1 << np.uint64(17)) | (h1 >> np.uint64(47))) ^ ((h2 << np.uint64(31)) | (h2 >> np.uint64(33))) \
        ^ ((h3 << np.uint64(47)) | (h3 >> np.uint64(17)))
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    h = h ^ (h >> np.uint64(31))
    if h == np.uint64(0):
        h = np.uint64(1)
    return h


@internal
def fp_of(K, w, out, sym, opts):
    m = canon(K, w, out, sym, opts)
    return fingerprint(out, m)


@internal
def expand(K, w, row, succ, tmp, sym, opts):
    """Every successor of `row`, in the model's action order (arrivals,
    turns, iterations; one per sequence of oracle answers), into the
    arrays of the tuple succ = (outs, acts, choices, fps, flags): rows in
    outs, (kind, subject, first choice, number of choices) in acts,
    answers in choices, fingerprints and flags. Returns the count, or -1
    when an output is full, -2 when a spawn needs a larger row."""
    outs, acts, choices, fps, flags = succ
    W = K[H_W]
    if row[R_FAULT] != 0:
        return 0
    n = row[R_NSESS]
    k = 0
    nc = 0
    SC = K[S_SCRIPT]
    AR = K[S_ARITY]
    for kind in range(3):
        nsub = K[H_NST] if kind == A_ITERATE else n
        for subj in range(nsub):
            if kind != A_ITERATE:
                sb = sbase(K, subj)
                r = st_row(K, row[sb + F_PROG], row[sb + F_PC])
                if K[r + ST_KIND] != (K_ARRIVE if kind == A_ARRIVE else K_TURN):
                    continue
            ns = 0
            while True:
                for t in range(W):
                    w[t] = row[t]
                ok = run_step(K, w, kind, subj, 0, 0, 0, ns)
                h = w[R_HALT]
                if h != HALT_NONE and h != HALT_FAULT:
                    return -2
                nq = w[K[S_QPOS]]
                for i in range(ns, nq):
                    w[SC + i] = 0
                if ok:
                    if k >= outs.shape[0] or nc + nq > choices.shape[0]:
                        return -1
                    for t in range(W):
                        outs[k, t] = w[t]
                    acts[k, 0] = kind
                    acts[k, 1] = subj
                    acts[k, 2] = nc
                    acts[k, 3] = nq
                    for i in range(nq):
                        choices[nc + i] = w[SC + i]
                    nc += nq
                    fps[k] = fp_of(K, w, tmp, sym, opts)
                    flags[k] = row_flags(K, w)
                    k += 1
                if w[R_FAULT] == FT_OVERFLOW and w[R_FA0] == 1:
                    break  # more questions than a step may ask: one faulted successor says so
                i = nq - 1
                while i >= 0 and w[SC + i] + 1 >= w[AR + i]:
                    i -= 1
                if i < 0:
                    break
                w[SC + i] += 1
                ns = i + 1
    return k


@internal
def expand_batch(K, w, rows, succ, parent, tmp, sym, opts):
    """`expand` over every row of rows, successors concatenated in row
    order into succ (parent[i]: the row a successor comes from). Same
    return codes."""
    outs, acts, choices, fps, flags = succ
    k = 0
    for j in range(rows.shape[0]):
        c = expand(K, w, rows[j], (outs[k:], acts[k:], choices, fps[k:], flags[k:]), tmp, sym, opts)
        if c < 0:
            return c
        for i in range(k, k + c):
            parent[i] = j
        k += c
    return k
