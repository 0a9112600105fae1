"""SLO checks: `check ttft <= 4;`, `latency`, `preemptions`, `recomputed`,
`queue(POOL)` (docs/language.md, "SLO checks"; docs/explorer.md,
"SLO checks").

A per-request metric is a count carried along a path: the explorer checks
it on the product of serq's model with a small counter per session and
metric (`SloModel`), built only when an instance asks for such a check, so
the states of every other instance are the kernel's alone. A count is the
kept by the rules `--worst` counts by (serq/check/requests.py): a request
starts when its session arrives, leaves a `turn` or is spawned, and ends
at the next `turn` or `end` (ttft: at its first token); an iteration counts
for every request under way when it starts; recomputed tokens follow
`Recompute`. Unlike `--worst preemptions` and `--worst recomputed`, which
add up over a session's whole run, an SLO's count starts again with each
request (a session's turns are separate requests). The count is compared with the
bound in the step that makes it (before the request ends in that same
step), so the first state where a count passes its bound is a violation,
and breadth-first search gives the shortest path to it. Once a count is
over, the state is a violation and is not expanded: every count stays
within its bound plus one, and the product is finite when the model is.

`queue(POOL) <= K` is a property of one state: the model checks it among
its invariants (`SerqModel`), on the kernel's states, symmetry included.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from serq import ir
from serq.check.product import OverSerq
from serq.check.requests import STARTS, Recompute, ends_request, iteration, session_of
from serq.check.slospec import Slo, over_text

# per-session fields of the product, in this order, for the metrics checked
_NONE = -1  # no request under way (ttft: none waiting for its first token)
# the events a count reads: each names its session (`sid`, a spawn its `child`)
_SESSION_EVENTS = frozenset({"arrive", "turn", "spawn", "preempt", "hit", "admit", "serve", "release", "at_turn",
                             "end", "run_done"})


# ---------------------------------------------------------------- the product


class SloState(NamedTuple):
    """A state of the SLO search: serq's state (a packed row), per session
    the counters the checks need, and the first count over its bound in
    the step that reached it ((check index, session, value) or None)."""

    state: Any
    counts: tuple
    over: tuple | None


class Fields:
    """Which counters a session carries: one per per-request metric
    checked, and for `recomputed` the position and high water of its
    growing runs (serq/check/worst.py, `Counter._redo`)."""

    def __init__(self, slos: tuple[Slo, ...]):
        names = [s.metric for s in slos if s.per_request]
        self.ft = "ttft" in names
        self.lat = "latency" in names
        self.pre = "preemptions" in names
        self.rc = "recomputed" in names
        self.idle = ((_NONE,) * (self.ft + self.lat + self.pre + self.rc) + ((0, 0) if self.rc else ()))


def _index(fields: Fields) -> dict[str, int]:
    out, k = {}, 0
    for name, on in (("ttft", fields.ft), ("latency", fields.lat), ("preemptions", fields.pre),
                     ("recomputed", fields.rc)):
        if on:
            out[name] = k
            k += 1
    if fields.rc:
        out["pos"], out["hw"] = k, k + 1
    return out


class Counts:
    """The per-request counters of the SLO checks: what a session carries
    (`Fields`), how a step's events move them, and the first count over
    its bound. The explorer's product (`SloModel`) and the simulator
    (`serq check`) count with it."""

    def __init__(self, slos, progs):
        self.slos = tuple(s for s in slos if s.per_request)
        self.fields = Fields(self.slos)
        self.ix = _index(self.fields)
        self._attr = {s.attr: [[a.name for a in p.attrs].index(s.attr) for p in progs]
                      for s in self.slos if s.attr is not None}

    def initial(self, n: int) -> tuple:
        return (self.fields.idle,) * n

    def advance(self, counts: tuple, nxt, events) -> tuple[tuple, tuple | None]:
        """The counters after a step, and the first count over its bound
        ((check index, session, value) or None); `nxt`: the successor,
        read only for an attribute bound. An iteration is a step with an
        `iterate` event (one that faults has none: it did no work)."""
        ix, f = self.ix, self.fields
        w = 1 if iteration(events) is not None else 0
        events = [e for e in events if e.kind in _SESSION_EVENTS]
        if not w and not events:
            return counts, None
        n = max([len(counts)] + [e.child + 1 for e in events if e.kind == "spawn"])  # a spawn adds sessions
        ph = [list(c) for c in counts] + [list(f.idle) for _ in range(n - len(counts))]
        if w:  # every request under way when the iteration starts (spawned ones are not yet)
            for c in ph[:len(counts)]:
                for name in ("ttft", "latency"):
                    k = ix.get(name)
                    if k is not None and c[k] != _NONE:
                        c[k] += w
        peak = [list(c) for c in ph]  # each count's largest value in this step, before a request ends in it
        rc = Recompute()
        for e in events:
            t = e.kind
            sid = session_of(e)
            c = ph[sid]
            if t in STARTS:
                for name in ("ttft", "latency", "preemptions", "recomputed"):
                    if name in ix:
                        c[ix[name]] = 0
                continue
            if t == "preempt" and "preemptions" in ix and c[ix["preemptions"]] != _NONE:
                c[ix["preemptions"]] += 1
            if f.rc:
                p, h, r = ix["pos"], ix["hw"], ix["recomputed"]
                c[p], c[h], again = rc.after(e, c[p], c[h])
                if again and c[r] != _NONE:
                    c[r] += again
            for k in range(len(c)):
                if c[k] > peak[sid][k]:
                    peak[sid][k] = c[k]
            if ends_request(e, False):
                for name in ("ttft", "latency", "preemptions", "recomputed"):
                    if name in ix:
                        c[ix[name]] = _NONE
            elif f.ft and ends_request(e, True):
                c[ix["ttft"]] = _NONE
        for sid, c in enumerate(ph):
            for k in range(len(c)):
                if c[k] > peak[sid][k]:
                    peak[sid][k] = c[k]
        return tuple(tuple(c) for c in ph), self._over(peak, nxt)

    def _over(self, peak, nxt) -> tuple | None:
        for ci, s in enumerate(self.slos):
            k = self.ix[s.metric]
            for sid, c in enumerate(peak):
                if c[k] == _NONE:
                    continue
                bound = s.bound
                if s.attr is not None:
                    sess = nxt.sessions[sid]
                    bound = sess.attrs[self._attr[s.attr][sess.prog]]
                if c[k] > bound:
                    return (ci, sid, c[k])
        return None

    def message(self, over, label) -> tuple[str, str]:
        """(kind, words) of a count over its bound; `label(sid)` names a session."""
        ci, sid, v = over
        return self.slos[ci].kind, over_text(self.slos[ci], label(sid), v)


class SloModel(OverSerq):
    """The explorer's model protocol over a SerqModel (without symmetry:
    a session keeps its id, and its counters with it) and the per-request
    counters of the instance's SLO checks. An action is the serq model's."""

    capabilities = frozenset({"fingerprint", "canonical_bytes", "format_state", "notes"})  # explorer/model.py

    def __init__(self, program: ir.Program, *, ties: str = "all", checks=None, notes: list | None = None,
                 reduce_ranks: bool = False):
        from serq.check.model import Checks, SerqModel

        checks = checks or Checks.of_program(program)
        self.sm = SerqModel(program, ties=ties, symmetry=False, checks=checks, notes=notes, reduce_ranks=reduce_ranks)
        self.program = program
        self.checks = checks
        self.notes = self.sm.notes
        self.counter = Counts(checks.slo, self.sm.m.progs)
        self.slos = self.counter.slos

    # -- protocol ---------------------------------------------------------
    def initial_states(self):
        out = []
        for s in self.sm.initial_states():
            out.append(SloState(s, self.counter.initial(len(self.sm.m.initial_state().sessions)), None))
        return out

    def actions(self, state):
        return self.sm.actions(state.state)

    def step(self, state, action):
        # the kernel's step with its events, the successor kept as a row
        # (decoded only when an attribute bound reads it)
        nxt, events = self.sm.m.engine.run(self.sm.rows.pack(state.state), (action[0], action[1]),
                                           list(action[2]), 0, True, True)
        if nxt is None:
            return None
        packed = self.sm.rows.pack(nxt)
        counts, over = self.counter.advance(state.counts, packed, events)
        return SloState(packed, counts, over)


    def fingerprint(self, state) -> int:
        """The kernel's fingerprint of serq's state (without symmetry),
        hashed with the counters: a stable 64-bit fingerprint."""
        import hashlib

        fp = self.sm.rows.pack(state.state).fp
        h = hashlib.blake2b(fp.to_bytes(8, "little") + repr((state.counts, state.over)).encode(), digest_size=8)
        return int.from_bytes(h.digest(), "little") or 1

    def canonical_bytes(self, state) -> bytes:
        key = self.sm.exact_key(state.state)
        return len(key).to_bytes(8, "little") + key + repr((state.counts, state.over)).encode()


    def invariants(self, state, *, stuck: bool | None = None):
        out = self.sm.invariants(state.state, stuck=stuck)
        if out or state.over is None:
            return out
        base = state.state
        base = base.tuple() if hasattr(base, "tuple") else base  # a state sent to a worker is a tuple
        return [self.counter.message(state.over, lambda sid: self.sm.label(base, sid))]


def needs_product(checks) -> bool:
    """Whether a search must carry per-request counters (`SloModel`)."""
    return any(s.per_request for s in getattr(checks, "slo", ()))


def make_model(program: ir.Program, *, ties: str = "all", symmetry: bool = True, checks=None,
               notes: list | None = None, reduce_ranks: bool = False):
    """The model a search over these checks explores: serq's, or the
    product with the SLO counters when a per-request SLO is checked."""
    from serq.check.model import Checks, SerqModel

    checks = checks or Checks.of_program(program)
    if needs_product(checks):
        if checks.eventually:  # (the command line refuses it first, E012)
            raise ValueError("`check eventually` and a per-request SLO check are explored apart: select one of them")
        return SloModel(program, ties=ties, checks=checks, notes=notes, reduce_ranks=reduce_ranks)
    if checks.eventually:  # a session keeps its id along a path (serq/check/liveness.py)
        symmetry = False
    return SerqModel(program, ties=ties, symmetry=symmetry, checks=checks, notes=notes, reduce_ranks=reduce_ranks)
