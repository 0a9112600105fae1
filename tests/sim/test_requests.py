"""`serq run --requests FILE`: one row per request. The rows agree with
the report's own statistics (every ttft and latency sample, preemptions,
cache hits), are the same with and without step coalescing, and their
recomputed tokens never exceed the explorer's worst case; the files'
formats, and the bad paths."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from serq import formats
from serq.cli import main
from serq.lang.load import load_path, load_text
from serq.sim.requests import COLUMNS, attach
from serq.sim.report import build_report
from serq.sim.simulator import SimConfig, Simulator

ROOT = Path(__file__).resolve().parents[2]
INST = ROOT / "instances"


def rows_and_stats(program, coalesce: bool = True, horizon: int | None = None):
    sim = Simulator(program, SimConfig(seed=3, coalesce=coalesce, horizon=horizon))
    log = attach(sim)
    result = sim.run()
    return log.rows, result


def many(name: str, *edits: tuple[str, str]):
    text = (INST / f"{name}.sq").read_text()
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    return load_text(text, str(INST / f"{name}.sq"), simulate=True).program


# vllm_chat grown: 40 chats of long prompts and answers in 160 units of kv,
# chunked prefill: coalesced decode blocks between many preemptions and
# recomputations (without `RequestLog.block` the rows differ from the run
# without coalescing)
LONG = (("3 x chat every 2.5s", "40 x chat every 30ms"), ("{6, 10}", "{30, 70}"),
        ("draw o in 1..4 ~ geometric(0.3) hidden", "draw o in 20..60 ~ uniform"),
        ("let max_out = 4", "let max_out = 60"), ("cap 24;", "cap 160;"), ("budget 8; chunk 4;", "budget 64; chunk 16;"))


PROGRAMS = {
    "vllm_chat x60": lambda: many("vllm_chat", ("3 x chat every 2.5s", "60 x chat every 40ms")),
    "vllm_chat long": lambda: many("vllm_chat", *LONG),
    "multiturn_chat x40": lambda: many("multiturn_chat", ("2 x chat;", "40 x chat;")),
    "agent_subagents": lambda: load_path(INST / "agent_subagents.sq", simulate=True).program,  # spawn/join
    "decode_preempt": lambda: load_path(INST / "decode_preempt.sq", simulate=True).program,
    "stuck_completes": lambda: load_path(INST / "stuck_completes.sq", simulate=True).program,
    "self_preempt": lambda: load_path(INST / "self_preempt.sq", simulate=True).program,  # a livelock: cut
}


@pytest.mark.parametrize("name", PROGRAMS)
def test_rows_agree_with_the_report_and_with_coalescing(name):
    prog = PROGRAMS[name]()
    horizon = 10**9 if name == "self_preempt" else None
    rows, result = rows_and_stats(prog, horizon=horizon)
    plain, _ = rows_and_stats(prog, coalesce=False, horizon=horizon)
    assert rows == plain  # step coalescing changes no row
    st = result.stats
    names = [p.name for p in prog.sessions]
    for g, pname in enumerate(names):  # no warmup: every request is a sample of the report
        mine = [r for r in rows if r["program"] == pname]
        assert Counter(r["ttft"] for r in mine if r["ttft"] is not None) == Counter(st.ttft[g])
        assert Counter(r["latency"] for r in mine if r["latency"] is not None) == Counter(st.e2e[g])
    report = build_report(result)
    assert sum(r["preemptions"] for r in rows) == sum(p["preemptions"] for p in report["pools"])
    assert sum(r["cached"] for r in rows) == sum(p["hit_units"] for p in report["pools"])
    for r in rows:
        assert r["request"] == sum(1 for x in rows[:rows.index(r)] if x["session"] == r["session"])
        if r["finish"] is not None:
            assert r["arrival"] <= (r["admitted"] if r["admitted"] is not None else r["arrival"]) <= r["finish"]
            assert r["latency"] == r["finish"] - r["arrival"]
        if r["first_token"] is not None:
            assert r["ttft"] == r["first_token"] - r["arrival"] >= 0
    if name == "vllm_chat long":
        assert result.stats.evaluated < sum(result.stats.iters)  # blocks were coalesced
        assert sum(r["recomputed"] for r in rows) > 1000 and sum(r["preemptions"] for r in rows) > 50
    if name == "self_preempt":
        assert rows[0]["finish"] is None and rows[0]["preemptions"] > 100 and rows[0]["recomputed"] > 0


@pytest.mark.parametrize("name", ["decode_preempt", "stuck_completes", "multiturn_chat"])
def test_recomputed_is_within_the_explorers_worst_case(name, capsys):
    """The explorer's `--worst recomputed` is the most any session
    recomputes on any behaviour: a simulated run's sessions recompute no
    more; decode_preempt's run attains it (2 tokens)."""
    assert main(["explore", str(INST / f"{name}.sq"), "--worst", "recomputed", "--json"]) == 0
    worst = json.loads(capsys.readouterr().out)["value"]
    rows, _ = rows_and_stats(load_path(INST / f"{name}.sq", simulate=True).program)
    per_session = Counter()
    for r in rows:
        per_session[r["session"]] += r["recomputed"]
    assert max(per_session.values()) <= worst
    if name == "decode_preempt":
        assert max(per_session.values()) == worst == 2


def test_the_files(tmp_path, capsys):
    inst = str(INST / "decode_preempt.sq")
    assert main(["run", inst, "--requests", str(tmp_path / "r.csv")]) == 0
    assert main(["run", inst, "--requests", str(tmp_path / "r.jsonl")]) == 0
    capsys.readouterr()
    with open(tmp_path / "r.csv", newline="") as f:
        table = list(csv.DictReader(f))
    head, *lines = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    schema = formats.schema(formats.REQUESTS)
    jsonschema.Draft202012Validator(schema).validate(head)
    row_schema = {**schema["$defs"]["row"], "$defs": schema["$defs"]}
    for line in lines:
        jsonschema.Draft202012Validator(row_schema).validate(line)
    assert head["format"] == "serq-requests" and head["columns"] == list(COLUMNS) == list(table[0])
    assert [{k: "" if v is None else str(v) for k, v in line.items()} for line in lines] == table
    assert [(r["session"], r["request"], r["preemptions"], r["recomputed"]) for r in lines] == [
        ("chat#1", 0, 0, 0), ("chat#2", 0, 1, 2)]


def test_bad_paths(tmp_path, capsys):
    inst = str(INST / "decode_preempt.sq")
    assert main(["run", inst, "--requests", str(tmp_path / "r.txt")]) == 2
    err = capsys.readouterr().err
    assert "--requests:1:1: error[E012]: --requests writes FILE.csv (CSV) or FILE.jsonl" in err
    assert main(["run", inst, "--requests", str(tmp_path / "no" / "r.csv")]) == 2
    captured = capsys.readouterr()
    assert "error[E017]" in captured.err and "no directory" in captured.err and captured.out == ""
    assert not (tmp_path / "no").exists()


def test_the_library_gives_the_same_rows(tmp_path, capsys):
    import serq

    inst = str(INST / "vllm_chat.sq")
    assert main(["run", inst, "--seed", "2", "--requests", str(tmp_path / "r.jsonl")]) == 0
    capsys.readouterr()
    _head, *lines = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    r = serq.run(inst, seed=2, plots=False, requests=True)
    assert r.requests == lines and len(lines) == 3
    with pytest.raises(ValueError, match="requests=True"):
        _ = serq.run(inst, plots=False).requests
