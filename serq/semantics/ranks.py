"""Which sequence numbers an instance's future can read: the static half of
the rank reduction (`serq explore --reduce ranks`; the kernel's half is
`ranks_reduced` in `kernel/canon.py`).

A state keeps each live session's arrival and admission and each hold's
admission as a sequence number; the canonical form replaces them by their
ranks. Only orders read them (queue, victim, serve and evict orders: the
declared keys, the tie event, then the arrival), and only to compare two
of one kind. So, where no declared key reads a sequence number (`RK_OK`),
the reduced form ranks each kind among its own kind, and drops a rank no
future step can read:

- `RK_ARR_DEAD`: no arrival is ever decisive. The serve and victim orders
  tie on `admitted` and their elements' admissions are unique (a victim's
  is its hold's; every run is inside a hold, so every resident has been
  admitted), so the arrival after the tie never decides; a queue that ties
  on `arrived` is entered by order only by a session that arrived in the
  same action (no `requeue order`; every acquire of that queue is reached
  from an `arrive` or a `turn` through `set`, `branch`, `draw`, `choose`
  and `assert` alone), whose arrival is then the newest: its place does not
  depend on the others' arrivals.
- `RK_ADM_FREE`: no queue ties on `admitted` and every run is inside a
  hold: a session that holds nothing is admitted again before any order
  reads its admission.
- `RK_ADM_NONE`: besides, no serve order ties on `admitted`: no order reads
  a session's admission.

The kernel also drops the arrival of a session that holds nothing and waits
at an `arrive` or a `turn` (it is written again first), and a hold's
admission when its pool's victim order does not tie on `admitted`.
"""

from __future__ import annotations

from serq import ir
from serq.ir.util import walk_expr
from serq.semantics.kernel.abi import RK_ADM_FREE, RK_ADM_NONE, RK_ARR_DEAD, RK_OK

SEQ_CONTEXT = ("arrived", "admitted", "released", "last")
INSTANT = ("set", "branch", "draw", "choose", "assert")


def _reads_seq(o: ir.Order | None) -> bool:
    return o is not None and any(isinstance(x, ir.Ctx) and x.name in SEQ_CONTEXT
                                 for k in o.keys for x in walk_expr(k.e))


def _in_hold(sp: ir.SessionProgram, scope: int | None) -> bool:
    while scope is not None:
        sc = sp.scopes[scope]
        if sc.acquire is not None:
            return True
        scope = sc.parent
    return False


def stale_acquires(sp: ir.SessionProgram) -> set[int]:
    """The acquire states a session may reach other than straight from an
    arrival (an `arrive` or a `turn`, then instant statements only): its
    arrival may then be older than another queued session's."""
    states = sp.states
    todo = [] if states[sp.entry].kind == "arrive" else [sp.entry]
    for st in states:
        if st.kind not in INSTANT and st.kind not in ("arrive", "turn") and getattr(st, "next", None) is not None:
            todo.append(st.next)
    seen: set[int] = set()
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        st = states[i]
        if st.kind in INSTANT:
            todo.append(st.next)
            if st.kind == "branch":
                todo.append(st.alt)
    return {i for i in seen if states[i].kind == "acquire"}


def seq_reader(program: ir.Program) -> str | None:
    """The first order whose declared keys read a sequence number (then
    nothing is reduced: `rank_flags` is 0), in words; None if none does."""
    named = [(o, f"pool {p.name}'s {k} order") for p in program.pools
             for k, o in (("queue", p.queue), ("victim", p.victim), ("evict", p.evict))]
    named += [(s.serve, f"stage {s.name}'s serve order") for s in program.stages]
    return next((words for o, words in named if _reads_seq(o)), None)


def rank_flags(program: ir.Program) -> int:
    """The RK_* bits of an instance (see the module's text)."""
    pools, stages = program.pools, program.stages
    if seq_reader(program) is not None:
        return 0
    runs_in_holds = all(_in_hold(sp, st.scope) for sp in program.sessions for st in sp.states if st.kind == "run")
    queue_adm = any(p.queue.tie.event == "admitted" for p in pools)
    # the first pool of a stale acquire's hold: its queue is entered by order with an older arrival
    stale_gates = {sp.states[i].hold.items[0].pool for sp in program.sessions for i in stale_acquires(sp)}
    requeue_order = any(p.requeue == "order" for p in pools)
    arr_dead = runs_in_holds \
        and all(s.serve.tie.event == "admitted" for s in stages) \
        and all(p.victim is None or p.victim.tie.event == "admitted" for p in pools) \
        and all(p.queue.tie.event != "arrived" or not (requeue_order or p.name in stale_gates) for p in pools)
    flags = RK_OK
    if arr_dead:
        flags |= RK_ARR_DEAD
    if runs_in_holds and not queue_adm:
        flags |= RK_ADM_FREE
        if all(s.serve.tie.event != "admitted" for s in stages):
            flags |= RK_ADM_NONE
    return flags
