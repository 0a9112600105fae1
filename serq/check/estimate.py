"""Before exploring: how many successors one arrival has, and how many
states the drawn values alone make, from the draw domains (docs/explorer.md,
"Too large to explore"). An arrival runs its session up to its first
blocking statement in one step, taking every value of every `draw` (and
unkeyed `choose`) on the way: its successors multiply the domains. Once
every session of the workload has arrived — the explorer tries every
arrival order, all arrivals first among them — each combination of drawn
values is a state of its own: with symmetry, a multiset of combinations
per workload line. When that exceeds the states the memory bound can hold
(at `BYTES_PER_STATE` each, the least any stored state takes) the search cannot
finish, and W509 says so before it starts, with advice."""

from __future__ import annotations

from dataclasses import dataclass
from math import comb, exp, lgamma, log, prod

from serq import ir
from serq.ir.fold import EvalError, NotConstant, const_eval

# Every stored state takes at least its fingerprint (8 bytes), its parent id
# (4) and a slot of the hash table (4; docs/explorer.md, "The array
# engine"): a memory bound holds at most bound / 16 states.
BYTES_PER_STATE = 16
# the disk mode (`--disk`) keeps only the fingerprint in RAM, in a table at most 85 % full
DISK_BYTES_PER_STATE = 9


def _width(d: ir.Domain) -> int | None:
    """Values of a domain, or None when they are known only when drawn."""
    try:
        if d.lo is not None:
            return max(int(const_eval(d.hi)) - int(const_eval(d.lo)) + 1, 0)
        return len({const_eval(v) for v in d.values})
    except (NotConstant, EvalError, ArithmeticError, TypeError, ValueError):
        return None


def arrival(sp: ir.SessionProgram) -> tuple[int, list[tuple[ir.State, int]]]:
    """(successors of one arrival, the draws that make them): the largest
    product of domain widths along a path from the arrival to the first
    blocking state. A domain known only when drawn counts 1."""
    blocking = set(ir.BLOCKING_KINDS)
    memo: dict[int, tuple[int, list]] = {}

    def walk(i: int | None, on_path: frozenset) -> tuple[int, list]:
        if i is None or i in on_path or sp.states[i].kind in blocking:
            return 1, []
        if i in memo:
            return memo[i]
        st = sp.states[i]
        here = on_path | {i}
        best = walk(st.next, here)
        if isinstance(st, ir.SBranch):
            other = walk(st.alt, here)
            best = max(best, other, key=lambda x: x[0])
        w = None
        if isinstance(st, ir.SDraw) or (isinstance(st, ir.SChoose) and st.key is None):
            w = _width(st.domain)
        if w is not None and w > 1:
            best = (best[0] * w, [(st, w)] + best[1])
        memo[i] = best
        return best

    entry = sp.states[sp.entry]
    return walk(entry.next if entry.kind == "arrive" else sp.entry, frozenset())


@dataclass
class Estimate:
    line: ir.WorkloadLine  # the line with the most successors per arrival
    program: str
    successors: int
    draws: list[tuple[ir.State, int]]
    sessions: int
    states: int | float  # combinations of drawn values once every session has arrived


def estimate(prog: ir.Program, symmetry: bool) -> Estimate | None:
    per = {sp.name: arrival(sp) for sp in prog.sessions}
    lines = [w for w in prog.workload if w.count and w.program in per]
    if not lines:
        return None
    states = _states([(per[w.program][0], w.count) for w in lines], symmetry)
    top = max(lines, key=lambda w: per[w.program][0])
    return Estimate(top, top.program, per[top.program][0], per[top.program][1],
                    sum(w.count for w in lines), states)


def _states(groups: list[tuple[int, int]], symmetry: bool) -> int | float:
    """Combinations of drawn values over the workload lines (D values per
    session, n sessions): exact while small, else a float (logarithms: a
    workload of a million sessions must not build a number of millions of
    digits)."""
    logs = sum((lgamma(d + n) - lgamma(n + 1) - lgamma(d)) if symmetry else n * log(d) for d, n in groups)
    if logs < 40 * log(10):
        return prod(comb(d + n - 1, n) if symmetry else d ** n for d, n in groups)
    return exp(logs) if logs < 700 else float("inf")


def capacity(memory: int | None, per_state: int = BYTES_PER_STATE) -> tuple[int, str] | None:
    """The most states the memory bound can hold, and the words for it. A
    `--max-states` is a cut the user asked for: no reason to warn."""
    if not memory:
        return None
    n = memory // per_state
    return n, f"the memory bound ({memory / 2**30:.1f} GiB) holds at most {n:,} states of {per_state} bytes"


def _num(n: int | float) -> str:
    if n == float("inf"):
        return "more than 1e300"
    return f"{int(n):,}" if n < 10**12 else f"{n:.2e}".replace("e+", "e")


def too_large(prog: ir.Program, sink, *, symmetry: bool, memory: int | None, disk: bool = False) -> None:
    """W509 when the drawn values alone make more states than the memory
    bound can hold (`disk`: in the disk mode)."""
    est = estimate(prog, symmetry)
    cap = capacity(memory, DISK_BYTES_PER_STATE if disk else BYTES_PER_STATE)
    if est is None or cap is None or est.states <= cap[0]:
        return
    why = " × ".join(f"`{st.attr}`: {w:,} values" for st, w in est.draws) or "its draws"
    sym = "with symmetry" if symmetry else "without symmetry"
    sink.warn(est.line.at, "W509",
              f"too large to explore: one arrival of `{est.program}` has {_num(est.successors)} successors, and the "
              f"drawn values alone make about {_num(est.states)} states once the {est.sessions} sessions have "
              f"arrived ({sym})",
              f"one arrival takes every value of each draw: {why}; {cap[1]}",
              "narrow the domains to their extreme and typical values (e.g. `draw prompt in {1, 64, 2000};`)"
              + (", drop --no-symmetry" if not symmetry else "") + ", use fewer sessions, or search at random "
              "with `--swarm 8 --time-limit 600` (finding nothing is `inconclusive`, not a proof)")


def size_warning(prog: ir.Program, args, memory: int | None) -> list:
    """`serq explore`'s W509, if any, as a list of diagnostics."""
    from serq.diagnostics import Sink

    sink = Sink(prog.source)
    too_large(prog, sink, symmetry=not args.no_symmetry, memory=memory, disk=getattr(args, "disk", None) is not None)
    return sink.items
