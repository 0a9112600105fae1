"""The session automaton: a macro step through internal states (advance),
draws and chooses, spawn, join and end (admission is kernel/admission.py).

`advance` drives a stack of frames instead of recursing (see below)."""

from __future__ import annotations

from serq.semantics.kernel.jit import internal

from serq.semantics.kernel.abi import (
    EV_AT_TURN, EV_CHOOSE, EV_DRAW, EV_END, EV_JOINED, EV_SPAWN, F_ARR, F_ATTR, F_LIVE, F_LP0,
    F_LP1, F_NH, F_PARENT, F_PC, F_PROG, F_RD, F_RT, FRAMES, FT_ASSERT, FT_BIG_DOMAIN,
    FT_EMPTY_DOMAIN, FT_MACRO, FT_SPAWN_DEEP, FT_SPAWN_MANY, FT_SPAWN_NEG, H_CAP, H_NA, H_PROGT,
    H_SF, H_TIESALL, HALT_CAP, HS_SCOPE, HW, K_ACQUIRE, K_ASSERT, K_BRANCH, K_CHOOSE, K_DRAW,
    K_DROP, K_END, K_EXIT, K_JOIN, K_RUN, K_SET, K_SPAWN, K_TURN, MACRO_LIMIT, MAX_DOMAIN,
    MAX_SESSIONS, PROG_W, R_HALT, R_NSESS, REQ_ORDER, S_DEPTH, S_FRAMES, S_NFRAMES, S_QSTATE,
    S_QVALS, S_TRIAL, S_VALS, SPAWN_DEPTH,
)
from serq.semantics.kernel.abi import (
    ACQ_GATE, ASSERT_EXPR, BR_ALT, BR_COND, DC_DIST, DC_HI, DC_KEY, DC_LO, DC_NVALS, DC_REAL, DC_SLOT, DC_VALS,
    DROP_POOL, DS_NPARAMS, DS_PARAMS, EXIT_CLOSES, PG_ENTRY, RUN_AMOUNT, RUN_REAL, SA_GIVEN, SA_VALUE, SAW,
    SET_EXPR, SET_SLOT, SPAWN_SPEC, SPN_ATTRS, SPN_COUNT, SPN_COUNT_REAL, SPN_NATTR, SPN_PROG, ST_KIND, ST_NEXT,
)
from serq.semantics.kernel.core import (
    add, ask, b2f, event, f2b, fault, halted, hbase, next_seq, put, sbase, st_row, sub_over, to_int,
)
from serq.semantics.kernel.evaluate import ev, ev_s
from serq.semantics.kernel.pools import (
    drop, enqueue, release_scope,
)

# ---------------------------------------------------------------- draw and choose


@internal
def domain(K, w, sid, r):
    """The values of a draw or choose at w[S_VALS..]: a set keeps first
    occurrences in order; a range lo..hi. Returns the count (0 faults)."""
    V = K[S_VALS]
    nv = K[r + DC_NVALS]
    if nv >= 0:
        n = 0
        for i in range(nv):
            v = ev_s(K, K[K[r + DC_VALS] + i], w, sid)
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
    lo = ev_s(K, K[r + DC_LO], w, sid)
    if halted(K, w):
        return 0
    hi = ev_s(K, K[r + DC_HI], w, sid)
    if halted(K, w):
        return 0
    if hi < lo:
        return 0
    if sub_over(hi, lo) or hi - lo >= MAX_DOMAIN:  # the count hi - lo + 1, told in words from lo and hi
        fault(K, w, FT_BIG_DOMAIN, sid, lo, hi)
        return 0
    n = hi - lo + 1
    for i in range(n):
        w[V + i] = lo + i
    return n


@internal
def draw_index(K, w, sid, r, n):
    """The answer to a draw: the oracle's when there is a choice. The
    distribution's parameters are evaluated (a fault there is a fault) and
    left after the values for the simulator's sampling."""
    spec = K[r + DC_DIST]
    V = K[S_VALS]
    for i in range(K[spec + DS_NPARAMS]):
        v = ev_s(K, K[spec + DS_PARAMS + 2 * i], w, sid)
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


@internal
def choose_index(K, w, sid, r, n):
    key = K[r + DC_KEY]
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
    slot = K[r + DC_SLOT]
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


@internal
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


@internal
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


@internal
def run_states(K, w, sid, budget):
    sb = sbase(K, sid)
    prog = w[sb + F_PROG]
    ab = sb + F_ATTR
    for left in range(budget, 0, -1):
        if halted(K, w):
            return
        pc = w[sb + F_PC]
        r = st_row(K, prog, pc)
        k = K[r + ST_KIND]
        if k == K_SET:
            v = ev_s(K, K[r + SET_EXPR], w, sid)
            if halted(K, w):
                return
            put(K, w, ab + K[r + SET_SLOT], v)
            put(K, w, sb + F_PC, K[r + ST_NEXT])
        elif k == K_BRANCH:
            c = ev_s(K, K[r + BR_COND], w, sid)
            if halted(K, w):
                return
            put(K, w, sb + F_PC, K[r + ST_NEXT] if c != 0 else K[r + BR_ALT])
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
            put(K, w, ab + K[r + DC_SLOT], v)
            event(K, w, EV_DRAW if k == K_DRAW else EV_CHOOSE, (sid, K[r + DC_SLOT], v, K[r + DC_REAL]))
            put(K, w, sb + F_PC, K[r + ST_NEXT])
        elif k == K_TURN:
            event(K, w, EV_AT_TURN, (sid,))
            return
        elif k == K_ACQUIRE:
            enqueue(K, w, sid, K[r + ACQ_GATE], REQ_ORDER)
            return
        elif k == K_RUN:
            total = to_int(K, w, ev_s(K, K[r + RUN_AMOUNT], w, sid), K[r + RUN_REAL] == 1, 1, K[r + RUN_AMOUNT])
            if halted(K, w):
                return
            if total <= 0:  # a zero-work run is a no-op
                put(K, w, sb + F_PC, K[r + ST_NEXT])
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
            put(K, w, sb + F_PC, K[r + ST_NEXT])
        elif k == K_DROP:
            drop(K, w, sid, K[r + DROP_POOL])
            put(K, w, sb + F_PC, K[r + ST_NEXT])
        elif k == K_ASSERT:
            c = ev_s(K, K[r + ASSERT_EXPR], w, sid)
            if halted(K, w):
                return
            if c == 0:
                fault(K, w, FT_ASSERT, sid, pc, 0)
                return
            put(K, w, sb + F_PC, K[r + ST_NEXT])
        elif k == K_EXIT:
            release_scope(K, w, sid, K[r + EXIT_CLOSES])
            if halted(K, w):
                return
            put(K, w, sb + F_LP0, -1)  # the scope was completed: a new one starts afresh
            put(K, w, sb + F_LP1, -1)
            put(K, w, sb + F_PC, K[r + ST_NEXT])
        elif k == K_END:
            finish(K, w, sid)
            return
        else:  # K_ARRIVE
            return
    fault(K, w, FT_MACRO, sid, 0, 0)


@internal
def spawn_start(K, w, sid, r, budget):
    spec = K[r + SPAWN_SPEC]
    n = to_int(K, w, ev_s(K, K[spec + SPN_COUNT], w, sid), K[spec + SPN_COUNT_REAL] == 1, 0, K[spec + SPN_COUNT])
    if halted(K, w):
        return
    if n < 0:
        fault(K, w, FT_SPAWN_NEG, sid, n, 0)
        return
    if n > MAX_SESSIONS - w[R_NSESS]:  # the row's bound on sessions: a larger count is an error
        fault(K, w, FT_SPAWN_MANY, sid, n, 0)
        return
    w[K[S_DEPTH]] += 1
    if w[K[S_DEPTH]] > SPAWN_DEPTH:
        fault(K, w, FT_SPAWN_DEEP, sid, 0, 0)
        return
    push(K, w, FR_SPAWN, sid, n, budget)


@internal
def spawn_next(K, w, sid, left, budget):
    """The next child of a spawn (it runs until it blocks before the one
    after it is made); after the last, the parent goes on."""
    sb = sbase(K, sid)
    r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
    if left == 0:
        w[K[S_DEPTH]] -= 1
        put(K, w, sb + F_PC, K[r + ST_NEXT])
        push(K, w, FR_ADV, sid, 0, budget)
        return
    spec = K[r + SPAWN_SPEC]
    ci = K[spec + SPN_PROG]
    na = K[spec + SPN_NATTR]
    cid = w[R_NSESS]
    if cid >= K[H_CAP]:
        w[R_HALT] = HALT_CAP  # Python grows the row and runs the step again
        return
    TR = K[S_TRIAL]
    for a in range(na):
        if K[spec + SPN_ATTRS + SAW * a + SA_GIVEN]:
            w[TR + a] = ev_s(K, K[spec + SPN_ATTRS + SAW * a + SA_VALUE], w, sid)
            if halted(K, w):
                return
        else:
            w[TR + a] = K[spec + SPN_ATTRS + SAW * a + SA_VALUE]
    cb = sbase(K, cid)
    for f in range(K[H_SF]):
        put(K, w, cb + f, 0)
    put(K, w, R_NSESS, cid + 1)
    put(K, w, cb + F_PROG, ci)
    pt = K[H_PROGT] + PROG_W * ci
    put(K, w, cb + F_PC, K[st_row(K, ci, K[pt + PG_ENTRY]) + ST_NEXT])
    for a in range(na):
        put(K, w, cb + F_ATTR + a, w[TR + a])
    put(K, w, cb + F_PARENT, sid)
    put(K, w, cb + F_ARR, next_seq(K, w))
    put(K, w, cb + F_LP0, -1)
    put(K, w, cb + F_LP1, -1)
    add(K, w, sb + F_LIVE, 1)
    event(K, w, EV_SPAWN, (sid, cid))
    push(K, w, FR_SPAWN, sid, left - 1, budget)
    push(K, w, FR_ADV, cid, 0, MACRO_LIMIT)


@internal
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
    event(K, w, EV_END, (sid,))
    par = w[sb + F_PARENT]
    if par >= 0:
        pb = sbase(K, par)
        add(K, w, pb + F_LIVE, -1)
        r = st_row(K, w[pb + F_PROG], w[pb + F_PC])
        if w[pb + F_LIVE] == 0 and K[r + ST_KIND] == K_JOIN:
            put(K, w, pb + F_PC, K[r + ST_NEXT])
            event(K, w, EV_JOINED, (par,))
            push(K, w, FR_ADV, par, 0, MACRO_LIMIT)
