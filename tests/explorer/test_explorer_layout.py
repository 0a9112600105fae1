import ast
import pathlib

import explorer
from explorer import verdict


def test_engine_does_not_import_serq():
    pkg = pathlib.Path(explorer.__file__).parent
    for path in pkg.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n == "serq" or n.startswith("serq.") for n in names), path


def test_exit_code_table():
    assert verdict.EXIT_CODES == {
        "pass": 0, "not_canonical": 1, "input_error": 2, "deadlock": 10, "livelock": 11,
        "violation": 12, "bound": 13, "theorem": 14, "nondeterministic": 15, "interrupted": 16,
        "inconclusive": 17, "failed": 18,
    }
    assert [e.code for e in verdict.EXITS] == sorted(verdict.EXIT_CODES.values())
    assert verdict.EXIT_WORKER_LOST == verdict.EXIT_FAILED == 18
    assert verdict.exit_code("bound") == 13
