"""`check eventually admitted;` and `check eventually done;` (docs/language.md,
"Liveness"; docs/explorer.md, "Starvation under fairness"): serq's side of
the explorer's liveness under fairness (explorer/graph/fair.py).

The subjects are the sessions, by id (the search runs without symmetry
reduction: a session keeps its id along a path). A session *waits*:

* `admitted`: while it is in a pool's queue (a hold not yet admitted, or
  queued again after a preemption);
* `done`: while it has a request under way: it has arrived and is neither
  at a `turn` (the user's move) nor ended.

The fairness classes are the stages (`iterate S` is class S + 1) and the
arrivals (one class, after the stages): the engine keeps iterating and
every session of the workload arrives; the users' replies (`turn`) are
under no fairness (a user may think for ever while other actions go on).
With both goals the sessions are bits 0..31 (admitted) and 32..63
(done); with one, bits 0..63."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from serq import ir
from serq.vocab import EVENTUALLY_GOALS, FAIRNESS

MAX_SUBJECTS = 64
REST_KINDS = ("arrive", "turn", "end")  # a session at one of these has no request under way


@dataclass(frozen=True)
class Eventually:
    """One `check eventually GOAL [under weak|strong]`."""

    goal: str
    strong: bool = False
    line: int | None = None

    @property
    def kind(self) -> str:
        return f"eventually {self.goal}"

    @property
    def text(self) -> str:
        return self.kind + (" under strong" if self.strong else "")

    def where(self) -> str:
        return f"`check {self.text}`" + (f" (line {self.line})" if self.line else "")


def eventually_of(checks) -> tuple[Eventually, ...]:
    """The liveness checks among IR checks."""
    return tuple(Eventually(c.metric, c.fairness == "strong", c.at[0] if c.at else None)
                 for c in checks if c.kind == "eventually")


FLAG = re.compile(r"\s*eventually\s+([A-Za-z_]\w*)\s*(?:under\s+([A-Za-z_]\w*)\s*)?")


def is_flag(text: str) -> bool:
    return isinstance(text, str) and text.strip().startswith("eventually")


def parse_flag(text: str) -> ir.Check:
    """`--check 'eventually admitted'` (or `'eventually done under strong'`)
    as an IR check; a SerqError located in the flag's value when it is
    not one."""
    from serq.diagnostics import did_you_mean, flag_error

    m = FLAG.fullmatch(text)
    if m is None:
        raise flag_error("--check", text, "E012", "expected `eventually admitted` or `eventually done`, optionally "
                         "followed by `under weak` or `under strong`")
    goal, fair = m.group(1), m.group(2)
    if goal not in EVENTUALLY_GOALS:
        raise flag_error("--check", text, "E012", f"unknown goal `{goal}`; the goals are {', '.join(EVENTUALLY_GOALS)}",
                         m.start(1) + 1, len(goal), did_you_mean(goal, list(EVENTUALLY_GOALS)))
    if fair is not None and fair not in FAIRNESS:
        raise flag_error("--check", text, "E012", f"unknown fairness `{fair}`; write `under weak` (the default) or "
                         "`under strong`", m.start(2) + 1, len(fair), did_you_mean(fair, FAIRNESS))
    return ir.Check(kind="eventually", metric=goal, fairness=fair)


def size_error(program: ir.Program, checks) -> str | None:
    """Why the instance is too large for its liveness checks (more
    sessions than subjects, more stages than fairness classes), or None."""
    goals = {e.goal for e in checks.eventually}
    if not goals:
        return None
    limit = MAX_SUBJECTS // len(goals)
    total = sum(w.count for w in program.workload)
    if total > limit:
        return (f"`check eventually` follows at most {limit} sessions{' (two goals)' if len(goals) > 1 else ''}; "
                f"the workload starts {total}")
    if len(program.stages) > 62:
        return f"`check eventually` tells at most 62 stages apart; the instance declares {len(program.stages)}"
    return None  # (spawned sessions are counted as they come: Liveness._too_many)


class Liveness:
    """The FAIR protocol of explorer/model.py for a SerqModel (`sm`)."""

    def __init__(self, sm, eventually: tuple[Eventually, ...], phase):
        """`phase(state, sid)`: the words of a session's phase (serq/check/model.py)."""
        self.sm, self.phase = sm, phase
        self.goals = {e.goal: e for e in eventually}
        self.width = MAX_SUBJECTS // len(self.goals)
        self.offset = {g: (0 if k == 0 else 32) for k, g in enumerate(sorted(self.goals))}  # admitted, then done
        strong = 0
        for g, e in self.goals.items():
            if e.strong:
                strong |= ((1 << self.width) - 1) << self.offset[g]
        self.fair_strong = strong
        self.arrivals = len(sm.m.stages) + 1  # the class of every arrival (a cycle has none)
        progs = sm.m.progs
        width = max(len(p.states) for p in progs)
        self.rest = np.ones((len(progs), width), np.bool_)
        for i, p in enumerate(progs):
            for pc, st in enumerate(p.states):
                self.rest[i, pc] = st.kind in REST_KINDS

    def _too_many(self, n: int) -> None:
        """More sessions than subjects (spawned ones): E601 at the check's line."""
        if n > self.width:
            from serq.diagnostics import Diagnostic, SerqError

            p = self.sm.program
            at = next((c.at for c in p.checks if c.kind == "eventually" and c.at), None) or (0, 0)
            raise SerqError([Diagnostic(at[0], at[1], "E601", f"`check eventually` follows at most {self.width} "
                                        f"sessions; spawns made {n}", file=p.source)])

    # -- the protocol --------------------------------------------------------
    def waiting(self, state) -> int:
        sessions = state.sessions
        self._too_many(len(sessions))
        mask = 0
        if "admitted" in self.goals:
            off = self.offset["admitted"]
            for pool in state.pools:
                for sid in pool.queue:
                    mask |= 1 << (off + sid)
        if "done" in self.goals:
            off = self.offset["done"]
            for sid, s in enumerate(sessions):
                if not self.rest[s.prog, s.pc]:
                    mask |= 1 << (off + sid)
        return mask

    def array_waiting(self, rows: np.ndarray) -> np.ndarray:
        e = self.sm.m.engine
        nsess = e.row_sessions(rows)
        if nsess.shape[0]:
            self._too_many(int(nsess.max()))
        mask = np.zeros(rows.shape[0], np.uint64)
        if "admitted" in self.goals:
            mask |= e.queued_mask(rows) << np.uint64(self.offset["admitted"])
        if "done" in self.goals:
            mask |= e.busy_mask(rows, self.rest) << np.uint64(self.offset["done"])
        return mask

    def fair_class(self, state, action) -> int:
        if action[0] == "iterate":
            return action[1] + 1
        return self.arrivals if action[0] == "arrive" else 0

    def classes(self, acts: np.ndarray) -> np.ndarray:
        """`fair_class` of the kernel's actions (kind, subject, ...): 0
        arrive, 1 turn, 2 iterate."""
        return np.where(acts[:, 0] == 2, acts[:, 1] + 1, np.where(acts[:, 0] == 0, self.arrivals, 0))

    def fair_note(self, ever: int) -> str | None:
        """A goal no session ever waits for holds vacuously: said."""
        out = []
        for g in sorted(self.goals):
            if not ever >> self.offset[g] & ((1 << self.width) - 1):
                what = "waits in a queue" if g == "admitted" else "has a request under way"
                out.append(f"no session ever {what}: {self.goals[g].where()} holds vacuously")
        return "; ".join(out) or None

    def fair_words(self, trace, lasso_start, subject: int) -> tuple[str, str]:
        goal = next(g for g, off in self.offset.items() if off <= subject < off + self.width)
        e = self.goals[goal]
        sid = subject - self.offset[goal]
        sm = self.sm
        entry = trace[lasso_start if lasso_start is not None else -1].state
        who = sm.label(entry, sid)
        if goal == "admitted":
            pools = [sm.m.pools[p].name for p, pool in enumerate(entry.pools) if sid in pool.queue]
            what = f"{who} waits in {pools[0] if pools else 'a'}'s queue for ever"
        else:
            what = f"{who}'s request never finishes ({self.phase(entry, sid)} for ever)"
        fairness = "strong" if e.strong else "weak"
        if lasso_start is None:
            msg = (f"{what}: the run ends after {_steps(len(trace) - 1)} with it waiting (no action is "
                   f"enabled), which {e.where()} forbids")
            return e.kind, msg
        cycle = trace[lasso_start + 1:]
        stages = [sm.m.stages[s.action[1]].name for s in cycle if s.action[0] == "iterate"]
        turns = sorted({sm.label(s.state, s.action[1]) for s in cycle if s.action[0] == "turn"})
        moved = []
        for name in dict.fromkeys(stages):
            k = stages.count(name)
            moved.append(f"{name} iterates {'once' if k == 1 else f'{k} times'}")
        if turns:
            moved.append(f"{', '.join(turns)} repl{'ies' if len(turns) == 1 else 'y'}")
        why = ("a stage that can iterate at every step of it iterates" if fairness == "weak" else
               "a stage that can iterate at some step of it iterates")
        return e.kind, (f"{what}: a cycle of {_steps(len(cycle))}, reached after {_steps(lasso_start)}, "
                        f"in which it waits throughout while {' and '.join(moved) or 'the others move'}; the cycle "
                        f"is {fairness}ly fair (every session has arrived; {why}), so {e.where()} fails")


def _steps(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def judge_lasso(model, trace) -> tuple[int, str, str, int | None] | None:
    """A replayed trace judged as the search judges `check eventually`:
    (end, kind, message, lasso start) when it returns to a state of its
    own (step k to step i) on a cycle fair to every class in which a
    session waits throughout, or ends in a state without successor where
    one waits; else None. `model`: a SerqModel with the FAIR protocol."""
    waits = [model.waiting(st.state) for st in trace]
    seen: dict[int, int] = {}
    for k, st in enumerate(trace):
        i = seen.get(st.fingerprint)
        if i is not None:
            both = -1
            for w in waits[i:k]:
                both &= w
            taken = enabled_all = enabled_any = 0
            first = True
            for j in range(i, k):
                en = _enabled(model, trace[j].state)
                enabled_any |= en
                enabled_all = en if first else enabled_all & en
                first = False
                taken |= 1 << model.fair_class(trace[j].state, trace[j + 1].action)
            taken &= ~1
            for b in range(64):
                if both >> b & 1:
                    need = enabled_any if model.fair_strong >> b & 1 else enabled_all
                    if not need & ~taken:
                        kind, msg = model.fair_words(trace[:k + 1], i, b)
                        return k, kind, msg, i
        seen.setdefault(st.fingerprint, k)
    last = len(trace) - 1
    if waits[last] and not model.actions(trace[last].state):
        b = (waits[last] & -waits[last]).bit_length() - 1
        kind, msg = model.fair_words(trace, None, b)
        return last, kind, msg, None
    return None


def _enabled(model, state) -> int:
    out = 0
    for a in model.actions(state):
        out |= 1 << model.fair_class(state, a)
    return out & ~1

