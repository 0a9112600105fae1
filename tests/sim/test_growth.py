"""A run's growth is all or nothing, as vLLM allocates a chunk's blocks
(docs/language.md, Runs): a grower that cannot get every block it needs
from free and evictable units takes none and evicts nothing, and preempts
its victim first."""

from __future__ import annotations

from serq.lang.load import load_text
from serq.sim.simulator import simulate

GROW = """
pool kv { cap 16; block 4; admit via gpu; }
stage gpu { budget 16; cost 1ms; }
session a {
  hold kv need 4 take 0 { prefill 4 growing kv; } keep (kv full);
}
session g {
  hold kv need 4 take 0 { prefill 4 growing kv; prefill 8 growing kv; }
}
session v {
  hold kv need 8 take 0 { prefill 8 growing kv; decode 2 growing kv; }
}
workload {
  1 x a at 0ms;
  1 x g at 1ms;
  1 x v at 1ms;
}
check invariant allocated(kv) + cached(kv) + free(kv) == 16;
"""


def test_a_grower_that_cannot_get_every_block_preempts_before_it_evicts():
    # at 2 ms g needs 2 blocks at once: none is free and a's cached block is
    # the only evictable one, so g evicts nothing, preempts v (admitted
    # last) and takes v's blocks: a's block stays cached (g then ends, and
    # its 3 blocks are free again)
    steps = []

    def tr(tick, what, events, m, state):
        if what.startswith("iterate"):
            kinds = [e.kind for e in events if e.kind in ("evict", "preempt")]
            cache = tuple((m.session_label(state, e.owner), e.units) for e in state.pools[0].cache)
            steps.append((tick // 1_000_000, kinds, state.pools[0].free, cache))

    simulate(load_text(GROW, "t.sq").program, trace=tr)
    assert steps[:3] == [(0, [], 12, (("a#1", 4),)), (1, [], 0, (("a#1", 4),)), (2, ["preempt"], 12, (("a#1", 4),))]
