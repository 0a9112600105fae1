"""Reading a packed state (decoding it) never changes the engine's working
row: a step from a state whose tuple was never decoded gives the same
successor as from the decoded tuple, whatever is read between the step and
its successor. (A decode once overwrote the working row while a step read
its predecessor's `fault`: the arrival from a lazily decoded initial state
came back as the initial state itself, and --worst saw one state.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from serq.check.model import Checks, SerqModel
from serq.lang.load import load_path
from serq.semantics.rowstate import RowState

INST = Path(__file__).resolve().parents[2] / "instances"


def fresh(rs: RowState) -> RowState:
    """The same packed state, its tuple not decoded."""
    return RowState(rs.rows, rs.row, rs.cap, rs.fp, rs.flags)


@pytest.mark.parametrize("name", ["self_preempt.sq", "agent_subagents.sq", "multiturn_chat.sq", "vllm_chat.sq"])
def test_a_step_from_an_undecoded_state_is_the_step_from_its_tuple(name):
    """Breadth-first over a few hundred states (turn, spawn/join,
    preemption, prefixes): each action's successor from an undecoded
    state, stepped by the Python step (`step_events`) and by the packed
    one, equals the successor from its decoded tuple."""
    p = load_path(str(INST / name), explorer=True).program
    sm = SerqModel(p, ties="all", symmetry=False, checks=Checks.of_program(p))
    m = sm.m
    level, seen, n = [sm.initial_states()[0]], set(), 0
    while level and n < 300:
        nxt_level = []
        for rs in level:
            for a in sm.actions(rs):
                want, wev = m.step_events(rs.tuple(), a)
                got, gev = m.step_events(fresh(rs), a)
                assert got == want and [e.kind for e in gev] == [e.kind for e in wev], (name, a)
                packed, _ = m.engine.run(fresh(rs), (a[0], a[1]), list(a[2]), 0, True, True)
                assert packed.tuple() == want, (name, a)
                key = sm.exact_key(packed)
                if key not in seen:
                    seen.add(key)
                    nxt_level.append(packed)
                n += 1
        level = nxt_level
    assert n >= 5


def test_decoding_leaves_the_working_row_as_it_was():
    p = load_path(str(INST / "agent_subagents.sq"), explorer=True).program
    sm = SerqModel(p, ties="all", symmetry=False, checks=Checks.of_program(p))
    e = sm.m.engine
    rs = sm.initial_states()[0]
    e.load(rs)
    a = sm.actions(rs)[0]
    e.run(fresh(rs), (a[0], a[1]), list(a[2]), 0, True, False)
    before = e.w[: e.W].copy()
    fresh(rs).tuple()
    assert np.array_equal(e.w[: e.W], before)


@pytest.mark.parametrize("name", ["agent_subagents.sq", "multiturn_chat.sq"])
def test_a_session_label_read_in_the_row_is_the_decoded_ones(name):
    """`Model.session_label` reads a packed row's program in place (the
    simulator names a session at every step): the same label as the
    decoded state's, on every session of a few hundred states (spawned
    subagents of other programs included), the row left undecoded."""
    p = load_path(str(INST / name), explorer=True).program
    sm = SerqModel(p, ties="all", symmetry=False, checks=Checks.of_program(p))
    m = sm.m
    level, seen, n, progs = [sm.initial_states()[0]], set(), 0, set()
    while level and n < 300:
        nxt_level = []
        for rs in level:
            for _a, nxt in m.successors(rs):
                if nxt.row in seen:
                    continue
                seen.add(nxt.row)
                n += 1
                nxt_level.append(nxt)
                f = fresh(nxt)
                labels = [m.session_label(f, sid) for sid in range(len(nxt.sessions))]
                assert f._t is None
                assert labels == [f"{m.progs[s.prog].name}#{sid + 1}" for sid, s in enumerate(nxt.sessions)]
                progs |= {s.prog for s in nxt.sessions}
        level = nxt_level
    assert n > 10 and (name != "agent_subagents.sq" or len(progs) == 2)
