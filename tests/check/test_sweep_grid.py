"""`serq sweep` over two or three constants, `--worst` and `--require`:
the grid of theorem.sq's KV capacity x block size BS (x stage budget B)
against verdicts and worst cases found by hand, bisection per row and the
monotonicity report on made-up cells, exit codes, and every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from serq.check import sweep as sweep_mod
from serq.check.sweep import Row, at_words, sweep
from serq.check.sweepreport import render_text
from serq.cli import main

ROOT = Path(__file__).resolve().parents[2]

# theorem.sq with its capacity KV and its stage budget B made constants
# (BS, the block size, is one already). A chat needs 5 tokens at most
# (prompt 3 + o 3 - 1): its blocks must fit in KV beside the other
# chat's growth. By explorations of every cell (as the 1-D sweep in
# test_sweep.py finds KV = 6 at BS = 2 by hand):
VERDICTS = {4: "LLL", 5: "PLL", 6: "PPP", 7: "PPP"}  # rows KV, columns BS = 1, 2, 3
TTFT = {4: (None, None, None), 5: (4, None, None), 6: (4, 4, 4), 7: (2, 4, 4)}  # None: unbounded (the livelock's cycle)
LETTERS = {"P": "pass", "L": "livelock"}


@pytest.fixture
def kv_bs(tmp_path):
    text = (ROOT / "instances" / "theorem.sq").read_text()
    assert "pool kv { cap 8;" in text and "budget 4;" in text
    path = tmp_path / "theorem_kv_bs.sq"
    path.write_text(text.replace("pool kv { cap 8;", "const KV = 8;\nconst B = 4;\npool kv { cap KV;")
                    .replace("budget 4;", "budget B;"))
    return path


def test_grid_of_two_constants(kv_bs, capsys):
    assert main(["sweep", str(kv_bs), "--vary", "KV=4..7", "--vary", "BS=1..3", "--worst", "ttft",
                 "--require", "ttft<=2", "--json", "--no-timing", "--workers", "2", "--any"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert (d["format"], d["version"], d["mode"]) == ("serq-sweep", 1, "all")
    assert d["consts"] == [{"name": "KV", "lo": 4, "hi": 7}, {"name": "BS", "lo": 1, "hi": 3}]
    assert d["requirement"]["text"] == "verdict pass and worst ttft <= 2"
    cells = {(c["at"]["KV"], c["at"]["BS"]): c for c in d["cells"]}
    assert len(cells) == 12
    for kv, row in VERDICTS.items():
        for bs, ch in zip((1, 2, 3), row):
            c = cells[(kv, bs)]
            assert c["verdict"] == LETTERS[ch], (kv, bs)
            w = c["worst"]["ttft"]
            assert w["complete"] and w["value"] == TTFT[kv][bs - 1] and w["unbounded"] == (w["value"] is None)
            assert c["outcome"] == ("pass" if ch == "P" and w["value"] is not None and w["value"] <= 2 else "fail")
    assert d["met"] == 1 and d["exit_code"] == 0 and d["frontier"] == [{"KV": 7, "BS": 1}]
    m = d["monotone"]
    assert m["holds"] is True and m["direction"] == {"KV": "more", "BS": "less"} and m["pairs"] == []
    assert [(b["row"]["KV"], b["value"], b["exact"]) for b in d["boundaries"]] == \
        [(4, None, False), (5, None, False), (6, None, False), (7, 1, True)]


def test_grid_text_and_the_verdict_as_the_requirement(kv_bs, capsys):
    assert main(["sweep", str(kv_bs), "--vary", "KV=4..6", "--vary", "BS=1..3", "--no-timing",
                 "--workers", "2"]) == 12  # a cell fails
    out = capsys.readouterr().out
    assert out.splitlines()[:8] == [
        "sweep KV over 4..6, BS over 1..3 (3 x 3 = 9 cells, every cell)",
        "",
        "verdict (P pass, D deadlock, L livelock, V violation, B bound, E error, . not evaluated)",
        "KV\\BS  1  2  3  largest passing BS",
        "    4  L  L  L  -",
        "    5  P  L  L  1",
        "    6  P  P  P  3",
        ""]
    assert "monotone on the 9 cells evaluated: more KV or less BS never turns a pass into a fail" in out
    assert "Pareto frontier: (KV=5, BS=1), (KV=6, BS=3) (the passing cells" in out
    assert "requirement" not in out  # none stated: the exit code is the table's


def test_three_constants_one_grid_per_value_of_the_third(kv_bs, capsys):
    # the budget B is the third: at B = 2 a chat's first token waits 6 iterations, at B = 3 only 4
    code = main(["sweep", str(kv_bs), "--vary", "KV=5..6", "--vary", "BS=1..2", "--vary", "B=2..3",
                 "--require", "ttft<=4", "--no-timing", "--workers", "2", "--any"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("sweep KV over 5..6, BS over 1..2, B over 2..3 (2 x 2 x 2 = 8 cells, every cell)\n"
                          "worst case per cell (over every behaviour, as serq explore --worst): ttft\n"
                          "requirement: verdict pass and worst ttft <= 4\n")
    b2 = out[out.index("B = 2:"):out.index("B = 3:")]
    b3 = out[out.index("B = 3:"):out.index("monotone")]
    assert "KV\\BS  1  2  largest passing BS\n    5  -  -  -\n    6  -  -  -\n" in b2
    assert "KV\\BS  1  2  largest passing BS\n    5  +  -  1\n    6  +  +  2\n" in b3
    assert "KV\\BS    1    2\n    5    6  inf\n    6    6    6\n" in b2
    assert "Pareto frontier: (KV=5, BS=1, B=3), (KV=6, BS=2, B=3) " in out
    assert "more KV, less BS or more B never turns a pass into a fail" in out
    assert out.rstrip().endswith("requirement met at 3 of the 8 cells evaluated (exit 0)")


def test_one_constant_with_worst_and_require(kv_bs, capsys):
    # BS = 2: worst ttft 4 at KV = 6 and 7, 2 at 8; every one of them passes its exploration
    code = main(["sweep", str(kv_bs), "--vary", "KV=6..8", "--worst", "ttft", "--require", "ttft<=2",
                 "--no-timing", "--workers", "1", "--any"])
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    assert lines[1:3] == ["worst case per cell (over every behaviour, as serq explore --worst): ttft",
                          "requirement: verdict pass and worst ttft <= 2"]
    assert [w for w in lines[3].split("  ") if w] == ["KV", "verdict", "states", "worst ttft", "required", "message"]
    assert lines[4].split()[:5] == ["6", "pass", lines[4].split()[2], "4", "no"]
    assert lines[6].split()[:5] == ["8", "pass", lines[6].split()[2], "2", "yes"]
    assert "smallest passing KV = 8; fails at KV = 7 (monotone: one change of verdict over every value)" in out
    assert "requirement met at 1 of the 3 values evaluated (exit 0)" in out
    assert "the counterexample" not in out  # the verdict passes at 7: no trace to show


def test_exit_codes_of_a_requirement(kv_bs, capsys):
    args = ["sweep", str(kv_bs), "--vary", "KV=5..6", "--no-timing", "--workers", "1"]
    assert main(args + ["--require", "ttft<=1", "--json"]) == 12  # no cell meets it
    d = json.loads(capsys.readouterr().out)
    assert d["met"] == 0 and d["exit_code"] == 12 and (d["format"], d["version"]) == ("serq-sweep", 1)
    assert d["consts"] == [{"name": "KV", "lo": 5, "hi": 6}] and [r["outcome"] for r in d["rows"]] == ["fail", "fail"]
    schema = json.loads((Path(__file__).resolve().parents[2] / "serq" / "schemas" / "serq-sweep.json").read_text())
    jsonschema.validate(d, schema)  # `met` a count, `quantifier` the exit code's question
    assert d["quantifier"] == "every"
    assert main(args + ["--require", "ttft<=4", "--any", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    jsonschema.validate(d, schema)
    assert (d["quantifier"], d["exit_code"]) == ("some", 0) and d["met"] >= 1
    # every exploration cut at 5 states: no verdict, so undecided rather than failed
    assert main(args + ["--require", "verdict=pass", "--max-states", "5"]) == 13
    out = capsys.readouterr().out
    assert "requirement met at 0 of the 2 values evaluated, undecided at 2 (exit 13)" in out
    assert "no value is decided; undecided at 5..6" in out
    # a verdict clause alone; livelock allowed: both cells pass it
    assert main(args + ["--require", "verdict=pass|livelock"]) == 0
    assert "requirement: verdict pass or livelock\n" in capsys.readouterr().out
    assert main(args + ["--require", "verdict!=pass", "--any"]) == 0  # KV = 5 livelocks at BS = 2
    assert "requirement met at 1 of the 2 values" in capsys.readouterr().out
    # without --any every value must meet it: KV = 6 passes, so it fails `verdict!=pass`
    assert main(args + ["--require", "verdict!=pass"]) == 12
    assert "requirement met at 1 of the 2 values evaluated (exit 12)" in capsys.readouterr().out


def _fake(table: dict):
    """An _explore_value that reads the verdict of a cell from `table`."""
    calls = []

    def value(job):
        calls.append(job.value)
        v = table[job.value]
        return Row(job.value, v, None, "", 0, 1), None
    return value, calls


def test_bisection_per_row_and_a_verdict_found_not_monotone(monkeypatch, kv_bs):
    # rows KV = 1..3, BS = 1..9; row 2 passes from BS = 6 on, row 3 from 3 on; row 1 never.
    # The cells are made up: the bisection of each row, then the check on the cells it evaluated.
    table = {(kv, bs): "pass" if (kv == 2 and bs >= 6) or (kv == 3 and bs >= 3) else "deadlock"
             for kv in (1, 2, 3) for bs in range(1, 10)}
    value, calls = _fake(table)
    monkeypatch.setattr(sweep_mod, "_explore_value", value)
    sw = sweep(kv_bs.read_text(), str(kv_bs), ["KV=1..3", "BS=1..9"], bisect=True, workers=1)
    # the ends of every row, then one point per row and round for the two rows whose ends differ
    assert calls[:6] == [(1, 1), (1, 9), (2, 1), (2, 9), (3, 1), (3, 9)]
    assert len(calls) < 27 and all(table[c] for c in calls)
    assert [(b.row, b.value, b.exact) for b in sw.bounds] == [((1,), None, False), ((2,), 6, True), ((3,), 3, True)]
    assert sw.mono.holds is True and sw.mono.orient == (1, 1) and sw.frontier == [(2, 6), (3, 3)]
    text = render_text(sw)
    assert text.splitlines()[0] == f"sweep KV over 1..3, BS over 1..9 (3 x 9 = 27 cells, {len(calls)} by bisection " \
                                   "of each row along BS)"
    assert "KV\\BS  1  2  3  4  5  6  7  8  9  smallest passing BS\n    1  D  .  .  .  .  .  .  .  D  -\n" in text
    assert "the bisection of each row along BS assumed it there" in text
    # KV = 3 fails at 7..9 where KV = 2 passes, and KV = 1 passes at 9 alone: monotone in neither constant
    table[(3, 9)] = table[(3, 8)] = table[(3, 7)] = "deadlock"
    table[(1, 9)] = "pass"
    sw = sweep(kv_bs.read_text(), str(kv_bs), ["KV=1..3", "BS=1..9"], workers=1)
    assert sw.mono.holds is False and set(sw.mono.neither) == {0, 1}
    assert "not monotone in KV: more KV turns a pass into a fail from (KV=1, BS=9) to (KV=3, BS=9), and less KV " \
           "from (KV=2, BS=6) to (KV=1, BS=6); not monotone in BS: more BS turns a pass into a fail from " \
           "(KV=3, BS=3) to (KV=3, BS=7), and less BS from (KV=1, BS=9) to (KV=1, BS=1)\n" in render_text(sw)


def test_not_monotone_though_each_constant_alone_is(monkeypatch, kv_bs):
    # no two decided cells share a row or a column, yet no direction of KV and BS fits them all
    table = {(1, 1): "pass", (2, 2): "deadlock", (0, 0): "deadlock", (2, 0): "livelock", (0, 2): "deadlock"}
    value, _ = _fake({**{(kv, bs): "bound" for kv in (0, 1, 2) for bs in (0, 1, 2)}, **table})
    monkeypatch.setattr(sweep_mod, "_explore_value", value)
    sw = sweep(kv_bs.read_text(), str(kv_bs), ["KV=0..2", "BS=0..2"], workers=1)
    assert sw.mono.holds is False and not sw.mono.neither and sw.mono.pairs == [((1, 1), (2, 2))]
    assert "\nnot monotone: (KV=1, BS=1) passes but (KV=2, BS=2), with more KV and more BS and no constant worse, " \
           "fails (1 such pair among the 9 cells evaluated)\n" in render_text(sw)
    assert sw.frontier == [(1, 1)]


def test_a_worker_is_named_by_its_cell():
    assert at_words(("KV", "BS"), (5, 2)) == "KV = 5, BS = 2"
    assert at_words("KV", 5) == "KV = 5"


@pytest.mark.parametrize("argv, flag, col, message, note", [
    (["--vary", "KV=4..5", "--vary", "KV=6..7"], "--vary", 1, "`KV` is varied twice: already KV=4..5",
     "give each constant one range"),
    (["--vary", "KV=4..5", "--vary", "BS=1..2", "--vary", "B=1..2", "--vary", "KV=1..2"], "--vary", 1,
     "a sweep varies at most 3 constants; this is the 4th --vary", None),
    (["--vary", "KV=1..200", "--vary", "BS=1..51"], "--vary", 4, "200 x 51 = 10200 cells; a sweep takes at most 10000",
     None),
    (["--vary", "KV=4..5", "--require", "ttfx<=2"], "--require", 1,
     "unknown metric `ttfx`; the metrics are ttft, ttft-time, latency, latency-time, preemptions, recomputed, "
     "iterations, time, queue, peak", "did you mean `ttft`?"),
    (["--vary", "KV=4..5", "--require", "latency-tim<3"], "--require", 1, "unknown metric `latency-tim`",
     "did you mean `latency-time`?"),
    (["--vary", "KV=4..5", "--require", "verdct=pass"], "--require", 1, "unknown metric `verdct`",
     "did you mean `verdict`?"),
    (["--vary", "KV=4..5", "--require", "ttft>=2"], "--require", 5,
     "a requirement bounds a worst case from above: use ttft<=N or ttft<N, not >=", None),
    (["--vary", "KV=4..5", "--require", "ttft<=four"], "--require", 7, "expected a whole number after <=, got `four`",
     None),
    (["--vary", "KV=4..5", "--require", "verdict=pas"], "--require", 9,
     "unknown verdict `pas`; a requirement names pass, deadlock, livelock, violation", "did you mean `pass`?"),
    (["--vary", "KV=4..5", "--require", "verdict=pass|bound"], "--require", 14, "unknown verdict `bound`", None),
    (["--vary", "KV=4..5", "--require", "verdict<=pass"], "--require", 8, "the verdict is compared with = or !=",
     None),
    (["--vary", "KV=4..5", "--require", "ttft 4"], "--require", 1, "expected METRIC<=N or verdict=VERDICT", None),
    (["--vary", "KV=4..5", "--require", "queue:gpu<2"], "--require", 7, "unknown pool `gpu`; the pools are kv", None),
    (["--vary", "KV=4..5", "--worst", "ttfx"], "--worst", 1, "unknown metric `ttfx`", None),
    (["--vary", "KV=4..5", "--worst", "ttft", "--worst", "ttft"], "--worst", 1, "`ttft` is given twice", None),
    (["--vary", "KV=4..5", "--worst", "ttft", "--max-depth", "9"], "--max-depth", 1,
     "--worst computes a worst case over whole behaviours, cut only by --max-states and --time-limit; drop "
     "--max-depth", None),
])
def test_bad_inputs_are_located(kv_bs, capsys, argv, flag, col, message, note):
    assert main(["sweep", str(kv_bs), *argv]) == 2
    err = capsys.readouterr().err
    head, value, caret = err.splitlines()[:3]
    code = "E014" if flag == "--worst" or "metric" in message or "pool" in message else "E012" if flag == "--max-depth" else "E015"
    assert head.startswith(f"{flag}:1:{col}: error[{code}]: {message}"), err
    assert caret.index("^") == col + 1, err  # two spaces of indent
    if note:
        assert f"note: {note}" in err
    assert "Traceback" not in err


def test_the_repeated_vary_is_no_longer_silently_dropped(kv_bs, capsys):
    assert main(["sweep", str(kv_bs), "--vary", "KV=5..5", "--vary", "BS=1..2", "--no-timing", "--workers", "1",
                 "--json"]) == 12  # KV = 5, BS = 2 livelocks
    d = json.loads(capsys.readouterr().out)
    assert [c["at"] for c in d["cells"]] == [{"KV": 5, "BS": 1}, {"KV": 5, "BS": 2}]


def test_a_grid_interrupted_keeps_the_cells_finished(monkeypatch, kv_bs, capsys):
    from explorer.runtime.interrupt import Interrupted

    def value(job):
        if job.value == (1, 2):
            raise Interrupted("SIGINT")
        return Row(job.value, "pass", None, "made up", 0, 1), None
    monkeypatch.setattr(sweep_mod, "_explore_value", value)
    assert main(["sweep", str(kv_bs), "--vary", "KV=1..2", "--vary", "BS=1..2", "--workers", "1", "--json"]) == 16
    d = json.loads(capsys.readouterr().out)
    assert d["interrupted"] == "SIGINT" and [c["at"] for c in d["cells"]] == [{"KV": 1, "BS": 1}]
    assert d["exit_code"] == 16
    assert main(["sweep", str(kv_bs), "--vary", "KV=1..2", "--vary", "BS=1..2", "--workers", "1"]) == 16
    out = capsys.readouterr().out
    assert "    1  P  .  1\n    2  .  .  -\n" in out
    assert out.rstrip().endswith("interrupted by SIGINT: the cells above are those finished before it; "
                                 "the sweep is incomplete")


def test_a_worker_that_raises_is_named_by_its_cell(monkeypatch, kv_bs, capsys):
    def value(job):
        if job.value == (2, 1):
            raise RuntimeError("made up")
        return Row(job.value, "pass", None, "made up", 0, 1), None
    monkeypatch.setattr(sweep_mod, "_explore_value", value)
    assert main(["sweep", str(kv_bs), "--vary", "KV=1..2", "--vary", "BS=1..2", "--workers", "2", "--json"]) == 18
    d = json.loads(capsys.readouterr().out)
    assert d["failed"].startswith("worker ") and "(at KV = 2, BS = 1) raised RuntimeError: made up" in d["failed"]


def test_exit_codes_gate_every_value(kv_bs, capsys):
    """Without --any the exit code gates CI: 0 only when every value
    evaluated passes (meets --require), 12 when one fails, 13 when none
    fails but one is undecided; `--require pass` is short for verdict=pass."""
    args = ["sweep", str(kv_bs), "--vary", "KV=5..6", "--no-timing", "--workers", "1"]
    assert main(args + ["--vary", "BS=1..1"]) == 0  # both pass at BS = 1
    capsys.readouterr()
    assert main(args + ["--vary", "BS=2..2"]) == 12  # KV = 5 livelocks at BS = 2
    capsys.readouterr()
    assert main(args + ["--vary", "BS=2..2", "--any"]) == 0  # KV = 6 passes
    capsys.readouterr()
    assert main(args + ["--vary", "BS=2..2", "--require", "pass", "--json"]) == 12
    d = json.loads(capsys.readouterr().out)
    assert d["requirement"]["text"] == "verdict pass" and d["met"] == 1 and d["exit_code"] == 12
    assert main(args + ["--vary", "BS=2..2", "--require", "pass|livelock"]) == 0
    capsys.readouterr()
    assert main(args + ["--vary", "BS=1..1", "--max-states", "5"]) == 13  # cut: undecided, none fails
    capsys.readouterr()
