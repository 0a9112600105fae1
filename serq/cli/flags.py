"""Checks of the numeric flags every command shares (limits, workers),
before any work starts: a negative, infinite or not-a-number limit is an
input error (E012, exit 2) located in the flag's value, never a silent
"no limit" or an immediate stop. And `later`: a command's function,
imported when the command runs."""

from __future__ import annotations

import importlib
import math

from serq.diagnostics import flag_error


def later(module: str, name: str):
    """A command's function, imported from `module` only when the command
    runs: building the parser (every command, and `--help`) loads no engine."""

    def run(args):
        return getattr(importlib.import_module(module), name)(args)

    return run

# flag -> (attribute, smallest value allowed, what the number counts)
LIMITS = {
    "--max-states": ("max_states", 0, "distinct states"),
    "--max-depth": ("max_depth", 0, "steps"),
    "--time-limit": ("time_limit", 0, "seconds of wall-clock time"),
    "--max-steps": ("max_steps", 0, "actions"),
    "--graph-limit": ("graph_limit", 0, "states"),
    "--workers": ("workers", 1, "processes"),
}


def check_limits(args, *flags: str) -> None:
    """Raise a located E012 for the first of `flags` whose value is out of range."""
    for flag in flags:
        attr, least, unit = LIMITS[flag]
        v = getattr(args, attr, None)
        if v is None:
            continue
        text = repr(v) if isinstance(v, float) else str(v)
        if isinstance(v, float) and not math.isfinite(v):
            raise flag_error(flag, text, "E012", f"{flag} must be a finite number of {unit}, got {text}")
        if v < least:
            need = "at least 1" if least == 1 else "non-negative"
            raise flag_error(flag, text, "E012", f"{flag} must be {need} ({unit}), got {text}")


def memory_limit(args) -> int | None:
    """--memory in bytes, or the default derived from the memory available now."""
    from explorer.runtime.memory import default_limit, parse_size

    if getattr(args, "memory", None) is None:
        return default_limit()
    try:
        return parse_size(args.memory)
    except ValueError as e:
        raise flag_error("--memory", args.memory, "E012", str(e)) from None
