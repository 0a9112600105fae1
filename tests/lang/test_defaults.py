"""Defaults that would mislead are said: a stage without `cost` (W506, and
times in iterations when no stage has one), a `cap` that is not a multiple
of `block` (W507), a hold that takes 0 and is never grown (W508)."""

from __future__ import annotations

import io
import json

from serq.cli import main
from serq.lang.load import load_text
from serq.sim.report import build_report
from serq.sim.schedule import ScheduleWriter
from serq.sim.simulator import SimConfig, Simulator
from tests.fixtures import TURN_FIRST

NO_COST = TURN_FIRST.lstrip("\n")  # no stage has a cost


def codes(src: str, **kw) -> list[tuple[int, int, str]]:
    return [(d.line, d.col, d.code) for d in load_text(src, "x.sq", **kw).warnings]


def write(tmp_path, text: str) -> str:
    f = tmp_path / "x.sq"
    f.write_text(text)
    return str(f)


# ---------------------------------------------------------------- W506


def test_a_simulation_without_cost_warns_and_the_explorer_does_not(tmp_path, capsys):
    assert codes(NO_COST, simulate=True) == [(2, 7, "W506")]
    assert codes(NO_COST) == [] and codes(NO_COST, explorer=True) == []  # no clock there: no warning
    path = write(tmp_path, NO_COST)
    assert main(["run", path, "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:7: warning[W506]: stage `gpu` has no `cost`: every iteration takes 1 ns, "
                          "so the report counts time in iterations\n"), err
    assert main(["compile", path, "-o", str(tmp_path / "x.ir.json")]) == 0
    assert capsys.readouterr().err == ""


def test_a_stage_without_cost_beside_one_with_a_cost_warns_on_its_own():
    src = NO_COST.replace("stage gpu { budget 4; }", "stage gpu { budget 4; }\nstage cpu { budget 4; cost 1ms; }").replace(
        "prefill 2 growing kv", "prefill 2 on gpu growing kv")
    assert codes(src, simulate=True) == [(2, 7, "W506")]
    d = load_text(src, "x.sq", simulate=True).warnings[0]
    assert d.message == "stage `gpu` has no `cost`: each of its iterations takes 1 ns"
    assert build_report(Simulator(load_text(src, "x.sq").program, SimConfig()).run())["time_unit"] == "ns"


def test_an_empty_workload_gets_no_cost_warning():
    assert [c for *_, c in codes(NO_COST.replace("2 x chat", "0 x chat"), simulate=True)] == ["W502"]


def test_without_cost_the_report_counts_iterations(tmp_path, capsys):
    result = Simulator(load_text(NO_COST, "x.sq").program, SimConfig()).run()
    r = build_report(result)
    assert r["time_unit"] == "iteration" and r["simulated_ns"] == 2
    g = r["programs"][0]
    assert g["tokens_per_s"] is None and g["tokens_per_iteration"] == 4.0  # 8 tokens in 2 iterations
    path = write(tmp_path, NO_COST)
    assert main(["run", path, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"serq run {path}  seed 0  simulated 2 iterations  stopped: done"
    assert "times in iterations: no stage has a cost" in out
    assert "programs (latency in iterations)" in out and "tok/it" in out and "tok/s" not in out
    row = next(x for x in out.splitlines() if x.startswith("│ chat"))
    # ttft n, p50, p99, e2e n, p50, p99: one iteration each, not 0.000 ms
    assert [c.strip() for c in row.split("│")[4:10]] == ["4", "1", "1", "6", "1", "1"]
    assert main(["check", path, "--no-progress"]) == 0
    assert capsys.readouterr().out.endswith("all 2 sessions ended at 2 iterations (seed 0)\n")
    assert main(["run", path, "--no-progress", "--trace"]) == 0
    assert capsys.readouterr().out.splitlines()[0].strip().startswith("0 it  arrive chat#1")


def test_without_cost_the_schedule_and_the_page_say_iterations(tmp_path, capsys):
    sim = Simulator(load_text(NO_COST, "x.sq").program, SimConfig())
    buf = io.StringIO()
    ScheduleWriter(buf).attach(sim)
    sim.run()
    assert json.loads(buf.getvalue().splitlines()[0])["time_unit"] == "iteration"
    page = tmp_path / "p.html"
    assert main(["run", write(tmp_path, NO_COST), "--no-progress", "--html", str(page)]) == 0
    html = page.read_text()
    assert 'id="stopped">simulated 2 iterations, seed 0' in html
    assert "latency in iterations" in html and "simulated time (iterations)" in html
    assert "0.000000 s" not in html


def test_with_a_cost_the_page_keeps_the_rule_for_short_times(tmp_path):
    # docs/simulator.md: never `0.000000 s` for a time that is not zero
    page = tmp_path / "p.html"
    assert main(["run", write(tmp_path, NO_COST.replace("budget 4;", "budget 4; cost 250ns;")), "--no-progress",
                 "--html", str(page)]) == 0
    assert 'id="stopped">simulated 500 ns, seed 0' in page.read_text()


# ---------------------------------------------------------------- W507


def test_a_cap_that_is_not_a_multiple_of_block_warns():
    src = NO_COST.replace("cap 12; block 2;", "cap 13; block 4;")
    assert codes(src) == [(1, 6, "W507")]
    d = load_text(src, "x.sq").warnings[0]
    assert d.message == "pool `kv`: `cap 13` is not a multiple of `block 4`: 1 unit can never be allocated"
    assert d.notes == ("units move in whole blocks: the pool has 3 blocks (12 units)",)
    assert codes(NO_COST.replace("cap 12; block 2;", "cap 12; block 4;")) == []


# ---------------------------------------------------------------- W508


def test_a_hold_that_takes_nothing_and_is_never_grown_warns():
    src = NO_COST.replace("{ prefill 2 growing kv; }", "{ prefill 2; }")
    assert codes(src) == [(6, 10, "W508")]
    d = load_text(src, "x.sq").warnings[0]
    assert d.message == "this hold takes 0 units of `kv` and no run in it grows `kv`: it never holds a unit of `kv`"


def test_a_hold_grown_in_a_nested_hold_or_that_reuses_does_not_warn():
    two = "pool seqs { cap 4; admit via gpu; }\n" + NO_COST
    nested = two.replace("hold kv need 2 take 0 { prefill 2 growing kv; }",
                         "hold kv need 2 take 0 { hold seqs 1 { prefill 2 growing kv; } }")
    assert codes(nested) == []
    # the inner hold of kv is the one its run grows: the outer one takes nothing and never grows
    inner = NO_COST.replace("hold kv need 2 take 0 { prefill 2 growing kv; }",
                            "hold kv need 2 take 0 { hold kv need 2 take 0 { prefill 2 growing kv; } }")
    assert [c for *_, c in codes(inner)] == ["W508"]
    reuse = NO_COST.replace("hold kv need 2 take 0 { prefill 2 growing kv; }",
                            "hold kv reuse c need 2 take 0 at admission (c = min(cached(kv), 2)) { prefill 2; }")
    assert codes(reuse) == []
    assert codes(NO_COST.replace("need 2 take 0 { prefill 2 growing kv; }", "reserve 2 { prefill 2; }")) == []


# ---------------------------------------------------------------- W509


BIG = """pool kv { cap 4096; block 16; admit via gpu; }
stage gpu { budget 512; chunk 256; }
session chat {
  draw prompt in 1..2000;
  draw o in 1..256 hidden;
  let g = 0;
  hold kv need (prompt + g) take 0 {
    prefill (prompt + g) growing kv;
    decode (o - 1 - g) growing kv progress g;
  }
}
workload { 4 x chat; }
"""


def test_the_drawn_values_estimate_the_successors_and_the_states():
    from math import comb

    from serq.check.estimate import estimate

    prog = load_text(BIG, "big.sq").program
    e = estimate(prog, symmetry=True)
    assert (e.program, e.successors, e.sessions) == ("chat", 512_000, 4)
    assert [(st.attr, w) for st, w in e.draws] == [("prompt", 2000), ("o", 256)]
    assert e.states == comb(512_000 + 3, 4)  # multisets of 4 combinations: the sessions are interchangeable
    assert estimate(prog, symmetry=False).states == 512_000 ** 4
    # a million sessions: a float, at once, not a number of millions of digits
    huge = load_text(BIG.replace("4 x chat", "1000000 x chat"), "h.sq").program
    assert estimate(huge, symmetry=False).states == float("inf")
    assert 1e300 > estimate(load_text(BIG.replace("4 x chat", "30 x chat"), "h.sq").program, True).states > 1e100
    # a branch takes the larger side; a domain read from an attribute counts 1 (known only when drawn)
    branchy = BIG.replace("draw o in 1..256 hidden;", "draw o in 1..prompt hidden; if prompt > 5 { draw k in {1, 2, 3}; } else { draw j in 1..7; }")
    e = estimate(load_text(branchy, "b.sq").program, symmetry=True)
    assert (e.successors, [st.attr for st, _ in e.draws]) == (2000 * 7, ["prompt", "j"])


def test_too_large_to_explore_is_said_before_exploring(tmp_path, capsys):
    path = write(tmp_path, BIG)
    assert main(["explore", path, "--memory", "1G", "--time-limit", "0.01", "--no-timing"]) == 13
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:12:16: warning[W509]: too large to explore: one arrival of `chat` has 512,000 "
                          "successors, and the drawn values alone make about 2.86e21 states once the 4 sessions "
                          "have arrived (with symmetry)\n"), err
    assert ("note: one arrival takes every value of each draw: `prompt`: 2,000 values × `o`: 256 values; the memory "
            "bound (1.0 GiB) holds at most 67,108,864 states of 16 bytes") in err
    assert "--swarm 8 --time-limit 600" in err and "narrow the domains" in err


def test_no_instance_of_the_library_is_too_large():
    from pathlib import Path

    from serq.check.estimate import capacity, estimate
    from serq.lang.load import load_path

    for f in sorted((Path(__file__).resolve().parents[2] / "instances").glob("*.sq")):
        e = estimate(load_path(f).program, symmetry=False)
        assert e.states <= capacity(1 << 30)[0], f  # no W509 under a 1 GiB bound, even without symmetry
