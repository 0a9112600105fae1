"""Text and JSON renderings of a Result.

Byte stability: everything except the stats line is a function of the model
and the verdict only (no times, addresses, worker counts or dict orders), so
traces can be diffed and used as golden files.  Timing lives on the last line
only and is dropped with ``with_timing=False``; ``with_stats=False`` drops the
whole stats line.
"""

from __future__ import annotations

from typing import Any

from explorer.fingerprint import format_fp
from explorer.result import Result, Stats
from explorer.trace import Step

__all__ = ["verdict_line", "render_text", "render_json", "stats_line", "trace_lines", "no_return_line"]

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
        rss = peak_rss()
        if rss:
            line += f" peak_rss={rss / 2**20:.0f}MiB"
            if st.distinct:  # per state: meaningless before the first one
                line += f" ({rss / st.distinct:.0f} B/state)"
        line += " fp_collision=0 (exact)" if st.exact else f" fp_collision={_prob(st.collision_probability)}"
    return line


def _prob(p: float) -> str:
    """1.2e-11, 0 (no state, or one)."""
    return "0" if p == 0 else f"{p:.1e}"


def peak_rss() -> int:
    """This process's peak resident memory in bytes (0 where unknown): the
    whole process, interpreter and compiled code included."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not on this platform
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def trace_lines(trace: list[Step], lasso_start: int | None = None, no_return_step: int | None = None) -> list[str]:
    """The numbered steps of a trace, with the lasso and point-of-no-return marks."""
    out = []
    # Show "#i" whenever the trace does not start from initial state 0, so
    # the text alone says which initial state was used.
    hint = bool(trace) and trace[0].action_index != 0
    for s in trace:
        if lasso_start is not None and s.index == lasso_start + 1:
            out.append("  -- cycle starts here --")
        out.append(_STEP.format(n=s.index, text=_step_text(s, hint)))
        out.extend(_DETAIL.format(line=x) for x in s.diff)
        out.extend(_EVENT.format(line=x) for x in s.events)
        if no_return_step is not None and s.index == no_return_step and s.index > 0:
            out.append(f"  -- point of no return: no continuation of step {s.index} completes --")
    if lasso_start is not None and trace:
        out.append(f"  -- cycle returns to step {lasso_start} --")
    return out


def no_return_line(r: Result) -> str | None:
    nr = r.no_return
    if nr is None:
        return None
    doomed = f"{nr.doomed} of {nr.states} reachable states cannot complete"
    if nr.method == "forward":
        doomed = forward_words(nr)
        if nr.status == "unknown":
            later = "" if nr.doomed_from is None else f"; from step {nr.doomed_from} on none completes"
            return f"point of no return: unknown ({doomed}{later})"
    if nr.status == "step":
        act = r.trace[nr.step].action_text if nr.step < len(r.trace) else "?"
        return (f"point of no return: step {nr.step} ({act}): from step {nr.step - 1} some continuation "
                f"still completes, from step {nr.step} none does ({doomed})")
    if nr.status == "initial":
        return f"point of no return: the initial state: no behaviour completes ({doomed})"
    if nr.status == "none":
        leaves = "another choice leaves its cycle; " if r.verdict == "livelock" else ""
        return f"point of no return: none: every state of this trace can still complete ({leaves}{doomed})"
    return f"point of no return: unknown (the state graph was cut at its {nr.reason} bound)"


def forward_words(nr) -> str:
    """How a forward search (explorer/graph/forward.py) found the point of no return, or where it was cut."""
    if nr.status == "unknown":
        return (f"the state graph and the forward searches from the trace's states were cut by {nr.cut_by}, "
                f"after {nr.searched} states")
    return (f"found by forward searches from the trace's states, {nr.searched} states visited: "
            f"the whole state graph is past {nr.cut_by}")


def render_text(r: Result, with_timing: bool = True, with_stats: bool = True) -> str:
    out = [verdict_line(r)]
    nr = r.no_return
    out.extend(trace_lines(r.trace, r.lasso_start, nr.step if nr is not None and nr.status == "step" else None))
    if r.diagnosis:
        out.append("deadlock diagnosis:")
        out.extend(f"  {x}" for x in r.diagnosis)
    line = no_return_line(r)
    if line is not None:
        out.append(line)
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
    nr = r.no_return
    if nr is not None:
        d["point_of_no_return"] = {
            "status": nr.status,
            "step": nr.step if nr.status == "step" else None,
            "action": r.trace[nr.step].action_text if nr.status == "step" and nr.step < len(r.trace) else None,
            "doomed_states": nr.doomed,
            "states": nr.states,
            "bound_reason": nr.reason,
            "method": nr.method,
            "searched_states": nr.searched if nr.method == "forward" else None,
            "cut_by": nr.cut_by,
            "text": no_return_line(r),
        }
    if with_stats:
        d["stats"] = r.stats.as_dict(with_timing)
    return d
