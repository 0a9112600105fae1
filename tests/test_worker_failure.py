"""A worker process killed with SIGKILL during `serq explore --workers 2`:
the verdict "failed" (exit 18) names the worker and its cause, the
statistics so far are printed, and no child process remains. (Raising and
hung workers: tests/explorer/test_explorer_parallel.py.)"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.fixtures import alive, children  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

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
from test_explorer_parallel import _Hangs
print("start", flush=True)
with interrupts():
    r = check(ModelFactory(_Hangs), workers=2)
print(r.verdict)
print(r.message)
"""


def test_sigint_while_a_worker_hangs_names_it():
    p = subprocess.Popen([sys.executable, "-c", HUNG], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline() == "start\n"
        deadline = time.monotonic() + 60
        while len(children(p.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        kids = children(p.pid)
        assert len(kids) == 2
        time.sleep(2.5)  # the workers are at state 3 by now, one of them for good
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
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
