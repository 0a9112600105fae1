"""The SLO checks' specification: `check METRIC <= BOUND;` as read from
the IR or from `--check`, and their words. Imported by the model
(serq/check/model.py checks `queue(POOL)` on its states); the search over
per-request counters is serq/check/slo.py."""

from __future__ import annotations

from dataclasses import dataclass

from serq import ir


@dataclass(frozen=True)
class Slo:
    """One `check METRIC <= BOUND`: the bound is a constant or, for a
    per-request metric, the attribute `attr` of the request's session."""

    metric: str
    bound: int | None
    attr: str | None = None
    pool: int | None = None  # queue: one pool, or None for each pool
    pool_name: str | None = None
    line: int | None = None

    @property
    def per_request(self) -> bool:
        return self.metric != "queue"

    @property
    def text(self) -> str:
        what = f"queue({self.pool_name})" if self.pool_name else self.metric
        return f"{what} <= {self.attr if self.attr is not None else self.bound}"

    @property
    def kind(self) -> str:
        """The violation's kind: `violation (slo ttft)`."""
        return f"slo {self.metric}"

    def where(self) -> str:
        return f"`check {self.text}`" + (f" (line {self.line})" if self.line else "")


def slos_of(program: ir.Program, checks) -> tuple[Slo, ...]:
    """The SLO checks among IR checks."""
    pools = [p.name for p in program.pools]
    out = []
    for c in checks:
        if c.kind != "slo":
            continue
        attr = c.e.name if isinstance(c.e, ir.Name) else None
        bound = c.e.v if isinstance(c.e, ir.Num) else None
        out.append(Slo(c.metric, bound, attr, pools.index(c.pool) if c.pool else None, c.pool,
                       c.at[0] if c.at else None))
    return tuple(out)


def parse_flag(text: str, program: ir.Program) -> ir.Check:
    """`--check 'ttft<=4'` (or `queue(kv)<=2`, `recomputed<=prompt`) as an IR
    check, validated as a `check` line is; a SerqError located in the
    flag's value when it is not one."""
    import re

    from serq.diagnostics import flag_error

    m = re.fullmatch(r"\s*([A-Za-z_]\w*)\s*(?:\(\s*([A-Za-z_]\w*)\s*\))?\s*(<=|<|>=|>|==)\s*([A-Za-z_]\w*|-?\d+)\s*",
                     text)
    if m is None:
        raise flag_error("--check", text, "E012", "expected a property (deadlock, livelock, stuck, invariant, "
                         "completes, sometimes) or an SLO such as ttft<=4, queue(kv)<=2, recomputed<=prompt")
    if m.group(3) != "<=":
        raise flag_error("--check", text, "E012", f"a check bounds a metric from above with <=, got {m.group(3)}",
                         m.start(3) + 1, len(m.group(3)))
    word, col = m.group(4), m.start(4) + 1
    consts = dict(program.consts)
    if re.fullmatch(r"-?\d+", word) or word in consts:
        v = int(word) if word not in consts else consts[word]
        bound: ir.Expr = ir.Num(v=v, at=(1, col))
    else:
        bound = ir.Name(name=word, at=(1, col))
    check = ir.Check(kind="slo", metric=m.group(1), pool=m.group(2), e=bound, at=(1, m.start(1) + 1))
    from serq.lang.validate import Validator

    v = Validator(program, False, True)
    v.slo(check, {})
    errors = [d for d in v.sink.items if d.is_error]
    if errors:
        d = errors[0]
        raise flag_error("--check", text, "E012", d.message, d.col, d.span, d.notes)
    return check.model_copy(update={"at": None})  # a flag's check has no line in the source


def over_text(s: Slo, who: str, v: int) -> str:
    """The words of a count over its bound."""
    bound = f"{s.attr}" if s.attr is not None else f"{s.bound}"
    if s.metric == "ttft":
        what = f"{who}'s request counts {v} iteration{'s' if v != 1 else ''} from its start to its first token"
    elif s.metric == "latency":
        what = f"{who}'s request counts {v} iteration{'s' if v != 1 else ''} from its start"
    elif s.metric == "preemptions":
        what = f"{who}'s request is preempted {'once' if v == 1 else f'{v} times'}"
    else:
        what = f"{who}'s request computes {v} token{'s' if v != 1 else ''} again after a preemption"
    return f"{what}, more than {s.where()} allows ({s.metric} > {bound})"


def queue_violations(slos, state, pool_names) -> list[tuple[str, str]]:
    """`check queue(P) <= K` on one state (a state tuple)."""
    for s in slos:
        if s.per_request:
            continue
        pools = range(len(state.pools)) if s.pool is None else [s.pool]
        for p in pools:
            n = len(state.pools[p].queue)
            if n > s.bound:
                return [(s.kind, f"{n} session{'s wait' if n != 1 else ' waits'} in {pool_names[p]}'s queue, more than "
                                 f"{s.where()} allows")]
    return []
