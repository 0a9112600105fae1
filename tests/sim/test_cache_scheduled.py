"""`cache scheduled` (docs/language.md, pool options): a victim served
earlier in the iteration of its preemption gives its tokens back, and its
release still caches the whole blocks those tokens fill, as vLLM (which
hashes a block when it allocates it for a step's tokens). Pinned by the
release's words on a tiny instance, by the front end's words, and by the
recorded vLLM trace where it shows (tests/vllm/90_*: the cached blocks
differ at step 268 without it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serq.diagnostics import SerqError
from serq.lang.fmt import format_program_source
from serq.lang.load import load_text
from serq.oracle.compare import agree
from serq.oracle.convert import convert
from serq.oracle.driver import check_scenario
from serq.sim.report import trace_line
from serq.sim.simulator import simulate

VLLM = Path(__file__).resolve().parents[1] / "vllm"

# req#1 (priority 1) is served a token that fills its second block; req#2
# (priority 0), served after it in the same iteration, cannot grow and
# preempts it
SRC = """const BS = 2;
pool seqs { cap 2; admit via gpu; }
pool kv {
  cap 4 * BS;
  block BS;
  admit via gpu;
  preempt (desc pri, desc arrived);
  requeue order;
  cache scheduled;
}
stage gpu { budget 8; serve (admitted); self_preempt continue; }
session req(n, o, pri) {
  let g = 0;
  hold seqs 1, kv reuse c need (n + g - c) take 0
       at admission (c = min(cached(kv), floor((n + g - 1) / BS) * BS)) {
    prefill (n + g - c) growing kv;
    set g = g + 1;
    decode (o - g) growing kv progress g;
  } keep (kv full);
  end;
}
workload {
  1 x req(n=2, o=6, pri=1) at 0ns;
  1 x req(n=4, o=6, pri=0) at 1ns;
}
"""


def releases(text: str) -> list[str]:
    """The words of the first preemption's iteration, its releases of kv."""
    out = []

    def tr(tick, what, events, m, state):
        line = trace_line(tick, what, events, m, state)
        if "preempt" in line and not out:
            out.extend(w for w in line.split(": ", 1)[1].split("; ") if " kv" in w and not w.startswith("shape"))

    simulate(load_text(text, "t.sq").program, trace=tr)
    return out


def test_the_victim_served_earlier_leaves_the_block_its_tokens_fill_cached():
    assert releases(SRC) == ["preempt req#1 (kv: kv full)", "req#1 releases 4 units of kv (4 kept)",
                             "evict 2 units of kv cached for req#1"]
    # computed (the default): the given-back token is not computed, its block is not kept
    assert releases(SRC.replace("  cache scheduled;\n", "")) == [
        "preempt req#1 (kv: kv full)", "req#1 releases 4 units of kv (2 kept)"]


def test_the_priority_trace_agrees_on_the_cached_blocks_only_with_it():
    name = "90_random_copies_priority"
    sc = check_scenario(json.loads((VLLM / f"{name}.json").read_text()), name)
    trace = (VLLM / f"{name}.trace.jsonl").read_text()
    assert " cache scheduled;" in convert(sc, name).text
    assert agree(sc, trace, name=name).ok
    import serq.oracle.compare as compare

    real = compare.convert

    class Without:
        def __init__(self, c):
            self.text, self.labels, self.needs = c.text.replace(" cache scheduled;", ""), c.labels, c.needs

    compare.convert = lambda *a, **k: Without(real(*a, **k))
    try:
        a = agree(sc, trace, name=name)
    finally:
        compare.convert = real
    assert a.first.splitlines()[0] == "first difference at step 268 (cached_blocks):"


def test_the_converter_writes_it_for_the_priority_policy_with_prefix_caching():
    for name, has in (("90_random_copies_priority", True), ("36_priority_self_preempt_serves_after", True)):
        p = VLLM / f"{name}.json"
        if not p.exists():
            continue
        sc = check_scenario(json.loads(p.read_text()), name)
        assert (" cache scheduled;" in convert(sc, name).text) == (has and sc.get("enable_prefix_caching", True))
    fcfs = [p for p in sorted(VLLM.glob("*.json")) if json.loads(p.read_text()).get("policy", "fcfs") == "fcfs"
            and "priority" not in p.name]
    assert fcfs
    for p in fcfs[:5]:
        sc = check_scenario(json.loads(p.read_text()), p.stem)
        assert "cache scheduled" not in convert(sc, p.stem).text


def test_words_layout_and_warnings():
    assert format_program_source(SRC) == SRC
    prog = load_text(SRC, "t.sq").program
    assert prog.pools[1].cache == "scheduled"
    assert load_text(SRC.replace("  cache scheduled;\n", ""), "t.sq").program.pools[1].cache == "computed"
    assert load_text(SRC, "t.sq").warnings == []
    d = load_text(SRC.replace("} keep (kv full);", "}"), "t.sq").warnings
    assert [(x.line, x.col, x.code) for x in d] == [(3, 6, "W513")]
    assert d[0].message == ("pool `kv`: `cache scheduled` has no effect: no hold keeps its whole blocks "
                            "(`keep (kv full)`)")
    d = load_text(SRC.replace("preempt (desc pri, desc arrived);", "preempt none;"), "t.sq").warnings
    assert [x.code for x in d] == ["W513"] and "never preempted" in d[0].message


@pytest.mark.parametrize("opts,code", [("cache scheduled; cache computed;", "E403"), ("cache later;", "E001")])
def test_bad_cache_options_are_located_errors(opts, code):
    with pytest.raises(SerqError) as e:
        load_text(SRC.replace("cache scheduled;", opts), "bad.sq")
    out = e.value.render()
    assert f"error[{code}]" in out and "bad.sq:9:" in out, out
