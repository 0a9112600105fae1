"""The library: serq.explore, serq.run, serq.check, serq.sweep, serq.diff (docs/api.md).
Each gives what its command prints, from a path or from text; bad input
raises the command's located diagnostics (SerqError) or ValueError; the
results have short reprs and render as the `--html` page in a notebook;
`import serq` stays cheap."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import serq
from serq.cli import main

ROOT = Path(__file__).resolve().parents[2]
LIVELOCK = str(ROOT / "instances" / "self_preempt.sq")
CHAT = str(ROOT / "instances" / "vllm_chat.sq")


def cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_import_serq_and_its_calls_stays_cheap():
    code = ("import sys, serq\n"
            "from serq import explore, run, check, sweep, Result, SerqError\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'numpy', 'pydantic', 'lark')"
            " or m.startswith(('serq.semantics', 'serq.sim', 'serq.lang'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_explore_gives_what_serq_explore_prints(capsys):
    r = serq.explore(LIVELOCK)
    code, out = cli(capsys, "explore", LIVELOCK, "-q", "--no-timing")
    assert (r.verdict, r.ok, r.exit_code) == ("livelock", False, code)
    assert r.text(timing=False) == out
    assert r.distinct == 5 and len(r.trace) == 6 and r.replay_path == "0/0/0/0/0/0"
    assert r.json(timing=False)["verdict"] == "livelock"
    assert repr(r) == f"<serq.Result livelock: trace of 6 steps, 5 distinct states, {LIVELOCK}>"


def test_explore_takes_text_a_path_object_and_the_limits():
    text = Path(LIVELOCK).read_text()
    r = serq.explore(text)
    assert r.verdict == "livelock" and r.name == "<text>" and "<text>>" in repr(r)
    assert serq.explore(Path(CHAT), max_states=10).verdict == "bound"
    r = serq.explore(CHAT, symmetry=False, checks=["deadlock"], max_depth=3)
    assert r.verdict == "bound" and r.raw.bound_reason == "max_depth"
    assert repr(serq.explore(CHAT, max_states=10)) == f"<serq.Result bound: 10 distinct states, {CHAT}>"


def test_a_result_renders_as_the_timeline_page(tmp_path, capsys):
    r = serq.explore(LIVELOCK)
    page = tmp_path / "t.html"
    main(["explore", LIVELOCK, "-q", "--html", str(page)])
    capsys.readouterr()
    assert r.page() == page.read_text()  # the page `--html` writes
    frame = r._repr_html_()
    assert frame.startswith('<iframe srcdoc="&lt;!DOCTYPE html&gt;') and frame.endswith("</iframe>")
    assert "&lt;script" in frame and "<script" not in frame  # the page's own, escaped into the frame


def test_run_gives_the_report_and_its_page(capsys, tmp_path):
    r = serq.run(CHAT, seed=3)
    code, out = cli(capsys, "run", CHAT, "--seed", "3", "--json")
    assert r.json() == json.loads(out) and code == 0
    assert r.report == {k: v for k, v in r.json().items() if k not in ("format", "version", "warnings")}
    assert r.stopped == "done" and r.text().startswith(f"serq run {CHAT}  seed 3")
    assert repr(r) == f"<serq.Run {CHAT}: 9 iterations, 5.042300 s simulated, stopped: done>"
    assert "plotly" in r.page() and r._repr_html_().startswith("<iframe srcdoc=")
    bare = serq.run(CHAT, plots=False, horizon="2s")
    assert bare.stopped != "done" and bare._repr_html_() is None
    with pytest.raises(ValueError, match="plots=True"):
        bare.page()


def test_check_gives_the_verdict_and_the_lines(capsys):
    c = serq.check(CHAT)
    code, out = cli(capsys, "check", CHAT)
    assert (c.verdict, c.ok, c.exit_code) == ("pass", True, code)
    assert "\n".join(c.lines) + "\n" == out
    assert repr(c) == f"<serq.Checked pass: {CHAT}>"
    stuck = serq.check(LIVELOCK, checks="stuck", max_steps=50)
    assert not stuck.ok


def test_serq_check_is_both_the_call_and_the_package():
    import serq.check.model

    assert serq.check.model.SerqModel.__name__ == "SerqModel"
    assert serq.check(CHAT).ok
    from serq import check

    assert check is serq.check


def test_sweep_gives_the_table(capsys):
    multi = str(ROOT / "instances" / "multiturn_chat.sq")
    sw = serq.sweep(multi, "BS=1..2", workers=1)
    assert sw.verdicts() == {1: "pass", 2: "pass"}
    code, out = cli(capsys, "sweep", multi, "--vary", "BS=1..2", "--workers", "1", "--no-timing")
    assert sw.text(timing=False) == out
    assert repr(sw) == f"<serq.Swept BS=1..2: every value evaluated passes, {multi}>"
    assert "<table>" in sw._repr_html_()


def test_sweep_of_two_constants_gives_the_grid(capsys, tmp_path):
    kv = tmp_path / "kv.sq"
    kv.write_text((ROOT / "instances" / "theorem.sq").read_text().replace(
        "pool kv { cap 8;", "const KV = 8;\npool kv { cap KV;"))
    sw = serq.sweep(kv, ["KV=4..6", "BS=1..2"], workers=1, require=["verdict=pass"])
    assert set(sw.verdicts()) == {(k, b) for k in (4, 5, 6) for b in (1, 2)}
    code, out = cli(capsys, "sweep", str(kv), "--vary", "KV=4..6", "--vary", "BS=1..2", "--workers", "1",
                    "--require", "verdict=pass", "--no-timing")
    assert sw.text(timing=False) == out and sw.exit_code == code
    assert all(sw.verdicts()[c] == "pass" for c in sw.frontier)
    assert repr(sw).startswith("<serq.Swept KV=4..6 BS=1..2: ")
    assert sw.json(timing=False)["format"] == "serq-sweep"


def test_bad_input_is_the_commands_located_error(tmp_path):
    with pytest.raises(serq.SerqError) as e:
        serq.explore("pool kv { cap 4; }\nsession s { hold kv 2 { prefil 1; } }\n")
    assert "<text>:2:" in str(e.value) and "error[" in str(e.value)
    with pytest.raises(serq.SerqError, match=r"error\[E011\]: cannot read nope.sq"):
        serq.run("nope.sq")
    empty = tmp_path / "empty.sq"
    empty.write_text("stage gpu { cost 1ms; }\nsession s { end; }\nworkload { 0 x s; }\n")
    with pytest.raises(serq.SerqError, match=r"E026"):
        serq.explore(empty)
    with pytest.raises(serq.SerqError, match=r"E016"):
        serq.sweep(tmp_path / "x.ir.json", "KV=1..2")


@pytest.mark.parametrize("call, kw, words", [
    (serq.explore, {"max_states": -1}, "max_states must be non-negative"),
    (serq.explore, {"workers": 0}, "workers must be at least 1"),
    (serq.explore, {"time_limit": float("nan")}, "time_limit must be a finite number"),
    (serq.explore, {"memory": "4"}, "a memory size needs a unit"),
    (serq.explore, {"strategy": "bsf"}, "strategy is bfs or dfs"),
    (serq.explore, {"checks": ["deadlok"]}, "unknown property 'deadlok'"),
    # vllm_chat has no `check sometimes` line: selecting them checks nothing, never a pass
    (serq.explore, {"checks": ["sometimes"]}, "it has none"),
    (serq.run, {"horizon": 0}, "horizon must be a positive time"),
    (serq.run, {"horizon": [1]}, "horizon is a time"),
    (serq.run, {"max_steps": -5}, "max_steps must be non-negative"),
])
def test_a_bad_keyword_value_is_a_value_error(call, kw, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        call(CHAT, **kw)


def test_an_unknown_keyword_is_a_type_error():
    with pytest.raises(TypeError):
        serq.explore(CHAT, max_state=3)
    with pytest.raises(TypeError, match="not int"):
        serq.explore(42)


def test_diff_gives_what_serq_diff_prints(capsys):
    a, b = str(ROOT / "instances" / "theorem.sq"), str(ROOT / "instances" / "theorem_no_lifo.sq")
    d = serq.diff(a, b)
    code, out = cli(capsys, "diff", a, b)
    assert (d.verdict, d.exit_code, d.same) == ("differ", code, False) and code == 19
    assert d.text() == out
    assert d.json()["format"] == "serq-diff" and d.json()["verdict"] == "differ"
    assert repr(d) == f"<serq.Differed differ: {a} vs {b}, {d.states} joint states>"
    same = serq.diff(a, a, worst="ttft")
    assert same.same and same.exit_code == 0 and same.worst is not None
    assert "<iframe" in same._repr_html_()


def test_diff_bad_input():
    a = str(ROOT / "instances" / "theorem.sq")
    with pytest.raises(serq.SerqError, match=r"E028"):
        serq.diff(a, str(ROOT / "instances" / "agent_subagents.sq"))
    with pytest.raises(ValueError, match="unknown metric `ttf`"):
        serq.diff(a, a, worst="ttf")
    with pytest.raises(ValueError, match="ties is all or seq"):
        serq.diff(a, a, ties="any")
    with pytest.raises(ValueError, match="max_states must be non-negative"):
        serq.diff(a, a, max_states=-1)


def test_explore_with_coverage_gives_what_serq_explore_coverage_prints(capsys):
    inst = str(ROOT / "instances" / "agent_subagents.sq")
    r = serq.explore(inst, witness="all")
    code, out = cli(capsys, "explore", inst, "--coverage", "--witness", "all", "-q", "--no-timing")
    assert r.exit_code == code == 0 and r.text(timing=False) == out
    assert r.coverage.counts["spawn"] == 4 and r.coverage.witnesses["preemption"] is None
    assert [w.code for w in r.warnings] == ["W520"]  # a pool that could preempt never did
    assert main(["explore", inst, "--coverage", "--witness", "all", "--json", "-q", "--no-timing"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert r.json(timing=False)["coverage"] == d["coverage"]
    assert serq.explore(inst).coverage is None and serq.explore(inst, coverage=True).coverage.witnesses == {}
    with pytest.raises(ValueError, match="unknown event kind 'preempt'"):
        serq.explore(inst, witness="preempt")
    with pytest.raises(ValueError, match="workers=1"):
        serq.explore(inst, coverage=True, workers=2)
