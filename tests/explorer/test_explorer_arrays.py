"""The array engine agrees with the sequential engine on the toys: pass,
invariant violation, deadlock, livelock (cycle and self-loop), limits."""

from __future__ import annotations

import pytest

from explorer.search import check
from explorer_toys import AsArrays, CounterPair, TwoLocks, retry_loop

CASES = [
    ("pass", lambda: CounterPair(4), 2),
    ("violation", lambda: CounterPair(4, limit=5), 2),
    ("deadlock", lambda: TwoLocks(), 4),
    ("livelock", lambda: retry_loop(), 1),
    ("self-loop", lambda: retry_loop(self_loop=True), 1),
]


def key(r):
    s = r.stats
    return (r.verdict, r.message, r.kind, r.replay_path, r.fingerprint, r.lasso_start, r.bound_reason,
            s.generated, s.distinct, s.queue, s.max_depth)


@pytest.mark.parametrize("name,make,width", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("kw", [{}, {"max_states": 7}, {"max_depth": 2}])
def test_array_engine_equals_sequential(name, make, width, kw):
    arrays = check(AsArrays(make(), width), **kw)
    seq = check(make(), **kw)
    assert key(arrays) == key(seq)
    assert [st.state for st in arrays.trace] == [st.state for st in seq.trace]


@pytest.mark.parametrize("name,make,width", CASES, ids=[c[0] for c in CASES])
def test_array_engine_with_two_workers(name, make, width):
    assert key(check(AsArrays(make(), width), workers=2))[:-4] == key(check(make()))[:-4]
