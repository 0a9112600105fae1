"""Swarm search: many randomized depth-first searches at once, for
instances beyond exhaustive reach (SPIN's swarm verification).

Search i of N walks depth first from the initial states, taking each
state's successors in an order shuffled by its own seed (`seed + i`), with
its own depth bound (see `depth_bound`) and a budget of stored states; a
new state's invariants are checked when it is stored, and a state without
successors that is not done is a deadlock. The first search to find either
ends the run: its path is the counterexample, rebuilt by replay like any
other trace (its replay path works with `serq explore --replay`); the others
are stopped. The path is a path, not a shortest one.

Each search also looks for non-progress cycles (SPIN's swarm does): it
records the non-progress edges between the states it stores, and when it
ends without a finding, a cycle of them (explorer.check.find_livelock,
the exhaustive search's own) is its livelock, rebuilt as a lasso.

Finding nothing proves nothing: the searches are incomplete by design
(shuffled, bounded, each with a budget), and the verdict is then
`inconclusive` (exit 17) -- unless one search exhausted the whole state
space: no depth bound cut it (none, or it never cut a successor) and its
budget was not reached. Its verdict is then the exhaustive one (`pass`,
or the livelock its edges hold), and the swarm says so; the other
searches are stopped, since none can find what the whole space lacks.

Searches run in local processes (`processes` at a time) or as Ray tasks."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from explorer.runtime.interrupt import interrupt_of
from explorer.runtime.limits import LimitReached
from explorer.runtime.memory import MemoryGuard, mib
from explorer.model import CHECK, DONE, PROGRESS
from explorer.outcome import WorkerFailed, bounded, deadlock, failed, interrupted, livelock_result, violation
from explorer.result import Result, Stats
from explorer.settings import Settings
from explorer.runtime.verdict import INCONCLUSIVE

__all__ = ["swarm_check", "depth_bound", "search_once", "Found", "DEFAULT_BUDGET"]

DEFAULT_BUDGET = 1_000_000  # states a search may store when no --max-states is given
TIERS = (None, 8, 32, 128)  # depth bounds by i % 4 without --max-depth (None: unbounded)


def depth_bound(i: int, max_depth: int | None) -> int | None:
    """Search i's depth bound: with a bound D, searches take D/4, D/2, 3D/4
    and D in turn; without, unbounded, 8, 32 and 128 in turn."""
    if max_depth is None:
        return TIERS[i % 4]
    return max(1, (max_depth * (i % 4 + 1) + 3) // 4)


@dataclass
class Found:
    """What one search ended with."""

    index: int
    seed: int
    bound: int | None
    kind: str | None  # "violation" | "deadlock" | "livelock" | "pass" (the whole space, clean) | None
    chain: list | None  # [(fingerprint, action index)] from the initial state (a livelock: to its entry)
    invariant: tuple[str, str] | None
    stored: int
    generated: int
    max_depth: int
    reason: str  # "found" | "exhausted" | "budget" | "time" | "stopped"
    cycle: list | None = None  # a livelock: the fingerprints after its entry, ending with it
    whole: bool = False  # it explored every reachable state (no depth bound cut it, no budget)


def search_once(factory: Any, index: int, seed: int, bound: int | None, budget: int,
                time_limit: float | None, check_deadlock: bool, *, stop: Any = None,
                check_livelock: bool = False) -> Found:
    """One randomized depth-first search over the array protocol (the
    model built by `factory`); `time_limit`: seconds from its start.
    `check_livelock`: look for a cycle of non-progress edges among the
    states stored, once the search ends without another finding."""
    m = factory()
    deadline = None if time_limit is None else time.monotonic() + time_limit
    rng = random.Random(seed)
    rows, fps, flags = m.array_initial()
    seen: set[int] = set()
    generated = 0
    maxd = 0
    cut = False  # a successor skipped for the depth bound: the search may miss states
    # with check_livelock: each stored state's parent and its discovery rank, the non-progress edges
    parent: dict[int, tuple[int | None, int]] = {}
    np_edges: dict[int, list[int]] = {}

    def done(kind, chain, inv=None, reason="found"):
        return Found(index, seed, bound, kind, chain, inv, len(seen), generated, maxd, reason)

    def ended(reason):
        """Nothing found on the way: a livelock among the edges recorded,
        else nothing (or, the whole space explored, the exhaustive pass)."""
        whole = reason == "exhausted" and not cut
        if check_livelock and np_edges:
            from explorer.graph.cycles import find_livelock

            rank = {fp: i for i, fp in enumerate(parent)}
            got = find_livelock(np_edges, lambda fps: min(fps, key=rank.__getitem__))
            if got is not None:
                entry, cycle = got
                chain, cur = [], entry
                while cur is not None:
                    up, ai = parent[cur]
                    chain.append((cur, ai))
                    cur = up
                f = done("livelock", chain[::-1], reason=reason)
                f.cycle, f.whole = cycle, whole
                return f
        f = done("pass" if whole else None, None, reason=reason)
        f.whole = whole
        return f

    order = list(range(len(fps)))
    rng.shuffle(order)
    # a frame: (row, fp, depth, successor rows, their fps, flags, actions, order, next position)
    path: list[tuple[int, int]] = []  # (fp, action) of the frames on the stack
    stack: list = []
    roots = [(np.asarray(rows[i], np.int64), int(fps[i]), int(flags[i]), i) for i in order]
    ticks = 0
    for row, fp, fl, i in roots:
        generated += 1
        if fp in seen:
            continue
        seen.add(fp)
        if check_livelock:
            parent[fp] = (None, i)
        if fl & CHECK:
            bad = m.invariants(m.array_state(row))
            if bad:
                return done("violation", [(fp, i)], bad[0])
        path = [(fp, i)]
        stack = [_frame(m, row, fp, fl, 0, rng)]
        while stack:
            ticks += 1
            if ticks % 256 == 0:
                if deadline is not None and time.monotonic() >= deadline:
                    return ended("time")
                if stop is not None and stop.is_set():
                    return ended("stopped")
            fr = stack[-1]
            if fr["n"] == 0 and fr["pos"] == 0:
                fr["pos"] = 1
                if check_deadlock and not fr["flag"] & DONE:
                    return done("deadlock", list(path))
            if fr["pos"] >= len(fr["order"]) or fr["n"] == 0:
                stack.pop()
                path.pop()
                continue
            j = fr["order"][fr["pos"]]
            fr["pos"] += 1
            generated += 1
            nfp = int(fr["fps"][j])
            if check_livelock and not fr["flags"][j] & PROGRESS:
                np_edges.setdefault(fr["fp"], []).append(nfp)
            if nfp in seen:
                continue
            if bound is not None and fr["depth"] >= bound:
                cut = True
                continue
            if len(seen) >= budget:
                return ended("budget")
            seen.add(nfp)
            if check_livelock:
                parent[nfp] = (fr["fp"], int(fr["acts"][j]))
            d = fr["depth"] + 1
            maxd = max(maxd, d)
            row = fr["succ"][j]
            path.append((nfp, int(fr["acts"][j])))
            if fr["flags"][j] & CHECK:
                bad = m.invariants(m.array_state(row))
                if bad:
                    return done("violation", list(path), bad[0])
            stack.append(_frame(m, row, nfp, int(fr["flags"][j]), d, rng))
    return ended("exhausted")


def _frame(m, row, fp, flag, depth, rng) -> dict:
    succ, parent, act, fps, flags = m.array_expand(np.asarray(row, np.int64).reshape(1, -1))
    k = len(fps)
    order = list(range(k))
    rng.shuffle(order)
    return {"row": row, "fp": fp, "flag": flag, "depth": depth, "succ": np.array(succ[:k]),
            "fps": np.array(fps[:k]), "flags": np.array(flags[:k]), "acts": np.array(act[:k]),
            "order": order, "pos": 0, "n": k}


# ---------------------------------------------------------------- running N of them


def _search_job(factory, stop, job) -> Found:
    """A worker's function (with factory and stop bound): the job's search."""
    return search_once(factory, *job[:6], stop=stop, check_livelock=job[6])


def swarm_check(m: Any, factory: Any, s: Settings) -> Result:
    """Run `s.searches` randomized searches; the first violation, deadlock
    or livelock found, the exhaustive verdict of a search that explored the
    whole state space, or the verdict `inconclusive`."""
    n, seed, max_depth, max_states, time_limit = s.searches, s.seed, s.max_depth, s.max_states, s.time_limit
    check_deadlock, processes, ray, memory_limit = s.check_deadlock, s.processes, s.ray, s.memory_limit
    budget = DEFAULT_BUDGET if max_states is None else max_states
    t0 = s.clock()  # the check's start: building the model counted (explorer/check.py)
    deadline = None if time_limit is None else time.monotonic() + time_limit - (time.perf_counter() - t0)
    jobs = [(i, seed + i, depth_bound(i, max_depth), budget, None, check_deadlock, s.check_livelock)
            for i in range(n)]
    results: list[Found] = []  # filled as the searches end, kept when one is lost or a signal stops them
    lost = None
    try:
        if ray is not None:
            results, winner = _on_ray(factory, jobs, ray, deadline, results)
        else:
            m.array_expand(m.array_initial()[0])  # compiled code loaded once, before the processes fork
            results, winner = _local(factory, jobs, processes or min(n, os.cpu_count() or 1), deadline, results,
                                     MemoryGuard(memory_limit))
    except WorkerFailed as e:  # a search lost: the others stopped (their counts kept where they could be)
        winner, lost = None, e
    except LimitReached as e:
        return bounded(_stats(results, n, t0), e.reason, e.value)
    except (KeyboardInterrupt, SystemError) as e:
        return interrupted(_stats(results, n, t0), interrupt_of(e))
    stats = _stats(results, n, t0)
    if lost is not None:
        return failed(stats, lost)
    if winner is not None:
        return _found(m, winner, n, stats, s)
    ended = {}
    for r in results:
        ended[r.reason] = ended.get(r.reason, 0) + 1
    how = ", ".join(f"{v} {k}" for k, v in sorted(ended.items()))
    what = _looked_for(s)
    return Result(INCONCLUSIVE,
                  f"no {what} found by {n} randomized depth-first searches ({how}; "
                  f"{stats.distinct} states stored in all); this is not a proof: a swarm search is "
                  "incomplete (none explored the whole state space)", stats=stats, bound_reason="swarm")


def _looked_for(s: Settings) -> str:
    found = ["violation"] + (["deadlock"] if s.check_deadlock else []) + (["livelock"] if s.check_livelock else [])
    return found[0] if len(found) == 1 else ", ".join(found[:-1]) + " or " + found[-1]


def _stats(results: list[Found], n: int, t0: float) -> Stats:
    stats = Stats(strategy="swarm", workers=n)
    stats.generated = sum(r.generated for r in results)
    stats.distinct = sum(r.stored for r in results)
    stats.max_depth = max((r.max_depth for r in results), default=0)
    stats.elapsed = time.perf_counter() - t0
    return stats


def _found(m, f: Found, n: int, stats: Stats, s: Settings) -> Result:
    bound = "no depth bound" if f.bound is None else f"depth bound {f.bound}"
    chain = f.chain
    whole = (f"; it explored the whole state space ({f.stored} states): this verdict is exhaustive"
             if f.whole else "")
    if f.kind == "pass":
        return Result("pass", f"no {_looked_for(s)} in {f.stored} distinct states: search {f.index} of {n} "
                      f"(seed {f.seed}, {bound}) explored the whole state space, so the swarm's verdict is "
                      "exhaustive", stats=stats)
    where = f"found by search {f.index} of {n} (seed {f.seed}, {bound}); not necessarily a shortest path{whole}"
    fp = chain[-1][0]
    if f.kind == "deadlock":
        r = deadlock(m, lambda _fp: chain, fp, stats)
    elif f.kind == "livelock":
        r = livelock_result(m, lambda _fp: chain, fp, f.cycle, stats)
    else:
        r = violation(m, lambda _fp: chain, fp, f.invariant[0], f.invariant[1], stats)
    r.message = f"{r.message} [{where}]"
    return r


def _remaining(job, deadline):
    """The job with the seconds left until the swarm's deadline."""
    if deadline is None:
        return job
    return job[:4] + (max(0.0, deadline - time.monotonic()),) + job[5:]


def _local(factory, jobs, processes: int, deadline, results: list, memory=None):
    """The searches on `processes` supervised worker processes
    (supervise.py), each one's Found appended to `results` as it ends. A
    search lost (killed, crashed, raised) is `WorkerFailed` naming it.
    However it ends (a finding, a loss, a signal), the searches still
    running are asked to stop and their counts are added. `memory`: a
    MemoryGuard over this process and its searches, looked at as the
    workers are (LimitReached past it)."""
    import multiprocessing
    from functools import partial

    from explorer.runtime.supervise import Supervised

    methods = multiprocessing.get_all_start_methods()
    stop = multiprocessing.get_context("fork" if "fork" in methods else "spawn").Event()
    winner = None
    left = None if deadline is None else max(0.0, deadline - time.monotonic())

    def watch() -> None:
        if memory is not None and memory.over():  # this process and its searches
            raise LimitReached("memory", mib(memory.limit))

    pool = Supervised(partial(_search_job, factory, stop), processes,
                      name=lambda w, job: f"worker {w}" if job is None else f"search {job[0]}",
                      deadline=None if left is None else time.perf_counter() + left, time_limit=left, watch=watch)
    try:
        for _, got in pool.imap_unordered(_remaining(job, deadline) for job in jobs):
            results.append(got)
            if got.kind is not None:
                winner = got
                break
    finally:
        stop.set()  # the searches still running stop at their next look (every 256 steps) with their counts
        try:
            results.extend(got for _, got in pool.drain(5.0))
        finally:
            pool.close()  # whatever ended the search: no worker is left behind
    return results, winner


def _on_ray(factory, jobs, address: str, deadline, results: list):
    from explorer.strategies.partitions.backends import connect

    ray = connect(address)
    blob = ray.cloudpickle.dumps(factory)
    task = ray.remote(num_cpus=0, max_retries=0)(_ray_search)
    refs = {task.remote(blob, _remaining(job, deadline)): job[0] for job in jobs}
    winner = None
    pending = list(refs)
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            try:
                got = ray.get(ready[0])
            except ray.exceptions.RayError as e:
                i = refs[ready[0]]
                raise WorkerFailed(i, f"was lost ({type(e).__name__})", name=f"search {i}") from None
            results.append(got)
            if got.kind is not None:
                winner = got
                break
    finally:
        for r in pending:
            ray.cancel(r, force=True)
    return results, winner


def _ray_search(blob: bytes, job):
    import pickle

    factory = pickle.loads(blob)
    return search_once(factory, *job[:6], check_livelock=job[6])
