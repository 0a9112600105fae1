"""A model without rows on several workers: the partitions driver with
partitions of Python states on worker processes
(explorer/strategies/partitions/objects.py) gives one process's verdict,
counts and trace; a worker that raises or hangs is named. (The array
engine's worker processes are checked the same way at the end.)"""

import multiprocessing
import re
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
    assert (par.stats.distinct, par.stats.generated, par.stats.queue, par.stats.max_depth) == (
        seq.stats.distinct, seq.stats.generated, seq.stats.queue, seq.stats.max_depth)
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


def test_the_engine_is_the_partitions_driver_and_refuses_a_checkpoint(tmp_path):
    """One level loop for rows and for Python states: the table gives the
    objects engine, which runs the partitions driver; a checkpoint (Python
    states have no file format) is refused, not ignored."""
    from explorer.check import engine_for
    from explorer.errors import PartitionError
    from explorer.settings import Settings
    from explorer.strategies.partitions.driver import objects_check

    f = ModelFactory(CounterPair, (3,))
    assert engine_for(f(), Settings(workers=2)).__name__ == "objects_on_processes"
    s = Settings(workers=2).but(strategy="partitioned", checkpoint=str(tmp_path / "cp"))
    with pytest.raises(PartitionError, match="a model without rows cannot be checkpointed"):
        objects_check(f(), f, s)
    assert not multiprocessing.active_children()
    with pytest.raises(PartitionError, match="the model does not offer the array protocol"):
        check(f, s)


def test_a_raising_worker_is_a_failed_verdict_naming_it():
    r = check(ModelFactory(_broken), workers=2)
    assert r.verdict == "failed" and r.exit_code == 18
    assert re.match(r"worker [01] raised IndexError: .*; stopped after \d+ distinct states, none of them a "
                    r"violation; exploration incomplete", r.message), r.message
    assert r.bound_reason in ("worker 0", "worker 1")
    assert not multiprocessing.active_children()  # the others were stopped


class _Hangs(Graph):
    """A model whose expansion of state 3 never returns."""

    def __init__(self):
        super().__init__({0: (1, 2), 1: (3,), 2: (3,), 3: (4,)}, done={4})

    def actions(self, state):
        if state == 3:
            time.sleep(3600)
        return super().actions(state)


def test_a_hung_worker_is_named_at_the_time_limit():
    t0 = time.monotonic()
    r = check(ModelFactory(_Hangs), workers=2, time_limit=0.5)
    assert time.monotonic() - t0 < 30
    assert r.verdict == "bound" and r.bound_reason == "time_limit"
    assert re.search(r"; worker [01] had not answered for \d+\.\d s when the time limit \(0\.5 s\) came$",
                     r.message), r.message
    assert not multiprocessing.active_children()


def _broken():
    g = Graph({0: (1, 2, 3, 4, 5)})
    g.actions = lambda state: [0, 1, 2, 3, 4, 5]  # index 5 is out of range
    return g


def test_worker_logs_reach_parent(caplog):
    with caplog.at_level(logging.DEBUG, logger="explorer.strategies.partitions.objects"):
        check(ModelFactory(CounterPair, (2,)), workers=2)
        # Records travel through the multiprocessing_logging queue and are
        # emitted by its receive thread: allow it a moment.
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not any(
            "partition 1: expanded" in r.getMessage() for r in caplog.records
        ):
            time.sleep(0.02)
    assert any("partition 1: expanded" in r.getMessage() for r in caplog.records)
    # Root handlers are restored after the run (mp handler uninstalled).
    import multiprocessing_logging as mpl

    assert not any(isinstance(h, mpl.MultiProcessingHandler) for h in logging.getLogger().handlers)


# ------------------------------------------------ the array engine's workers
def _array_broken():
    from explorer_toys import AsArrays

    return AsArrays(_broken(), 1)


def _array_hangs():
    from explorer_toys import AsArrays

    return AsArrays(_Hangs(), 1)


def test_a_raising_array_worker_process_is_named():
    r = check(ModelFactory(_array_broken), workers=2)
    assert r.verdict == "failed", r.message
    assert re.match(r"worker [01] raised IndexError: ", r.message), r.message
    assert not multiprocessing.active_children()


def test_a_hung_array_worker_process_is_named_at_the_time_limit():
    check(ModelFactory(_array_hangs, ()), workers=1, max_states=3)  # compiled: the limit is not spent on it
    r = check(ModelFactory(_array_hangs), workers=2, time_limit=1.5)
    assert r.verdict == "bound" and r.bound_reason == "time_limit"
    assert re.search(r"; worker [01] had not answered for \d+\.\d s when the time limit \(1\.5 s\) came$",
                     r.message), r.message
    assert not multiprocessing.active_children()


class _ThreadsRaise:
    """Array workers on threads (`array_expander`) whose expansion raises."""

    def __init__(self):
        from explorer_toys import AsArrays

        self.a = AsArrays(CounterPair(5), 2)
        self.capabilities = self.a.capabilities | {"row_threads"}

    def __getattr__(self, name):
        return getattr(self.a, name)

    def array_expander(self):
        def expand(rows):
            raise ValueError("no row for you")
        return expand


def test_a_raising_array_worker_thread_is_named():
    r = check(_ThreadsRaise(), workers=2)
    assert r.verdict == "failed" and r.exit_code == 18
    assert re.match(r"worker [01] raised ValueError: no row for you; stopped after \d+ distinct states", r.message)
