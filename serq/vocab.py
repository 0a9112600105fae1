"""The language's fixed names, in one place: the front end (compiler,
validator) and the evaluator read them from here, so no module of the
front end has to import another for its vocabulary.

The moment table: the position of an expression fixes its moment (a
statement is @session, a hold's admission header @admit(P), a stage's
budget/chunk/cost/serve @step(S), an evict key @evict(P), an invariant
@check); `moment()` says what each may read. Hidden attributes are
readable at @session only: the scheduler may not peek at the answer."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

# Context variables (each legal only at some moments, see serq.lang.validate).
CTX_NAMES = ("budget_left", "ntok", "ndec", "nreq", "kvb", "age", "size", "last", "now",
             "arrived", "admitted", "released")
SEQ_EVENTS = ("arrived", "admitted", "released")
FUNCS = {"min": (2, None), "max": (2, None), "floor": (1, 1), "ceil": (1, 1), "abs": (1, 1)}  # (least, most) arguments


def arity_ok(fn: str, n: int) -> bool:
    """`n` arguments suit the built-in function `fn`."""
    lo, hi = FUNCS[fn]
    return lo <= n and (hi is None or n <= hi)
POOL_FUNCS = ("cached", "allocated", "free", "waiting", "holders", "evictable")
DIST_NAMES = ("uniform", "geometric", "poisson", "weights")
UNIT_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}

# Limits of the language, checked where a number or a nesting is read.
MAX_INT = 2**62  # numbers of the semantics are 64-bit integers: ticks, tokens, counts
MAX_WORKLOAD = 1_000_000  # sessions on one workload line
MAX_SESSIONS = 100_000  # sessions a spawn may bring a row to (the kernel's abi.MAX_SESSIONS, one number)
# Nesting limits that keep every later pass (compiler, printer, IR JSON, the
# generated evaluator) far from Python's and JSON's own nesting limits.
MAX_EXPR_DEPTH = 64  # operations nested in one expression (a chain `a + b + ...` nests one per operator)
MAX_STMT_DEPTH = 100  # blocks and `else if`s nested in one another


@dataclass(frozen=True)
class Moment:
    label: str
    attrs: str | None  # "all" | "visible" | None (no session attributes)
    ctx: frozenset = frozenset()
    poolfns: frozenset = frozenset()
    scheduler: bool = True  # a scheduler moment (hidden attributes forbidden)
    sessions: bool = False  # quantifiers over sessions (`forall P x: ...`) readable: @check only


def M(label, attrs, ctx=(), poolfns=(), scheduler=True, sessions=False):
    return Moment(label, attrs, frozenset(ctx), frozenset(poolfns), scheduler, sessions)


# The moment table. `now` is the simulator's clock; the explorer rejects it.
@lru_cache(maxsize=None)
def moment(kind: str, where: str = "") -> Moment:
    return {
        "session": M("@session", "all", ("now",), ("cached",), scheduler=False),
        "admit": M(f"@admit({where})", "visible", ("budget_left", "now"),
                   ("cached", "free", "allocated", "evictable", "waiting", "holders")),
        "queue": M(f"@admit({where}) queue key", "visible", ("arrived", "now")),
        "victim": M(f"@admit({where}) victim key", "visible", ("arrived", "admitted", "now")),
        "evict": M(f"@evict({where})", None, ("age", "size", "last", "released", "now")),
        "budget": M(f"@step({where}) budget", None, ("nreq", "ndec", "kvb", "now"), POOL_FUNCS),
        "chunk": M(f"@step({where}) chunk", None, ("nreq", "ndec", "kvb", "budget_left", "now"), POOL_FUNCS),
        "cost": M(f"@step({where}) cost", None, ("ntok", "ndec", "nreq", "kvb", "now")),
        "serve": M(f"@step({where}) serve key", "visible", ("arrived", "admitted", "now")),
        "check": M("@check", None, (), POOL_FUNCS, sessions=True),
        "const": M("a constant position", None),
    }[kind]


MOMENT_TABLE_ROWS = [  # for docs and `serq explain`-style listings
    ("session", ""), ("admit", "P"), ("queue", "P"), ("victim", "P"), ("evict", "P"),
    ("budget", "S"), ("chunk", "S"), ("cost", "S"), ("serve", "S"), ("check", ""),
]

EXPLORER_BANNED = ("now", "age")
EXPLORER_MAX_DOMAIN = 4096  # values one draw may take in the explorer

# what `check eventually GOAL;` asks of every session (docs/language.md, "Liveness"), and the
# fairness of iterations it is checked under (`under weak`, the default, or `under strong`)
EVENTUALLY_GOALS = {
    "admitted": "every hold that waits in a pool's queue is eventually admitted",
    "done": "every request eventually finishes: its session reaches a `turn` or its end",
}
FAIRNESS = ("weak", "strong")

# the metrics a `check METRIC <= BOUND;` bounds (docs/language.md, "SLO checks"):
# per request (ttft, latency, preemptions, recomputed) or per state (queue)
SLO_METRICS = {
    "ttft": "iterations from a request's start to its first token",
    "latency": "iterations from a request's start to its end",
    "preemptions": "preemptions of one request",
    "recomputed": "tokens one request computes again after a preemption",
    "queue": "sessions waiting in a pool's queue",
}
