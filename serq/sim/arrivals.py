"""Durations and arrival times: `parse_duration` for flags, and the
arrival tick of every workload session (`every`, `at`, `poisson`, a
`trace` file read as a bounded regular file)."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

from explorer.runtime.infile import NotReadable, read_regular
from serq import ir
from serq.diagnostics import Diagnostic, SerqError

NS = 1_000_000_000
MAX_TRACE_BYTES = 256 << 20  # an arrival trace file


_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": NS, "min": 60 * NS, "h": 3600 * NS}


def parse_duration(text: str) -> int:
    """`10s`, `250ms`, `1.5min`, `200us`, `7ns`; a bare number is seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)\s*(ns|us|ms|s|min|h)?\s*", text)
    if not m:
        raise ValueError(f"not a duration: {text!r} (write e.g. 10s, 250ms, 1.5min)")
    ticks = float(m.group(1)) * _UNITS[m.group(2) or "s"]
    if not ticks < 2**62:  # inf and nan too: ticks are 64-bit integers in the semantics
        raise ValueError(f"duration too large: {text!r} (at most about 146 years)")
    return int(round(ticks))


def _trace_times(path: Path, count: int, line: ir.WorkloadLine, file: str) -> list[int]:
    where = line.at or (0, 0)

    def err(msg, *notes):
        return SerqError([Diagnostic(where[0], where[1], "E410", msg, file=file, notes=notes)])

    try:  # a regular file of bounded size only: not a device or a pipe that never ends
        text = read_regular(path, MAX_TRACE_BYTES).decode("utf-8")
    except (NotReadable, UnicodeDecodeError) as e:
        raise err(f"cannot read the arrival trace {path}: {getattr(e, 'reason', e)}") from None
    times = []
    for n, raw in enumerate(text.splitlines(), 1):
        s = raw.split("#", 1)[0].strip()
        if not s:
            continue
        field0 = s.split(",", 1)[0].strip()
        try:
            v = float(field0)
        except ValueError:
            if not times and n == 1:
                continue  # a header line
            raise err(f"{path}:{n}: not an arrival time in seconds: {field0!r}") from None
        if not math.isfinite(v) or v < 0 or v * NS >= 2**62:
            raise err(f"{path}:{n}: an arrival time must be a number of seconds from 0 to 2^62 ns "
                      f"(about 146 years), got {field0}")
        times.append(int(round(v * NS)))
        if len(times) == count:
            break
    if len(times) < count:
        raise err(f"the arrival trace {path} has {len(times)} arrival times; the line needs {count}")
    return sorted(times)


def arrival_times(program: ir.Program, seed: int, base_dir: Path | None = None) -> list[int]:
    """Arrival tick of every workload session, in workload order (the order
    of `Model.initial_state`).

    `every P`: i * P for i = 0 .. count-1.  `at T`: all at T.  No process:
    all at 0.  `trace "f"`: the first `count` times of the file (seconds,
    one per line, first comma-separated field; `#` comments, blank lines
    and one header line are skipped), relative to the instance file's
    directory, sorted.  `poisson R/s seed S`: exponential gaps of mean 1/R
    seconds, each rounded to ticks, from a stream seeded by the run's
    `--seed`, the line's position in the workload and its own `seed S` —
    so `--seed` changes every random thing of a run, and two lines with
    the same rate and seed still differ.
    """
    base = base_dir if base_dir is not None else _base_dir(program)
    out: list[int] = []
    for li, line in enumerate(program.workload):
        a = line.arrival
        n = line.count
        if a is None:
            out.extend([0] * n)
        elif isinstance(a, ir.ArriveAt):
            out.extend([a.time] * n)
        elif isinstance(a, ir.ArriveEvery):
            out.extend(i * a.period for i in range(n))
        elif isinstance(a, ir.ArrivePoisson):
            rng = random.Random(f"serq/poisson/{seed}/{li}/{a.seed}")
            t = 0
            for _ in range(n):
                t += int(round(rng.expovariate(a.rate) * NS))
                out.append(t)
        elif isinstance(a, ir.ArriveTrace):
            p = Path(a.path)
            if not p.is_absolute():
                p = base / p
            out.extend(_trace_times(p, n, line, program.source))
        else:  # pragma: no cover - the IR has no other kind
            raise TypeError(a)
    return out


def _base_dir(program: ir.Program) -> Path:
    src = program.source
    if src and not src.startswith("<"):
        return Path(src).parent
    return Path(".")
