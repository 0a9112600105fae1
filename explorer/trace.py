"""Traces: rebuilding them by replay, and the replay path format.

The store keeps only (parent fingerprint, action index) per state, so a trace
is rebuilt TLC-style: start from ``initial_states()[i0]`` and at every step
take ``actions(state)[index]``, ``step`` it, and check that the fingerprint of
the result equals the stored one.  If it does not, the model is not a
function of its state (hidden mutable state, randomness, set iteration
order...) and we raise :class:`NondeterministicModel` naming the step and
action where the replay diverged, rather than print a trace that does not
lead to the reported state.

Replay path format: ``"i0/a1/a2/.../an"`` -- decimal integers separated by
``/``.  ``i0`` is ALWAYS present and is the index in ``initial_states()``
(so ``"0"`` is the first initial state itself); each following ``ak`` is an
index into ``actions(state)`` of the state reached so far (the full action
list, including actions that ``step`` rejects).  Always writing ``i0`` keeps
the format independent of how many initial states a model has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from explorer.fingerprint import format_fp, state_fingerprint
from explorer.model import FORMAT_STATE, has, successor_with_events

__all__ = [
    "Step",
    "ReplayError",
    "NondeterministicModel",
    "rebuild",
    "extend_along",
    "follow",
    "format_path",
    "parse_path",
    "replay",
]


@dataclass
class Step:
    """One trace entry.  ``index`` 0 is the initial state (``action`` None,
    ``action_index`` = index in ``initial_states()``); entry k > 0 is the
    state reached by ``action`` = ``actions(trace[k-1].state)[action_index]``."""

    index: int
    action_index: int
    action: Any
    state: Any
    fingerprint: int
    action_text: str | None = None  # format_action(previous state, action); None at step 0
    diff: list[str] = field(default_factory=list)  # format_diff(previous, state); format_state at step 0
    events: list[str] = field(default_factory=list)  # from the optional step_events


class ReplayError(ValueError):
    """A replay path does not describe a run of the model (bad input)."""

    def __init__(self, message: str, step: int | None = None) -> None:
        super().__init__(message)
        self.step = step


class NondeterministicModel(RuntimeError):
    """Replaying the stored (parent, action index) chain did not reproduce the
    fingerprints seen during the search: the model is not deterministic."""

    def __init__(
        self,
        message: str,
        step: int,
        action_index: int | None = None,
        action_text: str | None = None,
        expected: int | None = None,
        got: int | None = None,
    ) -> None:
        super().__init__(message)
        self.step = step
        self.action_index = action_index
        self.action_text = action_text
        self.expected = expected
        self.got = got


def _initial_step(model: Any, index: int, state: Any, fp: int) -> Step:
    lines = [str(x) for x in model.format_state(state)] if has(model, FORMAT_STATE) else []
    return Step(0, index, None, state, fp, None, lines, [])


def _safe_format(model: Any, state: Any, action: Any) -> str:
    try:
        return str(model.format_action(state, action))
    except Exception as exc:  # diagnostics must not hide the real error
        return f"<{action!r}: format_action failed: {exc}>"


def _take(model: Any, state: Any, k: int, ai: int, expected: int | None) -> tuple[Any, Step]:
    """Apply action ``ai`` to ``state`` as step ``k``; verify ``expected``."""
    acts = model.actions(state)
    if not 0 <= ai < len(acts):
        msg = f"step {k}: action index {ai} out of range ({len(acts)} actions)"
        if expected is not None:
            raise NondeterministicModel(
                f"nondeterministic model: replay diverged at {msg}", k, ai, None, expected, None
            )
        raise ReplayError(msg, k)
    action = acts[ai]
    nxt, events = successor_with_events(model, state, action)
    text = _safe_format(model, state, action)
    if nxt is None:
        msg = f"step {k}: action #{ai} '{text}' is not applicable"
        if expected is not None:
            raise NondeterministicModel(
                f"nondeterministic model: replay diverged at {msg}", k, ai, text, expected, None
            )
        raise ReplayError(msg, k)
    fp = state_fingerprint(model, nxt)
    if expected is not None and fp != expected:
        raise NondeterministicModel(
            f"nondeterministic model: replay diverged at step {k}, action #{ai} '{text}': "
            f"expected state {format_fp(expected)}, got {format_fp(fp)}; "
            "refusing to print a trace that does not reach the reported state",
            k,
            ai,
            text,
            expected,
            fp,
        )
    diff = [str(x) for x in model.format_diff(state, nxt)]
    return nxt, Step(k, ai, action, nxt, fp, text, diff, [str(e) for e in events])


def rebuild(model: Any, chain: Sequence[tuple[int, int]]) -> list[Step]:
    """Replay a stored chain [(fingerprint, action index)] (root first)."""
    if not chain:
        raise ValueError("empty chain")
    fp0, i0 = chain[0]
    inits = model.initial_states()
    if not 0 <= i0 < len(inits):
        raise NondeterministicModel(
            f"nondeterministic model: initial state #{i0} no longer exists "
            f"({len(inits)} initial states)",
            0,
        )
    state = inits[i0]
    got = state_fingerprint(model, state)
    if got != fp0:
        raise NondeterministicModel(
            f"nondeterministic model: initial state #{i0} changed: expected "
            f"{format_fp(fp0)}, got {format_fp(got)}",
            0,
            expected=fp0,
            got=got,
        )
    trace = [_initial_step(model, i0, state, got)]
    for k, (fp, ai) in enumerate(chain[1:], start=1):
        state, step = _take(model, state, k, ai, fp)
        trace.append(step)
    return trace


def extend_along(model: Any, trace: list[Step], targets: Sequence[int], progress: bool | None,
                 same_edge: Callable[[Any, Any, Any, int], bool] | None = None) -> None:
    """Extend ``trace`` in place through the fingerprints ``targets``.

    Each edge's action index is re-derived: the first action (in
    ``actions`` order) whose successor has the target fingerprint and, if
    ``progress`` is not None, whose ``is_progress`` equals it (and, with
    ``same_edge(state, action, nxt, k)``, that it accepts for the k-th
    target).  Used for the cycle of a livelock lasso and of a fair lasso
    (graph/fair.py), whose edges were recorded as fingerprints only.
    """
    for j, target in enumerate(targets):
        prev = trace[-1]
        k = prev.index + 1
        acts = model.actions(prev.state)
        for ai, action in enumerate(acts):
            nxt = model.step(prev.state, action)
            if nxt is None or state_fingerprint(model, nxt) != target:
                continue
            if progress is not None and bool(model.is_progress(prev.state, action, nxt)) != progress:
                continue
            if same_edge is not None and not same_edge(prev.state, action, nxt, j):
                continue
            _, step = _take(model, prev.state, k, ai, target)
            trace.append(step)
            break
        else:
            raise NondeterministicModel(
                f"nondeterministic model: replay diverged at step {k}: no action from step "
                f"{k - 1} reaches recorded state {format_fp(target)}",
                k,
                expected=target,
            )


def follow(model: Any, init_index: int, targets: Sequence[tuple[int, int]],
           same_edge: Callable[[Any, Any, Any, int], bool] | None = None) -> list[Step]:
    """A trace through the fingerprints of a stored path.

    ``targets`` are ``(fingerprint, action index)`` pairs after the initial
    state ``init_index``. The recorded action index is tried first; a
    stored graph keeps one representative per canonical state, so under a
    symmetry reduction the recorded index may name another action of the
    state actually reached, and the first action (in order) whose successor
    has the target fingerprint -- and, with ``same_edge(state, action, nxt,
    k)``, the same edge data as step k of the stored path -- is taken
    instead. The trace's replay path is therefore always a real run."""
    inits = model.initial_states()
    state = inits[init_index]
    trace = [_initial_step(model, init_index, state, state_fingerprint(model, state))]
    for k, (target, ai) in enumerate(targets, start=1):
        acts = model.actions(state)
        order = ([ai] if 0 <= ai < len(acts) else []) + [i for i in range(len(acts)) if i != ai]
        for i in order:
            nxt = model.step(state, acts[i])
            if nxt is None or state_fingerprint(model, nxt) != target:
                continue
            if same_edge is not None and not same_edge(state, acts[i], nxt, k - 1):
                continue
            state, step = _take(model, state, k, i, target)
            trace.append(step)
            break
        else:
            raise NondeterministicModel(
                f"nondeterministic model: replay diverged at step {k}: no action reaches "
                f"recorded state {format_fp(target)}", k, expected=target)
    return trace


def format_path(trace: Sequence[Step]) -> str:
    """Replay path of a trace, e.g. ``"0/2/1"``."""
    return "/".join(str(s.action_index) for s in trace)


def parse_path(path: str) -> list[int]:
    text = path.strip()
    if not text:
        raise ReplayError("empty replay path")
    try:
        idx = [int(p) for p in text.split("/")]
    except ValueError:
        raise ReplayError(f"bad replay path {path!r}: expected integers separated by '/'") from None
    if any(i < 0 for i in idx):
        raise ReplayError(f"bad replay path {path!r}: negative index")
    return idx


def _replay_once(model: Any, indices: list[int]) -> list[Step]:
    inits = model.initial_states()
    i0 = indices[0]
    if not 0 <= i0 < len(inits):
        raise ReplayError(f"step 0: initial state index {i0} out of range ({len(inits)} initial states)", 0)
    state = inits[i0]
    trace = [_initial_step(model, i0, state, state_fingerprint(model, state))]
    for k, ai in enumerate(indices[1:], start=1):
        state, step = _take(model, state, k, ai, None)
        trace.append(step)
    return trace


def replay(model: Any, path: str | Sequence[int], check_determinism: bool = True) -> list[Step]:
    """Replay a path (string or index list) and return its trace.

    Raises ReplayError if the path is malformed or not a run of the model.
    With ``check_determinism`` the path is replayed a second time and
    NondeterministicModel is raised if the two replays differ.
    """
    indices = parse_path(path) if isinstance(path, str) else list(path)
    if not indices:
        raise ReplayError("empty replay path")
    trace = _replay_once(model, indices)
    if check_determinism:
        again = _replay_once(model, indices)
        for a, b in zip(trace, again):
            if a.fingerprint != b.fingerprint:
                raise NondeterministicModel(
                    f"nondeterministic model: two replays of the same path differ at step "
                    f"{a.index} (action #{a.action_index} '{a.action_text}'): "
                    f"{format_fp(a.fingerprint)} vs {format_fp(b.fingerprint)}",
                    a.index,
                    a.action_index,
                    a.action_text,
                    a.fingerprint,
                    b.fingerprint,
                )
    return trace
