"""Text and JSON renderings of a Result.

Byte stability: everything except the stats line is a function of the model
and the verdict only (no times, addresses, worker counts or dict orders), so
traces can be diffed and used as golden files.  Timing lives on the last line
only and is dropped with ``with_timing=False``; ``with_stats=False`` drops the
whole stats line.
"""

from __future__ import annotations

from typing import Any

from .fingerprint import format_fp
from .result import Result, Stats
from .trace import Step

__all__ = ["verdict_line", "render_text", "render_json", "stats_line"]

_STEP = "  {n}. {text}"
_DETAIL = "       {line}"
_EVENT = "       event: {line}"


def verdict_line(r: Result) -> str:
    head = f"{r.verdict} ({r.kind})" if r.kind else r.verdict
    return f"{head}: {r.message}"


def _step_text(s: Step, n_initial_hint: bool) -> str:
    if s.index == 0:
        return f"initial state #{s.action_index}" if n_initial_hint else "initial state"
    return s.action_text or ""


def stats_line(st: Stats, with_timing: bool = True) -> str:
    line = (f"stats: generated={st.generated} distinct={st.distinct} queue={st.queue} "
            f"max_depth={st.max_depth}")
    if with_timing:
        line += (f" elapsed={st.elapsed:.2f}s rate={st.states_per_sec:.0f} states/s "
                 f"workers={st.workers}")
    return line


def render_text(r: Result, with_timing: bool = True, with_stats: bool = True) -> str:
    out = [verdict_line(r)]
    # Show "#i" whenever the trace does not start from initial state 0, so
    # the text alone says which initial state was used.
    hint = bool(r.trace) and r.trace[0].action_index != 0
    for s in r.trace:
        if r.lasso_start is not None and s.index == r.lasso_start + 1:
            out.append("  -- cycle starts here --")
        out.append(_STEP.format(n=s.index, text=_step_text(s, hint)))
        out.extend(_DETAIL.format(line=x) for x in s.diff)
        out.extend(_EVENT.format(line=x) for x in s.events)
    if r.lasso_start is not None and r.trace:
        out.append(f"  -- cycle returns to step {r.lasso_start} --")
    if r.diagnosis:
        out.append("deadlock diagnosis:")
        out.extend(f"  {x}" for x in r.diagnosis)
    if r.replay_path is not None:
        out.append(f"replay: {r.replay_path}")
    if with_stats:
        out.append(stats_line(r.stats, with_timing))
    return "\n".join(out) + "\n"


def render_json(r: Result, with_timing: bool = True, with_stats: bool = True) -> dict[str, Any]:
    """JSON-ready dict with the same content as render_text.

    Fingerprints are 16-hex-digit strings (64-bit ints do not survive JSON
    readers that use doubles).
    """
    d: dict[str, Any] = {
        "verdict": r.verdict,
        "kind": r.kind,
        "message": r.message,
        "exit_code": r.exit_code,
        "bound_reason": r.bound_reason,
        "replay_path": r.replay_path,
        "lasso_start": r.lasso_start,
        "trace": [
            {
                "step": s.index,
                "action_index": s.action_index,
                "action": s.action_text,
                "diff": list(s.diff),
                "events": list(s.events),
                "fingerprint": format_fp(s.fingerprint),
            }
            for s in r.trace
        ],
        "diagnosis": list(r.diagnosis),
    }
    if with_stats:
        d["stats"] = r.stats.as_dict(with_timing)
    return d
