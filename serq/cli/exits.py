"""The one exit-code table: the engine's verdicts (explorer.runtime.verdict.EXITS)
and the command line's own codes, and which rows each command can end
with. The commands' `--help` is generated from here, and a test checks
the docs and the help against it.

1 and 2 belong to the command line (1: `fmt --check` found a file out of
layout; 2: an input error, as is conventional for argparse); 14 is the
theorem's, decided outside the engine (serq/check/theorem.py); 19 is
`serq diff`'s (serq/check/diff.py); 20 is `check sometimes`'s
(serq/check/sometimes.py)."""

from __future__ import annotations

from explorer.runtime.verdict import EXITS as ENGINE_EXITS
from explorer.runtime.verdict import Exit

COMMAND_CODES: tuple[Exit, ...] = (
    Exit(1, "not_canonical", "the file is not in canonical layout (fmt --check)"),
    Exit(2, "input_error", "bad input: an instance, IR file or flag value (a located diagnostic on stderr)"),
    Exit(14, "theorem", "every hypothesis of a theorem holds, yet a counterexample was found"),
    Exit(19, "differ", "serq diff: on the same environment one variant fails and the other completes"),
    Exit(20, "never", "a `check sometimes` condition holds in no reachable state (every reachable state explored)"),
)
EXITS: tuple[Exit, ...] = tuple(sorted(ENGINE_EXITS + COMMAND_CODES, key=lambda e: e.code))
EXIT_CODES: dict[str, int] = {e.name: e.code for e in EXITS}
EXIT_NOT_CANONICAL = EXIT_CODES["not_canonical"]
EXIT_INPUT_ERROR = EXIT_CODES["input_error"]  # the engine never returns it
EXIT_THEOREM = EXIT_CODES["theorem"]

# command -> the names of its exit codes (rows of EXITS), in code order
COMMAND_EXITS: dict[str, tuple[str, ...]] = {
    "compile": ("pass", "input_error"),
    "fmt": ("pass", "not_canonical", "input_error"),
    "run": ("pass", "input_error", "violation", "bound", "interrupted"),
    "check": ("pass", "input_error", "deadlock", "violation", "bound", "interrupted"),
    "explore": ("pass", "input_error", "deadlock", "livelock", "violation", "bound", "theorem",
                "nondeterministic", "interrupted", "inconclusive", "failed", "never"),
    "sweep": ("pass", "input_error", "violation", "bound", "interrupted", "failed"),
    "diff": ("pass", "input_error", "bound", "interrupted", "differ"),
    "ui": ("pass", "input_error"),
    "oracle": ("pass", "input_error", "violation", "bound"),
    "completion": ("pass", "input_error"),
}

# what a code means for a command, where it says more than the table's line
_SPECIFIC: dict[tuple[str, str], str] = {
    ("compile", "pass"): "the IR was written",
    ("fmt", "pass"): "the layout was printed or written, or (--check) it is canonical",
    ("run", "pass"): "the run ended (horizon, every session ended, or --max-steps: see `stopped:`)",
    ("run", "violation"): "the run stopped on a fault: a failed assert, an evaluation error, a broken "
                          "conservation law",
    ("run", "bound"): "--time-limit or the memory bound (--memory, or its default) stopped the run: the report "
                      "of the run so far (`stopped: time limit` / `memory limit`)",
    ("run", "interrupted"): "SIGINT or SIGTERM: the report of the run so far (`stopped: interrupted`)",
    ("check", "pass"): "ok: nothing the instance's `check` lines (or --check) select, no failed assert or "
                       "conservation violation",
    ("check", "deadlock"): "the run ended with sessions that can never move",
    ("check", "bound"): "--max-steps, --time-limit, the memory bound or the no-progress watchdog was hit "
                        "before the run ended: no violation within it, never ok",
    ("check", "interrupted"): "SIGINT or SIGTERM: no violation before it, never ok",
    ("explore", "pass"): "every reachable state explored; nothing selected was found",
    ("explore", "failed"): "a worker died or raised (named, with the statistics so far), or with --ray a "
                           "partition's worker was lost (the last checkpoint named)",
    ("explore", "theorem"): "--theorem: every hypothesis holds, yet a counterexample was found",
    ("sweep", "pass"): "every value (cell) evaluated passes, or meets --require; with --any, some value does",
    ("sweep", "violation"): "a value evaluated fails (its verdict, or --require); with --any, every one does",
    ("sweep", "bound"): "no value fails for certain (with --any: none passes), and some is undecided (a bound, "
                        "an error, a worst case cut by a limit)",
    ("sweep", "interrupted"): "SIGINT or SIGTERM: the values finished so far are printed",
    ("sweep", "failed"): "a worker process died or raised (named, with the value it was exploring): the "
                         "values finished so far are printed, the other workers stopped",
    ("diff", "pass"): "same: on no environment does one variant fail where the other completes (the whole "
                      "joint state space was explored)",
    ("diff", "bound"): "--max-states, --time-limit or the memory bound cut the joint exploration before a "
                       "difference was found: no difference within the bound, never `same`",
    ("diff", "interrupted"): "SIGINT or SIGTERM cut the joint exploration before a difference was found",
    ("ui", "pass"): "the server was stopped (Ctrl-C or SIGTERM: its normal end)",
    ("completion", "pass"): "the script was printed",
    ("oracle", "pass"): "done; compare: serq agrees with the trace on every step; replay: vLLM shows the "
                        "counterexample's pattern",
    ("oracle", "input_error"): "bad input: a scenario (E023), no oracle environment (E024), a trace that does "
                               "not fit the scenario (E025), an instance that is not vLLM-exact or a "
                               "counterexample vLLM cannot run (E030), or a failed setup or driver",
    ("oracle", "violation"): "compare: a step differs (the first one is printed side by side); replay: a step "
                             "or the ending differs",
    ("oracle", "bound"): "trace: vLLM reached --max-steps before every request finished",
}


def exits_of(command: str) -> list[tuple[int, str, str]]:
    """(code, name, meaning) of each exit code of `command`, in code order."""
    names = set(COMMAND_EXITS[command])
    return [(e.code, e.name, _SPECIFIC.get((command, e.name), e.meaning)) for e in EXITS if e.name in names]


def epilog(command: str) -> str:
    """The `--help` section: one line per exit code (argparse keeps the
    layout with RawDescriptionHelpFormatter)."""
    lines = [_HEAD]
    for code, name, meaning in exits_of(command):
        lines.append(f"  {code:>2}  {name:<16}  {meaning}")
    return "\n".join(lines)


_HEAD = "exit codes (verdicts):"


def _formatter():
    import argparse

    class Formatter(argparse.HelpFormatter):
        """Wraps the description as usual; keeps the exit-code lines as they are."""

        def _fill_text(self, text, width, indent):
            if text.startswith(_HEAD):
                return "\n".join(indent + line for line in text.splitlines())
            return super()._fill_text(text, width, indent)

    return Formatter


def add_parser(sub, command: str, **kw):
    """`sub.add_parser` with the command's exit codes as its help epilog."""
    assert all(n in EXIT_CODES for n in COMMAND_EXITS[command]), command
    return sub.add_parser(command, epilog=epilog(command), formatter_class=_formatter(), **kw)
