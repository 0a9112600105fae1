"""The simulator: time, report fields, arrivals, flags, determinism, the
`run` and `check` commands. Expected numbers are computed by hand in the
comments (docs/simulator.md defines every field)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from serq.cli import main
from serq.diagnostics import SerqError
from serq.lang.load import load_text
from serq.sim.report import build_report, quantile
from serq.sim.arrivals import arrival_times, parse_duration
from serq.sim.simulator import RngOracle, simulate

ROOT = Path(__file__).resolve().parents[2]
MS = 1_000_000

TWO_TURNS = """
pool seqs { cap 1; admit via gpu; }
stage gpu { budget 4; cost 10ms; }
session s {
  hold seqs 1 { prefill 6; decode 2; }
  turn think 100ms;
  hold seqs 1 { prefill 2; decode 1; }
  end;
}
workload { 1 x s at 0ms; 1 x s at 5ms; }
"""


def prog(text: str, file: str = "<input>"):
    return load_text(text, file).program


def report(text: str, **kw) -> dict:
    return build_report(simulate(prog(text), **kw))


# ---------------------------------------------------------------- time and the report


def test_time_and_every_report_field_by_hand():
    # s#1 arrives at 0:  [0,10) admitted, P4; [10,20) P2, prefill done: TTFT 20;
    #   [20,30) D1; [30,40) D1, done, releases seqs, at turn: E2E 40; back at 140.
    # s#2 arrives at 5, waits in seqs' queue; the state frees seqs at the start
    #   of [30,40) and the stage admits s#2 when it next starts, at 40: wait 35.
    #   [40,60) prefill: TTFT 60 - 5 = 55; [60,80) decodes: E2E 75; back at 180.
    # s#1 at 140: queued and admitted at once (wait 0); [140,150) P2: TTFT 10;
    #   [150,160) D1, end: E2E 20.  s#2 at 180: the same, TTFT 10, E2E 20, end 200.
    r = report(TWO_TURNS)
    assert r["stopped"] == "done"
    assert r["simulated_ns"] == 200 * MS
    assert (r["iterations_simulated"], r["iterations_evaluated"]) == (12, 12)
    (seqs,) = r["pools"]
    # seqs held over [0,30) [40,70) [140,150) [180,190): 80 ms of 200
    assert (seqs["peak"], seqs["mean"]) == (1, 0.4)
    assert seqs["queue_wait_ns"] == {"n": 4, "mean": 8.75 * MS, "p50": 0, "p99": 35 * MS}
    (gpu,) = r["stages"]
    assert (gpu["iterations"], gpu["tokens"], gpu["busy_ns"], gpu["busy_fraction"]) == (12, 22, 120 * MS, 0.6)
    (s,) = r["programs"]
    assert (s["sessions"], s["ended"], s["tokens"], s["tokens_per_s"]) == (2, 2, 22, 110.0)
    assert s["ttft_ns"] == {"n": 4, "p50": 10 * MS, "p99": 55 * MS}  # samples 20, 55, 10, 10
    assert s["e2e_ns"] == {"n": 4, "p50": 20 * MS, "p99": 75 * MS}  # samples 40, 75, 20, 20


def test_warmup_leaves_early_sessions_out_of_latencies_only():
    r = report(TWO_TURNS, warmup=1 * MS)  # s#1 arrived at 0 < 1 ms
    (s,) = r["programs"]
    assert s["ttft_ns"] == {"n": 2, "p50": 10 * MS, "p99": 55 * MS}
    assert s["e2e_ns"] == {"n": 2, "p50": 20 * MS, "p99": 75 * MS}
    assert r["pools"][0]["queue_wait_ns"]["n"] == 2
    assert s["tokens"] == 22 and r["stages"][0]["iterations"] == 12  # throughput: the whole run


def test_horizon_stops_before_an_iteration_that_would_end_after_it():
    r = report(TWO_TURNS, horizon=65 * MS)
    assert (r["stopped"], r["simulated_ns"]) == ("horizon", 65 * MS)
    # iterations ending at 10..60 are taken; the one from 60 to 70 is not
    assert r["stages"][0]["iterations"] == 6
    (s,) = r["programs"]
    assert s["ttft_ns"]["n"] == 2 and s["e2e_ns"]["n"] == 1 and s["ended"] == 0
    assert r["stages"][0]["busy_ns"] == 60 * MS


def test_decode_only_request_ttft_is_its_first_decode():
    r = report("""
stage gpu { cost 3ms; }
session s { decode 4; end; }
workload { 1 x s; }
""")
    assert r["programs"][0]["ttft_ns"]["p50"] == 3 * MS
    assert r["programs"][0]["e2e_ns"]["p50"] == 12 * MS


def test_arrival_and_turn_return_come_before_an_iteration_start_at_the_same_tick():
    # b arrives at 10 ms, exactly when a's first iteration ends: it is queued
    # before the stage starts its next iteration, so it is admitted in it
    r = simulate(prog("""
pool seqs { cap 4; admit via gpu; }
stage gpu { budget 8; cost 10ms; }
session s { hold seqs 1 { prefill 2; decode 2; } end; }
workload { 1 x s at 0ms; 1 x s at 10ms; }
"""))
    assert r.stats.waits[0] == [0, 0]
    assert r.now == 40 * MS  # [0,10) a P2; [10,20) a D1 + b P2; [20,30) a D1 b D1; [30,40) b D1


def test_spawned_children_are_counted_under_their_program():
    r = report("""
pool seqs { cap 4; admit via gpu; }
stage gpu { budget 8; cost 1ms; }
session child { hold seqs 1 { prefill 2; } end; }
session parent { spawn child x 3; join; end; }
workload { 1 x parent; }
""")
    child, parent = r["programs"]
    assert (child["sessions"], child["ended"], child["tokens"]) == (3, 3, 6)
    assert (parent["sessions"], parent["ended"]) == (1, 1)
    assert parent["e2e_ns"]["p50"] == 1 * MS  # all three prefills in one iteration


def test_quantile_is_nearest_rank():
    assert quantile([], 0.5) is None
    assert quantile([5], 0.99) == 5
    assert quantile([4, 1, 3, 2], 0.5) == 2
    assert quantile(list(range(1, 101)), 0.99) == 99
    assert quantile(list(range(1, 201)), 0.99) == 198


# ---------------------------------------------------------------- arrivals and the oracle


def test_arrival_processes():
    p = prog("""
stage gpu { cost 1ms; }
session s { end; }
workload { 3 x s every 2.5s; 2 x s at 7ms; 2 x s; 3 x s poisson 4/s seed 9; }
""")
    t = arrival_times(p, seed=0)
    assert t[:7] == [0, 2_500_000_000, 5_000_000_000, 7 * MS, 7 * MS, 0, 0]
    pois = t[7:]
    assert pois == sorted(pois) and len(set(pois)) == 3
    assert arrival_times(p, seed=0) == t  # deterministic
    assert arrival_times(p, seed=1)[7:] != pois  # --seed changes poisson arrivals too
    assert arrival_times(p, seed=1)[:7] == t[:7]


def test_trace_arrivals_are_relative_to_the_instance_file(tmp_path):
    (tmp_path / "arrivals.csv").write_text("time_s\n0.5\n# comment\n\n0.25, other\n1\n")
    f = tmp_path / "x.sq"
    f.write_text('stage gpu { cost 1ms; }\nsession s { end; }\nworkload { 2 x s trace "arrivals.csv"; }\n')
    from serq.lang.load import load_path

    p = load_path(f).program
    assert arrival_times(p, seed=0) == [250 * MS, 500 * MS]
    f.write_text('stage gpu { cost 1ms; }\nsession s { end; }\nworkload { 9 x s trace "arrivals.csv"; }\n')
    with pytest.raises(SerqError, match="has 3 arrival times; the line needs 9"):
        arrival_times(load_path(f).program, seed=0)


def test_rng_oracle_follows_the_weights():
    o = RngOracle(random.Random(5))
    counts = [0, 0, 0]
    for _ in range(6000):
        counts[o.draw([1, 2, 3], [1.0, 0.0, 3.0])] += 1
    assert counts[1] == 0
    assert 1300 < counts[0] < 1700 and 4300 < counts[2] < 4700
    assert o.tie(4) == 0
    assert RngOracle(random.Random(1)).draw([1, 2], [0.0, 0.0]) in (0, 1)


def test_parse_duration():
    assert parse_duration("10s") == 10_000_000_000
    assert parse_duration("250ms") == 250 * MS
    assert parse_duration("1.5min") == 90_000_000_000
    assert parse_duration("2") == 2_000_000_000
    with pytest.raises(ValueError):
        parse_duration("ten seconds")


# ---------------------------------------------------------------- determinism and the CLI


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_same_input_and_seed_same_bytes(capsys, tmp_path):
    inst = str(ROOT / "instances" / "vllm_chat.sq")
    for fmt in ((), ("--json",)):
        a = run_cli(capsys, "run", inst, "--seed", "3", *fmt)
        b = run_cli(capsys, "run", inst, "--seed", "3", *fmt)
        assert a == b and a[0] == 0 and a[1]
    j3 = run_cli(capsys, "run", inst, "--seed", "3", "--json")[1]
    j4 = run_cli(capsys, "run", inst, "--seed", "4", "--json")[1]
    assert json.loads(j3)["seed"] == 3 and j3 != j4


def test_json_report_shape(capsys):
    code, out, _ = run_cli(capsys, "run", str(ROOT / "instances" / "vllm_chat.sq"), "--json")
    r = json.loads(out)
    assert code == 0
    assert set(r) >= {"simulated_ns", "iterations_simulated", "iterations_evaluated", "pools", "stages",
                      "programs", "faults", "violations", "stalled"}
    assert [p["name"] for p in r["pools"]] == ["kv", "seqs"]


def test_table_report_names_every_section(capsys):
    code, out, _ = run_cli(capsys, "run", str(ROOT / "instances" / "vllm_chat.sq"))
    assert code == 0
    for word in ("pools", "stages", "programs", "iterations:", "simulated", "evaluated", "ttft p99", "busy"):
        assert word in out


def write(tmp_path, text: str, name="x.sq") -> str:
    f = tmp_path / name
    f.write_text(text)
    return str(f)


def test_check_passes(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "check", write(tmp_path, TWO_TURNS))
    assert code == 0 and "ok:" in out and "all 2 sessions ended" in out


STUCK_SMALL = """
pool kv { cap 12; block 4; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 8; chunk 4; serve (admitted); cost 1ms; }
session big { hold kv reserve 8 { decode 6; } end; }
session small { hold kv need 4 take 0 { prefill 8 growing kv; } end; }
workload { 1 x big; 1 x small; }
"""


def test_check_fails_on_a_stuck_session_when_stuck_is_selected(capsys, tmp_path):
    f = write(tmp_path, STUCK_SMALL + "check stuck;\n")
    code, out, _ = run_cli(capsys, "check", f)
    assert code == 12 and "FAIL: stuck" in out and "small#2" in out
    # `run` reports it and goes on
    code, out, _ = run_cli(capsys, "run", f, "--json")
    r = json.loads(out)
    assert code == 0 and r["stopped"] == "done" and r["pools"][0]["stuck"] == 2
    assert [v["kind"] for v in r["violations"]] == ["stuck", "stuck"] and r["checks"] == ["stuck"]
    code, out, _ = run_cli(capsys, "run", f)
    assert "stuck at 3.000 ms: small#2" in out and "(not checked)" not in out
    f = write(tmp_path, STUCK_SMALL, name="y.sq")
    code, out, _ = run_cli(capsys, "check", f, "--check", "stuck")
    assert code == 12 and "FAIL: stuck" in out and "small#2" in out


def test_check_notes_a_stuck_session_it_does_not_check(capsys, tmp_path):
    # no `check` line: `completes`, which stuck is not part of (as in the explorer)
    f = write(tmp_path, STUCK_SMALL)
    code, out, _ = run_cli(capsys, "check", f)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith(f"{f}: ok: no deadlock, failed assert, invariant or conservation")
    assert lines[1] == (f"{f}: note: a session was stuck at 0.003000 s (action 6): small#2 was preempted again "
                        "from pool `kv` without passing the position of its previous preemption: it held 1 of "
                        "`kv`'s 3 blocks and needed another; big#1 holds 8 units; stuck is not checked: "
                        "`check stuck;` or --check stuck fails on it")
    # `run` reports the same event as one the instance does not check
    code, out, _ = run_cli(capsys, "run", f, "--json")
    assert code == 0 and json.loads(out)["checks"] == ["deadlock", "livelock", "invariant"]
    code, run_out, _ = run_cli(capsys, "run", f)
    assert "stuck (not checked) at 3.000 ms: small#2 was preempted again" in run_out


def test_check_fails_on_a_failed_assert(capsys, tmp_path):
    f = write(tmp_path, """
stage gpu { cost 1ms; }
session s { decode 2; assert 1 > 2; end; }
workload { 1 x s; }
""")
    code, out, _ = run_cli(capsys, "check", f)
    assert code == 12 and "FAIL: assert" in out
    code, out, _ = run_cli(capsys, "run", f, "--json")
    assert code == 12 and json.loads(out)["stopped"] == "fault"


def test_check_fails_on_an_invariant_violation(capsys, tmp_path):
    f = write(tmp_path, """
pool seqs { cap 4; admit via gpu; }
stage gpu { budget 8; cost 1ms; }
session s { hold seqs 1 { prefill 2; decode 3; } end; }
workload { 3 x s; }
check invariant allocated(seqs) <= 2;
""")
    code, out, _ = run_cli(capsys, "check", f)
    assert code == 12 and "FAIL: invariant at 0.000000 s: invariant at line 6 is violated" in out


def test_check_fails_on_a_deadlock_it_walks_into(capsys, tmp_path):
    f = write(tmp_path, """
pool kv { cap 8; block 4; admit via gpu; preempt none; }
stage gpu { budget 16; cost 1ms; }
session s { hold kv need 4 take 0 { prefill 4 growing kv; decode 3 growing kv; } end; }
workload { 2 x s; }
""")
    code, out, _ = run_cli(capsys, "check", f)
    assert code == 10 and "deadlock" in out
    assert "s#1 waits to be served by `gpu` (decode, 0 of 3 tokens done)" in out


def test_check_step_limit_is_not_a_pass(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "check", write(tmp_path, TWO_TURNS), "--max-steps", "3")
    assert code == 13 and "not a pass" in out


def test_bad_input_exits_2(capsys, tmp_path):
    code, _, err = run_cli(capsys, "run", write(tmp_path, "pool kv { cap -; }"))
    assert code == 2 and "error[" in err
    code, _, err = run_cli(capsys, "check", str(tmp_path / "missing.sq"))
    assert code == 2 and "cannot read" in err


def test_horizon_and_warmup_flags(capsys, tmp_path):
    f = write(tmp_path, TWO_TURNS)
    code, out, _ = run_cli(capsys, "run", f, "--json", "--horizon", "65ms", "--warmup", "1ms")
    r = json.loads(out)
    assert (r["horizon_ns"], r["warmup_ns"], r["simulated_ns"], r["stopped"]) == (65 * MS, MS, 65 * MS, "horizon")
    with pytest.raises(SystemExit):
        main(["run", f, "--horizon", "soon"])


def test_trace_flag_prints_every_action(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "run", write(tmp_path, TWO_TURNS), "--trace")
    lines = out.splitlines()
    assert lines[0] == "      0.000000 ms  arrive s#1: s#1 queued on seqs"
    assert lines[1].startswith("      0.000000 ms  iterate gpu until 10.000000 ms: s#1 admitted (seqs)")
    assert "    140.000000 ms  turn s#1: s#1 queued on seqs" in lines


def test_a_livelock_stops_at_the_no_progress_watchdog(capsys):
    # self_preempt.sq: one session grows past the pool and preempts itself
    # forever; `run` stops once nothing ended for 10000 iterations and a
    # stuck preemption happens
    code, out, _ = run_cli(capsys, "run", str(ROOT / "instances" / "self_preempt.sq"), "--json")
    r = json.loads(out)
    assert code == 0 and r["stopped"] == "no progress"
    # 1 arrival + 9999 iterations without progress; the last one is in flight
    # when the run stops, so its effects are not in the report
    assert r["iterations_simulated"] == 9998
    assert r["violations_total"] > len(r["violations"]) == 100
    # `check` fails at the first stuck preemption when stuck is selected
    code, out, _ = run_cli(capsys, "check", str(ROOT / "instances" / "self_preempt.sq"), "--check", "stuck")
    assert code == 12 and "FAIL: stuck" in out
    # the instance checks livelock: the watchdog stops it, never a pass
    code, out, _ = run_cli(capsys, "check", str(ROOT / "instances" / "self_preempt.sq"))
    lines = out.splitlines()
    assert code == 13 and lines[0].endswith(
        "self_preempt.sq: no session ended or reached a turn for 10000 iterations and actions, up to 9998 "
        "iterations, while sessions were preempted without progress: a livelock, most likely (`serq explore` "
        "decides); not a pass")
    assert "note: a session was stuck at 5 iterations (action 7): long#1 was preempted again" in lines[1]


def test_progress_callback_reports_time_and_sessions():
    calls = []
    r = simulate(prog(TWO_TURNS.replace("1 x s at 5ms;", "1 x s at 5ms; 1 x long;")
                      + "session long { decode 5000; end; }"), coalesce=False,
                 progress=lambda now, ended, n: calls.append((now, ended, n)))
    assert r.stopped == "done" and len(calls) == 2  # every 2000 actions
    assert all(n == 3 for _, _, n in calls) and calls == sorted(calls)


def test_same_bytes_across_processes_and_hash_seeds(capsys):
    """This process and another with another hash seed: the same bytes."""
    import os
    import subprocess
    import sys

    from tests.fixtures import another_hash_seed

    argv = ["run", str(ROOT / "instances" / "vllm_chat.sq"), "--seed", "11", "--json"]
    env = {**os.environ, "PYTHONHASHSEED": another_hash_seed()}
    p = subprocess.run([sys.executable, "-m", "serq", *argv], capture_output=True, env=env, check=True)
    capsys.readouterr()
    assert main(argv) == 0
    assert capsys.readouterr().out.encode() == p.stdout


def test_a_value_listed_twice_in_a_weights_domain_gets_the_sum_of_its_weights():
    # {1, 1, 2} ~ weights(1, 1, 98): P(x = 2) = 98%, once silently uniform
    # over {1, 2} (300 tokens expected from 200 sessions instead of 396)
    r = report("""
stage gpu { budget 1000; cost 1ms; }
session s { draw x in {1, 1, 2} ~ weights(1, 1, 98); prefill x; end; }
workload { 200 x s; }
""")
    assert 385 <= r["programs"][0]["tokens"] <= 400


@pytest.mark.parametrize("domain, weights, message", [
    ("{a, 2}", "1, 2", "`weights` needs a constant domain; `a` is not a constant"),
    ("1..3", "1, 2", "`weights` needs one weight per domain value (3), got 2"),
    ("1..a", "1, 2", "`weights` needs a constant domain; `a` is not a constant"),
])
def test_weights_need_a_domain_whose_positions_are_known(domain, weights, message):
    with pytest.raises(SerqError, match="E107") as e:
        prog(f"stage gpu {{ budget 8; }}\nsession s(a = 2) {{ draw x in {domain} ~ weights({weights}); prefill x; }}\n"
             "workload { 1 x s; }\n")
    assert message in e.value.render()


def test_the_report_header_is_one_line_however_long_the_path(tmp_path, capsys):
    """`serq run`'s first line (instance, seed, span, why it stopped) is
    never wrapped: a script greps it, whatever the instance's path."""
    deep = tmp_path / ("d" * 120) / ("e" * 60)
    deep.mkdir(parents=True)
    inst = deep / "x.sq"
    inst.write_text((ROOT / "instances" / "multiturn_chat.sq").read_text())
    assert main(["run", str(inst)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("serq run ") and str(inst) in first and "stopped: done" in first


def test_the_kernel_is_loaded_before_the_runs_clock_starts(monkeypatch):
    """A --time-limit counts the run, not loading (or, cold, compiling) the
    kernel's code, as in `serq explore`: the load ends before the clock starts."""
    import time

    from explorer.runtime import compiled
    from serq.sim.simulator import Simulator

    real, ends = compiled.load, []

    def load(uses=None):
        real(uses)
        ends.append((uses, time.perf_counter()))

    monkeypatch.setattr(compiled, "load", load)
    sim = Simulator(load_text(TWO_TURNS).program)
    assert ends and ends[0][0] == ("step",) and ends[0][1] <= sim._t0
    assert "step" in compiled.loaded() or "*" in compiled.loaded()
