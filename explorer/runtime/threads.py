"""Worker threads for the partitions run in this process
(`strategies/partitions/driver.py`, `--partitions K --workers N`): a pool of
daemon threads whose futures are waited for in short polls, so that

- a worker that never returns (a kernel call that does not end) cannot
  hold the search past its time limit: once the limit and a grace period
  have passed, waiting for it raises `WorkerFailed` naming it (`hung`: the
  search ends with the verdict "bound", the worker named, the statistics
  so far);
- a signal is seen while the main thread waits;
- the process can exit with such a thread still running: the threads are
  daemons, and closing the pool does not wait for a busy one.
  (`concurrent.futures.ThreadPoolExecutor` joins its threads when the
  interpreter exits, which would hang on a stuck one.)

Python cannot stop a thread: a stuck one is abandoned, with its buffers,
and ends with the process."""

from __future__ import annotations

import itertools
import queue
import threading
import time
from concurrent.futures import Future

from explorer.outcome import WorkerFailed

__all__ = ["Workers", "GRACE"]

GRACE = 2.0  # seconds a worker may overrun the time limit before it counts as hung
_POLL = 0.2  # seconds between two looks at a future (and at the clock)


class _Job(Future):
    """A future whose `result()` waits in polls, against the pool's
    deadline: past it (and the grace period) it raises WorkerFailed for
    the worker running it."""

    def __init__(self, pool: "Workers") -> None:
        super().__init__()
        self.pool = pool
        self.wid: int | None = None  # the worker running it, once started
        self.started = 0.0

    def result(self, timeout=None):  # noqa: D401 - the Future protocol
        while True:
            try:
                return super().result(_POLL)
            except TimeoutError:
                self.pool.check_hung(self)


class Workers:
    """`submit(fn, *args)` -> a future; `n` daemon threads named worker_0 ...;
    `deadline` (perf_counter seconds, or None) and `time_limit` (for the
    message) bound how long a future is waited for."""

    def __init__(self, n: int, deadline: float | None = None, time_limit: float | None = None) -> None:
        self.deadline, self.time_limit = deadline, time_limit
        self._q: queue.PriorityQueue = queue.PriorityQueue()  # (0: a job / 2: stop, order, job)
        self._order = itertools.count()
        self._busy: list[float | None] = [None] * n  # per thread: since when its job runs
        self._threads = [threading.Thread(target=self._run, args=(i,), name=f"worker_{i}", daemon=True)
                         for i in range(n)]
        for i, t in enumerate(self._threads):
            try:
                t.start()
            except RuntimeError as e:  # the system refused a thread (its limits, its memory): those started stop
                from explorer.outcome import WorkerFailed
                from explorer.runtime.memory import thread_refused

                self._threads = self._threads[:i]
                self.close()
                raise thread_refused(e) or WorkerFailed(i, f"could not be started: {e}") from None

    def _run(self, wid: int) -> None:
        while True:
            item = self._q.get()[2]
            if item is None:
                return
            job, fn, args = item
            if not job.set_running_or_notify_cancel():
                continue
            job.wid = wid
            job.started = self._busy[wid] = time.perf_counter()
            try:
                job.set_result(fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to the waiting thread
                job.set_exception(e)
            self._busy[wid] = None
            del job, fn, args, item

    def submit(self, fn, *args) -> Future:
        """A future for fn(*args) (jobs start in the order submitted)."""
        job = _Job(self)
        self._q.put((0, next(self._order), (job, fn, args)))
        return job

    def check_hung(self, job: _Job | None = None) -> None:
        """Raise WorkerFailed if `job` (None: any job) is still not done
        past the deadline and the grace period."""
        if self.deadline is None or (job is not None and job.done()):
            return
        now = time.perf_counter()
        if now < self.deadline + GRACE:
            return
        if job is None and not any(t is not None for t in self._busy):
            return
        if job is not None and job.wid is not None:
            wid, since = job.wid, now - job.started
        else:  # queued behind busy workers: name the one busy the longest
            busy = [(t, w) for w, t in enumerate(self._busy) if t is not None]
            t, wid = min(busy) if busy else (self.deadline, 0)
            since = now - t
        raise WorkerFailed(wid, f"had not answered for {since:.1f} s when the time limit ({self.time_limit} s) came",
                           hung=("time_limit", self.time_limit))

    def close(self) -> None:
        """Stop the threads that are idle or will be; never waits for a
        busy one (a stuck thread is abandoned: it is a daemon). Jobs not
        started are cancelled."""
        while True:
            try:
                item = self._q.get_nowait()[2]
            except queue.Empty:
                break
            if item is not None:
                item[0].cancel()
        for _ in self._threads:
            self._q.put((2, next(self._order), None))
        end = time.perf_counter() + _POLL
        for t in self._threads:
            t.join(max(0.0, end - time.perf_counter()))
