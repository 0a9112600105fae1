"""serq against vLLM's own scheduler, step by step, on recorded traces.

Each scenario in tests/vllm/ has a trace recorded with vLLM 0.33.0
(`serq oracle trace`). Here, without vLLM, the scenario is converted to a
serq instance, run with a schedule (coalescing on and off), and compared
with the trace on every step: tokens per request in serve order,
admissions, preemptions, prefix hits, finished requests, free and cached
blocks (every field required). Every recorded scenario converts exactly (the converter names
nothing the language cannot say), into an instance that loads with no
warning but the one the priority policy gives, names every request and is
in canonical layout (one load of each converted text serves its checks and
both runs). docs/vllm.md's agreement table is checked against these results.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from unittest import mock

import pytest

from serq.lang.fmt import format_program_source
from serq.lang.load import load_text
from serq.oracle.compare import agree, read_trace
from serq.oracle.convert import convert
from serq.oracle.driver import check_scenario

HERE = Path(__file__).resolve().parents[1]
DIR = HERE / "vllm"
DOC = HERE.parent / "docs" / "vllm.md"
NAMES = sorted(p.name[: -len(".json")] for p in DIR.glob("*.json"))
RESULTS: dict[tuple[str, bool], object] = {}


def _scenario(name):
    return check_scenario(json.loads((DIR / f"{name}.json").read_text()), name)


# a scenario's converted text is loaded once for its two runs (coalescing on and off): the same text gives the
# same program, and parsing it is a third of a run
_load_once = functools.lru_cache(maxsize=1)(load_text)


def _result(name, coalesce):
    key = (name, coalesce)
    if key not in RESULTS:
        with mock.patch("serq.lang.load.load_text", _load_once):
            RESULTS[key] = agree(_scenario(name), (DIR / f"{name}.trace.jsonl").read_text(), coalesce=coalesce,
                                 name=name)
    return RESULTS[key]


def _table_rows() -> dict[str, str]:
    """docs/vllm.md's agreement table: scenario -> its row (the header, the
    totals and the rows in order are checked by test_docs_table_is_true)."""
    text = DOC.read_text()
    m = re.search(r"<!-- agreement table: begin -->\n(.*?)\n<!-- agreement table: end -->", text, re.S)
    assert m, "docs/vllm.md has no agreement table"
    return {line.split("|")[1].strip(): line for line in m.group(1).splitlines()[2:-1]}


STALE = "docs/vllm.md's agreement table is stale; regenerate it with `python tools/vllm_table.py`"


@pytest.mark.parametrize("name", NAMES)
def test_agrees_with_vllm(name):
    """The scenario converts exactly into an instance that loads, names
    every request and is canonical; every step agrees, with coalescing on
    and off alike, and the docs' row for the scenario says so (its numbers
    are these)."""
    sc = _scenario(name)
    conv = convert(sc, name)
    assert conv.needs == [], name
    assert set(conv.labels) == {r["id"] for r in sc["requests"]}
    assert format_program_source(conv.text, f"{name}.sq") == conv.text, name
    a, b = _result(name, True), _result(name, False)
    # the priority policy's queue is on seqs, where its holds wait: kv's own is ignored, as W503 says
    loaded = _load_once(conv.text, "<converted scenario>")  # the program both runs simulated
    assert all(d.code == "W503" and sc.get("policy") == "priority" for d in loaded.warnings)
    assert a.steps > 0
    assert a.ok, f"{name}: agree on {a.agree} of {a.steps} steps, then\n{a.first}"
    assert b.ok, f"{name} without coalescing: agree on {b.agree} of {b.steps} steps, then\n{b.first}"
    assert (a.steps, a.agree) == (b.steps, b.agree), f"{name}: coalescing changes the agreement"
    assert _table_rows().get(name) == _row(name, a), STALE


def _row(name: str, a) -> str:
    return f"| {name} | {a.steps} | {a.agree} | {'yes' if a.ok else '**NO**'} |"


def table() -> str:
    """docs/vllm.md's agreement table, from the results (tools/vllm_table.py)."""
    rows = ["| scenario | steps compared | steps agreed | agree |",
            "| --- | ---: | ---: | --- |"]
    tot_steps = tot_agree = 0
    for name in NAMES:
        a, b = _result(name, True), _result(name, False)
        assert (a.steps, a.agree, a.ok) == (b.steps, b.agree, b.ok), \
            f"{name}: coalescing changes the agreement"
        tot_steps += a.steps
        tot_agree += a.agree
        rows.append(_row(name, a))
    rows.append(_totals(len(NAMES), tot_steps, tot_agree))
    return "\n".join(rows)


def _totals(n: int, steps: int, agreed: int) -> str:
    return f"| **all {n} scenarios** | **{steps}** | **{agreed}** | |"


def test_docs_table_is_true():
    """The table's frame: its header, a row per scenario in order (each
    row's numbers are checked by test_agrees_with_vllm), and the totals
    of those rows."""
    text = DOC.read_text()
    m = re.search(r"<!-- agreement table: begin -->\n(.*?)\n<!-- agreement table: end -->", text, re.S)
    assert m, "docs/vllm.md has no agreement table"
    lines = m.group(1).splitlines()
    assert lines[:2] == ["| scenario | steps compared | steps agreed | agree |", "| --- | ---: | ---: | --- |"], STALE
    rows = lines[2:-1]
    assert [r.split("|")[1].strip() for r in rows] == NAMES, STALE
    steps = sum(int(r.split("|")[2]) for r in rows)
    agreed = sum(int(r.split("|")[3]) for r in rows)
    assert lines[-1] == _totals(len(NAMES), steps, agreed), STALE
