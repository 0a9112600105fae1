"""A state as a packed row: the kernel's row (bytes) with its capacity,
fingerprint (0 when not computed) and flags; the state tuple of
`serq.semantics.model` is decoded by its source (`rows.decode`) only when read."""

from __future__ import annotations

F_FAULT, F_STUCK, F_DONE = 1, 2, 4  # the kernel's row flags (kernel/entry.py: row_flags)


class RowState:
    """A state as a row. Reads like the state tuple (decoded on first use);
    pickles as the tuple (a worker process re-packs it)."""

    __slots__ = ("rows", "row", "cap", "fp", "flags", "_t", "levels", "works")

    def __init__(self, rows, row: bytes, cap: int, fp: int, flags: int):
        self.rows, self.row, self.cap, self.fp, self.flags, self._t = rows, row, cap, fp, flags, None
        self.levels = None  # units allocated per pool, when the step that made it computed them
        self.works = None  # per stage: might an iteration do something

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
