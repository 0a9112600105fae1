"""Why a waiting hold is not admitted: the deadlock diagnosis of `serq
explore`, the stalled sessions of `serq check` and the `--html` page say,
per waiting hold, which pool is short (what the hold needs, what it can
obtain, who holds the rest, whether it fits the pool alone) or which
`admit if` refuses it, from the admission's own evaluation."""

from __future__ import annotations

from pathlib import Path

from explorer.runtime.verdict import DEADLOCK, VIOLATION, exit_code
from serq.cli import main
from serq.check.model import SerqModel
from serq.check.explore import explore
from serq.lang.load import load_path, load_text
from serq.view.timeline import timeline_page

INST = Path(__file__).resolve().parents[2] / "instances"

JOIN_CHILD = ("child#2 is not admitted: `kv` is short: it needs 2 blocks (4 units) and can obtain 1 block "
              "(free 2 + evictable 0 units); parent#1 holds 6 units; it fits `kv` alone (4 blocks in all)")

# the hold waits in the queue of `seqs`, which has room; `kv` is short
SEQS_FREE = """\
pool kv { cap 8; block 2; admit via gpu; preempt lifo; }
pool seqs { cap 4; admit via gpu; }
stage gpu { budget 4; serve (admitted); }
session child { hold seqs 1, kv reserve 4 { prefill 4 growing kv; } end; }
session parent { hold seqs 1, kv reserve 6 { prefill 2 growing kv; spawn child; join; } end; }
workload { 1 x parent; }
"""

# the gate refuses: free(kv) is at most 8
ADMIT_IF = """\
pool kv { cap 8; block 2; admit via gpu; preempt lifo; }
stage gpu { budget 4; serve (admitted); }
session chat {
  draw prompt in {2, 3};
  let g = 0;
  hold kv reserve (prompt + g) admit if (free(kv) >= 10) {
    prefill (prompt + g) growing kv;
  }
  end;
}
workload { 1 x chat; }
"""
GATE = ("chat#1 is not admitted: its `admit if free(kv) >= 10` (line 6) is false "
        "(its pools would fit: `kv` 1 block of 4 obtainable)")

# a hold larger than its pool: it never fits, whoever holds what
TOO_BIG = """\
pool kv { cap 8; block 2; }
session s { hold kv reserve 10 { } end; }
workload { 1 x s; }
"""

# two pools short at once, in an event-driven queue with `hol skip`
TWO_SHORT = """\
pool a { cap 2; hol skip; }
pool b { cap 2; }
session big { hold a 2, b 2 { } end; }
session holder { hold a 1, b 1 { spawn big; join; } end; }
workload { 1 x holder; }
"""


# the header fits (need 2), the first chunk (8 tokens, 4 blocks) does not
FIRST_CHUNK = """\
pool kv { cap 6; block 2; admit via gpu; preempt none; }
stage gpu { budget 8; }
session s { hold kv need 2 take 0 { prefill 8 growing kv; } end; }
workload { 1 x s; }
"""


def _prog(text: str, name: str = "x.sq"):
    return load_text(text, name, explorer=True).program


def _deadlock(prog) -> list[str]:
    r = explore(prog)
    assert r.verdict == "deadlock", r.message
    return list(r.diagnosis)


# ---------------------------------------------------------------- serq explore


def test_join_in_hold_says_what_the_child_needs_can_obtain_and_who_holds_the_rest():
    lines = _deadlock(load_path(str(INST / "join_in_hold.sq"), explorer=True).program)
    assert JOIN_CHILD in lines
    assert lines[-1] == ("wait-for cycle: parent#1 waits for child#2 (its child); "
                         "child#2 waits for parent#1 (which holds kv)")


def test_a_free_gate_is_not_blamed_the_short_pool_is():
    lines = _deadlock(_prog(SEQS_FREE))
    text = "\n".join(lines)
    assert "child#2 is not admitted: `kv` is short: it needs 2 blocks (4 units) and can obtain 1 block " \
           "(free 2 + evictable 0 units); parent#1 holds 6 units; it fits `kv` alone (4 blocks in all)" in lines
    assert "`seqs` is short" not in text
    # the child waits for the parent because of kv, not because of seqs (3 of 4 free)
    assert lines[-1] == ("wait-for cycle: parent#1 waits for child#2 (its child); "
                         "child#2 waits for parent#1 (which holds kv)")


def test_an_admit_if_that_refuses_is_named_and_the_pools_are_not_blamed():
    lines = _deadlock(_prog(ADMIT_IF))
    assert GATE in lines
    assert not any("is short" in line or "do not fit" in line for line in lines)
    assert lines[-1] == "no wait-for cycle: no session can move to free a unit"


def test_a_hold_larger_than_its_pool_never_fits_alone():
    lines = _deadlock(_prog(TOO_BIG))
    assert ("s#1 is not admitted: `kv` is short: it needs 5 blocks (10 units) and can obtain 4 blocks "
            "(free 8 + evictable 0 units); no other session holds a unit; it never fits alone: "
            "it needs 5 blocks of `kv`; its cap is 4 blocks") in lines


def test_every_short_pool_is_named():
    lines = _deadlock(_prog(TWO_SHORT))
    (line,) = [x for x in lines if x.startswith("big#2 is not admitted: ")]
    assert "`a` is short: it needs 2 blocks (2 units) and can obtain 1 block" in line
    assert "`b` is short: it needs 2 blocks (2 units) and can obtain 1 block" in line
    assert line.count("holder#1 holds 1 unit") == 2


def test_a_session_behind_the_head_of_a_hol_block_queue_says_so():
    lines = _deadlock(load_path(str(INST / "hol_none.sq"), explorer=True).program)
    assert any(x.startswith("short#3 is behind short#2, the head of `kv`'s queue (`hol block`); "
                            "at the head it would be refused too: `kv` is short") for x in lines)
    assert any(x.startswith("long#1 cannot grow its hold on `kv` by a block") for x in lines)
    assert not any("do not fit" in x for x in lines)


def test_a_header_that_fits_under_a_stage_says_what_else_the_stage_requires():
    lines = _deadlock(_prog(FIRST_CHUNK))
    assert ("s#1 is not admitted: its header fits, but `gpu` admits a hold only while its budget is not spent "
            "and when the blocks of the hold's first chunk are free or evictable") in lines


# ---------------------------------------------------------------- serq check


def _check(tmp_path, capsys, text: str) -> list[str]:
    f = tmp_path / "x.sq"
    f.write_text(text)
    assert main(["check", str(f)]) == exit_code(DEADLOCK)
    return capsys.readouterr().out.splitlines()


def test_check_names_the_short_pool_not_the_queue(tmp_path, capsys):
    out = _check(tmp_path, capsys, SEQS_FREE)
    assert out[0].endswith("with 2 session(s) that can never move:")
    assert out[2] == ("  child#2 waits in the queue of `seqs` (position 1 of 1) and is not admitted: `kv` is short: "
                      "it needs 2 blocks (4 units) and can obtain 1 block (free 2 + evictable 0 units); "
                      "parent#1 holds 6 units; it fits `kv` alone (4 blocks in all)")


def test_check_join_in_hold(tmp_path, capsys):
    out = _check(tmp_path, capsys, (INST / "join_in_hold.sq").read_text())
    assert out[2] == "  child#2 waits in the queue of `kv` (position 1 of 1) and " + JOIN_CHILD.split(" ", 1)[1]


def test_check_names_the_gate_that_refuses(tmp_path, capsys):
    out = _check(tmp_path, capsys, ADMIT_IF)
    assert out[1].startswith("  chat#1 waits in the queue of `kv` (position 1 of 1) and is not admitted: "
                             "its `admit if free(kv) >= 10` (line 6) is false")


# ---------------------------------------------------------------- the page


def _page(prog, name: str) -> str:
    return timeline_page(SerqModel(prog), explore(prog), name)


def test_page_has_the_diagnosis_and_the_warnings_that_predicted_it():
    html = _page(load_path(str(INST / "join_in_hold.sq"), explorer=True).program, "join_in_hold.sq")
    assert f"<li>{JOIN_CHILD}</li>" in html
    assert '<li data-code="W500">line 28:5: warning[W500]: `join` while holding finite pool `kv` can deadlock' in html
    assert '<li data-code="W504">line 27:5: warning[W504]: this spawn is inside a hold of' in html


def test_page_names_the_gate_and_the_short_pool():
    html = _page(_prog(ADMIT_IF), "x.sq")
    assert GATE.replace(">", "&gt;") in html
    html = _page(_prog(SEQS_FREE), "x.sq")
    assert "child#2 is not admitted: `kv` is short" in html
    assert "`seqs` is short" not in html


# ---------------------------------------------------------------- a stuck session


def test_a_stuck_session_says_how_much_it_held_and_whether_it_fits_alone(capsys):
    prog = load_path(str(INST / "theorem_no_fit.sq"), explorer=True).program
    r = explore(prog, checks=["stuck"])  # under `completes` the path goes on into a livelock
    assert r.trace[-1].action_text.endswith(
        "chat#1 was preempted again without passing the position of its previous preemption: "
        "it held all 2 blocks of `kv` and needed another: it never fits `kv` alone")
    assert main(["check", str(INST / "self_preempt.sq"), "--check", "stuck"]) == exit_code(VIOLATION)
    assert capsys.readouterr().out.rstrip().endswith(
        "long#1 was preempted again from pool `kv` without passing the position of its previous preemption: "
        "it held all 4 blocks of `kv` and needed another: it never fits `kv` alone")


def test_a_stuck_session_that_fits_alone_names_who_holds_the_rest():
    r = explore(load_path(str(INST / "theorem_no_lifo.sq"), explorer=True).program, checks=["stuck"])
    assert r.trace[-1].action_text.endswith(
        "it held 2 of `kv`'s 4 blocks and needed another; chat#2 holds 4 units")


# ---------------------------------------------------------------- against the admission itself


def _agrees_with_admission(prog, limit: int = 3000) -> tuple[int, int]:
    """Over the reachable states: the head of an event-driven queue is
    always explained as refused (the step admits every head that fits);
    under a stage with no resident (its admissions see the state as it
    is), an iteration never admits a head explained as refused. Returns
    the heads found refused and the heads found admitted."""
    from explorer.graph.walk import walk
    from serq.check.admission import refusal
    from serq.semantics.model import ITERATE, Model

    m = Model(prog, ties="seq")
    seen = [0, 0]

    def on_state(st):
        for p, pool in enumerate(m.pools):
            q = st.pools[p].queue
            if not q:
                continue
            head = q[0]
            r = refusal(m, st, head)
            refused = r.gate is not None or bool(r.short)
            seen[0] += refused
            if pool.admit_via is None:
                assert refused, (st, r.lines)
                continue
            si = m.stage_index[pool.admit_via]
            if any(m.progs[s.prog].states[s.pc].kind == "run" and s.run_done < s.run_total for s in st.sessions):
                continue  # residents are served first: the admission sees other levels
            for action, _nxt, events in m.transitions(st):
                if action[0] == ITERATE and action[1] == si:
                    admitted = any(e.kind == "admit" and e.sid == head for e in events)
                    assert not (admitted and refused), (st, r.lines)
                    seen[1] += admitted

    assert walk([m.initial_state()], m.transitions, on_state=on_state, max_states=limit).states > 1
    return seen[0], seen[1]


def test_the_words_agree_with_the_admission_on_event_driven_queues():
    for prog in (_prog(TWO_SHORT), load_path(str(INST / "theorem_no_nesting.sq"), explorer=True).program):
        refused, _ = _agrees_with_admission(prog)
        assert refused > 0


# the gate is open only while nothing else is admitted: refused and admitted heads both occur, and
# a prompt of 6 takes the whole pool (need = obtainable)
GATED = """\
pool kv { cap 6; block 2; admit via gpu; preempt lifo; }
stage gpu { budget 4; serve (admitted); }
session chat {
  draw prompt in {2, 6};
  hold kv reserve (prompt) admit if (holders(kv) == 0) { prefill (prompt) growing kv; }
  end;
}
workload { 2 x chat; }
"""


def test_the_words_agree_with_the_admission_under_a_stage():
    # vllm_chat: reuse of cached blocks, a watermark read through holders(kv), two pools per hold
    for name in ("vllm_chat", "agent_subagents"):
        _, admitted = _agrees_with_admission(load_path(str(INST / f"{name}.sq"), explorer=True).program)
        assert admitted > 0
    refused, admitted = _agrees_with_admission(_prog(GATED))
    assert refused > 0 and admitted > 0
    refused, _ = _agrees_with_admission(load_path(str(INST / "hol_none.sq"), explorer=True).program)
    assert refused > 0
