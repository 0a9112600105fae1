"""`serq run --requests FILE`: one row per request of the run, as CSV
(`FILE.csv`) or JSON lines (`FILE.jsonl`, after a header line of format
serq-requests), what a capacity-planning script loads into pandas
(docs/simulator.md, "Requests").

A request is what the report's latencies measure: it starts when its
session arrives, returns from a `turn`, or is spawned, and finishes when
the session reaches its next `turn` or `end`. Its row: the session's
label and program, the request's number in its session (from 0), the
ticks of its start, first admission, first token and finish (null while
it had none by the end of the run), its time to first token and latency,
its preemptions, the tokens it computed again after a preemption (as
`serq explore --worst recomputed` counts them) and the cached units it
reused. The rows are in the order the requests started. The log is fed
the simulator's events by its `Stats` (serq/sim/report.py), in the same
order with and without step coalescing, so the rows are the same."""

from __future__ import annotations

import csv
import io
import json

from serq.formats import REQUESTS, VERSIONS

COLUMNS = ("session", "program", "request", "arrival", "admitted", "first_token", "finish", "ttft", "latency",
           "preemptions", "recomputed", "cached")

SUFFIXES = (".csv", ".jsonl")


class RequestLog:
    """The rows of one run's requests; `Stats.log` feeds it."""

    def __init__(self, m):
        self.m = m
        self.rows: list[dict] = []
        self.open: dict[int, dict] = {}  # session -> its request under way
        self.count: dict[int, int] = {}  # session -> requests started
        self.redo: dict[int, tuple[int, int]] = {}  # session -> (position, high water) in its growing hold
        self.hits: dict[int, int] = {}  # this step's cache hits, by session
        self.preempted: set[int] = set()  # sessions preempted in this step

    def _label(self, sid: int, prog: int) -> str:
        return f"{self.m.program.sessions[prog].name}#{sid + 1}"

    def _start(self, sid: int, tick: int, state) -> None:
        prog = self.m.engine.prog_of_state(state, sid)
        n = self.count.get(sid, 0)
        self.count[sid] = n + 1
        row = {"session": self._label(sid, prog), "program": self.m.program.sessions[prog].name, "request": n,
               "arrival": tick, "admitted": None, "first_token": None, "finish": None, "ttft": None,
               "latency": None, "preemptions": 0, "recomputed": 0, "cached": 0}
        self.rows.append(row)
        self.open[sid] = row

    def first_token(self, sid: int, tick: int) -> None:
        row = self.open.get(sid)
        if row is not None and row["first_token"] is None:
            row["first_token"], row["ttft"] = tick, tick - row["arrival"]

    def _served(self, sid: int, n: int) -> None:
        """n tokens of a growing run: those at or below the high water are computed again."""
        pos, hw = self.redo.get(sid, (0, 0))
        again = max(0, min(pos + n, hw) - pos)
        if again and sid in self.open:
            self.open[sid]["recomputed"] += again
        self.redo[sid] = (pos + n, max(hw, pos + n))

    def event(self, tick: int, e, state) -> None:
        """One event of a step, in order (serq.semantics.events)."""
        k = e.kind
        if k in ("arrive", "turn"):
            self._start(e.sid, tick, state)
        elif k == "spawn":
            self._start(e.child, tick, state)
        elif k in ("at_turn", "end"):
            row = self.open.pop(e.sid, None)
            if row is not None:
                row["finish"], row["latency"] = tick, tick - row["arrival"]
            if e.sid not in self.preempted:
                self.redo.pop(e.sid, None)
        elif k == "hit":
            self.hits[e.sid] = self.hits.get(e.sid, 0) + e.units
            if e.sid in self.open:
                self.open[e.sid]["cached"] += e.units
        elif k == "admit":
            row = self.open.get(e.sid)
            if row is not None and row["admitted"] is None:
                row["admitted"] = tick
            self.redo[e.sid] = (self.hits.get(e.sid, 0), self.redo.get(e.sid, (0, 0))[1])
        elif k == "serve" and e.pool is not None:
            self._served(e.sid, e.n)
        elif k == "preempt":
            self.preempted.add(e.sid)
            self.redo[e.sid] = (0, self.redo.get(e.sid, (0, 0))[1])
            if e.sid in self.open:
                self.open[e.sid]["preemptions"] += 1
        elif k == "release" and e.sid not in self.preempted:
            self.redo.pop(e.sid, None)

    def step_done(self) -> None:
        self.hits.clear()
        self.preempted.clear()

    def block(self, blk, k: int) -> None:
        """k iterations of a coalesced block: each serves `blk.served`."""
        for (sid, n, _decode), grows in zip(blk.served, blk.growing):
            if grows is not None:
                self._served(sid, k * n)


def attach(sim) -> RequestLog:
    """Give a Simulator's statistics a RequestLog (before `run`)."""
    log = RequestLog(sim.m)
    sim.stats.log = log
    return log


def check_path(path: str):
    """The writer for FILE's suffix, or None for another suffix."""
    low = path.lower()
    return "csv" if low.endswith(".csv") else "jsonl" if low.endswith(".jsonl") else None


def csv_text(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def jsonl_text(rows: list[dict], head: dict) -> str:
    lines = [json.dumps({"format": REQUESTS, "version": VERSIONS[REQUESTS], **head})]
    lines.extend(json.dumps(r) for r in rows)
    return "\n".join(lines) + "\n"


def header(result, instance: str) -> dict:
    from serq.durations import time_unit

    return {"instance": instance, "seed": result.config.seed, "time_unit": time_unit(result.program),
            "columns": list(COLUMNS)}
