"""The seam between serq and its checker: explorer/ imports nothing of
serq, and serq reaches the checker through one door (explorer.check with
a Settings) and the protocol, result and runtime modules, never through
an engine module. Each strategy behind the door gives the counts and
verdicts the engines gave when they were called one by one."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "explorer"))

from explorer_toys import AsArrays, CounterPair, TwoLocks, retry_loop  # noqa: E402

from explorer import Settings, check  # noqa: E402
from explorer.check import ENGINES, engine_for  # noqa: E402

# The explorer modules serq may import, each with why.
ALLOWED = {
    "explorer.model": "the protocol a model implements, its capabilities and row flags",
    "explorer.stores.exact": "a model wrapper (exact identities): protocol side, not an engine",
    "explorer.settings": "what a check is asked to do",
    "explorer.visitor": "the hooks a search calls on each state and edge (a Settings field)",
    "explorer.check": "the one entry, its errors and the side analyses over a stored graph",
    "explorer.result": "what a check returns",
    "explorer.outcome": "building a Result (a verdict bound or interrupted before the search)",
    "explorer.report": "rendering a Result",
    "explorer.trace": "a Result's trace: replay, paths",
    "explorer.fingerprint": "printing a state's identity",
    "explorer.runtime.verdict": "the engine's verdicts and exit codes",
    "explorer.runtime.interrupt": "runtime: signals",
    "explorer.runtime.limits": "runtime: time and memory limits",
    "explorer.runtime.compiled": "runtime: compiled code loaded before a search (the kernel's entry points)",
    "explorer.runtime.jit": "runtime: how compiled functions are compiled (the kernel is compiled so too)",
    "explorer.runtime.memory": "runtime: the memory bound",
    "explorer.runtime.threads": "runtime: worker threads",
    "explorer.runtime.supervise": "runtime: supervised worker processes",
    "explorer.runtime.infile": "runtime: reading input files",
    "explorer.runtime.outfile": "runtime: writing output files",
}


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in `path`, inside functions too; a
    `from explorer import x` counts as explorer.x when x is a module."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = ROOT / node.module.replace(".", "/") / f"{a.name}.py"
                out.append((node.lineno, f"{node.module}.{a.name}" if sub.exists() else node.module))
    return out


def _explorer_modules() -> set[str]:
    return {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in (ROOT / "explorer").rglob("*.py")
            if p.stem != "__init__"}


def test_explorer_imports_nothing_of_serq():
    for path in sorted((ROOT / "explorer").rglob("*.py")):
        for line, mod in _imports(path):
            assert mod != "serq" and not mod.startswith("serq."), f"{path.relative_to(ROOT)}:{line} imports {mod}"


def test_serq_imports_only_the_door_protocol_result_and_runtime():
    engines = _explorer_modules() - set(ALLOWED)
    assert {"explorer.strategies.sequential", "explorer.strategies.arrays.engine",
            "explorer.strategies.partitions.driver", "explorer.strategies.swarm"} <= engines
    bad = set()
    for path in sorted((ROOT / "serq").rglob("*.py")):
        for line, mod in _imports(path):
            if mod == "explorer" or (mod.startswith("explorer.") and mod not in ALLOWED):
                bad.add(f"{path.relative_to(ROOT)}:{line} imports {mod}")
    assert not bad, "serq reaches past the checker's door:\n" + "\n".join(sorted(bad))


def test_the_import_check_sees_an_engine_entry(tmp_path):
    """The check above is not vacuous: a second engine entry is seen."""
    f = tmp_path / "x.py"
    f.write_text("def f():\n    from explorer.strategies.sequential import sequential_check\n    from explorer.strategies import swarm\n")
    mods = {m for _, m in _imports(f)}
    assert "explorer.strategies.sequential" in mods and "explorer.strategies.swarm" in mods
    assert not mods & set(ALLOWED)


class _OnThreads(AsArrays):
    def __init__(self, model, width):
        super().__init__(model, width)
        self.capabilities = self.capabilities | {"row_threads"}

    def array_expander(self):
        return self.array_expand


# (name, model, row width): the counts each strategy gave when called by its own entry function
CASES = {"counter": (lambda: CounterPair(6), 2), "counter_bad": (lambda: CounterPair(6, limit=7), 2),
         "locks": (TwoLocks, 4), "retry": (retry_loop, 1)}
BEFORE = {  # (verdict, distinct, generated, max depth, replay path)
    "counter": ("pass", 49, 85, 12, None),
    "counter_bad": ("violation", 29, 44, 7, "0/0/0/0/0/0/0/1"),
    "locks": ("deadlock", 7, 8, 3, "0/0/1"),
    "retry": ("livelock", 4, 5, 2, "0/0/0/0"),
}
DFS = {"counter_bad": ("violation", 14, 14, 7, "0/0/0/0/0/0/0/1"), "locks": ("deadlock", 9, 9, 6, "0/0/1")}
# a swarm search that explores the whole space gives the exhaustive verdict, a livelock included
SWARM = {"counter": "pass", "counter_bad": "violation", "locks": "deadlock", "retry": "livelock"}


def _key(r):
    s = r.stats
    return (r.verdict, s.distinct, s.generated, s.max_depth, r.replay_path)


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_strategy_through_the_door_gives_the_counts_of_before(name):
    make, width = CASES[name]
    want = BEFORE[name]
    runs = {  # label: (model, settings, engine the table gives)
        "bfs": (make(), Settings(), "sequential"),
        "dfs": (make(), Settings(strategy="dfs"), "sequential"),
        "objects on processes": (make(), Settings(workers=2), "objects_on_processes"),
        "rows": (AsArrays(make(), width), Settings(), "rows"),
        "rows on processes": (AsArrays(make(), width), Settings(workers=2), "rows_on_processes"),
        "rows on threads": (_OnThreads(make(), width), Settings(workers=2), "rows_on_threads"),
        "partitioned": (AsArrays(make(), width), Settings(strategy="partitioned", partitions=3), "partitioned"),
    }
    for label, (model, settings, engine) in runs.items():
        assert engine_for(model, settings).__name__ == engine, label
        expect = DFS.get(name, want) if label == "dfs" else want  # on processes: the generated count too
        assert _key(check(model, settings)) == expect, label
    swarm = Settings(strategy="swarm", searches=2, seed=1, processes=1)
    assert check(AsArrays(make(), width), swarm).verdict == SWARM[name]


def test_the_table_answers_every_strategy_and_refuses_what_it_cannot_run():
    assert {k[0] for k in ENGINES} == {"bfs", "dfs", "partitioned", "swarm"}
    with pytest.raises(ValueError, match="no engine for the strategy 'swarm' with a model offering objects"):
        check(CounterPair(2), Settings(strategy="swarm", searches=1))
    with pytest.raises(ValueError, match="supports strategy 'bfs' only"):
        Settings(strategy="dfs", workers=2)
    with pytest.raises(ValueError, match="ray needs the strategy 'partitioned'"):
        Settings(ray="local")
    assert check(CounterPair(2), max_states=3).verdict == "bound"  # keywords stand for Settings(...)


def test_capabilities_are_declared_not_found():
    class Undeclared(CounterPair):  # rows offered but not declared: the engine does not use them
        def array_initial(self):
            raise AssertionError("not declared, not called")

        array_expand = array_state = array_initial

    assert engine_for(Undeclared(2), Settings()).__name__ == "sequential"
    assert check(Undeclared(2)).stats.distinct == 9

    class Unkept(CounterPair):  # declared but missing: refused, named
        capabilities = frozenset({"rows"})

    with pytest.raises(TypeError, match="declares 'rows' without array_initial, array_expand, array_state"):
        check(Unkept(2))

    class Unknown(CounterPair):
        capabilities = frozenset({"teleport"})

    with pytest.raises(TypeError, match="unknown capability 'teleport'"):
        check(Unknown(2))


class _Falls(_OnThreads):
    """Rows declared, but the model cannot go on with them."""

    def array_expand(self, rows):
        from explorer.model import ArrayFallback

        raise ArrayFallback("a row must grow")


def test_a_rows_engine_that_falls_back_hands_the_run_to_the_engine_without_rows():
    for workers in (1, 2):  # rows -> sequential; rows on threads -> objects on processes
        m = _Falls(CounterPair(6, limit=7), 2)
        assert engine_for(m, Settings(workers=workers)).__name__ == ("rows", "rows_on_threads")[workers - 1]
        r = check(m, workers=workers)
        assert _key(r) == BEFORE["counter_bad"], workers


def test_an_exact_setting_is_honoured_by_the_door():
    """`Settings(exact=True)` identifies states by their whole canonical
    form: the door wraps the model (rows, which carry fingerprints only, are
    not used) and says so in the statistics, with the same counts."""
    plain = check(AsArrays(CounterPair(2), 2), Settings())
    exact = check(AsArrays(CounterPair(2), 2), Settings(exact=True))
    assert exact.stats.exact and not plain.stats.exact
    assert (exact.verdict, exact.stats.distinct) == (plain.verdict, plain.stats.distinct)
    assert exact.stats.strategy == plain.stats.strategy == "bfs"
