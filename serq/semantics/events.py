"""The model's events, read by name: one NamedTuple a kind of event, each
with `kind` (its word: "serve", "preempt", ...) first, so an event still
equals the plain tuple of its fields. `decode` turns the kernel's event
records (kernel/abi.py: EVW ints, the code first) into them; the engine
adds a `Fault` when a step faults, the simulator a `Serve` per session of
a coalesced block. Nothing outside this module reads an event by position
(`python bench/count_indexings.py` counts them)."""

from __future__ import annotations

from typing import NamedTuple

from serq.semantics.kernel.abi import (
    EV_ADMIT, EV_ARRIVE, EV_AT_TURN, EV_CHOOSE, EV_DRAW, EV_DROP, EV_END, EV_EVICT, EV_HIT, EV_ITERATE,
    EV_JOINED, EV_PREEMPT, EV_QUEUED, EV_RELEASE, EV_RUN_DONE, EV_SERVE, EV_SPAWN, EV_STUCK, EV_TURN,
)
from serq.semantics.words import value

PHASES = ("prefill", "decode")  # a run's phase, by the kernel's RUN_DECODE


class Mark(NamedTuple):
    """arrive, turn (a session's action), at_turn (it waits for the
    user), end, joined (its children ended)."""
    kind: str
    sid: int


class Draw(NamedTuple):
    """draw or choose: the value given to an attribute."""
    kind: str
    sid: int
    attr: str
    value: object


class Spawn(NamedTuple):
    kind: str
    sid: int
    child: int


class Queued(NamedTuple):
    """queued (on a pool's queue) or stuck (preempted again at the same
    position)."""
    kind: str
    sid: int
    pool: int


class Units(NamedTuple):
    """hit (units reused from the pool's cache) or drop (cached units of
    the session dropped)."""
    kind: str
    sid: int
    pool: int
    units: int


class Release(NamedTuple):
    kind: str
    sid: int
    pool: int
    units: int
    kept: int  # of them, kept cached


class Evict(NamedTuple):
    """A cache entry evicted; its owner is a session, or -3 - i for shared
    prefix i."""
    kind: str
    pool: int
    owner: int
    units: int


class Admit(NamedTuple):
    kind: str
    sid: int
    pools: tuple  # of its hold, in order


class Preempt(NamedTuple):
    kind: str
    sid: int
    pool: int
    why: str  # "self", or "<pool> full"


class Iterate(NamedTuple):
    kind: str
    stage: int
    shape: dict  # ntok, ndec, nreq, kvb


class Serve(NamedTuple):
    """Tokens served to a session's run. done/total: the run's progress
    after it; pool/held: the pool its hold grows in, and the hold's units
    after (None when it grows none). A coalesced block's serve has
    neither progress nor pool."""
    kind: str
    sid: int
    n: int
    phase: str
    done: int | None = None
    total: int | None = None
    pool: int | None = None
    held: int | None = None


class RunDone(NamedTuple):
    kind: str
    sid: int
    phase: str


class Fault(NamedTuple):
    kind: str
    what: str  # the fault's kind (engine._fault)
    message: str


def serve(sid: int, n: int, phase: str) -> Serve:
    """A coalesced block's serve: n tokens of a phase, no progress."""
    return Serve("serve", sid, n, phase)


def fault(what: str, message: str) -> Fault:
    return Fault("fault", what, message)


def first_token(e) -> bool:
    """Whether event `e` is a request's first token (for its session
    e.sid): the end of a prefill run, or a decode token. What ttft ends at,
    in the simulator's report and in `--worst ttft`."""
    return (e.kind == "run_done" and e.phase == "prefill") or (e.kind == "serve" and e.phase == "decode")


_MARKS = {EV_ARRIVE: "arrive", EV_TURN: "turn", EV_AT_TURN: "at_turn", EV_END: "end", EV_JOINED: "joined"}


def decode(low, rec, prog_of) -> list:
    """Events from kernel records (rows of EVW ints); `prog_of(sid)` gives
    a session's program (draw values are typed by its attributes)."""
    prog = low.program
    out = []
    new = tuple.__new__  # each NamedTuple made without its Python-level constructor: half the time
    for code, a, b, c, d, e, f, g in rec.tolist():
        if code == EV_SERVE:  # the most frequent first
            grows = f >= 0
            out.append(new(Serve, ("serve", a, b, PHASES[c], d, e, f if grows else None, g if grows else None)))
        elif code in _MARKS:
            out.append(new(Mark, (_MARKS[code], a)))
        elif code == EV_DRAW or code == EV_CHOOSE:
            pi = prog_of(a)
            out.append(new(Draw, ("draw" if code == EV_DRAW else "choose", a, prog.sessions[pi].attrs[b].name,
                                  value(low.types[pi][b], c))))
        elif code == EV_SPAWN:
            out.append(new(Spawn, ("spawn", a, b)))
        elif code == EV_QUEUED:
            out.append(new(Queued, ("queued", a, b)))
        elif code == EV_STUCK:
            out.append(new(Queued, ("stuck", a, b)))
        elif code == EV_EVICT:
            out.append(new(Evict, ("evict", a, b, c)))
        elif code == EV_RELEASE:
            out.append(new(Release, ("release", a, b, c, d)))
        elif code == EV_DROP:
            out.append(new(Units, ("drop", a, b, c)))
        elif code == EV_HIT:
            out.append(new(Units, ("hit", a, b, c)))
        elif code == EV_ADMIT:  # the program and state of the hold admitted
            st = prog.sessions[b].states[c]
            out.append(new(Admit, ("admit", a, tuple(low.pool_ix[i.pool] for i in st.hold.items))))
        elif code == EV_PREEMPT:
            out.append(new(Preempt, ("preempt", a, b, "self" if c else f"{prog.pools[b].name} full")))
        elif code == EV_ITERATE:
            out.append(new(Iterate, ("iterate", a, {"ntok": b, "ndec": c, "nreq": d, "kvb": e})))
        elif code == EV_RUN_DONE:
            out.append(new(RunDone, ("run_done", a, PHASES[b])))
        else:
            raise AssertionError(f"unknown event code {code}")
    return out
