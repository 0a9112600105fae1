"""Instance texts shared by several test files."""

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
