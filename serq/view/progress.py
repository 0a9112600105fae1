"""The live progress display of a long exploration, on a terminal.

The search calls `update(stats)` about once a second; the first call
opens a transient rich display on stderr (so a short run shows nothing)
and `close()` erases it, leaving the output exactly as without it. Not a
terminal (a pipe, a file, CI): no display at all.
"""

from __future__ import annotations

import sys


def peak_memory_mb() -> float | None:
    """This process's peak resident memory, in MB (None where unknown)."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes
    return kb / (1 << 20) if sys.platform == "darwin" else kb / 1024


def describe(stats) -> str:
    mem = peak_memory_mb()
    parts = [f"{stats.distinct:,} distinct states", f"{stats.states_per_sec:,.0f}/s",
             f"queue {stats.queue:,}", f"depth {stats.max_depth}"]
    if mem is not None:
        parts.append(f"{mem:,.0f} MB")
    return " · ".join(parts)


class PlainProgress:
    """`--progress` off a terminal: one plain line per call (about once a
    second), for a log or a script that waits for a search to be under way."""

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stderr

    def __call__(self, stats) -> None:
        print(f"exploring: {describe(stats)}", file=self.stream, flush=True)

    def close(self) -> None:
        pass


class ExploreProgress:
    """A callback for `explore(progress=...)`; use as a context manager."""

    def __init__(self, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.live = None
        self.task = None

    @staticmethod
    def wanted(stream=None) -> bool:
        s = stream if stream is not None else sys.stderr
        return hasattr(s, "isatty") and s.isatty()

    def __call__(self, stats) -> None:
        if self.live is None:
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            # the elapsed time first: a narrow terminal cuts the end of the line
            self.live = Progress(SpinnerColumn(), TextColumn("exploring"), TimeElapsedColumn(),
                                 TextColumn("{task.description}"), console=Console(file=self.stream), transient=True)
            self.live.start()
            self.task = self.live.add_task("", total=None)
        self.live.update(self.task, description=describe(stats))

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
