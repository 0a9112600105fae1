"""explorer: a generic explicit-state model checker (BFS/DFS, Stateright/TLC style).

Public API::

    from explorer import check, Settings, replay, render_text, render_json, Model, ModelFactory
    result = check(model, Settings(strategy="bfs", max_states=None, max_depth=None,
                                   time_limit=None, check_deadlock=True, check_livelock=True,
                                   progress=None, workers=1))
    print(render_text(result)); sys.exit(result.exit_code)

``check(model, **fields)`` stands for ``check(model, Settings(**fields))``.

The engine knows nothing about any particular system: see ``explorer.model``
for the protocol.
"""

from explorer.fingerprint import fingerprint, format_fp, state_fingerprint
from explorer.model import Model, ModelFactory
from explorer.report import render_json, render_text, stats_line, verdict_line
from explorer.result import Result, Stats
from explorer.check import check
from explorer.settings import Settings
from explorer.runtime.interrupt import Interrupted, interrupts
from explorer.trace import NondeterministicModel, ReplayError, Step, format_path, parse_path, replay
from explorer.runtime.verdict import (
    BOUND,
    DEADLOCK,
    INTERRUPTED,
    EXIT_BOUND,
    EXIT_CODES,
    EXIT_DEADLOCK,
    EXIT_FAILED,
    EXITS,
    FAILED,
    EXIT_INTERRUPTED,
    EXIT_LIVELOCK,
    EXIT_NONDETERMINISTIC,
    EXIT_PASS,
    EXIT_VIOLATION,
    LIVELOCK,
    PASS,
    VERDICTS,
    VIOLATION,
    exit_code,
)

__all__ = [
    "check", "Settings", "replay", "render_text", "render_json", "stats_line", "verdict_line",
    "Model", "ModelFactory", "Result", "Stats", "Step",
    "NondeterministicModel", "ReplayError", "format_path", "parse_path",
    "fingerprint", "state_fingerprint", "format_fp",
    "PASS", "DEADLOCK", "LIVELOCK", "VIOLATION", "BOUND", "INTERRUPTED", "FAILED", "VERDICTS", "EXITS",
    "EXIT_CODES", "EXIT_PASS", "EXIT_DEADLOCK", "EXIT_LIVELOCK",
    "EXIT_VIOLATION", "EXIT_BOUND", "EXIT_NONDETERMINISTIC", "EXIT_INTERRUPTED",
    "EXIT_FAILED", "exit_code", "Interrupted", "interrupts",
]
