"""`serq explore --probability EVENT` / `--expected METRIC`: the answers
on one stored graph (serq/check/prob.py, probsolve.py), in words and as
JSON (format serq-prob, docs/json.md)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from serq import ir
from serq.check.prob import Draw, Event, Question, build, targets
from serq.check.interval import EPSILON, MAX_SWEEPS
from serq.check.probsolve import acyclic, positive_graph, solve, trees
from serq.check.worst import Metric, n_sessions


EXACT_LIMIT = 5_000  # states: above, floats (a rational's digits grow with the graph's depth, and its cost)


@dataclass
class Answer:
    """One event's probability, or the expected metric, under the best and
    the worst scheduler. On a graph with cycles each also has its proven
    interval (`best_bounds`: (lower, upper), upper None when none is
    proven) and the value is the interval's midpoint; math.inf: proven
    infinite."""

    event: Event | None
    metric: Metric | None
    best: Any = None
    worst: Any = None
    best_starts: Any = None  # expected subjects (requests, sessions) under the same scheduler
    worst_starts: Any = None
    worst_case: int | None = None  # the largest value of the metric with positive probability
    worst_case_unbounded: bool = False
    best_bounds: tuple | None = None
    worst_bounds: tuple | None = None
    within: bool = True  # each interval is within EPSILON (graphs with cycles)

    @property
    def per(self) -> str:
        m = self.metric
        return "request" if m.per_request else "session" if m.per_session else "run"


@dataclass
class ProbResult:
    answers: list[Answer]
    draws: list[Draw]
    exact: bool
    acyclic: bool
    rational: bool
    sweeps: int
    states: int
    edges: int
    complete: bool
    bound_reason: str | None
    seconds: float = 0.0
    explore_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def method(self) -> str:
        if self.exact:
            return "exact"
        return "recursion" if self.acyclic else "interval-iteration"

    @property
    def exit_code(self) -> int:
        from explorer.runtime.verdict import EXIT_BOUND, EXIT_INTERRUPTED, EXIT_PASS

        if self.complete:
            return EXIT_PASS
        return EXIT_INTERRUPTED if self.bound_reason in ("SIGINT", "SIGTERM") else EXIT_BOUND


def analyse(program: ir.Program, question: Question, *, ties: str = "all", max_states: int | None = None,
            time_limit: float | None = None, memory_limit: int | None = None) -> ProbResult:
    from explorer.check import longest, sccs

    t0 = time.perf_counter()
    pm, g = build(program, question, ties=ties, max_states=max_states, time_limit=time_limit,
                  memory_limit=memory_limit)
    t1 = time.perf_counter()
    draws = sorted(pm.tagger.draws.values(), key=lambda d: (d.program, d.line, d.attr, d.dist, d.values))
    answers = [Answer(e, e.metric) for e in question.events]
    if question.expected is not None:
        answers.append(Answer(None, question.expected))
    res = ProbResult(answers, draws, False, False, pm.tagger.rational, 0, len(g), g.edges, g.complete, g.bound_reason)
    if not g.complete:  # a cut graph's frontier looks like ends: no value is given
        res.seconds = time.perf_counter() - t0
        return res
    scc = sccs(g)
    res.acyclic = acyclic(scc[1], g)
    res.exact = pm.tagger.rational and res.acyclic and len(g) <= EXACT_LIMIT
    tr = trees(g, res.exact)
    if not res.acyclic:
        _cyclic(pm, g, tr, answers, res)
    for a in answers if res.acyclic else ():
        if a.event is not None:
            tgt = targets(g, a.event)
            lo, hi = (solve(g, tr, scc, None, tgt, mx, res.exact) for mx in (False, True))
        else:
            lo, hi = (solve(g, tr, scc, _rewards(g), None, mx, res.exact) for mx in (False, True))
            base = n_sessions(pm.sm.initial_states()[0]) if a.per == "session" else 0
            a.best_starts = None if lo.starts is None else lo.starts + base
            a.worst_starts = None if hi.starts is None else hi.starts + base
        a.best, a.worst = lo.value, hi.value
    for a in answers:
        if a.event is None:
            w = longest(positive_graph(g))
            a.worst_case, a.worst_case_unbounded = w.value, w.value is None
    res.seconds = time.perf_counter() - t0
    res.explore_seconds = t1 - t0
    return res


def _rewards(g):
    return [[(sum(w[1] for w in e.weights), e.starts) for e in inf] for inf in g.info]


def _cyclic(pm, g, tr, answers, res: ProbResult) -> None:
    """Each answer's proven interval on a graph with cycles
    (serq/check/interval.py); its value the interval's midpoint."""
    from serq.check import interval

    expected = any(a.event is None for a in answers)
    m = interval.flatten(g, tr, _rewards(g) if expected else None)
    order, preds = interval.components_of(m), m.preds()
    for a in answers:
        sides = []
        for mx in (False, True):
            if a.event is not None:
                b = interval.reach(m, targets(g, a.event), mx, order, preds)
            else:
                b = interval.expect(m, mx, order, preds, subjects=a.per != "run")
            res.sweeps = max(res.sweeps, b.sweeps)
            a.within = a.within and b.within
            sides.append(b)
        lo, hi = sides
        a.best_bounds, a.worst_bounds = (lo.lower, lo.upper), (hi.lower, hi.upper)
        a.best, a.worst = midpoint(lo), midpoint(hi)
        if a.event is None:
            base = n_sessions(pm.sm.initial_states()[0]) if a.per == "session" else 0
            a.best_starts = None if lo.subjects is None else lo.subjects + base
            a.worst_starts = None if hi.subjects is None else hi.subjects + base


def midpoint(b) -> float | None:
    if b.infinite:
        return math.inf
    if b.upper is None:
        return None
    return (b.lower + b.upper) / 2


# ---------------------------------------------------------------- words


def num(x) -> str:
    """3/16 = 0.1875; a float to 6 significant digits; a rational too long
    to read as its decimal, with its size."""
    if x is None:
        return "not proven"
    if x == math.inf:
        return "infinitely many"
    if isinstance(x, Fraction):
        if x.denominator == 1:
            return str(x.numerator)
        if x.denominator < 10**6:
            return f"{x} = {float(x):.6g}"
        return f"{float(x):.6g} (exactly a rational of {len(str(x.denominator))}-digit denominator: --json)"
    return f"{x:.6g}"


def mean(total, n):
    if total is None or not n:
        return None
    return total / n


def values_text(values) -> str:
    vs = list(values)
    if len(vs) > 2 and all(isinstance(v, int) for v in vs) and vs == list(range(vs[0], vs[0] + len(vs))):
        return f"{vs[0]}..{vs[-1]}"
    return "{" + ", ".join(str(v) for v in vs) + "}"


def draw_line(d: Draw) -> str:
    head = f"{d.program}, line {d.line}: {d.attr} ~ {d.dist} over {values_text(d.values)}"
    if d.kept is None:
        return head + ": defined on the domain"
    if d.kept == 1:
        return head + ": the domain holds the whole distribution"
    tail = 1 - d.kept
    return (head + f": the domain holds {float(d.kept):.6g} of the distribution's mass; the rest ({float(tail):.6g}) "
            f"is renormalized over the domain, as `serq run` samples")


def method_text(r: ProbResult) -> str:
    if r.exact:
        return "exact rationals (the graph has no cycle and every probability is a rational)"
    if r.acyclic:
        why = f"more than {EXACT_LIMIT:,} states" if r.rational else "a probability is not a rational"
        return (f"floating point, one recursion over the graph (it has no cycle; {why}): rounding errors only, "
                f"relative at most about {rounding_bound(r):.1g} (4 roundings of 2^-53 per edge)")
    sweeps = f"{r.sweeps} sweep{'s' if r.sweeps != 1 else ''} in the slowest component" if r.sweeps \
        else "no sweep needed"
    out = (f"floating point, interval iteration (the graph has cycles): each value is proven to lie in the interval "
           f"printed (value ± half-width), every sum rounded outwards so that it bounds the exact value; the states of "
           f"probability 0 and 1 found on the graph, the end components of the worst scheduler collapsed, lower and "
           f"upper bounds iterated until within {EPSILON:g} ({sweeps}, at most {MAX_SWEEPS:,})")
    if any(a.event is None for a in r.answers):
        out += ("; an expected sum: infinite when proven so on the graph (an end component that adds to it), its lower "
                "bound value iteration from below, its upper bound a sum checked to be inductive (F(U) <= U)")
        if any(a.per != "run" for a in r.answers if a.event is None):
            out += ("; a mean per request or session divides these bounds by the expected subjects under the "
                    "scheduler the lower iteration settles on (an estimate, not proven)")
    unbounded = [a for a in r.answers if a.event is None and None in (a.best_bounds[1], a.worst_bounds[1])]
    if unbounded:  # (a sum proven infinite has the upper bound inf, not None)
        out += "; where no upper bound is proven, the lower bound alone is given"
    if not all(a.within for a in r.answers if a not in unbounded):
        out += f"; an interval wider than {EPSILON:g} is still proven"
    return out


def rounding_bound(r: ProbResult) -> float:
    return 4 * max(r.edges, 1) * 2.0 ** -53


def _up2(h: float) -> str:
    """h to 2 significant digits, rounded up."""
    v = float(f"{h:.1e}")
    while v < h:
        v = float(f"{v * 1.05:.1e}")
    return f"{v:.1e}"


def bounded(b, n=None) -> str:
    """A proven interval (lower, upper) as value ± half-width (divided by
    n, an estimate, for a mean); `infinite`; or a lower bound alone."""
    lo, hi = b
    if lo == math.inf:
        return "infinite"
    if n is not None:
        if not n:
            return "none counted"
        lo, hi = lo / n, None if hi is None else hi / n
    if hi is None:
        return f"at least {lo:.6g} (no upper bound proven)"
    if lo == hi:
        return f"{lo:.12g}"
    text = f"{(lo + hi) / 2:.10g}"
    c = float(text)
    return f"{text} ± {_up2(max(hi - c, c - lo))}"


def answer_lines(a: Answer) -> list[str]:
    iv = a.best_bounds is not None
    if a.event is not None:
        if iv:
            return [f"P({a.event.text}: {a.event.what}): best scheduler {bounded(a.best_bounds)}, worst scheduler "
                    f"{bounded(a.worst_bounds)}"]
        return [f"P({a.event.text}: {a.event.what}): best scheduler {num(a.best)}, worst scheduler {num(a.worst)}"]
    m = a.metric
    out = [f"expected {m.name} ({m.what}), in {m.unit}:"]
    if iv and a.per != "run":
        out.append(f"  per {a.per}: best scheduler {bounded(a.best_bounds, a.best_starts)}, worst scheduler "
                   f"{bounded(a.worst_bounds, a.worst_starts)}")
        out.append(f"  per run (the sum over its {a.per}s): best {bounded(a.best_bounds)} over {num(a.best_starts)} "
                   f"{a.per}s, worst {bounded(a.worst_bounds)} over {num(a.worst_starts)} {a.per}s")
    elif iv:
        out.append(f"  per run: best scheduler {bounded(a.best_bounds)}, worst scheduler {bounded(a.worst_bounds)}")
    elif a.per != "run":
        bm, wm = mean(a.best, a.best_starts), mean(a.worst, a.worst_starts)
        out.append(f"  per {a.per}: best scheduler {num(bm)}, worst scheduler {num(wm)}")
        out.append(f"  per run (the sum over its {a.per}s): best {num(a.best)} over {num(a.best_starts)} {a.per}s, "
                   f"worst {num(a.worst)} over {num(a.worst_starts)} {a.per}s")
    else:
        out.append(f"  per run: best scheduler {num(a.best)}, worst scheduler {num(a.worst)}")
    if math.inf in (a.best, a.worst):
        out.append("  infinite (proven on the graph): the worst scheduler can reach, with positive probability, a cycle "
                   "that adds to the sum and stay on it for ever; the best cannot reach, with probability 1, the "
                   "run's end or a cycle that adds nothing")
    if a.best is None or a.worst is None:
        out.append("  no upper bound proven: no inductive bound was found (the lower bound holds)")
    if a.worst_case_unbounded:
        out.append(f"  worst case: unbounded (a cycle adds to it; serq explore --worst {m.name})")
    else:
        unit = m.unit[:-1] if a.worst_case == 1 else m.unit
        out.append(f"  worst case: {a.worst_case} {unit} (the largest value with positive probability, "
                   f"as serq explore --worst {m.name})")
    return out


def render_text(r: ProbResult) -> str:
    out = [f"probabilities of the declared draws: a Markov decision process over {r.states:,} states and "
           f"{r.edges:,} edges (a drawn value is chance; arrivals, iterations, turns, ties and unkeyed `choose` "
           f"are the scheduler's choice: the best and the worst)"]
    if r.draws:
        out.append("draws (each restricted to its domain):")
        out.extend("  " + draw_line(d) for d in r.draws)
    else:
        out.append("draws: none is reached: every behaviour is the scheduler's choice")
    if not r.complete:
        why = f"interrupted by {r.bound_reason}" if r.bound_reason in ("SIGINT", "SIGTERM") \
            else f"cut at its {r.bound_reason} bound"
        out.append(f"the state graph was {why}: its frontier is not the end of a run, so no probability is given")
    else:
        for a in r.answers:
            out.extend(answer_lines(a))
        out.append(f"arithmetic: {method_text(r)}")
    out.extend(r.notes)
    out.append(f"states: {r.states}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- JSON


def jnum(x):
    return None if x is None or x == math.inf else float(x)


def jbounds(b, i):
    return None if b is None or b[i] is None or b[i] == math.inf else float(b[i])


def jexact(x):
    return str(x) if isinstance(x, Fraction) else None


def render_json(r: ProbResult, warnings=()) -> dict:
    """`serq explore --probability/--expected --json` (format serq-prob)."""
    from serq.formats import PROB, stamp, warnings_data

    events, expected = [], None
    for a in r.answers:
        if a.event is not None:
            events.append({"event": a.event.text, "what": a.event.what, "best": jnum(a.best), "worst": jnum(a.worst),
                           "best_exact": jexact(a.best), "worst_exact": jexact(a.worst),
                           "best_lower": jbounds(a.best_bounds, 0), "best_upper": jbounds(a.best_bounds, 1),
                           "worst_lower": jbounds(a.worst_bounds, 0), "worst_upper": jbounds(a.worst_bounds, 1)})
            continue
        side = {}
        for name, total, n, b in (("best", a.best, a.best_starts, a.best_bounds),
                                  ("worst", a.worst, a.worst_starts, a.worst_bounds)):
            mv = mean(total, n) if a.per != "run" else total
            side[name] = {"total": jnum(total), "total_exact": jexact(total),
                          "subjects": jnum(n) if a.per != "run" else None,
                          "mean": jnum(mv), "mean_exact": jexact(mv),
                          "total_lower": jbounds(b, 0), "total_upper": jbounds(b, 1), "infinite": total == math.inf}
        expected = {"metric": a.metric.name, "unit": a.metric.unit, "what": a.metric.what, "per": a.per, **side,
                    "worst_case": a.worst_case, "worst_case_unbounded": a.worst_case_unbounded}
    draws = [{"program": d.program, "line": d.line, "attr": d.attr, "distribution": d.dist, "values": list(d.values),
              "probabilities": [float(p) for p in d.probs],
              "probabilities_exact": [str(p) for p in d.probs] if all(isinstance(p, Fraction) for p in d.probs)
              else None,
              "kept": jnum(d.kept), "truncation": "none" if d.kept is None or d.kept == 1 else "renormalized"}
             for d in r.draws]
    return stamp(PROB, {
        "events": events, "expected": expected, "draws": draws,
        "arithmetic": {"method": r.method, "epsilon": None if r.acyclic else EPSILON,
                       "proven": r.method == "exact" or (not r.acyclic and all(a.within for a in r.answers)),
                       "rounding": rounding_bound(r) if r.method == "recursion" else None, "sweeps": r.sweeps,
                       "text": method_text(r)},
        "states": r.states, "edges": r.edges, "complete": r.complete, "bound_reason": r.bound_reason,
        "exit_code": r.exit_code, "text": render_text(r), "warnings": warnings_data(warnings),
    })
