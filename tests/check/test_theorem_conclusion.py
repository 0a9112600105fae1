"""`--theorem` checks the seed's conclusion, every ADMITTED session
completes: a session that can never be admitted is a finding of its own
(with its witness and the gate that refuses it), never `THEOREM VIOLATED`;
and it does not hide a real counterexample elsewhere."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from serq.cli.exits import EXIT_CODES
from serq.cli import main
from serq.check.model import Checks, SerqModel
from serq.check.explore import explore
from serq.lang.load import compile_source
from serq.check.theorem import check_theorem

ROOT = Path(__file__).resolve().parents[2]

# theorem.sq's chat behind a gate that a pool of cap 8 never opens: every
# hypothesis holds (the solo runs make the pool infinite)
GATED = """
pool kv { cap 8; block 2; admit via gpu; preempt lifo; }
stage gpu { budget 4; serve (admitted); }
session chat {
  draw prompt in {2, 3};
  let max_out = 3;
  draw o in 1..max_out hidden;
  let g = 0;
  hold kv reserve (prompt + g) admit if (free(kv) >= 10) {
    prefill (prompt + g) growing kv;
    decode (o - 1 - g) growing kv progress g;
  }
  end;
}
workload { 2 x chat; }
check completes;
"""

# a session never admitted (and the one queued behind it), and elsewhere a
# big session that preempts itself for ever when it draws n = 6
MIXED = """
pool kv { cap 4; block 1; admit via gpu; preempt lifo; }
stage gpu { budget 2; serve (admitted); }
session big {
  draw n in {1, 6};
  hold kv reserve 1 { prefill n growing kv; }
  end;
}
session never {
  hold kv reserve 1 admit if (free(kv) >= 100) { prefill 1 growing kv; }
  end;
}
workload { 1 x big; 1 x never; }
"""


def program(text: str):
    prog, _ = compile_source(text)
    return prog


def test_never_admitted_is_its_own_finding(tmp_path, capsys):
    f = tmp_path / "gated.sq"
    f.write_text(GATED)
    code = main(["explore", "--theorem", str(f), "--no-timing", "-q"])
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert code == EXIT_CODES["deadlock"] != EXIT_CODES["theorem"], first
    gate = "its `admit if free(kv) >= 10` (line 9) is false (its pools would fit: `kv` 1 block of 4 obtainable)"
    assert first == (f"never admitted: chat#1 is not admitted: {gate}; chat#2 is behind chat#1, the head of "
                     f"`kv`'s queue (`hol block`); at the head it would be refused too: {gate}; every admitted "
                     "session completes: the theorem's conclusion holds; the deadlock below is the witness")
    # the deadlock diagnosis's own words, from the kernel's admission: the finding and the trace agree
    assert "\n  chat#1 is not admitted: " + gate + "\n" in out
    assert "THEOREM VIOLATED" not in out
    assert "\ndeadlock: no action is applicable" in out and "\nreplay: " in out


def test_never_admitted_library_call():
    hs, result, line, code = check_theorem(program(GATED))
    assert all(h.holds for h in hs)
    assert result.verdict == "deadlock" and code == 10 and line.startswith("never admitted: ")


def test_a_cut_second_search_keeps_the_finding(monkeypatch):
    # the search with never-admitted states counted as done cut by a bound:
    # the sessions never admitted are still reported, the conclusion as unknown
    import serq.check.theorem as theorem

    def explore_cut(prog, checks=None, **kw):
        return explore(prog, checks=checks, **(dict(kw, max_states=1) if isinstance(checks, Checks) else kw))

    monkeypatch.setattr(theorem, "explore", explore_cut)
    hs, result, line, code = check_theorem(program(GATED))
    assert result.verdict == "bound" and code == EXIT_CODES["bound"]
    assert line.startswith("never admitted: chat#1 is not admitted: ")
    assert line.endswith("; no violation within the bound: the theorem's conclusion could not be checked fully")


def test_admitted_sessions_complete_on_the_engine():
    # a state whose sessions left all wait for an admission they never had
    # counts as done: the gated instance then passes, on every engine
    prog = program(GATED)
    ch = replace(Checks.of_program(prog, ["completes"]), admitted=True)
    for kw in ({}, {"exact": True}, {"workers": 2}, {"partitions": 2}):
        r = explore(prog, checks=ch, **kw)
        assert r.verdict == "pass", (kw, r.message)
        assert r.stats.distinct == 43
    assert explore(prog).verdict == "deadlock"


def test_a_session_never_admitted_does_not_hide_a_counterexample():
    prog = program(MIXED)
    assert explore(prog).verdict == "deadlock"  # the first one found: never#2 at the head of the queue
    hs, result, line, code = check_theorem(prog)
    assert result.verdict == "livelock" and code == 11
    assert line == "hypothesis H2 (reserve), H3 (fits) fail; the counterexample below is what they prevent"


def test_unadmitted_states():
    prog = program(MIXED)
    sm = SerqModel(prog)
    s0 = sm.m.initial_state()
    assert not sm.unadmitted(s0)  # nobody waits yet: arrivals to come
    r = explore(prog)
    last = r.trace[-1].state
    assert sm.unadmitted(last)


def test_a_need_beyond_the_pool_is_named(tmp_path, capsys):
    f = tmp_path / "big.sq"
    f.write_text(GATED.replace(" admit if (free(kv) >= 10)", "").replace("reserve (prompt + g)", "reserve 10"))
    code = main(["explore", "--theorem", str(f), "--no-timing", "-q"])
    first = capsys.readouterr().out.splitlines()[0]
    assert code == 10
    assert first.startswith("never admitted: chat#1 is not admitted: `kv` is short: it needs 5 blocks (10 units) "
                            "and can obtain 4 blocks (free 8 + evictable 0 units)")
    assert "; hypothesis H3 (fits) fails, yet every admitted session completes" in first


def test_theorem_doc_exit_codes():
    text = (ROOT / "docs" / "theorem.md").read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| `interrupted: ...` / `failed: ...`"))
    assert re.search(r"\| (\d+) / (\d+) \|", row).groups() == (str(EXIT_CODES["interrupted"]),
                                                               str(EXIT_CODES["failed"]))
    row = next(ln for ln in text.splitlines() if ln.startswith("| `never admitted: ...`"))
    assert f"| {EXIT_CODES['deadlock']} |" in row


def test_theorem_refuses_check(tmp_path, capsys):
    f = tmp_path / "gated.sq"
    f.write_text(GATED)
    assert main(["explore", "--theorem", str(f), "--check", "deadlock"]) == 2
    err = capsys.readouterr().err
    assert "error[E012]: --check cannot be honoured with --theorem: the theorem checks its own conclusion" in err
    assert "drop --check" in err


def test_refusal_words_per_waiting_session():
    # never#2 arrived first and heads the queue: big#1 waits behind it
    from serq.check.theorem import never_admitted

    prog = program(MIXED)
    assert never_admitted(prog, explore(prog)) == [
        "big#1 is behind never#2, the head of `kv`'s queue (`hol block`)",
        "never#2 is not admitted: its `admit if free(kv) >= 100` (line 10) is false (its pools would fit: "
        "`kv` 1 block of 4 obtainable)"]
    # a deadlock of an admitted session is no such finding
    hol = ROOT / "instances" / "join_in_hold.sq"
    from serq.lang.load import load_path

    p = load_path(hol, explorer=True).program
    assert never_admitted(p, explore(p)) is None
