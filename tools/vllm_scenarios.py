"""Write the vLLM agreement scenarios (tests/vllm/*.json): hand-written ones
for each scheduler behaviour, and random traces of 200+ requests with small
KV caches. Deterministic: the same files every time.

    python tools/vllm_scenarios.py [DIR]          # default tests/vllm

Record their traces with vLLM (`serq oracle setup` first):

    for f in tests/vllm/*.json; do
        python -m serq oracle trace "$f" -o "${f%.json}.trace.jsonl"; done
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path


def req(rid, at, n, o, **kw):
    r = {"id": rid, "arrival_step": at, "prompt_len": n, "max_tokens": o}
    r.update(kw)
    return r


def follow(rid, prev, n, o, think=0, **kw):
    r = {"id": rid, "follows": prev, "think_steps": think, "prompt_len": n, "max_tokens": o}
    r.update(kw)
    return r


def base(desc, bs, blocks, budget, seqs=4, apc=True, **kw):
    sc = {"description": desc, "block_size": bs, "num_gpu_blocks": blocks, "max_num_batched_tokens": budget,
          "max_num_seqs": seqs, "enable_prefix_caching": apc}
    sc.update(kw)
    return sc


def hand() -> dict[str, dict]:
    S = {}
    S["01_chunked_prefill_with_decodes"] = base(
        "Chunked prefill sharing the token budget with decodes: r0,r1 decode while r2's 20-token prompt is "
        "chunked into what the decodes leave (8 - 2 = 6 per step).", 4, 64, 8,
        requests=[req("r0", 0, 3, 8), req("r1", 0, 3, 8), req("r2", 1, 20, 2)])
    S["02_head_of_line_blocking"] = base(
        "Head-of-line blocking: r1 (28 tokens, 7 blocks) heads the queue and does not fit next to r0 "
        "(gate on), so r2 (1 block, would fit) waits behind it until r0 finishes.", 4, 13, 32,
        requests=[req("r0", 0, 24, 8), req("r1", 1, 28, 2), req("r2", 1, 4, 2)])
    S["03_self_preemption_during_prefill"] = base(
        "Self-preemption during chunked prefill (gate off, no prefix cache): r1 is admitted on a first chunk; "
        "a later chunk cannot get its blocks and r1 is its own victim; it thrashes until r0 finishes.",
        4, 13, 8, apc=False, scheduler_reserve_full_isl=False,
        requests=[req("r0", 0, 14, 12), req("r1", 1, 32, 2)])
    S["04_decode_preemption_and_resume"] = base(
        "Decode preemption and resume, no prefix cache: r2 (last admitted) is preempted when r0 cannot grow, "
        "recomputes prompt + generated tokens in one chunk and decodes only what is left.", 4, 10, 16, apc=False,
        requests=[req("r0", 0, 8, 8), req("r1", 0, 8, 8), req("r2", 0, 8, 8)])
    S["04b_decode_preemption_resume_with_prefix_cache"] = base(
        "Decode preemption and resume with prefix caching: r2's freed blocks stay cached, the others' growth "
        "evicts its tail blocks first, and r2 resumes with a hit on what is left.", 4, 10, 16,
        requests=[req("r0", 0, 8, 8), req("r1", 0, 8, 8), req("r2", 0, 8, 8)])
    S["05_prefix_cache_reuse"] = base(
        "Prefix-cache reuse across requests: r1 has r0's 10-token prompt and hits its 2 full blocks; r2 "
        "shares only the first block.", 4, 13, 16,
        requests=[{"id": "r0", "arrival_step": 0, "prompt": list(range(1, 11)), "max_tokens": 2},
                  {"id": "r1", "arrival_step": 5, "prompt": list(range(1, 11)), "max_tokens": 2},
                  {"id": "r2", "arrival_step": 5, "prompt": [1, 2, 3, 4, 50, 51, 52, 53, 54, 55], "max_tokens": 2}])
    S["06_chunked_long_prompt_alone"] = base(
        "One 45-token prompt with a budget of 8: six full chunks and a last of 5; then decodes.", 4, 32, 8,
        requests=[req("r0", 0, 45, 4)])
    S["07_chunked_two_prefills"] = base(
        "Two prompts arriving together share a budget of 10: the first takes it all, the second gets what is "
        "left on the step the first finishes its prompt.", 4, 32, 10,
        requests=[req("r0", 0, 17, 3), req("r1", 0, 13, 3), req("r2", 2, 6, 2)])
    S["08_head_of_line_gate_off"] = base(
        "The head-of-line case with the gate off: r1 is admitted on a first chunk next to r0, and r2 follows.",
        4, 13, 32, scheduler_reserve_full_isl=False,
        requests=[req("r0", 0, 24, 8), req("r1", 1, 28, 2), req("r2", 1, 4, 2)])
    S["09_self_preemption_prefix_cache_gate_off"] = base(
        "Self-preemption in prefill with prefix caching on (gate off): r1's full blocks stay cached when it "
        "preempts itself, and its re-admission hits them.", 4, 12, 8, scheduler_reserve_full_isl=False,
        requests=[req("r0", 0, 14, 12), req("r1", 1, 30, 2)])
    S["10_decode_preemption_cascade"] = base(
        "Four requests decode into a 10-block pool; growth preempts the last admitted again and again.",
        4, 11, 16, apc=False,
        requests=[req(f"r{i}", 0, 5, 10) for i in range(4)])
    S["11_decode_preemption_cascade_prefix_cache"] = base(
        "The cascade of 10 with prefix caching: the victims resume with hits on the blocks not yet evicted.",
        4, 11, 16, requests=[req(f"r{i}", 0, 5, 10) for i in range(4)])
    S["12_multiturn_reuse"] = base(
        "Two turns of one conversation: r1's prompt is r0's prompt, answer and 5 new tokens; it hits the "
        "cached full blocks of r0.", 4, 20, 16,
        requests=[req("r0", 0, 10, 4), follow("r1", "r0", 5, 3)])
    S["13_multiturn_three_turns_think"] = base(
        "Three turns with think times 2 and 0, next to a one-turn request.", 4, 24, 12,
        requests=[req("r0", 0, 7, 5), req("x", 1, 9, 6), follow("r1", "r0", 6, 4, think=2),
                  follow("r2", "r1", 3, 2, think=0)])
    S["14_multiturn_evicted_by_others"] = base(
        "A conversation's cached blocks are evicted by other requests while its user thinks: the second turn "
        "hits only what is left.", 4, 12, 16,
        requests=[req("r0", 0, 12, 4), req("a", 6, 16, 6), req("b", 7, 10, 4), follow("r1", "r0", 4, 2, think=8)])
    S["15_max_num_seqs_binding"] = base(
        "max_num_seqs 2: five short requests, at most two running; the others wait though blocks are free.",
        4, 40, 32, seqs=2, requests=[req(f"r{i}", 0, 6, 4) for i in range(5)])
    S["16_max_num_seqs_one"] = base(
        "max_num_seqs 1: requests run one at a time, in arrival order.", 4, 40, 32, seqs=1,
        requests=[req("r0", 0, 9, 3), req("r1", 0, 5, 2), req("r2", 1, 3, 3)])
    S["17_max_num_seqs_with_preemption"] = base(
        "max_num_seqs 3 and a small pool: a preempted request frees its slot and a waiting one cannot take it "
        "in the same step (no admission in a step that preempted).", 4, 9, 16, seqs=3, apc=False,
        requests=[req(f"r{i}", i, 6, 8) for i in range(5)])
    S["18_gate_on_waits"] = base(
        "Gate on: a 20-token prompt waits until its whole length fits, then runs in chunks.", 4, 10, 8,
        requests=[req("r0", 0, 12, 6), req("r1", 1, 20, 2), req("r2", 2, 4, 2)])
    S["19_gate_off_admits_chunk"] = base(
        "The workload of 18 with the gate off: the 20-token prompt is admitted on its first chunk.", 4, 10, 8,
        scheduler_reserve_full_isl=False,
        requests=[req("r0", 0, 12, 6), req("r1", 1, 20, 2), req("r2", 2, 4, 2)])
    S["20_gate_off_no_cache"] = base(
        "Gate off, prefix caching off, three growing requests: admissions on first chunks, then preemptions.",
        4, 10, 8, apc=False, scheduler_reserve_full_isl=False,
        requests=[req("r0", 0, 10, 6), req("r1", 0, 10, 6), req("r2", 1, 10, 6)])
    S["21_eviction_under_cache_pressure"] = base(
        "Cache pressure: finished requests fill the pool with cached blocks; new requests evict them, least "
        "recently freed first, and a returning conversation hits what survived.", 4, 12, 16,
        requests=[req("a", 0, 8, 2), req("b", 0, 8, 2), req("c", 3, 8, 2), follow("a2", "a", 2, 2, think=4),
                  req("d", 5, 16, 2), follow("b2", "b", 2, 2, think=6)])
    S["22_eviction_lru_order"] = base(
        "Three conversations end one after another; a large request evicts the oldest cache first; the "
        "follow-ups show which survived.", 2, 24, 12,
        requests=[req("a", 0, 8, 2), req("b", 1, 8, 2), req("c", 2, 8, 2), req("big", 6, 24, 2),
                  follow("a2", "a", 2, 2, think=6), follow("b2", "b", 2, 2, think=6), follow("c2", "c", 2, 2, think=6)])
    S["23_budget_small_many"] = base(
        "A budget of 4 tokens with eight requests: chunks of what is left after the decodes.", 2, 40, 4,
        seqs=4, requests=[req(f"r{i}", i // 2, 3 + i, 3) for i in range(8)])
    S["24_preempt_during_resume_prefill"] = base(
        "A resumed request is preempted again during its recompute (gate off, small budget).", 4, 9, 6,
        scheduler_reserve_full_isl=False,
        requests=[req("r0", 0, 6, 10), req("r1", 0, 6, 10), req("r2", 1, 6, 8)])
    S["25_block_size_one"] = base(
        "Block size 1 with prefix caching: every computed token is a full block.", 1, 25, 6,
        requests=[req("r0", 0, 8, 6), req("r1", 0, 8, 6), req("r2", 2, 5, 4), follow("r3", "r0", 3, 3)])
    # behaviours the language learns to say: recorded now, agreement pending
    sys_prompt = list(range(1, 13))
    S["30_shared_system_prompt"] = base(
        "A 12-token system prompt shared by four requests of different users: after the first, each hits its "
        "3 full blocks.", 4, 30, 16,
        requests=[{"id": f"u{i}", "arrival_step": 2 * i, "prompt": sys_prompt + [40 + i, 41 + i, 42 + i],
                   "max_tokens": 3} for i in range(4)])
    S["31_partial_common_prefix"] = base(
        "Two requests with a common prefix of 6 tokens (one full block of 4) and different tails.", 4, 20, 16,
        requests=[{"id": "a", "arrival_step": 0, "prompt": [1, 2, 3, 4, 5, 6, 7, 8, 9], "max_tokens": 2},
                  {"id": "b", "arrival_step": 4, "prompt": [1, 2, 3, 4, 5, 6, 70, 71, 72, 73], "max_tokens": 2}])
    S["32_long_prefill_threshold_one_request"] = base(
        "long_prefill_token_threshold 4 with a lone request: the cap applies only while running + waiting > 1, "
        "so the 20-token prompt takes the whole budget.", 4, 30, 16, long_prefill_token_threshold=4,
        requests=[req("r0", 0, 20, 3)])
    S["33_long_prefill_threshold_several"] = base(
        "long_prefill_token_threshold 4 with three requests: prompts are cut to 4 tokens per step while "
        "others run or wait, and the last one alone gets the budget.", 4, 40, 16, long_prefill_token_threshold=4,
        requests=[req("r0", 0, 10, 2), req("r1", 0, 10, 2), req("r2", 1, 30, 2)])
    S["34_watermark"] = base(
        "watermark 0.2 (4 of 21 blocks): r1's 10 blocks fit in the 12 free ones, but not with the watermark kept "
        "free while r0 runs, so r1 waits until r0 finishes.", 4, 21, 16, watermark=0.2,
        requests=[req("r0", 0, 30, 6), req("r1", 1, 40, 2), req("r2", 2, 4, 2)])
    S["36_priority_self_preemption"] = base(
        "Priority policy where the grower is its own victim: r0 (priority 5) cannot grow and is the running "
        "request of the largest (priority, arrival); vLLM preempts it and goes on serving r1 in that step.",
        4, 9, 16, policy="priority",
        requests=[req("r0", 0, 6, 12, priority=5), req("r1", 1, 24, 2, priority=0)])
    S["05b_prefix_cache_reuse_three_tokens"] = base(
        "The requests of 05 with 3 output tokens: r0 and r1 both compute the block [9, 10, 7, 7] of prompt and "
        "output tokens, which no request can hit (a hit leaves the last token to compute).", 4, 13, 16,
        requests=[{"id": "r0", "arrival_step": 0, "prompt": list(range(1, 11)), "max_tokens": 3},
                  {"id": "r1", "arrival_step": 5, "prompt": list(range(1, 11)), "max_tokens": 3},
                  {"id": "r2", "arrival_step": 5, "prompt": [1, 2, 3, 4, 50, 51, 52, 53, 54, 55], "max_tokens": 3}])
    S["34b_watermark_gate_off"] = base(
        "watermark 0.2 with the gate off: r1 is admitted when its first chunk fits with 4 blocks kept free "
        "while r0 runs.", 4, 21, 16, watermark=0.2, scheduler_reserve_full_isl=False,
        requests=[req("r0", 0, 30, 6), req("r1", 1, 40, 2), req("r2", 2, 4, 2), req("r3", 3, 12, 3)])
    pre = list(range(1, 13))
    S["37_copies_chunked_prefix"] = base(
        "Two requests share a 12-token prefix and arrive together (threshold 4, budget 8): r0 computes block 0, "
        "r1 hits it and computes block 1, then r0 computes block 1 again: vLLM keeps both copies.", 4, 20, 8,
        long_prefill_token_threshold=4,
        requests=[{"id": "r0", "arrival_step": 0, "prompt": pre + [101, 102], "max_tokens": 2},
                  {"id": "r1", "arrival_step": 0, "prompt": pre + [201, 202, 203], "max_tokens": 2},
                  {"id": "r2", "arrival_step": 9, "prompt": pre + [301], "max_tokens": 2}])
    S["38_copies_same_step"] = base(
        "Two requests share a 4-token prefix (threshold 2) and compute it in two chunks each: both complete "
        "the same block in the same step, and vLLM keeps both copies.", 4, 12, 8,
        long_prefill_token_threshold=2,
        requests=[{"id": "r0", "arrival_step": 0, "prompt": [1, 2, 3, 4, 11], "max_tokens": 2},
                  {"id": "r1", "arrival_step": 0, "prompt": [1, 2, 3, 4, 21, 22], "max_tokens": 2},
                  {"id": "r2", "arrival_step": 8, "prompt": [1, 2, 3, 4, 31], "max_tokens": 2}])
    S["39_copies_evicted_first"] = base(
        "Copies under pressure: the first copy of a shared block is freed before the second, eviction takes "
        "it first, and a later request hits the surviving copy.", 4, 9, 8, long_prefill_token_threshold=2,
        requests=[{"id": "r0", "arrival_step": 0, "prompt": [1, 2, 3, 4, 11], "max_tokens": 2},
                  {"id": "r1", "arrival_step": 0, "prompt": [1, 2, 3, 4, 21, 22], "max_tokens": 6},
                  req("r2", 9, 22, 2), {"id": "r3", "arrival_step": 12, "prompt": [1, 2, 3, 4, 31], "max_tokens": 2}])
    S["26_chunked_prefill_off"] = base(
        "enable_chunked_prefill false (max_model_len 32 = the budget): a waiting prompt is admitted only when "
        "it fits whole in the budget left, and the waiting scan stops at the first that does not.", 4, 40, 32,
        enable_chunked_prefill=False, max_model_len=32,
        requests=[req("r0", 0, 20, 4), req("r1", 0, 16, 3), req("r2", 1, 6, 2), req("r3", 1, 30, 2)])
    S["27_max_num_scheduled_tokens"] = base(
        "max_num_scheduled_tokens 8 below max_num_batched_tokens 16: the step's token budget is 8.", 4, 40, 16,
        max_num_scheduled_tokens=8, requests=[req("r0", 0, 20, 3), req("r1", 1, 10, 3), req("r2", 2, 6, 2)])
    salt = list(range(1, 13))
    S["28_cache_salt"] = base(
        "cache_salt: four requests with one 12-token prompt; a hit only under the same salt (none counts as "
        "one more salt), and a follow-up keeps its conversation's salt.", 4, 40, 16,
        requests=[{"id": "a", "arrival_step": 0, "prompt": salt + [50], "max_tokens": 2, "cache_salt": "x"},
                  {"id": "b", "arrival_step": 4, "prompt": salt + [51], "max_tokens": 2, "cache_salt": "y"},
                  {"id": "c", "arrival_step": 8, "prompt": salt + [52], "max_tokens": 2, "cache_salt": "x"},
                  {"id": "d", "arrival_step": 8, "prompt": salt + [53], "max_tokens": 2},
                  follow("b2", "b", 3, 2, think=1)])
    return S


def random_scenario(seed: int, n: int, *, bs: int, blocks: int, budget: int, seqs: int, apc: bool, gate: bool,
                    follow_p: float, max_prompt: int, max_out: int, shared: bool = False,
                    threshold: int = 0, priority: bool = False, watermark: float = 0.0,
                    **knobs) -> dict:
    rng = random.Random(f"vllm-scenario/{seed}")
    cap = (blocks - 1) * bs
    reqs = []
    length = {}  # conversation length so far (prompt + answer) per request id
    open_ends = []  # requests not yet followed
    step = 0
    system = [rng.randrange(1, 5000) for _ in range(2 * bs + bs // 2)] if shared else []
    for i in range(n):
        o = rng.randint(1, max_out)
        cands = [r for r in open_ends if length[r] + max_prompt // 2 + o <= cap]
        if cands and rng.random() < follow_p:
            prev = rng.choice(cands)
            open_ends.remove(prev)
            p = rng.randint(1, max(1, min(max_prompt // 2, cap - length[prev] - o)))
            rid = f"q{i}"
            reqs.append(follow(rid, prev, p, o, think=rng.randint(0, 6)))
            length[rid] = length[prev] + p + o
        else:
            step += rng.choice((0, 0, 1, 1, 2, 3))
            p = rng.randint(1, min(max_prompt, cap - o))
            rid = f"q{i}"
            if shared and rng.random() < 0.5:
                tail = [rng.randrange(1, 5000) for _ in range(p)]
                reqs.append({"id": rid, "arrival_step": step, "prompt": system + tail, "max_tokens": o})
                p += len(system)
            else:
                reqs.append(req(rid, step, p, o))
            length[rid] = p + o
        if length[rid] + 1 <= cap:
            open_ends.append(rid)
    kind = []
    kind.append("prefix caching" if apc else "no prefix cache")
    kind.append("gate on" if gate else "gate off")
    desc = (f"Random: {n} requests ({int(follow_p * 100)}% follow-ups of earlier conversations), block size {bs}, "
            f"{blocks - 1} usable blocks, budget {budget}, max_num_seqs {seqs}, {', '.join(kind)}"
            + (", a system prompt shared by half the requests" if shared else "")
            + (f", long_prefill_token_threshold {threshold}" if threshold else "") + ".")
    sc = base(desc, bs, blocks, budget, seqs=seqs, apc=apc, scheduler_reserve_full_isl=gate, requests=reqs)
    if threshold:
        sc["long_prefill_token_threshold"] = threshold
    if watermark:
        sc["watermark"] = watermark
        sc["description"] = sc["description"][:-1] + f", watermark {watermark}."
    for k, v in knobs.items():
        sc[k] = v
        sc["description"] = sc["description"][:-1] + f", {k} {json.dumps(v)}."
    if priority:
        sc["policy"] = "priority"
        sc["description"] = sc["description"][:-1] + ", priority policy (priorities 0..3)."
        for r in reqs:
            r["priority"] = rng.randint(0, 3)
    return sc


def randoms() -> dict[str, dict]:
    S = {}
    cfgs = [
        # name, seed, n, bs, blocks, budget, seqs, apc, gate, follow_p, max_prompt, max_out
        ("50_random_apc_gate", 1, 200, 4, 17, 16, 8, True, True, 0.3, 24, 12),
        ("51_random_apc_gate_off", 2, 200, 4, 17, 16, 8, True, False, 0.3, 24, 12),
        ("52_random_nocache_gate", 3, 200, 4, 17, 16, 8, False, True, 0.0, 24, 12),
        ("53_random_nocache_gate_off", 4, 200, 4, 17, 16, 8, False, False, 0.0, 24, 12),
        ("54_random_tiny_blocks", 5, 220, 2, 25, 12, 6, True, True, 0.4, 16, 10),
        ("55_random_big_blocks", 6, 220, 8, 9, 24, 16, True, True, 0.3, 30, 16),
        ("56_random_seqs_bind", 7, 250, 4, 33, 32, 3, True, True, 0.3, 20, 10),
        ("57_random_multiturn_heavy", 8, 240, 4, 21, 16, 8, True, True, 0.7, 16, 8),
        ("58_random_small_budget", 9, 200, 4, 17, 6, 6, True, True, 0.3, 20, 10),
        ("59_random_block_one", 10, 200, 1, 40, 10, 6, True, True, 0.4, 14, 8),
        ("60_random_gate_off_multiturn", 11, 230, 4, 21, 12, 8, True, False, 0.5, 18, 10),
        ("61_random_large", 12, 300, 4, 25, 24, 12, True, True, 0.3, 28, 14),
    ]
    for name, seed, n, bs, blocks, budget, seqs, apc, gate, fp, mp, mo in cfgs:
        S[name] = random_scenario(seed, n, bs=bs, blocks=blocks, budget=budget, seqs=seqs, apc=apc, gate=gate,
                                  follow_p=fp, max_prompt=mp, max_out=mo)
    S["70_random_shared_system_prompt"] = random_scenario(
        20, 200, bs=4, blocks=25, budget=16, seqs=8, apc=True, gate=True, follow_p=0.2, max_prompt=16, max_out=8,
        shared=True)
    S["35_random_priority"] = random_scenario(
        22, 200, bs=4, blocks=17, budget=16, seqs=8, apc=True, gate=True, follow_p=0.2, max_prompt=24, max_out=12,
        priority=True)
    S["71_random_long_prefill_threshold"] = random_scenario(
        21, 200, bs=4, blocks=25, budget=16, seqs=8, apc=True, gate=True, follow_p=0.2, max_prompt=24, max_out=8,
        threshold=6)
    # shared prompts with a long-prefill threshold: two prefills of one prefix at once keep two copies
    copies = [
        # name, seed, bs, blocks, budget, gate, threshold, max_prompt
        ("72_random_copies_threshold", 23, 4, 25, 16, True, 4, 16),
        ("73_random_copies_gate_off", 24, 4, 25, 16, False, 6, 16),
        ("74_random_copies_small_blocks", 25, 2, 41, 12, True, 3, 14),
        ("75_random_copies_pressure", 26, 4, 17, 16, True, 4, 16),
        ("76_random_copies_big_threshold", 27, 4, 33, 24, True, 8, 20),
        ("77_random_copies_tight_gate_off", 28, 4, 17, 12, False, 4, 14),
    ]
    copies += [
        ("80_random_copies_seed31", 31, 4, 25, 16, True, 4, 16),
        ("81_random_copies_seed32", 32, 4, 21, 16, False, 4, 16),
        ("82_random_copies_seed33", 33, 8, 13, 24, True, 8, 24),
        ("83_random_copies_seed34", 34, 4, 25, 16, True, 2, 16),
        ("84_random_copies_seed35", 35, 2, 33, 12, False, 3, 14),
        ("85_random_copies_seed36", 36, 4, 29, 20, True, 6, 18),
    ]
    for name, seed, bs, blocks, budget, gate, thr, mp in copies:
        S[name] = random_scenario(seed, 200, bs=bs, blocks=blocks, budget=budget, seqs=8, apc=True, gate=gate,
                                  follow_p=0.2, max_prompt=mp, max_out=8, shared=True, threshold=thr)
    S["78_random_watermark_gate_off"] = random_scenario(
        29, 200, bs=4, blocks=25, budget=16, seqs=8, apc=True, gate=False, follow_p=0.3, max_prompt=24, max_out=8,
        watermark=0.1)
    S["79_random_watermark_gate_off_nocache"] = random_scenario(
        30, 200, bs=4, blocks=21, budget=16, seqs=8, apc=False, gate=False, follow_p=0.0, max_prompt=24,
        max_out=10, watermark=0.15)
    S["86_random_chunked_prefill_off"] = random_scenario(
        37, 200, bs=4, blocks=17, budget=32, seqs=8, apc=True, gate=True, follow_p=0.0, max_prompt=24, max_out=8,
        enable_chunked_prefill=False, max_model_len=32)
    S["87_random_chunked_prefill_off_gate_off"] = random_scenario(
        38, 200, bs=4, blocks=17, budget=32, seqs=8, apc=True, gate=False, follow_p=0.0, max_prompt=24,
        max_out=8, enable_chunked_prefill=False, max_model_len=32)
    S["88_random_scheduled_tokens"] = random_scenario(
        39, 200, bs=4, blocks=21, budget=24, seqs=8, apc=True, gate=True, follow_p=0.3, max_prompt=20, max_out=8,
        max_num_scheduled_tokens=12)
    S["89_random_scheduled_tokens_threshold"] = random_scenario(
        40, 200, bs=4, blocks=25, budget=24, seqs=8, apc=True, gate=True, follow_p=0.2, max_prompt=16, max_out=8,
        shared=True, threshold=4, max_num_scheduled_tokens=12)
    # more of the mixes: shared prompts and thresholds with priorities, watermarks, multi-turn
    mixes = [
        # name, seed, gate, threshold, follow_p, priority, watermark
        ("90_random_copies_priority", 41, True, 4, 0.2, True, 0.0),
        ("91_random_copies_watermark", 42, True, 4, 0.2, False, 0.1),
        ("92_random_copies_watermark_gate_off", 43, False, 4, 0.2, False, 0.1),
        ("93_random_copies_multiturn", 44, True, 6, 0.5, False, 0.0),
        ("94_random_copies_priority_gate_off", 45, False, 6, 0.3, True, 0.0),
        ("95_random_shared_no_threshold", 46, True, 0, 0.3, False, 0.0),
        ("96_random_shared_gate_off_no_threshold", 47, False, 0, 0.3, False, 0.0),
    ]
    for name, seed, gate, thr, fp, pri, wm in mixes:
        S[name] = random_scenario(seed, 200, bs=4, blocks=25, budget=16, seqs=8, apc=True, gate=gate, follow_p=fp,
                                  max_prompt=16, max_out=8, shared=True, threshold=thr, priority=pri, watermark=wm)
    return S


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/vllm")
    out.mkdir(parents=True, exist_ok=True)
    for name, sc in {**hand(), **randoms()}.items():
        (out / f"{name}.json").write_text(json.dumps(sc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
