"""`serq sweep`: a capacity whose boundary is known by hand, bisection,
the boundary logic on made-up rows, and every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serq.cli import main
from serq.check.sweep import Row, Sweep, _boundary, sweep

ROOT = Path(__file__).resolve().parents[2]

# theorem.sq with its KV capacity as a constant. By hand: a chat's largest
# demand is prompt 3 + o 3 - 1 = 5 tokens, 3 blocks of 2, so every chat
# completes from KV = 6 on (the theorem's hypotheses then hold); at 4 or 5
# units (2 whole blocks) a chat drawing prompt=3, o=3 preempts itself at
# the same token for ever: livelock; at 2 or 3 units (1 block) a chat drawing
# prompt=3 cannot even reserve its prompt (2 blocks): deadlock.
KV_VERDICTS = {2: "deadlock", 3: "deadlock", 4: "livelock", 5: "livelock",
               6: "pass", 7: "pass", 8: "pass", 9: "pass"}


@pytest.fixture
def theorem_kv(tmp_path):
    text = (ROOT / "instances" / "theorem.sq").read_text()
    assert "pool kv { cap 8;" in text
    path = tmp_path / "theorem_kv.sq"
    path.write_text(text.replace("pool kv { cap 8;", "const KV = 8;\npool kv { cap KV;"))
    return path


def test_sweep_capacity_boundary(theorem_kv, capsys):
    assert main(["sweep", str(theorem_kv), "--vary", "KV=2..9", "--no-timing", "--json"]) == 12  # KV 2..5 fail
    d = json.loads(capsys.readouterr().out)
    assert {r["value"]: (r["verdict"] + (f" ({r['kind']})" if r["kind"] else "")) for r in d["rows"]} == KV_VERDICTS
    assert (d["monotone"], d["last_fail"], d["first_pass"]) == (True, 5, 6)
    cex = d["counterexample"]
    assert cex["value"] == 5 and cex["result"]["verdict"] == "livelock"
    assert cex["result"]["point_of_no_return"]["step"] == 1
    assert main(["sweep", str(theorem_kv), "--vary", "KV=2..9", "--no-timing", "--workers", "1"]) == 12
    out = capsys.readouterr().out
    assert out.startswith("sweep KV over 2..9 (8 values, every value)\n")
    assert "smallest passing KV = 6; fails at KV = 5 (monotone: one change of verdict over every value)" in out
    assert "the counterexample at KV = 5:\nlivelock: a cycle" in out


def test_sweep_bisect(theorem_kv):
    text = theorem_kv.read_text()
    sw = sweep(text, str(theorem_kv), "KV=2..9", bisect=True, workers=2)
    # ends 2, 9; then 4 and 6 in parallel; then 5
    assert [r.value for r in sw.rows] == [2, 4, 5, 6, 9]
    assert (sw.last_fail, sw.first_pass) == (5, 6)
    assert "found by bisection, which assumes the verdict is monotone" in sw.note
    one = sweep(text, str(theorem_kv), "KV=2..9", bisect=True, workers=1)
    assert [r.value for r in one.rows] == [2, 5, 6, 7, 9]
    assert (one.last_fail, one.first_pass) == (5, 6)


def _rows(spec):
    out = []
    for v, o in spec:
        verdict = {"p": "pass", "f": "deadlock", "b": "bound"}[o]
        out.append(Row(v, verdict, None, "", 0, 0))
    return out


def test_boundary_directions_and_non_monotone():
    sw = Sweep("N", 1, 4, "all", _rows([(1, "p"), (2, "p"), (3, "b"), (4, "f")]))
    _boundary(sw)
    assert (sw.monotone, sw.last_fail, sw.first_pass) == (True, 4, 2)
    assert sw.note.startswith("largest passing N = 2; fails at N = 4") and sw.note.endswith("no verdict at 3")
    sw = Sweep("N", 1, 4, "all", _rows([(1, "p"), (2, "f"), (3, "p"), (4, "f")]))
    _boundary(sw)
    assert sw.monotone is False and sw.last_fail is None
    assert sw.note == "not monotone: passes at 1, 3, fails at 2, 4; no single boundary"
    sw = Sweep("N", 1, 3, "all", _rows([(1, "f"), (2, "f"), (3, "f")]))
    _boundary(sw)
    assert sw.monotone is None and sw.note == "every value evaluated fails"


def test_value_that_breaks_the_instance(capsys):
    inst = str(ROOT / "instances" / "decode_preempt.sq")
    assert main(["sweep", inst, "--vary", "BS=0..1", "--no-timing", "--workers", "1"]) == 13  # undecided at 0
    out = capsys.readouterr().out
    assert " 0  error           0  E402: `block` of pool `kv` must be at least 1, got 0" in out
    assert out.rstrip().endswith("every value evaluated passes; no verdict at 0")


@pytest.mark.parametrize("vary, col, message", [
    ("KB=0..3", 1, "unknown constant `KB`; the instance declares BS"),
    ("BS=3..x", 4, "bad range `3..x`: expected LO..HI with integers LO <= HI"),
    ("BS=5..3", 4, "empty range: 5 is above 3"),
    ("BS", 1, "expected NAME=LO..HI, e.g. KV=8..32"),
    ("BS=1..100000", 4, "100000 values; a sweep takes at most 10000"),
])
def test_bad_vary(capsys, vary, col, message):
    assert main(["sweep", str(ROOT / "instances" / "decode_preempt.sq"), "--vary", vary]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"--vary:1:{col}: error[E015]: {message}\n  {vary}\n  {' ' * (col - 1)}^")


def test_sweep_of_ir_json_and_bad_workers(tmp_path, capsys):
    ir_path = tmp_path / "x.ir.json"
    assert main(["compile", str(ROOT / "instances" / "decode_preempt.sq"), "-o", str(ir_path)]) == 0
    assert main(["sweep", str(ir_path), "--vary", "BS=1..2"]) == 2
    assert "error[E016]: serq sweep needs the .sq source" in capsys.readouterr().err
    assert main(["sweep", str(ROOT / "instances" / "decode_preempt.sq"), "--vary", "BS=1..2", "--workers", "0"]) == 2
    assert "--workers must be at least 1" in capsys.readouterr().err


def test_text_gives_the_warnings_once_with_their_values(tmp_path, capsys):
    """A warning of every value is given once (`at every value`); one of
    some values names them; the JSON has them per value."""
    text = (ROOT / "instances" / "theorem.sq").read_text()
    text = text.replace("const BS = 2;", "const BS = 2;\nconst Q = 1;\ncheck queue(kv) <= Q;")
    text = text.replace("preempt lifo; }", "preempt lifo; copies keep; }")
    path = tmp_path / "tq.sq"
    path.write_text(text)
    main(["sweep", str(path), "--vary", "Q=1..3", "--workers", "1", "--no-timing"])
    out = capsys.readouterr().out
    assert out.count("warning[W510]") == 1 and "has no effect" in out and "(at every value)" in out
    assert "warning[W510] at line 22:6: pool `kv`: `copies keep` has no effect" in out
    assert "`check queue(kv) <= 2` can never be violated: the workload starts 2 sessions and none spawns (at 2)" in out
    assert "`check queue(kv) <= 3` can never be violated" in out and out.count("warning[W511]") == 2
    main(["sweep", str(path), "--vary", "Q=1..3", "--workers", "1", "--no-timing", "--json"])
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [sorted(w["code"] for w in r["warnings"]) for r in rows] == [["W510"], ["W510", "W511"], ["W510", "W511"]]
