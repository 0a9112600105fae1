"""Rows at the narrowest integer width their values allow."""

from __future__ import annotations

import numpy as np


def narrow(rows: np.ndarray) -> np.ndarray:
    """A copy of rows as int8, int16 or int32 when every value fits."""
    if rows.size == 0:
        return rows.copy()
    lo, hi = int(rows.min()), int(rows.max())
    for t in (np.int8, np.int16, np.int32):
        info = np.iinfo(t)
        if info.min <= lo and hi <= info.max:
            return rows.astype(t)
    return rows.copy()
