"""The one expression printer (serq/exprtext.py) for IR expressions:
diagnostics, automaton tables. Its lark-tree side (`tree_text`, used by
`serq fmt`) is re-exported here."""

from __future__ import annotations

from serq import ir
from serq.exprtext import (  # noqa: F401  (re-exported)
    AND, ATOM, BIN_LEVEL, CMP, COND, NEG, NOT, OR, level, text, tree_text, tree_view,
)


def ir_view(e: ir.Expr) -> tuple:
    if isinstance(e, ir.Num):
        return ("leaf", repr(e.v))
    if isinstance(e, ir.BoolLit):
        return ("leaf", "true" if e.v else "false")
    if isinstance(e, (ir.Name, ir.Ctx)):
        return ("leaf", e.name)
    if isinstance(e, ir.PoolRef):
        return ("leaf", f"{e.fn}({e.pool})")
    if isinstance(e, ir.Call):
        return ("call", e.fn, e.args)
    if isinstance(e, ir.Bin):
        return ("bin", e.op, e.l, e.r)
    if isinstance(e, ir.Un):
        return ("un", e.op, e.e)
    if isinstance(e, ir.Cond):
        return ("cond", e.c, e.t, e.f)
    if isinstance(e, ir.Quant):
        if e.q == "count":
            return ("count", e.program, e.var, e.e)
        return ("quant", e.q, e.program, e.var, e.e)
    if isinstance(e, ir.Of):
        return ("leaf", f"{e.var}.{e.name}" + (f"({e.pool})" if e.pool is not None else ""))
    raise TypeError(e)


def expr_text(e: ir.Expr | None, least: int = 0) -> str:
    """An IR expression in source syntax (constants appear folded)."""
    return "" if e is None else text(e, ir_view, least)
