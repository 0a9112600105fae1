"""List every function in serq/ and explorer/ that takes more than
LIMIT positional parameters (`self` and `cls` not counted), and their number.

    python bench/count_params.py

Positional parameters are a function's positional-only and ordinary ones
(`def f(a, b, /, c, *, d)` has three); a `*args` is not counted, nor are
keyword-only parameters. The rule the code keeps: no function takes more
than LIMIT; what belongs together travels as one tuple or record."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIMIT = 8
FOLDERS = ("serq", "explorer")


def positional(fn: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> int:
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names)


def over(path: Path, limit: int = LIMIT) -> list[tuple[int, str, int]]:
    """(line, name, count) of each function in `path` over the limit."""
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = positional(node)
            if n > limit:
                out.append((node.lineno, node.name, n))
    return sorted(out)


def main(argv: list[str]) -> int:
    total = 0
    for folder in FOLDERS:
        for f in sorted((ROOT / folder).rglob("*.py")):
            for line, name, n in over(f):
                print(f"{f.relative_to(ROOT)}:{line}: {name} ({n} positional)")
                total += 1
    print(f"{total} functions over {LIMIT} positional parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
