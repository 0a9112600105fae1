"""A counterexample of a vLLM-exact instance, replayed on vLLM's own scheduler.

The explorer lets arrivals and turn returns interleave freely with the
engine's iterations; a counterexample (a replay path) fixes them, and the
drawn values. `scenario_of` writes it as a vLLM scenario: one request per
request of a session, arriving at the engine step counted by the
iterations before its arrival (a follow-up turn `think_steps` after the
step that finished the turn before it), with the session's prompt and
output lengths (`n`, `o`) at that point. `replay` checks, in order:

1. that the instance is vLLM-exact (serq/oracle/exact.py, `NotExact`,
   located at the first declaration that differs from the converter's);
2. that serq's own run of the converted scenario *is* the counterexample,
   iteration by iteration (served tokens, admissions, preemptions, hits,
   finished requests); a counterexample no scenario says (a turn returning
   before a fresh arrival of its step, which vLLM adds after them) is
   `NotExpressible`;
3. (`judge`) against vLLM's trace of the scenario: every step of the
   counterexample agrees on every field `serq oracle compare` compares,
   free and cached blocks included, and its ending is vLLM's too: after a
   deadlock vLLM does nothing more up to its step cap with the same
   requests unfinished (stuck forever: nothing is left to arrive, and a
   step that changes nothing changes nothing the next time); after a
   livelock it goes round the same cycle. Else the first step that differs.

docs/vllm.md, "Replaying a counterexample on vLLM", says what "the same
pattern" means.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from serq.oracle.compare import FIELDS, _active, _serq_view, _vllm_view, read_trace, schedule_of, side_by_side
from serq.oracle.convert import convert
from serq.oracle.driver import ScenarioError, check_scenario
from serq.oracle.exact import exact, settings

MARGIN = 30  # vLLM steps run past a deadlock's or a livelock's end, to see it stay
EVENT_FIELDS = ("served", "admitted", "preempted", "hits", "finished")


class NotExpressible(ValueError):
    """A counterexample no vLLM scenario says, at step `step` of its trace."""

    def __init__(self, step: int, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.step, self.detail = step, detail


@dataclass
class Plan:
    """A counterexample as a vLLM scenario."""

    scenario: dict
    rows: list[dict]  # per iteration of the counterexample: the EVENT_FIELDS, sessions by label
    label: dict[str, str]  # request id -> the session's label
    verdict: str
    message: str
    lasso: int | None  # the iteration the livelock's cycle starts at
    left_out: list[str] = field(default_factory=list)  # sessions that never arrive on the path
    preemptions: list[tuple[int, str, str]] = field(default_factory=list)  # (iteration, session, why)
    unfinished: list[str] = field(default_factory=list)  # sessions not done at the end
    turn_first: list[tuple[int, str, str]] = field(default_factory=list)  # (step, turn, arrival) after it

    @property
    def steps(self) -> int:
        return len(self.rows)


def _row(events: list[dict]) -> dict:
    row = {"served": [], "admitted": [], "preempted": [], "hits": {}, "finished": []}
    hits = {}
    for e in events:
        k, s = e["kind"], e.get("session")
        if k == "serve":
            row["served"].append([s, e["tokens"]])
        elif k == "admit":
            row["admitted"].append(s)
        elif k == "preempt":
            row["preempted"].append(s)
        elif k == "hit" and e.get("pool") == "kv":
            hits[s] = hits.get(s, 0) + e["units"]
        elif k in ("at_turn", "end"):
            row["finished"].append(s)
    row["hits"] = {s: hits.get(s, 0) for s in row["admitted"]}
    row["finished"].sort()
    return row


def scenario_of(cx: dict, text: str, file: str) -> Plan:
    """The scenario of a counterexample (`serq explore --json`'s object) of
    the instance `text`; NotExact when the instance is not vLLM-exact."""
    sc = settings(text, file)
    trace = cx["trace"]
    rows, reqs, label, last, finished_at, program = [], [], {}, {}, {}, {}
    preemptions, turned, turn_first = [], [], []
    lasso = None  # the livelock's cycle: the iterations after the state it returns to
    if cx.get("lasso_start") is not None:
        lasso = sum(1 for st in trace[1:cx["lasso_start"] + 1] if st["move"]["kind"] == "iterate")
    priority = sc.get("policy") == "priority"
    for st in trace:
        mv = st["move"]
        if mv is None:
            continue
        if mv["kind"] == "iterate":
            for e in st["events"]:
                if e["kind"] in ("at_turn", "end"):
                    finished_at[e["session"]] = len(rows)
                elif e["kind"] == "preempt":
                    preemptions.append((len(rows), e["session"], e.get("why", "")))
            rows.append(_row(st["events"]))
            continue
        s = mv["session"]
        ses = next(x for x in st["state"]["sessions"] if x["session"] == s)
        a = ses["attrs"]
        if not all(k in a for k in ("n", "o")):
            raise NotExpressible(st["step"], f"{s} has no `n` and `o` (a prompt and an output length)")
        req = {"max_tokens": int(a["o"])}
        if priority:
            req["priority"] = int(a.get("pri", 0))
        if mv["kind"] == "turn":
            turned.append((len(rows), s))
        elif any(t == len(rows) for t, _ in turned):  # vLLM adds a step's fresh arrivals before its turns
            turn_first.extend((len(rows), x, s) for t, x in turned if t == len(rows))
        if mv["kind"] == "arrive":
            rid = s
            req.update(id=rid, arrival_step=len(rows), prompt_len=int(a["n"]))
            program[s] = ses["program"]
        else:  # a turn: the user's reply to the request that ended at iteration finished_at[s]
            prev = last[s]
            rid = f"{s}.{prev['turn'] + 2}"  # its second request is `chat#1.2`
            req.update(id=rid, follows=prev["id"], think_steps=len(rows) - finished_at[s] - 1,
                       prompt_len=int(a["n"]) - prev["n"] - prev["o"])
        last[s] = {"id": rid, "n": int(a["n"]), "o": int(a["o"]), "turn": last[s]["turn"] + 1 if s in last else 0}
        label[rid] = s
        reqs.append(req)
    end = trace[-1]["state"]["sessions"] if trace else []
    left_out = [x["session"] for x in end if x["phase"] == "not-arrived"]
    unfinished = [x["session"] for x in end if x["phase"] not in ("not-arrived", "done", "turn")]
    sc["requests"] = reqs
    if cx["verdict"] in ("deadlock", "livelock"):
        sc["max_steps"] = len(rows) + MARGIN
    sc["description"] = (f"a counterexample of {file.replace(chr(92), '/').rsplit('/', 1)[-1]} ({cx['verdict']}: {cx['message']}), replayed by "
                         "`serq oracle replay`")
    if not reqs:
        raise NotExpressible(0, "no session arrives on this path: there is nothing to replay")
    try:
        check_scenario(sc, file)
    except ScenarioError as e:
        raise NotExpressible(trace[-1]["step"], f"the scenario is not one vLLM runs: {e}") from None
    used: dict[str, str] = {}  # a program -> its session with the most turns on the path, checked
    for s_, p in program.items():
        if p not in used or last[s_]["turn"] > last[used[p]]["turn"]:
            used[p] = s_
    exact(text, file, sc, used)
    return Plan(scenario=sc, rows=rows, label=label, verdict=cx["verdict"], message=cx["message"], lasso=lasso,
                left_out=left_out, preemptions=preemptions, unfinished=unfinished, turn_first=turn_first)


# ------------------------------------------------------------------ serq's run of the scenario


def serq_rows(plan: Plan) -> tuple[dict[int, dict], dict[str, str]]:
    """serq's schedule of the converted scenario, by tick, its sessions
    named as the counterexample names them; NotExpressible unless it is
    the counterexample, iteration by iteration."""
    conv = convert(plan.scenario, "replay")
    back = {conv.labels[rid]: s for rid, s in plan.label.items()}
    # a deadlock's or a livelock's scenario stops at vLLM's step cap: serq's run there too
    recs, _ = schedule_of(conv.text, coalesce=False, horizon=plan.scenario.get("max_steps"))
    by_tick = {}
    for r in recs:
        by_tick[r["tick"]] = _rename(r, back)
    for t, want in enumerate(plan.rows):
        got = by_tick.get(t)
        mine = _serq_view(got, plan.scenario["block_size"]) if got else None
        if mine is None or any(mine[f] != want[f] for f in EVENT_FIELDS):
            f = "iteration" if mine is None else next(f for f in EVENT_FIELDS if mine[f] != want[f])
            detail = "\n".join([f"  {'':10} {'counterexample':40} serq's run of the scenario"] + [
                f"{'≠' if mine is None or mine[k] != want[k] else ' '} {k:10} "
                f"{_j(want[k]):40} {_j(mine[k]) if mine else '(no iteration)'}" for k in EVENT_FIELDS])
            why = "".join(f"; {x}'s user replies before {y} arrives at step {k}, and vLLM adds a step's fresh "
                          "arrivals before its returning turns" for k, x, y in plan.turn_first if k <= t)
            raise NotExpressible(t, f"the scenario does not say the counterexample: at step {t} ({f}) serq's run "
                                    f"of it differs{why}", detail)
    return by_tick, back


def _j(x) -> str:
    import json

    return json.dumps(x, ensure_ascii=False)


def _rename(rec: dict, back: dict) -> dict:
    n = lambda s: back.get(s, s)  # noqa: E731
    out = dict(rec)
    out["served"] = [[n(s), k] for s, k in rec["served"]]
    out["admitted"] = [n(s) for s in rec["admitted"]]
    out["preempted"] = [n(s) for s in rec["preempted"]]
    out["finished"] = [n(s) for s in rec["finished"]]
    out["hits"] = {n(s): v for s, v in rec["hits"].items()}
    return out


# ------------------------------------------------------------------ vLLM's trace


@dataclass
class Judgement:
    same: bool
    lines: list[str]  # what agrees, in words
    difference: str | None  # the first differing step, side by side
    agreed: int  # steps of the counterexample vLLM agrees on
    after: str | None = None  # the steps after the counterexample's end (violation, pass)


def judge(plan: Plan, trace_text: str, serq_by_tick: dict[int, dict]) -> Judgement:
    """vLLM's trace of the plan's scenario against the counterexample."""
    _, steps = read_trace(trace_text)
    bs = int(plan.scenario["block_size"])
    by_step = {r["step"]: r for r in steps}
    k = plan.steps
    unknown = sorted({rid for r in steps for rid, _ in r["scheduled"]} - set(plan.label))
    if unknown:
        raise ValueError(f"request {unknown[0]!r} is not one of this counterexample's scenario")
    for t in range(k):
        rec = by_step.get(t)
        v = _vllm_view(rec, plan.label, bs) if rec is not None and _active(rec) else None
        s = _serq_view(serq_by_tick.get(t), bs)
        f = next((f for f in FIELDS if v is None or v[f] != s[f]), None)
        if f is not None:
            return Judgement(False, [f"vLLM agrees on {t} of the counterexample's {k} steps"],
                             side_by_side(t, v, s, f), t)
    lines = [f"every step agrees: vLLM serves, admits, preempts, hits and finishes as the counterexample does, "
             f"with the same free and cached blocks ({k} steps)"]
    if plan.preemptions:
        lines.append("the same preemptions: " + "; ".join(
            f"{s} at step {t}" + (" (by itself)" if why == "self" else "") for t, s, why in plan.preemptions))
    if plan.verdict == "deadlock":
        return _stuck(plan, steps, lines, k)
    if plan.verdict == "livelock":
        return _cycle(plan, by_step, lines, k, bs)
    return _after(plan, steps, serq_by_tick, lines, k, bs)


def _stuck(plan: Plan, steps: list[dict], lines: list[str], k: int) -> Judgement:
    later = [r for r in steps if r["step"] >= k]
    moved = next((r for r in later if _active(r)), None)
    finished = {plan.label[rid] for r in steps for rid in r["finished"]}
    still = sorted({plan.label[rid] for rid in plan.label} - finished)
    want = sorted(plan.unfinished)
    if moved is not None:
        return Judgement(False, lines, f"the counterexample ends in a deadlock after step {k - 1}, but vLLM goes on "
                                       f"at step {moved['step']}: scheduled {_j(moved['scheduled'])}, admitted "
                                       f"{_j(moved['admitted'])}, preempted {_j(moved['preempted'])}", k)
    if still != want:
        return Judgement(False, lines, f"unfinished at the end: vLLM {_j(still)}, the counterexample {_j(want)}", k)
    if not later:
        return Judgement(False, lines, f"vLLM's trace ends at step {k - 1}: it shows no step after the "
                                       "counterexample's end", k)
    end = later[-1]
    lines.append(f"stuck forever, as in the counterexample: from step {k} to its step cap (step {end['step']}) "
                 f"vLLM schedules, admits and preempts nothing, {', '.join(still)} unfinished "
                 f"({end.get('num_waiting', '?')} waiting, {end.get('num_running', '?')} running, "
                 f"{end['free_blocks']} free blocks of which {end['cached_blocks']} cached); nothing is left to "
                 "arrive, so a step that changes nothing changes nothing the next time")
    return Judgement(True, lines, None, k)


def _cycle(plan: Plan, by_step: dict, lines: list[str], k: int, bs: int) -> Judgement:
    start = plan.lasso if plan.lasso is not None else k
    cyc = plan.rows[start:]
    if not cyc:
        return Judgement(False, lines, "the livelock's cycle has no iteration: vLLM has no step to repeat it", k)
    for j in range(MARGIN):
        rec = by_step.get(k + j)
        want = cyc[j % len(cyc)]
        v = _vllm_view(rec, plan.label, bs) if rec is not None else None
        if v is None or any(v[f] != want[f] for f in EVENT_FIELDS):
            return Judgement(False, lines, f"the livelock's cycle (steps {start} to {k - 1}) is not repeated: "
                                           f"vLLM's step {k + j} is {_j(rec and rec['scheduled'])}", k)
    lines.append(f"the same cycle: vLLM repeats steps {start} to {k - 1} for {MARGIN} more steps, up to its "
                 "step cap, finishing nothing")
    return Judgement(True, lines, None, k)


def _after(plan: Plan, steps: list[dict], serq_by_tick: dict, lines: list[str], k: int, bs: int) -> Judgement:
    later = [r for r in steps if r["step"] >= k and _active(r)]
    for rec in later:
        v = _vllm_view(rec, plan.label, bs)
        s = _serq_view(serq_by_tick.get(rec["step"]), bs)
        f = next((f for f in FIELDS if s is None or v[f] != s[f]), None)
        if f is not None:
            return Judgement(True, lines, None, k, "after the counterexample's end, vLLM and serq's run of the "
                                                   f"scenario differ:\n{side_by_side(rec['step'], v, s, f)}")
    return Judgement(True, lines, None, k, f"after the counterexample's end, vLLM and serq's run of the scenario "
                                           f"agree on the {len(later)} steps left")
