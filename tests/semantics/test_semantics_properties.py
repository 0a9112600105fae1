"""Property tests of the step relation on random small instances.

Hypothesis draws an instance (pool sizes, blocks, budget, chunk, victim,
head-of-line and requeue policies, keep moves, one of several session
shapes) and a random walk through its actions with random draw answers.
After every action: no fault at all, and — checked here independently of
the model's own check — every finite pool conserves its units
(allocated + cached + free = cap, free >= 0, cached entries positive and
in whole blocks). The walk also checks that zero-work iterations are
exactly the ones `run_with` refuses.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serq.lang.load import load_text
from serq.semantics.model import Model

SHAPES = {
    # vLLM-like: gate on the whole sequence, allocate as computed, resume
    "vllm": """
session chat {{
  {open}
  draw prompt in {plo}..{phi};
  draw o in 1..{omax} hidden;
  let g = 0;
  hold {gate}kv reuse c need (prompt + g - c) take 0
       at admission (c = min(cached(kv), floor((prompt + g - 1) / {bs}) * {bs})) {{
    prefill (prompt + g - c) growing kv;
    decode (o - 1 - g) growing kv progress g;
  }}{keep};
  {close}
  end;
}}""",
    # the theorem's reservation
    "reserve": """
session chat {{
  {open}
  draw prompt in {plo}..{phi};
  draw o in 1..{omax} hidden;
  hold {gate}kv reserve (prompt + {omax}) {{
    prefill (prompt) growing kv;
    decode (o - 1) growing kv;
  }}{keep};
  {close}
  end;
}}""",
    # two turns, the second re-hitting the first one's prefix
    "turns": """
session chat {{
  {open}
  draw prompt in {plo}..{phi};
  let g = 0;
  repeat 2 {{
    draw o in 1..{omax} hidden;
    set g = 0;
    hold {gate}kv reuse c need (prompt + g - c) take 0
         at admission (c = min(cached(kv), floor((prompt + g - 1) / {bs}) * {bs})) {{
      prefill (prompt + g - c) growing kv;
      decode (o - 1 - g) growing kv progress g;
    }}{keep};
    set prompt = prompt + g + 1;  // the answer, as the scheduler saw it (o is hidden)
    turn;
  }}
  drop kv;
  {close}
  end;
}}""",
}


@st.composite
def instances(draw):
    bs = draw(st.sampled_from([1, 2, 4]))
    shape = draw(st.sampled_from(sorted(SHAPES)))
    phi = draw(st.integers(1, 8))
    plo = draw(st.integers(1, phi))
    omax = draw(st.integers(1, 4))
    # big enough for one session alone (else it can never be admitted: fine,
    # but the walk would be short)
    cap = draw(st.integers(1, 6)) * bs + ((phi + omax + bs - 1) // bs) * bs
    budget = draw(st.integers(1, 12))
    chunk = draw(st.sampled_from([None, 1, 2, 3, 5]))
    victim = draw(st.sampled_from(["lifo", "fifo", "none"]))
    hol = draw(st.sampled_from(["block", "skip"]))
    requeue = draw(st.sampled_from(["front", "back"]))
    keep = draw(st.sampled_from(["", " keep (kv full)", f" keep (kv {bs})"]))
    seqs = draw(st.sampled_from([None, "via", "event"]))
    n = draw(st.integers(1, 3))
    pools = [f"pool kv {{ cap {cap}; block {bs}; admit via gpu; preempt {victim}; evict lru; "
             f"requeue {requeue}; hol {hol}; }}"]
    gate = opening = closing = ""
    if seqs is not None:
        scap = draw(st.integers(1, 2))
        pools.insert(0, f"pool seqs {{ cap {scap}; {'admit via gpu; ' if seqs == 'via' else ''}}}")
        if seqs == "via":
            gate = "seqs 1, "  # one admission decision with kv
        else:
            opening, closing = "hold seqs 1 {", "}"  # an event-driven slot around the whole session
    stage = f"stage gpu {{ budget {budget}; {'' if chunk is None else f'chunk {chunk}; '}serve (admitted); cost 1ms; }}"
    body = SHAPES[shape].format(plo=plo, phi=phi, omax=omax, bs=bs, gate=gate, keep=keep, open=opening,
                                close=closing)
    text = "\n".join(pools + [stage, body, f"workload {{ {n} x chat; }}"])
    return text


class DataOracle:
    def __init__(self, data):
        self.data = data

    def draw(self, values, weights):
        return self.data.draw(st.integers(0, len(values) - 1), label="draw")

    def tie(self, n):
        return 0


def conserved(m: Model, state) -> None:
    sessions, pools, _, _ = state
    for p, cap in enumerate(m.caps):
        if cap is None:
            continue
        free, cache = pools[p].free, pools[p].cache
        alloc = sum(h.own for s in sessions for h in s.holds if h.pool == p)
        cached = sum(e.units for e in cache)
        assert free >= 0
        assert alloc + cached + free == cap, (m.pools[p].name, alloc, cached, free, cap)
        for e in cache:
            assert e.units > 0 and e.units % m.blocks[p] == 0, e


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(instances(), st.data())
def test_conservation_after_every_action_on_random_instances(text, data):
    m = Model(load_text(text).program, ties="seq")
    s = m.initial_state()
    oracle = DataOracle(data)
    for _ in range(60):
        acts = m.base_actions(s)
        if not acts:
            break
        order = data.draw(st.permutations(range(len(acts))), label="order")
        for i in order:
            nxt, events = m.run_with(s, acts[i], oracle)
            if nxt is not None:
                break
        else:
            break  # nothing applicable: done or deadlocked
        assert nxt.fault is None, (text, nxt.fault)
        assert not any(e.kind == "fault" for e in events)
        conserved(m, nxt)
        s = nxt


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.integers(0, 2**32 - 1))
def test_simulated_runs_conserve_and_end_cleanly(text, seed):
    """The simulator's path through the same instances: no fault, and every
    session ends unless the instance can deadlock (`preempt none`) or a
    hold can never fit."""
    from serq.sim.simulator import simulate

    prog = load_text(text).program
    r = simulate(prog, seed=seed, max_steps=20_000)
    assert r.faults == [], r.faults
    conserved(Model(prog, ties="seq"), r.state)
