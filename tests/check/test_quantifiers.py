"""Quantifiers over sessions in `check invariant` and `check sometimes`
(docs/language.md, "Quantifiers over sessions"; docs/explorer.md).

Cross-checked by brute force (tests/quant_brute.py): a plain
breadth-first search over the simulator's raw states, each property a
Python function of the sessions present, `preempted` followed along the
paths. Per property: the explorer's verdict and the length of its
shortest counterexample or witness are the brute force's, with and
without symmetry; and on every state the explorer reaches, the kernel's
value of each property is the Python one. On instances with `turn`,
`spawn`/`join`, preemption and a shared prefix.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from explorer.visitor import Visitor, visit
from serq.check.explore import explore
from serq.check.sometimes import NEVER, WITNESS, WitnessModel, search_witnesses
from serq.lang.load import load_text
from serq.semantics.kernel.abi import CO_KEEP_POS
from tests.fixtures import PREFIX_CHAT, explore_with_line
from tests.quant_brute import first_depths, views

ROOT = Path(__file__).resolve().parents[2]
INST = ROOT / "instances"


def bare(path: Path) -> str:
    """An instance's text without its `check` lines."""
    return re.sub(r"(?m)^check .*$", "", path.read_text())


# (name, source, [(condition, the same in Python over `views`)])
CASES = [
    ("decode_preempt", bare(INST / "decode_preempt.sq"), [
        ("forall chat c: c.g <= c.max_out", lambda v: all(c.g <= c.max_out for c in v["chat"])),
        ("forall chat c: c.g <= 1", lambda v: all(c.g <= 1 for c in v["chat"])),
        ("count(chat c where c.preempted) <= 0", lambda v: sum(c.preempted for c in v["chat"]) <= 0),
        ("exists chat c: c.preempted and c.g > 0", lambda v: any(c.preempted and c.g > 0 for c in v["chat"])),
        ("exists chat c: c.preempted and c.decoding", lambda v: any(c.preempted and c.decoding for c in v["chat"])),
        ("forall chat c: c.held(kv) > 0", lambda v: all(c.held["kv"] > 0 for c in v["chat"])),
        ("count(chat) == 2 and (forall chat a: exists chat b: b.held(kv) > a.held(kv) or b.sid_ok)", None),
        ("exists chat c: c.held(kv) > 8", lambda v: any(c.held["kv"] > 8 for c in v["chat"])),
        ("count(chat c where c.waiting) + count(chat c where c.prefilling or c.decoding) == count(chat)",
         lambda v: sum(c.waiting for c in v["chat"]) + sum(c.prefilling or c.decoding for c in v["chat"])
         == len(v["chat"])),
    ]),
    ("multiturn_chat", bare(INST / "multiturn_chat.sq"), [
        ("forall chat c: c.g < c.max_out", lambda v: all(c.g < c.max_out for c in v["chat"])),
        ("forall chat c: c.thinking or c.ctx == 0", lambda v: all(c.thinking or c.ctx == 0 for c in v["chat"])),
        ("exists chat c: c.thinking and c.ctx > 0", lambda v: any(c.thinking and c.ctx > 0 for c in v["chat"])),
        ("count(chat c where c.o == 2 and c.decoding) == 2",
         lambda v: sum(c.o == 2 and c.decoding for c in v["chat"]) == 2),
        ("exists chat c: c.preempted", lambda v: any(c.preempted for c in v["chat"])),
    ]),
    ("agent_subagents", bare(INST / "agent_subagents.sq"), [
        ("count(sub) <= 2", lambda v: len(v["sub"]) <= 2),
        ("forall agent a: a.joining or count(sub) == 0",
         lambda v: all(a.joining or not v["sub"] for a in v["agent"])),
        ("forall sub s: s.held(kv) <= s.p + 1", lambda v: all(s.held["kv"] <= s.p + 1 for s in v["sub"])),
        ("count(sub s where s.waiting) == 2", lambda v: sum(s.waiting for s in v["sub"]) == 2),
        ("exists sub s: s.prefilling and s.held(slots) == 1",
         lambda v: any(s.prefilling and s.held["slots"] == 1 for s in v["sub"])),
        ("count(sub s where s.held(slots) > 0) <= 1", lambda v: sum(s.held["slots"] > 0 for s in v["sub"]) <= 1),
        ("exists agent a: a.thinking", lambda v: any(a.thinking for a in v["agent"])),
    ]),
    ("prefix_chat", PREFIX_CHAT, [
        ("exists chat c: c.preempted and c.decoding", lambda v: any(c.preempted and c.decoding for c in v["chat"])),
        ("forall chat c: c.held(kv) <= 8", lambda v: all(c.held["kv"] <= 8 for c in v["chat"])),
        ("count(chat c where c.held(kv) > 0) <= 1", lambda v: sum(c.held["kv"] > 0 for c in v["chat"]) <= 1),
        ("exists chat a: exists chat b: a.preempted and not b.preempted and b.held(kv) > 0",
         lambda v: any(a.preempted and not b.preempted and b.held["kv"] > 0 for a in v["chat"] for b in v["chat"])),
    ]),
]
# a nested quantifier whose variables meet: every chat holds at most what the fullest one holds
CASES[0][2][6] = ("count(chat) == 2 and (forall chat a: exists chat b: b.held(kv) >= a.held(kv))",
                  lambda v: len(v["chat"]) == 2 and all(any(b.held["kv"] >= a.held["kv"] for b in v["chat"])
                                                        for a in v["chat"]))


def program(text: str):
    return load_text(text, "<test>", explorer=True).program


class Collect(Visitor):
    def __init__(self):
        self.states = []

    def on_state(self, state, fp, parent, ai, depth):
        self.states.append(state)


@pytest.mark.parametrize("name,src,conds", CASES, ids=[c[0] for c in CASES])
def test_brute_force_agrees(name, src, conds):
    prog = program(src + "".join(f"check sometimes {c};\n" for c, _ in conds))
    false_at, true_at, _n = first_depths(prog, [f for _, f in conds])
    # the case means something: a property that holds everywhere, and one that fails somewhere and holds somewhere
    assert any(false_at[k] is None for k in range(len(conds))), name
    assert any(false_at[k] and true_at[k] is not None for k in range(len(conds))), name
    for sym in (True, False):
        # as `sometimes`: a witness of the shortest length, or never
        for k, w in enumerate(search_witnesses(prog, symmetry=sym)):
            if true_at[k] is None:
                assert w.verdict == NEVER, (conds[k][0], sym, w.head)
            else:
                assert w.verdict == WITNESS and len(w.result.trace) - 1 == true_at[k], (conds[k][0], sym, w.head)
        # as an invariant: a shortest counterexample, or pass
        for k, (c, _f) in enumerate(conds):
            r = explore(program(src + f"check invariant {c};\n"), symmetry=sym, graph_limit=0)
            if false_at[k] is None:
                assert r.verdict == "pass", (c, sym, r.message)
            else:
                assert r.verdict == "violation" and r.kind == "invariant", (c, sym, r.message)
                assert len(r.trace) - 1 == false_at[k], (c, sym, r.message, false_at[k])
    # every state the explorer reaches: the kernel's value is the Python one (`preempted`
    # read from the previous preemption position the states keep)
    wm = WitnessModel(prog, index=0)
    v = Collect()
    assert visit(wm, v).verdict == "pass"
    for rs in v.states:
        s = rs.tuple()
        if s.fault is not None:
            continue
        marked = frozenset(i for i, x in enumerate(s.sessions) if x.last_pos != -1)
        vs = views(prog, s, marked)
        for k, (c, f) in enumerate(conds):
            assert wm.m.engine.sometimes(s, k)[0] == f(vs), (c, s)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("line,code,words,col", [
    ("check invariant forall caht c: c.g <= c.max_out;", "E103", "did you mean `chat`", 17),
    ("check invariant forall chat c: g <= 3;", "E302", "`c.g`", 32),
    ("check invariant forall chat c: c.gg <= 3;", "E100", "unknown name `gg` of session `chat`", 32),
    ("check invariant forall chat c: c.g;", "E200", "must be a condition", 32),
    ("check invariant count(chat c where c.g) <= 1;", "E200", "must be a condition", 36),
    ("check sometimes forall chat c: exists chat c: c.g > 1;", "E105", "already bound", 32),
    ("check invariant c.g > 1;", "E100", "unknown name `c`", 17),
    ("check invariant forall chat c: c.held(kb) > 1;", "E101", "unknown pool `kb`", 32),
    ("check invariant forall chat c: c.held > 0;", "E107", "takes a pool", 32),
    ("check invariant forall chat c: c.waiting(kv);", "E104", "only fact", 32),
    ("check invariant count(chat) + true;", "E200", "needs numbers", 31),
    ("check invariant forall chat c: c;", "E200", "is a session, not a value", 32),
    ("check invariant counts(chat c where c.waiting) <= 1;", "E104", "`count` only", 17),
    ("check invariant forall chat c: c.g <= 1 and;", "E001", "expected an expression", 44),
    ("check sometimes exists chat c c.g > 1;", "E001", "`:`", 31),
    ("check invariant count(chat where preempted) <= 2;", "E001", "`count(chat x where x.preempted ...)`", 34),
    ("check ttft <= count(chat);", "E401", "`count(chat)` is not a constant", 15),
    ("check invariant " + "".join(f"forall chat a{i}: " for i in range(9)) + "true;", "E004", "nested more than 8",
     17 + 16 * 8),
])
def test_bad_quantifiers_are_located(tmp_path, capsys, line, code, words, col):
    err, n = explore_with_line(tmp_path, capsys, line)
    assert f"bad.sq:{n}:{col}:" in err and "^" in err and f"error[{code}]" in err and words in err, err


@pytest.mark.parametrize("where,code", [
    ("  assert forall chat c: c.g <= 1;\n", "E304"),
    ("  assert count(chat) <= 2;\n", "E304"),
    ("  let n = c.g;\n", "E100"),
])
def test_quantifiers_are_read_at_check_only(tmp_path, capsys, where, code):
    from serq.cli import main

    src = (INST / "decode_preempt.sq").read_text().replace("  assert g == o - 1;", where.rstrip("\n"))
    p = tmp_path / "bad.sq"
    p.write_text(src)
    assert main(["explore", str(p), "-q"]) == 2
    err = capsys.readouterr().err
    assert f"error[{code}]" in err and "@session" in err and "^" in err, err


def test_an_admission_moment_refuses_them_too(tmp_path, capsys):
    from serq.cli import main

    src = (INST / "decode_preempt.sq").read_text().replace(") {\n    prefill", ") admit if count(chat) < 2 {\n    prefill", 1)
    p = tmp_path / "bad.sq"
    p.write_text(src)
    assert main(["explore", str(p), "-q"]) == 2
    err = capsys.readouterr().err
    assert "error[E304]" in err and "@admit(kv)" in err, err


# ---------------------------------------------------------------- the plain-Python kernel

_PLAIN = """
import json, sys
from serq.check.explore import explore
from serq.check.sometimes import search_witnesses
from serq.lang.load import load_text
out = []
for text in json.loads(sys.argv[1]):
    prog = load_text(text, "<t>", explorer=True).program
    r = explore(prog, graph_limit=0)
    out.append([r.verdict, r.message, r.stats.distinct, len(r.trace)])
    out.append([[w.verdict, w.message] for w in search_witnesses(prog)])
print(json.dumps(out))
"""


def test_the_same_under_numba_disable_jit():
    """The kernel's quantifier ops run as plain Python (NUMBA_DISABLE_JIT=1)
    to the same verdicts, messages (the session named), counts and trace
    lengths as compiled."""
    import json
    import os
    import subprocess
    import sys

    texts = [(INST / "quantifiers.sq").read_text(),
             bare(INST / "decode_preempt.sq") + "check invariant forall chat c: c.g <= 1;\n"
             "check sometimes count(chat c where c.decoding and c.held(kv) >= 4) == 2;\n",
             bare(INST / "agent_subagents.sq") + "check invariant count(sub s where s.held(slots) > 0) <= 1;\n"
             "check sometimes exists sub s: s.waiting and (forall agent a: a.joining);\n"]
    env = dict(os.environ, NUMBA_DISABLE_JIT="1")
    p = subprocess.run([sys.executable, "-c", _PLAIN, json.dumps(texts)], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    plain = json.loads(p.stdout)
    jit = []
    for text in texts:
        prog = program(text)
        r = explore(prog, graph_limit=0)
        jit.append([r.verdict, r.message, r.stats.distinct, len(r.trace)])
        jit.append([[w.verdict, w.message] for w in search_witnesses(prog)])
    assert plain == jit
    assert [x[0] for x in jit[::2]] == ["pass", "violation", "violation"]
    assert "violated by chat#" in jit[2][1]
    assert [w[0] for x in jit[1::2] for w in x] == ["witness"] * 3 and "met by sub#" in jit[5][0][1]


# ---------------------------------------------------------------- the counterexample and the witness

def test_a_forall_violation_names_the_session_in_text_json_page_and_replay(tmp_path, capsys):
    import json

    from serq.cli import main

    p = tmp_path / "v.sq"
    p.write_text(bare(INST / "decode_preempt.sq") + "check invariant forall chat c: c.g <= 1;\n")
    n = p.read_text().count("\n")
    head = f"violation (invariant): invariant at line {n} is violated by chat#1"
    assert main(["explore", str(p), "--no-timing", "-q"]) == 12
    out = capsys.readouterr().out
    assert out.splitlines()[0] == head
    path = next(x for x in out.splitlines() if x.startswith("replay: ")).split()[1]
    assert len(path.split("/")) - 1 == 4  # the brute force's shortest (test_brute_force_agrees)
    assert main(["explore", str(p), "--json", "--no-timing", "-q"]) == 12
    d = json.loads(capsys.readouterr().out)
    assert d["kind"] == "invariant" and d["message"].endswith("violated by chat#1") and d["replay_path"] == path
    assert main(["explore", str(p), "--replay", path, "--no-timing"]) == 12
    assert capsys.readouterr().out.splitlines()[0] == head
    page = tmp_path / "v.html"
    assert main(["explore", str(p), "--html", str(page), "-q"]) == 12
    assert "violated by chat#1" in page.read_text()


def test_the_example_instance_witness_names_the_chat(capsys):
    from serq.cli import main

    assert main(["explore", str(INST / "quantifiers.sq"), "--no-timing", "-q"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "pass: no violation in 31 distinct states"
    assert ("witness (sometimes at line 37: exists chat c: c.preempted and c.g > 0): a shortest witness, "
            "5 steps, met by chat#2") in out
    assert main(["explore", str(INST / "quantifiers.sq"), "--replay", "0/0/0/0/0/0", "--no-timing"]) == 0
    assert "its last state meets `sometimes` at line 37" in capsys.readouterr().out


def test_preempted_keeps_positions_only_where_read(tmp_path):
    """`x.preempted` makes the states keep the preemption positions; a
    list of properties that does not read it keeps none (its count is
    unchanged)."""
    base = bare(INST / "decode_preempt.sq") + "check deadlock;\n"
    plain = explore(program(base + "check invariant count(chat c where c.waiting) <= 2;\n"), graph_limit=0)
    kept = explore(program(base + "check invariant count(chat c where c.preempted) <= 1;\n"), graph_limit=0)
    assert plain.verdict == kept.verdict == "pass"
    assert plain.stats.distinct == explore(program(base), graph_limit=0).stats.distinct
    assert kept.stats.distinct >= plain.stats.distinct
    from serq.check.model import SerqModel

    assert not SerqModel(program(base + "check invariant count(chat c where c.waiting) <= 2;\n")).checks.positions
    assert SerqModel(program(base + "check invariant count(chat c where c.preempted) <= 1;\n")).checks.positions
    witness = WitnessModel(program(base + "check sometimes exists chat c: c.preempted;\n"), index=0)
    assert witness.checks.positions and witness.rows.opts & CO_KEEP_POS


def test_an_edited_ir_is_validated_too(tmp_path, capsys):
    """A `.ir.json` whose quantifier lost its body, or names an unknown
    program, is refused with the error located in the source it names."""
    import json

    from serq.cli import main

    src = tmp_path / "q.sq"
    src.write_text((INST / "quantifiers.sq").read_text())
    out = tmp_path / "q.ir.json"
    assert main(["compile", str(src), "-o", str(out)]) == 0
    d = json.loads(out.read_text())
    inv = next(c for c in d["checks"] if c["kind"] == "invariant")
    assert inv["e"]["k"] == "quant" and inv["e"]["q"] == "forall"
    inv["e"]["e"] = None
    out.write_text(json.dumps(d))
    assert main(["explore", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "error[E407]" in err and "malformed quantifier" in err and "q.sq:35:" in err, err
    inv["e"]["e"], inv["e"]["program"] = {"k": "bool", "v": True}, "caht"
    out.write_text(json.dumps(d))
    assert main(["explore", str(out), "-q"]) == 2
    assert "error[E103]" in capsys.readouterr().err
