"""The IR: frozen pydantic models, JSON round trip exact.

A session program is an automaton (seed note section 5): `states` where a
session can block or decide, a scope tree (one scope per `hold`, whose
`reentry` is the acquire state a preemption jumps back to) and an `entry`.
A session's local state is (pc, attribute vector, run position): no stack.

Nothing is implicit: every order carries its keys and its tie event, every
hold states its need/take/reuse per pool, every scope its keep moves.
Names are kept as strings (pools, stages, attributes) so the JSON reads
like the source; `serq.semantics.model` resolves them to indices once.

`at` on a node is its (line, col) in `Program.source`, 1-based, or None for
nodes the compiler made up (loop counters, defaults).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

Pos = tuple[int, int] | None

_trusted = threading.local()  # its `depth` > 0 while the compiler makes nodes in this thread (`trusted`)
# every node made trusted is checked against the one validation makes (the tests set it)
CHECK_TRUSTED = os.environ.get("SERQ_CHECK_IR") == "1"


def _init(self, /, **data):
    if not getattr(_trusted, "depth", 0):
        BaseModel.__init__(self, **data)
        return
    # the compiler's own nodes: made without validation (building the
    # validators was most of loading a small instance); a list given for a
    # tuple is made a tuple, as validation does
    made = type(self).model_construct(**{k: tuple(v) if type(v) is list else v for k, v in data.items()})
    if CHECK_TRUSTED:
        from serq.ir.trust import same_node

        same_node(made, type(self).model_validate(data))
    for k in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"):
        object.__setattr__(self, k, getattr(made, k))


# pydantic's mark of its own __init__: validation (of an .ir.json, of a
# node made outside `trusted`) never calls this one, only `Node(...)` does
_init.__pydantic_base_init__ = True


class Node(BaseModel):
    # defer_build: a node class's validator is built when the class is
    # first used (its forward references are resolved then), not when this
    # module is imported: `serq fmt` and `--help` start without it
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    __init__ = _init


@contextmanager
def trusted():
    """Nodes made in this context, in this thread, are not validated: for
    the compiler, whose output the tests check against validation
    (SERQ_CHECK_IR=1, tests/conftest.py). An `.ir.json` read from a file is
    always validated (serq/ir/load.py)."""
    _trusted.depth = getattr(_trusted, "depth", 0) + 1
    try:
        yield
    finally:
        _trusted.depth -= 1


# ---------------------------------------------------------------- expressions


class Num(Node):
    k: Literal["num"] = "num"
    v: int | float
    at: Pos = None


class BoolLit(Node):
    k: Literal["bool"] = "bool"
    v: bool
    at: Pos = None


class Name(Node):
    """An attribute of the session (parameter, let, draw, choose, binding)."""

    k: Literal["attr"] = "attr"
    name: str
    at: Pos = None


class Ctx(Node):
    """A context variable supplied by the moment (see `serq.vocab`'s moments)."""

    k: Literal["ctx"] = "ctx"
    name: str
    at: Pos = None


class Bin(Node):
    k: Literal["bin"] = "bin"
    op: Literal["+", "-", "*", "/", "//", "%", "==", "!=", "<", "<=", ">", ">=", "and", "or"]
    l: Expr
    r: Expr
    at: Pos = None


class Un(Node):
    k: Literal["un"] = "un"
    op: Literal["-", "not"]
    e: Expr
    at: Pos = None


class Cond(Node):
    k: Literal["cond"] = "cond"
    c: Expr
    t: Expr
    f: Expr
    at: Pos = None


class Call(Node):
    """A built-in function: min, max, floor, ceil, abs (numbers)."""

    k: Literal["call"] = "call"
    fn: str
    args: tuple[Expr, ...]
    at: Pos = None


class PoolRef(Node):
    """A pool query: `cached(P)` at a session or admission moment is the
    units cached under this session's key; at the check moment `cached(P)`,
    `allocated(P)`, `free(P)`, `waiting(P)`, `holders(P)` are pool totals."""

    k: Literal["pool"] = "pool"
    fn: str
    pool: str
    at: Pos = None


class Quant(Node):
    """A quantifier over the sessions of `program` present in the state
    (arrived and not ended; docs/language.md, "Quantifiers over
    sessions"), at @check only: `forall P x: e`, `exists P x: e`,
    `count(P x where e)`; `count(P)` has no variable and no `e`."""

    k: Literal["quant"] = "quant"
    q: Literal["forall", "exists", "count"]
    program: str
    var: str | None = None
    e: Expr | None = None
    at: Pos = None


class Of(Node):
    """`var.name`: an attribute of the session bound to `var` by an
    enclosing `Quant`, or one of its facts (`waiting`, `thinking`,
    `prefilling`, `decoding`, `preempted`; `held(pool)` with `pool`)."""

    k: Literal["of"] = "of"
    var: str
    name: str
    pool: str | None = None
    at: Pos = None


Expr = Annotated[
    Union[Num, BoolLit, Name, Ctx, Bin, Un, Cond, Call, PoolRef, Quant, Of], Field(discriminator="k")
]

# ---------------------------------------------------------------- orders

SeqEvent = Literal["arrived", "admitted", "released"]


class OrderKey(Node):
    e: Expr
    desc: bool = False


class Tie(Node):
    event: SeqEvent
    desc: bool = False


class Order(Node):
    """A total order: sort by `keys`, then by the sequence number of `tie`.
    The first element in the order is the one served / admitted / evicted /
    preempted first."""

    keys: tuple[OrderKey, ...] = ()
    tie: Tie


# ---------------------------------------------------------------- pools and stages


class Pool(Node):
    name: str
    cap: int | None = None  # None: infinite
    block: int = 1
    admit_via: str | None = None  # None: event driven
    queue: Order
    victim: Order | None  # None: `preempt none`
    evict: Order
    requeue: Literal["front", "back", "order"] = "front"
    hol: Literal["block", "skip"] = "block"
    # a shared block a hold computes that the cache already has: `free` frees
    # the hold's copy (one copy per block), `keep` keeps it as the hold's own
    # until released, then cached beside the first (vLLM)
    copies: Literal["free", "keep"] = "free"
    # when a block enters the cache: when the tokens that fill it are computed,
    # or when an iteration schedules them (vLLM's allocate_slots): a victim
    # served earlier in its iteration then leaves those blocks cached
    cache: Literal["computed", "scheduled"] = "computed"
    at: Pos = None


class Stage(Node):
    name: str
    budget: Expr | None = None  # None: unbounded
    serve: Order
    chunk: Expr | None = None  # None: no per-request cap
    cost: Expr | None = None  # None: 1 tick per iteration
    self_preempt: Literal["stop", "continue"] = "stop"  # the serve pass after a self-preemption
    at: Pos = None


# ---------------------------------------------------------------- sessions


class Attr(Node):
    name: str
    type: Literal["int", "real", "bool"]
    hidden: bool = False
    origin: Literal["param", "let", "draw", "choose", "binding", "internal"]
    at: Pos = None


class Param(Node):
    name: str
    default: Expr | None = None
    at: Pos = None


class Dist(Node):
    name: Literal["uniform", "geometric", "poisson", "weights"]
    params: tuple[Expr, ...] = ()
    at: Pos = None


class Domain(Node):
    """Either an explicit value set or an integer range lo..hi (inclusive)."""

    values: tuple[Expr, ...] = ()
    lo: Expr | None = None
    hi: Expr | None = None
    at: Pos = None


class HoldItem(Node):
    pool: str
    reuse: Expr | None = None  # units borrowed back from this session's cache entries
    need: Expr  # units that must be obtainable (free + evictable) at admission
    take: Expr  # units taken at admission (rounded up to whole blocks)
    prefix: str | None = None  # the shared prefix this hold's content begins with
    prefix_at: Pos = None
    at: Pos = None


class Binding(Node):
    attr: str
    e: Expr
    at: Pos = None


class HoldSpec(Node):
    items: tuple[HoldItem, ...]
    bindings: tuple[Binding, ...] = ()  # `at admission (x = e)`: evaluated @admit, in order
    admit_if: Expr | None = None


class KeepItem(Node):
    pool: str
    full: bool = False  # `P full`: the full blocks of the hold's use
    e: Expr | None = None  # `P E`: E units (rounded down to whole blocks)
    at: Pos = None


class SArrive(Node):
    kind: Literal["arrive"] = "arrive"
    next: int
    scope: int = 0
    at: Pos = None


class SSet(Node):
    """`let` and `set`: an internal state."""

    kind: Literal["set"] = "set"
    attr: str
    e: Expr
    next: int
    scope: int
    at: Pos = None


class SBranch(Node):
    kind: Literal["branch"] = "branch"
    cond: Expr
    next: int  # taken when cond holds
    alt: int  # taken otherwise
    scope: int
    at: Pos = None


class SDraw(Node):
    """A choice point: every value of the domain in the explorer, a sample
    of `dist` (default uniform) in the simulator."""

    kind: Literal["draw"] = "draw"
    attr: str
    domain: Domain
    dist: Dist | None = None
    next: int
    scope: int
    at: Pos = None


class SChoose(Node):
    """Without `key`: a choice point like a draw. With `key`: the value with
    the smallest key; values with equal keys are ties (domain order in the
    simulator, every one in the explorer with --ties all)."""

    kind: Literal["choose"] = "choose"
    attr: str
    domain: Domain
    key: Expr | None = None
    next: int
    scope: int
    at: Pos = None


class STurn(Node):
    kind: Literal["turn"] = "turn"
    think: Expr | None = None  # ticks, simulator only
    next: int
    scope: int
    at: Pos = None


class SAcquire(Node):
    """The acquire state of a hold scope, its `reentry`."""

    kind: Literal["acquire"] = "acquire"
    hold: HoldSpec
    opens: int  # the scope this acquire opens
    next: int  # first state of the body
    scope: int  # the enclosing scope
    at: Pos = None


class SRun(Node):
    kind: Literal["run"] = "run"
    run: Literal["prefill", "decode"]
    amount: Expr  # tokens, evaluated when the run is entered
    stage: str
    growing: str | None = None
    progress: str | None = None
    next: int
    scope: int
    at: Pos = None


class SSpawn(Node):
    kind: Literal["spawn"] = "spawn"
    program: str
    args: tuple[tuple[str, Expr], ...] = ()
    count: Expr
    next: int
    scope: int
    at: Pos = None


class SJoin(Node):
    kind: Literal["join"] = "join"
    next: int
    scope: int
    at: Pos = None


class SDrop(Node):
    kind: Literal["drop"] = "drop"
    pool: str
    next: int
    scope: int
    at: Pos = None


class SAssert(Node):
    kind: Literal["assert"] = "assert"
    e: Expr
    next: int
    scope: int
    at: Pos = None


class SExit(Node):
    """Leaves scope `closes`: its holds are released (keep moves first)."""

    kind: Literal["exit"] = "exit"
    closes: int
    next: int
    scope: int  # the enclosing scope after the exit
    at: Pos = None


class SEnd(Node):
    """Closes every open scope (keep moves apply) and finishes the session."""

    kind: Literal["end"] = "end"
    scope: int
    at: Pos = None


State = Annotated[
    Union[SArrive, SSet, SBranch, SDraw, SChoose, STurn, SAcquire, SRun, SSpawn, SJoin, SDrop,
          SAssert, SExit, SEnd],
    Field(discriminator="kind"),
]

BLOCKING_KINDS = ("arrive", "turn", "acquire", "run", "join", "end")


class Scope(Node):
    id: int
    parent: int | None  # None for the root scope 0
    acquire: int | None  # the SAcquire state (None for the root)
    reentry: int | None  # where a preemption sends the session: the acquire state
    exit: int | None  # the SExit state of this scope
    keep: tuple[KeepItem, ...] = ()
    pools: tuple[str, ...] = ()  # the pools this scope holds


class SessionProgram(Node):
    name: str
    params: tuple[Param, ...] = ()
    attrs: tuple[Attr, ...] = ()
    states: tuple[State, ...]
    scopes: tuple[Scope, ...]
    entry: int = 0
    at: Pos = None


# ---------------------------------------------------------------- workload and checks


class ArriveEvery(Node):
    kind: Literal["every"] = "every"
    period: int  # ticks (ns)


class ArrivePoisson(Node):
    kind: Literal["poisson"] = "poisson"
    rate: float  # arrivals per second
    seed: int = 0


class ArriveTrace(Node):
    kind: Literal["trace"] = "trace"
    path: str  # a file with one arrival time per line, in seconds


class ArriveAt(Node):
    kind: Literal["at"] = "at"
    time: int  # ticks: all of the line's sessions arrive at this instant


Arrival = Annotated[Union[ArriveEvery, ArrivePoisson, ArriveTrace, ArriveAt], Field(discriminator="kind")]


class WorkloadLine(Node):
    count: int
    program: str
    args: tuple[tuple[str, Expr], ...] = ()  # resolved to parameter names
    arrival: Arrival | None = None  # None: all at time 0
    at: Pos = None


class Check(Node):
    """A property. `slo`: `metric <= e` (`e` a constant or a session
    attribute; `pool` for `queue(POOL)`, None for every pool). `sometimes`:
    a condition `e` (as an invariant's) that some reachable state meets.
    `eventually`: `metric` is what every session eventually does
    (`admitted`, `done`), under the `fairness` of iterations (None: weak)."""

    kind: Literal["deadlock", "livelock", "stuck", "completes", "invariant", "slo", "sometimes", "eventually"]
    e: Expr | None = None
    metric: str | None = None
    pool: str | None = None
    fairness: Literal["weak", "strong"] | None = None
    at: Pos = None


class Prefix(Node):
    """A shared prefix: `length` tokens in all (its parent's included)."""

    name: str
    length: int
    parent: str | None = None  # the prefix it extends
    at: Pos = None


class IrWarning(Node):
    """A warning `serq compile` found in the instance (as the command
    printed it on stderr; docs/json.md)."""

    code: str
    message: str
    file: str = ""
    line: int = 0  # 0: the warning has no place
    col: int = 0
    notes: tuple[str, ...] = ()


class Program(Node):
    """One instance: everything `serq run` and `serq explore` need."""

    format: Literal["serq-ir"] = "serq-ir"  # what `serq compile` writes (docs/json.md); optional on input
    version: Literal[1] = 1
    source: str = "<input>"
    consts: tuple[tuple[str, int | float], ...] = ()
    pools: tuple[Pool, ...] = ()
    stages: tuple[Stage, ...] = ()
    sessions: tuple[SessionProgram, ...] = ()
    workload: tuple[WorkloadLine, ...] = ()
    checks: tuple[Check, ...] = ()
    prefixes: tuple[Prefix, ...] = ()
    tick: Literal["arrivals", "turns"] = "arrivals"  # which comes first at one tick
    # what `serq compile` warned of; ignored on input (a program's warnings
    # are found again as it is loaded), empty in every program loaded
    warnings: tuple[IrWarning, ...] = ()

    # lookups -----------------------------------------------------------
    def pool(self, name: str) -> Pool | None:
        return next((p for p in self.pools if p.name == name), None)

    def stage(self, name: str) -> Stage | None:
        return next((s for s in self.stages if s.name == name), None)

    def session(self, name: str) -> SessionProgram | None:
        return next((s for s in self.sessions if s.name == name), None)

    def to_json(self) -> str:
        return self.model_dump_json(indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "Program":
        return cls.model_validate_json(text)


