"""Replay benchmark: what `serq oracle replay` costs on serq's side (the
replay of the path, the exactness check, the scenario, serq's run of it and
the judgement against a recorded vLLM trace) relative to the exploration
that found the counterexample, in one process.

    python bench/bench_replay.py              # the replays of tests/oracle/replay/
    python bench/bench_replay.py --repeat 5

vLLM's own run is not measured here: it is the driver's (about 8 s on an
idle machine, mostly vLLM's import; docs/vllm.md). Times are the best of
`--repeat` runs (wall seconds)."""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
REC = ROOT / "tests" / "oracle" / "replay"


def best(f, repeat: int) -> float:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from serq.api import explore
    from serq.cli import main as cli

    def quiet(argv):
        with contextlib.redirect_stdout(io.StringIO()):
            assert cli(argv) == 0, argv

    print(f"{'replay':18} {'explore s':>10} {'replay s':>10} {'ratio':>7}")
    for sq in sorted(REC.glob("*.sq")):
        name = sq.stem
        cx, trace = REC / f"{name}.cx.json", REC / f"{name}.trace.jsonl"
        quiet(["oracle", "replay", str(sq), str(cx), "--trace", str(trace)])  # warm
        e = best(lambda: explore(str(sq)), args.repeat)
        r = best(lambda: quiet(["oracle", "replay", str(sq), str(cx), "--trace", str(trace)]), args.repeat)
        print(f"{name:18} {e:10.3f} {r:10.3f} {r / e:7.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
