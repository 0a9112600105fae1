"""Livelock detection on the graph of non-progress edges.

Definition: a livelock is a reachable cycle made only of edges for which
``is_progress(state, action, nxt)`` is False (a self-loop counts).  Such
cycles are exactly the strongly connected components of the non-progress
subgraph that have more than one node or a self-loop.

Determinism: among all states lying on such cycles we pick the one
discovered first (the caller supplies discovery order), and report a lasso:
the stored (BFS: shortest) path to it, then a shortest cycle back to it
through its SCC, found by a BFS that scans successors in recorded order,
i.e. in action order.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["cyclic_nodes", "shortest_cycle", "find_livelock"]


def _graph(edges: Mapping[int, Sequence[int]]) -> "nx.DiGraph":
    import networkx as nx  # lazy: only needed once, after a full exploration

    g = nx.DiGraph()
    for u, vs in edges.items():
        for v in vs:
            g.add_edge(u, v)
    return g


def cyclic_nodes(edges: Mapping[int, Sequence[int]]) -> dict[int, frozenset[int]]:
    """Map each node lying on a non-progress cycle to its SCC."""
    import networkx as nx

    g = _graph(edges)
    out: dict[int, frozenset[int]] = {}
    for comp in nx.strongly_connected_components(g):
        if len(comp) > 1 or any(g.has_edge(n, n) for n in comp):
            fz = frozenset(comp)
            for n in comp:
                out[n] = fz
    return out


def shortest_cycle(edges: Mapping[int, Sequence[int]], comp: frozenset[int], entry: int) -> list[int]:
    """Shortest cycle entry -> ... -> entry inside ``comp``.

    Returns the fingerprints visited after ``entry``, ending with ``entry``
    (length 1 for a self-loop).
    """
    parent: dict[int, int] = {}
    queue = deque([entry])
    seen = {entry}
    while queue:
        u = queue.popleft()
        for v in edges.get(u, ()):
            if v == entry:
                path = [entry]
                while u != entry:
                    path.append(u)
                    u = parent[u]
                path.reverse()  # now [first after entry, ..., entry]
                return path
            if v in comp and v not in seen:
                seen.add(v)
                parent[v] = u
                queue.append(v)
    raise ValueError("entry is not on a cycle of its component")


def find_livelock(
    edges: Mapping[int, Sequence[int]],
    first_of: Callable[[Iterable[int]], int],
) -> tuple[int, list[int]] | None:
    """(entry fingerprint, cycle fingerprints) of the first livelock, or None.

    ``first_of(fps)`` returns the earliest-discovered fingerprint among fps.
    """
    nodes = cyclic_nodes(edges)
    if not nodes:
        return None
    entry = first_of(nodes.keys())
    return entry, shortest_cycle(edges, nodes[entry], entry)
