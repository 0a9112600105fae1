"""Count positional indexings of a state (a state, session, hold, pool or
cache entry read as `x[n]`) in serq's sources.

    python bench/count_indexings.py            # per file, and the total
    python bench/count_indexings.py --list     # every indexing, file:line

The rule: a subscript whose index is an integer constant (`s[8]`, `h[-1]`)
and whose base, once its own subscripts and calls are stripped
(`state[0][sid][1]` -> `state`), is a name or attribute in STATE_NAMES:
the names serq gives to states, sessions, holds, pools and cache entries.
A name in SEQUENCES holds a sequence of them: `pools[0]` is its first
element (not counted), `pools[p][2]` a field of an element (counted).
Events (`e[1]`), IR nodes, actions and other tuples are not states and are
not counted; nor are the language's front end and the IR (FRONT_END:
serq/lang/ and serq/ir/, where `s`, `st`, `c` are IR nodes and parse
children) nor the module that defines the layout (serq/semantics/state.py). A name in the set that holds
something else is counted too; a state read under another name (a cache
entry called `e`, like an event) is missed."""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STATE_NAMES = {
    # states
    "state", "st", "nxt", "succ", "prev", "before", "after", "start", "init", "initial", "final", "last",
    # sessions
    "s", "s2", "ss", "sess", "session", "sessions", "parent_s", "child",
    # holds
    "h", "h2", "hold", "holds", "held",
    # pools and cache entries
    "pool", "pools", "pl", "cache", "entry", "ent", "c",
}


FRONT_END = ("serq/lang/", "serq/ir/")
DEFINES = "serq/semantics/state.py"


def counted(f: Path) -> bool:
    """Whether a module of serq/ is one whose subscripts the rule reads."""
    rel = str(f.relative_to(ROOT))
    return not rel.startswith(FRONT_END) and rel != DEFINES


SEQUENCES = {"sessions", "pools", "holds", "held", "cache"}


def _base(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Subscript, ast.Call)):
        node = node.value if isinstance(node, ast.Subscript) else node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _int_index(node: ast.Subscript) -> bool:
    sl = node.slice
    if isinstance(sl, ast.UnaryOp) and isinstance(sl.op, ast.USub):
        sl = sl.operand
    return isinstance(sl, ast.Constant) and type(sl.value) is int


def indexings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _int_index(node) and _base(node.value) in STATE_NAMES:
            if _base(node.value) in SEQUENCES and not isinstance(node.value, ast.Subscript):
                continue  # an element of a sequence, not a field
            out.append((node.lineno, ast.unparse(node)))
    return sorted(out)


def main(argv: list[str]) -> int:
    files = [f for f in sorted((ROOT / "serq").rglob("*.py")) if counted(f)]
    files += sorted((ROOT / "tests").rglob("*.py"))
    per = Counter()
    for f in files:
        found = indexings(f)
        rel = f.relative_to(ROOT)
        per[str(rel)] = len(found)
        if "--list" in argv:
            for line, text in found:
                print(f"{rel}:{line}: {text}")
    for name, n in sorted(per.items(), key=lambda kv: (-kv[1], kv[0])):
        if n:
            print(f"{n:5d}  {name}")
    serq_n = sum(n for k, n in per.items() if k.startswith("serq"))
    print(f"{serq_n:5d}  serq/ total\n{sum(per.values()) - serq_n:5d}  tests/ total")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
