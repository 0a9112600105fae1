"""Worst cases (`serq explore --worst`): against brute force over every
enumerated path of small instances, exact values with their witnesses,
unbounded metrics with a lasso, and bad metric names."""

from __future__ import annotations

import json
from collections import Counter as Count
from pathlib import Path

import pytest

from serq.cli import main
from serq.load import load_path
from serq.model import ITERATE, Model
from serq.worst import METRICS, find_worst

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["decode_preempt", "theorem", "theorem_no_reserve", "agent_subagents", "hol_none"]


def program(name):
    return load_path(ROOT / "instances" / f"{name}.sq", explorer=True).program


def maximal_paths(m: Model):
    """Every path from the initial state to a state without successors, as
    [(state, action, events)] plus the last state (these instances are acyclic)."""
    stack = [(m.initial_state(), [])]
    while stack:
        s, path = stack.pop()
        tr = m.transitions(s)
        if not tr:
            yield path, s
        for a, nxt, ev in tr:
            stack.append((nxt, path + [(s, a, ev)]))


def per_request(path, ends_at) -> int:
    """Most iterations a request waits from its arrival to `ends_at`."""
    count: dict[int, int] = {}
    waiting: set[int] = set()
    worst = 0
    for _s, a, ev in path:
        if a[0] == ITERATE:
            for sid in waiting:
                count[sid] += 1
                worst = max(worst, count[sid])
        for e in ev:
            if e[0] in ("arrive", "turn"):
                waiting.add(e[1])
                count[e[1]] = 0
            elif e[0] == "spawn":
                waiting.add(e[2])
                count[e[2]] = 0
            elif e[1] in waiting and ends_at(e):
                waiting.discard(e[1])
    return worst


def brute(m: Model, prog, metric: str) -> int:
    best = 0
    caps = [p.cap for p in prog.pools]
    for path, last in maximal_paths(m):
        states = [s for s, _, _ in path] + [last]
        if metric == "preemptions":
            c = Count(e[1] for _s, _a, ev in path for e in ev if e[0] == "preempt")
            v = max(c.values(), default=0)
        elif metric == "iterations":
            v = sum(1 for _s, a, _ev in path if a[0] == ITERATE)
        elif metric == "time":
            v = sum(m.cost(e[1], e[2]) for _s, _a, ev in path for e in ev if e[0] == "iterate")
        elif metric == "ttft":
            v = per_request(path, lambda e: (e[0] == "run_done" and e[2] == "prefill")
                            or (e[0] == "serve" and e[3] == "decode"))
        elif metric == "latency":
            v = per_request(path, lambda e: e[0] in ("at_turn", "end"))
        elif metric == "queue":
            v = max(len(q) for s in states for _f, _c, q in s[1])
        else:  # peak
            v = max(cap - f - sum(e[1] for e in c) for s in states
                    for (f, c, _q), cap in zip(s[1], caps) if cap is not None)
        best = max(best, v)
    return best


@pytest.mark.parametrize("name", SMALL)
@pytest.mark.parametrize("metric", ["ttft", "latency", "preemptions", "iterations", "time", "queue", "peak"])
def test_worst_equals_brute_force(name, metric):
    prog = program(name)
    w = find_worst(prog, metric)
    assert w.complete and w.value == brute(Model(prog), prog, metric)
    if METRICS[metric].kind == "path":
        # the witness counts exactly the worst value
        assert sum(n for _k, n in w.counted) == w.value


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
    import explorer.memory

    monkeypatch.setattr(explorer.memory, "default_limit", lambda: 1 << 20)  # as if almost nothing were available
    inst = str(ROOT / "instances" / "theorem.sq")
    assert main(["explore", inst, "--worst", "iterations"]) == 13
    assert "the state graph was cut at its memory bound" in capsys.readouterr().out


def test_a_memory_error_cuts_the_worst_graph(monkeypatch):
    import explorer.stored

    calls = []

    def fail(m, state):
        calls.append(1)
        if len(calls) > 30:
            raise MemoryError
        return real(m, state)

    real = explorer.stored.state_fingerprint
    monkeypatch.setattr(explorer.stored, "state_fingerprint", fail)
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
