"""explorer: a generic explicit-state model checker (BFS/DFS, Stateright/TLC style).

Public API::

    from explorer import check, Settings, replay, render_text, render_json, Model, ModelFactory
    result = check(model, Settings(strategy="bfs", max_states=None, max_depth=None,
                                   time_limit=None, check_deadlock=True, check_livelock=True,
                                   progress=None, workers=1))
    print(render_text(result)); sys.exit(result.exit_code)

``check(model, **fields)`` stands for ``check(model, Settings(**fields))``.
``Settings(visitor=v)``, ``v`` a ``Visitor``: hooks the (sequential) search
calls on each state and edge (``explorer.visitor``).

The engine knows nothing about any particular system: see ``explorer.model``
for the protocol.
"""

import importlib
import sys
import types

# name -> the module that defines it. Imported on first use (PEP 562), so
# that `import explorer.runtime.infile` (a file reader) does not load the
# engines, numpy and numba: a command that only reads and prints starts fast.
_WHERE = {
    **dict.fromkeys(("fingerprint", "format_fp", "state_fingerprint"), "explorer.fingerprint"),
    **dict.fromkeys(("Model", "ModelFactory"), "explorer.model"),
    **dict.fromkeys(("render_json", "render_text", "stats_line", "verdict_line"), "explorer.report"),
    **dict.fromkeys(("Result", "Stats"), "explorer.result"),
    "check": "explorer.check",
    "Settings": "explorer.settings",
    **dict.fromkeys(("Visitor", "PRUNE", "STOP"), "explorer.visitor"),
    **dict.fromkeys(("Interrupted", "interrupts"), "explorer.runtime.interrupt"),
    **dict.fromkeys(("NondeterministicModel", "ReplayError", "Step", "format_path", "parse_path", "replay"),
                    "explorer.trace"),
    **dict.fromkeys(("BOUND", "DEADLOCK", "INTERRUPTED", "EXIT_BOUND", "EXIT_CODES", "EXIT_DEADLOCK", "EXIT_FAILED",
                     "EXITS", "FAILED", "EXIT_INTERRUPTED", "EXIT_LIVELOCK", "EXIT_NONDETERMINISTIC", "EXIT_PASS",
                     "EXIT_VIOLATION", "LIVELOCK", "PASS", "VERDICTS", "VIOLATION", "exit_code"),
                    "explorer.runtime.verdict"),
}


class _Package(types.ModuleType):
    """The package, its public names imported when first read."""

    def __getattr__(self, name: str):
        where = _WHERE.get(name)
        if where is None:
            raise AttributeError(f"module 'explorer' has no attribute {name!r}")
        value = getattr(importlib.import_module(where), name)
        super().__setattr__(name, value)
        return value

    def __setattr__(self, name: str, value) -> None:
        # importing the submodule explorer.check sets the package's `check`
        # to it: the package's `check` stays the door, the function
        if name == "check" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(_WHERE))


sys.modules[__name__].__class__ = _Package

__all__ = [
    "check", "Settings", "Visitor", "PRUNE", "STOP",
    "replay", "render_text", "render_json", "stats_line", "verdict_line",
    "Model", "ModelFactory", "Result", "Stats", "Step",
    "NondeterministicModel", "ReplayError", "format_path", "parse_path",
    "fingerprint", "state_fingerprint", "format_fp",
    "PASS", "DEADLOCK", "LIVELOCK", "VIOLATION", "BOUND", "INTERRUPTED", "FAILED", "VERDICTS", "EXITS",
    "EXIT_CODES", "EXIT_PASS", "EXIT_DEADLOCK", "EXIT_LIVELOCK",
    "EXIT_VIOLATION", "EXIT_BOUND", "EXIT_NONDETERMINISTIC", "EXIT_INTERRUPTED",
    "EXIT_FAILED", "exit_code", "Interrupted", "interrupts",
]
