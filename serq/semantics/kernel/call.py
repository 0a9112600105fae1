"""The kernel's one entry point called from Python: `call(K, w, args,
buf, rows)`, args = (operation, a1, ..., a6), every operation of the kernel
Python uses (a step, every successor of a batch of rows, the canonical
form and fingerprint, an expression's value, ...). One entry, because
numba optimises and emits the machine code of each function Python calls
with everything it calls compiled into it: one entry per operation would
compile the step (most of the kernel) once for the simulator's step and
again for the explorer's expansion, and the evaluator and admission once
more for each small entry. The operation codes are abi.py's `CALL_*`; Python
builds the arguments in `serq/semantics/engine.py` and
`serq/semantics/rows.py`.

`rows` is the rows `CALL_EXPAND` expands (any 2-D array for the other
operations); it gives their successors in `buf`, laid out as
`expand_layout` says (the same offsets `serq/semantics/rows.py` makes its
views with): the canonical form's scratch, then per successor its
parent, fingerprint, flags, action (4 words), the answers, and the
successors' rows."""

from __future__ import annotations

import numpy as np

from serq.semantics.kernel.jit import exported, internal

from serq.semantics.kernel.abi import (
    CALL_CANON, CALL_EVAL_AT, CALL_EVAL_SHAPE, CALL_EVICTABLE, CALL_EXPAND, CALL_EXPLAIN, CALL_FLAGS, CALL_FP,
    CALL_LEVELS, CALL_MIGHT_WORK, CALL_STEP,
)
from serq.semantics.kernel.canon import canon, expand_batch, fp_of
from serq.semantics.kernel.core import evictable_sum
from serq.semantics.kernel.entry import eval_at, eval_shape, explain, levels, might_work, row_flags, run_step_packed

__all__ = ["call", "expand_layout"]


def expand_layout(W, nout, nch):
    """Offsets in buf of CALL_EXPAND's arrays after the canonical form's
    scratch: parent, fps, flags, acts, choices, outs, and the end (a plain
    function: Python's views of buf, serq/semantics/rows.py, call it too)."""
    parent = 3 * W + 64
    fps = parent + nout
    flags = fps + nout
    acts = flags + nout
    choices = acts + 4 * nout
    outs = choices + nch
    return parent, fps, flags, acts, choices, outs, outs + nout * W


_layout = internal(expand_layout)


@exported
def call(K, w, args, buf, rows):
    """The operation args[0] (abi.py's CALL_*) with args[1:] on the row in w:
    its result, an int (see CALL_*)."""
    op, a1, a2, a3, a4, a5, a6 = args
    if op == CALL_STEP:
        return run_step_packed(K, w, (a1, a2, a3, a4, a5, a6), buf)
    if op == CALL_EXPAND:
        W = a6
        parent, fps, flags, acts, choices, outs, end = _layout(W, a2, a3)
        succ = (buf[outs:end].reshape((a2, W)), buf[acts:choices].reshape((a2, 4)), buf[choices:outs],
                buf[fps:flags].view(np.uint64), buf[flags:acts])
        return expand_batch(K, w, rows, succ, buf[parent:fps], buf[0:parent], a4, a5)
    if op == CALL_FP:
        return np.int64(fp_of(K, w, buf, a1, a2))
    if op == CALL_CANON:
        return canon(K, w, buf, a1, a2)
    if op == CALL_FLAGS:
        return row_flags(K, w)
    if op == CALL_EVAL_AT:
        return eval_at(K, w, a1, a2, a3, a4)
    if op == CALL_EVAL_SHAPE:
        return eval_shape(K, w, a1, (a2, a3, a4), a5, a6, buf)
    if op == CALL_EXPLAIN:
        explain(K, w, a1, a2, a3, buf)
        return 0
    if op == CALL_MIGHT_WORK:
        return 1 if might_work(K, w, a1) else 0
    if op == CALL_LEVELS:
        levels(K, w, buf)
        return 0
    if op == CALL_EVICTABLE:
        return evictable_sum(K, w, a1)
    return -1
