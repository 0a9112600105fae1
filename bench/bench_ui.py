"""`serq ui` benchmark: what a state page costs (CPU of the request, size
of the page), with and without the marks, and what the background work
takes, in one process through Flask's test client.

    python bench/bench_ui.py              # best of 3
    python bench/bench_ui.py --repeat 5

Pages: a 10,000-step path of one long session (one action per state: the
path's cost), and the states of instances/multiturn_chat.sq's first steps
(a dozen actions each: the cost of the successors' previews and marks).
Times are the best of `--repeat` runs (CPU seconds of the request's
thread, as the request budget counts them; the background work in wall
seconds)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LONG = """
pool kv { cap 64; admit via gpu; }
stage gpu { budget 8; }
session s { hold kv reserve 8 { prefill 4; decode 20000; } end; }
workload { 1 x s; }
"""


def client(source: str, **kw):
    from serq.lang.load import load_path, load_text
    from serq.view.ui import Explorer, make_app

    prog = load_path(source, explorer=True).program if source.endswith(".sq") else load_text(source).program
    ex = Explorer(prog, "bench.sq", **kw)
    app = make_app(ex, 8123)
    app.config["SERVER_NAME"] = "127.0.0.1:8123"
    return ex, app.test_client()


def page(c, url: str, repeat: int) -> tuple[float, int]:
    """(best CPU seconds, bytes) of one page."""
    best, size = float("inf"), 0
    for _ in range(repeat):
        t = time.thread_time()
        r = c.get(url)
        best = min(best, time.thread_time() - t)
        assert r.status_code == 200, (url, r.status_code)
        size = len(r.data)
    return best, size


def work(ex) -> float:
    t = time.perf_counter()
    ex.start_search()
    while not ex.work.finished:
        time.sleep(0.01)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    long_path = "/".join(["0"] * 10_001)
    chat = str(ROOT / "instances" / "multiturn_chat.sq")
    paths = ["0", "0/0", "0/0/1", "0/0/1/0", "0/0/1/0/3"]
    for marks in (False, True):
        ex, c = client(LONG, graph_limit=30_000)
        ex2, c2 = client(chat)
        if marks:
            print(f"background work: long session {work(ex):.2f} s, multiturn_chat {work(ex2):.2f} s "
                  f"(marks: {ex.status()['marks']['message']}; {ex2.status()['marks']['message']})")
        cpu, size = page(c, f"/state/{long_path}", a.repeat)
        print(f"{'with' if marks else 'without'} marks: 10,000-step path {cpu:.2f} s CPU, {size / 1e6:.2f} MB")
        rows = [page(c2, f"/state/{p}", a.repeat) for p in paths]
        acts = [len(c2.get(f"/api/state/{p}").get_json()["actions"]) for p in paths]
        print(f"{'with' if marks else 'without'} marks: multiturn_chat pages "
              + ", ".join(f"{p} ({n} actions) {t * 1e3:.0f} ms" for p, n, (t, _s) in zip(paths, acts, rows)))


if __name__ == "__main__":
    main()
