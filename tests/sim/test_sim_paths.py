"""One semantics: every run of the simulator is a path of the explorer's
graph. The simulator chooses by time and a seeded RNG; each state it passes
through, and each step it takes, must be a state and an edge the explorer
enumerates from the same instance."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer.fingerprint import state_fingerprint
from serq.check.model import SerqModel
from serq.lang.load import load_path, load_text
from tests.fixtures import TWO_CHATS
from serq.sim.simulator import SimConfig, Simulator

ROOT = Path(__file__).resolve().parents[2]



def graph(sm: SerqModel):
    """Every reachable fingerprint and edge (no symmetry: exact states)."""
    s0 = sm.initial_states()[0]
    f0 = state_fingerprint(sm, s0)
    seen = {f0}
    edges = set()
    todo = deque([s0])
    while todo:
        s = todo.popleft()
        f = state_fingerprint(sm, s)
        for a in sm.actions(s):
            n = sm.step(s, a)
            if n is None:
                continue
            g = state_fingerprint(sm, n)
            edges.add((f, g))
            if g not in seen:
                seen.add(g)
                todo.append(n)
    return f0, seen, edges


_GRAPHS: dict = {}


def explorer_graph(key, prog):
    if key not in _GRAPHS:
        sm = SerqModel(prog, symmetry=False)
        _GRAPHS[key] = (sm, graph(sm))
    return _GRAPHS[key]


def simulated_path(prog, seed: int):
    states = []
    cfg = SimConfig(seed=seed, coalesce=False,
                    trace=lambda tick, what, events, model, state: states.append(state))
    sim = Simulator(prog, cfg)
    states.insert(0, sim.m.initial_state())
    sim.run()
    return states


CASES = {
    "two_chats": lambda: load_text(TWO_CHATS.replace("2 x chat", "3 x chat"), "t.sq").program,
    "decode_preempt": lambda: load_path(ROOT / "instances" / "decode_preempt.sq").program,
    "agent_subagents": lambda: load_path(ROOT / "instances" / "agent_subagents.sq").program,
    "theorem": lambda: load_path(ROOT / "instances" / "theorem.sq").program,
}


@pytest.mark.parametrize("case", sorted(CASES))
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_every_simulator_run_is_an_explorer_path(case, seed):
    prog = CASES[case]()
    sm, (f0, seen, edges) = explorer_graph(case, prog)
    path = simulated_path(prog, seed)
    fps = [state_fingerprint(sm, s) for s in path]
    assert fps[0] == f0
    for i, (a, b) in enumerate(zip(fps, fps[1:])):
        assert b in seen, f"simulated state {i + 1} is not reachable in the explorer"
        assert (a, b) in edges, f"simulated step {i + 1} is not an edge of the explorer's graph"
    assert len(path) > 1
