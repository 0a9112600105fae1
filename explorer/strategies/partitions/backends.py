"""Where the partitions of a partitioned exploration run
(`strategies/partitions/driver.py`): the driver asks every partition for a
method (`call`) and runs a level (`level`: every partition's `expand`,
then every partition's `merge` of the bundles addressed to it) through
one of

- `_Local`: the partitions as objects of this process, their expansions
  and merges on threads (the kernel and the walks run without the GIL);
- `_Processes`: one partition on each worker process of the one process
  pool (`explorer/runtime/pool.py`): a model's Python states, whose
  expansion holds the GIL (`objects.py`); bundles go through this
  process;
- `_Ray`: the partitions as Ray actors, bundles from actor to actor
  through Ray's object store.

Ray is imported only when a Ray cluster is asked for."""

from __future__ import annotations

import os
from typing import Any, Callable

from explorer.errors import PartitionError, RayUnavailable, WorkerLost
from explorer.model import ArrayFallback
from explorer.runtime.limits import LimitReached
from explorer.runtime.pool import Processes
from explorer.strategies.partitions.partition import Partition

__all__ = ["connect"]

LOCAL_STORE = 256 * 2**20  # object store of a private Ray instance (`--ray local`), bytes

# ---------------------------------------------------------------- backends


class _Local:
    """Partitions as objects of this process; with workers > 1, their
    expansions and merges run on that many threads (each partition's
    own model and table: the kernel and the walks run without the GIL),
    each worker owning the partitions of its share of the fingerprint
    space."""

    name = "local"

    def __init__(self, k: int, workers: int = 1, kind: type = Partition) -> None:
        self.k = k
        self.parts = [kind() for _ in range(k)]
        self.pool = None
        self.threads = min(workers, k)
        if self.threads > 1:
            from explorer.runtime.threads import Workers  # daemon threads: the process never waits for a stuck one

            self.pool = Workers(self.threads)

    def _map(self, calls: list) -> list:
        if self.pool is None:
            return [f(*a) for f, a in calls]
        futures = [self.pool.submit(f, *a) for f, a in calls]
        out, reached = [], None
        for f in futures:  # a limit reached by one is reached by all: each stops at its next check
            try:
                out.append(f.result())
            except LimitReached as e:
                reached = reached or e
        if reached is not None:
            raise reached
        return out

    def set_limits(self, limits) -> bool:
        """The run's limits, checked inside a level too (True: they are)."""
        for p in self.parts:
            p.set_limits(limits)
        return True

    def call(self, method: str, args_of: Callable[[int], tuple]) -> list:
        return self._map([(getattr(p, method), args_of(i)) for i, p in enumerate(self.parts)])

    def level(self, depth: int, cut: bool):
        outs = self._map([(p.expand, (depth,)) for p in self.parts])
        merged = self._map([(p.merge, (depth, cut, *[outs[s][1 + d] for s in range(self.k)]))
                            for d, p in enumerate(self.parts)])
        return [o[0] for o in outs], merged

    def close(self, failed: bool = False) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool = None
        self.parts = []


_POOL: dict[int, list] = {}  # Ray actors kept for the next run of this process, by partition count


class _Processes:
    """One partition on each process of the one process pool (each
    builds its partition, `kind()`, and, at `start`, its model from the
    factory it was forked with: nothing of the model is pickled). A
    process that dies, raises or (past `deadline` and the grace period)
    hangs is the pool's `WorkerFailed`, naming it."""

    name = "processes"

    def __init__(self, k: int, factory: Any, kind: type, deadline: float | None = None,
                 time_limit: float | None = None) -> None:
        self.k = self.threads = k
        self.pool = Processes(lambda wid: kind(factory), k, deadline=deadline, time_limit=time_limit,
                              passes=(PartitionError, ArrayFallback), logs=True)

    def set_limits(self, limits) -> bool:
        return False  # a process is stopped between levels (or, hung, at the deadline)

    def call(self, method: str, args_of: Callable[[int], tuple]) -> list:
        if method == "start":  # the factory the processes were forked with
            args_of = (lambda f: lambda i: (None,) + f(i)[1:])(args_of)
        return self.pool.call_all(method, [args_of(i) for i in range(self.k)])

    def level(self, depth: int, cut: bool):
        outs = self.call("expand", lambda i: (depth,))
        merged = self.call("merge", lambda d: (depth, cut, *[outs[s][1 + d] for s in range(self.k)]))
        return [o[0] for o in outs], merged

    def close(self, failed: bool = False) -> None:
        self.pool.close()


class _Ray:
    """Partitions as Ray actors (on whichever nodes Ray places them)."""

    name = "ray"

    def __init__(self, k: int, address: str) -> None:
        self.ray = connect(address)
        self.k = k
        actors = _POOL.pop(k, None)
        if actors is None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            remote = self.ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0)(Partition)
            # partition i on node i modulo the nodes alive now (hard: a soft placement
            # falls back to another node whenever this one answers late, which
            # happens on a loaded machine; a node gone since is a lost worker)
            nodes = sorted(n["NodeID"] for n in self.ray.nodes() if n.get("Alive"))
            actors = [remote.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
                nodes[i % len(nodes)], soft=False)).remote() if nodes else remote.remote() for i in range(k)]
        self.actors = actors

    def set_limits(self, limits) -> bool:
        return False  # an actor is stopped between levels

    def _get(self, refs):
        ray = self.ray
        try:
            return ray.get(refs)
        except ray.exceptions.RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, BaseException):
                raise cause from None
            raise
        except ray.exceptions.RayError as e:
            raise WorkerLost(self._who(e)) from None

    def _who(self, e) -> str:
        dead = getattr(e, "actor_id", None)
        for i, a in enumerate(self.actors):
            if dead is not None and a._actor_id.hex() == dead:
                return f"partition {i} of {self.k} was lost ({type(e).__name__})"
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return f"a partition's worker was lost ({type(e).__name__}{': ' + first if first else ''})"

    def call(self, method: str, args_of: Callable[[int], tuple]) -> list:
        if method == "start":
            blob = self.ray.cloudpickle.dumps(args_of(0)[0])
            args_of = (lambda f: lambda i: (blob,) + f(i)[1:])(args_of)
        return self._get([getattr(a, method).remote(*args_of(i)) for i, a in enumerate(self.actors)])

    def level(self, depth: int, cut: bool):
        k = self.k
        outs = [a.expand.options(num_returns=k + 1).remote(depth) for a in self.actors]
        merged = [a.merge.remote(depth, cut, *[outs[s][1 + d] for s in range(k)]) for d, a in enumerate(self.actors)]
        return self._get([o[0] for o in outs]), self._get(merged)

    def close(self, failed: bool = False) -> None:
        if failed:
            for a in self.actors:
                try:
                    self.ray.kill(a)
                except Exception:
                    pass
        else:
            _POOL[self.k] = self.actors
        self.actors = []


def connect(address: str):
    """Ray, connected: to the cluster at `address` ("auto": the one running
    on this machine), or to a private one started here ("local"). An
    existing connection of this process is used as it is."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable("Ray is not installed") from None
    if ray.is_initialized():
        now = ray.get_runtime_context().gcs_address
        if address not in ("auto", "local", now):
            raise ConnectionError(f"this process is connected to the Ray cluster at {now}, not {address}")
        return ray
    import logging

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [here] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {"env_vars": {"PYTHONPATH": os.pathsep.join(paths)}}
    if address == "local":
        ray.init(num_cpus=os.cpu_count() or 1, object_store_memory=LOCAL_STORE, include_dashboard=False,
                 logging_level=logging.WARNING, runtime_env=env)
    else:
        _probe(address)
        ray.init(address=address, logging_level=logging.WARNING, runtime_env=env)
    return ray


def _probe(address: str) -> None:
    """ConnectionError, at once, when nothing listens at the cluster's
    address (Ray itself would retry for minutes)."""
    import socket

    target = address
    if address == "auto":
        try:
            from ray._private.services import canonicalize_bootstrap_address

            target = canonicalize_bootstrap_address("auto")
        except Exception as e:  # no cluster started on this machine
            raise ConnectionError(f"no Ray cluster runs on this machine ({e}); start one with `ray start --head`") \
                from None
        if target is None:
            raise ConnectionError("no Ray cluster runs on this machine; start one with `ray start --head`")
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ConnectionError(f"{address!r} is not a Ray cluster address (HOST:PORT, auto or local)")
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as e:
        raise ConnectionError(f"nothing answers at {target} ({e.strerror or e})") from None


