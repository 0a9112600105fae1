"""The one expression printer: precedence, parentheses and spacing of the
source syntax, for lark expression subtrees (`serq fmt`) and, through
`serq.ir.text`, for IR expressions (diagnostics, automaton tables). Both
go through `text`, with a view that says what a node is. This module
imports nothing of the IR, so `serq fmt` starts without pydantic."""

from __future__ import annotations

from lark import Tree

# Precedence levels; a child position states the least level it accepts
# without parentheses. `if ... then ... else` (level 0) extends as far right
# as it can, so it is parenthesised wherever an operator surrounds it.
COND, OR, AND, NOT, CMP, NEG, ATOM = 0, 1, 2, 3, 4, 7, 8
BIN_LEVEL = {"or": OR, "and": AND, "==": CMP, "!=": CMP, "<": CMP, "<=": CMP, ">": CMP, ">=": CMP,
             "+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6}


def level(shape: tuple) -> int:
    kind = shape[0]
    if kind == "bin":
        return BIN_LEVEL[shape[1]]
    if kind == "un":
        return NOT if shape[1] == "not" else NEG
    if kind in ("cond", "quant"):  # `forall P x: E` extends as far right as `if` does
        return COND
    return ATOM


def text(node, view, least: int = 0) -> str:
    """`node` in source syntax, parenthesised if its level is below `least`.
    `view(node)` is one of ("leaf", text), ("call", fn, args),
    ("bin", op, l, r), ("un", op, e), ("cond", c, t, f)."""
    shape = view(node)
    s = _text(shape, view)
    return f"({s})" if level(shape) < least else s


def _text(shape: tuple, view) -> str:
    kind = shape[0]
    if kind == "leaf":
        return shape[1]
    if kind == "call":
        return f"{shape[1]}({', '.join(text(a, view) for a in shape[2])})"
    if kind == "bin":
        op, l, r = shape[1:]
        lv = BIN_LEVEL[op]
        if lv == CMP:  # comparisons do not chain
            return f"{text(l, view, CMP + 1)} {op} {text(r, view, CMP + 1)}"
        return f"{text(l, view, lv)} {op} {text(r, view, lv + 1)}"
    if kind == "un":
        op, e = shape[1:]
        if op == "not":
            return f"not {text(e, view, NOT)}"
        inner = text(e, view, NEG)
        return f"- {inner}" if inner.startswith("-") else f"-{inner}"
    if kind == "cond":
        c, t, f = shape[1:]
        return f"if {text(c, view, OR)} then {text(t, view, OR)} else {text(f, view, COND)}"
    if kind == "quant":
        q, prog, var, e = shape[1:]
        return f"{q} {prog} {var}: {text(e, view, COND)}"
    if kind == "count":
        prog, var, e = shape[1:]
        return f"count({prog})" if e is None else f"count({prog} {var} where {text(e, view, COND)})"
    raise AssertionError(kind)


# ------------------------------------------------------------------ lark trees


def tree_view(t: Tree) -> tuple:
    """A lark expression subtree, leaves as written (`14ms`, `1.50`)."""
    d, c = t.data, t.children
    if d in ("number", "duration", "name"):
        return ("leaf", str(c[0]))
    if d in ("true", "false"):
        return ("leaf", d)
    if d == "call":
        return ("call", str(c[0]), [a for a in c[1:] if a is not None])
    if d in ("binop", "cmp"):
        return ("bin", str(c[1]), c[0], c[2])
    if d == "and_":
        return ("bin", "and", c[0], c[1])
    if d == "or_":
        return ("bin", "or", c[0], c[1])
    if d == "not_":
        return ("un", "not", c[0])
    if d == "neg":
        return ("un", "-", c[0])
    if d == "cond":
        return ("cond", c[0], c[1], c[2])
    if d in ("forall", "exists"):
        return ("quant", d, str(c[0]), str(c[1]), c[2])
    if d == "count":
        return ("count", str(c[1]), str(c[2]), c[4])
    if d == "of":
        return ("leaf", f"{c[0]}.{c[1]}" + (f"({c[2]})" if c[2] is not None else ""))
    raise AssertionError(f"unknown expression node {d}")


def tree_text(t: Tree, least: int = 0) -> str:
    """A lark expression subtree in canonical source syntax."""
    return text(t, tree_view, least)
