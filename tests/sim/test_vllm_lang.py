"""The constructs that let an instance say vLLM's scheduler options:
shared prefixes (content-addressed cache keys), pool levels read by
`budget`/`chunk` (at the iteration's start) and by admission headers,
`self_preempt stop | continue`, and `tick` (the order of one tick's
arrivals and turn returns). Each pinned by an exact schedule (`serq run`'s
trace), by exact explorer counts, and by its diagnostics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from serq.diagnostics import SerqError
from serq.check.explore import explore
from serq.lang.fmt import format_program_source
from serq.ir import Program
from serq.lang.load import load_path, load_text
from serq.sim.report import trace_line
from serq.sim.simulator import simulate

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
CONSTRUCTS = HERE / "kernel_instances" / "vllm_constructs.sq"


def schedule(text: str) -> list[str]:
    """`serq run --trace` of an instance: one line per action."""
    lines: list[str] = []
    simulate(load_text(text, "t.sq").program,
             trace=lambda tick, what, events, m, state: lines.append(trace_line(tick, what, events, m, state).strip()))
    return lines


def iterations(text: str) -> list[str]:
    return [l for l in schedule(text) if " iterate " in l or "coalesced" in l]


def diagnose(src: str) -> str:
    try:
        load_text(src, "bad.sq")
    except SerqError as e:
        return e.render()
    return "OK"


# ---------------------------------------------------------------- shared prefixes

CHAT = """
prefix SYS = 12;
prefix TOOLS = SYS + 8;
pool kv { cap 64; block 4; admit via gpu; }
stage gpu { budget 64; cost 1ms; }
session a(n) {
  hold kv prefix TOOLS reuse c need (n - c) take 0
       at admission (c = min(cached(kv), floor((n - 1) / 4) * 4)) {
    prefill (n - c) growing kv;
    decode 2 growing kv;
  } keep (kv full);
}
session b(n) {
  hold kv prefix SYS reuse c need (n - c) take 0
       at admission (c = min(cached(kv), floor((n - 1) / 4) * 4)) {
    prefill (n - c) growing kv;
    decode 2 growing kv;
  } keep (kv full);
}
workload { 1 x a(TOOLS + 3) at 0; 1 x b(SYS + 5) at 1ms; 1 x a(TOOLS + 3) at 2ms; 1 x a(TOOLS + 1) at 10ms; }
check invariant allocated(kv) + cached(kv) + free(kv) == 64 and evictable(kv) <= cached(kv);
"""


def test_a_shared_prefix_is_hit_by_other_sessions_while_its_first_user_runs():
    # SYS = 12 tokens = blocks 0-2; TOOLS = SYS + 8 = blocks 3-4 (blocks of 4).
    # b#2 shares SYS only (12); a#3 shares TOOLS (20, capped at
    # floor((23 - 1) / 4) * 4 = 20); a#4 (21 tokens) hits 20 = its cap, with
    # every user gone: the shared blocks stayed in the cache.
    assert iterations(CHAT) == [
        "0.000000 ms  iterate gpu until 1.000000 ms: a#1 admitted (kv); shape ntok=23 ndec=0 nreq=1 kvb=6; "
        "a#1 prefill 23 (23/23); a#1 prefill done",
        "1.000000 ms  iterate gpu until 2.000000 ms: b#2 hits 12 cached units of kv; b#2 admitted (kv); "
        "shape ntok=6 ndec=1 nreq=2 kvb=11; a#1 decode 1 (1/2); b#2 prefill 5 (5/5); b#2 prefill done",
        "2.000000 ms  iterate gpu until 3.000000 ms: a#3 hits 20 cached units of kv; a#3 admitted (kv); "
        "shape ntok=5 ndec=2 nreq=3 kvb=18; a#1 decode 1 (2/2); b#2 decode 1 (1/2); a#3 prefill 3 (3/3); "
        "a#1 decode done; a#1 releases 8 units of kv (4 kept); a#1 ends; a#3 prefill done",
        "3.000000 ms  iterate gpu until 4.000000 ms: shape ntok=2 ndec=2 nreq=2 kvb=11; b#2 decode 1 (2/2); "
        "a#3 decode 1 (1/2); b#2 decode done; b#2 releases 8 units of kv (4 kept); b#2 ends",
        "4.000000 ms  iterate gpu until 5.000000 ms: shape ntok=1 ndec=1 nreq=1 kvb=7; a#3 decode 1 (2/2); "
        "a#3 decode done; a#3 releases 8 units of kv (4 kept); a#3 ends",
        "10.000000 ms  iterate gpu until 11.000000 ms: a#4 hits 20 cached units of kv; a#4 admitted (kv); "
        "shape ntok=1 ndec=0 nreq=1 kvb=6; a#4 prefill 1 (1/1); a#4 prefill done",
        "11.000000 ms  iterate gpu until 12.000000 ms: shape ntok=1 ndec=1 nreq=1 kvb=6; a#4 decode 1 (1/2)",
        "12.000000 ms  iterate gpu until 13.000000 ms: shape ntok=1 ndec=1 nreq=1 kvb=6; a#4 decode 1 (2/2); "
        "a#4 decode done; a#4 releases 4 units of kv (0 kept); a#4 ends",
    ]


def test_shared_blocks_are_owned_by_the_cache_and_pinned_while_used():
    # a#1 alone: its 23 tokens are 5 shared blocks (the cache's: SYS's 3,
    # TOOLS's 2) and 1 block of its own; nothing is evictable while it runs,
    # everything once it ended (its private full block is kept too)
    text = CHAT.replace("1 x b(SYS + 5) at 1ms; 1 x a(TOOLS + 3) at 2ms; 1 x a(TOOLS + 1) at 10ms; ", "")
    text = text.replace("check invariant", "check invariant evictable(kv) == (if holders(kv) > 0 then 0 else cached(kv)) and ")
    levels = []

    def tr(tick, what, events, m, state):
        kv = state.pools[0]
        levels.append((kv.free, sorted((e.owner, e.units) for e in kv.cache)))

    r = simulate(load_text(text, "t.sq").program, trace=tr)
    assert r.violations == [] and r.stopped == "done"
    assert levels[1] == (64 - 20 - 4, [(-4, 8), (-3, 12)])
    assert levels[-1] == (64 - 20 - 4, [(-4, 8), (-3, 12), (0, 4)])
    assert explore(load_text(text, "t.sq").program).verdict == "pass"


MERGE = """
prefix SYS = 16;
pool kv { cap 40; block 4; admit via gpu; }
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


def test_a_request_admitted_in_the_same_iteration_hits_the_blocks_scheduled_before_it():
    # chat#1's first chunk (8 tokens) puts blocks 0-1 in the cache when it is
    # scheduled; chat#2, admitted after it in the same iteration, hits them
    # (vLLM caches a block when it allocates it) and computes block 2 with
    # the 4 tokens left. Next iteration chat#1 reaches block 2, which the
    # cache has now: its copy is freed (vLLM would keep a second copy).
    levels = []

    def tr(tick, what, events, m, state):
        if what.startswith("iterate"):
            kv = state.pools[0]
            levels.append((kv.free, tuple((e.owner, e.units) for e in kv.cache)))

    simulate(load_text(MERGE, "t.sq").program, trace=tr)
    assert levels == [(28, ((-3, 12),)), (24, ((-3, 16),)), (16, ((-3, 16),)), (24, ((-3, 16),))]
    assert iterations(MERGE)[0] == (
        "0.000000 ms  iterate gpu until 1.000000 ms: chat#1 admitted (kv); chat#2 hits 8 cached units of kv; "
        "chat#2 admitted (kv); shape ntok=12 ndec=0 nreq=2 kvb=5; chat#1 prefill 8 (8/18); chat#2 prefill 4 (4/10)")


def test_a_pinned_shared_block_is_never_evicted_and_an_unpinned_one_is():
    # cap 8 = 2 blocks: p#1 pins SYS's block while p#2 needs both: p#2
    # cannot be admitted until p#1 ends; then SYS's block is evicted for it.
    text = """
prefix SYS = 4;
pool kv { cap 8; block 4; admit via gpu; }
stage gpu { cost 1ms; }
session p { hold kv prefix SYS reuse 0 need 5 take 0 { prefill 5 growing kv; } }
session q { hold kv reuse 0 need 8 take 0 { prefill 8 growing kv; } }
workload { 1 x p at 0; 1 x q at 0; }
"""
    lines = iterations(text)
    assert lines[0].startswith("0.000000 ms  iterate gpu until 1.000000 ms: p#1 admitted (kv); ")
    assert "q#2 admitted" not in lines[0] and "evict" not in lines[0]
    assert lines[1] == ("1.000000 ms  iterate gpu until 2.000000 ms: q#2 admitted (kv); evict 4 units of kv cached "
                        "for prefix SYS; shape ntok=8 ndec=0 nreq=1 "
                        "kvb=2; q#2 prefill 8 (8/8); q#2 prefill done; q#2 releases 8 units of kv (0 kept); q#2 ends")
    evs = []
    simulate(load_text(text, "t.sq").program, trace=lambda t, w, e, m, s: evs.extend(e))
    assert ("evict", 0, -3, 4) in evs  # SYS's block, evicted once p#1 let go of it


# ---------------------------------------------------------------- pool levels at @step and @admit

THRESHOLD = """
pool kv { cap 64; block 4; admit via gpu; }
stage gpu { budget 16; chunk if holders(kv) + waiting(kv) > 1 then 4 else 16; cost 1ms; }
session s { hold kv reuse 0 need 10 take 0 { prefill 10 growing kv; decode 1 growing kv; } }
workload { 1 x s at 0; 2 x s at 5ms; }
"""


def test_vllm_long_prefill_threshold_applies_only_with_more_than_one_request():
    lines = iterations(THRESHOLD)
    assert lines[0] == ("0.000000 ms  iterate gpu until 1.000000 ms: s#1 admitted (kv); shape ntok=10 ndec=0 "
                        "nreq=1 kvb=3; s#1 prefill 10 (10/10); s#1 prefill done")
    assert lines[2] == ("5.000000 ms  iterate gpu until 6.000000 ms: s#2 admitted (kv); s#3 admitted (kv); "
                        "shape ntok=8 ndec=0 nreq=2 kvb=2; s#2 prefill 4 (4/10); s#3 prefill 4 (4/10)")
    assert lines[3].endswith("s#2 prefill 4 (8/10); s#3 prefill 4 (8/10)")


def test_step_expressions_read_the_pools_at_the_iterations_start():
    # 2 waiting at the start: both chunks are 4, though s#3 is admitted
    # when only one is waiting (read live, its chunk would be 16)
    text = THRESHOLD.replace("holders(kv) + waiting(kv) > 1", "waiting(kv) >= 2")
    assert iterations(text)[2].endswith("s#2 prefill 4 (4/10); s#3 prefill 4 (4/10)")


WATERMARK = """
const WM = 2;  // blocks kept free when admitting while something runs
pool kv { cap 32; block 4; admit via gpu; }
stage gpu { budget 64; cost 1ms; }
session s(n, o) {
  hold kv reuse 0 take 0 need (n + (if holders(kv) > 0 then WM * 4 else 0)) {
    prefill n growing kv;
    decode o growing kv;
  }
}
workload { 1 x s(16, 8) at 0; 1 x s(8, 1) at 1ms; }
"""


def test_a_watermark_written_in_need_keeps_blocks_free_while_something_runs():
    with_wm = [l for l in iterations(WATERMARK) if "s#2 admitted" in l]
    without = [l for l in iterations(WATERMARK.replace("WM * 4", "0")) if "s#2 admitted" in l]
    assert without[0].startswith("1.000000 ms  iterate gpu")  # 12 free at its admission: 8 fit
    assert with_wm[0].startswith("9.000000 ms  iterate gpu")  # 8 + 8 never fit beside s#1: it waits for its end


def test_pool_levels_are_readable_in_budget_chunk_and_headers_not_elsewhere():
    ok = """
pool kv { cap 8; admit via gpu; }
stage gpu { budget 4 + waiting(kv); chunk max(1, free(kv) - allocated(kv) + evictable(kv) + cached(kv) + holders(kv)); }
session s { hold kv reuse 0 need (1 + free(kv) - free(kv) + allocated(kv) * 0) take 0 admit if waiting(kv) >= 0 { prefill 1; } }
workload { 1 x s; }
"""
    assert diagnose(ok) == "OK"
    assert diagnose("pool kv { cap 8; }\nstage gpu { cost 1ms * free(kv); }\nsession s { prefill 1; }\n"
                    "workload { 1 x s; }\n") == """\
bad.sq:2:24: error[E303]: `free(kv)` cannot be read at @step(gpu) cost
  stage gpu { cost 1ms * free(kv); }
                         ^
1 error"""


def test_pool_levels_do_not_let_a_header_read_a_hidden_attribute():
    src = ("pool kv { cap 8; admit via gpu; }\nstage gpu { budget 4; }\n"
           "session s { draw o in 1..2 hidden; hold kv need (o + free(kv)) take 0 { prefill 1; } }\n")
    assert "error[E301]: `o` is hidden: @admit(kv) is a scheduler moment and may not read it" in diagnose(src)


# ---------------------------------------------------------------- self_preempt

PRIORITY = """
pool kv { cap 12; block 4; admit via gpu; queue (prio, arrived); preempt (desc prio, desc arrived); requeue order; }
stage gpu { budget 16; self_preempt continue; cost 1ms; }
session s(prio, n, o) {
  hold kv reuse 0 need (n) take 0 {
    prefill n growing kv;
    decode o growing kv;
  }
}
workload { 1 x s(1, 7, 3) at 0; 1 x s(0, 1, 3) at 1ms; }
"""


def test_self_preempt_continue_serves_the_residents_after_the_self_preempted_one():
    # at 2 ms s#1 (the lowest priority) cannot grow and is its own victim
    assert iterations(PRIORITY)[2] == (
        "2.000000 ms  iterate gpu until 3.000000 ms: preempt s#1 (kv: self); s#1 releases 8 units of kv (0 kept); "
        "s#1 queued on kv; shape ntok=1 ndec=1 nreq=1 kvb=1; s#2 decode 1 (1/3)")


def test_self_preempt_stop_ends_the_serve_pass():
    lines = iterations(PRIORITY.replace("self_preempt continue; ", ""))
    assert lines[2] == ("2.000000 ms  iterate gpu until 3.000000 ms: preempt s#1 (kv: self); s#1 releases 8 units "
                        "of kv (0 kept); s#1 queued on kv; shape ntok=0 ndec=0 nreq=0 kvb=0")
    assert load_text(PRIORITY.replace("self_preempt continue; ", ""), "t.sq").program.stages[0].self_preempt == "stop"


# ---------------------------------------------------------------- tick

TICK = """
tick turns before arrivals;
pool seqs { cap 1; admit via gpu; }
stage gpu { cost 1ms; }
session a { hold seqs 1 { prefill 2; } turn think 1ms; hold seqs 1 { prefill 2; } }
session b { hold seqs 1 { prefill 2; } }
workload { 1 x a at 0; 1 x b at 2ms; }
"""


def test_tick_orders_a_turn_return_and_an_arrival_at_the_same_tick():
    turns_first = schedule(TICK)
    arrivals_first = schedule(TICK.replace("tick turns before arrivals;", ""))
    assert turns_first[2:4] == ["2.000000 ms  turn a#1: a#1 queued on seqs", "2.000000 ms  arrive b#2: b#2 queued on seqs"]
    assert turns_first[4].endswith("a#1 admitted (seqs); shape ntok=2 ndec=0 nreq=1 kvb=0; a#1 prefill 2 (2/2); "
                                   "a#1 prefill done; a#1 releases 1 units of seqs (0 kept); a#1 ends")
    assert arrivals_first[2:4] == ["2.000000 ms  arrive b#2: b#2 queued on seqs", "2.000000 ms  turn a#1: a#1 queued on seqs"]
    assert "b#2 admitted" in arrivals_first[4]
    assert arrivals_first == schedule(TICK.replace("tick turns", "tick arrivals").replace("before arrivals", "before turns"))


def test_tick_does_not_change_what_the_explorer_explores():
    a = explore(load_text(TICK, "t.sq").program)
    b = explore(load_text(TICK.replace("tick turns before arrivals;", ""), "t.sq").program)
    assert (a.verdict, a.stats.distinct, a.stats.generated) == (b.verdict, b.stats.distinct, b.stats.generated) \
        == ("pass", 19, 26)


# ---------------------------------------------------------------- explorer counts


@pytest.mark.parametrize("symmetry,ties,distinct,generated", [
    (True, "all", 1198, 1645),
    (False, "all", 1198, 1645),
    (False, "seq", 998, 1340),
])
def test_vllm_constructs_exact_counts(symmetry, ties, distinct, generated):
    r = explore(load_path(CONSTRUCTS).program, symmetry=symmetry, ties=ties)
    assert r.verdict == "pass"
    assert (r.stats.distinct, r.stats.generated) == (distinct, generated)


@pytest.mark.parametrize("text,counts", [
    (PRIORITY, (41, 50)),
    (PRIORITY.replace("self_preempt continue; ", ""), (42, 51)),
    (CHAT, (1178, 1717)),
    (MERGE, (19, 24)),
])
def test_exact_counts_of_the_exact_schedule_instances(text, counts):
    r = explore(load_text(text.replace("workload {", "check deadlock;\nworkload {"), "t.sq").program)
    assert (r.stats.distinct, r.stats.generated) == counts


_COUNT = """
import json, sys
from serq.check.explore import explore
from serq.lang.load import load_path
r = explore(load_path(sys.argv[1]).program, ties="seq")
print(json.dumps([r.verdict, r.stats.distinct, r.stats.generated]))
"""


def test_plain_python_kernel_gives_the_same_counts():
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    p = subprocess.run([sys.executable, "-c", _COUNT, str(CONSTRUCTS)], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == ["pass", 998, 1340]


def test_vllm_chat_is_vllm_exact_after_a_decode_preemption():
    # g counts output tokens: a chat preempted in its decode resumes with a
    # prefill of prompt + g (vLLM recomputes prompt and outputs) and samples
    # its next token at that prefill's end
    r = explore(load_path(ROOT / "instances" / "vllm_chat.sq").program)
    assert r.verdict == "pass" and (r.stats.distinct, r.stats.generated) == (16486, 23718)


# ---------------------------------------------------------------- front end


def test_fmt_and_ir_round_trip_of_the_new_constructs():
    src = CONSTRUCTS.read_text()
    assert format_program_source(src, str(CONSTRUCTS)) == src
    prog = load_path(CONSTRUCTS).program
    assert Program.model_validate_json(prog.model_dump_json()) == prog
    assert [(p.name, p.length, p.parent) for p in prog.prefixes] == [("SYS", 4, None), ("TOOLS", 8, "SYS")]
    assert prog.stages[0].self_preempt == "continue"
    items = [it for sp in prog.sessions for st in sp.states if st.kind == "acquire" for it in st.hold.items]
    assert [it.prefix for it in items] == ["TOOLS", "SYS"]
    tick = load_text(TICK, "t.sq").program
    assert tick.tick == "turns" and Program.model_validate_json(tick.model_dump_json()) == tick


def test_a_prefix_name_is_a_constant_its_length():
    prog = load_text("prefix SYS = 12;\nprefix T = SYS + 8;\nconst N = T + 1;\n", "t.sq").program
    assert dict(prog.consts)["N"] == 21


@pytest.mark.parametrize("src,expected", [
    ("prefix SYS = 4;\npool kv { cap 8; }\nstage gpu { }\nsession s { hold kv 4 prefix SYSS { prefill 1; } }\n"
     "workload { 1 x s; }\n", """\
bad.sq:4:30: error[E110]: hold on unknown prefix `SYSS`
  session s { hold kv 4 prefix SYSS { prefill 1; } }
                               ^
  note: did you mean `SYS`?
1 error"""),
    ("prefix T = S + 4;\nprefix S = 4;\n", """\
bad.sq:1:12: error[E110]: prefix `T` extends `S`, which is declared after it; declare `S` first
  prefix T = S + 4;
             ^
1 error"""),
    ("prefix S = 0;\n", """\
bad.sq:1:12: error[E402]: prefix `S` must be at least 1, got 0
  prefix S = 0;
             ^
1 error"""),
    ("const S = 1;\nprefix S = 4;\n", """\
bad.sq:2:8: error[E105]: `S` is declared twice
  prefix S = 4;
         ^
1 error"""),
    ("tick turns before turns;\n", """\
bad.sq:1:19: error[E403]: `tick turns before turns`: the two must differ; write `tick arrivals before turns` or `tick turns before arrivals`
  tick turns before turns;
                    ^
1 error"""),
    ("tick turns before arrivals;\ntick arrivals before turns;\n", """\
bad.sq:2:1: error[E403]: `tick` is given twice
  tick arrivals before turns;
  ^
1 error"""),
    ("prefix S = 4;\npool kv { cap 8; }\nstage gpu { }\nsession s { hold kv 4 prefix S prefix S { prefill 1; } }\n", """\
bad.sq:4:32: error[E403]: `prefix` is given twice for pool `kv`
  session s { hold kv 4 prefix S prefix S { prefill 1; } }
                                 ^
1 error"""),
])
def test_diagnostics(src, expected):
    assert diagnose(src) == expected


SAME_ITERATION = """
prefix SYS = 8;
pool kv { cap 40; block 4; admit via gpu; }
stage gpu { budget 16; chunk 4; cost 1ms; }
session chat {
  let n = SYS + 2;
  hold kv prefix SYS reuse 0 need n take 0 { prefill n growing kv; } keep (kv full);
}
workload { 2 x chat at 0; }
check invariant allocated(kv) + cached(kv) + free(kv) == 40;
"""


def test_two_holds_computing_one_shared_block_in_the_same_iteration_keep_one_copy():
    # docs/language.md, "Where serq and vLLM differ": both chats compute SYS's
    # first block in iteration 0; chat#1, served first, caches it, and
    # chat#2's copy is freed in the same iteration (vLLM would keep both: 32 free)
    levels = []

    def tr(tick, what, events, m, state):
        if what.startswith("iterate"):
            kv = state.pools[0]
            levels.append((kv.free, tuple((e.owner, e.units) for e in kv.cache)))

    simulate(load_text(SAME_ITERATION, "t.sq").program, trace=tr)
    assert iterations(SAME_ITERATION)[0].endswith("chat#1 prefill 4 (4/10); chat#2 prefill 4 (4/10)")
    assert levels[:2] == [(36, ((-3, 4),)), (32, ((-3, 8),))]
