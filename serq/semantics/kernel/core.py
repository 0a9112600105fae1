"""The kernel's ground floor: table access, writes (with the undo log),
events, faults, the oracle's questions and pool queries (the expression
interpreter is serq.semantics.kernel.evaluate).

The working array `w` is the row (`K[H_W]` ints) followed by scratch; every
write to the row goes through `put`, which logs the old value while a
tentative admission is open, so `undo` restores the row exactly."""

from __future__ import annotations

import numpy as np
from serq.semantics.kernel.jit import internal

from serq.semantics.kernel.abi import (  # the tables' field offsets
    PG_SCOPES, PG_STATES, PG_TYPES, PL_BLOCK, PL_CAP, SCK_PREFIX, SEG_LEN, SEG_PARENT, SEGW,
)
from serq.semantics.kernel.abi import (
    CE_OWNER, CE_UNITS, CW, EVW, FT_NOTINT, FT_OVERFLOW, F_ATTR, F_NH, F_PROG, HALT_ASK, HALT_EVFULL, HALT_FAULT,
    HALT_NONE, HALT_ULOG, HS_OWN, HS_POOL, HS_SCOPE, HS_USE, HW, H_CAP, H_EVCAP, H_MAXQ, H_NA, H_NP, H_NSEG, H_PB,
    H_POOLT, H_PROGT, H_PW, H_SEGT, H_SF, H_ULOGCAP, PF_ALLOC, PF_CACHED, PF_EVICT, PF_FREE, PF_WAITING, POOL_W,
    PROG_W, P_CN, P_FREE, P_Q, P_QN, RHDR, R_EVON, R_FA0, R_FA1, R_FA2, R_FAULT, R_HALT, R_NSESS, R_SEQ, R_ULOG,
    SCP, SCW_BASE, SEG_OWNER, SW, S_ARITY, S_EV, S_EVN, S_FBITS, S_NSCRIPT, S_PSNAP, S_PSNAPON, S_QKIND, S_QN,
    S_QPOS, S_SCRIPT, S_SEGCUR, S_STOPNEW, S_ULOG, S_ULOGN, INT_MAX, INT_MIN, OV_LEVEL,
    FT_UNITS_OVERFLOW, COPY_OWNER, HS_COPY,
)


# ---------------------------------------------------------------- table access


@internal
def sbase(K, sid):
    return RHDR + sid * K[H_SF]


@internal
def pbase(K, p):
    return K[H_PB] + p * K[H_PW]


@internal
def cbase(K, p):
    """The first cache entry of pool p."""
    return K[H_PB] + p * K[H_PW] + P_Q + K[H_CAP]


@internal
def hbase(K, sid):
    return RHDR + sid * K[H_SF] + F_ATTR + K[H_NA]


@internal
def st_row(K, prog, pc):
    return K[K[H_PROGT] + PROG_W * prog + PG_STATES] + SW * pc


@internal
def scope_row(K, prog, sc):
    return K[K[H_PROGT] + PROG_W * prog + PG_SCOPES] + (SCW_BASE + SCP * K[H_NP]) * sc


@internal
def pool_row(K, p):
    return K[H_POOLT] + POOL_W * p


@internal
def attr_type(K, prog, slot):
    return K[K[K[H_PROGT] + PROG_W * prog + PG_TYPES] + slot]


@internal
def nsess(w):
    return w[R_NSESS]


@internal
def halted(K, w):
    return w[R_HALT] != HALT_NONE


# ---------------------------------------------------------------- checked arithmetic
#
# Integers are 64-bit and an operation whose exact result does not fit is
# an error, never a wrapped value. Each test below looks at the operands
# before the operation and never performs an operation that overflows: a
# test made after a wrapping `*` or `+` is one the optimiser may remove
# (numba marks integer arithmetic "no signed wrap", so a wrapped result is
# undefined and any check that looks for one may be folded away).


@internal
def add_over(a, b):
    """Whether a + b leaves the int64 range."""
    return (b > 0 and a > INT_MAX - b) or (b < 0 and a < INT_MIN - b)


@internal
def sub_over(a, b):
    """Whether a - b leaves the int64 range."""
    return (b < 0 and a > INT_MAX + b) or (b > 0 and a < INT_MIN + b)


@internal
def mul_over(a, b):
    """Whether a * b leaves the int64 range. The product in floating point
    (relative error below 4e-16) clears every small product at once; near
    the limit, an exact test by division on the magnitudes."""
    p = float(a) * float(b)
    if -9.2e18 < p < 9.2e18:
        return False
    if a == INT_MIN:
        return b != 1
    if b == INT_MIN:
        return a != 1
    aa = abs(a)
    ab = abs(b)
    lim = INT_MAX // ab
    if aa <= lim:
        return False
    # |a * b| > 2^63 - 1; a negative product of exactly 2^63 still fits
    return not ((a < 0) != (b < 0) and aa - 1 == lim and INT_MAX % ab == ab - 1)


@internal
def ceil_over(x, bs):
    """Whether x >= 0 rounded up to a multiple of bs >= 1 leaves the range."""
    return -(-x // bs) > INT_MAX // bs


# ---------------------------------------------------------------- writes and undo


@internal
def put(K, w, i, v):
    if w[R_ULOG] != 0:
        n = w[K[S_ULOGN]]
        if n >= K[H_ULOGCAP]:
            w[R_HALT] = HALT_ULOG
        else:
            u = K[S_ULOG] + 2 * n
            w[u] = i
            w[u + 1] = w[i]
            w[K[S_ULOGN]] = n + 1
    w[i] = v


@internal
def add(K, w, i, d):
    put(K, w, i, w[i] + d)


@internal
def undo(K, w):
    """Restore every row write since the log was opened."""
    n = w[K[S_ULOGN]]
    for j in range(n - 1, -1, -1):
        u = K[S_ULOG] + 2 * j
        w[w[u]] = w[u + 1]
    w[K[S_ULOGN]] = 0


@internal
def fault(K, w, code, a, b, c):
    """Record a fault (the first one wins) and stop the step."""
    if w[R_FAULT] == 0:
        put(K, w, R_FAULT, code)
        put(K, w, R_FA0, a)
        put(K, w, R_FA1, b)
        put(K, w, R_FA2, c)
    if w[R_HALT] == HALT_NONE:
        w[R_HALT] = HALT_FAULT


@internal
def next_seq(K, w):
    put(K, w, R_SEQ, w[R_SEQ] + 1)
    return w[R_SEQ]


# ---------------------------------------------------------------- events


@internal
def event(K, w, code, args):
    """An event record: its code, then the ints of the tuple `args` (at
    most EVW - 1 of them; the rest of the record is 0), when events are on."""
    if w[R_EVON] == 0:
        return
    n = w[K[S_EVN]]
    if n >= K[H_EVCAP]:
        w[R_HALT] = HALT_EVFULL
        return
    o = K[S_EV] + EVW * n
    w[o] = code
    i = o + 1
    for x in args:
        w[i] = x
        i += 1
    while i < o + EVW:
        w[i] = 0
        i += 1
    w[K[S_EVN]] = n + 1


# ---------------------------------------------------------------- the oracle


@internal
def ask(K, w, n, kind):
    """A question with n options (kind 0: a draw or unkeyed choose, whose
    values are in S_QVALS; 1: a tie). Follows the script; past its end
    answers 0 (the explorer's enumeration) or halts so that Python can ask
    its own oracle (`S_STOPNEW`). Records every question's arity."""
    qp = w[K[S_QPOS]]
    if qp >= K[H_MAXQ]:
        fault(K, w, FT_OVERFLOW, 1, 0, 0)
        return 0
    i = 0
    if qp < w[K[S_NSCRIPT]]:
        i = w[K[S_SCRIPT] + qp]
    elif w[K[S_STOPNEW]] != 0:
        w[K[S_QKIND]] = kind
        w[K[S_QN]] = n
        w[R_HALT] = HALT_ASK
        return 0
    w[K[S_ARITY] + qp] = n
    w[K[S_QPOS]] = qp + 1
    return i


# ---------------------------------------------------------------- pool queries


@internal
def private_for(K, w, sid, p):
    """Units cached under the session's own key."""
    c = cbase(K, p)
    for k in range(w[pbase(K, p) + P_CN]):
        e = c + CW * k
        if w[e + CE_OWNER] == sid:
            return w[e + CE_UNITS]
    return 0


@internal
def level_add(K, w, p, t, x):
    """t + x for a pool level; a sum that leaves the range (a pool without
    a cap holds any number of units) faults."""
    if add_over(t, x):
        fault(K, w, FT_UNITS_OVERFLOW, -1, OV_LEVEL, p)
        return t
    return t + x


@internal
def cache_sum(K, w, p):
    c = cbase(K, p)
    t = 0
    for k in range(w[pbase(K, p) + P_CN]):
        t = level_add(K, w, p, t, w[c + CW * k + CE_UNITS])
    return t


@internal
def hold_of(K, w, sid, p):
    """The offset of the session's first hold on p, or -1."""
    h = hbase(K, sid)
    for j in range(w[sbase(K, sid) + F_NH]):
        if w[h + HW * j + HS_POOL] == p:
            return h + HW * j
    return -1


# ---------------------------------------------------------------- shared prefixes
#
# A prefix q's full blocks in pool p are the units [a, b) of a content that
# begins with it: b = floor(length(q) / block) * block, a the same for its
# parent (0 for none). They live in one cache entry whose owner is
# SEG_OWNER - q and whose units are a prefix of [a, b) (eviction takes the
# tail). A hold naming prefix q uses the shared units [0, ref) with ref =
# min(floor(use / block) * block, b), less its own copies (`copies keep`):
# those are pinned (never evicted). Released copies of q's blocks live in an
# entry of owner COPY_OWNER - q, which no hit reads.


@internal
def seg_parent(K, q):
    return K[K[H_SEGT] + SEGW * q + SEG_PARENT]


@internal
def seg_end(K, q, bs):
    return (K[K[H_SEGT] + SEGW * q + SEG_LEN] // bs) * bs


@internal
def seg_start(K, q, bs):
    par = seg_parent(K, q)
    return 0 if par < 0 else seg_end(K, par, bs)


@internal
def seg_entry(K, w, p, q):
    """The offset of prefix q's cache entry in pool p, or -1."""
    c = cbase(K, p)
    for k in range(w[pbase(K, p) + P_CN]):
        e = c + CW * k
        if w[e + CE_OWNER] == SEG_OWNER - q:
            return e
    return -1


@internal
def seg_units(K, w, p, q):
    e = seg_entry(K, w, p, q)
    return 0 if e < 0 else w[e + CE_UNITS]


@internal
def seg_within(K, x, q):
    """Whether prefix q is x or extends it."""
    while q >= 0:
        if q == x:
            return True
        q = seg_parent(K, q)
    return False


@internal
def seg_depth(K, q):
    d = 0
    q = seg_parent(K, q)
    while q >= 0:
        d += 1
        q = seg_parent(K, q)
    return d


@internal
def seg_ancestor(K, q, up):
    for _ in range(up):
        q = seg_parent(K, q)
    return q


@internal
def hold_seg(K, w, sid, h):
    """The prefix a hold's content begins with (-1: none)."""
    if K[H_NSEG] == 0:
        return -1
    prog = w[sbase(K, sid) + F_PROG]
    sr = scope_row(K, prog, w[h + HS_SCOPE])
    return K[sr + SCW_BASE + SCP * w[h + HS_POOL] + SCK_PREFIX]


@internal
def hold_ref(K, w, sid, h):
    """The shared units a hold uses in place (owned by the cache)."""
    q = hold_seg(K, w, sid, h)
    if q < 0:
        return 0
    bs = K[pool_row(K, w[h + HS_POOL]) + PL_BLOCK]
    # less its own copies (`copies keep`), taken as the last shared blocks it computed
    return min((w[h + HS_USE] // bs) * bs, seg_end(K, q, bs)) - w[h + HS_COPY]


@internal
def pinned(K, w, p, x, skip):
    """The units of prefix x's entry in p that holds use (the hold at
    offset `skip` left out; -1: none)."""
    bs = K[pool_row(K, p) + PL_BLOCK]
    a = seg_start(K, x, bs)
    b = seg_end(K, x, bs)
    m = 0
    for s in range(w[R_NSESS]):
        hb = hbase(K, s)
        for j in range(w[sbase(K, s) + F_NH]):
            h = hb + HW * j
            if h == skip or w[h + HS_POOL] != p:
                continue
            q = hold_seg(K, w, s, h)
            if q < 0 or not seg_within(K, x, q):
                continue
            v = min(max(hold_ref(K, w, s, h) - a, 0), b - a)
            if v > m:
                m = v
    return m


@internal
def entry_evictable(K, w, p, e):
    ow = w[e + CE_OWNER]
    if ow > SEG_OWNER or ow <= COPY_OWNER:  # a session's entry, or released copies: no hold uses them
        return w[e + CE_UNITS]
    return max(w[e + CE_UNITS] - pinned(K, w, p, SEG_OWNER - ow, -1), 0)


@internal
def copy_for(K, w, p, x):
    """Another copy of a block of prefix x in p (`copies keep`): the index
    of the entry of released copies, else -2 - the offset of a hold whose
    own copies include some of x's blocks, else -1."""
    c = cbase(K, p)
    for k in range(w[pbase(K, p) + P_CN]):
        if w[c + CW * k + CE_OWNER] == COPY_OWNER - x:
            return k
    bs = K[pool_row(K, p) + PL_BLOCK]
    a = seg_start(K, x, bs)
    b = seg_end(K, x, bs)
    for s in range(w[R_NSESS]):
        hb = hbase(K, s)
        for j in range(w[sbase(K, s) + F_NH]):
            h = hb + HW * j
            if w[h + HS_POOL] != p or w[h + HS_COPY] == 0:
                continue
            q = hold_seg(K, w, s, h)
            if q < 0 or not seg_within(K, x, q):
                continue
            ref = hold_ref(K, w, s, h)
            if min(ref + w[h + HS_COPY], b) - max(ref, a) > 0:
                return -2 - h
    return -1


@internal
def evictable_sum(K, w, p):
    """Cached units no hold uses: what eviction can free."""
    if K[H_NSEG] == 0:
        return cache_sum(K, w, p)
    c = cbase(K, p)
    t = 0
    for k in range(w[pbase(K, p) + P_CN]):
        t = level_add(K, w, p, t, entry_evictable(K, w, p, c + CW * k))
    return t


@internal
def chain_hit(K, w, sid, p, q):
    """The longest run of cached blocks a content beginning with prefix q
    begins with: q's chain from the root, then the session's own entry."""
    bs = K[pool_row(K, p) + PL_BLOCK]
    d = seg_depth(K, q)
    hit = 0
    for up in range(d, -1, -1):
        x = seg_ancestor(K, q, up)
        a = seg_start(K, x, bs)
        b = seg_end(K, x, bs)
        u = min(seg_units(K, w, p, x), b - a)
        hit += u
        if a + u < b:
            return hit
    return level_add(K, w, p, hit, private_for(K, w, sid, p))


@internal
def reuse_evictable(K, w, p, q, reuse):
    """How much of a hit of `reuse` units is evictable now (a hit on an
    evictable unit takes it, as an allocation would)."""
    if q < 0:
        return reuse
    bs = K[pool_row(K, p) + PL_BLOCK]
    t = max(reuse - seg_end(K, q, bs), 0)
    x = q
    while x >= 0:
        a = seg_start(K, x, bs)
        part = min(seg_end(K, x, bs), reuse) - a
        if part > 0:
            t += max(part - pinned(K, w, p, x, -1), 0)
        x = seg_parent(K, x)
    return t


@internal
def cached_for(K, w, sid, p):
    """`cached(P)` for a session: its hit when a hold naming a prefix is
    being admitted, else the units under its own key."""
    q = w[K[S_SEGCUR] + p]
    if q >= 0:
        return chain_hit(K, w, sid, p, q)
    return private_for(K, w, sid, p)


@internal
def allocated(K, w, p):
    t = 0
    for sid in range(w[R_NSESS]):
        h = hbase(K, sid)
        for j in range(w[sbase(K, sid) + F_NH]):
            if w[h + HW * j + HS_POOL] == p:
                t = level_add(K, w, p, t, w[h + HW * j + HS_OWN])
    return t


@internal
def holders(K, w, p):
    n = 0
    for sid in range(w[R_NSESS]):
        if hold_of(K, w, sid, p) >= 0:
            n += 1
    return n


@internal
def pool_level(K, w, fn, p, sid):
    if fn == PF_CACHED:
        return cached_for(K, w, sid, p) if sid >= 0 else cache_sum(K, w, p)
    if fn == PF_ALLOC:
        return allocated(K, w, p)
    if fn == PF_FREE:
        return w[pbase(K, p) + P_FREE] if K[pool_row(K, p) + PL_CAP] >= 0 else -1
    if fn == PF_WAITING:
        return w[pbase(K, p) + P_QN]
    if fn == PF_EVICT:
        return evictable_sum(K, w, p)
    return holders(K, w, p)


@internal
def snapshot_pools(K, w):
    """Every pool level, for @step expressions (read at the iteration's start)."""
    NP = K[H_NP]
    S = K[S_PSNAP]
    for p in range(NP):
        for fn in range(PF_EVICT + 1):
            w[S + fn * NP + p] = pool_level(K, w, fn, p, -1)


@internal
def pool_query(K, w, fn, p, sid):
    if w[K[S_PSNAPON]] != 0:
        return w[K[S_PSNAP] + fn * K[H_NP] + p]
    return pool_level(K, w, fn, p, sid)


# ---------------------------------------------------------------- reals


@internal
def f2b(K, w, x):
    wf = w.view(np.float64)
    wf[K[S_FBITS]] = x
    return w[K[S_FBITS]]


@internal
def b2f(K, w, v):
    w[K[S_FBITS]] = v
    wf = w.view(np.float64)
    return wf[K[S_FBITS]]


@internal
def real_fits(K, w, x, code):
    """Whether a real's floor, ceil or truncation is an int64; else faults:
    NaN and infinities cannot be converted, a finite real beyond +-2^63
    overflows (2^63 is exact in floating point, the first real too large)."""
    if x != x or x == np.inf or x == -np.inf:
        fault(K, w, FT_NOTINT, code, 0, 0)
        return False
    if x >= 9223372036854775808.0 or x < -9223372036854775808.0:
        fault(K, w, FT_OVERFLOW, code, 0, 0)
        return False
    return True


@internal
def to_int(K, w, raw, real, mode, code):
    """A real result made an int: mode 0 truncates (Python's int()), 1 is
    ceil (math.ceil). Infinite or NaN values fault, and so do finite ones
    beyond the int64 range (integer overflow)."""
    if not real:
        return raw
    x = b2f(K, w, raw)
    if not real_fits(K, w, x, code):
        return 0
    if mode == 1:
        return np.int64(np.ceil(x))
    return np.int64(x)
