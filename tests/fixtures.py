"""Instance texts and helpers shared by several test files."""

import functools
import os
import re
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
# Two chats on a 2-block pool: chunked prefill, lifo preemption, a prefix
# cache. Small enough to count by hand-checked runs; pinned exactly so any
# change of the semantics shows up first in tests/check/test_explore.py.
TWO_CHATS = """
pool kv { cap 8; block 4; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 4; cost 1ms + 10us * ntok; }
session chat {
  draw prompt in {3, 5};
  draw o in 1..2 hidden;
  let max_out = 2;
  let g = 0;
  hold kv reuse (c) need (prompt + g - c) take 0
       at admission (c = min(cached(kv), floor((prompt + g - 1) / 4) * 4)) {
    prefill (prompt + g - c) growing kv;
    decode (o - 1 - g) growing kv progress g;
  } keep (kv full);
}
workload { 2 x chat every 2ms; }
"""


# Unbounded: g grows by a draw at every turn, so neither the explorer nor
# the simulator ever ends on its own.
FOREVER = """
pool kv { cap 6; block 2; admit via gpu; }
stage gpu { budget 2; }
session s {
  let g = 0;
  while true {
    draw y in {1, 2};
    set g = g + y;
    turn;
  }
}
workload { 2 x s; }
"""


def children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


# the two requests of each chat start with `turn`: a chat waits for its user
# while the other is served
TURN_FIRST = """
pool kv { cap 12; block 2; admit via gpu; }
stage gpu { budget 4; }
session chat {
  repeat 2 {
    turn;
    hold kv need 2 take 0 { prefill 2 growing kv; }
  }
}
workload { 2 x chat; }
"""


# an agent's request spawns subagents and joins them; its second request
# reuses its cached conversation; the pool is small enough to preempt
AGENT_TURNS = """
pool kv { cap 8; block 2; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 4; cost 3 + ntok; }
session sub {
  hold kv need 2 take 0 { prefill 2 growing kv; decode 1 growing kv; }
  end;
}
session agent {
  let ctx = 0;
  repeat 2 {
    turn;
    hold kv reuse c need (ctx + 2 - c) take 0 at admission (c = min(cached(kv), ctx)) {
      prefill (ctx + 2 - c) growing kv;
    } keep (kv full);
    set ctx = ctx + 2;
    spawn sub;
    join;
  }
  end;
}
workload { 1 x agent; 1 x sub; }
"""


@contextmanager
def serq_ui(inst, *args):
    """`serq ui INST --port 0 ARGS` running as a real server: yields
    (proc, url, port). Then stopped by SIGINT, as a user stops it: it must
    exit 0 (its output kept in proc.out and proc.err)."""
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "-m", "serq", "ui", str(inst), "--port", "0", *args], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", proc.stdout.readline())
        assert m, "serq ui printed no address"
        yield proc, m.group(0), int(m.group(1))
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.out, proc.err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0 and "Traceback" not in proc.err, proc.err


def another_hash_seed() -> str:
    """A PYTHONHASHSEED other than this process's (which is random unless
    the environment fixes it): a subprocess with it hashes strings apart
    from this process, for the tests that compare output across the two."""
    return "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"


def per_request_slo(path) -> bool:
    """Whether an instance file checks a per-request SLO (`check ttft <= 3;`):
    it is explored over a model without rows (serq/check/slo.py)."""
    from serq.check.model import Checks
    from serq.check.slo import needs_product

    return needs_product(Checks.of_program(_explorer_program(str(path))))


def liveness(path) -> bool:
    """Whether an instance file has a `check eventually` line: looked for
    by one process on the whole graph (serq/check/liveness.py), refused
    with partitions, Ray, workers and swarms."""
    return any(c.kind == "eventually" for c in _explorer_program(str(path)).checks)


@functools.cache
def _explorer_program(path: str):
    """An instance file loaded for the explorer, once per process (the
    lists of parameters above read every instance, in several files)."""
    from serq.lang.load import load_path

    return load_path(path, explorer=True).program

# two chats of two turns on a shared prefix, with preemption (tests of `check sometimes` and quantifiers)
PREFIX_CHAT = """
const BS = 2;
prefix SYS = 3;

pool kv { cap 8; block BS; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 4; chunk 2; serve (admitted); }

session chat {
  let g = 0;
  repeat 2 {
    turn;
    set g = 0;
    hold kv prefix SYS reuse c need (SYS + 1 + g - c) take 0
         at admission (c = min(cached(kv), floor((SYS + g) / BS) * BS)) {
      prefill (SYS + 1 + g - c) growing kv;
      decode (2 - g) growing kv progress g;
    } keep (kv full);
  }
  end;
}

workload { 2 x chat; }
"""


def explore_with_line(tmp_path, capsys, line: str) -> tuple[str, int]:
    """`serq explore -q` of instances/decode_preempt.sq with `line`
    appended, which must be refused (exit 2): (its stderr, the line's
    number)."""
    from serq.cli import main

    src = (Path(__file__).resolve().parents[1] / "instances" / "decode_preempt.sq").read_text() + line + "\n"
    p = tmp_path / "bad.sq"
    p.write_text(src)
    assert main(["explore", str(p), "-q"]) == 2
    return capsys.readouterr().err, src.count("\n")
