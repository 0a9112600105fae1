"""Fuzzing campaign: mutants of the instance library's source and IR JSON
through compile, validate, fmt, run and explore (small budgets). Every
mutant must end in located diagnostics or a result: any other exception
is a crash, counted and printed with its reproducer.

    python bench/fuzz.py                     # 100,000 mutants of each kind
    python bench/fuzz.py -n 2000 --seed 7    # quicker
    python bench/fuzz.py --kinds ir          # one kind
    python bench/fuzz.py --no-run            # front end only (much faster)
    python bench/fuzz.py --jobs 4            # four processes: the same mutants and counts

Kinds:
  numeric  a number of an instance replaced by an edge value (0, -1, 2^63,
           10^30, 400 digits, ...), a division by zero, or a huge duration;
  deep     expressions nested deep or wide (parentheses, operator chains, calls,
           conditionals, random trees) at one of nine places, or statements
           nested deep (if, else if, while, repeat); sizes log-uniform from
           1 to 300 and three times in a hundred from 300 to 20,000;
  ir       the compiled IR JSON with one to three leaves replaced (edge
           numbers, wrong types, null), keys deleted, lists cut or doubled.

The same generators drive tests/test_fuzz_pipeline.py (hypothesis, a few
hundred mutants); this campaign is not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from serq.diagnostics import SerqError  # noqa: E402

TEXTS = {p.name: p.read_text() for p in sorted((ROOT / "instances").glob("*.sq"))}

EDGE_INTS = ["0", "1", "-1", "2", "255", "65535", "2147483647", "2147483648", "9223372036854775807",
             "9223372036854775808", "18446744073709551616", "1000000", "1000000000000000000000000000000",
             "9" * 40, "9" * 400, "(1 / 0)", "(1 % 0)", "floor(1 / 0)", "(0 - 1)", "(-9223372036854775807 - 1)"]
EDGE_TIMES = ["0s", "1ns", "999999999999s", "9" * 30 + "s", "0.000001ns", "1e9", "18446744073709551616ms"]


def _numbers(text: str) -> list[tuple[int, int]]:
    """(start, end) of every integer literal of `text` (not inside names)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c.isdigit() and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            j = i
            while j < n and (text[j].isdigit() or text[j] == "."):
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return out


def numeric_mutant(rng: random.Random) -> str:
    """An instance with one to three numbers replaced by edge values."""
    text = TEXTS[rng.choice(sorted(TEXTS))]
    for _ in range(rng.randint(1, 3)):
        spots = _numbers(text)
        if not spots:
            break
        a, b = rng.choice(spots)
        unit = b < len(text) and text[b].isalpha()
        edge = rng.choice(EDGE_TIMES if unit and rng.random() < 0.5 else EDGE_INTS)
        if unit and edge[-1].isalpha():  # the edge brings its own unit
            u = b
            while u < len(text) and text[u].isalpha():
                u += 1
            b = u
        text = text[:a] + edge + text[b:]
    return text


def _size(rng: random.Random) -> int:
    """How deep or wide: log-uniform from 1 to 300 (both sides of the
    limits, 64 nested operations and 100 nested blocks), and three times in
    a hundred from 300 to 20,000 (far past them, where the front end must
    stay linear)."""
    lo, hi = (300, 20_000) if rng.random() < 0.03 else (1, 300)
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


_ATOMS = ["1", "2", "0", "g", "A", "x", "true", "false", "1.5", "3ms"]
_BINOPS = [" + ", " - ", " * ", " / ", " % ", " == ", " < ", " >= ", " != ", " and ", " or "]
_CALLS = ["floor", "ceil", "min", "max", "abs"]


def _expr(rng: random.Random, n: int) -> str:
    """An expression of about n operations: a chain, a nest or a random tree."""
    shape = rng.choice(["parens", "chain", "neg", "not", "calls", "cond", "tree", "args"])
    op = rng.choice(_BINOPS)
    atom = rng.choice(_ATOMS)
    if shape == "parens":
        return "(" * n + atom + ")" * n
    if shape == "chain":
        return op.join(rng.choice(_ATOMS) if rng.random() < 0.3 else atom for _ in range(n + 1))
    if shape == "neg":
        return "-" * n + atom if rng.random() < 0.5 else "-(" * n + atom + ")" * n
    if shape == "not":
        return "not " * n + "true"
    if shape == "calls":
        fn = rng.choice(_CALLS)
        two = fn in ("min", "max")
        return (fn + "(") * n + atom + (", 1)" if two else ")") * n
    if shape == "cond":
        return "".join(f"{rng.choice(_ATOMS)} if {rng.choice(['true', 'g < 1', 'false'])} else " for _ in range(n)) + atom
    if shape == "args":
        return rng.choice(["min", "max"]) + "(" + ", ".join(rng.choice(_ATOMS) for _ in range(n + 1)) + ")"
    # a random tree of n operations: nested where the dice say, chained elsewhere
    out = rng.choice(_ATOMS)
    for _ in range(n):
        r = rng.random()
        if r < 0.3:
            out = f"({out}){rng.choice(_BINOPS)}{rng.choice(_ATOMS)}"
        elif r < 0.5:
            out = f"{rng.choice(_ATOMS)}{rng.choice(_BINOPS)}({out})"
        elif r < 0.6:
            out = f"{rng.choice(_CALLS)}({out})" if rng.random() < 0.5 else f"-({out})"
        else:
            out = f"{out}{rng.choice(_BINOPS)}{rng.choice(_ATOMS)}"
    return out


def _body(rng: random.Random, n: int) -> str:
    """Statements nested n deep (if, else if, while, repeat), or n in a row."""
    shape = rng.choice(["if", "elseif", "while", "repeat", "mixed", "flat"])
    if shape == "flat":
        return "turn;\n" * n
    if shape == "elseif":
        return "if g == 0 { turn; }" + "".join(f" else if g == {i} {{ turn; }}" for i in range(1, n)) + "\n"
    heads = {"if": ["if true {"], "while": ["while g < 1 { set g = g + 1;"], "repeat": ["repeat 2 {"],
             "mixed": ["if true {", "repeat 1 {", "while g < 1 { set g = g + 1;", "if g >= 0 { turn; } else {"]}
    opened = [rng.choice(heads[shape]) for _ in range(n)]
    return "\n".join(opened) + "\nturn;\n" + "}\n" * n


def deep_mutant(rng: random.Random) -> str:
    """Deep or wide expressions, or deeply nested statements, in a small
    valid instance, at a random place; sizes from _size, so that almost
    every mutant differs."""
    n = _size(rng)
    if rng.random() < 0.25:
        return (f"const A = 2;\npool kv {{ cap 8; block 2; admit via gpu; }}\nstage gpu {{ budget 4; }}\n"
                f"session s {{\n  let g = 0;\n  hold kv {{ prefill 2 on gpu; {_body(rng, n)} }}\n}}\n"
                "workload { 2 x s; }\n")
    expr = _expr(rng, n)
    where = rng.choice(["const", "budget", "draw", "let", "cost", "assert", "if", "set", "prefill"])

    def at(place: str, default: str) -> str:
        return expr if where == place else default

    return (f"const A = {at('const', '2')};\n"
            "pool kv { cap 8; block 2; admit via gpu; }\n"
            f"stage gpu {{ budget {at('budget', '4')}; cost {at('cost', '1ms')}; }}\n"
            "session s {\n"
            f"  let g = {at('let', '0')};\n"
            f"  draw x in {{1, {at('draw', '2')}}};\n"
            f"  set g = {at('set', 'g + 1')};\n"
            f"  if {at('if', 'g > 0')} {{ turn; }}\n"
            f"  assert {at('assert', 'g >= 0')};\n"
            f"  hold kv {{ prefill {at('prefill', '2')} on gpu; turn; }}\n"
            "}\nworkload { 2 x s; }\n")


_IR_CACHE: dict[str, str] = {}


def _ir_texts() -> dict[str, str]:
    if not _IR_CACHE:
        from serq.load import load_text

        for name, text in TEXTS.items():
            try:
                _IR_CACHE[name] = load_text(text, name).program.to_json()
            except SerqError:
                continue
    return _IR_CACHE


EDGE_VALUES = [0, -1, 1, 2**31, 2**63, 2**64, -10**30, 10**30, 1e300, -1e300, 0.5, True, False, None, "",
               "4", "x" * 300, [], {}, [0], {"k": 1}]


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, path + (k,))
        yield path, node
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, path + (i,))
        yield path, node
    else:
        yield path, node


def _set(root, path, value):
    node = root
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


def ir_mutant(rng: random.Random) -> str:
    """The IR JSON of an instance with one to three structural edits."""
    texts = _ir_texts()
    doc = json.loads(texts[rng.choice(sorted(texts))])
    for _ in range(rng.randint(1, 3)):
        spots = [(p, v) for p, v in _leaves(doc) if p]
        path, value = rng.choice(spots)
        op = rng.random()
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if op < 0.55:
            _set(doc, path, rng.choice(EDGE_VALUES))
        elif op < 0.7 and isinstance(parent, dict):
            del parent[path[-1]]
        elif op < 0.85 and isinstance(value, list) and value:
            _set(doc, path, value[: rng.randint(0, len(value) - 1)] if rng.random() < 0.5 else value + value[:1])
        elif isinstance(value, int) and not isinstance(value, bool):
            _set(doc, path, value + rng.choice([-1, 1, -value - 1, 10**6]))
        else:
            _set(doc, path, rng.choice(EDGE_VALUES))
    return json.dumps(doc)


GENERATORS = {"numeric": numeric_mutant, "deep": deep_mutant, "ir": ir_mutant}


class Crash(Exception):
    def __init__(self, stage: str, exc: BaseException) -> None:
        super().__init__(f"{stage}: {type(exc).__name__}: {exc}"[:300])
        self.stage = stage
        self.tb = traceback.format_exc()


def pipeline(kind: str, text: str, *, run: bool = True, max_states: int = 200, max_steps: int = 200,
             time_limit: float = 2.0) -> str:
    """Compile, validate, fmt, run and explore one mutant. Returns how it
    ended ("rejected", or the explorer's verdict); raises Crash on anything
    but located diagnostics."""
    from serq.load import load_ir, load_text

    stage = "load"
    try:
        if kind == "ir":
            loaded = load_ir(text, "fuzz.ir.json", explorer=False)
        else:
            loaded = load_text(text, "fuzz.sq")
            stage = "fmt"
            from serq.fmt import format_program_source

            format_program_source(text, "fuzz.sq")
    except SerqError as e:
        for d in e.diagnostics:
            if kind != "ir" and not (d.line >= 1 and d.col >= 1):
                raise Crash(stage, AssertionError(f"unlocated diagnostic {d.code}: {d.message}")) from None
        return "rejected"
    except RecursionError as e:  # noqa: B014 - a crash, reported as such
        raise Crash(stage, e) from None
    except Exception as e:  # noqa: BLE001 - any other exception is what the fuzzer looks for
        raise Crash(stage, e) from None
    if not run:
        return "accepted"
    prog = loaded.program
    try:
        stage = "run"
        from serq.sim import SimConfig, Simulator

        try:
            Simulator(prog, SimConfig(max_steps=max_steps, time_limit=time_limit)).run()
        except MemoryError:  # setting up a huge workload: `serq run` says so and exits 13 (the run stops cleanly at one)
            return "out of memory"
        stage = "explore"
        from serq.exploration import explore
        from serq.validate import validate

        if any(d.severity == "error" for d in validate(prog, explorer=True)):
            return "not explorable"
        r = explore(prog, max_states=max_states, time_limit=time_limit, graph_limit=0)
        return r.verdict
    except SerqError:
        return "rejected"
    except Exception as e:  # noqa: BLE001
        raise Crash(stage, e) from None


def _limit_address_space(gib: float) -> None:
    if gib > 0:
        import resource

        cap = int(gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def _one(job: tuple) -> tuple[str, tuple[str, str] | None]:
    """One mutant through the pipeline: (outcome, (crash, traceback) or None)."""
    kind, text, run, time_limit = job
    try:
        return pipeline(kind, text, run=run, time_limit=time_limit), None
    except Crash as c:
        return "CRASH", (str(c), c.tb)


def _jobs(kind: str, seed: int, n: int, run: bool, time_limit: float):
    rng = random.Random(seed)
    gen = GENERATORS[kind]
    for _ in range(n):
        yield kind, gen(rng), run, time_limit


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100_000, help="mutants of each kind (default 100,000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default="numeric,deep,ir")
    ap.add_argument("--no-run", action="store_true", help="compile, validate and fmt only")
    ap.add_argument("--time-limit", type=float, default=2.0, metavar="SEC",
                    help="wall-clock budget of each mutant's run and of its exploration (default 2)")
    ap.add_argument("--jobs", type=int, default=1, metavar="N",
                    help="processes (default 1); the mutants and the counts are the same for any N")
    ap.add_argument("--show", type=int, default=5, help="reproducers printed per kind")
    ap.add_argument("--save", metavar="DIR", help="write every crashing mutant to DIR/KIND-INDEX.txt, whole")
    ap.add_argument("--every", type=int, default=1000, help="print the counts so far every N mutants")
    ap.add_argument("--address-space", type=float, default=4, metavar="GIB",
                    help="cap each process's address space (default 4 GiB; 0: none), so that a mutant "
                         "that allocates without bound ends in a MemoryError, not a machine swapping")
    args = ap.parse_args()
    _limit_address_space(args.address_space)
    pool = None
    if args.jobs > 1:
        import multiprocessing

        pool = multiprocessing.get_context("fork").Pool(args.jobs, _limit_address_space, (args.address_space,))
    total_crashes = 0
    try:
        for kind in args.kinds.split(","):
            if kind not in GENERATORS:
                ap.error(f"unknown kind {kind!r}: the kinds are {', '.join(GENERATORS)}")
            outcomes: Counter = Counter()
            crashes: Counter = Counter()
            distinct: set = set()
            shown = 0
            t0 = time.perf_counter()
            jobs = _jobs(kind, args.seed, args.n, not args.no_run, args.time_limit)
            results = pool.imap(_one, jobs, chunksize=8) if pool else map(_one, jobs)
            regen = _jobs(kind, args.seed, args.n, False, 0)  # the same texts again, for the reproducers
            for i, (outcome, crash) in enumerate(results):
                if i and i % args.every == 0:  # partial counts, for a campaign stopped early
                    print(f"{kind}: {i} mutants ({len(distinct)} distinct) in {time.perf_counter() - t0:.0f} s; "
                          + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()), flush=True)
                text = next(regen)[1]
                distinct.add(hash(text))
                outcomes[outcome] += 1
                if crash is None:
                    continue
                msg, tb = crash
                key = ":".join(msg.split(":")[0:2])
                crashes[key] += 1
                if args.save:
                    Path(args.save).mkdir(parents=True, exist_ok=True)
                    (Path(args.save) / f"{kind}-{i}.txt").write_text(text)
                if shown < args.show and crashes[key] == 1:
                    shown += 1
                    print(f"--- {kind} #{i}: {msg}\n{tb}\n{text[:400]}\n", file=sys.stderr, flush=True)
            dt = time.perf_counter() - t0
            total_crashes += outcomes["CRASH"]
            print(f"{kind}: {args.n} mutants ({len(distinct)} distinct) in {dt:.0f} s; "
                  + ", ".join(f"{k} {v}" for k, v in outcomes.most_common()), flush=True)
            for k, v in crashes.most_common():
                print(f"  crash {k}: {v}", flush=True)
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
    return 1 if total_crashes else 0


if __name__ == "__main__":
    sys.exit(main())
