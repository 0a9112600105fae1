"""Warnings about defaults that mislead: a program that is valid but whose
numbers would not mean what they seem (docs/language.md, Diagnostics).

- W506 (simulation only): a stage without `cost` takes one tick (1 ns) per
  iteration; with no cost anywhere the simulator reports time in
  iterations.
- W507: a `cap` that is not a multiple of `block`: the units past the last
  whole block can never be allocated.
- W508: a hold that takes 0 units of a pool and that no run in it grows:
  it never holds a unit of that pool.
- W510: `copies keep` on a pool no hold names a prefix on: no block of it
  is shared, so there is no copy to keep.
- W514 (simulation only): a `check sometimes` line: one simulated run
  does not search for a witness (`serq explore` does).
- W513: `cache scheduled` on a pool that no hold keeps whole blocks of
  (`keep (P full)`), or whose holds are never preempted (`preempt none`):
  no victim's given-back tokens can fill a block that stays cached.
- W516 (simulation only): `check eventually`, which a simulation does not
  check (docs/language.md, "Liveness").
"""

from __future__ import annotations

from serq import ir
from serq.ir.fold import EvalError, NotConstant, const_eval


def costless(program: ir.Program) -> bool:
    """No stage has a `cost`: every iteration takes one tick, and the
    simulator counts time in iterations."""
    return bool(program.stages) and all(s.cost is None for s in program.stages)


def lint(prog: ir.Program, sink, simulate: bool) -> None:
    runs = any(w.count for w in prog.workload)
    if simulate and runs:
        _costs(prog, sink)
    for c in prog.checks if simulate else ():
        if c.kind == "sometimes":
            sink.warn(c.at, "W514", "`check sometimes` is not checked by one simulated run: `serq explore` searches "
                                    "every run for a witness", "`serq run` and `serq check` ignore this line")
    if simulate:
        for c in prog.checks:
            if c.kind == "eventually":
                sink.warn(c.at, "W516", f"`check eventually {c.metric}` is not checked by a simulation: one run is "
                          "finite and cannot show a session waiting for ever", "`serq explore` checks it",
                          span=len(c.metric or " "))
    for pool in prog.pools:
        if pool.cap is not None and pool.block >= 1 and pool.cap % pool.block:
            lost = pool.cap % pool.block
            sink.warn(pool.at, "W507", f"pool `{pool.name}`: `cap {pool.cap}` is not a multiple of `block {pool.block}`: "
                                       f"{lost} unit{'s' if lost != 1 else ''} can never be allocated",
                      "units move in whole blocks: the pool has "
                      f"{pool.cap // pool.block} blocks ({pool.cap // pool.block * pool.block} units)")
        if pool.copies == "keep" and not any(
                isinstance(st, ir.SAcquire) and any(it.pool == pool.name and it.prefix for it in st.hold.items)
                for sp in prog.sessions for st in sp.states):
            sink.warn(pool.at, "W510", f"pool `{pool.name}`: `copies keep` has no effect: no hold names a prefix on "
                                       f"`{pool.name}`, so none of its blocks is shared",
                      f"name a prefix in the holds that share blocks (`{pool.name} prefix P`), or remove the option")
        if pool.cache == "scheduled":
            _cache_scheduled(prog, pool, sink)
    for sp in prog.sessions:
        _never_held(sp, sink)


def _cache_scheduled(prog: ir.Program, pool: ir.Pool, sink) -> None:
    kept = any(k.pool == pool.name and k.full for sp in prog.sessions for sc in sp.scopes for k in sc.keep)
    why = ("its holds are never preempted (`preempt none`)" if pool.victim is None else
           None if kept else f"no hold keeps its whole blocks (`keep ({pool.name} full)`)")
    if why:
        sink.warn(pool.at, "W513", f"pool `{pool.name}`: `cache scheduled` has no effect: {why}",
                  "it caches the blocks a preempted victim's given-back tokens fill; remove the option")


def _costs(prog: ir.Program, sink) -> None:
    free = [s for s in prog.stages if s.cost is None]
    if not free:
        return
    if costless(prog):
        st = prog.stages[0]
        sink.warn(st.at, "W506", ("no stage has a `cost`" if len(prog.stages) > 1 else f"stage `{st.name}` has no `cost`")
                  + ": every iteration takes 1 ns, so the report counts time in iterations",
                  "arrival and think times written in the instance count 1 ns as one iteration; "
                  "give the stage a cost (e.g. `cost 14ms + 30us * ntok;`) for times in seconds")
        return
    timed = next(s.name for s in prog.stages if s.cost is not None)
    for st in free:
        sink.warn(st.at, "W506", f"stage `{st.name}` has no `cost`: each of its iterations takes 1 ns",
                  f"stage `{timed}` has a cost: the report's times mix the two; give `{st.name}` one too")


def _zero(e: ir.Expr | None) -> bool:
    if e is None:
        return True
    try:
        return const_eval(e) == 0
    except (NotConstant, EvalError, ArithmeticError, TypeError, ValueError):
        return False


def _never_held(sp: ir.SessionProgram, sink) -> None:
    """W508 for each hold item that takes 0 units, reuses none, and that no
    run grows (a run grows the innermost enclosing hold of its pool)."""
    grown: set[tuple[int, str]] = set()
    for st in sp.states:
        if isinstance(st, ir.SRun) and st.growing is not None:
            sc: int | None = st.scope
            while sc is not None and st.growing not in sp.scopes[sc].pools:
                sc = sp.scopes[sc].parent
            if sc is not None:
                grown.add((sc, st.growing))
    for st in sp.states:
        if not isinstance(st, ir.SAcquire):
            continue
        for it in st.hold.items:
            if (st.opens, it.pool) in grown or not _zero(it.take) or not _zero(it.reuse):
                continue
            sink.warn(it.at or st.at, "W508", f"this hold takes 0 units of `{it.pool}` and no run in it grows "
                                              f"`{it.pool}`: it never holds a unit of `{it.pool}`",
                      f"its `need` only gates admission; write `take E` (or `reserve E`) for what it uses, "
                      f"or grow it with a run `growing {it.pool}`")
