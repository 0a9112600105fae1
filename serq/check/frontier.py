"""What a sweep's cells say together: which way each constant helps, whether
the verdict is monotone, the boundary in each row, the Pareto frontier.

The input is the cells evaluated: a cell is a tuple of values (one per
constant, in the order of the `--vary` flags) and its outcome `"pass"`,
`"fail"` or None (a bound, an error, a worst case cut by a limit: no
answer). Nothing here assumes the grid is full (a bisection evaluates a
few cells per row) or that the outcome is monotone: monotonicity is
checked on the cells there are.

An *orientation* gives each constant a sign: +1 when more of it should
help (a capacity), -1 when less should (a block size). The outcome is
*monotone* under an orientation when no passing cell has a failing cell
at or above it in every constant (above: in the direction that helps).
That is exactly when some monotone outcome over the whole grid agrees
with every cell evaluated (the passing cells' upward closure is one). The
orientation reported is the first without such a pair in the order
(+1, ...) first, so a constant whose cells never show a change counts as
"more helps"; when every orientation has a pair the verdict is not
monotone, and the pairs of the preferred orientation (or, for a constant
that is monotone in neither direction along one row, a pair each way)
show it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

Cell = tuple  # (value of the first constant, ...)
Grid = dict  # Cell -> "pass" | "fail" | None


def above(a: Cell, b: Cell, orient: tuple) -> bool:
    """b is at or above a in every constant (under the orientation), b != a."""
    return a != b and all(s * (y - x) >= 0 for x, y, s in zip(a, b, orient))


def violations(grid: Grid, orient: tuple) -> list[tuple[Cell, Cell]]:
    """(passing cell, failing cell at or above it), sorted."""
    passes = sorted(c for c, o in grid.items() if o == "pass")
    fails = sorted(c for c, o in grid.items() if o == "fail")
    return [(p, f) for p in passes for f in fails if above(p, f, orient)]


def line_pairs(grid: Grid, axis: int) -> tuple[tuple | None, tuple | None]:
    """Along one constant, other constants equal: the first pair (pass,
    fail above it in value) and the first pair (pass, fail below it)."""
    up = down = None
    for p in sorted(c for c, o in grid.items() if o == "pass"):
        for f in sorted(c for c, o in grid.items() if o == "fail"):
            if all(x == y for i, (x, y) in enumerate(zip(p, f)) if i != axis):
                if f[axis] > p[axis] and up is None:
                    up = (p, f)
                elif f[axis] < p[axis] and down is None:
                    down = (p, f)
    return up, down


@dataclass
class Monotony:
    orient: tuple  # the sign of every constant (the one reported, monotone or not)
    holds: bool | None  # None: no cell passes where another fails (nothing to check)
    pairs: list = field(default_factory=list)  # (passing, failing above it) under `orient`, sorted
    neither: dict = field(default_factory=dict)  # axis -> (pair fail above, pair fail below): monotone in neither direction


def monotony(grid: Grid, n_axes: int) -> Monotony:
    known = [o for o in grid.values() if o is not None]
    plain = (1,) * n_axes
    if "pass" not in known or "fail" not in known:
        return Monotony(plain, None)
    for orient in itertools.product((1, -1), repeat=n_axes):
        if not violations(grid, orient):
            return Monotony(orient, True)
    neither, preferred = {}, []
    for a in range(n_axes):
        up, down = line_pairs(grid, a)
        if up and down:
            neither[a] = (up, down)
        preferred.append(-1 if up and not down else 1)
    orient = tuple(preferred)
    return Monotony(orient, False, violations(grid, orient), neither)


def rows_of(axes_values: list, col: int) -> list[tuple]:
    """Every row: the values of the constants other than the column's, in order."""
    return list(itertools.product(*[vs for i, vs in enumerate(axes_values) if i != col]))


def cell_at(row: tuple, col: int, v: int) -> Cell:
    return row[:col] + (v,) + row[col:]


@dataclass
class Boundary:
    row: tuple  # the other constants' values
    value: int | None  # the first passing value in the column's direction (None: none passes)
    exact: bool  # the value before it fails (or it is the range's first): the boundary is there


def boundaries(grid: Grid, axes_values: list, col: int, sign: int) -> list[Boundary]:
    """Per row, the smallest passing value of the column's constant (the
    largest when its sign is -1), and whether the value just before it
    is known to fail."""
    out = []
    for row in rows_of(axes_values, col):
        vs = axes_values[col] if sign > 0 else list(reversed(axes_values[col]))
        first = next((v for v in vs if grid.get(cell_at(row, col, v)) == "pass"), None)
        exact = False
        if first is not None:
            k = vs.index(first)
            exact = k == 0 or grid.get(cell_at(row, col, vs[k - 1])) == "fail"
        out.append(Boundary(row, first, exact))
    return out


def pareto(grid: Grid, orient: tuple) -> list[Cell]:
    """The passing cells no other passing cell is below (under the
    orientation): the least of every constant that still passes. In
    orientation order, a cell is kept unless a kept one is below it (a
    cell below another comes first, and the least of those below is kept)."""
    key = lambda c: tuple(s * x for x, s in zip(c, orient))  # noqa: E731
    kept: list[Cell] = []
    for c in sorted((c for c, o in grid.items() if o == "pass"), key=key):
        if not any(above(k, c, orient) for k in kept):
            kept.append(c)
    return sorted(kept)
