"""`serq oracle`: scenarios, the converter, the comparison, the command.
Only the last test needs vLLM's environment (`serq oracle setup`); the
others run without it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from serq.cli import main
from serq.lang.load import load_text
from serq.oracle import venv as oracle_venv
from serq.oracle.compare import agree
from serq.oracle.convert import NEEDS_SHARED_PREFIX, convert
from serq.oracle.driver import ScenarioError, check_scenario, prompt_ids

DIR = Path(__file__).resolve().parents[1] / "vllm"


def sc(**kw):
    base = {"block_size": 4, "num_gpu_blocks": 10, "max_num_batched_tokens": 16, "max_num_seqs": 4,
            "requests": [{"id": "r0", "arrival_step": 0, "prompt_len": 6, "max_tokens": 3}]}
    base.update(kw)
    return base


def test_follow_up_prompt_is_the_conversation_so_far():
    s = check_scenario(sc(requests=[
        {"id": "a", "arrival_step": 0, "prompt_len": 3, "max_tokens": 2},
        {"id": "b", "follows": "a", "think_steps": 1, "prompt_len": 2, "max_tokens": 1}]))
    assert prompt_ids(s, "a") == [10000, 101, 102]
    assert prompt_ids(s, "b") == [10000, 101, 102, 7, 7, 10001, 101]


@pytest.mark.parametrize("bad,msg", [
    ({"requests": []}, "'requests' must be a non-empty list"),
    ({"block_sz": 4}, "unknown key 'block_sz'"),
    ({"max_num_batched_tokens": 2}, "max_num_batched_tokens >= max_num_seqs"),
    ({"policy": "lifo"}, "'policy' must be"),
    ({"requests": [{"id": "r0", "arrival_step": 0, "max_tokens": 3}]}, "exactly one of 'prompt' or 'prompt_len'"),
    ({"requests": [{"id": "r0", "follows": "x", "prompt_len": 2, "max_tokens": 3}]}, "not a request listed before"),
    ({"requests": [{"id": "r0", "arrival_step": 0, "prompt_len": 2, "max_tokens": 0}]}, "'max_tokens' must be"),
    ({"max_num_scheduled_tokens": 17}, "'max_num_scheduled_tokens' (17) must be at most max_num_batched_tokens (16)"),
    ({"max_num_scheduled_tokens": 0}, "'max_num_scheduled_tokens' must be an integer >= 1"),
    ({"enable_chunked_prefill": 0}, "'enable_chunked_prefill' must be true or false"),
    ({"enable_chunked_prefill": False}, "vLLM requires max_num_batched_tokens >= max_model_len (got 16 < 8192)"),
    ({"requests": [{"id": "r0", "arrival_step": 0, "prompt_len": 2, "max_tokens": 1, "cache_salt": ""}]},
     "'cache_salt' must be a non-empty string"),
    ({"requests": [{"id": "a", "arrival_step": 0, "prompt_len": 2, "max_tokens": 1, "cache_salt": "s"},
                   {"id": "b", "follows": "a", "prompt_len": 2, "max_tokens": 1, "cache_salt": "s"}]},
     "a follow-up uses its conversation's 'cache_salt'"),
])
def test_bad_scenarios_say_what_is_wrong(bad, msg):
    with pytest.raises(ScenarioError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        check_scenario(sc(**bad))


def test_shared_prompts_become_prefix_declarations_chained_as_vllm_hashes_blocks():
    s = sc(requests=[{"id": "a", "arrival_step": 0, "prompt": [1, 2, 3, 4, 5, 6, 7, 8, 9], "max_tokens": 2},
                     {"id": "b", "arrival_step": 3, "prompt": [1, 2, 3, 4, 5, 6, 7, 8, 1], "max_tokens": 2},
                     {"id": "c", "arrival_step": 3, "prompt": [1, 2, 3, 4, 9, 9], "max_tokens": 2},
                     {"id": "d", "arrival_step": 3, "prompt": [1, 2, 3, 9, 9], "max_tokens": 2}])
    conv = convert(s)
    assert conv.needs == []
    assert "prefix P1 = 4;\nprefix P2 = P1 + 4;\n" in conv.text
    prog = load_text(conv.text, "t.sq").program
    assert [(p.name, p.length, p.parent) for p in prog.prefixes] == [("P1", 4, None), ("P2", 8, "P1")]
    # a, b share two blocks; c only the first; d (a common run shorter than a block) shares nothing
    assert [conv.labels[r] for r in "abcd"] == ["req_p2#1", "req_p2#2", "req_p1#3", "req#4"]
    assert "hold seqs 1, kv prefix P2 reuse c" in conv.text and "hold seqs 1, kv reuse c" in conv.text
    # without prefix caching nothing is shared
    assert "prefix" not in convert(dict(s, enable_prefix_caching=False)).text


def test_blocks_shared_past_the_prompts_are_reported_as_not_exact():
    # same prompt, same sampled token: the blocks of their output tokens are the same blocks
    s = sc(requests=[{"id": "a", "arrival_step": 0, "prompt": [1, 2, 3, 4], "max_tokens": 6},
                     {"id": "b", "arrival_step": 3, "prompt": [1, 2, 3, 4], "max_tokens": 6}])
    assert convert(s).needs == [NEEDS_SHARED_PREFIX]
    s["requests"][1]["max_tokens"] = 4
    assert convert(s).needs == []


def test_blocks_shared_past_the_prompts_that_no_request_can_hit_are_exact():
    # 05 with 3 output tokens: a and b both compute [9, 10, 7, 7], but a hit
    # leaves the last token to compute: of prompt + 3 - 1 = 12 tokens at most
    # 8 are hit, so that block is computed, never hit
    p10 = list(range(1, 11))
    s = sc(requests=[{"id": "a", "arrival_step": 0, "prompt": p10, "max_tokens": 3},
                     {"id": "b", "arrival_step": 5, "prompt": p10, "max_tokens": 3}])
    assert convert(s).needs == []
    s["requests"][1]["max_tokens"] = 4  # b, resumed with 3 outputs, recomputes 13 tokens and may hit 12
    assert convert(s).needs == [NEEDS_SHARED_PREFIX]


def test_cache_salt_scheduled_tokens_and_chunked_prefill_off_are_written_in_the_language():
    p = [1, 2, 3, 4, 5, 6, 7, 8]
    s = sc(requests=[{"id": "a", "arrival_step": 0, "prompt": p + [9], "max_tokens": 2, "cache_salt": "x"},
                     {"id": "b", "arrival_step": 2, "prompt": p + [9], "max_tokens": 2, "cache_salt": "y"},
                     {"id": "c", "arrival_step": 2, "prompt": p + [9], "max_tokens": 2, "cache_salt": "x"},
                     {"id": "d", "arrival_step": 2, "prompt": p + [9], "max_tokens": 2},
                     {"id": "e", "arrival_step": 2, "prompt": p, "max_tokens": 2}])
    conv = convert(s)
    # a and c share a prefix under salt x; d and e under none; b alone (salt y) shares nothing
    assert conv.needs == [] and "prefix P1 = 8;\nprefix P2 = 8;\nconst BS" in conv.text
    assert [conv.labels[r] for r in "abcde"] == ["req_p2#1", "req#2", "req_p2#3", "req_p1#4", "req_p1#5"]
    assert "stage gpu { budget 8; serve (admitted); }" in convert(sc(max_num_scheduled_tokens=8)).text
    off = convert(sc(enable_chunked_prefill=False, max_num_batched_tokens=16, max_model_len=16)).text
    assert "admit if n + g - c <= budget_left {" in off
    off = convert(sc(enable_chunked_prefill=False, max_model_len=16, long_prefill_token_threshold=4)).text
    assert "admit if min(n + g - c, if holders(seqs) + waiting(seqs) > 1 then 4 else 16) <= budget_left {" in off


def test_copies_keep_is_written_where_blocks_are_shared():
    shared = sc(requests=[{"id": "a", "arrival_step": 0, "prompt": [1, 2, 3, 4, 5], "max_tokens": 2},
                          {"id": "b", "arrival_step": 0, "prompt": [1, 2, 3, 4, 6], "max_tokens": 2}])
    assert "evict lru; copies keep; }" in convert(shared).text
    assert "copies" not in convert(sc()).text  # nothing shared: the option would change nothing (W510)
    assert "copies" not in convert(dict(shared, enable_prefix_caching=False)).text


def test_threshold_watermark_and_priority_are_written_in_the_language():
    text = convert(sc(long_prefill_token_threshold=4)).text
    assert "chunk if holders(seqs) + waiting(seqs) > 1 then 4 else 16;" in text
    assert "chunk" not in convert(sc(long_prefill_token_threshold=16)).text  # not below the budget: no cap
    text = convert(sc(watermark=0.2)).text
    assert "const WM = 2;" in text and "need (n + g - c + (if holders(kv) > 0 then WM * BS else 0))" in text
    assert "WM" not in convert(sc(watermark=0.05)).text  # int(0.05 * 10) = 0 blocks
    # with the gate off, the first chunk's blocks and the watermark must fit
    off = convert(sc(watermark=0.2, scheduler_reserve_full_isl=False))
    assert off.needs == []
    assert "need (min(n + g - c, budget_left) + (if holders(kv) > 0 then WM * BS else 0)) take 0" in off.text
    off = convert(sc(watermark=0.2, scheduler_reserve_full_isl=False, long_prefill_token_threshold=4,
                     enable_prefix_caching=False))
    assert ("need (min(n + g, budget_left, if holders(seqs) + waiting(seqs) > 1 then 4 else 16) + "
            "(if holders(kv) > 0 then WM * BS else 0)) take 0") in off.text
    assert "need 0" in convert(sc(scheduler_reserve_full_isl=False)).text
    text = " ".join(convert(sc(policy="priority")).text.split())
    assert "queue (pri, arrived);" in text and "preempt (desc pri, desc arrived); requeue order;" in text
    assert "self_preempt continue;" in text


def test_a_difference_prints_the_first_differing_step_side_by_side():
    name = "04_decode_preemption_and_resume"
    s = json.loads((DIR / f"{name}.json").read_text())
    lines = (DIR / f"{name}.trace.jsonl").read_text().splitlines()
    assert agree(s, "\n".join(lines)).ok
    rec = json.loads(lines[6])
    rec["free_blocks"] += 1
    lines[6] = json.dumps(rec)
    a = agree(s, "\n".join(lines), coalesce=False)
    assert not a.ok and a.agree == a.steps - 1
    assert a.first.splitlines()[0] == f"first difference at step {rec['step']} (free_blocks):"
    assert any(x.startswith("≠ free_blocks") for x in a.first.splitlines())


def test_cli_convert_compare(tmp_path, capsys):
    name = "12_multiturn_reuse"
    out = tmp_path / "x.sq"
    assert main(["oracle", "convert", str(DIR / f"{name}.json"), "-o", str(out)]) == 0
    assert main(["run", str(out), "--no-progress", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["stopped"] == "done"
    assert main(["oracle", "compare", str(DIR / f"{name}.json"), str(DIR / f"{name}.trace.jsonl")]) == 0
    assert "agree on all 7 steps" in capsys.readouterr().out
    other = DIR / "04_decode_preemption_and_resume.trace.jsonl"
    assert main(["oracle", "compare", str(DIR / f"{name}.json"), str(other)]) == 12  # violation
    assert "first difference at step 0" in capsys.readouterr().out


def test_cli_bad_input(tmp_path, capsys):
    p = tmp_path / "s.json"
    p.write_text('{"block_size": 4,\n "num_gpu_blocks": }\n')
    assert main(["oracle", "convert", str(p)]) == 2
    err = capsys.readouterr().err
    assert f"{p}:2:20: error[E023]: not a scenario: Expecting value" in err and "Traceback" not in err
    p.write_text(json.dumps(sc(watermark=2)))
    assert main(["oracle", "convert", str(p)]) == 2
    assert "error[E023]: 'watermark' must be a number in [0, 1), got 2" in capsys.readouterr().err
    p.write_text(json.dumps(sc()))
    t = tmp_path / "t.jsonl"
    t.write_text('{"step": 0}\n')
    assert main(["oracle", "compare", str(p), str(t)]) == 2
    assert f"{t}:1:1: error[E025]: malformed trace: not a vLLM trace of `serq oracle trace`" in capsys.readouterr().err
    assert main(["oracle", "trace", str(p), "--venv", str(tmp_path / "none")]) == 2
    err = capsys.readouterr().err
    assert f"error[E024]: no oracle environment at {tmp_path / 'none'}" in err
    assert "serq oracle setup" in err


def test_setup_installs_vllm_without_its_dependencies(tmp_path):
    steps = oracle_venv.steps(tmp_path / "v")
    argvs = [a for _, a in steps]
    assert argvs[0][1:] == ["-m", "venv", str(tmp_path / "v")]
    assert argvs[1][-2:] == ["--no-deps", "vllm==0.33.0"]
    assert "torch==2.13.0" in argvs[2] and "-c" in argvs[2]
    assert "einops" in argvs[3]
    assert (Path(oracle_venv.HERE) / "tiny_model" / "config.json").exists()
    check_scenario(dict(oracle_venv.SMOKE))  # the smoke test's scenario is one vLLM accepts


VENV = Path(os.environ.get("SERQ_ORACLE_VENV", oracle_venv.default_venv()))


@pytest.mark.skipif(not oracle_venv.python_of(VENV).exists(),
                    reason="vLLM's environment is not built here (`serq oracle setup`); the recorded traces "
                           "are checked without it by test_vllm_agreement.py")
@pytest.mark.parametrize("name", ["03_self_preemption_during_prefill", "13_multiturn_three_turns_think"])
def test_vllm_reproduces_the_recorded_trace(name, tmp_path):
    out = tmp_path / "t.jsonl"
    p = oracle_venv.run_driver(VENV, str(DIR / f"{name}.json"), str(out))
    assert p.returncode == 0, p.stderr
    assert out.read_text() == (DIR / f"{name}.trace.jsonl").read_text()
