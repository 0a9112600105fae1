"""Step coalescing (seed note section 6): k iterations of one stage at once.

While a stage's resident composition does not change, its iterations
repeat: every resident gets the same tokens, only the runs' positions,
the progress counters and the growing holds move, linearly. Then k of them
can be applied in one go. This module never decides what an iteration
does; it reproduces exactly what k calls of the model's `iterate` would
produce, and it declines (returns None) whenever it cannot prove that.

Two conditions, both required:

* the static **licence** (`licence`), read from the IR: the stage's `cost`
  and `budget` read only the step shape (`ntok`, `ndec`, `nreq`, `kvb`),
  never `now`, attributes or pools, and are piecewise affine in it (`+`,
  `-`, `*` by a constant, `/` by a constant, `min`/`max` of such); `chunk`
  reads only `nreq`/`ndec` (so it is the same in every iteration of a
  block); the serve keys cannot fail (no `/`, `%`); and the instance
  declares no `invariant` (an invariant must see every state).

* the dynamic **condition** (`plan_block`), on the state at an iteration
  start: no queue that could admit during the block is non-empty (pools
  admitted via this stage — the seed's "k = 1" rule — and event-driven
  pools); every resident is decoding, or prefilling a whole `chunk` each
  iteration; no run completes inside the block (the completing iteration
  is left to the model); every finite pool covers the block's growth from
  its free units and, under a key-less evict order (`lru`), its cached
  blocks evicted in that order (so no preemption); the budget covers every
  resident's tokens in every iteration; and no other event (arrival, turn
  return, another stage's iteration end, the horizon) falls before the
  last iteration of the block starts. The caller (the simulator) supplies
  the time limits and checks that no other stage can start meanwhile.

Then the block is computed in closed form per resident (its block
boundaries), costs are evaluated once per distinct `kvb`, and the state
after the block is written directly in the model's encoding.
`tests/sim/test_sim_coalesce.py` checks that runs with and without coalescing
end in equal states and equal reports.
"""

from __future__ import annotations

from dataclasses import dataclass

from serq import ir
from serq.vocab import MAX_INT
from serq.ir.fold import EvalError
from serq.ir.util import walk_expr
from serq.semantics.view import StateView

SHAPE = ("ntok", "ndec", "nreq", "kvb")


# ---------------------------------------------------------------- the licence


def _affine(e, allowed: tuple[str, ...]) -> str | None:
    """None if `e` is piecewise affine in the context variables `allowed`
    (constants otherwise), else the reason it is not."""
    if isinstance(e, ir.Num):
        return None
    if isinstance(e, ir.Ctx):
        return None if e.name in allowed else f"reads `{e.name}`"
    if isinstance(e, ir.Name):
        return f"reads the attribute `{e.name}`"
    if isinstance(e, ir.PoolRef):
        return f"reads `{e.fn}({e.pool})`"
    if isinstance(e, ir.Un) and e.op == "-":
        return _affine(e.e, allowed)
    if isinstance(e, ir.Bin):
        if e.op in ("+", "-"):
            return _affine(e.l, allowed) or _affine(e.r, allowed)
        if e.op == "*":
            if _constant(e.l):
                return _affine(e.r, allowed)
            if _constant(e.r):
                return _affine(e.l, allowed)
            return "multiplies two step variables (not affine)"
        if e.op == "/":
            if _constant(e.r):
                return _affine(e.l, allowed)
            return "divides by a step variable (not affine)"
        return f"uses `{e.op}` (not affine)"
    if isinstance(e, ir.Call) and e.fn in ("min", "max"):
        for a in e.args:
            r = _affine(a, allowed)
            if r:
                return r
        return None
    if isinstance(e, ir.Call):
        return f"calls `{e.fn}` (not piecewise affine)"
    return f"uses a {type(e).__name__.lower()} expression (not affine)"


def _constant(e) -> bool:
    if isinstance(e, ir.Num):
        return True
    if isinstance(e, ir.Un) and e.op == "-":
        return _constant(e.e)
    if isinstance(e, ir.Bin) and e.op in ("+", "-", "*"):
        return _constant(e.l) and _constant(e.r)
    return False


def _can_fail(e) -> bool:
    return any(isinstance(x, ir.Bin) and x.op in ("/", "%") for x in walk_expr(e))


def licence(program: ir.Program) -> list[tuple[bool, str]]:
    """Per stage: (licensed, reason). The reason says why not, or 'ok'."""
    out = []
    for st in program.stages:
        why = None
        if any(c.kind == "invariant" for c in program.checks):
            why = "the instance declares an `invariant`, which must see every state"
        if why is None and st.cost is not None:
            r = _affine(st.cost, SHAPE)
            why = f"`cost` {r}" if r else None
        if why is None and st.budget is not None:
            r = _affine(st.budget, ("nreq", "ndec", "kvb"))
            why = f"`budget` {r}" if r else None
        if why is None and st.chunk is not None:
            r = _affine(st.chunk, ("nreq", "ndec"))
            why = f"`chunk` {r}" if r else None
        if why is None and any(it.prefix is not None for sp in program.sessions for s in sp.states
                               if s.kind == "acquire" for it in s.hold.items):
            why = "a hold shares a prefix (its growth moves blocks to the cache)"
        if why is None and any(_can_fail(k.e) for k in st.serve.keys):
            why = "a `serve` key divides (it could fail in an iteration the block skips)"
        out.append((why is None, why or "ok"))
    return out


# ---------------------------------------------------------------- the block


@dataclass
class Block:
    """k iterations of one stage, applied at once."""

    stage: int
    k: int
    costs: list[int]  # per iteration, ticks
    levels: list[tuple[int, ...]]  # allocated units per pool after each iteration
    served: list[tuple[int, int, bool]]  # (sid, tokens per iteration, decode)
    ntok: int
    state: tuple  # the model state after the k iterations
    evicted: tuple[int, ...] = ()  # cached units evicted per pool by the block's growth
    growing: tuple = ()  # per entry of `served`: the pool its run grows, or None


BLOCK_START = 64  # iterations the first plan of a block may cover
BLOCK_MAX = 1 << 16  # iterations one block covers at most: the work of one plan, between two checks of the limits


def plan_block(m, state, si: int, now: int, t_next: int | None, horizon: int | None,
               levels0, most: int = BLOCK_MAX) -> Block | None:
    """The longest block of iterations of stage `si` from `now` (see
    `_plan`), of at most `most` and BLOCK_MAX iterations. Planning costs time in the
    iterations it covers, and a block usually ends early (at the next
    event), so it is planned for BLOCK_START iterations first, then for
    eight times more while it fills the room it was given: the work is
    that of the block found (within a factor 8/7), never that of all the
    iterations left. A longer run of iterations is several blocks, each
    exactly what the iterations would do one by one."""
    top = min(most, BLOCK_MAX)
    limit = min(BLOCK_START, top)
    while True:
        blk = _plan(m, state, si, now, t_next, horizon, levels0, limit)
        if blk is None or blk.k < limit or limit >= top:
            return blk
        limit = min(limit * 8, top)


def _plan(m, state, si: int, now: int, t_next: int | None, horizon: int | None,
          levels0, limit: int) -> Block | None:
    """The longest block of iterations of stage `si` starting at `now` that
    the dynamic condition allows, or None if it is shorter than 2 (the
    model then runs the iteration itself). `t_next`: the tick of the next
    other event (iteration j >= 1 must start strictly before it);
    `horizon`: no iteration may end after it; `levels0`: allocated units per
    pool in `state`."""
    view = StateView(m.engine, state)  # a packed row is decoded only where read
    if view.fault is not None:
        return None
    # queues that could admit during the block
    for p in m.via[si]:
        if view.queued(p):
            return None
    for p in m.event_pools:
        if view.queued(p):
            return None
    runs = m.runs
    res = view.residents(si)
    sessions = {sid: view.session(sid) for sid in res}
    if not res:
        return None
    nreq = len(res)
    ndec = 0
    chunk = None
    # @step expressions by the kernel's evaluator (the licence: they read only the shape)
    if m.stages[si].chunk is not None:
        shape0 = {"nreq": nreq, "ndec": sum(1 for sid in res if runs[sessions[sid].prog][sessions[sid].pc].decode)}
        try:
            chunk = m.engine.eval_stage(si, "chunk", shape0, now)
        except ValueError:
            return None
    # per resident: tokens per iteration, iterations before its run completes
    kmax = None
    served = []  # (sid, n, decode, g, hold index, use0, own0)
    for sid in res:
        s = sessions[sid]
        run = runs[s.prog][s.pc]
        rem = s.run_total - s.run_done
        if run.decode:
            n = 1
            ndec += 1
        else:
            if chunk is None or chunk <= 0 or rem <= chunk:
                return None  # the prefill completes in this iteration
            n = chunk
        kc = (rem - 1) // n  # iterations that leave the run unfinished
        kmax = kc if kmax is None else min(kmax, kc)
        g = run.growing
        hi = None
        if g is not None:
            for i, h in enumerate(s.holds):
                if h.pool == g:
                    hi = i
                    break
            if hi is None:
                return None  # the model decides what a growing run without a hold does
        served.append((sid, n, run.decode, g, hi))
    if kmax is None or kmax < 2:
        return None
    kmax = min(kmax, limit)
    D = sum(n for _, n, _, _, _ in served)
    # growth: per pool, units taken at iteration j; per iteration, blocks added to kvb
    npools = len(m.pools)
    take = [dict() for _ in range(npools)]  # pool -> {j: units}
    kvb_inc: dict[int, int] = {}
    kvb0 = 0
    growth: dict[int, list[tuple[int, int]]] = {}
    for sid, n, _dec, g, hi in served:
        if g is None:
            continue
        h = sessions[sid].holds[hi]
        b = m.blocks[g]
        kvb0 += h.own // b
        steps = _growth(h.own, h.use, n, b, m.pools[g].cap is not None, kmax)
        growth[sid] = steps
        own = h.own
        for j, units in steps:
            take[g][j] = take[g].get(j, 0) + units
            kvb_inc[j] = kvb_inc.get(j, 0) + (own + units) // b - own // b
            own += units
    # finite pools: growth takes whole blocks from free, then (the model's
    # `grow`) evicts cached blocks in evict order; a preemption would be
    # needed past that, so the block stops before it. Eviction is in closed
    # form only for a key-less evict order (`lru`: by release sequence
    # number), whose victims do not depend on what was evicted before.
    for p in range(npools):
        if not take[p] or m.pools[p].cap is None:
            continue
        free = view.free(p)
        b = m.blocks[p]
        avail = free // b * b
        if not m.pools[p].evict.keys:
            avail += view.cached(p)
        cum = 0
        for j in sorted(take[p]):
            cum += take[p][j]
            if cum > avail:
                kmax = min(kmax, j)
                break
    if kmax < 2:
        return None
    # walk the iterations: budget, cost, time limits
    ev = _shape_eval(m, si)
    costs: list[int] = []
    kvb = kvb0
    t = now
    for j in range(kmax):
        if j >= 1 and t_next is not None and t >= t_next:
            break
        if ev.has_budget:
            bud = ev.budget(nreq, ndec, kvb, t)
            if bud is None or bud < D:
                break
        kvb_after = kvb + kvb_inc.get(j, 0)
        c = ev.cost(D, ndec, nreq, kvb_after, t)
        if c is None:
            break
        if (horizon is not None and t + c > horizon) or t + c >= MAX_INT:
            break
        costs.append(c)
        t += c
        kvb = kvb_after
    k = len(costs)
    if k < 2:
        return None
    # levels after each iteration
    levels = []
    cur = list(levels0(state))
    for j in range(k):
        for p in range(npools):
            u = take[p].get(j)
            if u:
                cur[p] += u
        levels.append(tuple(cur))
    # the state after k iterations, in the model's encoding
    new_sessions = {}
    for sid, n, _dec, g, hi in served:
        s = sessions[sid]
        adv = k * n
        attrs = s.attrs
        ps = runs[s.prog][s.pc].progress
        if ps is not None:
            attrs = attrs[:ps] + (attrs[ps] + adv,) + attrs[ps + 1:]
        holds = s.holds
        if g is not None:
            h = holds[hi]
            own = h.own + sum(u for j, u in growth[sid] if j < k)
            holds = holds[:hi] + (h._replace(own=own, use=h.use + adv),) + holds[hi + 1:]
        new_sessions[sid] = s._replace(attrs=attrs, run_done=s.run_done + adv, holds=holds)
    new_free, evict = {}, {}
    evicted = [0] * npools
    for p in range(npools):
        if m.pools[p].cap is None:
            continue
        used = sum(u for j, u in take[p].items() if j < k)
        if not used:
            continue
        free = view.free(p)
        b = m.blocks[p]
        from_free = min(used, free // b * b)
        new_free[p] = free - from_free
        if used > from_free:
            evict[p] = (used - from_free, m.pools[p].evict.tie.desc)
            evicted[p] = used - from_free
    new_state = view.patched(new_sessions, new_free, evict)
    return Block(si, k, costs, levels, [(sid, n, d) for sid, n, d, _, _ in served], D, new_state,
                 tuple(evicted), tuple(g for _, _, _, g, _ in served))


MEMO_MAX = 1 << 16  # shapes remembered per stage (then forgotten, all at once)


class _ShapeEval:
    """A stage's `budget` and `cost` by the kernel's evaluator, remembered
    per step shape. The licence makes them functions of the shape alone
    (they read no `now`, attribute or pool), so a value once evaluated is
    the value; a shape variable an expression does not read is left out
    of the key (a budget that reads no `kvb` is evaluated once per
    composition, not once per block count)."""

    def __init__(self, m, si: int):
        st = m.stages[si]
        self.m, self.si = m, si
        self.has_budget = st.budget is not None
        self.budget_kvb = self.has_budget and _reads(st.budget, "kvb")
        self.cost_kvb = st.cost is not None and _reads(st.cost, "kvb")
        self.budgets: dict = {}
        self.costs: dict = {}

    def budget(self, nreq: int, ndec: int, kvb: int, now: int):
        key = (nreq, ndec, kvb if self.budget_kvb else 0)
        v = self.budgets.get(key, self)
        if v is self:
            try:
                v = self.m.engine.eval_stage(self.si, "budget", {"nreq": nreq, "ndec": ndec, "kvb": key[2]}, now)
            except ValueError:
                v = None
            if len(self.budgets) >= MEMO_MAX:
                self.budgets.clear()
            self.budgets[key] = v
        return v

    def cost(self, ntok: int, ndec: int, nreq: int, kvb: int, now: int):
        key = (ntok, ndec, nreq, kvb if self.cost_kvb else 0)
        v = self.costs.get(key, self)
        if v is self:
            try:
                v = self.m.cost(self.si, {"ntok": ntok, "ndec": ndec, "nreq": nreq, "kvb": key[3]}, now)
            except EvalError:  # a cost the kernel cannot compute: the step itself reports it
                v = None
            if len(self.costs) >= MEMO_MAX:
                self.costs.clear()
            self.costs[key] = v
        return v


def _reads(e, name: str) -> bool:
    return any(isinstance(x, ir.Ctx) and x.name == name for x in walk_expr(e))


def _shape_eval(m, si: int) -> _ShapeEval:
    evs = m.__dict__.setdefault("_coalesce_shape_eval", {})
    if si not in evs:
        evs[si] = _ShapeEval(m, si)
    return evs[si]


def _growth(own: int, use0: int, n: int, b: int, finite: bool, kmax: int) -> list[tuple[int, int]]:
    """(j, units) a growing hold takes in iterations j < kmax, serving n
    tokens per iteration from `use0`: the model's `grow` in closed form.
    Iteration j grows the hold to `use0 + (j + 1) * n` units; a finite pool
    adds whole blocks to what the hold owns, an infinite one rounds the
    use up to blocks."""
    out = []
    j = 0
    while True:
        # the first iteration jj >= j whose use passes what the hold owns
        jj = max(j, (own - use0) // n)
        if jj >= kmax:
            return out
        units = use0 + (jj + 1) * n
        new = own + (-(-(units - own) // b)) * b if finite else -(-units // b) * b
        out.append((jj, new - own))
        own = new
        j = jj + 1
