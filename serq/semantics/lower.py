"""Lower an IR program to the kernel's integer table `K`.

Everything instance-specific lives in `K`: the automaton of every session
program, the scope tree, pools, stages, orders, invariants, and every
expression as typed postfix bytecode (int and real ops are distinct, so the
kernel never guesses a type). The kernel's code never changes with the
instance: a new or edited instance is a new `K`, never a recompile.

`K` also holds the row layout for a session capacity `cap`; `Lowered.table`
rebuilds only the header when the capacity grows (a spawn past it).
"""

from __future__ import annotations

import math
import struct
from typing import NamedTuple

import numpy as np

from serq import ir
from serq.ir.util import walk_expr
from serq.semantics.ranks import rank_flags
from serq.ir.fold import const_eval
from serq.ir.types import infer_type
from serq.semantics.kernel.abi import (
    MAX_DOMAIN,
    ACQ_GATE, ACQ_OPENS, ACQ_SPEC, ASSERT_EXPR, BR_ALT, BR_COND, DC_DIST, DC_HI, DC_KEY, DC_LO, DC_NVALS, DC_REAL,
    DC_SLOT, DC_VALS, DROP_POOL, EXIT_CLOSES, RUN_AMOUNT, RUN_DECODE, RUN_GROWING, RUN_PROGRESS, RUN_REAL, RUN_STAGE,
    SET_EXPR, SET_SLOT, SPAWN_SPEC, TURN_THINK,
    OP_IADD, OP_ISUB, OP_IMUL, OP_IFDIV, OP_IMOD, OP_FADD, OP_FSUB, OP_FMUL, OP_FDIV, OP_FFDIV, OP_FMOD,
    OP_IEQ, OP_INE, OP_ILT, OP_ILE, OP_IGT, OP_IGE, OP_FEQ, OP_FNE, OP_FLT, OP_FLE, OP_FGT, OP_FGE,
    OP_INEG, OP_FNEG, OP_IMIN, OP_IMAX, OP_FMIN, OP_FMAX, OP_IABS, OP_FABS,
    CW, F_ATTR, HEADER, HW, KIND_NAMES, OP_ARGS, OP_BOOL, OP_CEIL, OP_CTX, OP_END, OP_FATTR, OP_FCONST,
    OP_FLOOR, OP_I2F, OP_IATTR, OP_ICONST, OP_JF, OP_JMP, OP_JT, OP_NOT, OP_POOL, P_Q, POOL_FNS,
    REQ_BACK, REQ_FRONT, REQ_ORDER, RHDR, STACK, T_BOOL, T_INT, T_REAL, TIE_ADMITTED, TIE_ARRIVED, TIE_RELEASED,
    CTX_NAMES, H_CAP, H_EVCAP, H_EVPO, H_HMAX, H_INVO, H_KW, H_MAXQ, H_NA, H_NEVP, H_NINV, H_NP,
    H_NPROG, H_NSCOPEMAX, H_NST, H_PB, H_POOLT, H_RANKS,
    H_PROGT, H_PW, H_SF, H_STAGET, H_TIESALL, H_ULOGCAP, H_W, H_WS, EVW, S_ADMITS, S_ARITY, S_CTX,
    S_CTXOK, S_DEPTH, S_EV, S_EVN, S_FBITS, S_KEYS, S_NOW, S_NSCRIPT, S_ORDER, S_PERM, S_PLAN,
    S_QKIND, S_QN,
    S_QPOS, S_QSTATE, S_QVALS, S_RES, S_SCRIPT, S_SERVED, S_SKIP, S_STACK, S_STOPNEW,
    S_TMP, S_TRIAL, S_ULOG, S_ULOGN, S_VALS, S_SSUM, S_FRAMES, S_NFRAMES, S_GIVEN, FRAMES,
    H_NSEG, H_SEGT, S_PSNAP, S_PSNAPON, S_SEGCUR,
    OP_QATTR, OP_QFACT, OP_QNEXT, OP_QSTEP, QF_NAMES,
)
from serq.ir.types import SESSION_FACTS
from serq.semantics.quant import emit_quant

_TYPES = {"int": T_INT, "real": T_REAL, "bool": T_BOOL}
_IBIN = {"+": OP_IADD, "-": OP_ISUB, "*": OP_IMUL, "//": OP_IFDIV, "%": OP_IMOD}
_FBIN = {"+": OP_FADD, "-": OP_FSUB, "*": OP_FMUL, "/": OP_FDIV, "//": OP_FFDIV, "%": OP_FMOD}
_ICMP = {"==": OP_IEQ, "!=": OP_INE, "<": OP_ILT, "<=": OP_ILE, ">": OP_IGT, ">=": OP_IGE}
_FCMP = {"==": OP_FEQ, "!=": OP_FNE, "<": OP_FLT, "<=": OP_FLE, ">": OP_FGT, ">=": OP_FGE}
MAXQ = 4096  # oracle questions in one step
DIST = {"uniform": 0, "weights": 1, "geometric": 2, "poisson": 3}


def f2bits(x: float) -> int:
    return struct.unpack("<q", struct.pack("<d", float(x)))[0]


def bits2f(i: int) -> float:
    return struct.unpack("<d", struct.pack("<q", int(i)))[0]


class ItemCode(NamedTuple):
    """A hold item's clauses as lowered: code offsets in K (-1: none) and
    whether each is a real."""

    pool: int
    reuse: int
    need: int
    take: int
    reuse_real: int
    need_real: int
    take_real: int


class Unlowerable(Exception):
    """An expression names something its moment cannot read (an order key
    over attributes a program lacks): the kernel reads 0, as the model did."""


class Lowered:
    """`K` for one instance and session capacity, and what Python needs to
    turn rows back into words."""

    def __init__(self, program: ir.Program, ties: str):
        self.program = program
        self.ties_all = ties == "all"
        self.pool_ix = {p.name: i for i, p in enumerate(program.pools)}
        self.seg_ix = {s.name: i for i, s in enumerate(program.prefixes)}
        self.stage_ix = {s.name: i for i, s in enumerate(program.stages)}
        self.prog_ix = {s.name: i for i, s in enumerate(program.sessions)}
        self.NP, self.NST, self.NPROG = len(program.pools), len(program.stages), len(program.sessions)
        self.NA = max([len(s.attrs) for s in program.sessions] + [1])
        self.types = [[_TYPES[a.type] for a in sp.attrs] for sp in program.sessions]
        self.type_names = [{a.name: a.type for a in sp.attrs} for sp in program.sessions]
        self.prog_types = {sp.name: self.type_names[i] for i, sp in enumerate(program.sessions)}
        self.slots = [{a.name: i for i, a in enumerate(sp.attrs)} for sp in program.sessions]
        self.HMAX = max([sum(len(sc.pools) for sc in sp.scopes) for sp in program.sessions] + [1])
        self.expr_at: dict[int, tuple | None] = {}  # code offset -> (line, col) of the expression
        self._bound: dict[str, tuple[int, int]] = {}  # a quantifier's variable -> (its stack slot, its program)
        self.code: list[int] = [0] * HEADER
        self._build()

    # ------------------------------------------------------------ expressions
    def etype(self, e, types: dict[str, str]) -> int:
        """The type of `e` (T_INT, T_REAL or T_BOOL), by the front end's one
        type inference (`serq.ir.types.infer_type`) over the attribute types
        `types` (and those of the programs of the quantifiers around it); a
        name not there is read by no program (Unlowerable)."""
        bound = {v: self.type_names[pi] for v, (_h, pi) in self._bound.items()} if self._bound else None
        t = infer_type(e, types, programs=self.prog_types, bound=bound)
        if t == "?":
            raise Unlowerable(e)
        return _TYPES[t]

    def _types(self, prog: int | None) -> dict[str, str]:
        return {} if prog is None else self.type_names[prog]

    def expr(self, e, prog: int | None, want_real: bool = False, find: bool = False) -> int:
        """Emit `e` (for session program `prog`, or None for no session);
        returns its offset in K, or -1 for no expression. `find`: see
        `find_code`."""
        if e is None:
            return -1
        types = self._types(prog)
        slots = {} if prog is None else self.slots[prog]
        out: list[int] = []

        def num(t):  # a number on the stack: bools are 0/1 ints
            return T_REAL if t == T_REAL else T_INT

        def g(e, want: int, h: int) -> None:
            """Emit e leaving a value of type `want` (T_INT or T_REAL) on
            the stack at height h (values below it)."""
            t = num(self.etype(e, types))
            emit(e, h)
            if want == T_REAL and t == T_INT:
                out.append(OP_I2F)

        def emit(e, h: int) -> None:
            if h >= STACK:  # the front end's limits keep every expression within the stack
                raise OverflowError("an expression too deep for the evaluator's stack")
            if isinstance(e, ir.Num):
                if isinstance(e.v, float):
                    out.extend((OP_FCONST, f2bits(e.v)))
                else:
                    if not -(1 << 63) <= e.v < (1 << 63):
                        raise OverflowError(f"constant {e.v} does not fit in 64 bits")
                    out.extend((OP_ICONST, e.v))
            elif isinstance(e, ir.BoolLit):
                out.extend((OP_ICONST, int(e.v)))
            elif isinstance(e, ir.Name):
                if e.name not in slots:
                    raise Unlowerable(e.name)
                out.extend((OP_FATTR if types[e.name] == "real" else OP_IATTR, slots[e.name]))
            elif isinstance(e, ir.Ctx):
                out.extend((OP_CTX, CTX_NAMES.index(e.name)))
            elif isinstance(e, ir.PoolRef):
                out.extend((OP_POOL, POOL_FNS.index(e.fn), self.pool_ix[e.pool]))
            elif isinstance(e, ir.Quant):
                emit_quant(self, e, h, out, g)
            elif isinstance(e, ir.Of):
                ih, pi = self._bound[e.var]
                if e.name in SESSION_FACTS:
                    out.extend((OP_QFACT, ih, QF_NAMES.index(e.name), -1 if e.pool is None else self.pool_ix[e.pool]))
                else:
                    out.extend((OP_QATTR, ih, self.slots[pi][e.name]))
            elif isinstance(e, ir.Un):
                if e.op == "not":
                    g(e.e, T_INT, h)
                    out.append(OP_NOT)
                else:
                    t = num(self.etype(e.e, types))
                    g(e.e, t, h)
                    out.append(OP_FNEG if t == T_REAL else OP_INEG)
            elif isinstance(e, ir.Cond):
                t = num(self.etype(e, types))
                g(e.c, T_INT, h)
                out.extend((OP_JF, -1))
                j1 = len(out) - 1
                g(e.t, t, h)
                out.extend((OP_JMP, -1))
                j2 = len(out) - 1
                out[j1] = len(out)
                g(e.f, t, h)
                out[j2] = len(out)
            elif isinstance(e, ir.Bin):
                if e.op in ("and", "or"):
                    g(e.l, T_INT, h)
                    out.extend((OP_JF if e.op == "and" else OP_JT, -1))
                    j1 = len(out) - 1
                    g(e.r, T_INT, h)
                    out.append(OP_BOOL)
                    out.extend((OP_JMP, -1))
                    j2 = len(out) - 1
                    out[j1] = len(out)
                    out.extend((OP_ICONST, 0 if e.op == "and" else 1))
                    out[j2] = len(out)
                    return
                lt, rt = num(self.etype(e.l, types)), num(self.etype(e.r, types))
                real = e.op == "/" or T_REAL in (lt, rt)
                w = T_REAL if real else T_INT
                g(e.l, w, h)
                g(e.r, w, h + 1)
                if e.op in _ICMP:
                    out.append((_FCMP if real else _ICMP)[e.op])
                else:
                    out.append((_FBIN if real else _IBIN)[e.op])
            elif isinstance(e, ir.Call):
                ts = [num(self.etype(a, types)) for a in e.args]
                if e.fn in ("floor", "ceil"):
                    if ts[0] == T_REAL:
                        g(e.args[0], T_REAL, h)
                        out.append(OP_FLOOR if e.fn == "floor" else OP_CEIL)
                    else:
                        g(e.args[0], T_INT, h)  # floor of an int is the int
                elif e.fn in ("min", "max"):
                    w = T_REAL if T_REAL in ts else T_INT
                    g(e.args[0], w, h)
                    for a in e.args[1:]:
                        g(a, w, h + 1)
                        if e.fn == "min":
                            out.append(OP_FMIN if w == T_REAL else OP_IMIN)
                        else:
                            out.append(OP_FMAX if w == T_REAL else OP_IMAX)
                elif e.fn == "abs":
                    g(e.args[0], ts[0], h)
                    out.append(OP_FABS if ts[0] == T_REAL else OP_IABS)
                else:
                    raise TypeError(f"unknown function {e.fn}")
            else:
                raise TypeError(e)

        if find:
            emit_quant(self, e, 0, out, g, find=True)
        else:
            g(e, T_REAL if want_real else num(self.etype(e, types)), 0)
        out.append(OP_END)
        base = len(self.code)
        i = 0
        while i < len(out):  # jump targets become absolute offsets in K
            op = out[i]
            if op in (OP_JF, OP_JT, OP_JMP):
                out[i + 1] += base
            elif op in (OP_QNEXT, OP_QSTEP):
                out[i + 2] += base
            i += 1 + OP_ARGS.get(op, 0)
        self.code.extend(out)
        self.expr_at[base] = e.at
        return base

    def find_code(self, e) -> int:
        """For a `forall` (an invariant), code whose value is the id of the
        first session present that breaks it, or -1: the session a
        counterexample names; for an `exists` (a `sometimes`), the first
        that meets it. -1 for any other expression."""
        if not isinstance(e, ir.Quant) or e.q == "count":
            return -1
        return self.expr(e, None, find=True)

    def is_real(self, e, prog: int | None) -> int:
        if e is None:
            return 0
        return int(self.etype(e, self._types(prog)) == T_REAL)

    def const_value(self, e):
        """A constant expression's value, as the language folds it."""
        return const_eval(e)

    # ------------------------------------------------------------ tables
    def _order(self, o: ir.Order | None) -> int:
        if o is None:
            return -1
        keys = []
        real = 0
        for k in o.keys:
            per = []
            for pi in range(self.NPROG):
                try:
                    per.append((self.expr(k.e, pi), self.is_real(k.e, pi)))
                except Unlowerable:
                    per.append((-1, 0))
            try:
                glob = (self.expr(k.e, None), self.is_real(k.e, None))
            except Unlowerable:
                glob = (-1, 0)
            real |= any(r for _, r in per) or glob[1]
            keys.append((int(k.desc), per, glob))
        tie = {"arrived": TIE_ARRIVED, "admitted": TIE_ADMITTED, "released": TIE_RELEASED}[o.tie.event]
        rec = [len(o.keys), tie, int(o.tie.desc), int(bool(o.keys)), int(real)]
        for desc, per, glob in keys:
            rec.append(desc)
            for c, r in per:
                rec.extend((c, r))
            rec.extend(glob)
        base = len(self.code)
        self.code.extend(rec)
        return base

    def _build(self) -> None:
        program, code = self.program, self.code
        self.maxkeys = 0
        for o in [p.queue for p in program.pools] + [p.victim for p in program.pools if p.victim] + \
                 [p.evict for p in program.pools] + [s.serve for s in program.stages]:
            self.maxkeys = max(self.maxkeys, len(o.keys))
        pool_rows = []
        for p in program.pools:
            pool_rows.append([p.cap if p.cap is not None else -1, p.block,
                              self.stage_ix[p.admit_via] if p.admit_via is not None else -1,
                              self._order(p.queue), self._order(p.victim), self._order(p.evict),
                              {"front": REQ_FRONT, "back": REQ_BACK, "order": REQ_ORDER}[p.requeue],
                              0 if p.hol == "block" else 1, 0, 1 if p.copies == "keep" else 0,
                              1 if p.cache == "scheduled" else 0])
        stage_rows = []
        self.stage_code: list[dict[str, tuple[int, int]]] = []  # per stage: clause -> (code, real)
        for s in program.stages:
            via = [i for i, p in enumerate(program.pools) if p.admit_via == s.name]
            b, c, o = self.expr(s.budget, None), self.expr(s.chunk, None), self._order(s.serve)
            vo = len(code)
            code.extend(via)
            reads_pools = any(isinstance(x, ir.PoolRef) for e in (s.budget, s.chunk) for x in walk_expr(e))
            cost = self.expr(s.cost, None)  # its own type: an int cost is exact (the simulator rounds a real)
            stage_rows.append([b, c, o, len(via), vo, cost, int(s.self_preempt == "continue"), int(reads_pools)])
            self.stage_code.append({"budget": (b, self.is_real(s.budget, None)),
                                    "chunk": (c, self.is_real(s.chunk, None)),
                                    "cost": (cost, self.is_real(s.cost, None))})
        segt = len(code)
        for pf in program.prefixes:
            code.extend((pf.length, self.seg_ix[pf.parent] if pf.parent is not None else -1))
        event_pools = [i for i, p in enumerate(program.pools) if p.admit_via is None]
        self.event_pools = event_pools
        evo = len(code)
        code.extend(event_pools)
        invs = [self.expr(c.e, None) for c in program.checks if c.kind == "invariant"]
        # `check sometimes` conditions: lowered as invariants are, their code
        # offsets after the invariants' (H_NINV counts the invariants alone)
        somes = [self.expr(c.e, None) for c in program.checks if c.kind == "sometimes"]
        invo = len(code)
        code.extend(invs + somes)
        self.invariants = [c for c in program.checks if c.kind == "invariant"]
        self.sometimes = [c for c in program.checks if c.kind == "sometimes"]
        # who breaks a `forall` invariant, who meets an `exists` witness (-1: no such code)
        self.inv_find = [self.find_code(c.e) for c in self.invariants]
        self.some_find = [self.find_code(c.e) for c in self.sometimes]

        prog_rows = []
        self.state_rows: list[list[list[int]]] = []
        self.hold_codes: dict[tuple[int, int], list[ItemCode]] = {}  # (program, pc) of an acquire -> its items
        for pi, sp in enumerate(program.sessions):
            slots = self.slots[pi]
            rows = []
            for st in sp.states:
                nxt = getattr(st, "next", None)
                at = st.at[0] if st.at else -1
                # a state row (abi.SW): kind, next, scope, the fields a..f (named by kind below), line
                r = [KIND_NAMES.index(st.kind), -1 if nxt is None else nxt, st.scope, -1, -1, -1, -1, -1, -1, at]
                k = st.kind
                if k == "set":
                    r[SET_SLOT], r[SET_EXPR] = slots[st.attr], self.expr(st.e, pi, self.types[pi][slots[st.attr]] == T_REAL)
                elif k == "branch":
                    r[BR_COND], r[BR_ALT] = self.expr(st.cond, pi), st.alt
                elif k in ("draw", "choose"):
                    d = st.domain
                    slot = slots[st.attr]
                    real = self.types[pi][slot] == T_REAL
                    r[DC_SLOT] = slot
                    if d.values:
                        offs = [self.expr(v, pi, real) for v in d.values]
                        vo = len(code)
                        code.extend(offs)
                        r[DC_NVALS], r[DC_VALS] = len(offs), vo
                    else:
                        r[DC_NVALS], r[DC_LO], r[DC_HI] = -1, self.expr(d.lo, pi), self.expr(d.hi, pi)
                    if k == "choose":
                        r[DC_KEY] = self.expr(st.key, pi, True) if st.key is not None else -1
                    else:
                        dist = st.dist
                        spec = [DIST[dist.name] if dist else 0, len(dist.params) if dist else 0]
                        for prm in (dist.params if dist else ()):
                            spec.extend((self.expr(prm, pi), self.is_real(prm, pi)))
                        so = len(code)
                        code.extend(spec)
                        r[DC_DIST] = so
                    r[DC_REAL] = int(real)
                elif k == "turn":
                    r[TURN_THINK] = self.expr(st.think, pi, True)
                elif k == "acquire":
                    h = st.hold
                    spec = [len(h.bindings)]
                    for bnd in h.bindings:
                        sl = slots[bnd.attr]
                        spec += [sl, self.expr(bnd.e, pi, self.types[pi][sl] == T_REAL)]
                    spec += [self.expr(h.admit_if, pi), len(h.items)]
                    items = []
                    for it in h.items:
                        ic = ItemCode(self.pool_ix[it.pool], self.expr(it.reuse, pi), self.expr(it.need, pi),
                                      self.expr(it.take, pi), self.is_real(it.reuse, pi), self.is_real(it.need, pi),
                                      self.is_real(it.take, pi))
                        items.append(ic)
                        spec += [*ic, self.seg_ix[it.prefix] if it.prefix is not None else -1]
                    self.hold_codes[pi, len(rows)] = items
                    so = len(code)
                    code.extend(spec)
                    r[ACQ_OPENS], r[ACQ_GATE], r[ACQ_SPEC] = st.opens, self.pool_ix[h.items[0].pool], so
                elif k == "run":
                    r[RUN_AMOUNT] = self.expr(st.amount, pi)
                    r[RUN_STAGE] = self.stage_ix[st.stage]
                    r[RUN_GROWING] = self.pool_ix[st.growing] if st.growing else -1
                    r[RUN_PROGRESS] = slots[st.progress] if st.progress else -1
                    r[RUN_DECODE] = int(st.run == "decode")
                    r[RUN_REAL] = self.is_real(st.amount, pi)
                elif k == "spawn":
                    ci = self.prog_ix[st.program]
                    child = program.sessions[ci]
                    given = dict(st.args)
                    spec = [ci, self.expr(st.count, pi), self.is_real(st.count, pi), len(child.attrs)]
                    for a in child.attrs:  # the child's initial attributes, slot by slot
                        cs = self.slots[ci][a.name]
                        creal = self.types[ci][cs] == T_REAL
                        prm = next((x for x in child.params if x.name == a.name), None)
                        if prm is not None and a.name in given:
                            spec += [1, self.expr(given[a.name], pi, creal)]  # evaluated by the parent
                        elif prm is not None and prm.default is not None:
                            v = self.const_value(prm.default)
                            spec += [0, f2bits(v) if creal else int(v)]
                        else:
                            spec += [0, f2bits(0.0) if creal else 0]
                    so = len(code)
                    code.extend(spec)
                    r[SPAWN_SPEC] = so
                elif k == "drop":
                    r[DROP_POOL] = self.pool_ix[st.pool]
                elif k == "assert":
                    r[ASSERT_EXPR] = self.expr(st.e, pi)
                elif k == "exit":
                    r[EXIT_CLOSES] = st.closes
                rows.append(r)
            self.state_rows.append(rows)
            scopes = []
            for sc in sp.scopes:
                keep = [0, -1, -1] * self.NP  # per pool: keep mode, keep amount, prefix
                for kk in sc.keep:
                    p = self.pool_ix[kk.pool]
                    keep[3 * p] = 1 if kk.full else (3 if self.is_real(kk.e, pi) else 2)
                    keep[3 * p + 1] = -1 if kk.full else self.expr(kk.e, pi)
                if sc.acquire is not None:
                    for it in sp.states[sc.acquire].hold.items:
                        if it.prefix is not None:
                            keep[3 * self.pool_ix[it.pool] + 2] = self.seg_ix[it.prefix]
                scopes.append([sc.parent if sc.parent is not None else -1,
                               sc.reentry if sc.reentry is not None else -1,
                               sc.exit if sc.exit is not None else -1,
                               sc.acquire if sc.acquire is not None else -1] + keep)
            progress = sorted({slots[st.progress] for st in sp.states if st.kind == "run" and st.progress})
            so = len(code)
            for r in rows:
                code.extend(r)
            sco = len(code)
            for r in scopes:
                code.extend(r)
            po = len(code)
            code.extend(progress)
            to = len(code)
            code.extend(self.types[pi] + [T_INT] * (self.NA - len(self.types[pi])))
            prog_rows.append([sp.entry, so, sco, len(progress), po, len(sp.scopes), to, len(rows)])
        self.nscopemax = max([len(sp.scopes) for sp in program.sessions] + [1])
        pt = len(code)
        for r in prog_rows:
            code.extend(r)
        plt = len(code)
        for r in pool_rows:
            code.extend(r)
        stt = len(code)
        for r in stage_rows:
            code.extend(r)
        self.stage_rows = stage_rows
        code[H_NPROG], code[H_NP], code[H_NST], code[H_NA], code[H_HMAX] = \
            self.NPROG, self.NP, self.NST, self.NA, self.HMAX
        code[H_PROGT], code[H_POOLT], code[H_STAGET] = pt, plt, stt
        code[H_NEVP], code[H_EVPO], code[H_TIESALL] = len(event_pools), evo, int(self.ties_all)
        code[H_NINV], code[H_INVO], code[H_MAXQ] = len(invs), invo, MAXQ
        code[H_NSCOPEMAX], code[H_KW] = self.nscopemax, self.maxkeys + 3
        code[H_NSEG], code[H_SEGT] = len(program.prefixes), segt
        code[H_RANKS] = rank_flags(program)
        self.maxvals = max([len(st.domain.values) for sp in program.sessions for st in sp.states
                            if st.kind in ("draw", "choose")] + [1])

    # ------------------------------------------------------------ layout
    def table(self, cap: int, evcap: int = 0) -> tuple[np.ndarray, int]:
        """K for a session capacity `cap`; returns (K, size of the working
        array)."""
        code = list(self.code)
        NA, NP, HMAX = self.NA, self.NP, self.HMAX
        SF = F_ATTR + NA + HW * HMAX
        PB = RHDR + cap * SF
        # cache: one entry per session or prefix, and one per prefix for its released copies (`copies keep`)
        segs = len(self.program.prefixes) * (2 if any(p.copies == "keep" for p in self.program.pools) else 1)
        PW = P_Q + cap + CW * (cap + segs)
        W = PB + NP * PW
        evcap = evcap or max(256, 16 * cap)
        off = W
        slots = {}

        def take(name, n):
            nonlocal off
            slots[name] = off
            off += n

        KW = self.maxkeys + 3
        for name, n in ((S_QPOS, 1), (S_NSCRIPT, 1), (S_STOPNEW, 1), (S_SCRIPT, MAXQ), (S_ARITY, MAXQ),
                        (S_QKIND, 1), (S_QN, 1), (S_QSTATE, 2), (S_CTX, len(CTX_NAMES)), (S_CTXOK, 1), (S_STACK, STACK),
                        (S_ULOGN, 1), (S_ULOG, 2 * (4 * W + 4096)), (S_EVN, 1),
                        (S_EV, EVW * evcap), (S_SERVED, cap), (S_ORDER, cap), (S_RES, cap),
                        (S_KEYS, (cap + 2) * KW), (S_TMP, (4 + HMAX + NP) * cap + 16), (S_TRIAL, NA), (S_PLAN, 2 * NP + 2),
                        (S_ADMITS, 1), (S_DEPTH, 1), (S_FBITS, 1), (S_NOW, 1), (S_SKIP, cap),
                        (S_PERM, 3 * cap + 4),
                        (S_SSUM, 1), (S_FRAMES, 4 * FRAMES), (S_NFRAMES, 1), (S_GIVEN, 2),
                        (S_PSNAP, len(POOL_FNS) * NP + 1), (S_PSNAPON, 1), (S_SEGCUR, NP + 1),
                        # last: room for the widest range domain, away from the hot scratch
                        (S_QVALS, MAX_DOMAIN), (S_VALS, 2 * MAX_DOMAIN + 64)):
            take(name, n)
        for k, v in slots.items():
            code[k] = v
        code[H_CAP], code[H_SF], code[H_PB], code[H_PW], code[H_W], code[H_WS] = cap, SF, PB, PW, W, off
        code[H_ULOGCAP], code[H_EVCAP] = 4 * W + 4096, evcap
        return np.array(code, np.int64), off


_LOWERED: dict[tuple[int, str], Lowered] = {}  # the last few programs lowered, by identity and ties
_KEEP = 8


def lower(program: ir.Program, ties: str) -> Lowered:
    """The program's table, lowered once: the IR is frozen, so a program
    lowers to one table, and a table is only read (each engine lays out
    its own `K` from it). Every model of one program in a process (the
    search's, its threads', the point of no return's, the trace words')
    shares it; the last few programs are kept."""
    key = (id(program), ties)
    low = _LOWERED.pop(key, None)
    if low is None or low.program is not program:
        low = Lowered(program, ties)
    _LOWERED[key] = low  # the newest last
    while len(_LOWERED) > _KEEP:
        _LOWERED.pop(next(iter(_LOWERED)))
    return low


def initial_attrs(low: Lowered, prog: int, args) -> list:
    """A workload session's attributes: its arguments and defaults, folded."""
    sp = low.program.sessions[prog]
    attrs = [False if a.type == "bool" else 0 for a in sp.attrs]
    given = dict(args)
    for p in sp.params:
        e = given.get(p.name, p.default)
        if e is None:
            continue
        attrs[low.slots[prog][p.name]] = const_eval(e)
    return attrs


def weights(dist: int, params: list, values: list, listed: list | None = None, num=float) -> list:
    """A draw's distribution over its (distinct) values, the simulator
    samples it (the weights need not sum to 1: it samples in proportion).
    `listed`: the domain's values as written (constants, one per weight), so
    a value listed twice gets the sum of its weights. `num` makes a number
    of a parameter: float for the simulator, an exact rational for
    `serq explore --probability` (serq/check/prob.py); poisson's weights are
    floats whatever `num` (e^-λ is not rational)."""
    if dist == DIST["uniform"]:
        return [num(1)] * len(values)
    if dist == DIST["weights"]:
        if listed is None or len(listed) != len(params):
            return [num(p) for p in params]
        total = {v: num(0) for v in values}
        for v, p in zip(listed, params):
            total[v] += num(p)
        return [total[v] for v in values]
    if dist == DIST["geometric"]:
        p = num(params[0])
        lo = min(values)
        return [p * (1 - p) ** (v - lo) for v in values]
    if dist == DIST["poisson"]:
        lam = params[0]
        return [math.exp(-lam) * lam ** v / math.factorial(v) if v >= 0 else 0.0 for v in values]
    return [num(1)] * len(values)
