"""The front end on good inputs: every instance compiles and validates, the
IR round-trips through JSON, `serq compile` of a `.sq` and of its
`.ir.json` agree, and the automaton layout of a small program is pinned."""

from __future__ import annotations

from pathlib import Path

import pytest

from serq import ir
from serq.cli import main
from serq.ir.util import expr_text
from serq.lang.load import load_path, load_text

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = sorted((ROOT / "instances").glob("*.sq"))


def test_there_are_instances():
    names = {p.stem for p in INSTANCES}
    assert {"vllm_chat", "multiturn_chat", "agent_subagents", "self_preempt", "join_in_hold",
            "theorem", "hol_none"} <= names


@pytest.mark.parametrize("path", INSTANCES, ids=lambda p: p.stem)
def test_instance_compiles_and_validates(path):
    loaded = load_path(path)  # raises on any error
    # only the instances that join inside a finite hold warn (W500)
    codes = {d.code for d in loaded.warnings}
    assert codes == ({"W500", "W504"} if path.stem in ("join_in_hold", "theorem_no_join_rule") else set())


@pytest.mark.parametrize("path", INSTANCES, ids=lambda p: p.stem)
def test_instance_header_states_a_verdict(path):
    head = path.read_text().split("\n\n")[0]
    assert head.startswith("//")
    assert "Expected verdict:" in head
    verdict = head.split("Expected verdict:")[1].split()[0].strip(".;,")
    assert verdict in {"pass", "deadlock", "livelock", "stuck", "violation"}


@pytest.mark.parametrize("path", INSTANCES, ids=lambda p: p.stem)
def test_ir_json_round_trip(path):
    p = load_path(path).program
    text = p.to_json()
    assert ir.Program.from_json(text) == p
    assert ir.Program.from_json(text).to_json() == text


@pytest.mark.parametrize("path", INSTANCES, ids=lambda p: p.stem)
def test_compile_sq_and_ir_json_agree(path, tmp_path, capsys):
    first = tmp_path / "a.ir.json"
    second = tmp_path / "b.ir.json"
    assert main(["compile", str(path), "-o", str(first)]) == 0
    assert main(["compile", str(first), "-o", str(second)]) == 0
    assert first.read_text() == second.read_text()
    # the same program; the IR also carries the warnings compile printed (found again on loading)
    assert ir.Program.from_json(first.read_text()).model_copy(update={"warnings": ()}) == load_path(path).program
    # and to stdout
    capsys.readouterr()
    assert main(["compile", str(first)]) == 0
    assert capsys.readouterr().out == first.read_text()


def test_theorem_mode_accepts_the_theorem_instance():
    load_path(ROOT / "instances" / "theorem.sq", theorem=True)
    load_path(ROOT / "instances" / "theorem.sq", explorer=True)


SMALL = """\
pool kv { cap 4; }
pool kv2 { }
stage gpu { budget 2; }
session s {
  let n = 0;
  repeat 2 {
    hold kv 1 {
      decode 1;
      hold kv2 1 {
        prefill 2;
      }
    }
  }
  while n < 1 {
    turn;
    set n = n + 1;
  }
  if n > 0 {
    end;
  } else {
    turn;
  }
}
workload { 1 x s; }
"""


def test_automaton_shape_is_pinned():
    s = load_text(SMALL, "small.sq").program.sessions[0]

    def row(st):
        extra = st.opens if st.kind == "acquire" else st.closes if st.kind == "exit" else None
        return (st.kind, getattr(st, "next", None), getattr(st, "alt", None), st.scope, extra)

    assert [row(st) for st in s.states] == [
        ("arrive", 1, None, 0, None),    # 0
        ("set", 2, None, 0, None),       # 1  let n = 0
        ("set", 3, None, 0, None),       # 2  repeat#1 = 2
        ("branch", 4, 11, 0, None),      # 3  repeat#1 > 0
        ("set", 5, None, 0, None),       # 4  repeat#1 = repeat#1 - 1
        ("acquire", 6, None, 0, 1),      # 5  hold kv: opens scope 1
        ("run", 7, None, 1, None),       # 6  decode 1
        ("acquire", 8, None, 1, 2),      # 7  hold kv2: opens scope 2
        ("run", 9, None, 2, None),       # 8  prefill 2
        ("exit", 10, None, 1, 2),        # 9  closes scope 2
        ("exit", 3, None, 0, 1),         # 10 closes scope 1, back to the repeat test
        ("branch", 12, 14, 0, None),     # 11 n < 1
        ("turn", 13, None, 0, None),     # 12
        ("set", 11, None, 0, None),      # 13 set n = n + 1
        ("branch", 15, 16, 0, None),     # 14 n > 0
        ("end", None, None, 0, None),    # 15 end;
        ("turn", 17, None, 0, None),     # 16
        ("end", None, None, 0, None),    # 17 the implicit end
    ]
    assert [(sc.id, sc.parent, sc.acquire, sc.reentry, sc.exit, sc.pools) for sc in s.scopes] == [
        (0, None, None, None, None, ()),
        (1, 0, 5, 5, 10, ("kv",)),
        (2, 1, 7, 7, 9, ("kv2",)),
    ]
    assert [(a.name, a.origin, a.type) for a in s.attrs] == [("n", "let", "int"), ("repeat#1", "internal", "int")]
    assert s.entry == 0


def test_hold_clauses_normalise():
    src = """\
pool kv { cap 8; block 2; admit via gpu; }
stage gpu { }
session s {
  hold kv 4 { turn; }
  hold kv need 4 { turn; }
  hold kv take 2 { turn; }
  hold kv need 4 take 0 reuse 2 { turn; }
  hold kv reserve (2 + 2) { turn; }
}
workload { 1 x s; }
"""
    s = load_text(src).program.sessions[0]
    items = [st.hold.items[0] for st in s.states if st.kind == "acquire"]

    def v(e):
        return None if e is None else (e.v if isinstance(e, ir.Num) else "expr")

    assert [(v(i.need), v(i.take), v(i.reuse)) for i in items] == [
        (4, 4, None),      # `P E` is reserve: need and take E
        (4, 4, None),      # need alone: take defaults to the need
        (2, 2, None),      # take alone: need defaults to the take
        (4, 0, 2),
        ("expr", "expr", None),
    ]


def test_defaults_are_explicit_in_the_ir():
    p = load_text("pool kv { cap 8; }\nstage gpu { }\nworkload { }\n").program
    kv = p.pools[0]
    assert (kv.block, kv.admit_via, kv.requeue, kv.hol) == (1, None, "front", "block")
    assert kv.queue == ir.Order(tie=ir.Tie(event="arrived"))
    assert kv.victim == ir.Order(tie=ir.Tie(event="admitted", desc=True))  # lifo
    assert kv.evict == ir.Order(tie=ir.Tie(event="released"))  # lru
    assert p.stages[0].serve == ir.Order(tie=ir.Tie(event="admitted"))


def test_orders_and_constants():
    src = """\
const BS = 2 * 2;
const T = BS + 0.5;
pool kv { cap 3 * BS; block BS; queue (desc x, arrived); preempt (x, desc admitted); evict (desc size, released); }
pool p2 { preempt none; }
stage gpu { cost 1ms * T; }
session s { let x = 1; hold kv 1 { prefill 1; } }
workload { 1 x s every 1.5ms; }
"""
    p = load_text(src).program
    assert p.consts == (("BS", 4), ("T", 4.5))
    kv, p2 = p.pools
    assert kv.cap == 12 and kv.block == 4
    assert kv.queue.tie == ir.Tie(event="arrived") and kv.queue.keys[0].desc
    assert kv.victim.tie == ir.Tie(event="admitted", desc=True) and not kv.victim.keys[0].desc
    assert kv.evict.keys[0].desc and kv.evict.tie.event == "released"
    assert p2.victim is None
    assert expr_text(p.stages[0].cost) == "1000000 * 4.5"  # constants folded, durations in ns ticks
    assert p.workload[0].arrival == ir.ArriveEvery(period=1_500_000)


def test_arrival_processes():
    src = """\
stage gpu { }
session s { turn; }
workload {
  1 x s;
  2 x s every 2s;
  3 x s poisson 0.5/s seed 7;
  1 x s poisson 2/ms;
  1 x s trace "arrivals.csv";
  1 x s at 10us;
}
"""
    w = load_text(src).program.workload
    assert [l.count for l in w] == [1, 2, 3, 1, 1, 1]
    assert w[0].arrival is None
    assert w[1].arrival == ir.ArriveEvery(period=2_000_000_000)
    assert w[2].arrival == ir.ArrivePoisson(rate=0.5, seed=7)
    assert w[3].arrival == ir.ArrivePoisson(rate=2000.0, seed=0)
    assert w[4].arrival == ir.ArriveTrace(path="arrivals.csv")
    assert w[5].arrival == ir.ArriveAt(time=10_000)


def test_hidden_spreads_by_data_flow_only():
    src = """\
pool kv { cap 8; }
stage gpu { }
session s {
  draw o in 1..3 hidden;
  let a = o + 1;
  let b = 0;
  set b = a * 2;
  let c = 0;
  if o > 1 {
    set c = 1;
  }
  decode o;
}
workload { 1 x s; }
"""
    attrs = {a.name: a.hidden for a in load_text(src).program.sessions[0].attrs}
    assert attrs == {"o": True, "a": True, "b": True, "c": False}


def test_keywords_are_names_elsewhere():
    src = """\
pool kv { cap 8; block 2; }
stage gpu { }
session s(x = 1) {
  let block = 1;
  let front = x + block;
  let hidden = 2;
  draw full in 1..2;
  hold kv reserve (block * 2) {
    decode front growing kv;
  } keep (kv hidden);
}
workload { 1 x s(x=2); }
"""
    names = [a.name for a in load_text(src).program.sessions[0].attrs]
    assert names == ["x", "block", "front", "hidden", "full"]


def test_automaton_table():
    from serq.ir.util import automaton_table

    assert automaton_table(load_text(SMALL, "small.sq").program) == """\
session s: entry 0; attributes: n, repeat#1

state  kind     scope  next  does
-----  -------  -----  ----  --------------------------
0      arrive   0      1
1      set      0      2     n = 0
2      set      0      3     repeat#1 = 2
3      branch   0      4     if repeat#1 > 0 else -> 11
4      set      0      5     repeat#1 = repeat#1 - 1
5      acquire  0      6     opens 1: kv need 1 take 1
6      run      1      7     decode 1 on gpu
7      acquire  1      8     opens 2: kv2 need 1 take 1
8      run      2      9     prefill 2 on gpu
9      exit     1      10    closes 2
10     exit     0      3     closes 1
11     branch   0      12    if n < 1 else -> 14
12     turn     0      13
13     set      0      11    n = n + 1
14     branch   0      15    if n > 0 else -> 16
15     end      0
16     turn     0      17
17     end      0

scope  parent  pools  acquire  reentry  exit  keep
-----  ------  -----  -------  -------  ----  ----
0
1      0       kv     5        5        10
2      1       kv2    7        7        9
"""


def test_ir_expressions_print_back_as_source():
    from serq.ir.util import expr_text

    src = "session s(a, b, c) {\n  let x = (a - (b - c)) * -(a + 1) / 2 + min(a, b) + (if a > b then 1 else 2);\n}\n"
    e = load_text(src).program.sessions[0].states[1].e
    assert expr_text(e) == "(a - (b - c)) * -(a + 1) / 2 + min(a, b) + (if a > b then 1 else 2)"


def test_the_ir_docs_excerpt_matches_the_compiled_json():
    # docs/ir.md shows state 11 of multiturn_chat.sq as JSON: its positions
    # must be the ones the compiler writes (they drift when the file changes)
    import json
    import re

    doc = (ROOT / "docs" / "ir.md").read_text()
    excerpt = doc[doc.index("The JSON of state 11 starts:"):]
    excerpt = excerpt[: excerpt.index("## ")]
    shown = [tuple(map(int, m)) for m in re.findall(r'"at": \[(\d+), (\d+)\]', excerpt)]
    st = json.loads(load_path(ROOT / "instances" / "multiturn_chat.sq").program.to_json())["sessions"][0]["states"][11]
    item = st["hold"]["items"][0]
    assert shown == [tuple(item["reuse"]["at"]), tuple(item["take"]["at"]), tuple(item["at"]), tuple(st["at"])]


def test_the_docs_instance_table_lists_every_instance():
    import re

    doc = (ROOT / "docs" / "theorem.md").read_text()
    listed = set(re.findall(r"^\| `([a-z_]+)\.sq` \|", doc, re.M))
    assert listed == {p.stem for p in INSTANCES}
