"""States as packed rows for the explorer: a state is its row (bytes), with
its fingerprint and flags computed by the kernel when it was made; the
state tuple of `serq.semantics.model` is decoded only when something reads it (a
trace, a property that needs words, a test).

`Rows.expand` computes every successor of a row in one kernel call
(`kernel/canon.py`, through the kernel's one entry, `kernel/call.py`):
the explorer's hot loop is a lookup."""

from __future__ import annotations

import time

import numpy as np
from numba import njit

from explorer.runtime import compiled

from explorer.model import CHECK as AR_CHECK, DONE as AR_DONE, PROGRESS as AR_PROGRESS
from serq.semantics.engine import NO_ROWS, Engine
from serq.semantics.kernel.abi import CALL_CANON, CALL_EXPAND, CALL_FLAGS, CALL_FP
from serq.semantics.rowstate import F_DONE, F_FAULT, F_STUCK, RowState

KIND_NAMES = ("arrive", "turn", "iterate")


@njit(cache=True, nogil=True)
def explorer_flags(k, parent, acts, flags, stuck, plain, out_flags, out_action):
    """Per successor: the explorer's flags (done when faulted or every
    session ended; checked when faulted, when stuck and `stuck` is checked,
    or always when an invariant is not plain; progress for a turn) and its
    action index (its rank among its parent's successors)."""
    first = 0
    for i in range(k):
        if i == 0 or parent[i] != parent[i - 1]:
            first = i
        out_action[i] = i - first
        f = flags[i]
        r = 0
        if f & (F_FAULT | F_DONE):
            r |= AR_DONE
        if (f & F_FAULT) or (stuck and (f & F_STUCK)) or not plain:
            r |= AR_CHECK
        if acts[i, 0] == 1:  # a turn
            r |= AR_PROGRESS
        out_flags[i] = r


MASK64 = (1 << 64) - 1
FIRST_BUFFERS = 64 << 20  # bytes of successor rows a model's buffers start with, at most


class Rows:
    """The kernel's successors, canonical form and fingerprint for one
    model's engine."""

    def __init__(self, engine: Engine, symmetry: bool, keep_pos: bool, reduce_ranks: bool = False):
        from serq.semantics.kernel.abi import CO_KEEP_POS, CO_RANKS
        from serq.semantics.kernel.call import call

        self.e = engine
        self.call = call
        self.sym = 1 if symmetry else 0
        # the canonical form's options: keep preemption positions; reduce ranks (serq/semantics/ranks.py)
        self.opts = (CO_KEEP_POS if keep_pos else 0) | (CO_RANKS if reduce_ranks else 0)
        # successors a buffer holds at first: 64, fewer for rows of many
        # sessions (a row of a million sessions is about 200 MiB), grown as needed
        self._out = max(1, min(64, FIRST_BUFFERS // (8 * max(engine.W, 1))))
        self.limits = None  # explorer.runtime.limits.Limits: checked each time an expansion outgrows its buffers
        self._alloc()
        self._memo_key = None
        self._memo: list = []

    def _within(self, out: int, took: float) -> int:
        """The buffers' next size, `out`, or fewer when the last attempt
        (which filled the buffers in `took` seconds) says that many would
        not be filled before the time limit: the next attempt then fills
        what it can until about the limit, where the limit is checked,
        rather than overrunning it by a whole attempt (a state with 2^20
        successors). Such an attempt cannot end the expansion (it has more
        successors than the last one held); it keeps the search working
        until its limit, as every other expansion does."""
        deadline = None if self.limits is None else self.limits.deadline
        if deadline is None or took <= 0:
            return out
        fit = int(self._out * (deadline - time.perf_counter()) / took) + 1
        return max(1, min(out, fit))

    def _grow(self, out: int) -> None:
        """Buffers for `out` successors; a growth that would take the
        process past the memory bound is not made (LimitReached)."""
        if self.limits is not None:
            self.limits.room(8 * (self.e.W * (out - self._out) + 30 * out))
        self._out = out
        self._alloc()

    def _alloc(self) -> None:
        """One buffer for what the kernel's expansion fills (kernel/call.py's
        `expand_layout`), and views of it."""
        from serq.semantics.kernel.call import expand_layout

        W, n, nch = self.e.W, self._out, self._out * 16 + 64
        parent, fps, flags, acts, choices, outs, end = expand_layout(W, n, nch)
        self.buf = buf = np.zeros(end, np.int64)
        self._args = (W, n, nch)
        self.tmp = buf[:parent]  # the canonical form's scratch
        self.parent = buf[parent:fps]
        self.fps = buf[fps:flags].view(np.uint64)
        self.flags = buf[flags:acts]
        self.acts = buf[acts:choices].reshape(n, 4)
        self.choices = buf[choices:outs]
        self.outs = buf[outs:end].reshape(n, W)
        self.row = np.zeros((1, W), np.int64)
        self.arflags = np.zeros(n, np.int64)
        self.action = np.zeros(n, np.int64)
        self._cap = self.e.cap

    def _expand(self, rows: np.ndarray) -> int:
        """The kernel's expansion of rows: the number of successors, -1 when
        the buffers are full, -2 when a spawn needs a larger row."""
        e = self.e
        W, nout, nch = self._args
        return self.call(e.K, e.w, (CALL_EXPAND, 0, nout, nch, self.sym, self.opts, W), self.buf, rows)

    def canonical(self) -> np.ndarray:
        """The canonical form of the row in the engine's working row (a view
        of a buffer: valid until the next call)."""
        self._fit()
        m = self.call(self.e.K, self.e.w, (CALL_CANON, self.sym, self.opts, 0, 0, 0, 0), self.tmp, NO_ROWS)
        return self.tmp[:m]

    def warm(self) -> None:
        """Load the compiled kernel's entry points and the explorer's
        compiled functions every search and every analysis of a stored
        graph calls (numba's start-up, once per process;
        serq/semantics/entries.py), so that none is loaded in the middle
        of a search; the engine's own are loaded by the door
        (`explorer.check.start`)."""
        compiled.load(("search",))

    def _fit(self) -> None:
        if self._cap != self.e.cap:
            self._alloc()

    # ------------------------------------------------------------ packing
    def pack(self, state) -> RowState:
        """A state (a tuple, or a row made elsewhere: the simulator's, or one
        of another capacity) as a RowState with this model's fingerprint."""
        if isinstance(state, RowState):
            if state.rows is self and state.cap == self.e.cap:
                return state
            if state.cap == self.e.cap:
                self.e.load(state)
                return self._made(None)
            state = state.tuple()
        self.e.load(state)
        return self._made(state)

    def _made(self, t) -> RowState:
        self._fit()
        K, w = self.e.K, self.e.w
        fp = int(self.call(K, w, (CALL_FP, self.sym, self.opts, 0, 0, 0, 0), self.tmp, NO_ROWS)) & MASK64
        flags = int(self.call(K, w, (CALL_FLAGS, 0, 0, 0, 0, 0, 0), self.tmp, NO_ROWS))
        rs = RowState(self, w[: self.e.W].tobytes(), self.e.cap, fp, flags)
        rs._t = t
        return rs

    def decode(self, rs: RowState):
        return self.e.decode(rs)

    # ------------------------------------------------------------ successors
    def expand(self, rs: RowState) -> list:
        """[(action, successor RowState)] in the model's action order."""
        if rs is self._memo_key:
            return self._memo
        while True:
            rs = self.pack(rs)
            e = self.e
            self.row[0] = np.frombuffer(rs.row, np.int64)
            e._in_w = None  # expand steps in w
            t = time.perf_counter()
            k = self._expand(self.row)  # a batch of one row: one compiled entry for both
            if k == -1:
                if self.limits is not None:
                    self.limits.check()
                self._grow(self._within(self._out * 4, time.perf_counter() - t))
                continue
            if k == -2:
                t = rs.tuple()
                e._set_cap(e.cap * 2)
                self._alloc()
                rs = self.pack(t)
                continue
            break
        acts = self.acts[:k].tolist()
        ch = self.choices[: acts[-1][2] + acts[-1][3]].tolist() if k else []
        fps = self.fps[:k].tolist()
        flags = self.flags[:k].tolist()
        cap = e.cap
        out = []
        for i in range(k):
            kind, subj, c0, nq = acts[i]
            a = (KIND_NAMES[kind], subj, tuple(ch[c0:c0 + nq]))
            out.append((a, RowState(self, self.outs[i].tobytes(), cap, fps[i], flags[i])))
        self._memo_key, self._memo = rs, out
        return out

    # ------------------------------------------------------------ batches (explorer/strategies/arrays/engine.py)
    def batch(self, rows: np.ndarray):
        """Successors of every row of rows: their number (-2: a spawn needs
        a larger row); the successors' rows, parent indices, fingerprints
        and flags are in this object's buffers."""
        e = self.e
        if rows.shape[1] != e.W:
            raise ValueError("rows of another capacity")
        while True:
            e._in_w = None
            t = time.perf_counter()
            k = self._expand(rows)
            if k == -1:  # grown by halves of what it holds: a chunk's buffers stay near its size
                if self.limits is not None:
                    self.limits.check()
                self._grow(self._within(max(self._out + 1, self._out * 3 // 2), time.perf_counter() - t))
                continue
            return k

    def from_row(self, row: np.ndarray) -> RowState:
        e = self.e
        e.w[: e.W] = row
        e._in_w = None
        e._loaded = None
        return self._made(None)
