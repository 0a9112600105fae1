"""The protocol a model implements to be checked (Stateright/TLC style).

The engine knows nothing about the checked system: it only calls these
methods.  States need not be hashable -- the engine identifies a state by the
fingerprint of ``canonical(state)`` and keeps states themselves only in the
search frontier, rebuilding traces by replay (as TLC does).

Contract the engine relies on (violating it makes results meaningless, and
the replay check reports ``NondeterministicModel`` when it notices):

* ``actions`` and ``step`` are deterministic functions of the state: the same
  state gives the same action list, in the same order (never built by
  iterating a set), and the same successor for the same action.
* ``canonical`` is a function of the state's observable content with any
  symmetry reduction already applied: two states with equal canonical values
  are treated as the same state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Protocol, Sequence, runtime_checkable

__all__ = ["Model", "ModelFactory", "build_model", "successor_with_events", "has", "declared", "CAPABILITIES",
           "ArrayFallback", "CHECK", "DONE", "PROGRESS", "FAIR", "FAIR_SHIFT", "FAIR_CLASSES"]


@runtime_checkable
class Model(Protocol):
    def initial_states(self) -> Sequence[Any]:
        """The initial states, in a deterministic order."""

    def actions(self, state: Any) -> Sequence[Any]:
        """Candidate actions in ``state``, in a deterministic order.

        An action index in a trace or replay path indexes this sequence
        (including actions for which ``step`` returns None)."""

    def step(self, state: Any, action: Any) -> Any | None:
        """Successor of ``state`` by ``action``, or None if not applicable."""

    def canonical(self, state: Any) -> Hashable:
        """Nested tuples of int/str/bool/None (symmetry applied)."""

    def is_done(self, state: Any) -> bool:
        """Normal termination: a done state without successors is no deadlock."""

    def is_progress(self, state: Any, action: Any, nxt: Any) -> bool:
        """False for edges that make no progress; a cycle of them is a livelock."""

    def invariants(self, state: Any) -> list[tuple[str, str]]:
        """Violations in ``state`` as [(kind, message)]; empty when fine."""

    def format_action(self, state: Any, action: Any) -> str:
        ...

    def format_diff(self, state: Any, nxt: Any) -> list[str]:
        ...

    def describe_deadlock(self, state: Any) -> list[str]:
        ...

    # Optional methods are *declared*: a model names the ones it offers in
    # its `capabilities` (a set of the names below); the engine calls only
    # what is declared (`has`), and `declared` refuses a declaration whose
    # methods are missing.


# The optional protocol: a capability and the attributes it promises.
STEP_EVENTS = "step_events"  # step_events(state, action) -> (nxt | None, list): events shown in traces
FORMAT_STATE = "format_state"  # format_state(state) -> list[str]: lines for step 0
FINGERPRINT = "fingerprint"  # fingerprint(state) -> int: its own stable 64-bit fingerprint
CANONICAL_BYTES = "canonical_bytes"  # canonical_bytes(state) -> bytes: its own injective encoding
EXACT_KEY = "exact_key"  # exact_key(state) -> bytes: the identity of an exact search (explorer/stores/exact.py)
LIMITS = "limits"  # set_limits(Limits | None): the run's limits, checked inside its expansions
NOTES = "notes"  # notes: a list the model fills beside the verdict, gathered from partitions
# The array protocol: states as rows of an int64 array (BFS uses it).
#   array_initial() -> (rows[n, W], fps uint64[n], flags int64[n])
#   array_expand(rows[m, W]) -> (succ[k, W], parent int64[k], action int64[k],
#                                fps uint64[k], flags int64[k])
#       successors in (parent, action) order; `action` indexes `actions(state)`;
#       flags: CHECK (call `invariants` on it), DONE (`is_done`), PROGRESS
#       (the edge into it is progress); fps as `fingerprint`; the arrays may
#       be the model's buffers: they are read before the next call
#   array_state(row) -> state   -- the state of the Python protocol, for
#       invariants and traces (replayed through `actions`/`step`)
# It may raise ArrayFallback: the run restarts on an engine without rows.
ROWS = "rows"
ROW_THREADS = "row_threads"  # array_expander() -> an expand function per worker thread (strategies/arrays/walkers.py)
# Liveness under fairness (explorer/graph/fair.py): the model names *subjects* (at most 64: bits of a
# mask) that must not wait for ever, and *fairness classes* of actions (1..FAIR_CLASSES; 0: none).
#   waiting(state) -> int            -- the mask of the subjects that wait in the state
#   array_waiting(rows) -> uint64[n] -- the same for rows (with ROWS)
#   fair_class(state, action) -> int -- the class of an action; with ROWS, array_expand's flags
#       carry it in bits FAIR_SHIFT.. (class << FAIR_SHIFT)
#   fair_strong -> int               -- the mask of the subjects checked under strong fairness
#       (the others: weak)
#   fair_words(trace, lasso_start, subject) -> (kind, message) -- the violation's words
#   fair_note(ever) -> str | None    -- words for a pass, given the mask of the subjects that ever
#       wait (a property that holds vacuously says so)
FAIR = "fair"
FAIR_SHIFT = 8
FAIR_CLASSES = 63

CAPABILITIES: dict[str, tuple[str, ...]] = {
    STEP_EVENTS: ("step_events",), FORMAT_STATE: ("format_state",), FINGERPRINT: ("fingerprint",),
    CANONICAL_BYTES: ("canonical_bytes",), EXACT_KEY: ("exact_key",), LIMITS: ("set_limits",),
    NOTES: ("notes",), ROWS: ("array_initial", "array_expand", "array_state"),
    ROW_THREADS: ("array_expander",), FAIR: ("waiting", "fair_class", "fair_strong", "fair_words", "fair_note"),
}

CHECK, DONE, PROGRESS = 1, 2, 4  # a row's flags: check its invariants; it is done; its edge is progress


class ArrayFallback(Exception):
    """The model cannot go on with rows (e.g. a row must grow): the caller
    runs an engine without rows instead."""


def has(model: Any, capability: str) -> bool:
    """Whether `model` declares `capability` (one of CAPABILITIES)."""
    return capability in getattr(model, "capabilities", ())


def declared(model: Any) -> frozenset[str]:
    """The model's declared capabilities, each known and with its
    attributes present (a TypeError names what is not)."""
    caps = frozenset(getattr(model, "capabilities", ()))
    for cap in sorted(caps):
        if cap not in CAPABILITIES:
            raise TypeError(f"{type(model).__name__} declares an unknown capability {cap!r} "
                            f"(known: {', '.join(sorted(CAPABILITIES))})")
        missing = [a for a in CAPABILITIES[cap] if not hasattr(model, a)]
        if missing:
            raise TypeError(f"{type(model).__name__} declares {cap!r} without {', '.join(missing)}")
    if ROW_THREADS in caps and ROWS not in caps:
        raise TypeError(f"{type(model).__name__} declares {ROW_THREADS!r} without {ROWS!r}")
    return caps


@dataclass(frozen=True)
class ModelFactory:
    """Picklable recipe for a model: ``fn(*args, **kwargs)``.

    Parallel workers each build their own model from it, so ``fn`` must be a
    top-level (importable) callable and the arguments picklable.
    """

    fn: Callable[..., Any]
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def __call__(self) -> Any:
        return self.fn(*self.args, **self.kwargs)


def _same(model: Any) -> Any:
    return model


def build_model(model_or_factory: Any) -> tuple[Any, ModelFactory]:
    """Return (model, factory) for either a model or a ModelFactory.

    A plain model is wrapped in a factory returning that very object; it then
    reaches workers by fork inheritance, or by pickling under 'spawn'.
    """
    if isinstance(model_or_factory, ModelFactory):
        return model_or_factory(), model_or_factory
    return model_or_factory, ModelFactory(_same, (model_or_factory,))


def successor_with_events(model: Any, state: Any, action: Any) -> tuple[Any | None, list]:
    """``step`` plus the optional events of ``step_events`` (used for traces only)."""
    if has(model, STEP_EVENTS):
        nxt, events = model.step_events(state, action)
        return nxt, list(events or [])
    return model.step(state, action), []
