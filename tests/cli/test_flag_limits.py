"""Flags that would give a result that looks green but is not: negative or
non-finite limits, an empty replay path, a horizon of 0, workers with DFS,
the replay of a livelock's lasso; an instance whose workload starts no
session. Each is an input error located in the flag's value or the
instance (exit 2), or an honest verdict."""

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


EMPTY = {
    "no_workload": ("pool kv { cap 8; block 2; admit via gpu; }\nstage gpu { budget 4; }\n"
                    "session s { hold kv need 2 { prefill 2; } end; }\n", "1:1", "the instance has no workload"),
    "empty_workload": ("pool kv { cap 8; block 2; admit via gpu; }\nstage gpu { budget 4; }\n"
                       "session s { hold kv need 2 { prefill 2; } end; }\nworkload { }\n", "1:1",
                       "the instance has no workload"),
    "zero_counts": ("pool kv { cap 8; block 2; admit via gpu; }\nstage gpu { budget 4; }\n"
                    "session s { hold kv need 2 { prefill 2; } end; }\nworkload { 0 x s; 0 x s every 1s; }\n",
                    "4:16", "every workload line has count 0"),
}


@pytest.mark.parametrize("case", sorted(EMPTY))
@pytest.mark.parametrize("cmd", [["check"], ["explore"], ["explore", "--worst", "ttft"], ["explore", "--theorem"],
                                 ["explore", "--replay", "0"], ["explore", "--workers", "2"]],
                         ids=["check", "explore", "worst", "theorem", "replay", "workers"])
def test_a_workload_that_starts_no_session_is_never_ok(tmp_path, capsys, case, cmd):
    text, where, why = EMPTY[case]
    f = tmp_path / "empty.sq"
    f.write_text(text)
    assert main([cmd[0], str(f), *cmd[1:]]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"{f}:{where}: error[E026]: nothing to check: {why}, so no session ever runs\n"), err
    assert f"note: `serq {cmd[0]}` would report on an empty run" in err


def test_an_empty_run_is_reported_with_a_warning(tmp_path, capsys):
    f = tmp_path / "empty.sq"
    f.write_text(EMPTY["zero_counts"][0])
    assert main(["run", str(f), "--no-progress"]) == 0  # a report, not a verdict: every number in it is 0
    out, err = capsys.readouterr()
    assert "stopped: done" in out
    assert err.startswith(f"{f}:4:16: warning[W502]: every workload line has count 0: no session will run")


def test_a_sweep_value_that_starts_no_session_is_no_pass(tmp_path, capsys):
    f = tmp_path / "n.sq"
    f.write_text("const N = 1;\n" + EMPTY["zero_counts"][0].replace("0 x s; 0 x s every 1s;", "N x s;"))
    assert main(["sweep", str(f), "--vary", "N=0..1", "--workers", "1", "--no-timing"]) == 13  # undecided at 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].split()[:2] == ["0", "error"] and "E026: nothing to check" in out[2]
    assert out[3].split()[:2] == ["1", "pass"]
    assert out[-1] == "every value evaluated passes; no verdict at 0"
