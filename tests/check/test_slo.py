"""SLO checks as properties of the language: their syntax and validation
(located errors, W511), `--check` on the command line, the verdict and
exit code, the replay of a counterexample, its JSON and its page; and
instances without an SLO check keep their states (brute force in
test_slo_crosscheck.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serq.check.explore import explore, replay_verdict
from serq.cli import main
from serq.diagnostics import SerqError, render_all
from serq.ir import Program
from serq.lang.fmt import format_program_source as format_source
from serq.lang.load import load_path, load_text

ROOT = Path(__file__).resolve().parents[2]
SLO_TTFT = ROOT / "instances" / "slo_ttft.sq"

BASE = """pool kv { cap 8; block 2; admit via gpu; preempt lifo; }
stage gpu { budget 4; }
session chat { draw prompt in {2, 4}; hold kv need 2 take 0 { prefill prompt growing kv; decode 2 growing kv; } }
session sub { hold kv need 1 take 0 { prefill 1 growing kv; } }
workload { 2 x chat; }
"""


def diagnose(check: str, base: str = BASE) -> str:
    src = base + check + "\n"
    try:
        loaded = load_text(src, "bad.sq", explorer=True)
    except SerqError as e:
        return e.render()
    return "OK\n" + render_all(loaded.warnings, src)


@pytest.mark.parametrize("check, expected", [
    ("check ttfx <= 3;", """\
bad.sq:6:7: error[E100]: unknown metric `ttfx`; a check bounds ttft, latency, preemptions, recomputed, queue
  check ttfx <= 3;
        ^^^^
  note: did you mean `ttft`?"""),
    ("check queue(kb) <= 1;", """\
bad.sq:6:7: error[E101]: unknown pool `kb`; the pools are kv
  check queue(kb) <= 1;
        ^^^^^"""),
    ("check ttft(kv) <= 1;", "bad.sq:6:7: error[E107]: `ttft` takes no pool (only `queue(POOL)` does)"),
    ("check ttft <= -1;", "bad.sq:6:15: error[E402]: the bound of `check ttft` must be at least 0, got -1"),
    ("check ttft <= 1.5;", "bad.sq:6:15: error[E200]: the bound of `check ttft` must be an integer, got 1.5"),
    ("check ttft <= 3 + x;", "bad.sq:6:19: error[E401]: the bound of `check ttft` must be a constant expression; "
                             "`x` is not a constant"),
    ("check ttft < 3;", "bad.sq:6:12: error[E001]: a check bounds a metric from above with `<=`, got `<`"),
    ("check 4 >= ttft;", "bad.sq:6:7: error[E001]: expected a metric here"),
    ("check recomputed <= prompt;", "bad.sq:6:21: error[E100]: unknown name `prompt` of session `sub`: a bound "
                                    "read per request must be a constant or an attribute of every session program"),
    ("check queue(kv) <= n;", "bad.sq:6:20: error[E401]: the bound of `check queue` must be a constant"),
    ("check ttft <= 3, ttft <= 4;", "bad.sq:6:18: error[E403]: `check ttft` is given twice (first at line 6)"),
])
def test_bad_checks_are_located(check, expected):
    assert expected in diagnose(check)


def test_a_real_attribute_is_refused():
    base = BASE.replace("session sub { ", "session sub { let prompt = 0.5; ")
    assert "error[E200]: the bound of `check recomputed` must be an integer; `prompt` of session `sub` is a number" \
        in diagnose("check recomputed <= prompt;", base)


def test_checks_that_can_never_fail_warn():
    no_preempt = BASE.replace(" preempt lifo;", " preempt none;")
    for metric in ("preemptions", "recomputed"):
        out = diagnose(f"check {metric} <= 0;", no_preempt)
        assert out.startswith("OK") and "warning[W511]" in out and "no request is ever preempted" in out
    out = diagnose("check queue(kv) <= 2;")
    assert "W511" in out and "the workload starts 2 sessions and none spawns" in out
    assert "W511" not in diagnose("check queue(kv) <= 1, preemptions <= 0;")


def test_the_ir_and_the_layout_keep_an_slo():
    src = BASE + "check completes, ttft <= 3, queue(kv) <= 1;\ncheck latency <= 2 + 3;\n"
    prog = load_text(src.replace("session sub", "session sub_"), "x.sq", explorer=True).program
    slos = [(c.metric, c.pool, c.e.k) for c in prog.checks if c.kind == "slo"]
    assert slos == [("ttft", None, "num"), ("queue", "kv", "num"), ("latency", None, "num")]
    assert Program.from_json(prog.to_json()) == prog
    assert "check completes, ttft <= 3, queue(kv) <= 1;" in format_source(src, "x.sq")


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_verdict_exit_code_and_replay(capsys):
    code, out, _ = run(capsys, "explore", SLO_TTFT, "--no-timing", "-q")
    assert code == 12
    first = out.splitlines()[0]
    assert first.startswith("violation (slo ttft): chat#1's request counts 4 iterations from its start to its "
                            "first token, more than `check ttft <= 3` (line 41) allows")
    path = next(line for line in out.splitlines() if line.startswith("replay: ")).split()[1]
    # the replay is judged as the search judges it: the same verdict, trace and point of no return
    code, replayed, _ = run(capsys, "explore", SLO_TTFT, "--replay", path, "--no-timing")
    assert code == 12
    assert replayed == out.rsplit("stats:", 1)[0]
    model, r = replay_verdict(load_path(SLO_TTFT, explorer=True).program, path)
    assert (r.verdict, r.kind, len(r.trace) - 1) == ("violation", "slo ttft", 12)


def test_json_and_page(capsys, tmp_path):
    page = tmp_path / "t.html"
    code, out, _ = run(capsys, "explore", SLO_TTFT, "--json", "-q", "--html", page)
    data = json.loads(out)
    assert code == 12 and (data["verdict"], data["kind"], data["exit_code"]) == ("violation", "slo ttft", 12)
    assert data["point_of_no_return"]["step"] == 8 and len(data["trace"]) == 13
    html = page.read_text()
    assert "slo ttft" in html and "chat#1" in html


def test_check_on_the_command_line(capsys):
    inst = ROOT / "instances" / "decode_preempt.sq"
    code, out, _ = run(capsys, "explore", inst, "--check", "preemptions<=0", "--no-timing", "-q")
    assert code == 12 and out.startswith("violation (slo preemptions): chat#2's request is preempted once, "
                                         "more than `check preemptions <= 0` allows")
    code, out, _ = run(capsys, "explore", inst, "--check", "completes", "--check", "preemptions<=1", "-q",
                       "--no-timing")
    assert code == 0 and out.startswith("pass")
    for value, col, message in [("ttfx<=1", 1, "unknown metric `ttfx`"), ("ttft<1", 5, "with <=, got <"),
                                ("queue(kb)<=1", 1, "unknown pool `kb`"), ("ttft<=x", 7, "unknown name `x`"),
                                ("ttft<=", 1, "expected a property")]:
        code, _, err = run(capsys, "explore", inst, "--check", value)
        assert code == 2 and f"--check:1:{col}: error[E012]: " in err and message in err, err
    with pytest.raises(SystemExit) as e:
        main(["explore", str(inst), "--check", "deadlok"])
    assert e.value.code == 2 and "did you mean `deadlock`?" in capsys.readouterr().err


def test_engines_without_rows_are_refused(capsys):
    for flags in (["--swarm", "2"], ["--partitions", "2"]):
        code, _, err = run(capsys, "explore", SLO_TTFT, *flags)
        assert code == 2 and "error[E012]: a per-request SLO check (ttft <= 3)" in err
    # a queue bound is a property of one state: every engine checks it
    code, out, _ = run(capsys, "explore", ROOT / "instances" / "hol_none.sq", "--check", "queue(kv)<=0",
                       "--partitions", "2", "-q", "--no-timing")
    assert code == 12 and out.startswith("violation (slo queue): 1 session waits in kv's queue")


def test_workers_give_the_same_verdict_and_trace():
    prog = load_path(SLO_TTFT, explorer=True).program
    one = explore(prog, graph_limit=0)
    two = explore(prog, graph_limit=0, workers=2)
    assert (two.verdict, two.kind, two.replay_path) == (one.verdict, one.kind, one.replay_path)


def test_an_instance_without_slo_keeps_its_states():
    # the counters exist only when a per-request check asks for them
    prog = load_path(ROOT / "instances" / "multiturn_chat.sq", explorer=True).program
    assert explore(prog, graph_limit=0).stats.distinct == 3342
    r = explore(prog, graph_limit=0, checks=["completes", "ttft<=5"])
    assert r.verdict == "pass"
    r = explore(prog, graph_limit=0, checks=["completes", "ttft<=4"])
    assert r.verdict == "violation" and r.kind == "slo ttft"


def test_serq_check_checks_an_slo(capsys):
    code, out, err = run(capsys, "check", SLO_TTFT)
    assert code == 0 and "ok: no deadlock, failed assert, invariant, `ttft <= 3` broken, `preemptions <= 1` " \
        "broken or conservation violation" in out
    code, out, err = run(capsys, "check", SLO_TTFT, "--check", "ttft<=1")
    assert code == 12 and out.startswith(f"{SLO_TTFT}: FAIL: slo ttft at 1 iteration: chat#2's request counts "
                                         "2 iterations from its start to its first token")


@pytest.mark.parametrize("seed", range(6))
def test_serq_check_counts_the_run_it_simulates(seed):
    """`serq check` counts each request of its one run as the explorer
    counts a path: without a stage cost an iteration is a tick, so a
    bound fails exactly below the run's largest ttft and end-to-end
    latency in its report; and a run that fails is a path the explorer
    finds failing too."""
    from serq.check.model import Checks
    from serq.sim.simulator import SimConfig, Simulator

    prog = load_path(SLO_TTFT).program

    def simulate(checks):
        ch = Checks.of_program(prog, checks) if checks else None
        sim = Simulator(prog, SimConfig(seed=seed, stop_on_violation=ch is not None, checks=ch))
        return sim.run()

    stats = simulate(None).stats
    worst = {"ttft": max(max(v) for v in stats.ttft if v), "latency": max(max(v) for v in stats.e2e if v)}
    for metric, w in worst.items():
        for b in (w - 1, w):
            r = simulate([f"{metric}<={b}"])
            assert bool(r.violations) == (b < w), (metric, b, w)
            if r.violations:
                assert r.violations[0][1] == f"slo {metric}"
                assert explore(prog, checks=[f"{metric}<={b}"], graph_limit=0).verdict == "violation"
