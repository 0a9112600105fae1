"""Building the model is cut by the limits like the search: a workload of
many sessions spends seconds in Python before the first state (its
sessions' attributes, its initial row), and `--time-limit`, `--memory`
and a signal end it there with the usual verdict and statistics, never a
wait for the whole build (explorer/runtime/limits.py, `building`, `tick`).

Not timed: a time limit of 0 is past at the first look, which comes after
4,096 sessions (serq/semantics/engine.py, TICK); the sessions whose
attributes were made are counted."""

from __future__ import annotations

import pytest

import serq.semantics.engine as engine
from explorer.check import BUILDING
from explorer.runtime.interrupt import Interrupted
from serq.cli import main

SESSIONS = 100_000

MANY = f"""pool kv {{ cap 8; block 2; admit via gpu; }}
stage gpu {{ budget 4; serve (admitted); }}
session s {{ hold kv reserve 2 {{ prefill 2 growing kv; }} end; }}
workload {{ {SESSIONS} x s; }}
"""

STRATEGIES = [[], ["--workers", "2"], ["--strategy", "dfs"], ["--partitions", "2"], ["--swarm", "2"], ["--exact"]]
IDS = ["bfs", "workers2", "dfs", "partitions", "swarm", "exact"]


@pytest.fixture
def many(tmp_path, monkeypatch):
    """The instance, and the number of sessions whose attributes were made."""
    inst = tmp_path / "many.sq"
    inst.write_text(MANY)
    made = [0]
    real = engine.initial_attrs

    def counted(*a):
        made[0] += 1
        return real(*a)

    monkeypatch.setattr(engine, "initial_attrs", counted)
    return inst, made


def _lines(capsys):
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("flags", STRATEGIES, ids=IDS)
def test_the_time_limit_cuts_the_build(many, capsys, flags):
    inst, made = many
    assert main(["explore", str(inst), "--time-limit", "0", "--no-timing", *flags]) == 13
    out = _lines(capsys)
    assert out[0] == (f"bound: no violation within the bound (time_limit=0.0); exploration incomplete: "
                      f"reached {BUILDING}")
    assert out[-1].startswith("stats: generated=0 distinct=0 queue=0 max_depth=0")
    assert made[0] == engine.TICK  # stopped at the first look: 4,095 of 100,000 sessions made


def test_the_memory_bound_cuts_the_build(many, capsys):
    inst, made = many
    assert main(["explore", str(inst), "--memory", "1M", "--no-timing"]) == 13
    out = _lines(capsys)
    assert out[0] == f"bound: no violation within the bound (memory=1MiB); exploration incomplete: reached {BUILDING}"
    assert made[0] == engine.TICK


def test_a_memory_error_while_building_is_the_memory_bound(many, capsys, monkeypatch):
    inst, made = many
    real = engine.initial_attrs

    def fails(*a):
        if made[0] == 5000:
            raise MemoryError
        return real(*a)

    monkeypatch.setattr(engine, "initial_attrs", fails)
    assert main(["explore", str(inst), "--no-timing"]) == 13
    assert _lines(capsys)[0] == ("bound: no violation within the bound (memory=MemoryError); exploration "
                                 f"incomplete: reached {BUILDING}")


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_a_signal_while_building_is_the_verdict_interrupted(many, capsys, monkeypatch, sig):
    inst, made = many

    def signalled():  # the signal's handler raises Interrupted in the loop, as a real signal does
        if made[0] >= 10_000:
            raise Interrupted(sig)

    monkeypatch.setattr(engine, "tick", signalled)
    assert main(["explore", str(inst), "--no-timing"]) == 16
    out = _lines(capsys)
    assert out[0] == f"interrupted: stopped by {sig} {BUILDING}; exploration incomplete"
    assert out[-1].startswith("stats: generated=0 distinct=0 ")
    assert made[0] < SESSIONS


def test_the_initial_state_is_packed_while_building(many, capsys, monkeypatch):
    """The second long loop (the initial row's sessions) is cut too: the
    limit met only once every session's attributes are made."""
    inst, made = many
    import serq.semantics.model as model

    def late():
        if made[0] >= SESSIONS:
            raise Interrupted("SIGINT")

    monkeypatch.setattr(model, "tick", late)
    monkeypatch.setattr(engine, "tick", late)
    assert main(["explore", str(inst), "--no-timing"]) == 16
    assert _lines(capsys)[0] == f"interrupted: stopped by SIGINT {BUILDING}; exploration incomplete"
    assert made[0] == SESSIONS


def test_a_small_workload_is_never_looked_at_while_building(tmp_path, capsys, monkeypatch):
    """Fewer than 4,096 sessions: no look at the limits while building
    (the search's own looks decide, as they did)."""
    import serq.semantics.model as model

    looks = []
    monkeypatch.setattr(engine, "tick", lambda: looks.append(1))
    monkeypatch.setattr(model, "tick", lambda: looks.append(1))
    # a look every 64 sessions rather than 4,096: the same rule, on a workload that expands quickly
    monkeypatch.setattr(engine, "TICK", 63)
    monkeypatch.setattr(model, "TICK", 63)
    inst = tmp_path / "few.sq"
    inst.write_text(MANY.replace(f"{SESSIONS} x s", "63 x s"))
    assert main(["explore", str(inst), "--max-states", "3", "--no-timing"]) == 13
    assert not looks
    inst.write_text(MANY.replace(f"{SESSIONS} x s", "64 x s"))  # one more: looked at, once it is past the 64th
    assert main(["explore", str(inst), "--max-states", "3", "--no-timing"]) == 13
    assert looks


@pytest.mark.parametrize("cmd", ["run", "check"])
def test_the_simulator_build_is_cut_too(many, capsys, cmd):
    """`serq run` and `serq check` of a workload of many sessions under
    --time-limit 0: stopped while the model is built (bench/fuzz.py found
    `workload { 1000000 x ... }` mutants running past their time limit)."""
    inst, made = many
    assert main([cmd, str(inst), "--time-limit", "0", "--no-progress"][: 5 if cmd == "run" else 4]) == 13
    out, err = capsys.readouterr()
    line = (f"{inst}: stopped at the time limit (0 s) while the model was being built: nothing simulated, "
            "no report")
    assert (line in err) if cmd == "run" else (f"{line}; not a pass" in out), (out, err)
    assert made[0] == engine.TICK


def test_the_simulator_build_keeps_the_memory_bound(many, capsys):
    inst, made = many
    assert main(["run", str(inst), "--memory", "1M", "--no-progress"]) == 13
    assert "stopped at the memory limit (1MiB) while the model was being built" in capsys.readouterr().err
    assert made[0] == engine.TICK
