#!/usr/bin/env python3
"""Drive vLLM's own V1 scheduler (vllm.v1.core.sched.scheduler.Scheduler,
with its real KV-cache manager and block pool) on CPU, with no GPU and no
model weights, and write its per-step schedule as JSON lines.

This file runs inside the oracle's virtual environment (`serq oracle setup`),
not inside serq's: it imports only the standard library at module level and
vLLM inside the functions that need it, so serq can import it for the
scenario format without vLLM.

Usage (what `serq oracle trace` runs):
    VENV/bin/python driver.py SCENARIO.json [-o OUT.jsonl] [--max-steps N] [--full]

The scenario format and the trace format are docs/vllm.md's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

# Must be set before vLLM / transformers are imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PYTHONHASHSEED", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
TRACE_FORMAT = "vllm-trace"
TRACE_VERSION = 1
TINY_MODEL_DIR = os.path.join(HERE, "tiny_model")

DEFAULT_MAX_MODEL_LEN = 8192
DEFAULT_SAMPLED_TOKEN_ID = 7
DEFAULT_MAX_STEPS = 10000
# First token of generated prompts: 10000 + request index. Each generated
# prompt therefore starts with a unique token, so the chained block hashes of
# two generated prompts never collide (no accidental prefix-cache hits).
GENERATED_FIRST_TOKEN_BASE = 10000


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class ScenarioError(Exception):
    """A scenario that is not well formed: the message says where."""


_KNOWN = {"description", "block_size", "num_gpu_blocks", "max_num_batched_tokens", "max_num_seqs",
          "enable_prefix_caching", "long_prefill_token_threshold", "scheduler_reserve_full_isl",
          "watermark", "policy", "max_model_len", "sampled_token_id", "max_steps", "requests",
          "enable_chunked_prefill", "max_num_scheduled_tokens"}
_REQ_KNOWN = {"id", "arrival_step", "prompt_len", "prompt", "max_tokens", "priority", "follows", "think_steps",
              "cache_salt"}


def check_scenario(sc, where: str = "scenario") -> dict:
    """Validate a scenario (a dict, as read from its JSON file); returns it.
    Raises ScenarioError naming the key or the request at fault."""
    def bad(msg):
        raise ScenarioError(f"{where}: {msg}")

    def posint(obj, key, lo, what=None):
        v = obj.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            bad(f"{what or repr(key)} must be an integer >= {lo}, got {v!r}")
        return v

    if not isinstance(sc, dict):
        bad("a scenario is a JSON object")
    for key in ("block_size", "num_gpu_blocks", "requests"):
        if key not in sc:
            bad(f"missing required key {key!r}")
    unknown = sorted(set(sc) - _KNOWN)
    if unknown:
        bad(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_KNOWN))})")
    posint(sc, "block_size", 1)
    posint(sc, "num_gpu_blocks", 2)
    for key in ("max_num_batched_tokens", "max_num_seqs", "max_model_len", "max_steps"):
        if key in sc:
            posint(sc, key, 1)
    if int(sc.get("max_num_batched_tokens", 2048)) < int(sc.get("max_num_seqs", 128)):
        bad("vLLM requires max_num_batched_tokens >= max_num_seqs "
            f"(got {sc.get('max_num_batched_tokens', 2048)} < {sc.get('max_num_seqs', 128)})")
    if "long_prefill_token_threshold" in sc:
        posint(sc, "long_prefill_token_threshold", 0)
    if "max_num_scheduled_tokens" in sc:
        posint(sc, "max_num_scheduled_tokens", 1)
        if sc["max_num_scheduled_tokens"] > int(sc.get("max_num_batched_tokens", 2048)):
            bad(f"'max_num_scheduled_tokens' ({sc['max_num_scheduled_tokens']}) must be at most "
                f"max_num_batched_tokens ({sc.get('max_num_batched_tokens', 2048)})")
    if sc.get("policy", "fcfs") not in ("fcfs", "priority"):
        bad(f"'policy' must be \"fcfs\" or \"priority\", got {sc['policy']!r}")
    w = sc.get("watermark", 0.0)
    if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w < 1:
        bad(f"'watermark' must be a number in [0, 1), got {w!r}")
    for key in ("enable_prefix_caching", "scheduler_reserve_full_isl", "enable_chunked_prefill"):
        if key in sc and not isinstance(sc[key], bool):
            bad(f"{key!r} must be true or false, got {sc[key]!r}")
    if sc.get("enable_chunked_prefill") is False and \
            int(sc.get("max_num_batched_tokens", 2048)) < int(sc.get("max_model_len", DEFAULT_MAX_MODEL_LEN)):
        bad("with 'enable_chunked_prefill' false, vLLM requires max_num_batched_tokens >= max_model_len "
            f"(got {sc.get('max_num_batched_tokens', 2048)} < {sc.get('max_model_len', DEFAULT_MAX_MODEL_LEN)})")
    reqs = sc["requests"]
    if not isinstance(reqs, list) or not reqs:
        bad("'requests' must be a non-empty list")
    seen: dict[str, int] = {}
    max_len = int(sc.get("max_model_len", DEFAULT_MAX_MODEL_LEN))
    for i, r in enumerate(reqs):
        if not isinstance(r, dict) or not isinstance(r.get("id"), str) or not r["id"]:
            bad(f"request {i}: needs an 'id' (a non-empty string)")
        if not r["id"].isprintable():  # it is written into the converted instance and printed
            bad(f"request {i}: its 'id' {r['id']!r} must be printable text (no control character)")
        rid = r["id"]
        rw = f"request {rid!r}"
        if rid in seen:
            bad(f"{rw}: duplicate id")
        unknown = sorted(set(r) - _REQ_KNOWN)
        if unknown:
            bad(f"{rw}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_REQ_KNOWN))})")
        posint(r, "max_tokens", 1, f"{rw}: 'max_tokens'")
        if "priority" in r and (isinstance(r["priority"], bool) or not isinstance(r["priority"], int)):
            bad(f"{rw}: 'priority' must be an integer")
        if "cache_salt" in r:
            if not isinstance(r["cache_salt"], str) or not r["cache_salt"]:
                bad(f"{rw}: 'cache_salt' must be a non-empty string")
            if "follows" in r:
                bad(f"{rw}: a follow-up uses its conversation's 'cache_salt' (give it on the first request)")
        if "follows" in r:
            prev = r["follows"]
            if prev not in seen:
                bad(f"{rw}: 'follows' names {prev!r}, which is not a request listed before it")
            if any(q.get("follows") == prev for q in reqs[:i]):
                bad(f"{rw}: {prev!r} is already followed by another request")
            if "arrival_step" in r:
                bad(f"{rw}: a request that follows another arrives 'think_steps' after it finishes, "
                    "not at an 'arrival_step'")
            posint(r, "think_steps", 0, f"{rw}: 'think_steps'") if "think_steps" in r else None
            if "prompt" in r:
                bad(f"{rw}: a follow-up gives the length of its new text ('prompt_len'), not tokens")
            posint(r, "prompt_len", 1, f"{rw}: 'prompt_len'")
        else:
            if "think_steps" in r:
                bad(f"{rw}: 'think_steps' needs 'follows'")
            posint(r, "arrival_step", 0, f"{rw}: 'arrival_step'")
            if ("prompt" in r) == ("prompt_len" in r):
                bad(f"{rw}: needs exactly one of 'prompt' or 'prompt_len'")
            if "prompt" in r:
                p = r["prompt"]
                if (not isinstance(p, list) or not p
                        or any(isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < 10000 for t in p)):
                    bad(f"{rw}: 'prompt' must be a non-empty list of token ids in 0..9999")
            else:
                posint(r, "prompt_len", 1, f"{rw}: 'prompt_len'")
        seen[rid] = i
    for r in reqs:
        if len(prompt_ids(sc, r["id"])) + int(r["max_tokens"]) > max_len:
            # vLLM would stop such a request early (length cap at max_model_len).
            bad(f"request {r['id']!r}: prompt + max_tokens > max_model_len {max_len}")
    return sc


def load_scenario(path: str) -> dict:
    try:
        with open(path) as f:
            sc = json.load(f)
    except OSError as e:
        raise ScenarioError(f"cannot read {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ScenarioError(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
    return check_scenario(sc, path)


def _fresh(index: int, n: int) -> list[int]:
    # First token of generated text: 10000 + request index. Each generated
    # text therefore starts with a unique token, so the chained block hashes of
    # two generated prompts never collide (no accidental prefix-cache hits).
    return [GENERATED_FIRST_TOKEN_BASE + index] + [100 + (j % 5000) for j in range(1, n)]


def prompt_ids(sc: dict, rid: str) -> list[int]:
    """The prompt token ids of request `rid`. A follow-up's prompt is the
    whole conversation so far: its predecessor's prompt, the predecessor's
    max_tokens output tokens (the sampled token id each), then its own
    `prompt_len` new tokens."""
    reqs = sc["requests"]
    index = next(i for i, r in enumerate(reqs) if r["id"] == rid)
    r = reqs[index]
    if "prompt" in r:
        return [int(t) for t in r["prompt"]]
    own = _fresh(index, int(r["prompt_len"]))
    if "follows" in r:
        prev = next(q for q in reqs if q["id"] == r["follows"])
        sampled = int(sc.get("sampled_token_id", DEFAULT_SAMPLED_TOKEN_ID))
        return prompt_ids(sc, prev["id"]) + [sampled] * int(prev["max_tokens"]) + own
    return own


def build_scheduler(sc: dict):
    """Build a real vllm.v1 Scheduler the way EngineCore does, minus the
    executor: a tiny local HF config (no download, no tokenizer), a
    KVCacheConfig with a single FullAttentionSpec group and num_gpu_blocks."""
    import torch

    from vllm.config import (
        CacheConfig,
        DeviceConfig,
        ModelConfig,
        SchedulerConfig,
        VllmConfig,
    )
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import (
        get_request_block_hasher,
        init_none_hash,
        resolve_cache_hit_alignment_tokens,
        resolve_kv_cache_block_sizes,
    )
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import (
        FullAttentionSpec,
        KVCacheConfig,
        KVCacheGroupSpec,
    )
    from vllm.v1.structured_output import StructuredOutputManager

    block_size = int(sc["block_size"])
    num_blocks = int(sc["num_gpu_blocks"])
    max_model_len = int(sc.get("max_model_len", DEFAULT_MAX_MODEL_LEN))
    want = dict(
        max_num_batched_tokens=int(sc.get("max_num_batched_tokens", 2048)),
        max_num_seqs=int(sc.get("max_num_seqs", 128)),
        long_prefill_token_threshold=int(sc.get("long_prefill_token_threshold", 0)),
        scheduler_reserve_full_isl=bool(sc.get("scheduler_reserve_full_isl", True)),
        watermark=float(sc.get("watermark", 0.0)),
        policy=str(sc.get("policy", "fcfs")),
        enable_chunked_prefill=bool(sc.get("enable_chunked_prefill", True)),
    )
    if "max_num_scheduled_tokens" in sc:
        want["max_num_scheduled_tokens"] = int(sc["max_num_scheduled_tokens"])

    model_config = ModelConfig(
        model=TINY_MODEL_DIR,
        tokenizer=TINY_MODEL_DIR,
        skip_tokenizer_init=True,
        dtype="float32",
        seed=0,
        max_model_len=max_model_len,
    )
    scheduler_config = SchedulerConfig(
        max_model_len=max_model_len,
        is_encoder_decoder=False,
        async_scheduling=False,
        **want,
    )
    cache_config = CacheConfig(
        block_size=block_size,
        enable_prefix_caching=bool(sc.get("enable_prefix_caching", True)),
    )
    vllm_config = VllmConfig(
        model_config=model_config,
        scheduler_config=scheduler_config,
        cache_config=cache_config,
        device_config=DeviceConfig(device="cpu"),
    )

    # VllmConfig.__post_init__ may rewrite some fields; insist on what the
    # scenario asked for so a silent change can never skew the oracle.
    s = vllm_config.scheduler_config
    c = vllm_config.cache_config
    got = {k: getattr(s, k) for k in want}
    problems = [f"{k}: wanted {want[k]!r}, got {got[k]!r}" for k in want if got[k] != want[k]]
    if s.async_scheduling:
        problems.append("async_scheduling ended up True")
    if "max_num_scheduled_tokens" not in want and s.max_num_scheduled_tokens not in (
            None, want["max_num_batched_tokens"]):
        problems.append(f"max_num_scheduled_tokens={s.max_num_scheduled_tokens}")
    if c.block_size != block_size:
        problems.append(f"block_size: wanted {block_size}, got {c.block_size}")
    if c.enable_prefix_caching != bool(sc.get("enable_prefix_caching", True)):
        problems.append("enable_prefix_caching was changed by VllmConfig")
    if vllm_config.model_config.max_model_len != max_model_len:
        problems.append(
            f"max_model_len: wanted {max_model_len}, "
            f"got {vllm_config.model_config.max_model_len}"
        )
    if vllm_config.speculative_config is not None:
        problems.append("speculative_config is set")
    if problems:
        raise SystemExit("VllmConfig changed the scenario config: " + "; ".join(problems))

    kv_cache_config = KVCacheConfig(
        num_blocks=num_blocks,
        kv_cache_tensors=[],
        kv_cache_groups=[
            KVCacheGroupSpec(
                ["layer"],
                FullAttentionSpec(
                    block_size=block_size,
                    num_kv_heads=1,
                    head_size=1,
                    dtype=torch.float32,
                ),
            )
        ],
    )
    cache_config.num_gpu_blocks = num_blocks
    sched_block_size, hash_block_size = resolve_kv_cache_block_sizes(
        kv_cache_config, vllm_config
    )
    kv_cache_config.hash_block_size = hash_block_size
    kv_cache_config.cache_hit_alignment_tokens = resolve_cache_hit_alignment_tokens(
        kv_cache_config, vllm_config, sched_block_size, hash_block_size
    )

    scheduler = Scheduler(
        vllm_config=vllm_config,
        kv_cache_config=kv_cache_config,
        structured_output_manager=StructuredOutputManager(vllm_config),
        block_size=sched_block_size,
        hash_block_size=hash_block_size,
        log_stats=False,
    )

    # Same block hasher wiring as EngineCore.__init__.
    block_hasher = None
    if vllm_config.cache_config.enable_prefix_caching:
        hash_fn = get_hash_fn_by_name(vllm_config.cache_config.prefix_caching_hash_algo)
        init_none_hash(hash_fn)
        block_hasher = get_request_block_hasher(
            hash_block_size, hash_fn, vllm_config.num_hash_lookahead_tokens
        )

    effective = {
        "block_size": sched_block_size,
        "hash_block_size": hash_block_size,
        "num_gpu_blocks": num_blocks,
        "usable_blocks": scheduler.kv_cache_manager.block_pool.get_num_free_blocks(),
        "max_model_len": vllm_config.model_config.max_model_len,
        "max_num_batched_tokens": s.max_num_batched_tokens,
        "max_num_scheduled_tokens": scheduler.max_num_scheduled_tokens,
        "max_num_seqs": s.max_num_seqs,
        "long_prefill_token_threshold": s.long_prefill_token_threshold,
        "scheduler_reserve_full_isl": s.scheduler_reserve_full_isl,
        "watermark": s.watermark,
        "watermark_blocks": scheduler.kv_cache_manager.watermark_blocks,
        "policy": s.policy,
        "enable_prefix_caching": c.enable_prefix_caching,
        "enable_chunked_prefill": s.enable_chunked_prefill,
        "async_scheduling": bool(s.async_scheduling),
        "num_lookahead_tokens": scheduler.num_lookahead_tokens,
        "use_v2_model_runner": bool(vllm_config.use_v2_model_runner),
    }
    return scheduler, block_hasher, effective


def make_request(sc: dict, index: int, step: int, order: int, block_hasher):
    from vllm.sampling_params import SamplingParams
    from vllm.v1.request import Request

    req = sc["requests"][index]
    params = SamplingParams(max_tokens=int(req["max_tokens"]), ignore_eos=True)
    return Request(
        request_id=str(req["id"]),
        prompt_token_ids=prompt_ids(sc, req["id"]),
        sampling_params=params,
        pooling_params=None,
        # Deterministic timestamps in the order requests are added (only the
        # priority policy reads them, to order equal priorities; FCFS uses
        # queue order): the step, plus the request's rank among all added.
        arrival_time=float(step) + order * 1e-6,
        priority=int(req.get("priority", 0)),
        block_hasher=block_hasher,
        cache_salt=cache_salt(sc, req["id"]),
    )


def cache_salt(sc: dict, rid: str) -> str | None:
    """A request's cache salt: its conversation's (given on the first request)."""
    reqs = {r["id"]: r for r in sc["requests"]}
    r = reqs[rid]
    while "follows" in r:
        r = reqs[r["follows"]]
    return r.get("cache_salt")


def run(sc: dict, max_steps: int, out, full: bool = False) -> dict:
    from vllm.v1.outputs import ModelRunnerOutput
    from vllm.v1.request import RequestStatus

    scheduler, block_hasher, effective = build_scheduler(sc)
    block_pool = scheduler.kv_cache_manager.block_pool
    sampled_tok = int(sc.get("sampled_token_id", DEFAULT_SAMPLED_TOKEN_ID))

    # Instrumentation only (no behaviour change): remember whose allocation
    # triggered each preemption.
    step_preemptions: list[dict] = []
    last_alloc: dict[str, str | None] = {"rid": None}
    orig_allocate = scheduler.kv_cache_manager.allocate_slots
    orig_preempt = scheduler._preempt_request

    def allocate_slots(request, *a, **kw):
        last_alloc["rid"] = request.request_id
        return orig_allocate(request, *a, **kw)

    def preempt_request(request, *a, **kw):
        step_preemptions.append({"victim": request.request_id, "for": last_alloc["rid"]})
        return orig_preempt(request, *a, **kw)

    scheduler.kv_cache_manager.allocate_slots = allocate_slots
    scheduler._preempt_request = preempt_request

    def cached_blocks() -> int:
        # free blocks that still hold a hash: evictable prefix-cache entries
        return sum(1 for b in block_pool.blocks
                   if b.ref_cnt == 0 and not b.is_null and b.block_hash is not None)

    reqs_spec = list(sc["requests"])
    index_of = {r["id"]: i for i, r in enumerate(reqs_spec)}
    follower = {r["follows"]: i for i, r in enumerate(reqs_spec) if "follows" in r}
    # step -> request indexes arriving then: fresh arrivals (scenario order) first,
    # then follow-ups (in the order their predecessors finished)
    arrivals: dict[int, list[int]] = {}
    for i, r in enumerate(reqs_spec):
        if "follows" not in r:
            arrivals.setdefault(int(r["arrival_step"]), []).append(i)
    followups: dict[int, list[int]] = {}

    known: dict[str, object] = {}  # id -> Request, in arrival order
    finished_at: dict[str, int] = {}
    step = 0
    status = "complete"
    out.write(json.dumps({"format": TRACE_FORMAT, "version": TRACE_VERSION, "config": effective}) + "\n")
    while True:
        arrived = []
        for i in arrivals.get(step, []) + followups.pop(step, []):
            req = make_request(sc, i, step, len(known), block_hasher)
            scheduler.add_request(req)
            known[req.request_id] = req
            arrived.append(req.request_id)

        if len(finished_at) == len(reqs_spec):
            break
        if step >= max_steps:
            status = "step_cap"
            break

        record = {"step": step}
        if arrived:
            record["arrived"] = arrived

        if not scheduler.has_requests():
            # EngineCore.step() does not call schedule() without requests: an idle step.
            record.update(idle=True, scheduled=[], sampled=[], admitted=[], resumed=[], prefix_hit_tokens={},
                          preempted=[], preemptions=[], finished=[],
                          free_blocks=block_pool.get_num_free_blocks(), cached_blocks=cached_blocks(),
                          num_running=0, num_waiting=0)
            out.write(json.dumps(record) + "\n")
            step += 1
            continue

        running_before = {r.request_id for r in scheduler.running}
        status_before = {rid: r.status for rid, r in known.items()}

        step_preemptions.clear()
        so = scheduler.schedule()

        scheduled = list(so.num_scheduled_tokens.items())
        admitted, resumed, prefix_hit = [], [], {}
        for r in scheduler.running:
            rid = r.request_id
            if rid in running_before:
                continue
            admitted.append(rid)
            if status_before[rid] == RequestStatus.PREEMPTED:
                resumed.append(rid)
            # Tokens already computed at admission (prefix-cache hit).
            prefix_hit[rid] = r.num_computed_tokens - so.num_scheduled_tokens.get(rid, 0)
        # In preemption order; must agree with the scheduler's own set.
        preempted = [p["victim"] for p in step_preemptions]
        assert set(preempted) == set(so.preempted_req_ids), (preempted, so.preempted_req_ids)

        # Fake model: sample one token for every request whose scheduled chunk
        # reaches the end of its known tokens; none for partial prefill chunks.
        req_ids = [rid for rid, _ in scheduled]
        sampled = []
        for rid in req_ids:
            r = scheduler.requests[rid]
            sampled.append([sampled_tok] if r.num_computed_tokens >= r.num_tokens else [])
        mro = ModelRunnerOutput(
            req_ids=req_ids,
            req_id_to_index={rid: k for k, rid in enumerate(req_ids)},
            sampled_token_ids=sampled,
        )
        scheduler.update_from_output(so, mro)

        finished = []
        for rid, _ in scheduled:
            r = known[rid]
            if rid not in finished_at and r.is_finished():
                finished_at[rid] = step
                finished.append(rid)
        for rid in finished:
            if rid in follower:
                i = follower[rid]
                followups.setdefault(step + 1 + int(reqs_spec[i].get("think_steps", 0)), []).append(i)

        num_running = len(scheduler.running)
        waiting = ([r.request_id for r in scheduler.kv_holding_waiting]
                   + [r.request_id for r in scheduler.waiting])
        record.update(
            scheduled=[[rid, n] for rid, n in scheduled],
            sampled=[rid for rid, s in zip(req_ids, sampled) if s],
            admitted=admitted,
            resumed=resumed,
            prefix_hit_tokens=prefix_hit,
            preempted=preempted,
            preemptions=list(step_preemptions),
            finished=finished,
            free_blocks=block_pool.get_num_free_blocks(),
            cached_blocks=cached_blocks(),
            num_running=num_running,
            num_waiting=len(waiting),
        )
        if full:
            record.update(
                running=[r.request_id for r in scheduler.running],
                waiting=waiting,
                reqs={
                    rid: {"computed": r.num_computed_tokens, "output": r.num_output_tokens,
                          "status": r.status.name, "preemptions": r.num_preemptions}
                    for rid, r in known.items()
                    # finished requests are reported once more, in the step they finish
                    if rid not in finished_at or finished_at[rid] == step
                },
            )
        out.write(json.dumps(record) + "\n")
        step += 1

    out.flush()
    return {
        "status": status,
        "steps": step,
        "finished": len(finished_at),
        "requests": len(reqs_spec),
        "finished_at": finished_at,
        "config": effective,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Run vLLM's scheduler on a scenario; write its per-step trace.")
    ap.add_argument("scenario")
    ap.add_argument("--max-steps", type=int, default=None)
    ap.add_argument("--full", action="store_true", help="also write queues and per-request state every step")
    ap.add_argument("-o", "--output", default="-", help="trace file (default stdout)")
    args = ap.parse_args(argv)

    try:
        sc = load_scenario(args.scenario)
    except ScenarioError as e:
        _log(f"error: {e}")
        return 2
    max_steps = args.max_steps or int(sc.get("max_steps", DEFAULT_MAX_STEPS))
    out = sys.stdout if args.output == "-" else open(args.output, "w")
    try:
        summary = run(sc, max_steps, out, args.full)
    finally:
        if out is not sys.stdout:
            out.close()
    _log(json.dumps(summary))
    if summary["status"] != "complete":
        _log(f"step cap {max_steps} reached before all requests finished")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
