"""Step-by-step agreement of a recorded vLLM trace with serq's schedule.

`agree(sc, trace_lines, coalesce=...)` converts the scenario, runs serq on it
with a schedule, and compares every step: the tokens per request in serve
order, admissions (in order), preemptions (in order), prefix hits of the
admitted requests, finished requests, and free and cached blocks (all required). One serq
tick is one vLLM step (each iteration costs 1 tick, arrivals are at their
step's tick), so a vLLM step is compared with serq's iteration at the same
tick. vLLM steps that do nothing (idle, or a `schedule()` with no token, no
preemption) have no serq iteration. docs/vllm.md says what is compared.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass

from serq.oracle.convert import convert
from serq.oracle.driver import TRACE_FORMAT, TRACE_VERSION  # what the driver writes

FIELDS = ("served", "admitted", "preempted", "hits", "finished", "free_blocks", "cached_blocks")


@dataclass
class Agreement:
    steps: int  # vLLM steps compared (those that did something)
    agree: int  # of them, steps on which serq agrees in every field (up to the first difference)
    first: str | None  # the first differing step, side by side; None when every step agrees
    needs: list[str]  # behaviours the language cannot say yet (converter)

    @property
    def ok(self) -> bool:
        return self.first is None


_LISTS = ("scheduled", "admitted", "preempted", "finished")
_COUNTS = ("free_blocks", "cached_blocks")


class TraceError(ValueError):
    """A trace of the wrong shape, at `line` (1-based) and `col`."""

    def __init__(self, line: int, col: int, message: str) -> None:
        super().__init__(message)
        self.line, self.col = line, col


def _count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _step_problem(rec) -> str | None:
    if not isinstance(rec, dict):
        return "a step must be a JSON object"
    if not _count(rec.get("step")):
        return "a step needs `step`, a number from 0"
    for k in _LISTS:
        if not isinstance(rec.get(k), list):
            return f"step {rec['step']}: `{k}` must be a list"
    if not all(isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) and _count(x[1])
               for x in rec["scheduled"]):
        return f"step {rec['step']}: `scheduled` must list [request, tokens] pairs"
    for k in _LISTS[1:]:
        if not all(isinstance(x, str) for x in rec[k]):
            return f"step {rec['step']}: `{k}` must list request ids"
    hits = rec.get("prefix_hit_tokens")
    if not isinstance(hits, dict) or not all(_count(v) for v in hits.values()):
        return f"step {rec['step']}: `prefix_hit_tokens` must map request ids to token counts"
    for k in _COUNTS:
        if not _count(rec.get(k)):
            return f"step {rec['step']}: `{k}` must be a count"
    return None


def read_trace(text: str) -> tuple[dict, list[dict]]:
    """(header, steps) of a trace written by the driver, its shape checked:
    the header's format and version, every step an object with the fields
    compared, the steps in strictly increasing order (each once).
    TraceError at the offending line otherwise."""
    header, steps, last = None, [], None
    for n, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
        except json.JSONDecodeError as e:
            raise TraceError(n, e.colno, f"invalid JSON: {e.msg}") from None
        except (ValueError, RecursionError) as e:
            raise TraceError(n, 1, f"invalid JSON: {e}") from None
        if header is None:
            if not isinstance(rec, dict) or rec.get("format") != TRACE_FORMAT:
                raise TraceError(n, 1, "not a vLLM trace of `serq oracle trace`")
            if rec.get("version") != TRACE_VERSION:
                raise TraceError(n, 1, f"trace version {json.dumps(rec.get('version'))}; this serq reads "
                                       f"version {TRACE_VERSION}")
            header = rec
            continue
        why = _step_problem(rec)
        if why:
            raise TraceError(n, 1, why)
        if last is not None and rec["step"] <= last:
            raise TraceError(n, 1, f"step {rec['step']} after step {last}: the steps must be listed once each, "
                                   "in increasing order")
        last = rec["step"]
        steps.append(rec)
    if header is None:
        raise TraceError(1, 1, "not a vLLM trace of `serq oracle trace` (the file is empty)")
    return header, steps


def _vllm_view(rec: dict, labels: dict, bs: int) -> dict:
    lab = lambda rid: labels[rid]  # noqa: E731
    return {
        "served": [[lab(r), n] for r, n in rec["scheduled"]],
        "admitted": [lab(r) for r in rec["admitted"]],
        "preempted": [lab(r) for r in rec["preempted"]],
        "hits": {lab(r): rec["prefix_hit_tokens"].get(r, 0) for r in rec["admitted"]},
        "finished": sorted(lab(r) for r in rec["finished"]),
        "free_blocks": rec["free_blocks"],
        "cached_blocks": rec["cached_blocks"],
    }


def _serq_view(rec: dict | None, bs: int) -> dict | None:
    if rec is None:
        return None
    kv = rec["pools"]["kv"]
    return {
        "served": rec["served"],
        "admitted": rec["admitted"],
        "preempted": rec["preempted"],
        "hits": {s: rec["hits"].get(s, {}).get("kv", 0) for s in rec["admitted"]},
        "finished": sorted(rec["finished"]),
        # vLLM counts evictable cached blocks as free (a shared prefix's blocks in use are not)
        "free_blocks": (kv["free"] + kv["evictable"]) // bs,
        "cached_blocks": kv["evictable"] // bs,
    }


def _active(rec: dict) -> bool:
    return bool(rec["scheduled"] or rec["preempted"] or rec["admitted"] or rec["finished"])


def side_by_side(step: int, v: dict | None, s: dict | None, field: str | None) -> str:
    lines = [f"first difference at step {step}" + (f" ({field})" if field else "") + ":",
             f"  {'':14} {'vLLM':40} serq"]
    for f in FIELDS:
        a = "-" if v is None else json.dumps(v[f])
        b = "(no iteration)" if s is None else json.dumps(s[f])
        mark = "≠" if (v is None or s is None or v[f] != s[f]) else " "
        lines.append(f"{mark} {f:14} {a:40} {b}")
    return "\n".join(lines)


def schedule_of(text: str, *, coalesce: bool = True, max_steps: int = 200_000,
                horizon: int | None = None) -> tuple[list[dict], str]:
    """serq's schedule (iterations) of an instance text, and how its run
    stopped; `horizon`: no iteration ending after that tick."""
    from serq.lang.load import load_text
    from serq.sim.schedule import ScheduleWriter
    from serq.sim.simulator import SimConfig, Simulator

    loaded = load_text(text, "<converted scenario>")
    sim = Simulator(loaded.program, SimConfig(coalesce=coalesce, max_steps=max_steps, horizon=horizon))
    buf = io.StringIO()
    ScheduleWriter(buf).attach(sim)
    result = sim.run()
    recs = [json.loads(x) for x in buf.getvalue().splitlines()[1:]]
    return recs, result.stopped


def agree(sc: dict, trace_text: str, *, coalesce: bool = True, name: str = "scenario") -> Agreement:
    conv = convert(sc, name)
    _, steps = read_trace(trace_text)
    bs = int(sc["block_size"])
    recs, stopped = schedule_of(conv.text, coalesce=coalesce)
    by_tick: dict[int, dict] = {}
    for r in recs:
        if r["tick"] in by_tick:
            raise AssertionError(f"two serq iterations at tick {r['tick']}")
        by_tick[r["tick"]] = r
    compared = 0
    agreed = 0
    seen = set()
    for rec in steps:
        if not _active(rec):
            continue
        compared += 1
        t = rec["step"]
        seen.add(t)
        v = _vllm_view(rec, conv.labels, bs)
        s = _serq_view(by_tick.get(t), bs)
        diff = next((f for f in FIELDS if s is None or v[f] != s[f]), None)
        if diff is not None or s is None:
            return Agreement(compared, agreed, side_by_side(t, v, s, diff), conv.needs)
        agreed += 1
    extra = sorted(t for t in by_tick if t not in seen)
    if extra:
        t = extra[0]
        return Agreement(compared, agreed, side_by_side(t, None, _serq_view(by_tick[t], bs), None)
                         + f"\n  (vLLM did nothing at step {t}; serq's run stopped: {stopped})", conv.needs)
    return Agreement(compared, agreed, None, conv.needs)
