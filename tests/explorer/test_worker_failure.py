"""A worker process killed with SIGKILL during `serq explore --workers 2`:
the verdict "failed" (exit 18) names the worker and its cause, the
statistics so far are printed, and no child process remains. (Raising and
hung workers: tests/explorer/test_objects_on_processes.py.)"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures import alive, children  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

# Unbounded, and with a spawn: the rows engine falls back to the
# hash-partitioned engine, whose workers are processes.
SPAWNS = """
pool kv { cap 6; block 2; admit via gpu; }
stage gpu { budget 2; }
session c { turn; }
session s {
  let g = 0;
  while true {
    draw y in {1, 2};
    set g = g + y;
    spawn c;
    turn;
  }
}
workload { 2 x s; }
"""


def test_sigkill_of_a_worker_is_reported_with_the_statistics(tmp_path):
    inst = tmp_path / "spawns.sq"
    inst.write_text(SPAWNS)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-m", "serq", "explore", str(inst), "--workers", "2", "--progress"],
                         cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        kids = []
        for line in p.stderr:  # under way on the worker processes
            if line.startswith("exploring:"):
                kids = children(p.pid)
                if len(kids) == 2:
                    break
        assert len(kids) == 2, "no worker processes"
        victim = kids[1]
        os.kill(victim, signal.SIGKILL)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 18, (out, err)
    assert "Traceback" not in err
    lines = out.splitlines()
    m = re.fullmatch(r"failed: worker ([01]) died \(killed by SIGKILL\); stopped after (\d+) distinct states, "
                     r"none of them a violation; exploration incomplete", lines[0])
    assert m, out
    st = re.match(r"stats: generated=(\d+) distinct=(\d+) queue=(\d+) max_depth=(\d+) .* workers=2", lines[-1])
    assert st and int(st[2]) == int(m[2]) > 0, out
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(k) for k in kids):
        time.sleep(0.1)
    assert not [k for k in kids if alive(k)]


HUNG = """
import sys
sys.path[:0] = ["tests/explorer", "tests", "."]
from explorer import ModelFactory, check, interrupts
from test_objects_on_processes import _Hangs

class Hangs(_Hangs):  # says when it starts to hang (a file), for the test to send SIGINT then
    def actions(self, state):
        if state == 3:
            open(sys.argv[1], "w").close()
        return super().actions(state)

print("start", flush=True)
with interrupts():
    r = check(ModelFactory(Hangs), workers=2)
print(r.verdict)
print(r.message)
"""


def test_sigint_while_a_worker_hangs_names_it(tmp_path):
    hung = tmp_path / "hung"
    p = subprocess.Popen([sys.executable, "-c", HUNG, str(hung)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "start\n"
        deadline = time.monotonic() + 120
        while (len(children(p.pid)) < 2 or not hung.exists()) and time.monotonic() < deadline:
            time.sleep(0.1)
        kids = children(p.pid)
        assert len(kids) == 2 and hung.exists()
        time.sleep(1.5)  # a worker is in state 3's expansion for good: past the 1 s after which it is named
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    verdict, message = out.splitlines()[:2]
    assert verdict == "interrupted"
    assert re.fullmatch(r"stopped by SIGINT after \d+ distinct states, none of them a violation; exploration "
                        r"incomplete; worker [01] had not answered for \d+\.\d s", message), message
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(k) for k in kids):
        time.sleep(0.1)
    assert not [k for k in kids if alive(k)]


# A worker thread (serq's --workers N expands on threads) whose expansion
# never returns: a kernel call that does not end, as far as Python can tell.
STUCK_THREAD = """
import sys, threading
sys.path.insert(0, ".")
from serq.check.model import SerqModel
from serq.cli import main

real = SerqModel.array_expander
calls = [0]
lock = threading.Lock()

def array_expander(self):
    expand = real(self)

    def stuck(rows):
        with lock:
            calls[0] += 1
            n = calls[0]
        if n == 40:
            print("stuck", flush=True)
            threading.Event().wait()  # never set: this thread never returns
        return expand(rows)

    return stuck

SerqModel.array_expander = array_expander
sys.exit(main(["explore", sys.argv[1], "--workers", "2", "--time-limit", sys.argv[2], "--no-timing"]))
"""


def test_a_worker_thread_that_never_returns_ends_at_the_time_limit(tmp_path):
    from tests.fixtures import FOREVER

    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", STUCK_THREAD, str(inst), "3"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    took = time.monotonic() - t0
    assert r.returncode == 13, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "stuck"
    assert re.fullmatch(r"bound: no violation within the bound \(time_limit=3\.0\); exploration incomplete; "
                        r"worker [01] had not answered for \d+\.\d s when the time limit \(3\.0 s\) came", lines[1]), lines
    assert re.match(r"stats: generated=\d+ distinct=\d+ ", lines[2]) and "distinct=0 " not in lines[2]
    assert "Traceback" not in r.stderr
    # the time limit, the grace of 2 s, the start (the kernel loaded from its cache) and a margin:
    # the stuck daemon thread neither holds the search nor the interpreter's exit
    assert took < 3 + 2 + 30, took


@pytest.mark.parametrize("refused,flags", [(0, []), (1, []), (2, []), (1, ["--partitions", "2"])],
                         ids=["walker0", "walker1", "expander", "partitions"])
def test_a_worker_thread_the_system_refuses_is_reported(capsys, monkeypatch, refused, flags):
    """A thread that cannot be started (the system's limits on threads or
    memory): the verdict "failed" (exit 18) names it, with the statistics;
    the threads already started stop. With 3 workers, threads 0 and 1 are
    the walkers, 2 only expands; with partitions, the pool's threads."""
    import threading

    from serq.cli import main

    real = threading.Thread.start

    def start(self):
        if self.name == f"worker_{refused}":
            raise RuntimeError("can't start new thread")
        return real(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    before = threading.active_count()
    assert main(["explore", str(ROOT / "instances" / "vllm_chat.sq"), "--workers", "3", *flags, "--no-timing"]) == 18
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"failed: worker {refused} could not be started: can't start new thread; stopped after ")
    assert out[-1].startswith("stats: generated=")
    for t in threading.enumerate():  # one still in the model's code ends with its chunk
        if t.name.startswith("worker_"):
            t.join(30)
    assert threading.active_count() == before
