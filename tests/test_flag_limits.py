"""Flags that would give a result that looks green but is not: negative or
non-finite limits, an empty replay path, a horizon of 0, workers with DFS,
the replay of a livelock's lasso. Each is an input error located in the
flag's value (exit 2), or an honest verdict."""

import pytest

from serq.cli import main

INST = "instances/self_preempt.sq"


@pytest.mark.parametrize("argv,flag,text", [
    (["explore", INST, "--time-limit", "-1"], "--time-limit", "--time-limit must be non-negative (seconds of wall-clock time), got -1.0"),
    (["explore", INST, "--time-limit", "inf"], "--time-limit", "--time-limit must be a finite number of seconds"),
    (["explore", INST, "--time-limit", "nan"], "--time-limit", "--time-limit must be a finite number of seconds"),
    (["explore", INST, "--max-states", "-5"], "--max-states", "--max-states must be non-negative (distinct states), got -5"),
    (["explore", INST, "--max-depth", "-1"], "--max-depth", "--max-depth must be non-negative (steps)"),
    (["explore", INST, "--workers", "0"], "--workers", "--workers must be at least 1 (processes), got 0"),
    (["sweep", "instances/vllm_chat.sq", "--vary", "BS=1..2", "--time-limit", "-2"], "--time-limit",
     "--time-limit must be non-negative"),
    (["run", INST, "--max-steps", "-1"], "--max-steps", "--max-steps must be non-negative (actions), got -1"),
    (["check", INST, "--max-steps", "-1"], "--max-steps", "--max-steps must be non-negative"),
    (["check", INST, "--horizon", "0"], "--horizon", "--horizon must be a positive time"),
    (["run", INST, "--horizon", "0ms"], "--horizon", "--horizon must be a positive time"),
    (["explore", INST, "--replay", ""], "--replay", "empty replay path"),
    (["explore", INST, "--replay", "  "], "--replay", "empty replay path"),
    (["explore", INST, "--workers", "2", "--strategy", "dfs"], "--workers", "--workers > 1 explores by BFS only"),
    (["explore", INST, "--workers", "2", "--exact"], "--workers", "--exact explores in one process"),
])
def test_bad_flag_is_a_located_error(argv, flag, text, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{flag}:1:1: error[") and text in err
    assert "Traceback" not in err


def test_huge_duration_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        main(["check", INST, "--horizon", "1e400"])
    assert e.value.code == 2
    assert "duration too large: '1e400'" in capsys.readouterr().err


def test_replay_of_a_livelock_lasso_is_not_a_pass(capsys):
    assert main(["explore", INST, "--no-timing"]) == 11
    out = capsys.readouterr().out
    path = [x for x in out.splitlines() if x.startswith("replay: ")][0].split()[1]
    assert main(["explore", INST, "--replay", path, "--no-timing"]) == 11
    out = capsys.readouterr().out
    assert out.startswith("livelock: replayed 5 step(s): the last 3 return to the state of step 2 without progress")
    assert "-- cycle returns to step 2 --" in out
    # a prefix of the lasso is no cycle: nothing to report on that path
    assert main(["explore", INST, "--replay", path.rsplit("/", 1)[0], "--no-timing"]) == 0
    assert capsys.readouterr().out.startswith("pass: replayed 4 step(s)")
