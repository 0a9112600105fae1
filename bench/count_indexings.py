"""Count positional indexings of a state (a state, session, hold, pool or
cache entry read as `x[n]`) and of an event (`e[1]`) in serq's sources.

    python bench/count_indexings.py            # per file, and the totals
    python bench/count_indexings.py --list     # every indexing, file:line

The rule: a subscript whose index is an integer constant (`s[8]`, `h[-1]`)
and whose base, once its own subscripts and calls are stripped
(`state[0][sid][1]` -> `state`), is a name or attribute in STATE_NAMES:
the names serq gives to states, sessions, holds, pools and cache entries.
A name in SEQUENCES holds a sequence of them: `pools[0]` is its first
element (not counted), `pools[p][2]` a field of an element (counted).
IR nodes, actions and other tuples are not states and are not counted;
nor are the language's front end and the IR (FRONT_END: serq/lang/,
serq/ir/ and the expression printer serq/exprtext.py, where `s`, `st`,
`c` are IR nodes and parse children) nor the
module that defines the layout (serq/semantics/state.py). A name in the
set that holds something else is counted too; a state read under another
name (a cache entry called `e`, like an event) is missed.

Events are counted by the same rule with their own names (EVENT_NAMES,
and EVENT_SEQUENCES for lists of them: `events[cut][2]` is counted), in
the same files but for the module that defines them
(serq/semantics/events.py, where the kernel's records are decoded)."""

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


FRONT_END = ("serq/lang/", "serq/ir/", "serq/exprtext.py")
DEFINES = "serq/semantics/state.py"
DEFINES_EVENTS = "serq/semantics/events.py"


def counted(f: Path, defines: str = DEFINES) -> bool:
    """Whether a module of serq/ is one whose subscripts the rule reads."""
    rel = str(f.relative_to(ROOT))
    return not rel.startswith(FRONT_END) and rel != defines


SEQUENCES = {"sessions", "pools", "holds", "held", "cache"}

# the names serq gives to events, and to lists of them
EVENT_NAMES = {"e", "ev", "event", "stuck"}
EVENT_SEQUENCES = {"events", "evs", "shapes"}


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


def indexings(path: Path, names=STATE_NAMES, sequences=SEQUENCES) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _int_index(node) and _base(node.value) in names | sequences:
            if _base(node.value) in sequences and not isinstance(node.value, ast.Subscript):
                continue  # an element of a sequence, not a field
            out.append((node.lineno, ast.unparse(node)))
    return sorted(out)


def event_indexings(path: Path) -> list[tuple[int, str]]:
    return indexings(path, EVENT_NAMES, EVENT_SEQUENCES)


def _count(what: str, files: list[Path], find, argv: list[str]) -> None:
    per = Counter()
    for f in files:
        found = find(f)
        rel = f.relative_to(ROOT)
        per[str(rel)] = len(found)
        if "--list" in argv:
            for line, text in found:
                print(f"{rel}:{line}: {text}")
    print(f"{what} read by position:")
    for name, n in sorted(per.items(), key=lambda kv: (-kv[1], kv[0])):
        if n:
            print(f"{n:5d}  {name}")
    serq_n = sum(n for k, n in per.items() if k.startswith("serq"))
    print(f"{serq_n:5d}  serq/ total\n{sum(per.values()) - serq_n:5d}  tests/ total")


def main(argv: list[str]) -> int:
    tests = sorted((ROOT / "tests").rglob("*.py"))
    serq = sorted((ROOT / "serq").rglob("*.py"))
    _count("states", [f for f in serq if counted(f)] + tests, indexings, argv)
    _count("events", [f for f in serq if counted(f, DEFINES_EVENTS)] + tests, event_indexings, argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
