"""`copies keep` (docs/language.md, "Copies"): a shared block a hold
computes when the cache has it already stays the hold's own copy until it
is released, then cached beside the first copy; hits find the first copy,
and when eviction takes one of its blocks another copy takes its place.
The same instances with `copies free` (the default) keep one copy.
Pinned by exact pool levels, the conservation invariant (simulator and
explorer), the front end's words and the oracle's recorded traces
(tests/vllm/37_*, 38_*, 39_*)."""

from __future__ import annotations

import pytest

from serq.check.explore import explore
from serq.diagnostics import SerqError
from serq.lang.fmt import format_program_source
from serq.lang.load import load_text
from serq.semantics.kernel.abi import COPY_OWNER
from serq.semantics.state import prefix_owner
from serq.sim.simulator import simulate

MERGE = """
prefix SYS = 16;
pool kv { cap 40; block 4; admit via gpu; copies keep; }
stage gpu { budget 12; chunk 8; cost 1ms; }
session chat {
  let n = SYS + 2;
  hold kv prefix SYS reuse c need (n - c) take 0
       at admission (c = min(cached(kv), floor((n - 1) / 4) * 4)) {
    prefill (n - c) growing kv;
    decode 1 growing kv;
  } keep (kv full);
}
workload { 2 x chat at 0; }
check invariant allocated(kv) + cached(kv) + free(kv) == 40;
"""

SAME_ITERATION = """
prefix SYS = 8;
pool kv { cap 40; block 4; admit via gpu; copies keep; }
stage gpu { budget 16; chunk 4; cost 1ms; }
session chat {
  let n = SYS + 2;
  hold kv prefix SYS reuse 0 need n take 0 { prefill n growing kv; } keep (kv full);
}
workload { 2 x chat at 0; }
check invariant allocated(kv) + cached(kv) + free(kv) == 40;
"""

COPIES = COPY_OWNER  # the entry of SYS's released copies (SYS is prefix 0)


def levels(text: str) -> list[tuple]:
    """kv's free units and cache entries (owner, units) after each iteration,
    and each session's hold as (own, copies) while it runs."""
    out = []

    def tr(tick, what, events, m, state):
        if what.startswith("iterate"):
            kv = state.pools[0]
            holds = tuple((h.own, h.copies) for s in state.sessions for h in s.holds)
            out.append((kv.free, tuple((e.owner, e.units) for e in kv.cache), holds))

    simulate(load_text(text, "t.sq").program, trace=tr)
    return out


def test_a_block_computed_after_another_hold_cached_it_is_a_second_copy():
    # iteration 0: chat#1 caches blocks 0-1, chat#2 hits them and caches
    # block 2; iteration 1: chat#1 computes block 2 again (its copy) and
    # caches block 3, which chat#2 then computes too (its copy): 8 units
    # more in use than with one copy; released, the copies stay cached
    assert levels(MERGE) == [
        (28, ((-3, 12),), ((0, 0), (0, 0))),
        (16, ((-3, 16),), ((4, 4), (4, 4))),
        (8, ((-3, 16),), ((8, 4), (8, 4))),
        (16, ((-3, 16), (COPIES, 8)), ()),
    ]
    one = levels(MERGE.replace(" copies keep;", ""))
    assert [x[:2] for x in one] == [(28, ((-3, 12),)), (24, ((-3, 16),)), (16, ((-3, 16),)), (24, ((-3, 16),))]


def test_two_holds_completing_one_block_in_the_same_iteration_keep_both_copies():
    assert levels(SAME_ITERATION) == [
        (32, ((-3, 4),), ((0, 0), (4, 4))),
        (24, ((-3, 8),), ((0, 0), (8, 8))),
        (24, ((-3, 8), (COPIES, 8)), ()),
    ]


PRESSURE = """
prefix SYS = 4;
pool kv { cap 20; block 4; admit via gpu; copies keep; }
stage gpu { budget 16; chunk 2; cost 1ms; }
session chat(n, o) {
  hold kv prefix SYS reuse c need (n - c) take 0
       at admission (c = min(cached(kv), floor((n - 1) / 4) * 4)) {
    prefill (n - c) growing kv;
    decode o growing kv;
  } keep (kv full);
}
session big {
  hold kv need 16 take 0 { prefill 16 growing kv; }
}
workload {
  1 x chat(n=SYS + 1, o=1) at 0;
  1 x chat(n=SYS + 2, o=5) at 0;
  1 x big at 10ms;
  1 x chat(n=SYS + 1, o=1) at 30ms;
}
check invariant allocated(kv) + cached(kv) + free(kv) == 20;
"""


def test_when_the_first_copy_is_evicted_the_other_copy_is_hit():
    # scenario 39 of tests/vllm: chat#1 and chat#2 complete SYS's block in
    # the same iteration (chat#1's is the first copy); chat#1 ends first, so
    # its copy is the oldest cached block and big evicts it: chat#2's copy,
    # released later, takes its place (vLLM's map returns it from then on),
    # big's second block is chat#2's private one, and chat#4 hits SYS
    hits, evicted = {}, []

    def tr(tick, what, events, m, state):
        for e in events:
            if e.kind == "hit":
                hits[m.session_label(state, e.sid)] = e.units
            if e.kind == "evict":
                evicted.append(e.owner)

    simulate(load_text(PRESSURE, "t.sq").program, trace=tr)
    assert hits == {"chat#4": 4}
    assert evicted == [-3, 1]  # a block of SYS (the copy that went), then chat#2's own


@pytest.mark.parametrize("src,keep,free", [(MERGE, 20, 19), (SAME_ITERATION, 17, 17), (PRESSURE, 3320, 2736)])
def test_the_explorer_keeps_every_unit_counted_with_copies(src, keep, free):
    # the conservation invariant holds in every state; the copies are part of
    # the state (distinct states with `copies keep` and with `copies free`)
    for text, distinct in ((src, keep), (src.replace(" copies keep;", ""), free)):
        res = explore(load_text(text, "t.sq").program)
        assert (res.verdict, res.stats.distinct) == ("pass", distinct)


def test_words_and_layout():
    assert format_program_source(MERGE.lstrip()) == MERGE.lstrip()
    prog = load_text(SAME_ITERATION, "t.sq").program
    assert prog.pools[0].copies == "keep"
    assert load_text(SAME_ITERATION.replace(" copies keep;", ""), "t.sq").program.pools[0].copies == "free"
    assert prefix_owner(prog, COPIES) == "copies of prefix SYS"
    assert prefix_owner(prog, -3) == "prefix SYS" and prefix_owner(prog, 0) is None


def test_copies_keep_without_a_prefix_on_the_pool_warns():
    src = SAME_ITERATION.replace("prefix SYS reuse 0", "reuse 0")
    d = load_text(src, "t.sq").warnings
    assert [(x.line, x.col, x.code) for x in d] == [(3, 6, "W510")]
    assert d[0].message == ("pool `kv`: `copies keep` has no effect: no hold names a prefix on `kv`, "
                            "so none of its blocks is shared")
    assert load_text(SAME_ITERATION, "t.sq").warnings == []


@pytest.mark.parametrize("opts,code", [("copies keep; copies free;", "E403"), ("copies all;", "E001")])
def test_bad_copies_options_are_located_errors(opts, code):
    with pytest.raises(SerqError) as e:
        load_text(SAME_ITERATION.replace("copies keep;", opts), "bad.sq")
    out = e.value.render()
    assert f"error[{code}]" in out and "bad.sq:3:" in out, out


def test_the_cache_has_room_for_every_session_every_prefix_and_their_copies():
    # two sessions, one prefix: both keep a private block, and the prefix has
    # its first copy and the released second one: four entries in all
    src = SAME_ITERATION.replace("let n = SYS + 2;", "let n = SYS + 4;")
    last = levels(src)[-1]
    assert last == (16, ((-3, 8), (0, 4), (1, 4), (COPIES, 8)), ())
