"""The JSON Schemas of serq's outputs (docs/json.md), built here from
shared parts and written to serq/schemas/FORMAT.json, each file whole
(no reference to another file):

    python -m serq.schemas.build          # rewrite the files
    python -m serq.schemas.build --check  # exit 1 if a file differs

A test checks that the shipped files are what this module builds. The
IR's schema is pydantic's own (`serq.ir.Program`). Objects list every key
they may have (`additionalProperties: false`): a schema shipped with a
serq describes exactly what that serq prints."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from serq import formats
from serq.defaults import COVERAGE_KINDS

DRAFT = "https://json-schema.org/draft/2020-12/schema"
HERE = Path(__file__).resolve().parent

STR, INT, BOOL, NUM = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {"type": "number"}
NULL = {"type": "null"}


def opt(s: dict) -> dict:
    """`s` or null."""
    return {"anyOf": [s, NULL]}


def arr(s: dict) -> dict:
    return {"type": "array", "items": s}


def obj(required: dict, optional: dict | None = None, desc: str | None = None) -> dict:
    """An object with these keys (required ones, then optional ones), and no other."""
    d = {"type": "object", "properties": {**required, **(optional or {})}, "required": list(required),
         "additionalProperties": False}
    if desc:
        d["description"] = desc
    return d


def head(fmt: str) -> dict:
    return {"format": {"const": fmt}, "version": {"const": formats.VERSIONS[fmt]}}


def ref(name: str) -> dict:
    return {"$ref": f"#/$defs/{name}"}


VERDICT = {"enum": ["pass", "deadlock", "livelock", "violation", "bound", "interrupted", "inconclusive", "failed"]}

WARNING = obj({"code": STR, "message": STR, "file": STR, "line": INT, "col": INT, "notes": arr(STR)},
              desc="a warning the command also printed on stderr; line 0 when it has no place")

# ---------------------------------------------------------------- a trace as data (serq/check/tracedata.py)

SESSION = obj({
    "session": STR, "program": STR,
    "at": {"type": "string", "description": "the kind of the program's state: arrive, acquire, run, turn, join, end, ..."},
    "line": opt(INT),
    "phase": {"enum": ["not-arrived", "queued", "preempted", "prefill", "decode", "turn", "join", "done", "other"]},
    "run": opt(obj({"phase": {"enum": ["prefill", "decode"]}, "done": INT, "total": INT, "stage": STR})),
    "queue": opt(obj({"pool": STR, "position": opt(INT)})),
    "holds": arr(obj({"pool": STR, "own": INT, "use": INT})),
    "parent": opt(STR), "children": INT,
    "attrs": {"type": "object", "additionalProperties": {"type": ["integer", "number", "string", "boolean"]}},
    "stuck": BOOL,
})

POOL = obj({"pool": STR, "cap": opt(INT), "free": opt(INT), "allocated": INT, "cached": INT,
            "cache": arr(obj({"owner": opt(STR), "prefix": opt(STR), "units": INT})), "queue": arr(STR)})

STATE = obj({"sessions": arr(ref("session")), "pools": arr(ref("pool")),
             "fault": opt(obj({"kind": STR, "message": STR}))})

EVENT = {
    "type": "object", "required": ["kind"],
    "description": "an event of serq.semantics.events: kind, then its fields (sessions by label, pools by name)",
    "properties": {
        "kind": {"enum": ["arrive", "turn", "at_turn", "end", "joined", "draw", "choose", "spawn", "queued", "stuck",
                          "hit", "drop", "release", "evict", "admit", "preempt", "iterate", "serve", "run_done",
                          "fault"]},
        "session": opt(STR), "child": opt(STR), "pool": opt(STR), "pools": arr(STR), "stage": STR,
        "owner": opt(STR), "prefix": opt(STR), "copies": BOOL,
        "attr": STR, "value": {"type": ["integer", "number", "string", "boolean"]},
        "units": INT, "kept": INT, "why": STR, "tokens": INT, "phase": {"enum": ["prefill", "decode"]},
        "done": opt(INT), "total": opt(INT), "held": opt(INT),
        "shape": {"type": "object", "additionalProperties": INT}, "what": STR, "message": STR,
    },
    "additionalProperties": False,
}

CHANGE = {"type": "object", "required": ["field", "before", "after"],
          "properties": {"session": STR, "pool": STR, "field": STR, "before": {}, "after": {}},
          "additionalProperties": False,
          "description": "a field of a session (`session`), a pool (`pool`) or the state (fault) that changed"}

MOVE = opt({"type": "object", "required": ["kind"], "additionalProperties": False,
            "properties": {"kind": {"enum": ["arrive", "turn", "iterate"]}, "session": opt(STR), "stage": STR}})

STEP_DATA = {"move": MOVE, "events": arr(ref("event")), "state": ref("state"), "changes": arr(ref("change"))}

STEP = obj({"step": INT, "action_index": INT, "action": opt(STR), "diff": arr(STR), "events": arr(ref("event")),
            "fingerprint": STR, "move": MOVE, "state": ref("state"), "changes": arr(ref("change"))})

HOLDERS = {"holders": arr(obj({"session": STR, "units": INT})), "pinned": INT}

WANT = obj({"pool": STR, "reuse": INT, "needs": INT, "takes": INT, "obtainable": opt(INT), "short": BOOL,
            "block": INT, "cap": opt(INT)},
           {"free": INT, "evictable": INT, "reused": INT,
            "blocks": obj({"needs": INT, "obtainable": INT, "cap": INT}), "fits_alone": BOOL, **HOLDERS})

BLOCKED = opt(obj({
    "waiting": arr(obj({"session": STR, "behind": opt(STR), "admit_if": opt(STR), "fault": opt(STR),
                        "pools": arr(ref("want")), "text": STR})),
    "growers": arr(obj({"session": STR, "pool": STR, "free": INT, "evictable": INT, "block": INT, **HOLDERS,
                        "text": STR})),
    "wait_for_cycle": opt(arr(obj({"waiter": STR, "waits_for": STR, "via": STR}))),
}))

NO_RETURN = obj({"status": {"enum": ["step", "initial", "none", "unknown"]}, "step": opt(INT), "action": opt(STR),
                 "doomed_states": INT, "states": INT, "bound_reason": opt(STR), "method": {"enum": ["graph", "forward"]},
                 "searched_states": opt(INT), "cut_by": opt(STR), "text": opt(STR)})

STATS = obj({"generated": INT, "distinct": INT, "queue": INT, "max_depth": INT, "workers": INT, "strategy": STR},
            {"collision_probability": NUM, "exact": BOOL, "elapsed": NUM, "states_per_sec": NUM})

COVERAGE = obj({
    "complete": {"type": "boolean", "description": "the search explored every reachable transition"},
    "transitions": INT,
    "counts": obj({k: INT for k in COVERAGE_KINDS}, desc="per kind of event: the explored transitions that had it"),
    "witnesses": {"type": "object", "description": "per kind asked (--witness): a shortest trace whose last step "
                  "has it, null when no explored transition had it",
                  "additionalProperties": opt(obj({"replay_path": STR, "steps": INT, "trace": arr(ref("step"))}))},
}, desc="`--coverage` (serq/check/coverage.py, docs/explorer.md)")
SOMETIMES = obj({"line": INT, "condition": STR,
                 "verdict": {"enum": ["witness", "never", "bound", "interrupted", "failed", "violation"]},
                 "message": STR, "exit_code": INT, "replay_path": opt(STR), "trace": arr(ref("step")),
                 "stats": STATS},
                desc="a `check sometimes` line's verdict: its shortest witness (trace), or never, or cut by a limit")

TRACE_DEFS = {"session": SESSION, "pool": POOL, "state": STATE, "event": EVENT, "change": CHANGE}


def explore_body() -> dict:
    return obj({**head(formats.EXPLORE), "verdict": VERDICT, "kind": opt(STR), "message": STR, "exit_code": INT,
                "bound_reason": opt(STR), "replay_path": opt(STR), "lasso_start": opt(INT),
                "trace": arr(ref("step")), "diagnosis": arr(STR), "warnings": arr(ref("warning")),
                "blocked": BLOCKED},
               {"point_of_no_return": NO_RETURN, "stats": STATS, "coverage": COVERAGE,
                "sometimes": arr(SOMETIMES)})


EXPLORE_DEFS = {**TRACE_DEFS, "step": STEP, "want": WANT, "warning": WARNING}


def explore() -> dict:
    return {**explore_body(), "$defs": EXPLORE_DEFS}


def worst() -> dict:
    step = obj({"step": INT, "action_index": INT, "action": opt(STR), "diff": arr(STR), "fingerprint": STR},
               STEP_DATA)
    return {**obj({**head(formats.WORST), "metric": STR, "unit": STR, "what": STR, "value": opt(INT),
                   "unbounded": BOOL, "subject": STR, "complete": BOOL, "bound_reason": opt(STR), "exit_code": INT,
                   "counted": arr(obj({"step": INT, "amount": INT})), "lasso_start": opt(INT), "replay_path": STR,
                   "states": INT, "request_from": opt(INT), "text": STR, "warnings": arr(ref("warning")),
                   "trace": arr(ref("wstep"))}),
            "$defs": {**TRACE_DEFS, "wstep": step, "warning": WARNING}}


def prob() -> dict:
    """serq explore --probability / --expected (serq/check/probreport.py)."""
    side = obj({"total": opt(NUM), "total_exact": opt(STR), "subjects": opt(NUM), "mean": opt(NUM),
                "mean_exact": opt(STR), "total_lower": opt(NUM), "total_upper": opt(NUM), "infinite": BOOL},
               desc="under one scheduler: the expected sum over a run, the expected subjects it divides by, their "
               "quotient (null: infinite or no upper bound proven); exact: a rational as text; lower and upper: "
               "the proven interval on a graph with cycles (else null)")
    event = obj({"event": STR, "what": STR, "best": opt(NUM), "worst": opt(NUM), "best_exact": opt(STR),
                 "worst_exact": opt(STR), "best_lower": opt(NUM), "best_upper": opt(NUM), "worst_lower": opt(NUM),
                 "worst_upper": opt(NUM)})
    expected = obj({"metric": STR, "unit": STR, "what": STR, "per": {"enum": ["request", "session", "run"]},
                    "best": side, "worst": side, "worst_case": opt(INT), "worst_case_unbounded": BOOL})
    draw = obj({"program": STR, "line": INT, "attr": STR, "distribution": STR, "values": arr(NUM),
                "probabilities": arr(NUM), "probabilities_exact": opt(arr(STR)), "kept": opt(NUM),
                "truncation": {"enum": ["none", "renormalized"]}})
    arith = obj({"method": {"enum": ["exact", "recursion", "interval-iteration"]}, "epsilon": opt(NUM),
                 "proven": BOOL, "rounding": opt(NUM), "sweeps": INT, "text": STR})
    return {**obj({**head(formats.PROB), "events": arr(event), "expected": opt(expected), "draws": arr(draw),
                   "arithmetic": arith, "states": INT, "edges": INT, "complete": BOOL, "bound_reason": opt(STR),
                   "exit_code": INT, "text": STR, "warnings": arr(ref("warning"))}),
            "$defs": {"warning": WARNING}}


def theorem() -> dict:
    hyp = obj({"code": STR, "name": STR, "text": STR, "holds": BOOL, "witnesses": arr({})})
    return {**obj({**head(formats.THEOREM), "theorem": STR, "exit_code": INT, "hypotheses": arr(hyp),
                   "warnings": arr(ref("warning")), "exploration": ref("explore")}),
            "$defs": {**EXPLORE_DEFS, "explore": explore_body()}}


SUMMARY = obj({"n": INT, "p50": opt(INT), "p99": opt(INT)}, {"mean": opt(NUM)})
AT = obj({"at_ns": INT, "kind": STR, "message": STR})


def report(fmt: str) -> dict:
    pool = obj({"name": STR, "cap": opt(INT), "block": INT, "peak": INT, "mean": NUM, "preemptions": INT,
                "evicted_units": INT, "hit_units": INT, "queue_wait_ns": ref("summary"), "stuck": INT})
    stage = obj({"name": STR, "iterations": INT, "tokens": INT, "busy_ns": INT, "busy_fraction": NUM,
                 "coalescing": STR})
    program = obj({"name": STR, "sessions": INT, "ended": INT, "ttft_ns": ref("summary"), "e2e_ns": ref("summary"),
                   "tokens": INT, "tokens_per_s": opt(NUM)}, {"tokens_per_iteration": NUM})
    keys = {**head(fmt), "instance": STR, "seed": INT, "horizon_ns": opt(INT), "warmup_ns": INT, "coalesce": BOOL,
            "time_unit": {"enum": ["ns", "iteration"]}, "stopped": STR, "simulated_ns": INT,
            "iterations_simulated": INT, "iterations_evaluated": INT, "pools": arr(pool), "stages": arr(stage),
            "programs": arr(program), "faults": arr(ref("at")), "violations": arr(ref("at")),
            "violations_total": INT, "stalled": arr(STR), "checks": arr(STR), "warnings": arr(ref("warning"))}
    if fmt == formats.CHECK:
        keys.update(verdict=VERDICT, exit_code=INT, lines=arr(STR))
    return {**obj(keys), "$defs": {"summary": SUMMARY, "at": AT, "warning": WARNING}}


def sweep() -> dict:
    cworst = obj({"value": opt(INT), "unbounded": BOOL, "complete": BOOL, "bound_reason": opt(STR), "text": STR,
                  "error": opt(STR)})
    cell = {"verdict": {"anyOf": [VERDICT, {"const": "error"}]}, "kind": opt(STR), "message": STR, "exit_code": INT,
            "states": INT, "warnings": arr(ref("warning"))}
    more = {"worst": {"type": "object", "additionalProperties": ref("cworst")}, "outcome": opt({"enum": ["pass", "fail"]})}
    at = {"type": "object", "additionalProperties": INT}
    pair = {"type": "array", "items": at, "minItems": 2, "maxItems": 2}
    keys = {**head(formats.SWEEP), "consts": arr(obj({"name": STR, "lo": INT, "hi": INT})), "metrics": arr(STR),
            "requirement": opt(obj({"text": STR, "clauses": arr(STR)})), "met": opt(INT), "quantifier": {"enum": ["every", "some"]}, "exit_code": INT,
            "mode": {"enum": ["all", "bisect"]}, "interrupted": opt(STR), "failed": opt(STR)}
    one = {"const": STR, "lo": INT, "hi": INT, "rows": arr(obj({"value": INT, **cell}, more)),
           "monotone": opt(BOOL), "last_fail": opt(INT), "first_pass": opt(INT), "note": STR,
           "counterexample": opt(obj({"value": INT, "result": ref("explore")}))}
    grid = {"cells": arr(obj({"at": at, **cell}, more)),
            "monotone": obj({"holds": opt(BOOL), "direction": {"type": "object",
                                                               "additionalProperties": {"enum": ["more", "less"]}},
                             "pairs": arr(pair), "neither": {"type": "object", "additionalProperties": arr(pair)},
                             "text": STR}),
            "boundaries": arr(obj({"row": at, "const": STR, "value": opt(INT), "exact": BOOL})),
            "frontier": arr(at)}
    shape = {"oneOf": [obj({**keys, **one}), obj({**keys, **grid})]}
    return {**shape, "description": "one constant (rows, counterexample) or two or three (cells, frontier)",
            "$defs": {**EXPLORE_DEFS, "explore": explore_body(), "cworst": cworst}}


def schedule() -> dict:
    """The header line; each line after it is an iteration (`iteration` in $defs)."""
    levels = obj({"free": opt(INT), "cached": INT, "evictable": INT, "allocated": INT})
    line = obj({"tick": INT, "stage": STR, "iteration": INT,
                "served": arr({"type": "array", "prefixItems": [STR, INT], "items": False}),
                "admitted": arr(STR), "preempted": arr(STR),
                "hits": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": INT}},
                "finished": arr(STR), "pools": {"type": "object", "additionalProperties": levels}})
    return {**obj({**head(formats.SCHEDULE), "instance": STR, "seed": INT, "coalesce": BOOL,
                   "time_unit": {"enum": ["ns", "iteration"]},
                   "pools": arr(obj({"name": STR, "cap": opt(INT), "block": INT})), "stages": arr(STR)}),
            "description": "the first line of a schedule; every other line is an `iteration` ($defs)",
            "$defs": {"iteration": line}}


def requests() -> dict:
    """The header line of `--requests FILE.jsonl`; each line after it is a `row` ($defs)."""
    from serq.sim.requests import COLUMNS

    t = opt(INT)
    row = obj({"session": STR, "program": STR, "request": INT, "arrival": INT, "admitted": t, "first_token": t,
               "finish": t, "ttft": t, "latency": t, "preemptions": INT, "recomputed": INT, "cached": INT})
    assert list(row["properties"]) == list(COLUMNS)
    return {**obj({**head(formats.REQUESTS), "instance": STR, "seed": INT,
                   "time_unit": {"enum": ["ns", "iteration"]}, "columns": {"const": list(COLUMNS)}}),
            "description": "the first line of a requests file (.jsonl); every other line is a `row` ($defs)",
            "$defs": {"row": row}}


def diff() -> dict:
    ab = {"enum": ["a", "b"]}

    def side(s: dict) -> dict:
        return obj({"a": s, "b": s})

    move = obj({"moved": BOOL, "action": STR, "diff": arr(STR)}, desc="what one variant did in a joint step")
    step = obj({"step": INT, "action": STR}, {"a": move, "b": move})
    difference = obj({"fails": ab, "completes": ab, "how": STR, "message": STR, "text": STR,
                      "lasso_start": opt(INT), "diagnosis": arr(STR), "replay": side(STR), "steps": arr(step)})
    direction = obj({"above": ab, "below": ab, "difference": INT, "subject": STR, "a": INT, "b": INT,
                     "steps": arr(step)})
    worst_ = obj({"metric": STR, "unit": STR, "states": INT, "complete": BOOL, "bound_reason": opt(STR),
                  "alone": side({"type": "object", "description": "a variant's own --worst (serq-worst's body)"}),
                  "unbounded": arr(ab), "directions": arr(opt(direction))})
    keys = {**head(formats.DIFF), "verdict": {"enum": ["same", "differ", "bound", "interrupted"]}, "exit_code": INT,
            "text": STR, "files": side(STR), "verdicts": side(obj({"verdict": STR, "message": STR, "states": INT})),
            "ties": {"enum": ["seq", "all"]}, "states": INT, "complete": BOOL, "bound_reason": opt(STR),
            "notes": arr(STR), "warnings": side(arr(ref("warning"))), "differences": arr(difference)}
    return obj(keys, {"worst": worst_})


def ir() -> dict:
    from serq.ir import Program

    s = Program.model_json_schema()
    return {"$schema": DRAFT, **{k: v for k, v in s.items() if k != "$schema"}}


BUILDERS = {formats.EXPLORE: explore, formats.WORST: worst, formats.THEOREM: theorem,
            formats.RUN: lambda: report(formats.RUN), formats.CHECK: lambda: report(formats.CHECK),
            formats.SWEEP: sweep, formats.SCHEDULE: schedule, formats.REQUESTS: requests, formats.IR: ir,
            formats.DIFF: diff, formats.PROB: prob}


def build(fmt: str) -> dict:
    s = BUILDERS[fmt]()
    if fmt == formats.IR:
        return s
    return {"$schema": DRAFT, "title": fmt, **s}


def text(fmt: str) -> str:
    return json.dumps(build(fmt), indent=1) + "\n"


def shape(schema: dict) -> dict:
    """The keys of a schema's objects, by definition: what `--check`
    compares for the IR, whose schema pydantic writes (another pydantic
    may word the same schema otherwise)."""
    defs = {"": schema, **schema.get("$defs", {})}
    return {name: sorted(d.get("properties", {})) for name, d in defs.items()}


def current(fmt: str, path: Path, want: str) -> bool:
    if not path.exists():
        return False
    if fmt == formats.IR:
        return shape(json.loads(path.read_text())) == shape(json.loads(want))
    return path.read_text() == want


def main(argv: list[str]) -> int:
    stale = []
    for fmt in BUILDERS:
        path = HERE / f"{fmt}.json"
        want = text(fmt)
        if not current(fmt, path, want):
            stale.append(path.name)
            if "--check" not in argv:
                path.write_text(want)
    if stale:
        print(("stale: " if "--check" in argv else "wrote: ") + ", ".join(stale))
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
