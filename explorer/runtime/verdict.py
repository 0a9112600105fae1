"""The engine's verdicts and the process exit codes that go with them.

`EXITS`, in code order, each row a code, its name and what it means: the
verdicts a check can give (codes 0 and 10..19, beside `nondeterministic`,
a trace that did not replay). The constants below and `EXIT_CODES` are
read from it. The command line's own codes (a file out of layout, an
input error, a theorem) are not the engine's: serq/cli/exits.py adds them to
make the one table every command's `--help` and the docs list.
"""

from __future__ import annotations

from typing import NamedTuple

PASS = "pass"
DEADLOCK = "deadlock"
LIVELOCK = "livelock"
VIOLATION = "violation"
BOUND = "bound"
INTERRUPTED = "interrupted"  # SIGINT or SIGTERM: what was found so far, never a pass
INCONCLUSIVE = "inconclusive"  # a swarm search found nothing: not a proof (swarm.py)
FAILED = "failed"  # a worker died, raised or was lost: what was found so far, never a pass

VERDICTS = (PASS, DEADLOCK, LIVELOCK, VIOLATION, BOUND, INTERRUPTED, INCONCLUSIVE, FAILED)


class Exit(NamedTuple):
    code: int
    name: str  # a verdict, or a key of the command line ("input_error", "theorem", ...: serq/cli/exits.py)
    meaning: str


EXITS: tuple[Exit, ...] = (
    Exit(0, PASS, "no violation: every reachable state explored, or the run ended as the instance says"),
    Exit(10, DEADLOCK, "a state where no action applies and the instance is not done"),
    Exit(11, LIVELOCK, "a cycle of steps that make no progress"),
    Exit(12, VIOLATION, "a failed assert or invariant, a stuck session, a broken conservation "
                        "law or an evaluation error"),
    Exit(13, BOUND, "a limit (time, states, depth, steps, memory) stopped the work first; no "
                    "violation within it, never a pass"),
    Exit(15, "nondeterministic", "the model replayed differently than it explored (no trace printed)"),
    Exit(16, INTERRUPTED, "SIGINT (Ctrl-C) or SIGTERM stopped the work; what was found so "
                          "far is printed, never a pass"),
    Exit(17, INCONCLUSIVE, "--swarm found no violation: incomplete by design, never a pass"),
    Exit(18, FAILED, "a worker died, raised or was lost: it is named with its cause, the others are "
                     "stopped; what was found so far (or the last checkpoint) is printed, never a pass"),
)

EXIT_CODES: dict[str, int] = {e.name: e.code for e in EXITS}

EXIT_PASS = EXIT_CODES[PASS]
EXIT_DEADLOCK = EXIT_CODES[DEADLOCK]
EXIT_LIVELOCK = EXIT_CODES[LIVELOCK]
EXIT_VIOLATION = EXIT_CODES[VIOLATION]  # any invariant kind: "assert", "invariant", "stuck", "conservation", ...
EXIT_BOUND = EXIT_CODES[BOUND]
EXIT_NONDETERMINISTIC = EXIT_CODES["nondeterministic"]
EXIT_INTERRUPTED = EXIT_CODES[INTERRUPTED]
EXIT_INCONCLUSIVE = EXIT_CODES[INCONCLUSIVE]
EXIT_FAILED = EXIT_CODES[FAILED]
EXIT_WORKER_LOST = EXIT_FAILED  # a partition's worker (Ray) was lost: the message names the last checkpoint


def exit_code(verdict: str) -> int:
    """Exit code for a verdict string (one of VERDICTS, or "nondeterministic")."""
    try:
        return EXIT_CODES[verdict]
    except KeyError:
        raise ValueError(f"unknown verdict {verdict!r}") from None


class Verdicted:
    """For a record with a `verdict` field (a check's Result, a
    simulation's Judgement): its exit code, and whether it passed."""

    verdict: str

    @property
    def exit_code(self) -> int:
        return exit_code(self.verdict)

    @property
    def ok(self) -> bool:
        return self.verdict == PASS
