"""Events read by name: the engine decodes the kernel's event records into
the NamedTuples of serq/semantics/events.py (the kind first, so each is
still the plain tuple of its fields), nothing else reads an event by
position (bench/count_indexings.py)."""

import importlib.util
import pickle
import random
from pathlib import Path

import numpy as np
import pytest

from serq.lang.load import load_text
from serq.semantics import events as ev_mod
from serq.semantics.kernel.abi import EVW
from serq.semantics.model import Model
from tests.fixtures import TWO_CHATS

ROOT = Path(__file__).resolve().parent.parent.parent

KINDS = {
    "arrive": ev_mod.Mark, "turn": ev_mod.Mark, "at_turn": ev_mod.Mark, "end": ev_mod.Mark,
    "joined": ev_mod.Mark, "draw": ev_mod.Draw, "choose": ev_mod.Draw, "spawn": ev_mod.Spawn,
    "queued": ev_mod.Queued, "stuck": ev_mod.Queued, "hit": ev_mod.Units, "drop": ev_mod.Units,
    "release": ev_mod.Release, "evict": ev_mod.Evict, "admit": ev_mod.Admit, "preempt": ev_mod.Preempt,
    "iterate": ev_mod.Iterate, "serve": ev_mod.Serve, "run_done": ev_mod.RunDone, "fault": ev_mod.Fault,
}


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _walk_events(seed: int = 5, steps: int = 60) -> list:
    """The events of every transition along one random walk of TWO_CHATS."""
    m = Model(load_text(TWO_CHATS).program)
    rng = random.Random(seed)
    s = m.initial_state()
    out = []
    for _ in range(steps):
        ts = m.transitions(s)
        if not ts:
            break
        for _a, _nxt, evs in ts:
            out.extend(evs)
        _a, nxt, _evs = ts[rng.randrange(len(ts))]
        if nxt is None:
            break
        s = nxt
    return out


def test_decoded_events_are_named_and_still_their_plain_tuples():
    evs = _walk_events()
    kinds = {e.kind for e in evs}
    assert {"arrive", "admit", "iterate", "serve", "run_done"} <= kinds, kinds
    for e in evs:
        assert type(e) is KINDS[e.kind], e
        assert tuple(e)[:1] == (e.kind,) and e == tuple(e)
        assert pickle.loads(pickle.dumps(e)) == e
    serve = next(e for e in evs if e.kind == "serve")
    assert serve.phase in ev_mod.PHASES and serve.done is not None and serve.done <= serve.total
    it = next(e for e in evs if e.kind == "iterate")
    assert set(it.shape) == {"ntok", "ndec", "nreq", "kvb"}


def test_a_coalesced_serve_and_a_fault_read_by_name():
    s = ev_mod.serve(2, 40, "decode")
    assert s == ("serve", 2, 40, "decode", None, None, None, None) and s.done is None and s.pool is None
    assert ev_mod.first_token(s) and not ev_mod.first_token(ev_mod.serve(2, 40, "prefill"))
    f = ev_mod.fault("overflow", "a count left the 64-bit range")
    assert (f.kind, f.what, f.message) == ("fault", "overflow", "a count left the 64-bit range")


def test_an_unknown_event_code_is_refused():
    low = Model(load_text(TWO_CHATS).program).engine.low
    rec = np.zeros((1, EVW), np.int64)
    rec[0, 0] = 99
    with pytest.raises(AssertionError, match="unknown event code 99"):
        ev_mod.decode(low, rec, lambda sid: 0)


def test_no_event_read_by_position_outside_its_module():
    mod = _bench("count_indexings")
    files = [f for f in sorted((ROOT / "serq").rglob("*.py")) if mod.counted(f, mod.DEFINES_EVENTS)]
    files += sorted((ROOT / "tests").rglob("*.py"))
    found = [(f.relative_to(ROOT), line, text) for f in files for line, text in mod.event_indexings(f)]
    assert found == [], found
    assert not mod.counted(ROOT / mod.DEFINES_EVENTS, mod.DEFINES_EVENTS)


def test_the_event_rule_counts_fields_not_elements(tmp_path):
    mod = _bench("count_indexings")
    f = tmp_path / "x.py"
    f.write_text("a = e[1]\nb = events[0]\nc = events[cut][2]\nd = e.sid\nx = stuck[2]\ny = s[1]\n")
    assert [t for _, t in mod.event_indexings(f)] == ["e[1]", "events[cut][2]", "stuck[2]"]
