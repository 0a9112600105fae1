"""The per-iteration schedule of a simulation (`serq run --schedule FILE`).

One JSON object per line. The first line is a header:

    {"format": "serq-schedule", "version": 1, "instance": ..., "seed": ...,
     "coalesce": ..., "time_unit": "ns" | "iteration", "pools": [{"name", "cap", "block"}, ...],
     "stages": [...]}

then one line per stage iteration, in the order the iterations start:

    {"tick": T, "stage": S, "iteration": N,
     "served": [[SESSION, TOKENS], ...],      # in serve order
     "admitted": [SESSION, ...],              # in admission order
     "preempted": [SESSION, ...],             # in preemption order
     "hits": {SESSION: {POOL: UNITS}},        # cache units reused at admission
     "finished": [SESSION, ...],              # reached `turn` or `end`
     "pools": {POOL: {"free": F, "cached": C, "evictable": E, "allocated": A}}}

A session is named by its label, `PROGRAM#N` (N: its number in workload
order, from 1). Pool levels are the state after the iteration; an infinite
pool's `free` is null. docs/simulator.md ("The schedule") is the reference;
the format only grows by new keys, and a change of meaning gets a new
version number.

A coalesced block of k iterations is written as its k iterations: each
serves what the block serves per iteration, at the ticks its costs give; its
pool levels come from the block's growth (free units first, then evicted
cached ones, as the model grows); its serve order is that of the block's
first iteration, which is the order of every iteration of the block when
the serve order has no keys (only its tie event). A stage whose serve order
has keys is not coalesced while a schedule is written.
"""

from __future__ import annotations

from serq.durations import time_unit
import json
from typing import IO

from serq.semantics.model import ITERATE, FirstOracle
from serq.semantics.view import StateView
from serq.formats import SCHEDULE, VERSIONS

FORMAT = SCHEDULE
VERSION = VERSIONS[SCHEDULE]


class ScheduleWriter:
    """Collects the iterations of one simulation and writes them as JSON
    lines. Attach with `attach(sim)` before `sim.run()`."""

    def __init__(self, out: IO[str]):
        self.out = out
        self.count: list[int] = []
        self.lines = 0

    # -- wiring -----------------------------------------------------------
    def attach(self, sim) -> None:
        self.sim = sim
        self.m = m = sim.m
        self.count = [0] * len(m.stages)
        for si, stage in enumerate(sim.program.stages):
            if stage.serve is not None and stage.serve.keys and sim.licence[si][0]:
                sim.licence[si] = (False, "--schedule: serve keys may reorder the residents inside a block")
        sim.cfg.iteration = self._iteration
        sim.cfg.block = self._block
        p = sim.program
        head = {
            "format": FORMAT, "version": VERSION, "instance": p.source, "seed": sim.cfg.seed,
            "coalesce": sim.cfg.coalesce, "time_unit": time_unit(p),
            "pools": [{"name": q.name, "cap": q.cap, "block": q.block} for q in p.pools],
            "stages": [s.name for s in p.stages],
        }
        self._write(head)

    def close(self, complete: bool = True) -> None:
        """An output file (explorer.runtime.outfile.Output) committed, or given up
        when the run did not end; a stream closed."""
        if hasattr(self.out, "commit"):
            self.out.commit() if complete else self.out.abort()
        else:
            self.out.close()

    def _write(self, obj) -> None:
        self.out.write(json.dumps(obj, separators=(", ", ": ")) + "\n")
        self.lines += 1

    def _label(self, state, sid: int) -> str:
        return self.m.session_label(state, sid)

    def _pools(self, state, allocated=None) -> dict:
        m = self.m
        view = StateView(m.engine, state)
        alloc = allocated if allocated is not None else m.engine.levels(state)
        evict = m.engine.evictable(state)
        out = {}
        for p, pool in enumerate(m.pools):
            held = view.pools[p]
            out[pool.name] = {"free": held.free, "cached": sum(e.units for e in held.cache), "evictable": evict[p],
                              "allocated": int(alloc[p])}
        return out

    # -- one iteration ----------------------------------------------------
    def _iteration(self, si: int, tick: int, events, state) -> None:
        lab = lambda sid: self._label(state, sid)  # noqa: E731
        served, admitted, preempted, finished = [], [], [], []
        hits: dict[str, dict[str, int]] = {}
        pools = self.m.pools
        for e in events:
            k = e.kind
            if k == "serve":
                served.append([lab(e.sid), e.n])
            elif k == "admit":
                admitted.append(lab(e.sid))
            elif k == "preempt":
                preempted.append(lab(e.sid))
            elif k == "hit":
                d = hits.setdefault(lab(e.sid), {})
                d[pools[e.pool].name] = d.get(pools[e.pool].name, 0) + e.units
            elif k in ("at_turn", "end"):
                finished.append(lab(e.sid))
        self._record(si, tick, served, admitted, preempted, hits, finished, self._pools(state))

    def _record(self, si, tick, served, admitted, preempted, hits, finished, pools) -> None:
        self._write({
            "tick": tick, "stage": self.m.stages[si].name, "iteration": self.count[si],
            "served": served, "admitted": admitted, "preempted": preempted, "hits": hits,
            "finished": finished, "pools": pools,
        })
        self.count[si] += 1

    # -- a coalesced block, expanded ----------------------------------------
    def _block(self, blk, tick: int, before) -> None:
        m = self.m
        si = blk.stage
        # the serve order: that of the block's first iteration, asked of the model
        # without taking its successor (no draw happens in a block: no run completes)
        _, events = m.run_with(before, (ITERATE, si), FirstOracle(), now=tick)
        order = [e.sid for e in events if e.kind == "serve"]
        per = {sid: n for sid, n, _ in blk.served}
        if sorted(order) != sorted(per) or any(e.n != per[e.sid] for e in events if e.kind == "serve"):
            raise AssertionError("a coalesced block serves other tokens than its first iteration")
        v0 = StateView(m.engine, before)
        a0 = m.engine.levels(before)
        e0 = m.engine.evictable(before)
        t = tick
        for j, (cost, lv) in enumerate(zip(blk.costs, blk.levels)):
            pools = {}
            for p, pool in enumerate(m.pools):
                free0 = v0.pools[p].free
                cached0 = sum(e.units for e in v0.pools[p].cache)
                grown = lv[p] - a0[p]
                if free0 is None:
                    free, cached, evict = None, cached0, e0[p]
                else:
                    from_free = min(grown, free0 // pool.block * pool.block)
                    free = free0 - from_free
                    cached = cached0 - (grown - from_free)  # growth evicts only evictable units
                    evict = e0[p] - (grown - from_free)
                pools[pool.name] = {"free": free, "cached": cached, "evictable": evict, "allocated": int(lv[p])}
            served = [[self._label(before, sid), per[sid]] for sid in order]
            self._record(si, t, served, [], [], {}, [], pools)
            t += cost


def open_schedule(path: str, sim, flag: str = "--schedule") -> ScheduleWriter:
    """A writer of `sim`'s schedule into the file `path` (explorer.runtime.outfile:
    written under a temporary name), attached; `close()` it after the run
    (the file then takes its name) or `close(False)` after a failure (no
    file is left). An unwritable path is E017, before the run; a write
    that fails during the run ends it with E017 too."""
    from explorer.runtime.outfile import Output

    w = ScheduleWriter(Output(path))
    w.attach(sim)
    return w


def read_schedule(path: str) -> tuple[dict, list[dict]]:
    """(header, iterations) of a schedule file; refuses another format or a
    newer version."""
    with open(path) as f:
        lines = [json.loads(x) for x in f if x.strip()]
    if not lines or lines[0].get("format") != FORMAT:
        raise ValueError(f"{path}: not a serq schedule")
    if lines[0].get("version", 0) > VERSION:
        raise ValueError(f"{path}: schedule version {lines[0]['version']} is newer than this serq ({VERSION})")
    return lines[0], lines[1:]
