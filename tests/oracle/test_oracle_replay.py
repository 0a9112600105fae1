"""`serq oracle replay`: counterexamples of vLLM-exact instances as vLLM
scenarios, judged against vLLM's recorded traces (tests/oracle/replay/:
each instance, its counterexample as `serq explore --json` printed it, the
scenario the replay wrote and vLLM 0.33.0's trace of it). Only the last
test needs vLLM's environment."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from serq.cli import main
from serq.oracle import venv as oracle_venv
from serq.oracle.compare import agree
from serq.oracle.convert import convert
from serq.oracle.exact import NotExact, declarations, exact, settings

REC = Path(__file__).resolve().parent / "replay"
VLLM = Path(__file__).resolve().parents[1] / "vllm"
NAMES = ["gate_off_stuck", "gate_off_loop", "preempted_twice", "turn_preempted"]
# what each replay must say: vLLM shows the pattern the explorer found
SAYS = {
    "gate_off_stuck": ["counterexample: deadlock after 5 engine steps", "the same preemptions: req#1 at step 4 (by itself)",
                       "stuck forever, as in the counterexample: from step 5 to its step cap (step 34)",
                       "req#1 unfinished (1 waiting, 0 running, 4 free blocks of which 4 cached)"],
    "gate_off_loop": ["counterexample: livelock after 9 engine steps",
                      "the same preemptions: req#1 at step 4 (by itself); req#1 at step 7 (by itself)",
                      "the same cycle: vLLM repeats steps 6 to 8 for 30 more steps, up to its step cap"],
    "preempted_twice": ["counterexample: violation after 12 engine steps",
                        "req#2: prompt 5, 10 tokens, at step 2", "req#4: prompt 5, 10 tokens, at step 3",
                        "the same preemptions: req#4 at step 6; req#4 at step 11 (by itself)",
                        "vLLM and serq's run of the scenario agree on the 6 steps left"],
    "turn_preempted": ["counterexample: violation after 6 engine steps",
                       "conv_1#1.2: prompt 4 more, 4 tokens, 0 step(s) after conv_1#1 finishes",
                       "the same preemptions: conv_1#1 at step 5"],
}


def replay(*args) -> list[str]:
    return ["oracle", "replay", *map(str, args)]


@pytest.mark.parametrize("name", NAMES)
def test_recorded_replay_shows_the_same_pattern(name, tmp_path, capsys):
    sq, cx, trace = REC / f"{name}.sq", REC / f"{name}.cx.json", REC / f"{name}.trace.jsonl"
    out = tmp_path / "s.json"
    assert main(replay(sq, cx, "--trace", trace, "--scenario", out)) == 0
    text = capsys.readouterr().out
    assert "vLLM: the same pattern" in text and "every step agrees" in text, text
    for words in SAYS[name]:
        assert words in text, (words, text)
    # the scenario is the one vLLM ran (recorded beside the trace)
    assert json.loads(out.read_text()) == json.loads((REC / f"{name}.scenario.json").read_text())
    # a replay path gives the same as the file it comes from
    path = json.loads(cx.read_text())["replay_path"]
    assert main(replay(sq, "--path", path, "--trace", trace)) == 0
    # (the same words but the first line's message: the file's, or the replay's own)
    assert capsys.readouterr().out.split("\n", 1)[1] == text.split("\n", 1)[1]


@pytest.mark.parametrize("name", NAMES)
def test_recorded_trace_agrees_with_serq_on_every_step_by_the_comparison(name):
    """An independent route: `serq oracle compare`'s agreement of the
    recorded scenario with its trace, on every step (the replay compares
    the counterexample's own steps and its ending)."""
    sc = json.loads((REC / f"{name}.scenario.json").read_text())
    trace = (REC / f"{name}.trace.jsonl").read_text()
    for coalesce in (True, False):
        a = agree(sc, trace, coalesce=coalesce)
        if "max_steps" in sc and not a.ok:  # a livelock's: serq goes on past vLLM's step cap
            assert a.agree == a.steps and f"vLLM did nothing at step {sc['max_steps']};" in a.first, a.first
            continue
        assert a.ok and not a.needs, a.first


def _tamper(tmp_path, name, step, f):
    lines = (REC / f"{name}.trace.jsonl").read_text().splitlines()
    i = next(k for k, x in enumerate(lines) if json.loads(x).get("step") == step)
    rec = json.loads(lines[i])
    f(rec)
    lines[i] = json.dumps(rec)
    t = tmp_path / "t.jsonl"
    t.write_text("\n".join(lines) + "\n")
    return t


def test_a_differing_step_is_printed_side_by_side(tmp_path, capsys):
    name = "preempted_twice"
    t = _tamper(tmp_path, name, 6, lambda r: r.update(preempted=[], preemptions=[]))
    assert main(replay(REC / f"{name}.sq", REC / f"{name}.cx.json", "--trace", t)) == 12
    out = capsys.readouterr().out
    assert "vLLM: a different pattern" in out and "vLLM agrees on 6 of the counterexample's 12 steps" in out
    assert "first difference at step 6 (preempted):" in out and '≠ preempted      []' in out


def test_vllm_going_on_after_a_deadlock_is_a_different_pattern(tmp_path, capsys):
    name = "gate_off_stuck"
    t = _tamper(tmp_path, name, 9, lambda r: r.update(scheduled=[["req#1", 4]], admitted=["req#1"]))
    assert main(replay(REC / f"{name}.sq", REC / f"{name}.cx.json", "--trace", t)) == 12
    out = capsys.readouterr().out
    assert "the counterexample ends in a deadlock after step 4, but vLLM goes on at step 9" in out


def test_vllm_leaving_a_livelock_s_cycle_is_a_different_pattern(tmp_path, capsys):
    name = "gate_off_loop"
    t = _tamper(tmp_path, name, 13, lambda r: r.update(preempted=[], preemptions=[]))
    assert main(replay(REC / f"{name}.sq", REC / f"{name}.cx.json", "--trace", t)) == 12
    out = capsys.readouterr().out
    assert "the livelock's cycle (steps 6 to 8) is not repeated: vLLM's step 13 is []" in out, out


def test_drawn_lengths_are_the_counterexample_s(tmp_path, capsys):
    """A program that draws its output length instead of taking it: the
    counterexample's draw (6, the one that does not fit) is the scenario's."""
    s = (REC / "gate_off_stuck.sq").read_text()
    s = s.replace("session req(n, o) {\n  let g = 0;", "session req(n) {\n  draw o in {2, 6};\n  let g = 0;")
    s = s.replace("req(n=14, o=6)", "req(n=14)")
    sq = tmp_path / "drawn.sq"
    sq.write_text(s)
    out = tmp_path / "s.json"
    assert main(replay(sq, "--path", "0/1/0/0/0/0/0", "--trace", REC / "gate_off_stuck.trace.jsonl",
                       "--scenario", out)) == 0
    assert "vLLM: the same pattern" in capsys.readouterr().out
    assert json.loads(out.read_text())["requests"] == [{"max_tokens": 6, "id": "req#1", "arrival_step": 0,
                                                        "prompt_len": 14}]


@pytest.mark.parametrize("edit,where,words", [
    (("stage gpu { budget 8; serve (admitted); }", "stage gpu { budget 8; chunk 4; serve (admitted); }"),
     "13:23", "`stage gpu` is not written as the converter writes it"),
    (("    prefill (n + g - c) growing kv;", "    prefill (n + g - c + 1) growing kv;"),
     "18:24", "session `req` is not the converter's program for its requests"),
    (("const BS = 4;", "const BS = 4;\nprefix P1 = 4;"),
     "11:1", "`prefix P1`: replay does not write shared prompts yet"),
    (("pool kv { cap 4 * BS;", "pool kv { cap 16;"), "12:1", "no `pool kv { cap N * BS; ... }`"),
    (("session req(n, o) {", "session req(n, o, x = 1) {"), "15:1", "session `req` has parameters"),
])
def test_an_instance_that_is_not_vllm_exact_is_a_located_error(edit, where, words, tmp_path, capsys):
    s = (REC / "gate_off_stuck.sq").read_text()
    assert edit[0] in s
    sq = tmp_path / "x.sq"
    sq.write_text(s.replace(edit[0], edit[1]))
    assert main(replay(sq, "--path", "0/0/0", "--trace", REC / "gate_off_stuck.trace.jsonl")) == 2
    err = capsys.readouterr().err
    assert f"{sq}:{where}: error[E030]: not a vLLM-exact instance: {words}" in err, err
    assert "Traceback" not in err


def test_a_library_instance_is_not_vllm_exact(capsys):
    inst = Path(__file__).resolve().parents[2] / "instances" / "vllm_chat.sq"
    assert main(replay(inst, "--path", "0/0", "--trace", REC / "gate_off_stuck.trace.jsonl")) == 2
    assert f"{inst}:" in (err := capsys.readouterr().err) and "error[E030]: not a vLLM-exact instance: no `pool kv" in err


def test_a_turn_before_an_arrival_of_its_step_cannot_be_run_on_vllm(capsys):
    # the user replies, then a fresh request arrives, before the engine's next step: vLLM adds
    # the step's fresh arrivals first, so no scenario has this order
    sq = REC / "turn_preempted.sq"
    assert main(replay(sq, "--path", "0/0/1/1/1/1/0/0", "--check", "completes",
                       "--trace", REC / "turn_preempted.trace.jsonl")) == 2
    err = capsys.readouterr().err
    assert f"{sq}: error[E030]: the counterexample cannot be run on vLLM: the scenario does not say the " \
           "counterexample: at step 3 (served) serq's run of it differs; conv_1#1's user replies before req#2 " \
           "arrives at step 3, and vLLM adds a step's fresh arrivals before its returning turns" in err, err
    assert '≠ admitted   ["conv_1#1", "req#2"]' in err


def test_bad_counterexamples_and_traces(tmp_path, capsys):
    sq, trace = REC / "gate_off_stuck.sq", REC / "gate_off_stuck.trace.jsonl"
    # a counterexample of another instance: its path does not apply, or leads elsewhere
    assert main(replay(sq, REC / "preempted_twice.cx.json", "--trace", trace)) == 2
    assert "error[E013]: bad replay path `0/0/3/3/" in capsys.readouterr().err
    cx = json.loads((REC / "gate_off_stuck.cx.json").read_text())
    cx["trace"][3]["fingerprint"] = "0000000000000000"
    f = tmp_path / "cx.json"
    f.write_text(json.dumps(cx, indent=1))
    line = next(n for n, x in enumerate(f.read_text().splitlines(), 1) if "0000000000000000" in x)
    assert main(replay(sq, f, "--trace", trace)) == 2
    assert f"{f}:{line}:1: error[E030]: not a counterexample of this instance: its step 3 is another state" \
        in capsys.readouterr().err
    f.write_text('{"format": "serq-explore",\n "verdict": }')
    assert main(replay(sq, f, "--trace", trace)) == 2
    assert f"{f}:2:13: error[E030]: not a counterexample: Expecting value" in capsys.readouterr().err
    f.write_text(json.dumps({"format": "serq-run"}))
    assert main(replay(sq, f, "--trace", trace)) == 2
    assert f"{f}:1:1: error[E030]: not a counterexample of `serq explore --json`" in capsys.readouterr().err
    f.write_text(json.dumps({"format": "serq-explore", "verdict": "pass", "replay_path": None}))
    assert main(replay(sq, f, "--trace", trace)) == 2
    assert "no counterexample to replay: the exploration's verdict is pass" in capsys.readouterr().err
    # neither or both of a file and --path
    assert main(replay(sq, "--trace", trace)) == 2
    assert main(replay(sq, REC / "gate_off_stuck.cx.json", "--path", "0", "--trace", trace)) == 2
    assert capsys.readouterr().err.count("error[E012]: give a counterexample file or --path PATH") == 2
    # a trace of another scenario
    assert main(replay(sq, REC / "gate_off_stuck.cx.json", "--trace", REC / "turn_preempted.trace.jsonl")) == 2
    assert "error[E025]: not a trace of this counterexample's scenario: request 'conv_1#1'" in capsys.readouterr().err


def test_no_oracle_environment_says_how_to_make_one(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SERQ_ORACLE_VENV", str(tmp_path / "none"))
    assert main(replay(REC / "gate_off_stuck.sq", REC / "gate_off_stuck.cx.json")) == 2
    err = capsys.readouterr().err
    assert f"error[E024]: no oracle environment at {tmp_path / 'none'}: vLLM cannot run the counterexample" in err
    assert "`serq oracle setup [VENV]`" in err and "--trace TRACE" in err


@pytest.mark.parametrize("p", sorted(VLLM.glob("*.json")), ids=lambda p: p.stem)
def test_settings_read_back_every_converted_scenario(p):
    """Cross-check of the exactness test: the settings read off each
    recorded scenario's conversion, with its requests, convert to the same
    declarations (scenarios with shared prompts are refused, located)."""
    sc = json.loads(p.read_text())
    conv = convert(sc, p.stem)
    if any(d.kind == "prefix" for d in declarations(conv.text)):
        with pytest.raises(NotExact, match="replay does not write shared prompts yet"):
            settings(conv.text, p.name)
        return
    back = settings(conv.text, p.name)
    back["requests"] = sc["requests"]
    heads = {}
    for rid, label in conv.labels.items():
        heads.setdefault(label.split("#")[0], rid)
    exact(conv.text, p.name, back, heads)  # raises NotExact otherwise
    mine = [d.text for d in declarations(conv.text) if d.kind != "workload"]
    assert mine == [d.text for d in declarations(convert(back, p.stem).text) if d.kind != "workload"]


VENV = Path(os.environ.get("SERQ_ORACLE_VENV", oracle_venv.default_venv()))


@pytest.mark.skipif(not oracle_venv.python_of(VENV).exists(),
                    reason="vLLM's environment is not built here (`serq oracle setup`); the recorded replays are "
                           "judged without it above")
def test_vllm_reproduces_a_recorded_replay(tmp_path, capsys):
    name = "gate_off_stuck"
    t = tmp_path / "t.jsonl"
    assert main(replay(REC / f"{name}.sq", REC / f"{name}.cx.json", "--venv", VENV, "--save-trace", t)) == 0
    assert "vLLM: the same pattern" in capsys.readouterr().out
    assert t.read_text() == (REC / f"{name}.trace.jsonl").read_text()
