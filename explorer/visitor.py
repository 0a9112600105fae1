"""The visitor protocol: hooks the search calls as it goes, for analyses
that look at states and transitions themselves (as Stateright's
`CheckerVisitor`, TLC's state-graph dumps): the stored graph of `--worst`
and of the point of no return (graph/stored.py), the forward searches of
the point of no return (graph/forward.py), the theorem's solo runs
(graph/walk.py). They ride on the one search, with its limits, its
handling of signals and its statistics, instead of loops of their own.

    class Count(Visitor):
        def on_state(self, state, fp, parent, ai, depth):
            self.n += 1

    result = check(model, Settings(visitor=Count()))

Which engines honour a visitor: the sequential engine alone (BFS and DFS,
strategies/sequential.py), which holds each state as a Python value. The
door (explorer/check.py) gives a run with a visitor to it whatever the
model offers (rows are not used: the same states, the same counts), and
`Settings` refuses a visitor with several workers or with the strategies
"partitioned" and "swarm" (a ValueError), whose states are rows spread
over processes.

The hooks, each optional (the base class's does nothing, and the search
does not call a hook that a visitor leaves as the base's):

* ``on_state(state, fp, parent, ai, depth)``: a new state is stored (its
  first discovery; ``parent`` is the fingerprint it was reached from, None
  for an initial state, ``ai`` the action index, or the initial state's
  index). Called before the state's invariants are checked, so every
  distinct state of the run's statistics has been seen, the violating one
  included. It may return PRUNE: the state stays stored (and checked) but
  is never expanded -- no successor, no edge out, no deadlock.
* ``on_edge(state, fp, ai, action, nxt, nfp, events)``: a transition of an
  expanded state, in action order, after its target was stored (and shown
  to ``on_state`` when new); ``events`` are the step's events
  (``step_events``) when the visitor's ``events`` is True, else None. An
  edge whose target is cut by ``max_depth`` is not stored and not shown.
  Under DFS with ``max_depth`` a state reached again by a shorter path is
  expanded again, and its edges shown again.
* ``on_terminal(state, fp)``: an expanded state without any successor
  (before the search decides whether it is a deadlock).

Any hook may return STOP: the search ends there, with the verdict "bound"
and the reason "visitor" (statistics so far). A hook's other return
values are refused (ValueError). Returning None goes on.

A visitor meets the states as the model gives them, every check of the
run still made: a violation or a deadlock still ends the search with its
verdict. An analysis that judges states itself runs over ``Unchecked(model)``
with ``check_deadlock`` and ``check_livelock`` off: ``visit`` does that."""

from __future__ import annotations

from typing import Any

__all__ = ["Visitor", "PRUNE", "STOP", "Unchecked", "visit", "hooks"]

PRUNE = "prune"  # on_state: keep the state, do not expand it
STOP = "stop"  # any hook: end the search (verdict "bound", reason "visitor")


class Visitor:
    """The hooks a search calls; override those you need (see the module's
    docstring for when each is called and what it may return)."""

    events: bool = False  # on_edge gets the step's events (the model's step_events)

    def on_state(self, state: Any, fp: int, parent: int | None, ai: int, depth: int) -> str | None:
        return None

    def on_edge(self, state: Any, fp: int, ai: int, action: Any, nxt: Any, nfp: int, events: list | None) -> str | None:
        return None

    def on_terminal(self, state: Any, fp: int) -> str | None:
        return None


def hooks(visitor: Visitor | None) -> tuple:
    """(on_state, on_edge, on_terminal): the visitor's bound hooks, None for
    each it leaves as the base's (the search skips the call)."""
    if visitor is None:
        return None, None, None
    cls = type(visitor)
    return tuple(None if getattr(cls, name) is getattr(Visitor, name) else getattr(visitor, name)
                 for name in ("on_state", "on_edge", "on_terminal"))


def answer(hook: str, said: Any) -> str:
    """A hook's return value checked: PRUNE (on_state only) or STOP."""
    if said == STOP or (said == PRUNE and hook == "on_state"):
        return said
    allowed = "None, PRUNE or STOP" if hook == "on_state" else "None or STOP"
    raise ValueError(f"a visitor's {hook} returned {said!r} (expected {allowed})")


class Unchecked:
    """``model`` with no property of its own: no invariant (the search
    neither stops at a violation nor reports one), for a visitor that
    judges states itself (it reads ``Unchecked.model``). ``initial``: the
    states to start from instead of the model's initial states. Every
    other method, and the state identities, are the model's."""

    def __init__(self, model: Any, initial: list | None = None) -> None:
        self.model = model
        self.capabilities = frozenset(getattr(model, "capabilities", ()))
        # the search's hot calls bound once (not through __getattr__)
        for name in ("actions", "step", "fingerprint", "canonical_bytes", "canonical", "is_progress", "step_events"):
            if hasattr(model, name):
                setattr(self, name, getattr(model, name))
        self._initial = initial

    def initial_states(self):
        return self.model.initial_states() if self._initial is None else self._initial

    def invariants(self, state: Any) -> list:
        return []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)


def visit(model: Any, visitor: Visitor, initial: list | None = None, **fields: Any):
    """The one search (``explorer.check``) over ``Unchecked(model,
    initial)`` with ``visitor``, no deadlock or livelock check: the
    visitor judges states. ``fields``: the rest of the Settings (bounds,
    limits, strategy). Returns the search's Result."""
    from explorer.check import check  # lazy: explorer.check re-exports the analyses that call this
    from explorer.settings import Settings

    return check(Unchecked(model, initial), Settings(visitor=visitor, check_deadlock=False, check_livelock=False,
                                                     **fields))
