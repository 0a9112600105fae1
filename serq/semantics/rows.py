"""States as packed rows for the explorer: a state is its row (bytes), with
its fingerprint and flags computed by the kernel when it was made; the
state tuple of `serq.model` is decoded only when something reads it (a
trace, a property that needs words, a test).

`Rows.expand` computes every successor of a row in one kernel call
(`kernel/canon.py`): the explorer's hot loop is a lookup."""

from __future__ import annotations

import numpy as np

from serq.semantics.engine import Engine
from serq.semantics.kernel.abi import R_FAULT

KIND_NAMES = ("arrive", "turn", "iterate")
F_FAULT, F_STUCK, F_DONE = 1, 2, 4


class RowState:
    """A state as a row. Reads like the state tuple (decoded on first use);
    pickles as the tuple (a worker process re-packs it)."""

    __slots__ = ("rows", "row", "cap", "fp", "flags", "_t")

    def __init__(self, rows: "Rows", row: bytes, cap: int, fp: int, flags: int):
        self.rows, self.row, self.cap, self.fp, self.flags, self._t = rows, row, cap, fp, flags, None

    def tuple(self):
        if self._t is None:
            self._t = self.rows.decode(self)
        return self._t

    def __getitem__(self, i):
        return self.tuple()[i]

    def __iter__(self):
        return iter(self.tuple())

    def __len__(self):
        return 4

    def __eq__(self, other):
        if isinstance(other, RowState):
            return self.row == other.row and self.cap == other.cap or self.tuple() == other.tuple()
        return self.tuple() == other

    def __hash__(self):
        return hash(self.tuple())

    def __repr__(self):
        return repr(self.tuple())

    def __reduce__(self):
        return (tuple, (self.tuple(),))


class Rows:
    """The kernel's successors, canonical form and fingerprint for one
    model's engine."""

    def __init__(self, engine: Engine, symmetry: bool, keep_pos: bool):
        from serq.semantics.kernel import canon

        self.e = engine
        self.canon = canon
        self.sym = 1 if symmetry else 0
        self.keep_pos = 1 if keep_pos else 0
        self._out = 64
        self._alloc()
        self._memo_key = None
        self._memo: list = []

    def _alloc(self) -> None:
        W = self.e.W
        self.outs = np.zeros((self._out, W), np.int64)
        self.acts = np.zeros((self._out, 4), np.int64)
        self.choices = np.zeros(self._out * 16 + 64, np.int64)
        self.fps = np.zeros(self._out, np.uint64)
        self.flags = np.zeros(self._out, np.int64)
        self.tmp = np.zeros(3 * W + 64, np.int64)
        self.row = np.zeros(W, np.int64)
        self._cap = self.e.cap

    def _fit(self) -> None:
        if self._cap != self.e.cap:
            self._alloc()

    # ------------------------------------------------------------ packing
    def pack(self, state) -> RowState:
        """A state tuple (or a row of another capacity) as a RowState."""
        if isinstance(state, RowState) and state.cap == self.e.cap:
            return state
        t = state.tuple() if isinstance(state, RowState) else state
        self.e.load(t)
        self._fit()
        W = self.e.W
        fp = int(self.canon.fp_of(self.e.K, self.e.w, self.tmp, self.sym, self.keep_pos))
        flags = int(self.canon.row_flags(self.e.K, self.e.w))
        rs = RowState(self, self.e.w[:W].tobytes(), self.e.cap, fp, flags)
        rs._t = t
        return rs

    def decode(self, rs: RowState):
        e = self.e
        if rs.cap != e.cap:
            raise AssertionError("a row of an old capacity is decoded through its tuple")
        e.w[: e.W] = np.frombuffer(rs.row, np.int64)
        e._loaded = None
        fault = None
        if rs.flags & F_FAULT:
            fault = e._fault(int(e.w[R_FAULT]))
        return e.state(fault)

    # ------------------------------------------------------------ successors
    def expand(self, rs: RowState) -> list:
        """[(action, successor RowState)] in the model's action order."""
        if rs is self._memo_key:
            return self._memo
        while True:
            rs = self.pack(rs)
            e = self.e
            self.row[:] = np.frombuffer(rs.row, np.int64)
            k = self.canon.expand(e.K, e.w, self.row, self.outs, self.acts, self.choices, self.fps, self.flags,
                                  self.tmp, self.sym, self.keep_pos)
            if k == -1:
                self._out *= 4
                self._alloc()
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
