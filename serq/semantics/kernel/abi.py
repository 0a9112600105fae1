"""The kernel's binary interface: the slots of the table `K` that
`serq.semantics.lower` builds, the fields of a row, the expression op codes,
fault codes and event codes. Plain integer constants: numba freezes them
into the compiled kernel, so a change here needs a fresh numba cache
(`serq.semantics.kernel.__init__` keys the cache on this file's content)."""

# ---------------------------------------------------------------- K header
(H_NPROG, H_NP, H_NST, H_NA, H_HMAX, H_CAP, H_SF, H_PB, H_PW, H_W, H_PROGT, H_POOLT,
 H_STAGET, H_NEVP, H_EVPO, H_TIESALL, H_NINV, H_INVO, H_WS, H_MAXQ, H_ULOGCAP, H_EVCAP,
 H_NSCOPEMAX, H_KW,
 # scratch offsets inside the working array (after the row)
 S_QPOS, S_NSCRIPT, S_STOPNEW, S_SCRIPT, S_ARITY, S_QKIND, S_QN, S_QVALS, S_QSTATE,
 S_CTX, S_CTXOK, S_STACK, S_ULOGN, S_ULOG, S_EVN, S_EV, S_SERVED, S_ORDER,
 S_RES, S_KEYS, S_TMP, S_TRIAL, S_PLAN, S_ADMITS, S_DEPTH, S_FBITS, S_NOW, S_SKIP,
 S_PERM, S_VALS, S_SSUM, S_FRAMES, S_NFRAMES,
 # shared prefixes: their number and table (length, parent per prefix)
 H_NSEG, H_SEGT,
 # pool levels at an iteration's start (POOL_FNS x pools), whether @step reads
 # them now, and the prefix of the hold being admitted per pool (-1: none)
 S_PSNAP, S_PSNAPON, S_SEGCUR,
 # the tokens a victim served earlier in the iteration gives back, and the pool
 # they grew (`cache scheduled`: its release caches the blocks they fill)
 S_GIVEN,
 # what the instance's orders can read of the sequence numbers (RK_* bits, serq/semantics/ranks.py)
 H_RANKS) = range(64)
HEADER = 64
# H_RANKS: the rank reduction (`--reduce ranks`) is exact here (no declared order key reads a
# sequence number); no arrival is ever decisive in an order; a session that holds nothing has a
# dead admission; no order reads a session's admission
RK_OK, RK_ARR_DEAD, RK_ADM_FREE, RK_ADM_NONE = 1, 2, 4, 8
# the canonical form's options (`opts`): keep preemption positions, reduce ranks
CO_KEEP_POS, CO_RANKS = 1, 2
FRAMES = 2 * 200 + 64  # the advance driver's frames (spawn nesting is at most SPAWN_DEPTH)
STACK = 80  # expression stack slots: an expression nests at most 64 deep, and 8 quantifiers take 2 more each

# ---------------------------------------------------------------- row
# row header
R_NSESS, R_SEQ, R_FAULT, R_FA0, R_FA1, R_FA2, R_FA3, R_ULOG, R_HALT, R_EVON = range(10)
# R_ULOG (1 while a tentative admission logs its writes), R_HALT (why a step
# stopped) and R_EVON (events recorded) are the step's flags, at fixed slots
# so that the hot paths test them with one load; they are 0 between steps
# (R_HALT stays set in a faulted row)
RHDR = 12
# session record
(F_PROG, F_PC, F_RD, F_RT, F_PARENT, F_LIVE, F_ARR, F_ADM, F_LP0, F_LP1, F_STUCK, F_NH) = range(12)
F_ATTR = 12
HW = 6  # a hold: scope, pool, own, use, admitted, copies
HS_SCOPE, HS_POOL, HS_OWN, HS_USE, HS_ADM, HS_COPY = range(6)
# copies: the units of shared blocks the hold computed when the cache had them
# already, kept as its own (`copies keep`); they are part of own
# pool record: free, queue length, cache length, queue[CAP], cache[CAP][CW]
P_FREE, P_QN, P_CN = range(3)
P_Q = 3
CW = 4  # a cache entry: owner, units, released, tick
CE_OWNER, CE_UNITS, CE_REL, CE_TICK = range(4)

# ---------------------------------------------------------------- program tables
# (a field's offset inside its record: K[r + ST_NEXT] is state row r's next state)
PROG_W = 8  # entry, states, scopes, nprogress, progress, nscopes, types, nstates
PG_ENTRY, PG_STATES, PG_SCOPES, PG_NPROGRESS, PG_PROGRESS, PG_NSCOPES, PG_TYPES, PG_NSTATES = range(8)
SW = 10  # state row: kind next scope a b c d e f at
ST_KIND, ST_NEXT, ST_SCOPE, ST_A, ST_B, ST_C, ST_D, ST_E, ST_F, ST_AT = range(10)
# the fields a..f by the state's kind
SET_SLOT, SET_EXPR = ST_A, ST_B
BR_COND, BR_ALT = ST_A, ST_B  # the state when the condition is false
# draw and choose: listed values (DC_NVALS of them, their expressions at DC_VALS) or a range (DC_NVALS
# -1, DC_LO..DC_HI); a choose's key (-1: none) or a draw's distribution spec; whether the slot is real
DC_SLOT, DC_NVALS, DC_VALS, DC_LO, DC_HI, DC_KEY, DC_DIST, DC_REAL = ST_A, ST_B, ST_C, ST_C, ST_D, ST_E, ST_E, ST_F
TURN_THINK = ST_A
ACQ_OPENS, ACQ_GATE, ACQ_SPEC = ST_A, ST_B, ST_C  # the scope it opens, its first item's pool, the hold spec
RUN_AMOUNT, RUN_STAGE, RUN_GROWING, RUN_PROGRESS, RUN_DECODE, RUN_REAL = ST_A, ST_B, ST_C, ST_D, ST_E, ST_F
SPAWN_SPEC = ST_A
DROP_POOL = ST_A
ASSERT_EXPR = ST_A
EXIT_CLOSES = ST_A
# a draw's distribution spec: kind, number of parameters, then (expr, real) per parameter
DS_KIND, DS_NPARAMS, DS_PARAMS = range(3)
# a hold spec: bindings (AQ_NBIND, then BDW per binding), then its items' part
AQ_NBIND, AQ_BIND = range(2)
BD_SLOT, BD_EXPR = range(2)
BDW = 2
AI_ADMIT_IF, AI_NITEMS, AI_ITEMS = range(3)  # offsets from the end of the bindings
IW = 8  # a hold item: pool, reuse need take (expressions), whether each is real, prefix (-1: none)
IT_POOL, IT_REUSE, IT_NEED, IT_TAKE, IT_REUSE_REAL, IT_NEED_REAL, IT_TAKE_REAL, IT_PREFIX = range(8)
# a spawn spec: the child's program, the count (expr, real), the number of attributes, then per attribute
# whether the parent evaluates it (SA_GIVEN) and its expression or value (SA_VALUE)
SPN_PROG, SPN_COUNT, SPN_COUNT_REAL, SPN_NATTR, SPN_ATTRS = range(5)
SA_GIVEN, SA_VALUE = range(2)
SAW = 2
SCW_BASE = 4  # scope row: parent reentry exit acquire, then (mode, expr, prefix) per pool
SC_PARENT, SC_REENTRY, SC_EXIT, SC_ACQUIRE = range(4)
SCP = 3  # scope row entries per pool
SCK_MODE, SCK_EXPR, SCK_PREFIX = range(3)
POOL_W = 11  # cap block via queue victim evict requeue hol name copies(1: keep) cache(1: scheduled)
PL_CAP, PL_BLOCK, PL_VIA, PL_QUEUE, PL_VICTIM, PL_EVICT, PL_REQUEUE, PL_HOL, PL_NAME, PL_COPIES, PL_CACHE = \
    range(11)
STAGE_W = 8  # budget chunk serve nvia via cost self_preempt(1: continue) reads_pools
SG_BUDGET, SG_CHUNK, SG_SERVE, SG_NVIA, SG_VIA, SG_COST, SG_CONTINUE, SG_READS_POOLS = range(8)
# an order record: nkeys, tie event, tie desc, implicit, real; then per key (OR_KEYS on): desc, then
# (code, real) per program (OK_CODE + 2 * prog), then the global (code, real)
OR_NKEYS, OR_TIE, OR_TIE_DESC, OR_IMPLICIT, OR_REAL, OR_KEYS = range(6)
OK_DESC, OK_CODE, OK_REAL = range(3)
SEGW = 2  # a shared prefix: length, parent
SEG_LEN, SEG_PARENT = range(2)

K_ARRIVE, K_SET, K_BRANCH, K_DRAW, K_CHOOSE, K_TURN, K_ACQUIRE, K_RUN, K_SPAWN, K_JOIN, K_DROP, \
    K_ASSERT, K_EXIT, K_END = range(14)
KIND_NAMES = ("arrive", "set", "branch", "draw", "choose", "turn", "acquire", "run", "spawn", "join",
              "drop", "assert", "exit", "end")

# attribute types
T_INT, T_REAL, T_BOOL = 0, 1, 2

# ---------------------------------------------------------------- expressions
(OP_END, OP_ICONST, OP_FCONST, OP_IATTR, OP_FATTR, OP_CTX, OP_POOL, OP_I2F,
 OP_IADD, OP_ISUB, OP_IMUL, OP_IFDIV, OP_IMOD,
 OP_FADD, OP_FSUB, OP_FMUL, OP_FDIV, OP_FFDIV, OP_FMOD,
 OP_IEQ, OP_INE, OP_ILT, OP_ILE, OP_IGT, OP_IGE,
 OP_FEQ, OP_FNE, OP_FLT, OP_FLE, OP_FGT, OP_FGE,
 OP_INEG, OP_FNEG, OP_NOT, OP_BOOL, OP_IMIN, OP_IMAX, OP_FMIN, OP_FMAX, OP_IABS, OP_FABS,
 OP_FLOOR, OP_CEIL, OP_JF, OP_JT, OP_JMP,
 # quantifiers over sessions (ops from OP_QNEXT on): QNEXT prog exit moves the iterator on the stack's
 # top to the next session of prog present (arrived, not ended), or pops it and jumps to exit; QATTR h
 # slot pushes an attribute of the session whose id is at stack slot h; QFACT h fact pool pushes one of
 # its facts (QF_*); QSTEP kind exit folds the body's value into the accumulator under the iterator
 OP_QNEXT, OP_QATTR, OP_QFACT, OP_QSTEP) = range(50)
OPND1, OPND2, OPND3 = 1, 2, 3  # an op's operands follow it: K[pc + OPND1]
# operands per op (ops not listed take none)
OP_ARGS = {OP_ICONST: 1, OP_FCONST: 1, OP_IATTR: 1, OP_FATTR: 1, OP_CTX: 1, OP_POOL: 2,
           OP_JF: 1, OP_JT: 1, OP_JMP: 1, OP_QNEXT: 2, OP_QATTR: 2, OP_QFACT: 3, OP_QSTEP: 2}
# QSTEP kinds: forall (stops at the first false: 0), exists (at the first true: 1), count (adds each
# true), find (the first session for which the body is false, -1 when none: who breaks a `forall`)
Q_FORALL, Q_EXISTS, Q_COUNT, Q_FIND = range(4)
# QFACT facts (serq.ir.types.SESSION_FACTS): at an acquire, a turn, a join, a prefill run, a decode
# run; preempted in its current hold (a previous preemption position kept); units of a pool held
QF_WAITING, QF_THINKING, QF_JOINING, QF_PREFILLING, QF_DECODING, QF_PREEMPTED, QF_HELD = range(7)
QF_NAMES = ("waiting", "thinking", "joining", "prefilling", "decoding", "preempted", "held")

# context variables
CTX_NAMES = ("budget_left", "ntok", "ndec", "nreq", "kvb", "age", "size", "last", "now", "arrived",
             "admitted", "released")
CX_BUDGET, CX_NTOK, CX_NDEC, CX_NREQ, CX_KVB, CX_AGE, CX_SIZE, CX_LAST, CX_NOW, CX_ARR, CX_ADM, CX_REL = \
    range(12)
POOL_FNS = ("cached", "allocated", "free", "waiting", "holders", "evictable")
PF_CACHED, PF_ALLOC, PF_FREE, PF_WAITING, PF_HOLDERS, PF_EVICT = range(6)
SEG_OWNER = -3  # a cache entry of shared prefix q has owner SEG_OWNER - q (-2: "no entry" in free_block)
COPY_OWNER = -(1 << 40)  # released copies of prefix q's blocks (`copies keep`): owner COPY_OWNER - q

# order record: nkeys, tie event, tie desc, implicit, real; then per key: desc, code per program, global
TIE_ARRIVED, TIE_ADMITTED, TIE_RELEASED = range(3)
REQ_FRONT, REQ_BACK, REQ_ORDER = range(3)

# ---------------------------------------------------------------- actions and status
A_ARRIVE, A_TURN, A_ITERATE = range(3)
# R_HALT: why a step stopped early
HALT_NONE, HALT_FAULT, HALT_ASK, HALT_CAP, HALT_EVFULL, HALT_ULOG = range(6)

# ---------------------------------------------------------------- faults (kind, message made in words.py)
(FT_NONE, FT_EMPTY_DOMAIN, FT_BIG_DOMAIN, FT_ASSERT, FT_MACRO, FT_SPAWN_MANY, FT_SPAWN_DEEP,
 FT_REUSE_OVER, FT_REUSE_BLOCK, FT_REUSE_NEG, FT_ADMITS, FT_ADMIT_CONS, FT_CONSERV, FT_DIV0, FT_MOD0,
 FT_OVERFLOW, FT_NOVALUE, FT_NOTINT, FT_EXTERNAL, FT_UNITS_OVERFLOW, FT_SPAWN_NEG) = range(21)
# FT_UNITS_OVERFLOW: a count the kernel keeps (a unit or token total, a
# progress attribute) would leave the 64-bit range; its second argument says which
OV_PROGRESS, OV_USE, OV_ROUND, OV_HOLD, OV_CACHE, OV_LEVEL, OV_KVB = range(7)

# ---------------------------------------------------------------- events (EVW ints each)
EVW = 8
(EV_ARRIVE, EV_TURN, EV_DRAW, EV_CHOOSE, EV_AT_TURN, EV_SPAWN, EV_END, EV_JOINED, EV_QUEUED,
 EV_EVICT, EV_RELEASE, EV_DROP, EV_HIT, EV_ADMIT, EV_PREEMPT, EV_STUCK, EV_ITERATE, EV_SERVE,
 EV_RUN_DONE) = range(19)

# limits (as the language documents them)
MACRO_LIMIT = 100_000  # internal states one session may pass in one action
ADMIT_LIMIT = 10_000  # admissions in one action
SPAWN_DEPTH = 200  # spawns nested in one action
MAX_SESSIONS = 100_000  # serq.vocab.MAX_SESSIONS too (the front end's check of a constant spawn count)
MAX_DOMAIN = 100_000
BIG = 1 << 62
INT_MAX = (1 << 63) - 1  # the language's integers are 64-bit: every operation is checked against these
INT_MIN = -(1 << 63)

# ---------------------------------------------------------------- the kernel's one entry (kernel/call.py)
# call(K, w, (op, a1, ..., a6), buf, rows): the operation and what it takes
(CALL_STEP,  # (kind, subj, now, stopnew, evon, nscript), buf: the step's summary; the step's result
 CALL_EXPAND,  # (-, nout, nchoices, sym, opts, W), buf: expand_layout's, rows: the rows; successors, -1 full, -2 row
            # too small
 CALL_FP,  # (sym, opts), buf: scratch; the row's fingerprint (its 64 bits as an int64)
 CALL_CANON,  # (sym, opts), buf: the canonical form; its length
 CALL_FLAGS,  # (): the row's flags (entry.row_flags)
 CALL_EVAL_AT,  # (code, ab, sid, now): entry.eval_at
 CALL_EVAL_SHAPE,  # (code, nreq, ndec, kvb, ntok, now), buf: the fault (entry.eval_shape)
 CALL_EXPLAIN,  # (sid, si, now), buf: the explanation (entry.explain)
 CALL_MIGHT_WORK,  # (si,): 1 if entry.might_work
 CALL_LEVELS,  # (), buf: units allocated per pool (entry.levels)
 CALL_EVICTABLE,  # (p,): core.evictable_sum
 ) = range(11)
