"""Types of IR expressions: 'int', 'real', 'bool', or '?' (unknown, already
reported). Used by the compiler (an attribute's type from its first
value) and the validator (every expression against its position)."""

from __future__ import annotations

from serq import ir


# the facts `x.NAME` reads of a session bound by a quantifier, with their types
# (docs/language.md, "Quantifiers over sessions"); `held` takes a pool
SESSION_FACTS = {"waiting": "bool", "thinking": "bool", "joining": "bool", "prefilling": "bool",
                 "decoding": "bool", "preempted": "bool", "held": "int"}


def infer_type(e: ir.Expr | None, types: dict[str, str], report=None,
               programs: dict[str, dict[str, str]] | None = None, bound: dict | None = None) -> str:
    """'int' | 'real' | 'bool' | '?' (unknown, already reported).
    `programs`: each session program's attribute types, for the
    attributes a quantifier's variable reads (`x.NAME`); `bound`: the
    variables of the quantifiers around `e`, with their programs'."""
    bound = dict(bound or {})  # a quantifier's variable -> its program's attribute types

    def bad(at, msg):
        if report:
            report(at, msg)
        return "?"

    def t(x) -> str:
        if isinstance(x, ir.Num):
            return "real" if isinstance(x.v, float) else "int"
        if isinstance(x, ir.BoolLit):
            return "bool"
        if isinstance(x, ir.Name):
            return types.get(x.name, "?")
        if isinstance(x, (ir.Ctx, ir.PoolRef)):
            return "int"
        if isinstance(x, ir.Un):
            inner = t(x.e)
            if x.op == "not":
                if inner not in ("bool", "?"):
                    return bad(x.at, f"`not` needs a condition, got {article(inner)}")
                return "bool"
            if inner == "bool":
                return bad(x.at, "cannot negate a condition; use `not`")
            return inner
        if isinstance(x, ir.Cond):
            c, a, b = t(x.c), t(x.t), t(x.f)
            if c not in ("bool", "?"):
                bad(x.c.at or x.at, f"the test of `if ... then ... else` must be a condition, got {article(c)}")
            if "?" in (a, b):
                return "?"
            if a == b:
                return a
            if {a, b} == {"int", "real"}:
                return "real"
            return bad(x.at, f"the branches of `if ... then ... else` have different types ({article(a)} and {article(b)})")
        if isinstance(x, ir.Bin):
            l, r = t(x.l), t(x.r)
            if x.op in ("and", "or"):
                for side, ty in ((x.l, l), (x.r, r)):
                    if ty not in ("bool", "?"):
                        bad(side.at or x.at, f"`{x.op}` needs conditions on both sides, got {article(ty)}")
                return "bool"
            if x.op in ("==", "!="):
                if "?" not in (l, r) and (l == "bool") != (r == "bool"):
                    bad(x.at, f"cannot compare {article(l)} with {article(r)}")
                return "bool"
            for side, ty in ((x.l, l), (x.r, r)):
                if ty == "bool":
                    return bad(side.at or x.at, f"`{x.op}` needs numbers, got a condition")
            if x.op in ("<", "<=", ">", ">="):
                return "bool"
            if "?" in (l, r):
                return "?"
            if x.op == "/":
                return "real"
            return "int" if (l, r) == ("int", "int") else "real"
        if isinstance(x, ir.Quant):
            if x.e is not None:
                outer = bound.get(x.var)
                bound[x.var] = (programs or {}).get(x.program, {})
                body = t(x.e)
                if outer is None:
                    del bound[x.var]
                else:
                    bound[x.var] = outer
                if body not in ("bool", "?"):
                    what = "the condition of `count(... where ...)`" if x.q == "count" else f"the body of `{x.q}`"
                    bad(x.e.at or x.at, f"{what} must be a condition, got {article(body)}")
            return "int" if x.q == "count" else "bool"
        if isinstance(x, ir.Of):
            if x.var not in bound:
                return "?"
            if x.name in SESSION_FACTS:
                return SESSION_FACTS[x.name]
            return bound[x.var].get(x.name, "?")
        if isinstance(x, ir.Call):
            args = [t(a) for a in x.args]
            if any(a == "bool" for a in args):
                return bad(x.at, f"`{x.fn}` needs numbers, got a condition")
            if x.fn in ("floor", "ceil"):
                return "int"
            if "?" in args:
                return "?"
            return "real" if "real" in args else "int"
        return "?"

    return t(e)


def article(ty: str) -> str:
    return {"int": "an integer", "real": "a number", "bool": "a condition", "number": "a number", "?": "unknown"}.get(ty, ty)
