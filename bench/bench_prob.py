"""`serq explore --probability / --expected` benchmark: what the
probabilities of the declared draws cost against one exploration.

    python bench/bench_prob.py
    python bench/bench_prob.py --repeat 3
    python bench/bench_prob.py --cyclic      # only the graphs with cycles

For each instance with draws, the time of one plain exploration
(`serq explore`, symmetry on: the command as a user runs it), of
`--worst ttft` (the graph the probabilities are computed on, built by the
same product) and of `serq.check.probreport.analyse` for one event
(`stuck`), for the expected ttft, and for both with `preemptions>=2` (a
second counter carried in the state), with the states of each and the
ratio of each time to the plain exploration's. The analysis's time is
split into building the graph (with each edge's questions) and solving
the decision process (`solve`: both schedulers of every question). Times
are the best of `--repeat` runs (wall seconds).

Then graphs with cycles, solved by interval iteration
(serq/check/interval.py): `instances/starved_large.sq` (a livelock, no
draw) and `prob_loop2` -- `instances/prob_chat.sq` whose chats loop
(`while`, again with probability 1/2) with answers of 1..2 tokens -- for
one event, the expected ttft and both with `violation` (the SLO counters
of `check ttft <= 2;`, added to it, carried in the state): the graph's
and the solve's seconds, the sweeps of the slowest component and the
widest proven interval (its half-width)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from timing import best  # noqa: E402  (bench/timing.py, beside the script)

from serq.check.explore import explore  # noqa: E402
from serq.check.prob import Question, parse_event, parse_expected  # noqa: E402
from serq.check.probreport import analyse  # noqa: E402
from serq.check.worst import find_worst  # noqa: E402
from serq.lang.load import load_path  # noqa: E402

INSTANCES = ["slo_ttft.sq", "agent_subagents.sq", "multiturn_chat.sq", "prob_chat.sq"]
QUESTIONS = [("stuck", ["stuck"], None), ("ttft", [], "ttft"), ("all", ["stuck", "preemptions>=2"], "ttft")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--cyclic", action="store_true", help="only the graphs with cycles")
    a = ap.parse_args()
    warm = load_path(ROOT / "instances" / "theorem.sq", explorer=True).program
    explore(warm, graph_limit=0)  # numba's start-up, outside the times
    if a.cyclic:
        cyclic(a.repeat)
        return
    print(f"{'instance':<20} {'question':<6} {'states':>7} {'explore s':>9} {'worst s':>8} {'prob s':>8} "
          f"{'graph s':>8} {'solve s':>8} {'states':>7} {'method':<15} {'x explore':>9} {'x worst':>8}")
    for inst in INSTANCES:
        prog = load_path(ROOT / "instances" / inst, explorer=True).program
        r0, t_explore = best(lambda: explore(prog, graph_limit=0), a.repeat)
        _w, t_worst = best(lambda: find_worst(prog, "ttft"), a.repeat)
        for qname, events, metric in QUESTIONS:
            q = Question([parse_event(e, prog) for e in events], parse_expected(metric, prog) if metric else None)
            r, t = best(lambda: analyse(prog, q), a.repeat)
            print(f"{inst:<20} {qname:<6} {r0.stats.distinct:>7} {t_explore:>9.2f} {t_worst:>8.2f} {t:>8.2f} "
                  f"{r.explore_seconds:>8.2f} {r.seconds - r.explore_seconds:>8.2f} {r.states:>7} {r.method:<15} "
                  f"{t / t_explore:>9.1f} {t / t_worst:>8.2f}")
    cyclic(a.repeat)


def loop2() -> str:
    text = (ROOT / "instances" / "prob_chat.sq").read_text()
    return (text.replace("repeat 2 {", "let more = 1;\n  while more == 1 {")
            .replace("    }\n  }\n  end;", "    }\n    draw d in {0, 1} ~ weights(1, 1);\n    set more = d;\n  }\n  end;")
            .replace("1..4 ~ geometric", "1..2 ~ geometric") + "check ttft <= 2;\n")


CYCLIC = [("starved_large", lambda: (ROOT / "instances" / "starved_large.sq").read_text().replace(
              "check eventually admitted;", "check ttft <= 6;")),
          ("prob_loop2", loop2)]
CYCLIC_QUESTIONS = [("event", ["ttft>=3"], None), ("ttft", [], "ttft"), ("all", ["ttft>=3", "violation"], "ttft")]


def half_width(r) -> float:
    out = 0.0
    for a in r.answers:
        for b in (a.best_bounds, a.worst_bounds):
            if b and b[1] is not None and b[0] != float("inf"):
                out = max(out, (b[1] - b[0]) / 2)
    return out


def cyclic(repeat: int) -> None:
    from serq.lang.load import load_text

    print(f"\n{'cyclic graph':<20} {'question':<6} {'states':>7} {'explore s':>9} {'prob s':>8} {'graph s':>8} "
          f"{'solve s':>8} {'sweeps':>6} {'half-width':>10} {'x explore':>9}")
    for name, text in CYCLIC:
        prog = load_text(text(), f"{name}.sq", explorer=True).program
        _r0, t_explore = best(lambda: explore(prog, graph_limit=0), repeat)
        for qname, events, metric in CYCLIC_QUESTIONS:
            q = Question([parse_event(e, prog) for e in events], parse_expected(metric, prog) if metric else None)
            r, t = best(lambda: analyse(prog, q), repeat)
            print(f"{name:<20} {qname:<6} {r.states:>7} {t_explore:>9.2f} {t:>8.2f} {r.explore_seconds:>8.2f} "
                  f"{r.seconds - r.explore_seconds:>8.2f} {r.sweeps:>6} {half_width(r):>10.1e} "
                  f"{t / t_explore:>9.1f}")


if __name__ == "__main__":
    main()
