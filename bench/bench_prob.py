"""`serq explore --probability / --expected` benchmark: what the
probabilities of the declared draws cost against one exploration.

    python bench/bench_prob.py
    python bench/bench_prob.py --repeat 3

For each instance with draws, the time of one plain exploration
(`serq explore`, symmetry on: the command as a user runs it), of
`--worst ttft` (the graph the probabilities are computed on, built by the
same product) and of `serq.check.probreport.analyse` for one event
(`stuck`), for the expected ttft, and for both with `preemptions>=2` (a
second counter carried in the state), with the states of each and the
ratio of each time to the plain exploration's. The analysis's time is
split into building the graph (with each edge's questions) and solving
the decision process (`solve`: both schedulers of every question). Times
are the best of `--repeat` runs (wall seconds)."""

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
    a = ap.parse_args()
    warm = load_path(ROOT / "instances" / "theorem.sq", explorer=True).program
    explore(warm, graph_limit=0)  # numba's start-up, outside the times
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


if __name__ == "__main__":
    main()
