"""The kernel's expression interpreter: `ev` runs an expression's
bytecode against the working array, reading attributes, context and pool
levels through the table access of serq.semantics.kernel.core."""

from __future__ import annotations

import numpy as np
from serq.semantics.kernel.jit import internal

from serq.semantics.kernel.abi import (
    FT_DIV0, FT_MOD0, FT_NOVALUE, FT_OVERFLOW, F_ATTR, OP_BOOL, OP_CEIL, OP_CTX, OP_END, OP_FABS,
    OP_FADD, OP_FATTR, OP_FCONST, OP_FDIV, OP_FEQ, OP_FFDIV, OP_FGE, OP_FGT, OP_FLE, OP_FLOOR, OP_FLT, OP_FMAX,
    OP_FMIN, OP_FMOD, OP_FMUL, OP_FNE, OP_FNEG, OP_FSUB, OP_I2F, OP_IABS, OP_IADD, OP_IATTR, OP_ICONST, OP_IEQ,
    OP_IFDIV, OP_IGE, OP_IGT, OP_ILE, OP_ILT, OP_IMAX, OP_IMIN, OP_IMOD, OP_IMUL, OP_INE, OP_INEG, OP_ISUB, OP_JF,
    OP_JMP, OP_JT, OP_NOT, OP_POOL, S_CTX, S_CTXOK, S_STACK, INT_MIN,
    F_LP0, F_NH, F_PC, F_PROG, HS_OWN, HS_POOL, HW, K_ACQUIRE, K_ARRIVE, K_END, K_JOIN, K_RUN, K_TURN, OP_QATTR,
    OP_QFACT, OP_QNEXT, Q_COUNT, Q_EXISTS, Q_FIND, Q_FORALL, QF_DECODING, QF_HELD, QF_JOINING, QF_PREEMPTED,
    QF_PREFILLING, QF_THINKING, QF_WAITING, R_NSESS,
)
from serq.semantics.kernel.abi import (  # the tables' field offsets
    OPND1, OPND2, OPND3, RUN_DECODE, ST_KIND,
)
from serq.semantics.kernel.core import (
    add_over, fault, hbase, mul_over, pool_query, real_fits, sbase, st_row, sub_over,
)


# ---------------------------------------------------------------- sessions, for quantifiers


@internal
def present(K, w, sid):
    """Whether session sid is in the system: arrived and not ended (a
    quantifier's range; docs/language.md, "Quantifiers over sessions")."""
    sb = sbase(K, sid)
    k = K[st_row(K, w[sb + F_PROG], w[sb + F_PC]) + ST_KIND]
    return k != K_ARRIVE and k != K_END


@internal
def session_fact(K, w, sid, fact, p):
    """A fact of session sid (QF_*): 0/1, or the units of pool p it holds."""
    sb = sbase(K, sid)
    r = st_row(K, w[sb + F_PROG], w[sb + F_PC])
    k = K[r + ST_KIND]
    if fact == QF_WAITING:
        return 1 if k == K_ACQUIRE else 0
    if fact == QF_THINKING:
        return 1 if k == K_TURN else 0
    if fact == QF_JOINING:
        return 1 if k == K_JOIN else 0
    if fact == QF_PREFILLING:
        return 1 if k == K_RUN and K[r + RUN_DECODE] == 0 else 0
    if fact == QF_DECODING:
        return 1 if k == K_RUN and K[r + RUN_DECODE] != 0 else 0
    if fact == QF_PREEMPTED:
        return 1 if w[sb + F_LP0] != -1 else 0
    units = 0
    hb = hbase(K, sid)
    for j in range(w[sb + F_NH]):
        if w[hb + HW * j + HS_POOL] == p:
            units += w[hb + HW * j + HS_OWN]
    return units


# ---------------------------------------------------------------- expressions


@internal
def ev(K, pc, w, ab, sid):
    """Evaluate the bytecode at K[pc]; attributes at w[ab + slot] (a session
    record or the trial copy of an admission), pool queries for `sid` (-1:
    none). Returns the raw int64 (an int, a bool as 0/1, or a real's bits)."""
    start = pc
    sp = K[S_STACK]
    wf = w.view(np.float64)
    CX = K[S_CTX]
    while True:
        op = K[pc]
        if op == OP_END:
            return w[sp - 1]
        if op == OP_ICONST or op == OP_FCONST:
            w[sp] = K[pc + OPND1]
            sp += 1
            pc += 2
        elif op == OP_IATTR or op == OP_FATTR:
            w[sp] = w[ab + K[pc + OPND1]]
            sp += 1
            pc += 2
        elif op == OP_CTX:
            c = K[pc + OPND1]
            if (w[K[S_CTXOK]] >> c) & 1 == 0:
                fault(K, w, FT_NOVALUE, start, c, 0)
                return 0
            w[sp] = w[CX + c]
            sp += 1
            pc += 2
        elif op == OP_POOL:
            w[sp] = pool_query(K, w, K[pc + OPND1], K[pc + OPND2], sid)
            sp += 1
            pc += 3
        elif op == OP_JF:
            sp -= 1
            pc = K[pc + OPND1] if w[sp] == 0 else pc + 2
        elif op == OP_JT:
            sp -= 1
            pc = K[pc + OPND1] if w[sp] != 0 else pc + 2
        elif op == OP_JMP:
            pc = K[pc + OPND1]
        elif op >= OP_QNEXT:  # quantifiers over sessions (abi.py, OP_QNEXT)
            if op == OP_QNEXT:
                prog = K[pc + OPND1]
                sid = w[sp - 1] + 1
                while sid < w[R_NSESS] and not (w[sbase(K, sid) + F_PROG] == prog and present(K, w, sid)):
                    sid += 1
                if sid < w[R_NSESS]:
                    w[sp - 1] = sid
                    pc += 3
                else:
                    sp -= 1
                    pc = K[pc + OPND2]
            elif op == OP_QATTR:
                w[sp] = w[sbase(K, w[K[S_STACK] + K[pc + OPND1]]) + F_ATTR + K[pc + OPND2]]
                sp += 1
                pc += 3
            elif op == OP_QFACT:
                w[sp] = session_fact(K, w, w[K[S_STACK] + K[pc + OPND1]], K[pc + OPND2], K[pc + OPND3])
                sp += 1
                pc += 4
            else:  # OP_QSTEP: the stack holds the accumulator, the iterator, the body's value
                kind = K[pc + OPND1]
                sp -= 1
                v = w[sp]
                if (kind == Q_FORALL or kind == Q_FIND) and v == 0 or kind == Q_EXISTS and v != 0:
                    w[sp - 2] = w[sp - 1] if kind == Q_FIND else (1 if kind == Q_EXISTS else 0)
                    sp -= 1
                    pc = K[pc + OPND2]
                else:
                    if kind == Q_COUNT and v != 0:
                        w[sp - 2] += 1
                    pc += 3
        elif op == OP_I2F:
            wf[sp - 1] = np.float64(w[sp - 1])
            pc += 1
        elif op == OP_INEG:
            if w[sp - 1] == INT_MIN:
                fault(K, w, FT_OVERFLOW, start, 0, 0)
                return 0
            w[sp - 1] = -w[sp - 1]
            pc += 1
        elif op == OP_FNEG:
            wf[sp - 1] = -wf[sp - 1]
            pc += 1
        elif op == OP_NOT:
            w[sp - 1] = 1 if w[sp - 1] == 0 else 0
            pc += 1
        elif op == OP_BOOL:
            w[sp - 1] = 1 if w[sp - 1] != 0 else 0
            pc += 1
        elif op == OP_IABS:
            if w[sp - 1] == INT_MIN:
                fault(K, w, FT_OVERFLOW, start, 0, 0)
                return 0
            w[sp - 1] = abs(w[sp - 1])
            pc += 1
        elif op == OP_FABS:
            wf[sp - 1] = abs(wf[sp - 1])
            pc += 1
        elif op == OP_FLOOR or op == OP_CEIL:
            x = wf[sp - 1]
            if not real_fits(K, w, x, start):
                return 0
            w[sp - 1] = np.int64(np.floor(x)) if op == OP_FLOOR else np.int64(np.ceil(x))
            pc += 1
        elif op >= OP_FADD and op <= OP_FMOD or op >= OP_FEQ and op <= OP_FGE or op == OP_FMIN \
                or op == OP_FMAX:
            r = wf[sp - 1]
            l = wf[sp - 2]
            sp -= 1
            if op == OP_FADD:
                wf[sp - 1] = l + r
            elif op == OP_FSUB:
                wf[sp - 1] = l - r
            elif op == OP_FMUL:
                wf[sp - 1] = l * r
            elif op == OP_FDIV or op == OP_FFDIV or op == OP_FMOD:
                if r == 0.0:
                    fault(K, w, FT_MOD0 if op == OP_FMOD else FT_DIV0, start, 0, 0)
                    return 0
                if op == OP_FDIV:
                    wf[sp - 1] = l / r
                elif op == OP_FFDIV:
                    wf[sp - 1] = l // r
                else:
                    wf[sp - 1] = l % r
            elif op == OP_FMIN:
                wf[sp - 1] = l if l <= r else r
            elif op == OP_FMAX:
                wf[sp - 1] = l if l >= r else r
            elif op == OP_FEQ:
                w[sp - 1] = 1 if l == r else 0
            elif op == OP_FNE:
                w[sp - 1] = 1 if l != r else 0
            elif op == OP_FLT:
                w[sp - 1] = 1 if l < r else 0
            elif op == OP_FLE:
                w[sp - 1] = 1 if l <= r else 0
            elif op == OP_FGT:
                w[sp - 1] = 1 if l > r else 0
            else:
                w[sp - 1] = 1 if l >= r else 0
            pc += 1
        else:
            r = w[sp - 1]
            l = w[sp - 2]
            sp -= 1
            v = np.int64(0)
            # + - * test their operands first (see core.add_over): no
            # overflowing operation is performed, so no check is optimised away
            if op == OP_IADD:
                if add_over(l, r):
                    fault(K, w, FT_OVERFLOW, start, 0, 0)
                    return 0
                v = l + r
            elif op == OP_ISUB:
                if sub_over(l, r):
                    fault(K, w, FT_OVERFLOW, start, 0, 0)
                    return 0
                v = l - r
            elif op == OP_IMUL:
                if mul_over(l, r):
                    fault(K, w, FT_OVERFLOW, start, 0, 0)
                    return 0
                v = l * r
            elif op == OP_IFDIV or op == OP_IMOD:
                if r == 0:
                    fault(K, w, FT_DIV0 if op == OP_IFDIV else FT_MOD0, start, 0, 0)
                    return 0
                if r == -1:  # the hardware traps on INT_MIN // -1
                    if op == OP_IMOD:
                        v = 0
                    elif l == INT_MIN:
                        fault(K, w, FT_OVERFLOW, start, 0, 0)
                        return 0
                    else:
                        v = -l
                else:
                    v = l // r if op == OP_IFDIV else l % r
            elif op == OP_IEQ:
                v = 1 if l == r else 0
            elif op == OP_INE:
                v = 1 if l != r else 0
            elif op == OP_ILT:
                v = 1 if l < r else 0
            elif op == OP_ILE:
                v = 1 if l <= r else 0
            elif op == OP_IGT:
                v = 1 if l > r else 0
            elif op == OP_IGE:
                v = 1 if l >= r else 0
            elif op == OP_IMIN:
                v = l if l <= r else r
            elif op == OP_IMAX:
                v = l if l >= r else r
            w[sp - 1] = v
            pc += 1


@internal
def ev_s(K, pc, w, sid):
    """Evaluate for session sid (its own attributes)."""
    return ev(K, pc, w, sbase(K, sid) + F_ATTR, sid)


@internal
def set_ctx(K, w, c, v):
    w[K[S_CTX] + c] = v
    w[K[S_CTXOK]] |= 1 << c


@internal
def clear_ctx(K, w, keep_now):
    """Only `now` stays readable (every moment may read it)."""
    w[K[S_CTXOK]] = (1 << 8) if keep_now else 0
