"""The import graph of `serq/` has no cycle: text → parse → compile →
validate → IR flows one way, and a command line module is imported by no
library module. Imports inside functions count too (a cycle hidden in a
function is still a cycle)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def import_graph() -> dict[str, set[str]]:
    mods = {}
    for f in (ROOT / "serq").rglob("*.py"):
        name = ".".join(f.relative_to(ROOT).with_suffix("").parts)
        mods[name.removesuffix(".__init__")] = f
    graph = {}
    for name, f in mods.items():
        out = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            out |= {t for t in targets if t in mods and t != name and t != "serq"}
        graph[name] = out
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    color: dict[str, int] = {}
    for root in sorted(graph):
        if root in color:
            continue
        stack = [(root, iter(sorted(graph[root])))]
        path = [root]
        color[root] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                color[node] = 2
                stack.pop()
                path.pop()
            elif color.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in color:
                color[nxt] = 1
                stack.append((nxt, iter(sorted(graph[nxt]))))
                path.append(nxt)
    return None


def test_no_import_cycle_in_serq():
    assert find_cycle(import_graph()) is None


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_library_modules_do_not_import_the_command_line():
    graph = import_graph()
    cli = {m for m in graph if m.endswith("_cli") or m in ("serq.cli", "serq.__main__")}
    for mod, deps in graph.items():
        if mod not in cli:
            assert not deps & cli, f"{mod} imports {sorted(deps & cli)}"


def test_no_module_over_600_lines():
    """Modules stay small enough to read whole; a longer one is split along
    a seam (as the compiler into exprbuild/automaton, the validator into
    irshape/exprtype, the array engine into cycles/memory/partition)."""
    long = {str(f.relative_to(ROOT)): n for pkg in ("serq", "explorer") for f in (ROOT / pkg).rglob("*.py")
            if (n := len(f.read_text().splitlines())) > 600}
    assert long == {}
