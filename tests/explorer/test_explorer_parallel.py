import logging
import time

import pytest

from explorer import ModelFactory, check, render_text
from explorer_toys import CounterPair, Graph, TwoLocks

CASES = [
    ModelFactory(CounterPair, (12,)),
    ModelFactory(CounterPair, (9, 5)),
    ModelFactory(TwoLocks),
    ModelFactory(Graph, ({0: (1,), 1: (2, 3), 2: (1,), 3: ()},), dict(done={3}, np_edges={(1, 2), (2, 1)})),
]


@pytest.mark.parametrize("factory", CASES, ids=["pass", "violation", "deadlock", "livelock"])
def test_two_workers_same_verdict_counts_and_trace(factory):
    seq = check(factory)
    par = check(factory, workers=2)
    assert par.verdict == seq.verdict and par.kind == seq.kind
    assert par.stats.distinct == seq.stats.distinct
    assert par.stats.workers == 2
    assert render_text(par, with_stats=False) == render_text(seq, with_stats=False)


def test_parallel_bounds():
    f = ModelFactory(CounterPair, (12,))
    for kw in (dict(max_states=50), dict(max_depth=4)):
        seq, par = check(f, **kw), check(f, workers=2, **kw)
        assert par.verdict == seq.verdict == "bound"
        assert par.bound_reason == seq.bound_reason
        assert par.stats.distinct == seq.stats.distinct


def test_plain_model_works_in_parallel():
    r = check(CounterPair(5), workers=3)
    assert r.verdict == "pass" and r.stats.distinct == 36


def test_worker_error_is_raised():
    from explorer.parallel import WorkerError

    with pytest.raises(WorkerError):
        check(ModelFactory(_broken), workers=2)


def _broken():
    g = Graph({0: (1, 2, 3, 4, 5)})
    g.actions = lambda state: [0, 1, 2, 3, 4, 5]  # index 5 is out of range
    return g


def test_worker_logs_reach_parent(caplog):
    with caplog.at_level(logging.DEBUG, logger="explorer.parallel"):
        check(ModelFactory(CounterPair, (2,)), workers=2)
        # Records travel through the multiprocessing_logging queue and are
        # emitted by its receive thread: allow it a moment.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not any(
            "worker 1: expanded" in r.getMessage() for r in caplog.records
        ):
            time.sleep(0.02)
    assert any("worker 1: expanded" in r.getMessage() for r in caplog.records)
    # Root handlers are restored after the run (mp handler uninstalled).
    import multiprocessing_logging as mpl

    assert not any(isinstance(h, mpl.MultiProcessingHandler) for h in logging.getLogger().handlers)
