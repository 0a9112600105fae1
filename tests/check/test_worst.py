"""Worst cases (`serq explore --worst`): exact values with their
witnesses, unbounded metrics with a lasso, limits, bad metric names and
flags (brute force: tests/check/test_worst_crosscheck.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serq.cli import main
from serq.lang.load import load_path
from serq.check.worst import find_worst

ROOT = Path(__file__).resolve().parents[2]


def program(name):
    return load_path(ROOT / "instances" / f"{name}.sq", explorer=True).program


def test_exact_values_and_witness_replays(capsys):
    prog = program("decode_preempt")
    w = find_worst(prog, "recomputed")
    # chat#1 is preempted using 4 units (prompt 3 + 1 decoded token) and
    # re-admitted reusing 2 cached: it computes 2 tokens again, at step 7
    assert (w.value, w.subject, w.counted) == (2, "chat#1", [(7, 2)])
    assert w.replay_path == "0/1/0/0/0/0/0/0"
    assert main(["explore", str(ROOT / "instances" / "decode_preempt.sq"), "--replay", w.replay_path]) == 0
    out = capsys.readouterr().out
    assert "7. iterate gpu: chat#1 reuses 2 cached kv; admit chat#1 (kv)" in out
    w = find_worst(program("vllm_chat"), "peak:kv")
    assert (w.value, w.subject) == (24, "kv")


def test_unbounded_lasso(capsys):
    inst = str(ROOT / "instances" / "self_preempt.sq")
    assert main(["explore", inst, "--worst", "preemptions", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["unbounded"] and d["value"] is None and d["subject"] == "long#1"
    # the cycle: preempt, re-admit, grow back to the wall; one preemption per turn round
    assert d["lasso_start"] == 3 and len(d["trace"]) == 7 and d["counted"] == [{"step": 4, "amount": 1}]
    assert main(["explore", inst, "--worst", "iterations"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("worst iterations: unbounded: a cycle of 3 steps adds to it every time round")
    assert "-- cycle starts here --" in out and "-- cycle returns to step 2 --" in out


def test_worst_bound_is_not_an_answer(capsys):
    inst = str(ROOT / "instances" / "theorem.sq")
    assert main(["explore", inst, "--worst", "iterations", "--max-states", "20"]) == 13
    out = capsys.readouterr().out
    assert out.startswith("worst iterations: at least ")
    assert "the state graph was cut at its max_states bound" in out


def test_worst_honours_the_memory_bound(capsys):
    inst = str(ROOT / "instances" / "theorem.sq")
    assert main(["explore", inst, "--worst", "iterations", "--memory", "1M", "--json"]) == 13
    d = json.loads(capsys.readouterr().out)
    assert (d["complete"], d["bound_reason"], d["exit_code"]) == (False, "memory", 13)
    assert d["text"].startswith("worst iterations: at least ")
    assert main(["explore", inst, "--worst", "iterations", "--memory", "1M"]) == 13
    assert "the state graph was cut at its memory bound: a larger value may exist" in capsys.readouterr().out


def test_worst_has_the_default_memory_bound(capsys, monkeypatch):
    import explorer.runtime.memory

    monkeypatch.setattr(explorer.runtime.memory, "default_limit", lambda: 1 << 20)  # as if almost nothing were available
    inst = str(ROOT / "instances" / "theorem.sq")
    assert main(["explore", inst, "--worst", "iterations"]) == 13
    assert "the state graph was cut at its memory bound" in capsys.readouterr().out


def test_a_memory_error_cuts_the_worst_graph(monkeypatch):
    import explorer.strategies.sequential  # the graph is a visitor over the sequential search: its steps

    calls = []

    def fail(m, state):
        calls.append(1)
        if len(calls) > 30:
            raise MemoryError
        return real(m, state)

    real = explorer.strategies.sequential.state_fingerprint
    monkeypatch.setattr(explorer.strategies.sequential, "state_fingerprint", fail)
    w = find_worst(load_path(ROOT / "instances" / "theorem.sq").program, "iterations")
    assert (w.complete, w.bound_reason, w.exit_code) == (False, "memory", 13)
    assert 1 <= w.states <= 30


@pytest.mark.parametrize("flag, col, message", [
    ("ttfx", 1, "unknown metric `ttfx`; the metrics are ttft, ttft-time"),
    ("peak:kb", 6, "unknown pool `kb`; the pools are kv"),
    ("ttft:kv", 6, "metric `ttft` takes no pool (only queue and peak do)"),
    ("", 1, "unknown metric ``"),
])
def test_bad_metric(capsys, flag, col, message):
    inst = str(ROOT / "instances" / "theorem.sq")
    assert main(["explore", inst, "--worst", flag]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"--worst:1:{col}: error[E014]: {message}")
    if flag:
        assert f"\n  {flag}\n  {' ' * (col - 1)}^" in err


def test_worst_excludes_theorem_and_replay(capsys):
    inst = str(ROOT / "instances" / "theorem.sq")
    assert main(["explore", inst, "--worst", "ttft", "--theorem"]) == 2
    assert "error[E012]: --worst cannot be combined with --theorem" in capsys.readouterr().err
    assert main(["explore", inst, "--worst", "ttft", "--replay", "0"]) == 2
    assert "error[E012]: --worst cannot be combined with --replay" in capsys.readouterr().err


FAULT = """
pool kv { cap 4; block 2; admit via gpu; }
stage gpu { budget 2; cost 2 + ntok; }
session chat {
  hold kv reuse c need (3 - c) take 0 at admission (c = 3) { prefill 1 growing kv; }
  end;
}
workload { 1 x chat; }
"""


@pytest.mark.parametrize("metric", ["time", "iterations", "ttft", "latency-time"])
def test_an_iteration_that_faults_counts_for_nothing(tmp_path, capsys, metric):
    # the only iteration faults (a reuse of 3 units in blocks of 2): it did
    # nothing, and has no shape for the cost to read
    inst = tmp_path / "fault.sq"
    inst.write_text(FAULT)
    assert main(["explore", str(inst), "--worst", metric]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    who = {"time": "the run", "iterations": "the run"}.get(metric, "no request")
    assert head.startswith(f"worst {metric}: 0 ") and head.endswith(f"; {who})")


def test_worst_html_writes_the_witness(tmp_path, capsys):
    inst = str(ROOT / "instances" / "decode_preempt.sq")
    page = tmp_path / "w.html"
    assert main(["explore", inst, "--worst", "recomputed", "--html", str(page)]) == 0
    out = capsys.readouterr().out
    html = page.read_text()
    head = out.splitlines()[0]
    assert head == "worst recomputed: 2 tokens (tokens one session computes again after a preemption; chat#1)"
    assert '<div class="verdict worst" id="verdict">worst recomputed: 2 tokens' in html
    assert '<div class="sub" id="counted">counted at steps: 7 (+2)</div>' in html
    assert html.count('class="step counted"') == 1 and 'data-step="7" data-counted="2"' in html
    assert '<code id="replay">0/1/0/0/0/0/0/0</code>' in html
    assert html.count('<tr class="lane"') == 2 and html.count('<li id="step-') == 8
    assert "7. iterate gpu: chat#1 reuses 2 cached kv; admit chat#1 (kv)" in html


@pytest.mark.parametrize("metric", ["iterations", "peak", "preemptions"])
def test_worst_html_of_a_lasso_and_of_a_state(tmp_path, metric):
    # self_preempt: unbounded preemptions and iterations (a lasso), and the
    # peak of kv (a state, found with symmetry)
    page = tmp_path / "w.html"
    assert main(["explore", str(ROOT / "instances" / "self_preempt.sq"), "-q", "--worst", metric,
                 "--html", str(page)]) == 0
    html = page.read_text()
    assert f'id="verdict">worst {metric}: ' in html
    assert ('id="cycle-row"' in html) == (metric != "peak")
    assert ('id="counted"' in html) == (metric != "peak")


def test_a_time_metric_whose_cost_cannot_be_evaluated_is_said_not_summed(tmp_path, capsys):
    """The simulator's rule for a cost (`Model.cost`, out of range past
    2^62 ns) holds for `--worst`'s time metrics too: a located error naming
    the stage and the iteration, never a traceback or a wrapped sum."""
    f = tmp_path / "c.sq"
    f.write_text("pool kv { cap 8; block 2; admit via gpu; }\n"
                 "stage gpu { budget 8; cost 4611686018427387903 * ntok; }\n"
                 "session s { hold kv reserve 2 { prefill 2; decode 2; } }\nworkload { 1 x s; }\n")
    assert main(["explore", str(f), "--worst", "latency-time"]) == 2
    err = capsys.readouterr().err
    assert "error[E014]" in err and "stage `gpu`'s cost" in err and "ntok=2" in err and "out of range" in err
    assert "Traceback" not in err
    assert main(["explore", str(f), "--worst", "latency"]) == 0  # counted in iterations: no cost read
