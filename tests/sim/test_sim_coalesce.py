"""Step coalescing is exact, and a simulator run is a path of the model.

* the licence, read from the IR;
* every coalesced block equals k applications of the model's `iterate`
  (state, costs, pool levels, evictions) — checked on every block of
  several runs;
* runs with and without coalescing end in equal states and equal reports
  (all but the count of evaluated iterations);
* every action the simulator takes is a transition the explorer's
  enumeration (the kernel's, `Model.successors`) also takes, and the step
  replayed with the recorded oracle answers reaches the same state.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from serq.sim.coalesce import licence
from serq.lang.load import load_path, load_text
from serq.semantics.model import FirstOracle, Model
from serq.sim.report import build_report
from serq.sim.simulator import SimConfig, Simulator, simulate
from tests.semantics.test_semantics_properties import instances  # the random instance strategy (at import: not nested)

ROOT = Path(__file__).resolve().parents[2]



def untimed(state):
    """A state with the release ticks of its cache entries set to 0."""
    sessions, pools, seq, fault = state
    return (sessions, tuple((f, tuple(e[:3] + (0,) for e in c), q) for f, c, q in pools), seq, fault)

def lic(stage: str, extra: str = "") -> tuple[bool, str]:
    text = f"""
pool kv {{ cap 64; block 4; admit via gpu; }}
{stage}
session s {{ hold kv 4 {{ decode 3; }} end; }}
workload {{ 1 x s; }}
{extra}
"""
    return licence(load_text(text).program)[0]


def test_licence_reads_only_the_step_shape_piecewise_affine():
    assert lic("stage gpu { budget 64; cost 14ms + 30us * ntok + 2us * kvb - ndec * 3 + nreq / 2; }") == (True, "ok")
    assert lic("stage gpu { budget 64 + 2 * kvb; chunk max(4, 16 - nreq); cost max(1ms, 5us * ntok); }")[0]
    assert lic("stage gpu { cost 1ms; }")[0]
    assert lic("stage gpu { }")[0]  # 1 tick per iteration
    ok, why = lic("stage gpu { cost 1ms + now / 1000; }")
    assert not ok and "`cost` reads `now`" in why
    ok, why = lic("stage gpu { cost ntok * ntok; }")
    assert not ok and "not affine" in why
    ok, why = lic("stage gpu { cost 1ms * floor(ntok / 16); }")
    assert not ok and "floor" in why
    ok, why = lic("stage gpu { budget 100 - now; cost 1ms; }")
    assert not ok and "`budget` reads `now`" in why
    ok, why = lic("stage gpu { chunk 64 - kvb; cost 1ms; }")
    assert not ok and "`chunk` reads `kvb`" in why
    ok, why = lic("stage gpu { chunk budget_left; cost 1ms; }")
    assert not ok and "budget_left" in why
    ok, why = lic("stage gpu { cost 1ms; }", "check invariant allocated(kv) <= 64;")
    assert not ok and "invariant" in why


# ---------------------------------------------------------------- checking simulators


class CheckedSimulator(Simulator):
    """A simulator that replays everything it does through the model:
    every block against k single iterations, every action against the
    explorer's enumeration with the recorded answers."""

    def __init__(self, *a, enumerate: bool = False, **kw):
        super().__init__(*a, **kw)
        self.enumerate = enumerate
        self.blocks = 0
        self.block_iterations = 0
        self.checked_actions = 0
        inner = self.m.run_with
        sim = self

        class Recording:
            def __init__(self, rng_oracle):
                self.o = rng_oracle
                self.answers = []

            def draw(self, values, weights):
                i = self.o.draw(values, weights)
                self.answers.append(i)
                return i

            def tie(self, n):
                return self.o.tie(n)

        def run_with(state, base, oracle, now=0):
            rec = Recording(oracle)
            nxt, events = inner(state, base, rec, now)
            sim._last = (state, base, tuple(rec.answers), nxt)
            return nxt, events

        self.m.run_with = run_with

    def _commit(self, nxt, events, tick):
        state, base, answers, made = self._last
        assert made is nxt and state is self.state
        m2 = self._replay_model
        # a replay of the recorded answers reaches the same state ...
        assert m2.run_with(state, base, list(answers), self.now)[0] == nxt
        if self.enumerate:
            # ... and the explorer's enumeration of this base action has the transition
            # (the explorer has no clock: cache entries' release ticks are 0)
            succ = {a: n for a, n in m2.successors(state) if a[:2] == base}
            assert untimed(succ[(base[0], base[1], answers)]) == untimed(nxt)
        self.checked_actions += 1
        return super()._commit(nxt, events, tick)

    @property
    def _replay_model(self):
        if not hasattr(self, "_m2"):
            self._m2 = Model(self.program, ties="seq")
        return self._m2

    def _apply_block(self, blk, tick):
        m = self._replay_model
        s = self.state
        t = tick
        evicted = [0] * len(m.pools)
        for j in range(blk.k):
            nxt, ev = m.run_with(s, ("iterate", blk.stage), FirstOracle(), now=t)
            assert nxt is not None and nxt.fault is None
            shape = next(e.shape for e in ev if e.kind == "iterate")
            assert m.cost(blk.stage, shape, t) == blk.costs[j]
            assert shape["ntok"] == blk.ntok
            assert self._levels(nxt) == blk.levels[j]
            for e in ev:
                assert e.kind in ("iterate", "serve", "evict"), e  # nothing else happens in a block
                if e.kind == "evict":
                    evicted[e.pool] += e.units
            t += blk.costs[j]
            s = nxt
        assert s == blk.state
        assert tuple(evicted) == tuple(blk.evicted or (0,) * len(m.pools))
        self.blocks += 1
        self.block_iterations += blk.k
        return super()._apply_block(blk, tick)


def comparable(result) -> dict:
    r = build_report(result)
    r.pop("coalesce")
    r.pop("iterations_evaluated")
    return r


def run_both(program, **kw):
    """Runs with and without coalescing (results carry `blocks`: how many
    coalesced blocks were checked)."""
    out = []
    for co in (True, False):
        sim = CheckedSimulator(program, SimConfig(coalesce=co, **kw))
        r = sim.run()
        r.blocks = sim.blocks
        out.append(r)
    return out


# ---------------------------------------------------------------- instances

BIG = """
const BS = 4;
pool kv   { cap KV; block BS; admit via gpu; preempt lifo; evict lru; }
pool seqs { cap 16; admit via gpu; }
stage gpu { budget 64; CHUNK serve (admitted); cost 8ms + 60us * ntok + 20us * kvb; }
session chat {
  draw prompt in {8, 20, 40, 70} ~ uniform;
  draw o in {4, 16, 40, 90} ~ weights(4, 3, 2, 1) hidden;
  let g = 0;
  hold seqs 1, kv reuse c need (prompt + g - c) take 0
       at admission (c = min(cached(kv), floor((prompt + g - 1) / BS) * BS)) {
    prefill (prompt + g - c) growing kv;
    decode (o - 1 - g) growing kv progress g;
  } keep (kv full);
  end;
}
workload { 40 x chat poisson 3/s seed 2; }
"""

MULTI_STAGE = """
pool kv { cap 256; block 8; admit via pre; preempt lifo; evict lru; }
pool dec { cap 256; block 8; admit via dec; preempt lifo; evict lru; }
stage pre { budget 128; cost 5ms + 50us * ntok; }
stage dec { budget 64; cost 3ms + 10us * kvb; }
session s {
  draw p in {16, 48, 100};
  draw o in {8, 30, 60};
  hold kv need (p) take 0 { prefill (p) on pre growing kv; }
  hold dec need (p) take (p) { decode (o) on dec growing dec; }
  end;
}
workload { 12 x s every 40ms; }
"""

TURNS = """
pool kv { cap 512; block 16; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 256; chunk 64; cost 10ms + 20us * ntok; }
session chat {
  let n = 100;
  repeat 3 {
    draw o in {20, 50} hidden;
    let g = 0;
    hold kv reuse c need (n + g - c) take 0 at admission (c = min(cached(kv), floor((n + g - 1) / 16) * 16)) {
      prefill (n + g - c) growing kv;
      decode (o - 1 - g) growing kv progress g;
    } keep (kv full);
    set n = n + g + 1 + 30;
    turn think 300ms;
  }
  end;
}
workload { 6 x chat poisson 5/s seed 4; }
"""

INFINITE = """
stage gpu { budget 32 + kvb; chunk 16; cost 1ms + 1us * kvb; }
pool kv { block 4; admit via gpu; }
session s { draw p in 20..60; draw o in 10..80; hold kv 0 { prefill (p) growing kv; decode (o) growing kv; } end; }
workload { 20 x s every 30ms; }
"""


CASES = {
    "big-pressure": BIG.replace("KV", "160").replace("CHUNK", ""),
    "big-roomy-chunked": BIG.replace("KV", "4096").replace("CHUNK", "chunk 16;"),
    "big-pressure-mru": BIG.replace("KV", "160").replace("CHUNK", "").replace("evict lru", "evict (desc released)"),
    "multi-stage": MULTI_STAGE,
    "turns": TURNS,
    "infinite-pool": INFINITE,
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_coalesced_equals_uncoalesced(name, seed):
    p = load_text(CASES[name]).program
    a, b = run_both(p, seed=seed)
    assert a.faults == b.faults == []
    assert a.state == b.state
    assert comparable(a) == comparable(b)
    assert b.stats.evaluated == sum(b.stats.iters)
    if name != "multi-stage":  # two busy stages interleave: blocks are rare there
        assert a.blocks > 0 and a.stats.evaluated < b.stats.evaluated, name


def test_coalescing_respects_the_horizon():
    p = load_text(BIG.replace("KV", "4096").replace("CHUNK", "")).program
    for horizon in (3_000_000_000, 7_123_456_789):
        a, b = run_both(p, seed=3, horizon=horizon)
        assert a.stopped == b.stopped == "horizon"
        assert a.state == b.state and comparable(a) == comparable(b)


@pytest.mark.parametrize("name", sorted(f.name for f in (ROOT / "instances").glob("*.sq")))
def test_instances_coalesce_exactly(name):
    p = load_path(ROOT / "instances" / name).program
    for seed in (0, 1):
        # livelocks stop at the watchdog, sessions that loop for ever (starved_large) at the
        # step bound: either at the same point with and without coalescing
        a, b = run_both(p, seed=seed, max_steps=5_000)
        assert a.state == b.state, name
        assert comparable(a) == comparable(b), name


def test_long_decodes_coalesce_a_lot():
    # the regime of the seed note: queue mostly empty, long decodes
    text = """
pool kv { cap 100000; block 16; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 2048; cost 10ms + 20us * ntok + 1us * kvb; }
session s { draw o in {500, 1000, 2000}; hold kv need 100 take 0 { prefill 100 growing kv; decode (o) growing kv; } end; }
workload { 20 x s every 2s; }
"""
    a, b = run_both(load_text(text).program)
    assert a.state == b.state and comparable(a) == comparable(b)
    assert sum(a.stats.iters) > 20 * a.stats.evaluated


# ---------------------------------------------------------------- random instances


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_instances_coalesce_exactly(data):
    text = data.draw(instances())
    # longer decodes and a roomier budget than the semantics walk, so blocks happen
    text = text.replace("draw o in 1..", "draw o in 1..2").replace("cost 1ms", "cost 1ms + 10us * kvb")
    seed = data.draw(st.integers(0, 1000))
    p = load_text(text).program
    # bounded by simulated time (a livelock runs to it in both modes alike;
    # a step limit would cut them at different points: a block is one step)
    a, b = run_both(p, seed=seed, horizon=2_000_000_000)
    assert a.state == b.state
    assert comparable(a) == comparable(b)


def test_a_simulator_run_is_a_path_of_the_model():
    p = load_path(ROOT / "instances" / "vllm_chat.sq").program
    for seed in range(5):
        s = CheckedSimulator(p, SimConfig(seed=seed), enumerate=True)
        s.run()
        assert s.checked_actions > 0


def test_an_early_stop_during_a_block_reports_what_ended_by_then():
    # `bad` arrives in the middle of the long decode's block and fails its
    # assert: the run stops at a fault with the block in flight
    text = """
pool kv { cap 4096; block 16; admit via gpu; }
stage gpu { budget 512; cost 7ms + 3us * kvb; }
session s { hold kv need 64 take 0 { prefill 64 growing kv; decode 900 growing kv; } end; }
session bad { assert 1 > 2; end; }
workload { 1 x s; 1 x bad at 1234567us; }
"""
    a, b = run_both(load_text(text).program)
    assert a.stopped == b.stopped == "fault"
    assert a.blocks > 0
    assert a.state == b.state and comparable(a) == comparable(b)


# ---------------------------------------------------------------- bounded blocks

LONG_DECODE = """
pool kv { cap 4000000000; block 16; admit via gpu; }
stage gpu { budget 8; cost 1ms; }
session s { hold kv need 2 { prefill 2; decode 1000000000 growing kv; } end; }
workload { 1 x s; }
"""


def test_a_block_is_planned_for_at_most_block_max_iterations():
    # a billion decode iterations: planning them all in one block took minutes before the first step
    from serq.sim.coalesce import BLOCK_MAX

    r = Simulator(load_text(LONG_DECODE).program, SimConfig(max_steps=3 * BLOCK_MAX + 10)).run()
    assert r.stopped == "step limit"
    assert 3 * BLOCK_MAX <= sum(r.stats.iters) < 3 * BLOCK_MAX + 10  # --max-steps counts a block's iterations
    assert 4 <= r.stats.evaluated <= 8  # in blocks of at most BLOCK_MAX


@pytest.mark.parametrize("start, most", [(2, 8), (4, 64), (64, 256)])
def test_blocks_cut_at_their_maximum_are_exact(monkeypatch, start, most):
    import serq.sim.coalesce

    monkeypatch.setattr(serq.sim.coalesce, "BLOCK_START", start)
    monkeypatch.setattr(serq.sim.coalesce, "BLOCK_MAX", most)
    for text in (INFINITE, BIG.replace("KV", "4096").replace("CHUNK", "chunk 16;")):
        a, b = run_both(load_text(text).program, seed=1)
        assert a.state == b.state and comparable(a) == comparable(b)
        assert a.blocks > 0


DECODES = """
pool kv { cap 100000; block 16; admit via gpu; }
stage gpu { budget 64; cost 1ms; }
session s { prefill 64; decode 100000; }
workload { 1 x s; }
"""


@pytest.mark.parametrize("n", [10, 1000, 70000])
def test_max_steps_counts_the_iterations_of_a_block(n):
    """--max-steps bounds a run whose iterations are coalesced into blocks
    as it bounds the same run taken one iteration at a time."""
    prog = load_text(DECODES, "decodes.sq").program
    got = [simulate(prog, max_steps=n, coalesce=c) for c in (True, False)]
    assert [r.stopped for r in got] == ["step limit", "step limit"]
    sim = [build_report(r)["iterations_simulated"] for r in got]
    assert sim[0] == sim[1] < n
    assert got[0].stats.evaluated < sim[0] // 2 or n < 100  # coalesced indeed
