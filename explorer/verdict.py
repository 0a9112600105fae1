"""Verdicts and the process exit codes that go with them.

One table, shared by the engine and every CLI built on it, so that a script
calling the checker can branch on the exit code alone.  Codes 10..19 are
verdicts about the checked system; 2 is reserved for the CLI's input errors
(bad arguments, unreadable instance), as is conventional for argparse.
"""

from __future__ import annotations

PASS = "pass"
DEADLOCK = "deadlock"
LIVELOCK = "livelock"
VIOLATION = "violation"
BOUND = "bound"
INTERRUPTED = "interrupted"  # SIGINT or SIGTERM: what was found so far, never a pass
INCONCLUSIVE = "inconclusive"  # a swarm search found nothing: not a proof (swarm.py)

VERDICTS = (PASS, DEADLOCK, LIVELOCK, VIOLATION, BOUND, INTERRUPTED, INCONCLUSIVE)

EXIT_PASS = 0
EXIT_INPUT_ERROR = 2  # reserved for the CLI: the engine never returns it
EXIT_DEADLOCK = 10
EXIT_LIVELOCK = 11
EXIT_VIOLATION = 12  # any invariant kind: "assert", "invariant", "stuck", "conservation", ...
EXIT_BOUND = 13  # a bound was hit: "no violation within the bound", never a pass
EXIT_THEOREM = 14  # reserved: a stated theorem was violated (decided outside the engine)
EXIT_NONDETERMINISTIC = 15  # the model replayed differently than it explored; no trace printed
EXIT_INTERRUPTED = 16  # stopped by SIGINT (Ctrl-C) or SIGTERM before a verdict
EXIT_INCONCLUSIVE = 17  # --swarm found no violation: incomplete by design, never a pass
EXIT_WORKER_LOST = 18  # a partition's worker (Ray) was lost: the run stopped; the message names the last checkpoint

EXIT_CODES: dict[str, int] = {
    PASS: EXIT_PASS,
    "input_error": EXIT_INPUT_ERROR,
    DEADLOCK: EXIT_DEADLOCK,
    LIVELOCK: EXIT_LIVELOCK,
    VIOLATION: EXIT_VIOLATION,
    BOUND: EXIT_BOUND,
    "theorem": EXIT_THEOREM,
    "nondeterministic": EXIT_NONDETERMINISTIC,
    INTERRUPTED: EXIT_INTERRUPTED,
    INCONCLUSIVE: EXIT_INCONCLUSIVE,
    "worker_lost": EXIT_WORKER_LOST,
}


def exit_code(verdict: str) -> int:
    """Exit code for a verdict string (one of VERDICTS or a reserved key)."""
    try:
        return EXIT_CODES[verdict]
    except KeyError:
        raise ValueError(f"unknown verdict {verdict!r}") from None
