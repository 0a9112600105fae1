"""The one process pool (explorer/runtime/pool.py) under every process pool
of the explorer: calls and arrays through the pipes, and its supervision
(a worker lost, busy or idle, raising, hung, unbuilt) naming the worker;
no process is left behind. (Each pool's users killed with SIGKILL:
tests/explorer/test_supervised_pools.py.)"""

import multiprocessing
import os
import signal
import time

import numpy as np
import pytest

from explorer.model import ArrayFallback
from explorer.outcome import WorkerFailed
from explorer.runtime.pool import Processes


class _Echo:
    def __init__(self, wid):
        self.wid = wid

    def echo(self, *args):
        return (self.wid, *args)

    def double(self, a):
        a *= 2  # writable as it arrived
        return a

    def nap(self, seconds):
        time.sleep(seconds)
        return self.wid

    def fall(self):
        raise ArrayFallback("a row must grow")

    def boom(self):
        raise ValueError("no")

    def pid(self):
        return os.getpid()

    def bye(self):
        os._exit(3)


def test_calls_and_arrays_through_the_pipes():
    with Processes(_Echo, 2) as pool:
        assert pool.call_all("echo", [(1,), ("x", None)]) == [(0, 1), (1, "x", None)]
        a = np.arange(12, dtype=np.int16).reshape(3, 4)
        got = pool.call_all("double", [(a,), (a[:, ::2],)])  # out of band, and a strided one in the pickle
        assert got[0].dtype == np.int16 and got[0].shape == (3, 4) and (got[0] == 2 * a).all()
        assert (got[1] == 2 * a[:, ::2]).all()
        assert got[0].flags.writeable
        empty = pool.call_all("double", [(np.zeros((0, 5), np.uint64),), (np.zeros(0),)])
        assert empty[0].shape == (0, 5) and empty[0].dtype == np.uint64 and empty[1].shape == (0,)
        procs = pool.procs
    assert not any(p.is_alive() for p in procs)


def test_a_raising_worker_is_named_and_a_passing_exception_is_raised_as_it_is():
    with Processes(_Echo, 2, passes=(ArrayFallback,)) as pool:
        pool.send(1, "fall")
        with pytest.raises(ArrayFallback, match="a row must grow"):
            pool.recv(1)
        assert pool.call_all("echo", [(), ()]) == [(0,), (1,)]  # still serving
        pool.send(0, "boom")
        with pytest.raises(WorkerFailed, match=r"^worker 0 raised ValueError: no$") as e:
            pool.recv(0)
        assert "Traceback" in e.value.detail and pool.gone == {0}
    assert not multiprocessing.active_children()


def _unbuilt(wid):
    if wid == 1:
        raise RuntimeError("no model here")
    return _Echo(wid)


def test_a_worker_whose_object_cannot_be_built_says_so_at_its_first_call():
    with Processes(_unbuilt, 2, name=lambda w, tag: f"partition {w}") as pool:
        with pytest.raises(WorkerFailed, match=r"^partition 1 raised RuntimeError: no model here$"):
            pool.call_all("echo", [(), ()])
    assert not multiprocessing.active_children()


def test_an_idle_worker_killed_while_another_works_is_named():
    with Processes(_Echo, 2) as pool:
        pid = pool.call_all("pid", [(), ()])[1]
        pool.send(0, "nap", 30)
        os.kill(pid, signal.SIGKILL)
        t0 = time.monotonic()
        with pytest.raises(WorkerFailed, match=r"^worker 1 died \(killed by SIGKILL\)$"):
            pool.recv(0)
        assert time.monotonic() - t0 < 10
    assert not multiprocessing.active_children()  # the busy one too


def test_an_answer_given_before_the_worker_ended_is_not_lost():
    with Processes(_Echo, 2) as pool:
        pool.send(0, "echo", "first")
        pool.send(1, "nap", 1.0)
        time.sleep(0.5)
        os.kill(pool.procs[0].pid, signal.SIGKILL)  # it has answered: its answer is read
        assert pool.recv(1) == 1
        assert pool.recv(0) == (0, "first")
        pool.send(1, "nap", 30)
        with pytest.raises(WorkerFailed, match=r"^worker 0 died \(killed by SIGKILL\)$"):
            pool.recv(1)  # then it is lost, idle
    with Processes(_Echo, 1) as pool:
        pool.send(0, "bye")
        with pytest.raises(WorkerFailed, match=r"^worker 0 died \(exit code 3\)$"):
            pool.recv(0)
    assert not multiprocessing.active_children()


def test_a_hung_worker_past_the_deadline_and_the_next_answer_of_any():
    t0 = time.perf_counter()
    with Processes(_Echo, 2, deadline=t0 + 0.3, time_limit=0.3, name=lambda w, tag: f"search {tag}") as pool:
        pool.send(0, "nap", 0.1, tag="a")
        pool.send(1, "nap", 60, tag="b")
        assert pool.next() == (0, "a", 0)
        with pytest.raises(WorkerFailed, match=r"^search b had not answered for \d+\.\d s when the time limit "
                                               r"\(0\.3 s\) came$") as e:
            pool.next()
        assert e.value.hung == ("time_limit", 0.3) and e.value.wid == 1
    assert time.perf_counter() - t0 < 15
    assert not multiprocessing.active_children()
