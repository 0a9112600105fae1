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

__all__ = ["Model", "ModelFactory", "build_model", "successor_with_events"]


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

    # Optional, looked up with getattr (not part of the runtime check):
    #   step_events(state, action) -> (nxt | None, list)  -- events shown in traces
    #   format_state(state) -> list[str]                   -- lines for step 0
    #   fingerprint(state) -> int                          -- its own stable 64-bit fingerprint
    #
    # The array protocol (explorer/arrays.py; BFS with one worker uses it
    # when a model has `array_expand`): states as rows of an int64 array.
    #   array_initial() -> (rows[n, W], fps uint64[n], flags int64[n])
    #   array_expand(rows[m, W]) -> (succ[k, W], parent int64[k], action int64[k],
    #                                fps uint64[k], flags int64[k])
    #       successors in (parent, action) order; `action` indexes `actions(state)`;
    #       flags: arrays.CHECK (call `invariants` on it), arrays.DONE (`is_done`),
    #       arrays.PROGRESS (the edge into it is progress); fps as `fingerprint`;
    #       the arrays may be the model's buffers: they are read before the next call
    #   array_state(row) -> state   -- the state of the Python protocol, for
    #       invariants and traces (replayed through `actions`/`step`)
    # It may raise arrays.ArrayFallback: the run restarts on the sequential engine.


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
    step_events = getattr(model, "step_events", None)
    if step_events is not None:
        nxt, events = step_events(state, action)
        return nxt, list(events or [])
    return model.step(state, action), []
