"""What the array engine keeps for liveness under fairness
(explorer/graph/fair.py), beside the edges' targets it keeps for the
livelock pass (`engine.Edges`): one byte an edge (its fairness class in
bits 0..6, bit 7 set on a progress edge) and 8 bytes a state (the mask of
the subjects waiting in it, from the model's `array_waiting`). With it
every edge is recorded, not only the non-progress ones: the livelock pass
then keeps the edges without bit 7."""

from __future__ import annotations

import numpy as np

from explorer.model import FAIR_SHIFT, PROGRESS

PROGRESS_BIT = 0x80  # an edge's byte: a progress edge


class FairRecord:
    def __init__(self) -> None:
        self.cls = np.zeros(1 << 16, np.uint8)
        self.wait = np.zeros(1 << 12, np.uint64)
        self.nedges = 0

    @staticmethod
    def walk_flags(flags: np.ndarray) -> np.ndarray:
        """The flags the walk sees: no edge is progress (every edge recorded)."""
        return flags & ~np.int64(PROGRESS)

    @staticmethod
    def edge_bytes(flags: np.ndarray, fps: np.ndarray, cut: np.ndarray) -> np.ndarray:
        """The bytes of a walked chunk's edges: every successor, in order,
        but those the depth bound cut (`cut`: their fingerprints)."""
        b = (((flags >> FAIR_SHIFT) & 0x7F) | np.where(flags & PROGRESS, PROGRESS_BIT, 0)).astype(np.uint8)
        return b[~np.isin(fps, cut)] if cut.shape[0] else b

    def edges(self, flags: np.ndarray, fps: np.ndarray, cut: np.ndarray) -> None:
        """A walked chunk's edges recorded (`edge_bytes`)."""
        b = self.edge_bytes(flags, fps, cut)
        k = self.nedges + b.shape[0]
        if k > self.cls.shape[0]:
            grown = np.zeros(max(2 * self.cls.shape[0], k), np.uint8)
            grown[: self.nedges] = self.cls[: self.nedges]
            self.cls = grown
        self.cls[self.nedges: k] = b
        self.nedges = k

    def states(self, first: int, masks: np.ndarray) -> None:
        """The waiting masks of states first, first + 1, ..."""
        k = first + masks.shape[0]
        if k > self.wait.shape[0]:
            grown = np.zeros(max(2 * self.wait.shape[0], k), np.uint64)
            grown[:first] = self.wait[:first]
            self.wait = grown
        self.wait[first:k] = masks

    def livelock_graph(self, n: int, ofs: np.ndarray, dst: np.ndarray):
        """The non-progress edges alone: (n, offsets, targets)."""
        keep = (self.cls[: self.nedges] & PROGRESS_BIT) == 0
        src = np.repeat(np.arange(n, dtype=np.int64), np.diff(ofs))
        nofs = np.zeros(n + 1, np.int32)
        np.cumsum(np.bincount(src[keep], minlength=n), out=nofs[1:])
        return n, nofs, np.ascontiguousarray(dst[keep])
