"""The front end's constant folder: the value of an expression that reads
no session, context or pool, for the compiler, the validator, the lowering
(parameter defaults, workload arguments) and the lint. Expressions with a
session are evaluated by the kernel only (`serq.semantics.kernel.evaluate`).

Arithmetic is on Python ints checked against the language's 64-bit range
(as the kernel computes), `/` is true division (a real), `//` floor
division; `floor`/`ceil` return ints. A division by zero and an integer
result beyond 64 bits are `EvalError`s the caller reports with the
expression's location."""

from __future__ import annotations

import math
from serq import ir
from serq.vocab import FUNCS, arity_ok


class EvalError(Exception):
    def __init__(self, message: str, at=None, overflow: bool = False):
        super().__init__(message)
        self.at = at
        self.overflow = overflow  # a real beyond the largest one (not a division by zero)


_OVERFLOW = "the value overflows (beyond the largest real)"
INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1  # the language's integers (the kernel's int64)
_INT_OVERFLOW = "integer overflow (the result is beyond the 64-bit range, -2^63 to 2^63 - 1)"


def _ck(v):
    """An integer result inside the 64-bit range, else an EvalError (the
    kernel's checked arithmetic says the same)."""
    if v.__class__ is int and not INT_MIN <= v <= INT_MAX:
        raise EvalError(_INT_OVERFLOW)
    return v


def _div(l, r):
    if r == 0:
        raise EvalError("division by zero")
    return float(l) / float(r)  # as the kernel divides: each operand made a real first


def _fdiv(l, r):
    if r == 0:
        raise EvalError("division by zero")
    return _ck(l // r)


def _mod(l, r):
    if r == 0:
        raise EvalError("modulo by zero")
    return l % r


def _floor(v):
    return _ck(math.floor(v))


def _ceil(v):
    return _ck(math.ceil(v))


def _abs(v):
    return _ck(abs(v))


_BIN = {
    "+": lambda l, r: _ck(l + r),
    "-": lambda l, r: _ck(l - r),
    "*": lambda l, r: _ck(l * r),
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
        return _abs(args[0])
    raise EvalError(f"unknown function `{fn}`")


class NotConstant(Exception):
    def __init__(self, at, what: str):
        self.at, self.what = at, what


_NC = object()  # not a constant


def fold(e: ir.Expr | None):
    """The evaluator applied with no session: (value, fault, not_constant).
    `value` is the expression's value, or `_NC` when it reads something
    only a moment supplies (an attribute, a context variable, a pool);
    `fault` is (position, message) of the innermost sub-expression whose
    operands are all constant and which cannot be evaluated (a division by
    zero, an integer beyond 64 bits, a real overflowing to inf);
    `not_constant` (position, what) the
    first leaf that is not a constant. The operators are `_BIN` and
    `apply_call`, and branches
    that a constant `and`, `or` or `if` never evaluates are skipped, as at
    run time: `X != 0 and 10 / X > 1` is a constant when X is 0. One pass."""
    faults: list = []
    leaves: list = []

    def fail(x, msg):
        faults.append((x.at, msg))
        return _NC

    def go(x):
        if isinstance(x, (ir.Num, ir.BoolLit)):
            return x.v
        if isinstance(x, ir.Bin):
            l = go(x.l)
            if l is not _NC and (x.op == "and" and not l or x.op == "or" and l):
                return bool(l)
            r = go(x.r)
            if l is _NC or r is _NC or faults:
                return _NC
            try:
                v = apply_bin(x.op, l, r)
            except EvalError as err:
                return fail(x, str(err))
            except (ArithmeticError, ValueError, TypeError) as err:
                return fail(x, f"cannot evaluate: {err}")
            if isinstance(v, float) and not math.isfinite(v):
                return fail(x, _OVERFLOW)
            return v
        if isinstance(x, ir.Un):
            v = go(x.e)
            if v is _NC or x.op == "not":
                return _NC if v is _NC else (not v)
            try:
                return _ck(-v)
            except EvalError as err:
                return fail(x, str(err))
        if isinstance(x, ir.Cond):
            c = go(x.c)
            if c is _NC:
                go(x.t)
                go(x.f)
                return _NC
            return go(x.t) if c else go(x.f)
        if isinstance(x, ir.Call):
            args = [go(a) for a in x.args]
            if x.fn not in FUNCS:
                leaves.append((x.at, f"`{x.fn}`"))
                return _NC
            if any(a is _NC for a in args) or faults or not arity_ok(x.fn, len(args)):
                return _NC  # a wrong number of arguments is reported by the validator (E107)
            try:
                return apply_call(x.fn, args)
            except EvalError as err:
                return fail(x, str(err))
            except (ArithmeticError, ValueError, TypeError) as err:
                return fail(x, f"cannot evaluate: {err}")
        if isinstance(x, (ir.Quant, ir.Of)):  # read at @check only: never a constant
            what = (f"{x.var}.{x.name}" if isinstance(x, ir.Of) else
                    f"count({x.program})" if x.e is None else f"{x.q} {x.program}")
            leaves.append((x.at, f"`{what}`"))
            return _NC
        leaves.append((x.at, f"`{getattr(x, 'name', None) or getattr(x, 'fn', 'expression')}`"))
        return _NC

    v = go(e) if e is not None else _NC
    return v, (faults[0] if faults else None), (leaves[0] if leaves else None)


def const_eval(e: ir.Expr) -> int | float | bool:
    """The value of a constant expression (numbers, operators,
    min/max/...); NotConstant or EvalError otherwise."""
    v, fault, leaf = fold(e)
    if v is not _NC:
        return v
    if leaf is not None:
        raise NotConstant(*leaf)
    if fault is None:  # a call with the wrong number of arguments
        raise NotConstant(e.at, "a call with the wrong number of arguments")
    at, msg = fault
    raise EvalError(msg, at, overflow=msg in (_OVERFLOW, _INT_OVERFLOW))


def const_fault(e: ir.Expr | None) -> tuple[tuple[int, int] | None, str] | None:
    """(position, message) of the first constant sub-expression that cannot
    be evaluated (see `fold`), or None."""
    return fold(e)[1] if e is not None else None
