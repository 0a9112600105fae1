"""Scenario tests of the step relation (serq.semantics.model): exact per-iteration
schedules of small inline instances, against the brief (section 4) and
vLLM's V1 scheduler (shared/design/vllm.md).

Each scenario drives the model directly — arrivals and iterations in a
fixed order, ties by the tie event, the first value of every draw — and
compares what every iteration did, in words, with the expected schedule.
Word legend (see `iteration_words`): `+X` X admitted, `X P4` X got 4
prefill tokens, `X D1` a decode token, `X prefill done`, `!X(reason)` X
preempted, `hit X 4` X re-borrowed 4 cached units, `evict X 4` 4 cached
units of X freed, `rel X own/kept`, `end X`, `STUCK X`.
"""

from __future__ import annotations

from serq.lang.load import load_text
from serq.semantics.model import FirstOracle, Model


def model(text: str) -> Model:
    return Model(load_text(text).program, ties="seq")


def iteration_words(m: Model, state, events) -> str:
    out = []
    lab = lambda sid: m.session_label(state, sid)  # noqa: E731
    for e in events:
        k = e.kind
        if k == "serve":
            out.append(f"{lab(e.sid)} {'D' if e.phase == 'decode' else 'P'}{e.n}")
        elif k == "admit":
            out.append(f"+{lab(e.sid)}")
        elif k == "preempt":
            out.append(f"!{lab(e.sid)}({e.why})")
        elif k == "hit":
            out.append(f"hit {lab(e.sid)} {e.units}")
        elif k == "evict":
            out.append(f"evict {lab(e.owner)} {e.units}")
        elif k == "run_done":
            out.append(f"{lab(e.sid)} {e.phase} done")
        elif k == "end":
            out.append(f"end {lab(e.sid)}")
        elif k == "release":
            out.append(f"rel {lab(e.sid)} {e.units}/{e.kept}")
        elif k == "stuck":
            out.append(f"STUCK {lab(e.sid)}")
        elif k == "fault":
            out.append(f"FAULT {e.what}: {e.message}")
    return ", ".join(out)


def drive(m: Model, script, state=None):
    """Apply base actions in order: ("arrive", sid), ("turn", sid),
    ("iterate", stage) or "run" (iterate stage 0 until it has no work).
    Returns (state, words of every applied iteration)."""
    s = m.initial_state() if state is None else state
    o = FirstOracle()
    words = []
    for a in script:
        if a == "run":
            while True:
                nxt, ev = m.run_with(s, ("iterate", 0), o)
                if nxt is None:
                    break
                s = nxt
                words.append(iteration_words(m, s, ev))
                assert s.fault is None, s.fault
                assert len(words) < 1000
            continue
        nxt, ev = m.run_with(s, a, o)
        assert nxt is not None, f"{a} not applicable"
        s = nxt
        if a[0] == "iterate":
            words.append(iteration_words(m, s, ev))
    return s, words


def arrive_all(m: Model):
    return [("arrive", i) for i in range(len(m.workload))]


VLLM_CHAT = """
const BS = 4;
pool kv { cap CAP; block BS; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 16; serve (admitted); cost 1ms; }
session chat(prompt = 4, o = 8) {
  let g = 0;
  hold kv reuse c need (prompt + g - c) take 0
       at admission (c = min(cached(kv), floor((prompt + g - 1) / BS) * BS)) {
    prefill (prompt + g - c) growing kv;
    decode (o - 1 - g) growing kv progress g;
  } keep (kv full);
  end;
}
"""


# ---------------------------------------------------------------- budget and chunks


def test_chunked_prefill_shares_the_budget_with_decodes():
    # a decodes from iteration 2 on; b arrives then and gets the budget
    # left after a's decode token, at most `chunk` per iteration
    m = model("""
pool seqs { cap 4; admit via gpu; }
stage gpu { budget 8; chunk 4; serve (admitted); cost 1ms; }
session s(p = 2, d = 5) { hold seqs 1 { prefill (p); decode (d); } end; }
workload { 1 x s(p = 2, d = 5); 1 x s(p = 13, d = 2); }
""")
    _, words = drive(m, [("arrive", 0), ("iterate", 0), ("arrive", 1), "run"])
    assert words == [
        "+s#1, s#1 P2, s#1 prefill done",
        "+s#2, s#1 D1, s#2 P4",
        "s#1 D1, s#2 P4",
        "s#1 D1, s#2 P4",
        "s#1 D1, s#2 P1, s#2 prefill done",
        "s#1 D1, s#2 D1, s#1 decode done, rel s#1 1/0, end s#1",
        "s#2 D1, s#2 decode done, rel s#2 1/0, end s#2",
    ]


def test_budget_without_chunk_goes_to_the_prefill_after_the_decodes():
    m = model("""
pool seqs { cap 4; admit via gpu; }
stage gpu { budget 8; serve (admitted); cost 1ms; }
session s(p = 2, d = 3) { hold seqs 1 { prefill (p); decode (d); } end; }
workload { 1 x s(p = 2, d = 3); 1 x s(p = 12, d = 1); }
""")
    _, words = drive(m, [("arrive", 0), ("iterate", 0), ("arrive", 1), "run"])
    assert words == [
        "+s#1, s#1 P2, s#1 prefill done",
        "+s#2, s#1 D1, s#2 P7",
        "s#1 D1, s#2 P5, s#2 prefill done",
        "s#1 D1, s#2 D1, s#1 decode done, rel s#1 1/0, end s#1, s#2 decode done, rel s#2 1/0, end s#2",
    ]


def test_serve_order_decides_who_gets_a_short_budget():
    # budget 6, chunk 4: in iteration 2 both are resident and the first in
    # serve order gets a whole chunk, the other what is left
    text = """
pool seqs { cap 4; admit via gpu; }
stage gpu { budget 6; chunk 4; serve SERVE; cost 1ms; }
session s { hold seqs 1 { prefill 8; } end; }
workload { 2 x s; }
"""
    m = model(text.replace("SERVE", "(admitted)"))
    _, words = drive(m, [("arrive", 0), ("arrive", 1), "run"])
    assert words == [
        "+s#1, +s#2, s#1 P4, s#2 P2",  # s#2 admitted with the 2 tokens left
        "s#1 P4, s#2 P2, s#1 prefill done, rel s#1 1/0, end s#1",
        "s#2 P4, s#2 prefill done, rel s#2 1/0, end s#2",
    ]
    m = model(text.replace("SERVE", "(desc admitted)"))
    _, words = drive(m, [("arrive", 0), ("arrive", 1), "run"])
    assert words == [
        "+s#1, +s#2, s#1 P4, s#2 P2",
        "s#2 P4, s#1 P2",
        "s#2 P2, s#1 P2, s#2 prefill done, rel s#2 1/0, end s#2, s#1 prefill done, rel s#1 1/0, end s#1",
    ]


def test_no_admission_without_budget_left():
    # vLLM admits while budget > 0: s#1 takes the whole budget, s#2 waits
    m = model("""
pool seqs { cap 4; admit via gpu; }
stage gpu { budget 4; serve (admitted); cost 1ms; }
session s { hold seqs 1 { prefill 8; } end; }
workload { 2 x s; }
""")
    _, words = drive(m, [("arrive", 0), ("arrive", 1), "run"])
    assert words == [
        "+s#1, s#1 P4",
        "s#1 P4, s#1 prefill done, rel s#1 1/0, end s#1",
        "+s#2, s#2 P4",
        "s#2 P4, s#2 prefill done, rel s#2 1/0, end s#2",
    ]


# ---------------------------------------------------------------- admission


HOL = """
pool seqs { cap 4; admit via gpu; HOL }
pool kv { cap 8; block 4; admit via gpu; }
stage gpu { budget 16; cost 1ms; }
session s(p = 4, d = 3) { hold seqs 1, kv reserve (p) { prefill (p); decode (d); } end; }
workload { 1 x s(p = 4, d = 3); 1 x s(p = 8, d = 1); 1 x s(p = 4, d = 1); }
"""


def test_head_of_line_blocking():
    # s#2 needs all 8 units; s#3 would fit next to s#1 but waits behind s#2
    m = model(HOL.replace("HOL", ""))
    _, words = drive(m, arrive_all(m) + ["run"])
    assert words == [
        "+s#1, s#1 P4, s#1 prefill done",
        "s#1 D1",
        "s#1 D1",
        "s#1 D1, s#1 decode done, rel s#1 1/0, rel s#1 4/0, end s#1",
        "+s#2, s#2 P8, s#2 prefill done",
        "s#2 D1, s#2 decode done, rel s#2 1/0, rel s#2 8/0, end s#2",
        "+s#3, s#3 P4, s#3 prefill done",
        "s#3 D1, s#3 decode done, rel s#3 1/0, rel s#3 4/0, end s#3",
    ]


def test_hol_skip_lets_a_later_hold_pass():
    m = model(HOL.replace("HOL", "hol skip;"))
    _, words = drive(m, arrive_all(m) + ["run"])
    assert words == [
        "+s#1, +s#3, s#1 P4, s#3 P4, s#1 prefill done, s#3 prefill done",
        "s#1 D1, s#3 D1, s#3 decode done, rel s#3 1/0, rel s#3 4/0, end s#3",
        "s#1 D1",
        "s#1 D1, s#1 decode done, rel s#1 1/0, rel s#1 4/0, end s#1",
        "+s#2, s#2 P8, s#2 prefill done",
        "s#2 D1, s#2 decode done, rel s#2 1/0, rel s#2 8/0, end s#2",
    ]


def test_no_admission_in_an_iteration_with_a_preemption():
    # vLLM: admission only if nothing was preempted in this step
    m = model("""
pool kv { cap 8; block 4; admit via gpu; preempt lifo; }
stage gpu { budget 16; cost 1ms; }
session long { hold kv need 4 take 0 { prefill 4 growing kv; decode 5 growing kv; } end; }
session late { hold kv need 4 take 0 { prefill 4 growing kv; } end; }
workload { 2 x long; 1 x late; }
""")
    s, words = drive(m, [("arrive", 0), ("arrive", 1), ("iterate", 0), ("arrive", 2), ("iterate", 0)])
    assert words == [
        "+long#1, +long#2, long#1 P4, long#2 P4, long#1 prefill done, long#2 prefill done",
        # long#1's first decode needs a block: long#2 (admitted last) is the
        # victim and goes to the queue front; late#3 is not admitted
        "!long#2(kv full), rel long#2 4/0, long#1 D1",
    ]
    assert s.pools[0].queue == (1, 2)  # kv's queue: long#2 in front of late#3


# ---------------------------------------------------------------- preemption


def test_self_preemption_during_prefill_is_stuck():
    # small#2 is the last admitted: when its second chunk needs a block it is
    # its own victim, serving stops, and it re-queues at the front. The
    # second time it is preempted at the same position: stuck.
    m = model("""
pool kv { cap 12; block 4; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 8; chunk 4; serve (admitted); cost 1ms; }
session big { hold kv reserve 8 { decode 6; } end; }
session small { hold kv need 4 take 0 { prefill 8 growing kv; } end; }
workload { 1 x big; 1 x small; }
""")
    s, words = drive(m, arrive_all(m) + ["run"])
    assert words == [
        "+big#1, +small#2, big#1 D1, small#2 P4",
        "!small#2(self), rel small#2 4/0, big#1 D1",
        "+small#2, big#1 D1, small#2 P4",
        "!small#2(self), rel small#2 4/0, STUCK small#2, big#1 D1",
        "+small#2, big#1 D1, small#2 P4",
        "!small#2(self), rel small#2 4/0, STUCK small#2, big#1 D1, big#1 decode done, rel big#1 8/0, end big#1",
        "+small#2, small#2 P4",
        "small#2 P4, small#2 prefill done, rel small#2 8/0, end small#2",
    ]
    assert m.is_done(s)
    # the stuck mark is transient: it marks the state right after the preemption
    s4, _ = drive(m, arrive_all(m) + [("iterate", 0)] * 4)
    assert [k for k, _ in m.check_invariants(s4)] == ["stuck"]
    assert m.check_invariants(s) == []


def test_self_preemption_stops_serving_for_the_iteration():
    # a#2 is its own victim in iteration 2: b#3, after it in serve order,
    # gets nothing in that iteration (vLLM FCFS stops the running pass)
    m = model("""
pool kv { cap 12; block 4; admit via gpu; preempt lifo; }
pool other { admit via gpu; }
stage gpu { budget 16; chunk 4; serve (admitted); cost 1ms; }
session big { hold kv reserve 8 { decode 4; } end; }
session a { hold kv need 4 take 0 { prefill 8 growing kv; } end; }
session b { hold other 1 { decode 3; } end; }
workload { 1 x big; 1 x a; 1 x b; }
""")
    _, words = drive(m, arrive_all(m) + [("iterate", 0)] * 3)
    assert words == [
        "+big#1, +a#2, +b#3, big#1 D1, a#2 P4, b#3 D1",
        "!a#2(self), rel a#2 4/0, big#1 D1",
        "+a#2, big#1 D1, b#3 D1, a#2 P4",  # re-admitted: served after the residents
    ]


def test_preemption_during_decode_resumes_it_does_not_restart():
    # chat#2 is preempted after 4 decode tokens (g = 4). It keeps its full
    # blocks (8 units); chat#1's growth evicts one of them. Re-admitted, it
    # re-hits c = 4 units and recomputes prompt + g - c = 4 + 4 - 4 = 4
    # tokens, then decodes o - 1 - g = 3 more — not o - 1 = 7.
    m = model(VLLM_CHAT.replace("CAP", "16") + "workload { 2 x chat; }")
    s, words = drive(m, arrive_all(m) + ["run"])
    assert words == [
        "+chat#1, +chat#2, chat#1 P4, chat#2 P4, chat#1 prefill done, chat#2 prefill done",
        "chat#1 D1, chat#2 D1",
        "chat#1 D1, chat#2 D1",
        "chat#1 D1, chat#2 D1",
        "chat#1 D1, chat#2 D1",
        "!chat#2(kv full), rel chat#2 8/8, evict chat#2 4, chat#1 D1",
        "chat#1 D1",
        "chat#1 D1, chat#1 decode done, rel chat#1 12/8, end chat#1",
        "hit chat#2 4, +chat#2, chat#2 P4, chat#2 prefill done",
        "evict chat#1 4, chat#2 D1",
        "chat#2 D1",
        "chat#2 D1, chat#2 decode done, rel chat#2 12/8, end chat#2",
    ]
    # every session decoded exactly o - 1 = 7 tokens in all
    assert sum(w.count("chat#2 D1") for w in words) == 7
    assert sum(w.count("chat#1 D1") for w in words) == 7
    g = m.progs[0].slots["g"]
    assert [x.attrs[g] for x in s.sessions] == [7, 7]


def test_resumed_session_rehits_its_own_cached_blocks():
    # chat#2 starts one iteration later, so when chat#1 needs a third block
    # chat#2 has used 7 units of 8: it keeps its one full block (4) and
    # frees the other, which chat#1 takes without evicting anything. On
    # re-admission chat#2 re-hits its own 4 units: c = 4, recompute
    # prompt + g - c = 4 + 3 - 4 = 3, then o - 1 - g = 8 - 1 - 3 = 4 decodes.
    m = model(VLLM_CHAT.replace("CAP", "16") + "workload { 1 x chat(o = 9); 1 x chat(o = 8); }")
    s, words = drive(m, [("arrive", 0), ("iterate", 0), ("arrive", 1), "run"])
    assert words == [
        "+chat#1, chat#1 P4, chat#1 prefill done",
        "+chat#2, chat#1 D1, chat#2 P4, chat#2 prefill done",
        "chat#1 D1, chat#2 D1",
        "chat#1 D1, chat#2 D1",
        "chat#1 D1, chat#2 D1",
        "!chat#2(kv full), rel chat#2 8/4, chat#1 D1",
        "chat#1 D1",
        "chat#1 D1",
        "chat#1 D1, chat#1 decode done, rel chat#1 12/12, end chat#1",
        # its own 4 units come back (hit); the recomputed 3 tokens grow the
        # hold to 7 units, the second block evicting chat#1's cache
        "hit chat#2 4, +chat#2, evict chat#1 4, chat#2 P3, chat#2 prefill done",
        "chat#2 D1",
        "evict chat#1 4, chat#2 D1",
        "chat#2 D1",
        "chat#2 D1, chat#2 decode done, rel chat#2 12/8, end chat#2",
    ]


def test_preempt_none_makes_the_grower_wait():
    # s#1's first decode needs a block; with `preempt none` it gets no token
    # until t#2 (whose decode does not grow) ends and frees its block
    m = model("""
pool kv { cap 8; block 4; admit via gpu; preempt none; }
stage gpu { budget 16; cost 1ms; }
session s { hold kv need 4 take 0 { prefill 4 growing kv; decode 3 growing kv; } end; }
session t { hold kv need 4 take 0 { prefill 4 growing kv; decode 2; } end; }
workload { 1 x s; 1 x t; }
""")
    s, words = drive(m, arrive_all(m) + ["run"])
    assert words == [
        "+s#1, +t#2, s#1 P4, t#2 P4, s#1 prefill done, t#2 prefill done",
        "t#2 D1",
        "t#2 D1, t#2 decode done, rel t#2 4/0, end t#2",
        "s#1 D1",
        "s#1 D1",
        "s#1 D1, s#1 decode done, rel s#1 8/0, end s#1",
    ]
    assert m.is_done(s)


def test_preempt_none_deadlock_is_a_zero_work_iteration():
    # both growers wait for a block the other holds: no iteration does
    # anything, so none is an action — a deadlock state
    m = model("""
pool kv { cap 8; block 4; admit via gpu; preempt none; }
stage gpu { budget 16; cost 1ms; }
session s { hold kv need 4 take 0 { prefill 4 growing kv; decode 3 growing kv; } end; }
workload { 2 x s; }
""")
    s, words = drive(m, arrive_all(m) + ["run"])
    assert words == ["+s#1, +s#2, s#1 P4, s#2 P4, s#1 prefill done, s#2 prefill done"]
    assert not m.is_done(s) and m.base_actions(s) == [("iterate", 0)]
    assert m.run_with(s, ("iterate", 0), FirstOracle())[0] is None


# ---------------------------------------------------------------- the prefix cache


def test_hit_ceiling_is_floor_of_n_minus_1_over_bs_blocks():
    # 8 tokens in blocks of 4 are cached; a lookup may hit at most
    # floor((8 - 1) / 4) * 4 = 4 of them: the last block is recomputed
    m = model("""
const BS = 4;
pool kv { cap 32; block BS; admit via gpu; evict lru; }
stage gpu { budget 64; cost 1ms; }
session s {
  let n = 8;
  hold kv reuse c1 need (n - c1) take 0 at admission (c1 = min(cached(kv), floor((n - 1) / BS) * BS)) {
    prefill (n - c1) growing kv;
  } keep (kv full);
  hold kv reuse c2 need (n - c2) take 0 at admission (c2 = min(cached(kv), floor((n - 1) / BS) * BS)) {
    prefill (n - c2) growing kv;
  } keep (kv full);
  end;
}
workload { 1 x s; }
""")
    s, words = drive(m, [("arrive", 0), "run"])
    assert words == [
        "+s#1, s#1 P8, s#1 prefill done, rel s#1 8/8",
        "hit s#1 4, +s#1, s#1 P4, s#1 prefill done, rel s#1 8/8, end s#1",
    ]
    slots = m.progs[0].slots
    assert (s.sessions[0].attrs[slots["c1"]], s.sessions[0].attrs[slots["c2"]]) == (0, 4)


def test_reuse_beyond_the_cache_is_a_fault():
    m = model("""
pool kv { cap 8; block 4; admit via gpu; }
stage gpu { budget 8; cost 1ms; }
session s { hold kv reuse 4 need 4 { prefill 4; } end; }
workload { 1 x s; }
""")
    s = drive(m, [("arrive", 0)])[0]
    nxt, ev = m.run_with(s, ("iterate", 0), FirstOracle())
    assert nxt.fault[0] == "error" and "exceeds the session's cached units 0" in nxt.fault[1]


LRU = """
pool kv { cap 24; block 4; admit via gpu; evict lru; }
stage gpu { budget 16; chunk 4; serve SERVE; cost 1ms; }
session a { hold kv need 8 take 0 { prefill 8 growing kv; } keep (kv full); end; }
session c { hold kv reserve 20 { prefill 4; } end; }
workload { 2 x a; 1 x c; }
"""


def test_two_prefills_finishing_in_one_iteration_keep_serve_order():
    # both finish in iteration 2; completions (and so releases) follow the
    # serve order, whichever it is
    for serve, first, second in (("(admitted)", "a#1", "a#2"), ("(desc admitted)", "a#2", "a#1")):
        m = model(LRU.replace("SERVE", serve))
        _, words = drive(m, [("arrive", 0), ("arrive", 1), ("iterate", 0), ("iterate", 0)])
        assert words == [
            "+a#1, +a#2, a#1 P4, a#2 P4",  # both admitted in this iteration: admission order
            f"{first} P4, {second} P4, {first} prefill done, rel {first} 8/8, end {first}, "
            f"{second} prefill done, rel {second} 8/8, end {second}",
        ], serve


def test_lru_eviction_ties_in_release_order():
    # a#1 and a#2 release in the same iteration; c#3 needs 3 blocks more than
    # are free: the earlier release is evicted first, whole, then the other
    for serve, first, second in (("(admitted)", "a#1", "a#2"), ("(desc admitted)", "a#2", "a#1")):
        m = model(LRU.replace("SERVE", serve))
        s, words = drive(m, [("arrive", 0), ("arrive", 1), ("iterate", 0), ("iterate", 0), ("arrive", 2),
                             ("iterate", 0)])
        assert words[2] == (f"evict {first} 4, evict {first} 4, evict {second} 4, +c#3, c#3 P4, "
                            "c#3 prefill done, rel c#3 20/0, end c#3"), serve
        owner = 0 if second == "a#1" else 1
        assert [(e.owner, e.units) for e in s.pools[0].cache] == [(owner, 4)]  # 4 units of the later release remain


def test_lru_prefers_the_least_recently_released():
    # a#1 releases first (iteration 1), a#2 later (iteration 3): a#1 goes first
    m = model("""
pool kv { cap 12; block 4; admit via gpu; evict lru; }
stage gpu { budget 16; cost 1ms; }
session a(d = 1) { hold kv need 4 take 0 { prefill 4 growing kv; decode (d); } keep (kv full); end; }
session c { hold kv reserve 8 { prefill 1; } end; }
workload { 1 x a(d = 1); 1 x a(d = 3); 1 x c; }
""")
    _, words = drive(m, [("arrive", 0), ("arrive", 1), "run", ("arrive", 2), ("iterate", 0)])
    assert words == [
        "+a#1, +a#2, a#1 P4, a#2 P4, a#1 prefill done, a#2 prefill done",
        "a#1 D1, a#2 D1, a#1 decode done, rel a#1 4/4, end a#1",
        "a#2 D1",
        "a#2 D1, a#2 decode done, rel a#2 4/4, end a#2",
        "evict a#1 4, +c#3, c#3 P1, c#3 prefill done, rel c#3 8/0, end c#3",
    ]


def test_admission_evicts_other_sessions_before_its_own_cache():
    m = model("""
pool kv { cap 8; block 4; admit via gpu; evict lru; }
stage gpu { budget 16; cost 1ms; }
session a { hold kv need 4 take 0 { prefill 4 growing kv; } keep (kv full);
            hold kv reserve 4 { prefill 1; } end; }
session b { hold kv need 4 take 0 { prefill 4 growing kv; } keep (kv full); end; }
workload { 1 x a; 1 x b; }
""")
    # b's entry is released after a's, but a's own entry is protected when
    # a admits its second hold: b's is evicted
    _, words = drive(m, [("arrive", 1), ("iterate", 0), ("arrive", 0), ("iterate", 0), ("iterate", 0)])
    assert words == [
        "+b#2, b#2 P4, b#2 prefill done, rel b#2 4/4, end b#2",
        "+a#1, a#1 P4, a#1 prefill done, rel a#1 4/4",
        "evict b#2 4, +a#1, a#1 P1, a#1 prefill done, rel a#1 4/0, end a#1",
    ]


def test_vllm_exact_resume_counts_the_prefill_token():
    # vLLM recomputes prompt + every output token so far on resume, and that
    # prefill samples the next token. The output counted by `g` must then
    # include the prefill's token (set after the prefill): preempted after
    # 4 decodes, g = 5 outputs; re-admitted with c = 4 it recomputes
    # prompt + g - c = 4 + 5 - 4 = 5 tokens and decodes o - g = 8 - 6 = 2
    # (vLLM: num_tokens - hits, then max_tokens - outputs). With `g` counting
    # decodes only (VLLM_CHAT above), the same preemption recomputes 4 and
    # decodes 3: the same tokens in all, one iteration more.
    m = model("""
const BS = 4;
pool kv { cap 16; block BS; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 16; serve (admitted); cost 1ms; }
session chat(prompt = 4, o = 8) {
  let g = 0;
  hold kv reuse c need (prompt + g - c) take 0
       at admission (c = min(cached(kv), floor((prompt + g - 1) / BS) * BS)) {
    prefill (prompt + g - c) growing kv;
    set g = g + 1;
    decode (o - g) growing kv progress g;
  } keep (kv full);
  end;
}
workload { 2 x chat; }
""")
    s, words = drive(m, arrive_all(m) + ["run"])
    assert words == [
        "+chat#1, +chat#2, chat#1 P4, chat#2 P4, chat#1 prefill done, chat#2 prefill done",
        "chat#1 D1, chat#2 D1",
        "chat#1 D1, chat#2 D1",
        "chat#1 D1, chat#2 D1",
        "chat#1 D1, chat#2 D1",
        "!chat#2(kv full), rel chat#2 8/8, evict chat#2 4, chat#1 D1",
        "chat#1 D1",
        "chat#1 D1, chat#1 decode done, rel chat#1 12/8, end chat#1",
        "hit chat#2 4, +chat#2, evict chat#1 4, chat#2 P5, chat#2 prefill done",
        "chat#2 D1",
        "chat#2 D1, chat#2 decode done, rel chat#2 12/8, end chat#2",
    ]
    g = m.progs[0].slots["g"]
    assert [x.attrs[g] for x in s.sessions] == [8, 8]  # o outputs each


# ---------------------------------------------------------------- tie events of serve and victim orders


ADMIT_REVERSED = """
pool seqs { cap 4; admit via gpu; queue (desc arrived); }
stage gpu { budget 6; chunk 4; serve SERVE; cost 1ms; }
session s { hold seqs 1 { prefill 8; } end; }
workload { 2 x s; }
"""


def test_serve_order_follows_its_declared_tie_event():
    # the queue admits s#2 before s#1 (desc arrived): an `arrived` tie
    # serves s#1 first, an `admitted` tie s#2 first
    # (the admitting iteration hands out budget in admission order)
    m = model(ADMIT_REVERSED.replace("SERVE", "(arrived)"))
    _, words = drive(m, [("arrive", 0), ("arrive", 1), "run"])
    assert words[:2] == ["+s#2, +s#1, s#2 P4, s#1 P2", "s#1 P4, s#2 P2"]
    m = model(ADMIT_REVERSED.replace("SERVE", "(admitted)"))
    _, words = drive(m, [("arrive", 0), ("arrive", 1), "run"])
    assert words[:2] == ["+s#2, +s#1, s#2 P4, s#1 P2", "s#2 P4, s#1 P2, s#2 prefill done, rel s#2 1/0, end s#2"]


VICTIM_BY = """
pool kv { cap 4; admit via gpu; queue (desc arrived); preempt VICTIM; }
stage gpu { budget 4; chunk 2; serve (admitted); cost 1ms; }
session s { hold kv take 1 { prefill 4 growing kv; } end; }
workload { 2 x s; }
"""


def test_victim_order_follows_its_declared_tie_event():
    # s#2 is admitted first (desc arrived queue): an `arrived` tie makes the
    # earliest arrival (s#1) the victim, an `admitted` tie the earliest
    # admission (s#2)
    for victim, who in (("(arrived)", "s#1"), ("(admitted)", "s#2"), ("(desc arrived)", "s#2")):
        m = model(VICTIM_BY.replace("VICTIM", victim))
        _, words = drive(m, [("arrive", 0), ("arrive", 1), "run"])
        first = next(w for w in words if "!" in w)
        assert f"!{who}(" in first, (victim, words)
