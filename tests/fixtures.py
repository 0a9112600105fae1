"""Instance texts shared by several test files."""

import os
from pathlib import Path
# Two chats on a 2-block pool: chunked prefill, lifo preemption, a prefix
# cache. Small enough to count by hand-checked runs; pinned exactly so any
# change of the semantics shows up first in tests/test_explore.py.
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
