"""Expression subtrees of the lark tree → IR expressions, by a lark
`Transformer` (one method per expression rule of serq/lang/grammar.lark).

Numbers are checked for range where they are read (E408); a declared
constant's name becomes its value; a context variable's name a `Ctx`; a
pool function (`cached(kv)`) a `PoolRef`. Everything else (names, arity,
types, moments) is checked on the IR by serq.lang.validate."""

from __future__ import annotations

import math

from lark import Token, Tree, Transformer_NonRecursive, v_args

from serq import ir
from serq.diagnostics import Sink
from serq.vocab import CTX_NAMES, MAX_INT, POOL_FUNCS, UNIT_NS


def pos(node) -> tuple[int, int] | None:
    if isinstance(node, Token):
        return (node.line, node.column) if node.line is not None else None
    if isinstance(node, Tree) and not node.meta.empty:
        return (node.meta.line, node.meta.column)
    return None


def _short(text: str) -> str:
    return f"{text[:20]}{'...' if len(text) > 20 else ''}"


def duration_ticks(text: str) -> int:
    for unit in ("ns", "us", "ms", "s"):
        if text.endswith(unit):
            digits = text[: -len(unit)]
            if len(digits.split(".")[0].lstrip("0")) > 19:  # no float() of hundreds of digits
                raise OverflowError(f"the duration `{_short(text)}` is beyond 2^62 ns (about 146 years)")
            ticks = float(digits) * UNIT_NS[unit]
            if not ticks < MAX_INT:
                raise OverflowError(f"the duration `{_short(text)}` is beyond 2^62 ns (about 146 years)")
            return int(round(ticks))
    raise ValueError(text)


def number_value(text: str) -> int | float:
    """A number literal, checked for range where it is read (OverflowError)."""
    if "." in text:
        v = float(text)
        if not math.isfinite(v):
            raise OverflowError(f"the number `{_short(text)}` is too large")
        return v
    if len(text.lstrip("0")) > 19 or int(text) >= MAX_INT:  # no str-to-int of thousands of digits
        raise OverflowError(f"the integer `{_short(text)}` is too large (at most 2^62)")
    return int(text)


@v_args(tree=True)
class ExprBuilder(Transformer_NonRecursive):
    """`ExprBuilder(sink, consts, prefixes).transform(subtree)` → an `ir.Expr`.
    Non-recursive: a long chain of operators costs no stack."""

    def __init__(self, sink: Sink, consts: dict[str, int | float], prefixes: dict | None = None):
        super().__init__()
        self.sink = sink
        self.consts = consts
        self.prefixes = prefixes if prefixes is not None else {}  # name → ir.Prefix, seen as it is declared
        self._spelled: dict[int, tuple] = {}  # id of a node made from a bare name → (node, name)

    def number(self, t):
        return ir.Num(v=self._read(t, number_value), at=pos(t))

    def duration(self, t):
        return ir.Num(v=self._read(t, duration_ticks), at=pos(t))

    def _read(self, t, conv):
        text = str(t.children[0])
        try:
            return conv(text)
        except OverflowError as e:
            self.sink.error(pos(t), "E408", str(e), span=min(len(text), 40))
            return 0

    def true(self, t):
        return ir.BoolLit(v=True, at=pos(t))

    def false(self, t):
        return ir.BoolLit(v=False, at=pos(t))

    def name(self, t):
        n, at = str(t.children[0]), pos(t)
        if n in self.consts:
            v = self.consts[n]
            e = ir.Num(v=int(v) if isinstance(v, bool) else v, at=at)  # a number, as validation makes it
        elif n in self.prefixes:  # a prefix name is a constant: its length
            e = ir.Num(v=self.prefixes[n].length, at=at)
        elif n in CTX_NAMES:
            e = ir.Ctx(name=n, at=at)
        else:
            e = ir.Name(name=n, at=at)
        self._spelled[id(e)] = (e, n)  # the node is kept: its id is not reused
        return e

    def call(self, t):
        fn, at = str(t.children[0]), pos(t)
        args = [a for a in t.children[1:] if a is not None]
        if fn in POOL_FUNCS:
            # the argument was transformed as an expression: was it a bare name?
            if len(args) != 1 or self._spelled.get(id(args[0]), (None,))[0] is not args[0]:
                self.sink.error(at, "E107", f"`{fn}` takes one pool name, as in `{fn}(kv)`")
                return ir.Num(v=0, at=at)
            return ir.PoolRef(fn=fn, pool=self._spelled[id(args[0])][1], at=at)
        if fn == "count" and len(args) == 1 and isinstance(args[0], ir.Name) \
                and self._spelled.get(id(args[0]), (None,))[0] is args[0]:
            return ir.Quant(q="count", program=args[0].name, at=at)  # `count(P)`: every session of P
        return ir.Call(fn=fn, args=tuple(args), at=at)

    # quantifiers over sessions (serq.lang.quantify checks them)
    def forall(self, t):
        prog, var, e = t.children
        return ir.Quant(q="forall", program=str(prog), var=str(var), e=e, at=pos(t))

    def exists(self, t):
        prog, var, e = t.children
        return ir.Quant(q="exists", program=str(prog), var=str(var), e=e, at=pos(t))

    def count(self, t):
        fn, prog, var, _where, e = t.children
        if str(fn) != "count":
            self.sink.error(pos(fn), "E104", f"unknown function `{fn}`: `P x where E` is the argument of `count` only",
                            span=len(str(fn)))
        return ir.Quant(q="count", program=str(prog), var=str(var), e=e, at=pos(t))

    def of(self, t):
        var, name, pool = t.children
        return ir.Of(var=str(var), name=str(name), pool=None if pool is None else str(pool), at=pos(t))

    def binop(self, t):
        l, op, r = t.children
        return ir.Bin(op=str(op), l=l, r=r, at=pos(t))

    cmp = binop

    def and_(self, t):
        return ir.Bin(op="and", l=t.children[0], r=t.children[1], at=pos(t))

    def or_(self, t):
        return ir.Bin(op="or", l=t.children[0], r=t.children[1], at=pos(t))

    def not_(self, t):
        return ir.Un(op="not", e=t.children[0], at=pos(t))

    def neg(self, t):
        return ir.Un(op="-", e=t.children[0], at=pos(t))

    def cond(self, t):
        c, a, b = t.children
        return ir.Cond(c=c, t=a, f=b, at=pos(t))
