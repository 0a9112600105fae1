"""serq against vLLM's own scheduler, step by step, on recorded traces.

Each scenario in tests/vllm/ has a trace recorded with vLLM 0.33.0
(`serq oracle trace`). Here, without vLLM, the scenario is converted to a
serq instance, run with a schedule (coalescing on and off), and compared
with the trace on every step: tokens per request in serve order,
admissions, preemptions, prefix hits, finished requests, free and cached
blocks (every field required). Every recorded scenario converts exactly (the converter names
nothing the language cannot say). docs/vllm.md's agreement table is
checked against these results.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

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


def _result(name, coalesce):
    key = (name, coalesce)
    if key not in RESULTS:
        RESULTS[key] = agree(_scenario(name), (DIR / f"{name}.trace.jsonl").read_text(), coalesce=coalesce, name=name)
    return RESULTS[key]


def test_every_recorded_scenario_converts_exactly():
    for name in NAMES:
        assert convert(_scenario(name), name).needs == [], name


def _params():
    return [pytest.param(name, co, id=f"{name}-{'coalesce' if co else 'no-coalesce'}")
            for name in NAMES for co in (True, False)]


def test_enough_scenarios_with_traces():
    assert len(NAMES) >= 80
    for name in NAMES:
        head, steps = read_trace((DIR / f"{name}.trace.jsonl").read_text())
        sc = _scenario(name)
        assert head["config"]["block_size"] == sc["block_size"]
        assert head["config"]["usable_blocks"] == sc["num_gpu_blocks"] - 1
        assert steps and all(r["step"] == k for k, r in enumerate(steps))
    random_ones = [n for n in NAMES if "random" in n]
    assert all(len(_scenario(n)["requests"]) >= 200 for n in random_ones)
    # the random traces really are under pressure: preemptions and evictions happen
    pre = sum(len(r["preempted"]) for n in random_ones for r in read_trace((DIR / f"{n}.trace.jsonl").read_text())[1])
    assert pre > 100


@pytest.mark.parametrize("name,coalesce", _params())
def test_agrees_with_vllm(name, coalesce):
    a = _result(name, coalesce)
    assert a.steps > 0
    assert a.ok, f"{name}: agree on {a.agree} of {a.steps} steps, then\n{a.first}"


def table() -> str:
    """docs/vllm.md's agreement table, from the results."""
    rows = ["| scenario | steps compared | steps agreed | agree |",
            "| --- | ---: | ---: | --- |"]
    tot_steps = tot_agree = exact = 0
    for name in NAMES:
        a, b = _result(name, True), _result(name, False)
        assert (a.steps, a.agree, a.ok) == (b.steps, b.agree, b.ok), \
            f"{name}: coalescing changes the agreement"
        verdict = "yes" if a.ok else "**NO**"
        exact += 1
        tot_steps += a.steps
        tot_agree += a.agree
        rows.append(f"| {name} | {a.steps} | {a.agree} | {verdict} |")
    rows.append(f"| **all {exact} scenarios** | **{tot_steps}** | **{tot_agree}** | |")
    return "\n".join(rows)


def test_docs_table_is_true():
    text = DOC.read_text()
    m = re.search(r"<!-- agreement table: begin -->\n(.*?)\n<!-- agreement table: end -->", text, re.S)
    assert m, "docs/vllm.md has no agreement table"
    want = table()
    assert m.group(1) == want, "docs/vllm.md's agreement table is stale; regenerate it with " \
                               "`python tools/vllm_table.py`:\n" + want
