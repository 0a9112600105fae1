"""Entry points called from Python: one step with its scratch set up, the
evaluation of one expression against a row."""

from __future__ import annotations

from serq.semantics.kernel.jit import internal

from serq.semantics.kernel.abi import (
    R_EVON,
    R_HALT,
    R_ULOG,
    F_NH, HS_OWN, HS_POOL, HW, F_PC, F_PROG, F_RD, F_RT, H_NP, H_NST, H_STAGET, K_RUN, P_QN, R_NSESS, STAGE_W, CX_NOW, F_STUCK, HALT_FAULT, HALT_NONE, K_END, R_FAULT, S_CTX, S_CTXOK, S_EVN, S_NOW, S_NSCRIPT, S_QPOS, S_STOPNEW,
    S_ULOGN, S_PSNAPON, S_SEGCUR, BIG, CX_NTOK, R_FA0, R_FA1, R_FA2, R_FA3,
)
from serq.semantics.kernel.abi import (  # the tables' field offsets
    RUN_STAGE, SG_NVIA, SG_VIA, ST_KIND,
)
from serq.semantics.kernel.core import allocated, hbase, pbase, sbase, st_row
from serq.semantics.kernel.evaluate import ev, set_ctx
from serq.semantics.kernel.iterate import shape_ctx, stage_budget, stage_shape, step
from serq.semantics.kernel.admission import explain_admit


@internal
def is_end(K, w, sid):
    sb = sbase(K, sid)
    return K[st_row(K, w[sb + F_PROG], w[sb + F_PC]) + ST_KIND] == K_END


@internal
def row_flags(K, w):
    """bit 0 faulted, bit 1 some session stuck, bit 2 every session ended."""
    f = 1 if w[R_FAULT] != 0 else 0
    done = True
    for sid in range(w[R_NSESS]):
        if w[sbase(K, sid) + F_STUCK]:
            f |= 2
        if not is_end(K, w, sid):
            done = False
    if done:
        f |= 4
    return f


@internal
def prepare(K, w, now, stopnew, evon, nscript):
    w[K[S_QPOS]] = 0
    w[K[S_NSCRIPT]] = nscript
    w[K[S_STOPNEW]] = stopnew
    w[R_EVON] = evon
    w[K[S_EVN]] = 0
    w[R_HALT] = HALT_NONE
    w[R_ULOG] = 0
    w[K[S_ULOGN]] = 0
    w[K[S_NOW]] = now
    w[K[S_CTX] + CX_NOW] = now
    w[K[S_CTXOK]] = 1 << CX_NOW
    w[K[S_PSNAPON]] = 0
    for p in range(K[H_NP]):
        w[K[S_SEGCUR] + p] = -1


@internal
def run_step(K, w, kind, subj, now, stopnew, evon, nscript):
    """One step of the row in w[0:W]; the script of oracle answers is in
    w[S_SCRIPT..] (nscript of them). Returns step's result; w[R_HALT]
    says why it stopped early, if it did."""
    prepare(K, w, now, stopnew, evon, nscript)
    return step(K, w, kind, subj)


@internal
def eval_at(K, w, code, ab, sid, now):
    """An expression against the row in w: attributes at w[ab..] (0: none),
    pool queries for sid (-1: none); only `now` is in the context."""
    prepare(K, w, now, 0, 0, 0)
    return ev(K, code, w, ab, sid)


@internal
def eval_shape(K, w, code, shape, ntok, now, out):
    """An @step expression (a stage's budget, chunk or cost) for an
    iteration of this shape, shape = (nreq, ndec, kvb): its raw value. No
    session, no pools; the context holds nreq, ndec, kvb, ntok and now. The row in w is left as it
    was: a fault's code and arguments go to out[0:5] (out[0] 0: none)."""
    f0, a0, a1, a2, a3, h0 = w[R_FAULT], w[R_FA0], w[R_FA1], w[R_FA2], w[R_FA3], w[R_HALT]
    w[R_FAULT] = 0
    w[R_HALT] = HALT_NONE
    w[K[S_PSNAPON]] = 0
    nreq, ndec, kvb = shape
    shape_ctx(K, w, nreq, ndec, kvb)
    set_ctx(K, w, CX_NTOK, ntok)
    set_ctx(K, w, CX_NOW, now)
    v = ev(K, code, w, 0, -1)
    out[0] = w[R_FAULT] if w[R_HALT] == HALT_FAULT else 0
    out[1] = w[R_FA0]
    out[2] = w[R_FA1]
    out[3] = w[R_FA2]
    out[4] = w[R_FA3]
    w[R_FAULT], w[R_FA0], w[R_FA1], w[R_FA2], w[R_FA3], w[R_HALT] = f0, a0, a1, a2, a3, h0
    return v


@internal
def explain(K, w, sid, si, now, out):
    """Why the queued hold of sid is or is not admitted (the explanation of
    admission.admit_plan, into out), evaluated with the budget an iteration
    of stage si would admit it with (si -1: an event-driven pool)."""
    prepare(K, w, now, 0, 0, 0)
    budget = BIG
    if si >= 0:
        nr, ndec, kvb = stage_shape(K, w, si)
        budget = stage_budget(K, w, si, nr, ndec, kvb)
        if w[R_HALT] != HALT_NONE:
            return
    explain_admit(K, w, sid, budget, out)


@internal
def might_work(K, w, si):
    """False only if an iteration of stage si would certainly do nothing:
    no resident of si and an empty queue in every pool it admits."""
    stt = K[H_STAGET] + STAGE_W * si
    for vi in range(K[stt + SG_NVIA]):
        if w[pbase(K, K[K[stt + SG_VIA] + vi]) + P_QN] > 0:
            return True
    for sid in range(w[R_NSESS]):
        sb = sbase(K, sid)
        r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
        if K[r + ST_KIND] == K_RUN and K[r + RUN_STAGE] == si and w[sb + F_RD] < w[sb + F_RT]:
            return True
    return False


@internal
def levels(K, w, out):
    """Units allocated per pool, into out."""
    for p in range(K[H_NP]):
        out[p] = allocated(K, w, p)


@internal
def run_step_packed(K, w, args, out):
    """run_step with args = (kind, subj, now, stopnew, evon, nscript), then
    what the simulator reads of the successor, in one call: out[0] the
    result, out[1] the row flags, out[2:2+NP] the units allocated per
    pool, out[2+NP:2+NP+NST] whether each stage might work."""
    kind, subj, now, stopnew, evon, nscript = args
    ok = run_step(K, w, kind, subj, now, stopnew, evon, nscript)
    out[0] = ok
    if ok and (w[R_HALT] == HALT_NONE or w[R_HALT] == HALT_FAULT):
        summarize(K, w, out)
    return ok


@internal
def summarize(K, w, out):
    """row_flags, levels and might_work for every stage, in one pass over
    the sessions (a simulated row has thousands)."""
    NP = K[H_NP]
    NST = K[H_NST]
    for i in range(1, 2 + NP + NST):
        out[i] = 0
    done = True
    f = 1 if w[R_FAULT] != 0 else 0
    for sid in range(w[R_NSESS]):
        sb = sbase(K, sid)
        if w[sb + F_STUCK]:
            f |= 2
        r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
        k = K[r + ST_KIND]
        if k != K_END:
            done = False
        if k == K_RUN and w[sb + F_RD] < w[sb + F_RT]:
            out[2 + NP + K[r + RUN_STAGE]] = 1
        hb = hbase(K, sid)
        for j in range(w[sb + F_NH]):
            out[2 + w[hb + HW * j + HS_POOL]] += w[hb + HW * j + HS_OWN]
    if done:
        f |= 4
    out[1] = f
    for si in range(NST):
        if out[2 + NP + si] == 0:
            stt = K[H_STAGET] + STAGE_W * si
            for vi in range(K[stt + SG_NVIA]):
                if w[pbase(K, K[K[stt + SG_VIA] + vi]) + P_QN] > 0:
                    out[2 + NP + si] = 1
