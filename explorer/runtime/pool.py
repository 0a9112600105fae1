"""The one pool of worker processes every engine's processes run in: the
jobs of `serq sweep` and `--swarm` (`Supervised`, supervise.py), the
chunk expansions of the array engine (`Expanders`,
strategies/arrays/workers.py) and the partitions of a model without rows
(strategies/partitions/backends.py).

`Processes(make, n)` forks n workers; worker w builds its own object,
`make(w)`, in the child (forked: `make` and what it closes over are never
pickled), and serves calls on it: `send(w, method, *args)` then `recv(w)`
(or `next()`, the first answer of any busy worker) gives what
`getattr(obj, method)(*args)` returned. A message is pickled with its
numpy arrays out of band (pickle protocol 5): their bytes go through the
pipe as they are and arrive writable, without a copy into the pickle.

Supervision: every wait watches the pipe of the worker waited for *and*
the process of every worker, in polls of 0.2 s (a signal is seen
meanwhile; one that comes names the worker waited for, `interrupted`
says so), so

- a worker that dies (SIGKILL, the OOM killer, a crash in compiled code),
  even an idle one, or raises, is `WorkerFailed` naming it (`name(w,
  tag)`, the tag its caller gave the call under way) and its cause: never
  a lost answer, never a hang; an exception of a type in `passes` is
  raised again as it is instead (the model cannot go on with rows);
- past `deadline` (perf_counter seconds) and a grace period, a worker
  still busy is `WorkerFailed(..., hung=...)`: the caller reports the time
  limit;
- `watch()`, called at every look, may raise to stop the wait (a memory
  bound);
- `close()` stops every worker: idle ones at once, busy ones terminated,
  then killed (`reap`): no process is left behind. A worker also dies
  with the process that started it (`die_with_parent`).

With `logs`, the workers' log records reach this process's handlers
(`multiprocessing_logging`, for the pool's lifetime)."""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import struct
import time
import traceback
from contextlib import contextmanager
from multiprocessing.connection import wait as wait_any
from typing import Any, Callable, Iterator

from explorer.outcome import WorkerFailed, exit_cause

__all__ = ["Processes", "reap", "die_with_parent", "last_line", "GRACE"]

GRACE = 2.0  # seconds a worker may overrun the deadline before it counts as hung
_POLL = 0.2  # seconds between two looks at the workers (and at the clock)
_STOP = "__stop__"


def reap(procs, wait: float = 1.0) -> None:
    """Join each process (up to `wait` seconds in all for those that stop by
    themselves); one still alive is terminated, then killed."""
    procs = list(procs)
    end = time.perf_counter() + wait
    for p in procs:
        p.join(max(0.0, end - time.perf_counter()))
    for p in procs:
        if p.is_alive():
            p.terminate()
            p.join(1.0)
        if p.is_alive():
            p.kill()
            p.join()


def die_with_parent() -> None:
    """In a worker process: be killed (SIGKILL) when the process that
    started it ends, even by SIGKILL (Linux's PR_SET_PDEATHSIG), so that a
    coordinator killed leaves no worker behind; where there is no such
    call, a worker ends when it next finds its pipe closed."""
    import ctypes
    import os
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    parent = multiprocessing.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # it ended before the call
        os._exit(1)


def last_line(tb: str) -> str:
    lines = [x.strip() for x in tb.strip().splitlines() if x.strip()]
    return lines[-1] if lines else "an error"


# ---------------------------------------------------------------- the wire


def _put(conn, msg: Any) -> None:
    """msg, pickled with its buffers (numpy arrays) out of band: their sizes,
    the pickle, then each buffer's bytes as they are."""
    bufs: list = []
    head = pickle.dumps(msg, protocol=5, buffer_callback=bufs.append)
    raws = [b.raw() for b in bufs]
    conn.send_bytes(struct.pack(f"<{len(raws)}Q", *(r.nbytes for r in raws)))
    conn.send_bytes(head)
    for r in raws:
        conn.send_bytes(r)


def _get(conn) -> Any:
    sizes = conn.recv_bytes()
    head = conn.recv_bytes()
    bufs = []
    for size in struct.unpack(f"<{len(sizes) // 8}Q", sizes):
        buf = bytearray(size)  # writable: the arrays built on it are too
        if size:
            conn.recv_bytes_into(buf)
        else:
            conn.recv_bytes()
        bufs.append(buf)
    return pickle.loads(head, buffers=bufs)


def _serve(conn, make: Callable[[int], Any], wid: int, passes: tuple) -> None:
    """A worker's loop: (method, args) -> ("ok", result) or ("raised",
    traceback, the exception when its type is in `passes`)."""
    from explorer.runtime.interrupt import worker_signals

    worker_signals()
    try:
        obj, broken = make(wid), None
    except BaseException:
        obj, broken = None, traceback.format_exc()
    try:
        while True:
            method, args = _get(conn)
            if method == _STOP:
                return
            if broken is not None:  # the object could not be built: said at the first call, then gone
                _put(conn, ("raised", broken, None))
                return
            try:
                reply = ("ok", getattr(obj, method)(*args))
            except BaseException as e:  # noqa: BLE001 - reported to the coordinator with its cause
                reply = ("raised", traceback.format_exc(), e if isinstance(e, passes) else None)
            try:
                _put(conn, reply)
            except (pickle.PicklingError, TypeError, AttributeError):
                _put(conn, ("raised", traceback.format_exc(), None))
    except (EOFError, OSError, KeyboardInterrupt):
        return


# ---------------------------------------------------------------- the pool


class Processes:
    """n supervised worker processes, worker w serving calls on `make(w)`.
    `name(w, tag)` names a worker in a failure (default `worker <w>`)."""

    def __init__(self, make: Callable[[int], Any], n: int, *, name: Callable[[int, Any], str] | None = None,
                 deadline: float | None = None, time_limit: float | None = None,
                 watch: Callable[[], None] | None = None, passes: tuple = (), logs: bool = False) -> None:
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.name = name or (lambda w, tag: f"worker {w}")
        self.deadline, self.time_limit, self.watch, self.passes = deadline, time_limit, watch, passes
        self.conns: list = []
        self.procs: list = []
        self.busy: list[tuple[Any, float] | None] = [None] * n  # per worker: (its call's tag, since when)
        self.gone: set[int] = set()  # workers lost (dead, raised, hung): no longer waited for
        self._logs = _worker_logs() if logs else None
        try:
            if self._logs is not None:
                self._logs.__enter__()
            for w in range(n):
                a, b = ctx.Pipe()
                p = ctx.Process(target=_serve, args=(b, make, w, passes), name=f"serq-worker-{w}", daemon=True)
                p.start()
                b.close()
                self.conns.append(a)
                self.procs.append(p)
        except BaseException:
            self.close()
            raise

    def __len__(self) -> int:
        return len(self.procs)

    # -- failures ----------------------------------------------------------------
    def _fail(self, w: int, cause: str, **kw) -> WorkerFailed:
        """The failure of worker w, which is given up."""
        tag = self.busy[w][0] if self.busy[w] else None
        self.busy[w] = None
        self.gone.add(w)
        return WorkerFailed(w, cause, name=self.name(w, tag), **kw)

    def _lost(self, w: int) -> WorkerFailed:
        self.procs[w].join(1.0)
        return self._fail(w, exit_cause(self.procs[w].exitcode))

    # -- calls -------------------------------------------------------------------
    def send(self, w: int, method: str, *args: Any, tag: Any = None) -> None:
        """Ask worker w for `method(*args)`; `tag` names the call in a failure."""
        self.busy[w] = (tag, time.perf_counter())
        try:
            _put(self.conns[w], (method, args))
        except (OSError, ValueError):
            raise self._lost(w) from None

    def _answer(self, w: int) -> Any:
        try:
            got = _get(self.conns[w])
        except (EOFError, OSError):
            raise self._lost(w) from None
        if got[0] == "raised":
            if got[2] is not None:
                self.busy[w] = None
                raise got[2]
            raise self._fail(w, "raised " + last_line(got[1]), detail=got[1])
        self.busy[w] = None
        return got[1]

    def _wait(self, want: int | None) -> int:
        """The worker whose answer is in: `want`, or any busy one (None).
        WorkerFailed for a worker found dead (busy or idle), or, past the
        deadline and the grace period, for the one waited for (the longest
        busy)."""
        answered = set()  # other workers that answered, then ended: read when their turn comes
        while True:
            conns = {self.conns[w]: w for w in ([want] if want is not None else range(len(self.procs)))
                     if self.busy[w] is not None and w not in self.gone}
            if not conns:
                raise RuntimeError("no call under way to wait for")
            watched = {self.procs[w].sentinel: w for w in range(len(self.procs))
                       if w not in self.gone and w not in answered}
            try:
                ready = wait_any(list(conns) + list(watched), _POLL)
            except KeyboardInterrupt as e:  # which worker was waited for, and how long
                w = want if want is not None else self._longest()[0]
                e.waiting = (w, time.perf_counter() - self.busy[w][1])
                raise
            if self.watch is not None:
                self.watch()
            for obj in ready:  # answers first: a worker that answered, then ended, is not lost
                if obj in conns:
                    return conns[obj]
            for obj in ready:
                w = watched.get(obj)
                if w is None:
                    continue
                if self.busy[w] is None or not self.conns[w].poll():  # (poll: an answer, or the pipe's end)
                    raise self._lost(w)
                answered.add(w)  # busy, its pipe readable: read when its turn comes
            now = time.perf_counter()
            if self.deadline is not None and now >= self.deadline + GRACE:
                w, since = (want, self.busy[want][1]) if want is not None else self._longest()
                raise self._fail(w, f"had not answered for {now - since:.1f} s when the time limit "
                                    f"({self.time_limit} s) came", hung=("time_limit", self.time_limit))

    def _longest(self) -> tuple[int, float]:
        return min(((w, b[1]) for w, b in enumerate(self.busy) if b is not None), key=lambda x: x[1])

    def recv(self, w: int) -> Any:
        """Worker w's answer to its call (supervised, as above)."""
        self._wait(w)
        return self._answer(w)

    def next(self) -> tuple[int, Any, Any]:
        """(worker, tag, answer) of the first busy worker to answer."""
        w = self._wait(None)
        tag = self.busy[w][0]
        return w, tag, self._answer(w)

    def call_all(self, method: str, args: list[tuple]) -> list[Any]:
        """`method(*args[w])` on every worker w, at once; the answers in
        worker order. (All are sent first, so the workers run together; no
        pipe fills both ways: a worker writes its answer only once it has
        read its whole call.)"""
        for w, a in enumerate(args):
            self.send(w, method, *a)
        return [self.recv(w) for w in range(len(args))]

    def idle(self) -> list[int]:
        """The workers neither busy nor lost."""
        return [w for w in range(len(self.procs)) if self.busy[w] is None and w not in self.gone]

    def close(self) -> None:
        """Stop every worker; no process is left behind."""
        for w in self.idle():
            try:
                _put(self.conns[w], (_STOP, ()))
            except (OSError, ValueError):
                pass
        reap(self.procs, wait=0.5 + 0.5 * len(self.procs))
        for c in self.conns:
            c.close()
        if self._logs is not None:
            logs, self._logs = self._logs, None
            logs.__exit__(None, None, None)

    def __enter__(self) -> "Processes":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextmanager
def _worker_logs() -> Iterator[None]:
    """Route worker log records through the parent's handlers while we run."""
    import multiprocessing_logging as mpl

    root = logging.getLogger()
    if (multiprocessing.get_start_method() != "fork" or not root.handlers
            or any(isinstance(h, mpl.MultiProcessingHandler) for h in root.handlers)):
        yield  # nothing to wrap, already installed by the application, or unsupported
        return
    mpl.install_mp_handler()
    wrappers = [h for h in root.handlers if isinstance(h, mpl.MultiProcessingHandler)]
    try:
        yield
    finally:
        mpl.uninstall_mp_handler()
        for h in wrappers:
            # Like MultiProcessingHandler.close() but without closing the
            # wrapped handler (it belongs to the application again) and
            # without joining: the receive thread drains the records still
            # queued into that handler and exits by itself (it polls every
            # 0.2 s, and waiting for it would add that to every run).
            h._is_closed = True
            logging.Handler.close(h)
