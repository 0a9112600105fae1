"""Names in an IR program are what the language's grammar accepts as a
name: an identifier (`NAME` in serq/lang/grammar.lark: a letter or `_`, then
letters, digits and `_`), or a counter the compiler made for a `repeat`
loop (`repeat#N`). A hand-edited or hostile `.ir.json` could otherwise
carry any string -- escape sequences, newlines -- to the terminal in every
message and trace that names a pool, a stage, a session or an attribute.
Each problem is (JSON path, "E010", message), as serq.ir.shape's."""

from __future__ import annotations

import re

from pydantic import BaseModel

from serq import ir
from serq.diagnostics import printable

__all__ = ["name_problems", "is_name"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_COUNTER = re.compile(r"repeat#[0-9]+\Z")
MAX_NAME = 256  # characters
# fields that hold a name (a declaration or a reference to one)
NAME_FIELDS = frozenset({"name", "admit_via", "pool", "prefix", "parent", "attr", "stage", "growing", "progress",
                         "program", "fn"})
PAIR_FIELDS = frozenset({"args", "consts"})  # (name, value) pairs
LIST_FIELDS = frozenset({"pools"})  # tuples of names


def is_name(s: str) -> bool:
    return len(s) <= MAX_NAME and bool(_NAME.match(s) or _COUNTER.match(s))


def name_problems(prog: ir.Program, limit: int = 20) -> list[tuple[tuple, str, str]]:
    """Every name of `prog` that is no identifier (at most `limit` of them)."""
    out: list[tuple[tuple, str, str]] = []

    def bad(path: tuple, value: str) -> None:
        shown = printable(value if len(value) <= 40 else value[:40] + "...")
        out.append((path, "E010", f"not a serq IR file: `{'.'.join(map(str, path))}` must be a name (a letter or "
                                  f"`_`, then letters, digits and `_`, as in the language), got \"{shown}\""))

    stack: list[tuple[object, tuple]] = [(prog, ())]
    while stack and len(out) < limit:
        node, path = stack.pop()
        if isinstance(node, BaseModel):
            for key, v in reversed(list(node.__dict__.items())):
                here = path + (key,)
                if key in NAME_FIELDS and isinstance(v, str):
                    if not is_name(v):
                        bad(here, v)
                elif key in PAIR_FIELDS and isinstance(v, tuple) and all(isinstance(x, tuple) for x in v):
                    for i, pair in enumerate(v):
                        if isinstance(pair, tuple) and pair and isinstance(pair[0], str) and not is_name(pair[0]):
                            bad(here + (i, 0), pair[0])
                        if isinstance(pair, tuple) and len(pair) > 1:
                            stack.append((pair[1], here + (i, 1)))
                elif key in LIST_FIELDS and isinstance(v, tuple) and all(isinstance(s, str) for s in v):
                    for i, s in enumerate(v):
                        if isinstance(s, str) and not is_name(s):
                            bad(here + (i,), s)
                else:
                    stack.append((v, here))
        elif isinstance(node, (tuple, list)):
            for i in range(len(node) - 1, -1, -1):
                stack.append((node[i], path + (i,)))
    return out
