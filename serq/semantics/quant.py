"""Lowering a quantifier over sessions (`forall`, `exists`, `count`) to
the kernel's bytecode (serq.semantics.lower emits every other
expression): a loop over the session ids of the row, by the ops from
OP_QNEXT on (kernel/abi.py), evaluated by the kernel's one evaluator."""

from __future__ import annotations

from serq import ir
from serq.semantics.kernel.abi import (
    OP_ICONST, OP_JMP, OP_NOT, OP_QNEXT, OP_QSTEP, Q_COUNT, Q_EXISTS, Q_FIND, Q_FORALL, T_INT,
)


def emit_quant(low, e: ir.Quant, h: int, out: list, g, find: bool = False) -> None:
    """A quantifier, its value left at stack height h: the accumulator
    (h), the iterator over session ids (h + 1, from -1), then per
    session of the program present the body (h + 2), folded in by
    QSTEP (abi.py, OP_QNEXT). `find`: the first session for which the
    body is false (a `forall`'s, the one breaking it) or, for an
    `exists`, true (the one meeting it), -1 when none, instead of the
    quantifier's value."""
    kind = Q_FIND if find else {"forall": Q_FORALL, "exists": Q_EXISTS, "count": Q_COUNT}[e.q]
    out.extend((OP_ICONST, {Q_FORALL: 1, Q_EXISTS: 0, Q_COUNT: 0, Q_FIND: -1}[kind], OP_ICONST, -1))
    head = len(out)
    out.extend((OP_QNEXT, low.prog_ix[e.program], -1))
    if e.e is None:  # `count(P)`: every session of P present
        out.extend((OP_ICONST, 1))
    else:
        outer = low._bound.get(e.var)
        low._bound[e.var] = (h + 1, low.prog_ix[e.program])
        try:
            g(e.e, T_INT, h + 2)
            if find and e.q == "exists":
                out.append(OP_NOT)
        finally:
            if outer is None:
                del low._bound[e.var]
            else:
                low._bound[e.var] = outer
    out.extend((OP_QSTEP, kind, -1, OP_JMP, head))
    out[head + 2] = out[-3] = len(out)  # QNEXT's and QSTEP's exit: past the loop

