"""Every command's JSON: its format and version, validated against the
schema shipped in serq/schemas/ (jsonschema, Draft 2020-12), and the data
of a trace checked against the words it stands beside (docs/json.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

import serq
from serq import formats
from serq.cli import main
from serq.schemas import build

ROOT = Path(__file__).resolve().parents[2]
INST = ROOT / "instances"


def validate(doc: dict, fmt: str, defn: str | None = None) -> None:
    s = formats.schema(fmt)
    if defn is not None:  # a part of the format (a schedule's iteration line)
        s = {**s["$defs"][defn], "$defs": s["$defs"]}
    jsonschema.Draft202012Validator.check_schema(s)
    jsonschema.Draft202012Validator(s).validate(doc)


def cli(capsys, *argv) -> tuple[int, dict]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_the_shipped_schemas_are_those_built():
    assert build.main(["--check"]) == 0, "run: python -m serq.schemas.build"
    assert sorted(p.stem for p in (ROOT / "serq" / "schemas").glob("*.json")) == sorted(build.BUILDERS)
    for fmt in build.BUILDERS:
        s = formats.schema(fmt)
        jsonschema.Draft202012Validator.check_schema(s)
        if fmt != formats.IR:
            assert s["properties"]["format"] == {"const": fmt} if "properties" in s else fmt == formats.SWEEP
    with pytest.raises(ValueError, match="unknown format"):
        formats.schema("serq-nothing")


@pytest.mark.parametrize("name,code,verdict", [
    ("join_in_hold", 10, "deadlock"), ("hol_none", 10, "deadlock"), ("self_preempt", 11, "livelock"),
    ("stuck_completes", 0, "pass"), ("theorem", 0, "pass"), ("agent_subagents", None, None),
    ("multiturn_chat", None, None), ("slo_ttft", 12, "violation"), ("slo_holds", 0, "pass"),
])
def test_explore_json(capsys, name, code, verdict):
    got, d = cli(capsys, "explore", INST / f"{name}.sq", "--json", "--no-timing")
    validate(d, formats.EXPLORE)
    assert (d["format"], d["version"]) == ("serq-explore", 1) and list(d)[:2] == ["format", "version"]
    if code is not None:
        assert (got, d["verdict"]) == (code, verdict)
    check_trace(d["trace"])
    assert (d["blocked"] is not None) == (d["verdict"] == "deadlock")


def check_trace(trace: list[dict]) -> None:
    """The data of each step says what its words say."""
    for k, t in enumerate(trace):
        st = t["state"]
        for p in st["pools"]:  # conservation, as the data gives it
            if p["cap"] is not None:
                assert p["free"] + p["allocated"] + p["cached"] == p["cap"]
        # every session and pool the English diff names has a change in the data
        named = {line.split(":", 1)[0] for line in t["diff"]}
        changed = {c.get("session") or c.get("pool") for c in t["changes"]}
        if k == 0:
            assert t["move"] is None and t["events"] == [] and t["changes"] == []
            continue
        assert named <= changed, (k, named, changed)
        # the changes are the differences of the states
        before = {x["session"]: x for x in trace[k - 1]["state"]["sessions"]}
        for c in t["changes"]:
            if "session" in c:
                assert before.get(c["session"], {}).get(c["field"]) == c["before"]
                assert next(x for x in st["sessions"] if x["session"] == c["session"])[c["field"]] == c["after"]
        # the events the action's words name
        words = t["action"]
        assert words.startswith({"iterate": "iterate", "turn": "turn", "arrive": "arrive"}[t["move"]["kind"]])
        for e in t["events"]:
            if e["kind"] == "admit":
                assert f"admit {e['session']} ({', '.join(e['pools'])})" in words
            elif e["kind"] == "preempt":
                assert f"preempt {e['session']} ({e['pool']} full" in words
            elif e["kind"] == "spawn":
                assert f"{e['session']} spawns {e['child']}" in words
            elif e["kind"] == "release":
                assert f"{e['session']} releases {e['units']} {e['pool']}" in words
            elif e["kind"] == "serve" and e["done"] is not None:
                assert f"{e['session']} {e['phase']} {e['tokens']} [{e['done']}/{e['total']}]" in words


def test_a_deadlock_diagnosis_as_data(capsys):
    """join_in_hold: the child needs 2 blocks of kv (4 units), can obtain 1
    (free 2), its parent holds 6 units and waits at its join."""
    _code, d = cli(capsys, "explore", INST / "join_in_hold.sq", "--json", "--no-timing")
    b = d["blocked"]
    (w,) = b["waiting"]
    (kv,) = w["pools"]
    assert (w["session"], w["behind"], w["admit_if"]) == ("child#2", None, None)
    assert (kv["pool"], kv["needs"], kv["obtainable"], kv["free"], kv["evictable"], kv["short"]) == ("kv", 4, 2, 2, 0, True)
    assert kv["blocks"] == {"needs": 2, "obtainable": 1, "cap": 4} and kv["fits_alone"]
    assert kv["holders"] == [{"session": "parent#1", "units": 6}] and kv["pinned"] == 0
    assert w["text"] in d["diagnosis"]  # the words beside it
    m = re.search(r"needs (\d+) blocks \((\d+) units\) and can obtain (\d+) block", w["text"])
    assert (int(m[1]), int(m[2]), int(m[3])) == (kv["blocks"]["needs"], kv["needs"], kv["blocks"]["obtainable"])
    assert b["wait_for_cycle"] == [{"waiter": "parent#1", "waits_for": "child#2", "via": "join"},
                                   {"waiter": "child#2", "waits_for": "parent#1", "via": "kv"}]
    assert any(line.startswith("wait-for cycle: parent#1 waits for child#2") for line in d["diagnosis"])
    # the warnings W504 and W500, located, as on stderr
    assert [(x["code"], x["line"]) for x in d["warnings"]] == [("W504", 27), ("W500", 28)]
    final_events = d["trace"][-1]["events"]
    assert [e["kind"] for e in final_events] == ["admit", "iterate", "serve", "run_done", "spawn", "queued"]
    assert final_events[4] == {"kind": "spawn", "session": "parent#1", "child": "child#2"}


def test_replay_json(capsys):
    _code, d = cli(capsys, "explore", INST / "join_in_hold.sq", "--json", "--no-timing")
    code, r = cli(capsys, "explore", INST / "join_in_hold.sq", "--json", "--replay", d["replay_path"])
    validate(r, formats.EXPLORE)
    assert code == 10 and "stats" not in r
    assert [t["state"] for t in r["trace"]] == [t["state"] for t in d["trace"]]
    assert r["blocked"] == d["blocked"]


def test_worst_json(capsys):
    code, d = cli(capsys, "explore", INST / "decode_preempt.sq", "--worst", "ttft", "--json")
    validate(d, formats.WORST)
    assert code == 0 and d["format"] == "serq-worst" and d["value"] == 3
    check_trace(d["trace"])


@pytest.mark.parametrize("name,flags,kinds", [
    # shared prefixes: the shortest trace to an eviction (a worst case on vllm_chat costs 5x more)
    ("vllm_chat", ["--witness", "eviction"], {"draw", "evict", "release", "end"}),
    ("multiturn_chat", ["--worst", "recomputed"], {"turn", "at_turn", "hit", "preempt"}),
    ("agent_subagents", ["--worst", "latency"], {"spawn", "joined"}),
    ("theorem_no_lifo", ["--worst", "preemptions"], {"preempt", "stuck"}),
    ("stuck_completes", ["--check", "stuck"], {"stuck", "preempt"}),
])
def test_every_kind_of_event_as_data(capsys, name, flags, kinds):
    """Witnesses with `turn`, spawn/join, preemption and prefixes: every
    step's data validates and agrees with its words."""
    _code, d = cli(capsys, "explore", INST / f"{name}.sq", *flags, "--json")
    validate(d, formats.WORST if "--worst" in flags else formats.EXPLORE)
    if "--witness" in flags:
        d = d["coverage"]["witnesses"][flags[flags.index("--witness") + 1]]
    check_trace(d["trace"])
    events = [e for t in d["trace"] for e in t["events"]]
    assert kinds <= {e["kind"] for e in events}
    for e in events:
        if e["kind"] == "evict":
            assert (e["owner"] is None) != (e["prefix"] is None)
        if e["kind"] in ("draw", "choose"):
            assert f"{e['session']} {e['kind']}s {e['attr']}={e['value']}" in next(
                t["action"] for t in d["trace"] if e in t["events"])


def test_theorem_json(capsys):
    code, d = cli(capsys, "explore", INST / "theorem_no_join_rule.sq", "--theorem", "--json", "--no-timing")
    validate(d, formats.THEOREM)
    assert code == 10 and d["format"] == "serq-theorem" and d["exploration"]["format"] == "serq-explore"
    assert [x["code"] for x in d["warnings"]] == ["W504"]  # E500 is the hypothesis that fails
    check_trace(d["exploration"]["trace"])


@pytest.fixture
def theorem_kv(tmp_path):
    text = (INST / "theorem.sq").read_text()
    path = tmp_path / "theorem_kv.sq"
    path.write_text(text.replace("pool kv { cap 8;", "const KV = 8;\npool kv { cap KV;")
                    .replace("block 2;", "block B;").replace("const KV = 8;", "const KV = 8;\nconst B = 2;"))
    return path


def test_sweep_json(capsys, theorem_kv):
    code, d = cli(capsys, "sweep", theorem_kv, "--vary", "KV=4..6", "--no-timing", "--json", "--workers", "1")
    validate(d, formats.SWEEP)
    assert code == 12 and d["counterexample"]["result"]["format"] == "serq-explore"  # KV = 4, 5 fail
    check_trace(d["counterexample"]["result"]["trace"])
    code, g = cli(capsys, "sweep", theorem_kv, "--vary", "KV=4..6", "--vary", "B=1..2", "--no-timing", "--json",
                  "--workers", "1")
    validate(g, formats.SWEEP)
    assert "cells" in g and "rows" not in g
    with pytest.raises(jsonschema.ValidationError):  # one shape or the other
        validate({**g, "rows": d["rows"]}, formats.SWEEP)


def test_sweep_cells_have_their_warnings(capsys, tmp_path):
    path = tmp_path / "j.sq"
    path.write_text((INST / "join_in_hold.sq").read_text().replace("pool kv { cap 8;", "const KV = 8;\npool kv { cap KV;"))
    _code, d = cli(capsys, "sweep", path, "--vary", "KV=8..9", "--no-timing", "--json", "--workers", "1")
    validate(d, formats.SWEEP)
    # KV = 9 is no whole number of blocks of 2: W507 at that value only
    assert [[w["code"] for w in r["warnings"]] for r in d["rows"]] == [["W504", "W500"], ["W507", "W504", "W500"]]


def test_run_and_check_json(capsys, tmp_path):
    code, r = cli(capsys, "run", INST / "multiturn_chat.sq", "--json", "--schedule", tmp_path / "s.jsonl")
    validate(r, formats.RUN)
    assert code == 0 and r["format"] == "serq-run" and [w["code"] for w in r["warnings"]] == ["W506"]
    head, *lines = [json.loads(x) for x in (tmp_path / "s.jsonl").read_text().splitlines()]
    validate(head, formats.SCHEDULE)
    assert lines
    for line in lines:
        validate(line, formats.SCHEDULE, "iteration")
    code, chk = cli(capsys, "check", INST / "join_in_hold.sq", "--json")
    validate(chk, formats.CHECK)
    assert (code, chk["format"], chk["verdict"], chk["exit_code"]) == (10, "serq-check", "deadlock", 10)
    assert chk["lines"][0].endswith("that can never move:")
    code, ok = cli(capsys, "check", INST / "theorem.sq", "--json")
    validate(ok, formats.CHECK)
    assert (code, ok["verdict"]) == (0, "pass")
    with pytest.raises(jsonschema.ValidationError):  # the schema knows every key
        validate({**ok, "surprise": 1}, formats.CHECK)


def test_compile_ir(capsys):
    code, d = cli(capsys, "compile", INST / "agent_subagents.sq")
    validate(d, formats.IR)
    assert code == 0 and (d["format"], d["version"]) == ("serq-ir", 1)
    old = {k: v for k, v in d.items() if k != "format"}  # an IR written before `format`: still read
    assert serq.ir.Program.model_validate(old) == serq.ir.Program.model_validate(d)


def test_the_library_gives_the_same_json(capsys):
    r = serq.explore(str(INST / "join_in_hold.sq"))
    _code, d = cli(capsys, "explore", INST / "join_in_hold.sq", "--json", "--no-timing")
    assert r.json(timing=False) == d
    c = serq.check(str(INST / "join_in_hold.sq"))
    validate(c.json(), formats.CHECK)


@pytest.mark.parametrize("a,b,flags,code", [
    ("theorem", "theorem_no_lifo", [], 19), ("hol_none", "hol_none", [], 0),
    ("theorem", "theorem_no_lifo", ["--worst", "ttft"], 19),
])
def test_diff_json(capsys, a, b, flags, code):
    got, d = cli(capsys, "diff", INST / f"{a}.sq", INST / f"{b}.sq", "--json", *flags)
    validate(d, formats.DIFF)
    assert (got, d["exit_code"], list(d)[:2]) == (code, code, ["format", "version"])
    assert ("worst" in d) == bool(flags)
