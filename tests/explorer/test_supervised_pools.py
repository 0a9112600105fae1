"""Every process pool supervised: a worker killed
with SIGKILL ends the command with `failed` (exit 18) naming it, the
others are stopped, no process is left behind, never a hang: the jobs
of a sweep and of a swarm, the array engine's expanders and the
partitions of a model without rows, all on the one process pool
(explorer/runtime/pool.py; the pool itself: tests/explorer/test_pool.py;
the partitions through `serq explore`: tests/explorer/test_worker_failure.py)."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures import FOREVER, alive, children

ROOT = Path(__file__).resolve().parents[2]

# Unbounded (g grows at every turn): a value, a search, never ends by itself.
FOREVER_N = "const N = 1;\n" + FOREVER.replace("workload { 2 x s; }", "workload { N x s; }")


def _kill_one_of(p: subprocess.Popen, n: int, timeout: float = 60) -> list[int]:
    """Wait until p has n children, SIGKILL the last one; all n pids."""
    deadline = time.monotonic() + timeout
    kids = children(p.pid)
    while len(kids) < n and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
        kids = children(p.pid)
    assert len(kids) == n, (kids, p.poll())
    time.sleep(0.5)  # at work
    os.kill(kids[-1], signal.SIGKILL)
    return kids


def _run_and_kill(args: list[str], n: int, timeout: float = 60):
    p = subprocess.Popen([sys.executable, "-m", "serq", *args], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        kids = _kill_one_of(p, n)
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(k) for k in kids):
        time.sleep(0.1)
    assert not [k for k in kids if alive(k)], "a worker was left behind"
    assert "Traceback" not in err, err
    return p.returncode, out, err


def test_sweep_worker_killed_is_failed_not_a_hang(tmp_path):
    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER_N)
    code, out, err = _run_and_kill(["sweep", str(inst), "--vary", "N=1..3", "--workers", "2", "--time-limit", "120",
                                    "--no-timing"], 2)
    assert code == 18, (out, err)
    last = out.splitlines()[-1]
    assert re.fullmatch(r"failed: worker [01] \(at N = [123]\) died \(killed by SIGKILL\); the other workers were "
                        r"stopped; the values above are those finished before it; the sweep is incomplete", last), out


def test_sweep_json_names_the_lost_worker(tmp_path):
    import json

    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER_N)
    code, out, err = _run_and_kill(["sweep", str(inst), "--vary", "N=1..2", "--workers", "2", "--time-limit", "120",
                                    "--json"], 2)
    assert code == 18, (out, err)
    doc = json.loads(out)
    assert re.fullmatch(r"worker [01] \(at N = [12]\) died \(killed by SIGKILL\)", doc["failed"]), doc
    assert doc["rows"] == [] and doc["interrupted"] is None


def _boom(job):
    if job == 3:
        raise ValueError("three")
    return job * 2


def _sleepy(job):
    time.sleep(job)
    return job


def test_pool_gives_every_result_and_names_a_raising_worker():
    from explorer.outcome import WorkerFailed
    from explorer.runtime.supervise import Supervised

    with Supervised(_boom, 2) as pool:
        assert sorted(r for _, r in pool.imap_unordered([0, 1, 2])) == [0, 2, 4]
    with Supervised(_boom, 2, name=lambda w, job: f"search {job}") as pool:
        with pytest.raises(WorkerFailed, match=r"^search 3 raised ValueError: three$"):
            list(pool.imap_unordered([1, 3, 5]))
        procs = pool.procs
    assert not any(p.is_alive() for p in procs)


def test_pool_hung_worker_past_the_deadline():
    from explorer.outcome import WorkerFailed
    from explorer.runtime.supervise import Supervised

    t0 = time.perf_counter()
    with Supervised(_sleepy, 1, deadline=t0 + 0.2, time_limit=0.2) as pool:
        with pytest.raises(WorkerFailed) as e:
            list(pool.imap_unordered([60]))
    assert e.value.hung == ("time_limit", 0.2)
    assert time.perf_counter() - t0 < 10


def test_swarm_search_killed_is_failed_with_statistics(tmp_path):
    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER_N.replace("const N = 1;", "const N = 2;"))
    code, out, err = _run_and_kill(["explore", str(inst), "--swarm", "2", "--max-depth", "100000",
                                    "--time-limit", "120", "--no-timing"], 2)  # both searches long
    assert code == 18, (out, err)
    lines = out.splitlines()
    m = re.fullmatch(r"failed: search ([01]) died \(killed by SIGKILL\); stopped after (\d+) distinct states, "
                     r"none of them a violation; exploration incomplete", lines[0])
    assert m, out
    st = re.match(r"stats: generated=(\d+) distinct=(\d+) ", lines[-1])
    assert st and int(st[2]) == int(m[2]) > 0, out  # the search still running was stopped, its counts kept


def _array_big():
    sys.path.insert(0, str(ROOT / "tests" / "explorer"))
    from explorer_toys import AsArrays, CounterPair

    return AsArrays(CounterPair(3000), 2)  # 9 M states: far from done when a worker is killed


def _objects_big():
    sys.path.insert(0, str(ROOT / "tests" / "explorer"))
    from explorer_toys import CounterPair

    return CounterPair(3000)


@pytest.mark.parametrize("make", [_array_big, _objects_big], ids=["array_expanders", "objects_on_processes"])
def test_worker_process_killed_in_this_process_is_failed(make):
    """The array engine's worker processes (a model without
    `array_expander`: explorer/strategies/arrays/workers.py), and the
    partitions of a model without rows (strategies/partitions/objects.py),
    each on the one process pool."""
    import multiprocessing
    import threading

    from explorer import ModelFactory, check
    from explorer.check import engine_for
    from explorer.settings import Settings

    before = set(children(os.getpid()))
    killed = []

    def killer():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            kids = [k for k in children(os.getpid()) if k not in before]
            if len(kids) == 2:
                time.sleep(1.0)
                os.kill(kids[-1], signal.SIGKILL)
                killed.append(kids)
                return
            time.sleep(0.05)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    want = "rows_on_processes" if make is _array_big else "objects_on_processes"
    assert engine_for(make(), Settings(workers=2)).__name__ == want
    r = check(ModelFactory(make), workers=2, time_limit=60)
    t.join(5)
    assert killed, "no worker processes"
    assert r.verdict == "failed", r.message
    assert re.fullmatch(r"worker [01] died \(killed by SIGKILL\); stopped after \d+ distinct states, none of them a "
                        r"violation; exploration incomplete", r.message), r.message
    assert r.stats.distinct > 0
    assert not multiprocessing.active_children()
    assert not [k for k in killed[0] if alive(k)]


def test_ui_background_search_that_ends_abnormally_is_failed(monkeypatch):
    """`serq ui`'s search runs on one thread (no process to kill; a thread
    cannot be killed alone): one that ends by any exception, SystemExit
    included, is `failed` on the page, never a search done with no verdict."""
    import serq.check.explore
    from serq.lang.load import load_path
    from serq.view.ui import Explorer

    def explore(*a, **k):
        raise SystemExit(3)

    monkeypatch.setattr(serq.check.explore, "explore", explore)
    ex = Explorer(load_path(str(ROOT / "instances" / "self_preempt.sq"), explorer=True).program, "x.sq")
    assert ex.violation(timeout=30) is None
    assert ex.search() == ("failed", "the search failed: SystemExit: 3")


def test_worst_has_no_pool_and_refuses_workers(capsys):
    """`--worst` builds its graph in this process: no worker to supervise,
    and `--workers` is refused rather than ignored."""
    from serq.cli import main

    assert main(["explore", str(ROOT / "instances" / "decode_preempt.sq"), "--worst", "recomputed",
                 "--workers", "2"]) == 2
    err = capsys.readouterr().err
    assert "E012" in err and "a worst case is computed in one process; drop --workers" in err


# spawns, bounded (i reaches 4): `--workers 2` explores on worker processes (the hash-partitioned engine)
SPAWNS_BOUNDED = """
pool kv { cap 64; block 2; admit via gpu; }
stage gpu { budget 2; }
session c { turn; }
session s {
  let i = 0;
  while i < 4 {
    draw y in {1, 2};
    set i = i + y;
    spawn c;
    turn;
  }
}
workload { 4 x s; }
"""


def test_theorem_exploration_worker_killed_is_failed(tmp_path):
    """The theorem's solo runs are walks in this process; its exploration
    runs on the engine's supervised workers."""
    inst = tmp_path / "spawns.sq"
    inst.write_text(SPAWNS_BOUNDED)
    code, out, err = _run_and_kill(["explore", str(inst), "--theorem", "--workers", "2", "--time-limit", "120",
                                    "--no-timing"], 2)
    assert code == 18, (out, err)
    assert re.search(r"^failed: worker [01] died \(killed by SIGKILL\); stopped after \d+ distinct states, none of "
                     r"them a violation; exploration incomplete$", out, re.M), out
    assert re.search(r"^H1 ", out, re.M), out  # the hypotheses' table first


@pytest.mark.parametrize("args", [["sweep", "{inst}", "--vary", "N=1..3", "--workers", "2"],
                                  ["explore", "{inst}", "--swarm", "2", "--max-depth", "100000"]],
                         ids=["sweep", "swarm"])
def test_workers_die_with_a_coordinator_killed(tmp_path, args):
    """The coordinator itself killed with SIGKILL (no chance to stop its
    workers): they die with it rather than explore on, orphaned."""
    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER_N.replace("const N = 1;", "const N = 2;"))
    p = subprocess.Popen([sys.executable, "-m", "serq", *[a.format(inst=inst) for a in args], "--time-limit", "120"],
                         cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kids = []
    try:
        deadline = time.monotonic() + 60
        while len(kids) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
            kids = children(p.pid)
        assert len(kids) == 2
        time.sleep(0.5)
        p.kill()
        p.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(k) for k in kids):
            time.sleep(0.1)
        assert not [k for k in kids if alive(k)], "workers left behind"
    finally:
        for k in kids:  # (before the fix: orphans to end here)
            if alive(k):
                os.kill(k, signal.SIGKILL)


def _nap(x):
    time.sleep(0.3)
    return x


def test_a_pool_stopped_by_its_watch_drains_and_leaves_no_worker():
    """A memory bound met while the workers run (the swarm's `watch`): the
    wait stops with the limit, the drain still collects the jobs under way
    (the limit is not raised again while draining), and closing leaves no
    worker behind."""
    import multiprocessing

    from explorer.runtime.limits import LimitReached
    from explorer.runtime.supervise import Supervised

    def over():
        raise LimitReached("memory", 1)

    pool = Supervised(_nap, 2, watch=over)
    try:
        with pytest.raises(LimitReached):
            list(pool.imap_unordered(iter([1, 2])))
        assert sorted(got for _, got in pool.drain(5.0)) == [1, 2]
    finally:
        pool.close()
    assert not multiprocessing.active_children()
