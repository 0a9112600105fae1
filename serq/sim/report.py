"""Statistics of a simulation and their rendering (rich tables or JSON).

`Stats` consumes the model's events with the tick they are stamped at (the
simulator decides the stamp: an iteration's decisions at its start, its
effects at its end) and the pool levels after every action. Every
quantity is an integer until the report divides, and every sample list is
sorted before use, so the numbers depend on the multiset of samples only:
a coalesced run, which records the same samples in a different grouping,
reports the same bytes. docs/simulator.md defines each field.
"""

from __future__ import annotations

from serq.durations import ITERATION, cell_text, cell_unit, span_text, time_unit
from serq.semantics.events import first_token
from serq.semantics.state import prefix_owner
from serq.words import stuck_text

import math
from typing import Any

from serq import ir

NS = 1_000_000_000


def quantile(xs: list[int], q: float) -> int | None:
    """Nearest rank: the smallest sample with at least q of the samples at
    or below it. None without samples."""
    if not xs:
        return None
    ys = sorted(xs)
    return ys[max(math.ceil(q * len(ys)) - 1, 0)]


def summary(xs: list[int], mean: bool = False) -> dict:
    out: dict[str, Any] = {"n": len(xs)}
    if mean:
        out["mean"] = round(sum(xs) / len(xs), 1) if xs else None
    out["p50"] = quantile(xs, 0.50)
    out["p99"] = quantile(xs, 0.99)
    return out


class Stats:
    def __init__(self, program: ir.Program, m, warmup: int = 0):
        self.program = program
        self.m = m
        self.warmup = warmup
        P, S, G = len(program.pools), len(program.stages), len(program.sessions)
        # pools
        self.peak = [0] * P
        self.area = [0] * P  # sum of level * ticks
        self._lv = (0,) * P
        self._lt = 0
        self.preempts = [0] * P
        self.evicted = [0] * P  # units
        self.hits = [0] * P  # units
        self.waits: list[list[int]] = [[] for _ in range(P)]
        self.stuck = [0] * P
        # stages
        self.iters = [0] * S
        self.tokens = [0] * S
        self.busy_ticks = [0] * S
        self.evaluated = 0  # model iterations + coalesced blocks
        # programs
        self.prog_tokens = [0] * G
        self.ttft: list[list[int]] = [[] for _ in range(G)]
        self.e2e: list[list[int]] = [[] for _ in range(G)]
        self.ended = [0] * G
        self.ended_total = 0
        # sessions
        self.prog_of: dict[int, int] = {sid: prog for sid, (prog, _) in enumerate(m.workload)}
        self.first: dict[int, int] = {}  # first arrival (or spawn) tick
        self.req_start: dict[int, int] = {}
        self.ttft_pending: set[int] = set()
        self.queued: dict[tuple[int, int], int] = {}
        self.faults: list[tuple[int, str, str]] = []
        self.now = 0
        self.log = None  # a serq.sim.requests.RequestLog (`--requests`), fed the events

    # -- inputs -------------------------------------------------------------
    def level(self, tick: int, levels: tuple[int, ...]) -> None:
        """Allocated units per pool from `tick` on (the state after an action)."""
        dt = tick - self._lt
        if dt:
            lv = self._lv
            for p in range(len(lv)):
                self.area[p] += lv[p] * dt
            self._lt = tick
        self._lv = levels
        for p, v in enumerate(levels):
            if v > self.peak[p]:
                self.peak[p] = v

    def block_levels(self, tick: int, costs: list[int], levels: list[tuple[int, ...]]) -> int:
        """`level` at the start of each iteration of a coalesced block that
        starts at `tick` (iteration j costs costs[j] and leaves levels[j]);
        the tick the block ends. One loop per pool here; a subclass that
        reads each level (serq/view/simplots.py) is given them one by one."""
        if type(self).level is not Stats.level:
            t = tick
            for c, lv in zip(costs, levels):
                self.level(t, lv)
                t += c
            return t
        end = tick + sum(costs)
        if not levels:
            return end
        last_t = tick + sum(costs[:-1])  # the last iteration's start: its level holds from there
        for p in range(len(self.area)):
            col = [lv[p] for lv in levels]
            # the level before the block up to its first iteration, then each iteration's
            # level from its start to the next one's
            a = self._lv[p] * (tick - self._lt) + sum(v * c for v, c in zip(col[:-1], costs[:-1]))
            self.area[p] += a
            top = max(col)
            if top > self.peak[p]:
                self.peak[p] = top
        self._lt = last_t
        self._lv = levels[-1]
        return end

    def busy(self, si: int, cost: int) -> None:
        self.busy_ticks[si] += cost

    def _counted(self, sid: int) -> bool:
        return self.first.get(sid, 0) >= self.warmup

    def _request_start(self, sid: int, tick: int) -> None:
        self.req_start[sid] = tick
        self.ttft_pending.add(sid)

    def _first_token(self, sid: int, tick: int) -> None:
        if sid in self.ttft_pending:
            self.ttft_pending.discard(sid)
            if self.log is not None:
                self.log.first_token(sid, tick)
            if self._counted(sid):
                self.ttft[self.prog_of[sid]].append(tick - self.req_start[sid])

    def _request_end(self, sid: int, tick: int) -> None:
        self.ttft_pending.discard(sid)
        if sid in self.req_start and self._counted(sid):
            self.e2e[self.prog_of[sid]].append(tick - self.req_start.pop(sid))
        else:
            self.req_start.pop(sid, None)

    def events(self, tick: int, events, state) -> None:
        """Events stamped at `tick`; `state` (the simulator's current one)
        names the program of sessions spawned since the start."""
        log = self.log
        for e in events:
            k = e.kind
            if log is not None:
                log.event(tick, e, state)
            if first_token(e):
                self._first_token(e.sid, tick)
            if k == "serve":
                self.prog_tokens[self.prog_of[e.sid]] += e.n
            elif k == "iterate":
                self.iters[e.stage] += 1
                self.tokens[e.stage] += e.shape["ntok"]
                self.evaluated += 1
            elif k == "queued":
                self.queued[(e.sid, e.pool)] = tick
            elif k == "admit":
                sid = e.sid
                for p in e.pools:
                    t0 = self.queued.pop((sid, p), None)
                    if t0 is not None and self._counted(sid):
                        # max: another stage may admit a hold queued by an
                        # iteration still in flight (docs/simulator.md, Time)
                        self.waits[p].append(max(tick - t0, 0))
            elif k == "arrive":
                sid = e.sid
                self.first[sid] = tick
                self._request_start(sid, tick)
            elif k == "turn":
                self._request_start(e.sid, tick)
            elif k == "spawn":
                child = e.child
                self.prog_of[child] = self.m.engine.prog_of_state(state, child)
                self.first[child] = tick
                self._request_start(child, tick)
            elif k == "at_turn":
                self._request_end(e.sid, tick)
            elif k == "end":
                sid = e.sid
                self._request_end(sid, tick)
                self.ended[self.prog_of[sid]] += 1
                self.ended_total += 1
            elif k == "hit":
                self.hits[e.pool] += e.units
            elif k == "evict":
                self.evicted[e.pool] += e.units
            elif k == "preempt":
                self.preempts[e.pool] += 1
            elif k == "stuck":
                self.stuck[e.pool] += 1
            elif k == "fault":
                self.faults.append((tick, e.what, e.message))
        if log is not None:
            log.step_done()

    def block_start(self, blk) -> None:
        """A coalesced block starts: its decisions (evictions) are stamped
        at its iterations' starts, which all precede any other event."""
        self.evaluated += 1
        for p, u in enumerate(blk.evicted):
            self.evicted[p] += u

    def block_end(self, si: int, tick: int, blk, upto: int | None = None) -> None:
        """The effects of a block that started at `tick`: k iterations, each
        serving `blk.served`, each stamped at its own end. With `upto` (a run
        stopped early), only the iterations ended by then, as an uncoalesced
        run would have them."""
        k, t = 0, tick
        for c in blk.costs:
            if upto is not None and t + c > upto:
                break
            t += c
            k += 1
        if not k:
            return
        if self.log is not None:
            self.log.block(blk, k)
        self.iters[si] += k
        self.tokens[si] += k * blk.ntok
        self.busy_ticks[si] += sum(blk.costs[:k])
        first_end = tick + blk.costs[0]
        for sid, n, decode in blk.served:
            self.prog_tokens[self.prog_of[sid]] += k * n
            if decode:
                self._first_token(sid, first_end)

    def finish(self, now: int, state) -> None:
        self.level(now, self._lv)
        self.now = now
        self.final_sessions = [0] * len(self.ended)
        for s in state.sessions:
            self.final_sessions[s.prog] += 1


# ---------------------------------------------------------------- the report


def build_report(result, instance: str | None = None) -> dict:
    """The report as plain data (the JSON output, and what the tables show)."""
    st: Stats = result.stats
    prog = result.program
    T = result.now
    cfg = result.config
    pools = []
    for p, pool in enumerate(prog.pools):
        pools.append({
            "name": pool.name,
            "cap": pool.cap,
            "block": pool.block,
            "peak": st.peak[p],
            "mean": round(st.area[p] / T, 3) if T else 0.0,
            "preemptions": st.preempts[p],
            "evicted_units": st.evicted[p],
            "hit_units": st.hits[p],
            "queue_wait_ns": summary(st.waits[p], mean=True),
            "stuck": st.stuck[p],
        })
    stages = []
    for si, stage in enumerate(prog.stages):
        stages.append({
            "name": stage.name,
            "iterations": st.iters[si],
            "tokens": st.tokens[si],
            "busy_ns": st.busy_ticks[si],
            "busy_fraction": round(st.busy_ticks[si] / T, 6) if T else 0.0,
            "coalescing": result.licence[si][1] if result.licence else "",
        })
    unit = time_unit(prog)
    programs = []
    for g, sp in enumerate(prog.sessions):
        rate = round(st.prog_tokens[g] / T, 3) if T else 0.0
        programs.append({
            "name": sp.name,
            "sessions": st.final_sessions[g],
            "ended": st.ended[g],
            "ttft_ns": summary(st.ttft[g]),
            "e2e_ns": summary(st.e2e[g]),
            "tokens": st.prog_tokens[g],
            # no cost: a tick is an iteration, not a nanosecond (docs/simulator.md)
            "tokens_per_s": None if unit == ITERATION else round(st.prog_tokens[g] * NS / T, 3) if T else 0.0,
            **({"tokens_per_iteration": rate} if unit == ITERATION else {}),
        })
    return {
        "instance": instance if instance is not None else prog.source,
        "seed": cfg.seed,
        "horizon_ns": cfg.horizon,
        "warmup_ns": cfg.warmup,
        "coalesce": cfg.coalesce,
        "time_unit": unit,
        "stopped": result.stopped,
        "simulated_ns": T,
        "iterations_simulated": sum(st.iters),
        "iterations_evaluated": st.evaluated,
        "pools": pools,
        "stages": stages,
        "programs": programs,
        "faults": [{"at_ns": t, "kind": k, "message": msg} for t, k, msg in result.faults],
        "violations": [{"at_ns": t, "kind": k, "message": msg} for t, k, msg in result.violations],
        "violations_total": result.violations_total,
        "stalled": list(result.stalled),
        # what `serq check` fails on (besides asserts, errors, conservation): as `serq explore`'s
        "checks": checked_names(result.checks),
    }


def checked_names(checks) -> list[str]:
    """The properties selected (deadlock, livelock, stuck, invariant)."""
    return [] if checks is None else [n for n in ("deadlock", "livelock", "stuck", "invariant") if getattr(checks, n)]


def report_json(report: dict, *, warnings=(), check=None) -> dict:
    """`serq run --json` (format serq-run): the report with the instance's
    warnings; with `check` (serq.sim.checking's Judgement), `serq check
    --json` (format serq-check): the same with the verdict, its exit code
    and the lines `serq check` prints."""
    from serq.formats import CHECK, RUN, stamp, warnings_data

    doc = {**report, "warnings": warnings_data(warnings)}
    if check is None:
        return stamp(RUN, doc)
    return stamp(CHECK, {**doc, "verdict": check.verdict, "exit_code": check.exit_code, "lines": list(check.lines)})


def to_json(report: dict) -> str:
    from serq.formats import dumps

    return dumps(report)


def _num(v) -> str:
    return "∞" if v is None else str(v)


def render(report: dict, console) -> None:
    """The report as rich tables on `console`."""
    from rich.table import Table

    T = report["simulated_ns"]
    unit = report["time_unit"]
    ms = lambda v: cell_text(v, unit)  # noqa: E731
    at = lambda v: span_text(v, unit) if unit == ITERATION else f"{cell_text(v, 'ns')} ms"  # noqa: E731
    head = (f"[bold]serq run[/bold] {report['instance']}  seed {report['seed']}  "
            f"simulated {span_text(T, unit)}  stopped: {report['stopped']}")
    console.print(head, highlight=False, soft_wrap=True)  # one line for grep, however long the path
    if unit == ITERATION:
        console.print("times in iterations: no stage has a cost, so an iteration takes one tick", highlight=False)
    console.print(f"iterations: {report['iterations_simulated']} simulated, "
                  f"{report['iterations_evaluated']} evaluated"
                  + ("" if report["coalesce"] else " (coalescing off)"), highlight=False)

    t = Table(title=f"pools (units; wait in {cell_unit(unit)})", title_justify="left")
    for c in ("pool", "cap", "block", "peak", "mean", "preempt", "evicted", "hits",
              "wait n", "wait mean", "wait p50", "wait p99", "stuck"):
        t.add_column(c, justify="left" if c == "pool" else "right")
    for p in report["pools"]:
        w = p["queue_wait_ns"]
        t.add_row(p["name"], _num(p["cap"]), str(p["block"]), str(p["peak"]), f"{p['mean']:.3f}",
                  str(p["preemptions"]), str(p["evicted_units"]), str(p["hit_units"]), str(w["n"]),
                  ms(w["mean"]), ms(w["p50"]), ms(w["p99"]), str(p["stuck"]))
    console.print(t)

    t = Table(title="stages", title_justify="left")
    for c in ("stage", "iterations", "tokens", "busy"):
        t.add_column(c, justify="left" if c == "stage" else "right")
    for s in report["stages"]:
        t.add_row(s["name"], str(s["iterations"]), str(s["tokens"]), f"{100 * s['busy_fraction']:.2f}%")
    console.print(t)

    t = Table(title=f"programs (latency in {cell_unit(unit)})", title_justify="left")
    for c in ("program", "sessions", "ended", "ttft n", "ttft p50", "ttft p99", "e2e n", "e2e p50",
              "e2e p99", "tokens", "tok/it" if unit == ITERATION else "tok/s"):
        t.add_column(c, justify="left" if c == "program" else "right")
    for g in report["programs"]:
        a, b = g["ttft_ns"], g["e2e_ns"]
        rate = g["tokens_per_iteration"] if unit == ITERATION else g["tokens_per_s"]
        t.add_row(g["name"], str(g["sessions"]), str(g["ended"]), str(a["n"]), ms(a["p50"]), ms(a["p99"]),
                  str(b["n"]), ms(b["p50"]), ms(b["p99"]), str(g["tokens"]), f"{rate:.1f}")
    console.print(t)

    for f in report["faults"]:
        console.print(f"[red]fault[/red] at {at(f['at_ns'])}: {f['kind']}: {f['message']}", highlight=False)
    for v in report["violations"]:
        # a stuck event the instance does not check is no violation (`serq check` notes it)
        kind = f"[red]{v['kind']}[/red]" if v["kind"] != "stuck" or "stuck" in report["checks"] else \
            "stuck (not checked)"
        console.print(f"{kind} at {at(v['at_ns'])}: {v['message']}", highlight=False)
    more = report["violations_total"] - len(report["violations"])
    if more > 0:
        console.print(f"... and {more} more violation(s) or stuck event(s)", highlight=False)
    if report["stalled"]:
        console.print(f"[red]stalled[/red]: {len(report['stalled'])} session(s) can never move:", highlight=False)
        for s in report["stalled"]:
            console.print(f"  {s}", highlight=False)


# ---------------------------------------------------------------- trace lines


def describe_event(e, m, state) -> str | None:
    """One model event in words (None for events the action line says)."""
    k = e.kind
    lab = lambda sid: m.session_label(state, sid)  # noqa: E731
    pool = lambda p: m.pools[p].name  # noqa: E731
    if k in ("draw", "choose"):
        return f"{lab(e.sid)} {k} {e.attr} = {e.value}"
    if k == "queued":
        return f"{lab(e.sid)} queued on {pool(e.pool)}"
    if k == "admit":
        return f"{lab(e.sid)} admitted ({', '.join(pool(p) for p in e.pools)})"
    if k == "hit":
        return f"{lab(e.sid)} hits {e.units} cached units of {pool(e.pool)}"
    if k == "evict":
        if e.owner < 0:  # a shared prefix's entry
            return f"evict {e.units} units of {pool(e.pool)} cached for {prefix_owner(m.program, e.owner)}"
        return f"evict {e.units} units of {pool(e.pool)} cached for {lab(e.owner)}"
    if k == "release":
        return f"{lab(e.sid)} releases {e.units} units of {pool(e.pool)} ({e.kept} kept)"
    if k == "drop":
        return f"{lab(e.sid)} drops {e.units} cached units of {pool(e.pool)}"
    if k == "preempt":
        return f"preempt {lab(e.sid)} ({pool(e.pool)}: {e.why})"
    if k == "stuck":
        return stuck_text(lab(e.sid), pool(e.pool))
    if k == "iterate":
        sh = e.shape
        return f"shape ntok={sh['ntok']} ndec={sh['ndec']} nreq={sh['nreq']} kvb={sh['kvb']}"
    if k == "serve":
        tail = f" ({e.done}/{e.total})" if e.done is not None else ""
        return f"{lab(e.sid)} {e.phase} {e.n}{tail}"
    if k == "run_done":
        return f"{lab(e.sid)} {e.phase} done"
    if k == "at_turn":
        return f"{lab(e.sid)} at turn"
    if k == "spawn":
        return f"{lab(e.sid)} spawns {lab(e.child)}"
    if k == "joined":
        return f"{lab(e.sid)} joined"
    if k == "end":
        return f"{lab(e.sid)} ends"
    if k == "fault":
        return f"FAULT {e.what}: {e.message}"
    return None


def trace_line(tick: int, what: str, events, m, state) -> str:
    parts = [d for d in (describe_event(e, m, state) for e in events if e.kind not in ("arrive", "turn")) if d]
    when = f"{tick:14d} it" if time_unit(m.program) == ITERATION else f"{tick / 1e6:14.6f} ms"
    return f"{when}  {what}" + (": " + "; ".join(parts) if parts else "")
