"""Expansion of frontier chunks by worker processes for the array engine.

The model's `array_expand` (the kernel, most of a run's cost) runs in N
worker processes, each with its own model built from the ModelFactory; the
calling process keeps the one fingerprint table and walks each chunk's
successors in order, so a run with workers gives the sequential array
engine's verdict, counts and trace exactly. Chunks travel as raw array
bytes over pipes, a few ahead of the one being walked.

A worker that dies or fails ends the run with `WorkerFailed` (its id and
cause); the others are stopped and joined (no process is left behind)."""

from __future__ import annotations

import multiprocessing
import traceback
from collections import deque
from typing import Any

import numpy as np

from explorer.strategies.arrays.narrow import narrow as _narrow
from explorer.runtime.interrupt import worker_signals
from explorer.outcome import WorkerFailed, exit_cause
from explorer.runtime.supervise import await_answer, lost, reap

__all__ = ["Expanders", "WorkerFailed"]  # WorkerFailed: from outcome.py




def _pack(arrays) -> list[bytes]:
    out = []
    for a in arrays:
        a = np.ascontiguousarray(a)
        out.append(f"{a.dtype.str};{','.join(map(str, a.shape))}".encode())
        out.append(a.tobytes())
    return out


def _unpack(parts: list[bytes]) -> list[np.ndarray]:
    out = []
    for i in range(0, len(parts), 2):
        dt, shape = parts[i].decode().split(";")
        dims = tuple(int(x) for x in shape.split(",") if x)
        out.append(np.frombuffer(parts[i + 1], dtype=np.dtype(dt)).reshape(dims))
    return out


def _send(conn, arrays) -> None:
    parts = _pack(arrays)
    conn.send(len(parts))
    for p in parts:
        conn.send_bytes(p)


def _recv(conn, wid: int) -> list[np.ndarray]:
    n = conn.recv()
    if isinstance(n, str):
        if n.startswith("fallback:"):
            from explorer.model import ArrayFallback

            raise ArrayFallback(n[9:])
        lines = [x.strip() for x in n.splitlines() if x.strip()]
        raise WorkerFailed(wid, "raised " + (lines[-1] if len(lines) > 1 else "an error"), detail=n)
    return _unpack([conn.recv_bytes() for _ in range(n)])


def _worker(conn, factory, wid: int) -> None:
    worker_signals()
    try:
        m = factory()
        while True:
            n = conn.recv()
            if n is None:
                return
            (rows,) = _unpack([conn.recv_bytes() for _ in range(n)])
            succ, parent, action, fps, flags = m.array_expand(rows.astype(np.int64))
            _send(conn, (_narrow(succ), parent, action, fps, flags))  # fewer bytes through the pipe
    except (EOFError, KeyboardInterrupt):
        return
    except Exception as e:
        from explorer.model import ArrayFallback

        msg = f"fallback:{e}" if isinstance(e, ArrayFallback) else f"worker {wid} failed:\n{traceback.format_exc()}"
        try:
            conn.send(msg)
        except (OSError, EOFError):
            pass
    except BaseException:  # reported to the coordinator with its cause
        try:
            conn.send(f"worker {wid} failed:\n{traceback.format_exc()}")
        except (OSError, EOFError):
            pass


class Expanders:
    """`expand(chunks)`: the successors of each chunk, in order, computed by
    the workers (each chunk to the next worker in turn, up to `ahead`
    chunks in flight)."""

    def __init__(self, factory: Any, n: int, time_limit: float | None = None) -> None:
        import time

        self.time_limit = time_limit
        self.deadline = None if time_limit is None else time.perf_counter() + time_limit
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        self.conns, self.procs = [], []
        for w in range(n):
            a, b = ctx.Pipe()
            p = ctx.Process(target=_worker, args=(b, factory, w), daemon=True)
            p.start()
            b.close()
            self.conns.append(a)
            self.procs.append(p)

    def _submit(self, wid: int, chunk) -> None:
        conn = self.conns[wid]
        parts = _pack([chunk])
        try:
            conn.send(len(parts))
            for p in parts:
                conn.send_bytes(p)
        except (OSError, EOFError):
            raise lost(self.procs[wid], wid) from None

    def _wait(self, wid: int):
        """Worker wid's result; a death or (past the time limit) no answer
        is a WorkerFailed naming it. Polls, so a signal is seen meanwhile."""
        for w, p in enumerate(self.procs):  # one that died idle (a level of one chunk leaves it so) is lost too
            if w != wid and p.exitcode is not None:
                raise WorkerFailed(w, exit_cause(p.exitcode))
        try:
            await_answer(self.conns[wid], self.procs[wid], wid, self.deadline, self.time_limit)
            return _recv(self.conns[wid], wid)
        except (OSError, EOFError):
            raise lost(self.procs[wid], wid) from None

    def expand(self, chunks):
        """Yields (meta, successors) for each (meta, rows), in order. Chunk i goes
        to worker i mod N; one chunk in flight per worker, the next one sent
        as soon as a worker's result is in (so no pipe fills both ways)."""
        n = len(self.conns)
        it = iter(chunks)
        pending: deque = deque()
        for wid in range(n):
            item = next(it, None)
            if item is None:
                break
            self._submit(wid, item[1])
            pending.append((wid, item[0]))
        while pending:
            wid, meta = pending.popleft()
            res = self._wait(wid)
            nxt = next(it, None)
            if nxt is not None:
                self._submit(wid, nxt[1])
                pending.append((wid, nxt[0]))
            succ, parent, action, fps, flags = res
            yield meta, (succ, parent.copy(), action.copy(), fps.copy(), flags.copy())

    def close(self) -> None:
        for c in self.conns:
            try:
                c.send(None)
            except (OSError, EOFError):
                pass
        reap(self.procs, 1.0 * len(self.procs))  # busy or hung: terminated, then killed
        for c in self.conns:
            c.close()
