"""`check sometimes C;`: reachability witnesses (serq/check/sometimes.py,
docs/explorer.md "Properties: witnesses").

Pinned: each line's verdict, its shortest witness (golden file), the
witness search's distinct-state count, the exit code, the JSON (its
schema), the replay of a witness, how `sometimes` sits beside the other
verdicts and the limits, and the bad inputs (located errors).

Cross-checked by brute force: a plain breadth-first search over the
simulator's step function (`Model.transitions`, the raw states: no
canonical form, no symmetry), each condition evaluated in Python from the
state's fields (not by the kernel's evaluator): the shortest witness's
length must be the explorer's, and the set of pool totals of the states
meeting the condition must be the one the explorer's states give (its
states enumerated by the sequential engine with a visitor, the condition
judged by the kernel). On instances with `turn`, `spawn`/`join`,
preemption and a shared prefix.
"""

from __future__ import annotations

import json
from collections import deque
from pathlib import Path

import pytest

from explorer.visitor import Visitor, visit
from serq.check.sometimes import NEVER, WITNESS, WitnessModel, search_witnesses
from serq.cli import main
from serq.lang.load import load_text
from serq.semantics.model import Model
from tests.fixtures import PREFIX_CHAT as SHARED_PREFIX_CHAT, explore_with_line

ROOT = Path(__file__).resolve().parents[2]
INST = ROOT / "instances"
GOLDEN = ROOT / "tests" / "golden"


def program(text: str):
    loaded = load_text(text, "<test>", explorer=True)
    assert not [d for d in loaded.warnings if d.is_error]
    return loaded.program


def golden(text: str, name: str) -> None:
    """`text` is the golden file `name` (written with SERQ_UPDATE_GOLDEN=1)."""
    import os

    path = GOLDEN / name
    if os.environ.get("SERQ_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text(), f"output differs from {path}"


def with_lines(path: Path, *conds: str) -> str:
    return path.read_text() + "".join(f"check sometimes {c};\n" for c in conds)


# ---------------------------------------------------------------- the example instance

def test_the_example_instance(capsys):
    code = main(["explore", str(INST / "sometimes_preempt.sq"), "--no-timing", "-q"])
    out = capsys.readouterr().out
    assert code == 0
    heads = [x for x in out.splitlines() if x.startswith(("witness", "never", "pass"))]
    assert heads == [
        "pass: no violation in 31 distinct states",
        "witness (sometimes at line 33: free(kv) == 0): a shortest witness, 3 steps",
        "witness (sometimes at line 34: holders(kv) == 1 and waiting(kv) == 1 and cached(kv) > 0): "
        "a shortest witness, 5 steps"]
    assert out == (GOLDEN / "sometimes_preempt.txt").read_text()
    # the witness searches stop at their witness: their own counts
    assert "stats: generated=6 distinct=5 queue=1 max_depth=3" in out
    assert "stats: generated=13 distinct=12 queue=3 max_depth=5" in out


def test_never_is_exit_20_and_explores_everything(tmp_path, capsys):
    p = tmp_path / "never.sq"
    p.write_text(with_lines(INST / "decode_preempt.sq", "allocated(kv) > 8", "free(kv) == 0"))
    code = main(["explore", str(p), "--no-timing", "-q"])
    out = capsys.readouterr().out
    assert code == 20
    golden(out, "sometimes_never.txt")
    assert ("never (sometimes at line 34: allocated(kv) > 8): no reachable state meets it (31 distinct "
            "states, every reachable state explored)") in out
    # the never search explored the main search's 31 states (no positions kept by either here)
    assert out.count("stats: generated=36 distinct=31 queue=0 max_depth=9") == 2


def test_json_and_schema(capsys):
    import jsonschema

    from serq import formats

    code = main(["explore", str(INST / "sometimes_preempt.sq"), "--json", "--no-timing", "-q"])
    d = json.loads(capsys.readouterr().out)
    jsonschema.validate(d, formats.schema(formats.EXPLORE))
    assert code == 0 and d["verdict"] == "pass"
    got = [(s["line"], s["verdict"], s["exit_code"], len(s["trace"]) - 1, s["replay_path"], s["stats"]["distinct"])
           for s in d["sometimes"]]
    assert got == [(33, "witness", 0, 3, "0/0/0/0", 5), (34, "witness", 0, 5, "0/0/0/0/0/0", 12)]
    last = d["sometimes"][1]["trace"][-1]["state"]["pools"][0]
    assert last["free"] == 0 and last["cached"] > 0 and len(last["queue"]) == 1


def test_a_witness_replays(capsys):
    code = main(["explore", str(INST / "sometimes_preempt.sq"), "--replay", "0/0/0/0/0/0", "--no-timing"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0] == "pass: replayed 5 step(s); its last state meets `sometimes` at lines 33, 34"
    code = main(["explore", str(INST / "sometimes_preempt.sq"), "--replay", "0/0/0", "--no-timing"])
    assert capsys.readouterr().out.splitlines()[0] == "pass: replayed 2 step(s)"


def test_the_page_shows_the_witness(tmp_path, capsys):
    page = tmp_path / "w.html"
    assert main(["explore", str(INST / "sometimes_preempt.sq"), "--html", str(page), "-q"]) == 0
    html = page.read_text()
    assert "witness (sometimes at line 33" in html and "admit chat#1 (kv); admit chat#2 (kv)" in html


# ---------------------------------------------------------------- beside the other verdicts, and the limits

def test_a_deadlock_first_keeps_its_exit_code_and_the_witnesses_are_still_given(tmp_path, capsys):
    path = tmp_path / "deadlock.sq"
    path.write_text(with_lines(INST / "hol_none.sq", "waiting(kv) >= 2", "waiting(kv) > 100"))
    code = main(["explore", str(path), "--no-timing", "-q"])
    out = capsys.readouterr().out
    assert code == 10  # the deadlock's, not never's
    heads = [x.split(":")[0] for x in out.splitlines() if x.startswith(("deadlock:", "witness", "never"))]
    n = path.read_text().count("\n")
    assert heads == ["deadlock", f"witness (sometimes at line {n - 1}", f"never (sometimes at line {n}"]


def test_a_bound_cannot_say_never(tmp_path, capsys):
    text = with_lines(INST / "decode_preempt.sq", "allocated(kv) > 8", "free(kv) == 0")
    found = search_witnesses(program(text), max_states=10)
    assert [w.verdict for w in found] == ["bound", WITNESS]
    assert "cannot say never" in found[0].message and found[0].exit_code == 13
    path = tmp_path / "never.sq"
    path.write_text(text)
    code = main(["explore", str(path), "--max-states", "10", "--no-timing", "-q"])
    out = capsys.readouterr().out
    assert code == 13 and out.startswith("bound")


def test_the_first_line_without_a_witness_gives_the_exit_code():
    p = program(with_lines(INST / "decode_preempt.sq", "1 / (free(kv) - 8) == 0", "allocated(kv) > 8"))
    found = search_witnesses(p)
    assert [w.verdict for w in found] == ["violation", NEVER]
    assert found[0].result.kind == "error" and len(found[0].result.trace) == 1  # the initial state: free 8
    assert "cannot be evaluated: division by zero" in found[0].message
    from serq.check.sometimes import exit_code
    from explorer.result import Result

    assert exit_code(Result("pass", ""), found) == 12
    assert exit_code(Result("pass", ""), found[1:]) == 20
    assert exit_code(Result("deadlock", ""), found) == 10


def test_check_sometimes_selects_the_lines_alone(capsys):
    path = INST / "sometimes_preempt.sq"
    assert main(["explore", str(path), "--check", "deadlock", "--no-timing", "-q"]) == 0
    assert "witness" not in capsys.readouterr().out  # --check replaces the lines: sometimes not selected
    assert main(["explore", str(path), "--check", "sometimes", "--no-timing", "-q"]) == 0
    assert capsys.readouterr().out.count("witness (sometimes") == 2


def test_workers_and_partitions_give_the_same_witnesses(capsys):
    path = str(INST / "sometimes_preempt.sq")
    main(["explore", path, "--no-timing", "-q"])
    want = capsys.readouterr().out
    assert main(["explore", path, "--no-timing", "-q", "--workers", "2"]) == 0
    assert capsys.readouterr().out == want
    assert main(["explore", path, "--no-timing", "-q", "--partitions", "2"]) == 0
    assert capsys.readouterr().out == want


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("line,code,words", [
    ("check sometimes g > 0;", "E302", "session attribute"),
    ("check sometimes free(kv) + 1;", "E2", "condition"),
    ("check sometimes free(kvv) == 0;", "E101", "did you mean `kv`"),
    ("check sometimes nreq > 0;", "E", "nreq"),
    ("check sometimes;", "E001", "expected"),
])
def test_bad_conditions_are_located(tmp_path, capsys, line, code, words):
    err, n = explore_with_line(tmp_path, capsys, line)
    assert f"bad.sq:{n}:" in err and "^" in err and f"error[{code}" in err and words in err, err


@pytest.mark.parametrize("flags,words", [
    (["--swarm", "2"], "--swarm"),
    (["--checkpoint", "CK"], "--checkpoint"),
])
def test_flags_that_cannot_search_witnesses_are_refused(tmp_path, capsys, flags, words):
    flags = [str(tmp_path / f) if f == "CK" else f for f in flags]
    assert main(["explore", str(INST / "sometimes_preempt.sq"), "-q", *flags]) == 2
    err = capsys.readouterr().err
    assert "E012" in err and words in err and "shortest" in err


def test_check_sometimes_without_a_line_is_refused(capsys):
    assert main(["explore", str(INST / "decode_preempt.sq"), "--check", "sometimes", "-q"]) == 2
    assert "no `check sometimes` line" in capsys.readouterr().err


def test_fmt_keeps_the_line():
    from serq.lang.fmt import format_program_source

    src = (INST / "sometimes_preempt.sq").read_text()
    assert format_program_source(src) == src
    assert format_program_source(src.replace("check sometimes free(kv) == 0;", "check  sometimes (free(kv)==0) ;")) \
        == src


# ---------------------------------------------------------------- brute force

def totals(m: Model, state, pool: str) -> dict:
    """A pool's totals read from the state's fields (docs/language.md)."""
    i = [p.name for p in m.pools].index(pool)
    p = state.pools[i]
    holds = [h for s in state.sessions for h in s.holds if h.pool == i]
    return {"free": p.free, "cached": sum(e.units for e in p.cache), "waiting": len(p.queue),
            "holders": len(holds), "allocated": sum(h.own for h in holds)}


PREFIX_CHAT = SHARED_PREFIX_CHAT + "check completes;\n"

# (name, source, the pool, [(condition, the same in Python over the totals)])
CASES = [
    ("decode_preempt", (INST / "decode_preempt.sq").read_text(), "kv", [
        ("free(kv) == 0", lambda t: t["free"] == 0),
        ("holders(kv) == 1 and waiting(kv) == 1 and cached(kv) > 0",
         lambda t: t["holders"] == 1 and t["waiting"] == 1 and t["cached"] > 0),
        ("allocated(kv) > 8", lambda t: t["allocated"] > 8),
    ]),
    ("agent_subagents", (INST / "agent_subagents.sq").read_text(), "slots", [
        ("holders(slots) == 2", lambda t: t["holders"] == 2),
        ("holders(slots) == 0 and waiting(slots) == 2", lambda t: t["holders"] == 0 and t["waiting"] == 2),
        ("free(slots) < 0", lambda t: t["free"] < 0),
    ]),
    ("multiturn_chat", (INST / "multiturn_chat.sq").read_text(), "kv", [
        ("cached(kv) >= 4 and holders(kv) == 2", lambda t: t["cached"] >= 4 and t["holders"] == 2),
        ("waiting(kv) == 1 and cached(kv) > 0", lambda t: t["waiting"] == 1 and t["cached"] > 0),
        ("free(kv) == 0", lambda t: t["free"] == 0),
    ]),
    ("prefix_chat", PREFIX_CHAT, "kv", [
        ("cached(kv) >= 2 and holders(kv) == 2", lambda t: t["cached"] >= 2 and t["holders"] == 2),
        ("waiting(kv) == 1 and holders(kv) == 1 and cached(kv) > 0",
         lambda t: t["waiting"] == 1 and t["holders"] == 1 and t["cached"] > 0),
        ("allocated(kv) + cached(kv) > 8", lambda t: t["allocated"] + t["cached"] > 8),
    ]),
]


def brute(prog, pool: str, preds, max_states: int = 400_000):
    """Plain BFS over the simulator's raw states: for each predicate, the
    depth of its first state (None: none), and the pool totals of every
    state meeting it."""
    m = Model(prog)
    s0 = m.initial_state()
    seen, q = {s0: 0}, deque([s0])
    first: list = [None] * len(preds)
    met: list[set] = [set() for _ in preds]
    while q:
        s = q.popleft()
        d = seen[s]
        if s.fault is None:
            t = totals(m, s, pool)
            for i, f in enumerate(preds):
                if f(t):
                    met[i].add(tuple(sorted(t.items())))
                    if first[i] is None:
                        first[i] = d
        if s.fault is not None:
            continue
        for _a, nxt, _ev in m.transitions(s):
            if nxt not in seen:
                seen[nxt] = d + 1
                q.append(nxt)
                assert len(seen) <= max_states, "too many raw states for a brute force"
    return first, met


class Collect(Visitor):
    """Every state the explorer's search reaches."""

    def __init__(self):
        self.states = []

    def on_state(self, state, fp, parent, ai, depth):
        self.states.append(state)


@pytest.mark.parametrize("name,src,pool,conds", CASES, ids=[c[0] for c in CASES])
def test_brute_force_agrees(name, src, pool, conds):
    text = src + "".join(f"check sometimes {c};\n" for c, _ in conds)
    prog = program(text)
    first, met = brute(prog, pool, [f for _, f in conds])
    found = search_witnesses(prog)
    for k, w in enumerate(found):
        if first[k] is None:
            assert w.verdict == NEVER, (conds[k][0], w.head)
            continue
        assert w.verdict == WITNESS and len(w.result.trace) - 1 == first[k], (conds[k][0], w.head, first[k])
        # the witness is a run of the simulator's step function, its last state meeting the condition
        m = Model(prog)
        s = m.initial_state()
        for st in w.result.trace[1:]:
            s = m.step(s, st.action)
        assert conds[k][1](totals(m, s, pool)) and not [conds[k][1](totals(m, st.state.tuple(), pool))
                                                          for st in w.result.trace[:-1]].count(True)
    # every reachable state of the explorer, judged by the kernel's evaluator: the same pool totals meet it
    wm = WitnessModel(prog, index=0)
    v = Collect()
    assert visit(wm, v).verdict == "pass"
    states = [s.tuple() for s in v.states]
    m = Model(prog)
    for k, (c, f) in enumerate(conds):
        got = {tuple(sorted(totals(m, s, pool).items())) for s in states
               if s.fault is None and wm.m.engine.sometimes(s, k)[0]}
        allt = {tuple(sorted(totals(m, s, pool).items())) for s in states if s.fault is None}
        assert got == {t for t in allt if f(dict(t))}, c
        assert got == met[k], c


def test_the_api_gives_the_witnesses():
    import serq

    r = serq.explore(str(INST / "sometimes_preempt.sq"))
    assert r.exit_code == 0 and [w.verdict for w in r.sometimes] == [WITNESS, WITNESS]
    assert [len(w.result.trace) - 1 for w in r.sometimes] == [3, 5]
    assert r.text(timing=False) == (GOLDEN / "sometimes_preempt.txt").read_text()
    assert [s["verdict"] for s in r.json()["sometimes"]] == [WITNESS, WITNESS]
    assert serq.explore(str(INST / "sometimes_preempt.sq"), checks="deadlock").sometimes == []
    with pytest.raises(ValueError, match="unknown property"):
        serq.sweep(str(INST / "sometimes_preempt.sq"), vary="BS=1..2", checks="sometimes")


def test_one_simulated_run_warns_it_does_not_search(capsys):
    assert main(["check", str(INST / "sometimes_preempt.sq")]) == 0
    err = capsys.readouterr().err
    assert err.count("warning[W514]") == 2 and "sometimes_preempt.sq:33:7:" in err
    main(["explore", str(INST / "sometimes_preempt.sq"), "-q"])
    assert "W514" not in capsys.readouterr().err


def test_a_sweep_says_it_does_not_search(capsys):
    assert main(["sweep", str(INST / "sometimes_preempt.sq"), "--vary", "BS=1..2"]) == 0
    assert "`check sometimes` (lines 33, 34) is not searched by serq sweep" in capsys.readouterr().err
