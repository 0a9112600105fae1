"""The state read through named fields: the NamedTuples of
serq/semantics/state.py are what the engine decodes, they are still the
plain tuples (equality, hashing, pickling, fingerprints), no module of
serq reads a state by position, and the kernel's field offsets in abi.py
agree with the table serq/semantics/lower.py builds."""

import importlib.util
import pickle
import random
from pathlib import Path

from explorer.fingerprint import fingerprint
from serq.check.model import SerqModel
from serq.lang.load import load_text
from serq.semantics.model import Model
from serq.semantics.kernel import abi
from serq.semantics.rowstate import RowState
from serq.semantics.state import CacheEntry, Hold, Pool, Session, State
from tests.fixtures import TWO_CHATS

ROOT = Path(__file__).resolve().parent.parent.parent


def _walk(seed: int = 3, steps: int = 40):
    """The states of one random walk of TWO_CHATS (holds, cache entries, queues)."""
    sm = SerqModel(load_text(TWO_CHATS).program)
    rng = random.Random(seed)
    s = sm.initial_states()[0]
    out = [s]
    for _ in range(steps):
        acts = sm.actions(s)
        if not acts:
            break
        s = sm.step(s, acts[rng.randrange(len(acts))])
        out.append(s)
    return sm, out


def _counter():
    """bench/count_indexings.py, the rule that counts positional state reads."""
    spec = importlib.util.spec_from_file_location("count_indexings", ROOT / "bench" / "count_indexings.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _plain(x):
    return tuple(_plain(v) for v in x) if isinstance(x, tuple) else x


def test_decoded_states_are_named_tuples_equal_to_the_plain_ones():
    sm, states = _walk()
    seen = {"hold": 0, "entry": 0}
    for rs in states:
        st = rs.tuple() if isinstance(rs, RowState) else rs
        assert type(st) is State
        for s in st.sessions:
            assert type(s) is Session and s.pc == s[1] and s.holds == s[5] and s.stuck == s[11]
            for h in s.holds:
                assert type(h) is Hold and (h.pool, h.own, h.admitted) == (h[1], h[2], h[4])
                seen["hold"] += 1
        for p in st.pools:
            assert type(p) is Pool and p.queue == p[2]
            for e in p.cache:
                assert type(e) is CacheEntry and (e.owner, e.units, e.released) == e[:3]
                seen["entry"] += 1
        plain = _plain(st)
        assert type(plain) is tuple and plain == st and hash(plain) == hash(st)
        assert fingerprint(plain) == fingerprint(st)
    assert seen["hold"] and seen["entry"]  # the walk met holds and cache entries


def test_a_packed_state_reads_by_name_and_pickles_as_a_state():
    sm, states = _walk()
    packed = [s for s in states if isinstance(s, RowState)]
    assert packed
    for rs in packed:
        assert (rs.sessions, rs.pools, rs.seq, rs.fault) == tuple(rs.tuple())
        back = pickle.loads(pickle.dumps(rs))
        assert type(back) is State and back == rs.tuple()


def test_the_initial_state_is_named():
    m = Model(load_text(TWO_CHATS).program)
    s0 = m.initial_state()
    assert type(s0) is State and all(type(s) is Session for s in s0.sessions)
    assert all(type(p) is Pool for p in s0.pools) and s0.fault is None and s0.seq == 0


def test_no_state_read_by_position_in_serq():
    mod = _counter()
    found = [(f.relative_to(ROOT), line, text) for f in sorted((ROOT / "serq").rglob("*.py")) if mod.counted(f)
             for line, text in mod.indexings(f)]
    assert found == [], found


def test_the_rule_counts_field_reads_not_elements(tmp_path):
    mod = _counter()
    f = tmp_path / "x.py"
    f.write_text("a = state[0][sid][1]\nb = h[2]\nc = pools[0]\nd = pools[p][2]\ne = ev[1]\n")
    assert [t for _, t in mod.indexings(f)] == ["state[0]", "state[0][sid][1]", "h[2]", "pools[p][2]"]


def test_the_kernel_offsets_name_the_table_lower_builds():
    """Widths agree with the named fields, and the pool, stage and state rows
    of a lowered instance read by name give what the program declares."""
    assert abi.PROG_W == abi.PG_NSTATES + 1 and abi.SW == abi.ST_AT + 1 and abi.POOL_W == abi.PL_CACHE + 1
    assert abi.STAGE_W == abi.SG_READS_POOLS + 1 and abi.IW == abi.IT_PREFIX + 1 and abi.SCP == abi.SCK_PREFIX + 1
    assert abi.SCW_BASE == abi.SC_ACQUIRE + 1 and abi.SEGW == abi.SEG_PARENT + 1
    assert abi.BDW == abi.BD_EXPR + 1 and abi.SAW == abi.SA_VALUE + 1
    m = Model(load_text(TWO_CHATS).program)
    low = m.engine.low
    K, _ = low.table(4)
    prog = m.program
    for p, pool in enumerate(prog.pools):
        pr = K[abi.H_POOLT] + abi.POOL_W * p
        assert (K[pr + abi.PL_CAP], K[pr + abi.PL_BLOCK]) == (pool.cap, pool.block)
        assert K[pr + abi.PL_VIA] == low.stage_ix[pool.admit_via]
        oo = K[pr + abi.PL_QUEUE]
        assert K[oo + abi.OR_NKEYS] == len(pool.queue.keys)
    for si, stage in enumerate(prog.stages):
        stt = K[abi.H_STAGET] + abi.STAGE_W * si
        via = [K[K[stt + abi.SG_VIA] + i] for i in range(K[stt + abi.SG_NVIA])]
        assert via == [p for p, pool in enumerate(prog.pools) if pool.admit_via == stage.name]
    for pi, sp in enumerate(prog.sessions):
        pt = K[abi.H_PROGT] + abi.PROG_W * pi
        assert K[pt + abi.PG_NSTATES] == len(sp.states) and K[pt + abi.PG_ENTRY] == sp.entry
        for pc, st in enumerate(sp.states):
            r = K[pt + abi.PG_STATES] + abi.SW * pc
            assert abi.KIND_NAMES[K[r + abi.ST_KIND]] == st.kind
            if st.kind == "run":
                assert K[r + abi.RUN_STAGE] == low.stage_ix[st.stage]
                assert K[r + abi.RUN_DECODE] == int(st.run == "decode")
            if st.kind == "acquire":
                assert K[r + abi.ACQ_GATE] == low.pool_ix[st.hold.items[0].pool]
                hs = K[r + abi.ACQ_SPEC]
                ai = hs + abi.AQ_BIND + abi.BDW * K[hs + abi.AQ_NBIND]
                items = [K[ai + abi.AI_ITEMS + abi.IW * i + abi.IT_POOL] for i in range(K[ai + abi.AI_NITEMS])]
                assert items == [low.pool_ix[it.pool] for it in st.hold.items]
