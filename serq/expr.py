"""Expression evaluation, shared by constant folding and the model.

An IR expression is compiled once to a Python function `f(a, x)`: `a` is
the attribute vector of the session the moment evaluates for (or None),
`x` the moment's context (`x.ctx(name)`, `x.pool(fn, pool)`). Arithmetic is
on Python ints, `/` is true division (a real), `//` floor division;
`floor`/`ceil` return ints. A division by zero is an `EvalError` the caller
reports with the expression's location."""

from __future__ import annotations

import math
from typing import Callable

from serq import ir
from serq.vocab import FUNCS


class EvalError(Exception):
    def __init__(self, message: str, at=None):
        super().__init__(message)
        self.at = at


def _div(l, r):
    if r == 0:
        raise EvalError("division by zero")
    q = l / r
    return q


def _fdiv(l, r):
    if r == 0:
        raise EvalError("division by zero")
    return l // r


def _mod(l, r):
    if r == 0:
        raise EvalError("modulo by zero")
    return l % r


def _floor(v):
    return math.floor(v)


def _ceil(v):
    return math.ceil(v)


_BIN = {
    "+": lambda l, r: l + r,
    "-": lambda l, r: l - r,
    "*": lambda l, r: l * r,
    "/": _div,
    "//": _fdiv,
    "%": _mod,
    "==": lambda l, r: l == r,
    "!=": lambda l, r: l != r,
    "<": lambda l, r: l < r,
    "<=": lambda l, r: l <= r,
    ">": lambda l, r: l > r,
    ">=": lambda l, r: l >= r,
    "and": lambda l, r: bool(l) and bool(r),
    "or": lambda l, r: bool(l) or bool(r),
}


def apply_bin(op: str, l, r):
    return _BIN[op](l, r)


def apply_call(fn: str, args: list):
    if fn == "min":
        return min(args)
    if fn == "max":
        return max(args)
    if fn == "floor":
        return _floor(args[0])
    if fn == "ceil":
        return _ceil(args[0])
    if fn == "abs":
        return abs(args[0])
    raise EvalError(f"unknown function `{fn}`")


def _src(e: ir.Expr, slots: dict[str, int]) -> str:
    if isinstance(e, ir.Num):
        return repr(e.v)
    if isinstance(e, ir.BoolLit):
        return repr(e.v)
    if isinstance(e, ir.Name):
        return f"a[{slots[e.name]}]"
    if isinstance(e, ir.Ctx):
        return f"x.ctx({e.name!r})"
    if isinstance(e, ir.PoolRef):
        return f"x.pool({e.fn!r}, {e.pool!r})"
    if isinstance(e, ir.Un):
        inner = _src(e.e, slots)
        return f"(not {inner})" if e.op == "not" else f"(-{inner})"
    if isinstance(e, ir.Cond):
        return f"({_src(e.t, slots)} if {_src(e.c, slots)} else {_src(e.f, slots)})"
    if isinstance(e, ir.Bin):
        l, r = _src(e.l, slots), _src(e.r, slots)
        if e.op in ("and", "or"):
            return f"bool({l} {e.op} {r})"
        if e.op in ("/", "//", "%"):
            fn = {"/": "_div", "//": "_fdiv", "%": "_mod"}[e.op]
            return f"{fn}({l}, {r})"
        return f"({l} {e.op} {r})"
    if isinstance(e, ir.Call):
        args = ", ".join(_src(a, slots) for a in e.args)
        fn = {"min": "min", "max": "max", "floor": "_floor", "ceil": "_ceil", "abs": "abs"}[e.fn]
        return f"{fn}({args})"
    raise TypeError(e)


_GLOBALS = {"_div": _div, "_fdiv": _fdiv, "_mod": _mod, "_floor": _floor, "_ceil": _ceil,
            "min": min, "max": max, "abs": abs, "bool": bool}


def compile_expr(e: ir.Expr, slots: dict[str, int]) -> Callable:
    """A function `f(a, x)` computing `e`; errors carry `e.at`."""
    src = _src(e, slots)
    code = eval(f"lambda a, x: {src}", dict(_GLOBALS))  # noqa: S307 - generated from the IR only
    at = e.at

    def run(a, x):
        try:
            return code(a, x)
        except EvalError as err:
            raise EvalError(str(err), err.at or at) from None
        except (OverflowError, ValueError, TypeError) as err:
            raise EvalError(f"cannot evaluate: {err}", at) from None

    run.src = src  # type: ignore[attr-defined]
    return run


class NotConstant(Exception):
    def __init__(self, at, what: str):
        self.at, self.what = at, what


def const_eval(e: ir.Expr) -> int | float | bool:
    """Evaluate a constant expression (numbers, operators, min/max/...)."""
    if isinstance(e, (ir.Num, ir.BoolLit)):
        return e.v
    if isinstance(e, ir.Bin):
        l = const_eval(e.l)
        # `and`/`or` short-circuit as in a session: `X != 0 and 10 / X > 1`
        # is a constant even when X is 0
        if e.op == "and" and not l or e.op == "or" and l:
            return bool(l)
        return apply_bin(e.op, l, const_eval(e.r))
    if isinstance(e, ir.Un):
        v = const_eval(e.e)
        return (not v) if e.op == "not" else -v
    if isinstance(e, ir.Cond):
        return const_eval(e.t) if const_eval(e.c) else const_eval(e.f)
    if isinstance(e, ir.Call) and e.fn in FUNCS:
        return apply_call(e.fn, [const_eval(a) for a in e.args])
    what = getattr(e, "name", None) or getattr(e, "fn", "expression")
    raise NotConstant(e.at, f"`{what}`")


_NC = object()  # not a constant


def const_fault(e: ir.Expr | None) -> tuple[tuple[int, int] | None, str] | None:
    """(position, message) of the innermost sub-expression whose operands
    are all constant and which cannot be evaluated (a division by zero, a
    real overflowing to inf), or None. Branches that a constant `and`,
    `or` or `if` never evaluates are skipped, as at run time. One pass."""
    found: list = []

    def fail(x, msg):
        found.append((x.at, msg))
        return _NC

    def go(x):
        if isinstance(x, (ir.Num, ir.BoolLit)):
            return x.v
        if isinstance(x, ir.Bin):
            l = go(x.l)
            if l is not _NC and (x.op == "and" and not l or x.op == "or" and l):
                return bool(l)
            r = go(x.r)
            if l is _NC or r is _NC or found:
                return _NC
            try:
                v = apply_bin(x.op, l, r)
            except EvalError as err:
                return fail(x, str(err))
            except (ArithmeticError, ValueError, TypeError) as err:
                return fail(x, f"cannot evaluate: {err}")
            if isinstance(v, float) and not math.isfinite(v):
                return fail(x, "the value overflows (beyond the largest real)")
            return v
        if isinstance(x, ir.Un):
            v = go(x.e)
            return _NC if v is _NC else ((not v) if x.op == "not" else -v)
        if isinstance(x, ir.Cond):
            c = go(x.c)
            if c is _NC:
                go(x.t)
                go(x.f)
                return _NC
            return go(x.t) if c else go(x.f)
        if isinstance(x, ir.Call):
            args = [go(a) for a in x.args]
            if x.fn not in FUNCS or any(a is _NC for a in args) or found:
                return _NC
            try:
                return apply_call(x.fn, args)
            except EvalError as err:
                return fail(x, str(err))
            except (ArithmeticError, ValueError, TypeError) as err:
                return fail(x, f"cannot evaluate: {err}")
        return _NC

    if e is not None:
        go(e)
    return found[0] if found else None
