"""Fuzzing campaign: mutants of the instance library's source and IR JSON
through compile, validate, fmt, run and explore (small budgets). Every
mutant must end in located diagnostics or a result: any other exception
is a crash, counted and printed with its reproducer.

Mutants run in-process in worker processes (bench/supervise.py), forked
warm from this one, one mutant at a time; a mutant still running after
--hang seconds is a hang (its worker is killed and replaced, which no stuck
compiled call can delay), a worker that dies during a mutant is a crash.
Mutant i of a kind is a function of (--seed, kind, i) alone: the same in
any worker, for any --jobs, and made again by --only KIND:i.

    python bench/fuzz.py                     # 100,000 mutants of each kind, 2 workers
    python bench/fuzz.py -n 2000 --seed 7    # quicker
    python bench/fuzz.py --kinds ir          # one kind
    python bench/fuzz.py --no-run            # front end only (much faster)
    python bench/fuzz.py --jobs 4            # four workers: the same mutants and counts
    python bench/fuzz.py --only numeric:79   # one mutant, here, with its traceback

Kinds:
  numeric  a number of an instance replaced by an edge value (0, -1, 2^63,
           10^30, 400 digits, ...), a division by zero, or a huge duration;
  deep     expressions nested deep or wide (parentheses, operator chains, calls,
           conditionals, random trees) at one of nine places, or statements
           nested deep (if, else if, while, repeat); sizes log-uniform from
           1 to 300 and three times in a hundred from 300 to 20,000;
  ir       the compiled IR JSON with one to three leaves replaced (edge
           numbers, wrong types, null), keys deleted, lists cut or doubled;
  text     an instance's text with one to four token-level edits (a token
           deleted, doubled, swapped, replaced or preceded by a keyword,
           punctuation or an odd character: quotes, controls, a BOM, an
           emoji), a line doubled or deleted, or the text cut short.

The same generators drive tests/lang/test_fuzz_pipeline.py (hypothesis, a few
hundred mutants); this campaign is not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import hashlib
import json
import math
import os
import random
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.supervise import DONE, ERROR, HANG, supervise  # noqa: E402
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
        from serq.lang.load import load_text

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


_TOKENS = ["{", "}", "(", ")", ";", ",", "=", "..", "x", "in", "if", "else", "while", "hold", "draw", "let", "set",
           "spawn", "join", "turn", "end", "session", "pool", "stage", "workload", "check", "const", "every", "take",
           "reserve", "growing", "prefill", "decode", "cap", "block", "//", "/*", "*/", "\"", "'", "\\", "@",
           "#", "$", "\t", "\r", "\x00", "\u00e9", "\u200b", "\ufeff", "\U0001f600", "1e999", "0x10", "-", "!", "."]


def _token_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each token of `text`: a run of word characters, or
    one other character that is not a space."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        j = i + 1
        if text[i].isalnum() or text[i] == "_":
            while j < n and (text[j].isalnum() or text[j] in "_."):
                j += 1
        out.append((i, j))
        i = j
    return out


def text_mutant(rng: random.Random) -> str:
    """An instance's text with one to four token-level edits: a token
    deleted, doubled, swapped with another, replaced or preceded by a token
    of the language or an odd character (a quote, a control, a BOM, an
    emoji), a line doubled or deleted, or the text cut short."""
    text = "\n".join(line for line in TEXTS[rng.choice(sorted(TEXTS))].split("\n")
                     if not line.lstrip().startswith("//"))  # the code: edits in comments change nothing
    for _ in range(rng.randint(1, 4)):
        spans = _token_spans(text)
        if not spans:
            break
        op = rng.random()
        a, b = rng.choice(spans)
        if op < 0.2:
            text = text[:a] + text[b:]
        elif op < 0.35:
            text = text[:b] + " " + text[a:b] + text[b:]
        elif op < 0.5:
            c, d = rng.choice(spans)
            if (c, d) != (a, b):
                (a, b), (c, d) = sorted([(a, b), (c, d)])
                if b <= c:
                    text = text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]
        elif op < 0.7:
            text = text[:a] + rng.choice(_TOKENS) + text[b:]
        elif op < 0.85:
            text = text[:a] + rng.choice(_TOKENS) + " " + text[a:]
        elif op < 0.95:
            lines = text.split("\n")
            k = rng.randrange(len(lines))
            lines[k:k + 1] = [] if rng.random() < 0.5 else [lines[k], lines[k]]
            text = "\n".join(lines)
        else:
            text = text[: rng.randrange(len(text) + 1)]
    return text


GENERATORS = {"numeric": numeric_mutant, "deep": deep_mutant, "ir": ir_mutant, "text": text_mutant}


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
    from serq.lang.load import load_ir, load_text

    stage = "load"
    try:
        if kind == "ir":
            loaded = load_ir(text, "fuzz.ir.json", explorer=False)
        else:
            loaded = load_text(text, "fuzz.sq")
            stage = "fmt"
            from serq.lang.fmt import format_program_source

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
        from explorer.runtime.limits import LimitReached
        from serq.sim.simulator import SimConfig, Simulator

        try:
            Simulator(prog, SimConfig(max_steps=max_steps, time_limit=time_limit)).run()
        except MemoryError:  # setting up a huge workload: `serq run` says so and exits 13 (the run stops cleanly at one)
            return "out of memory"
        except LimitReached:  # building the model of a huge workload, cut by the time limit: `serq run` exits 13
            return "bound"
        stage = "explore"
        from serq.check.explore import explore
        from serq.lang.validate import validate

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


def mutant(kind: str, seed: int, index: int) -> str:
    """Mutant `index` of `kind`: a function of (seed, kind, index) alone, so
    any mutant is made again without the ones before it, in any process."""
    return GENERATORS[kind](random.Random(f"{seed}:{kind}:{index}"))


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _one(job: tuple[str, int], *, seed: int, run: bool, time_limit: float) -> tuple[str, str, tuple[str, str] | None]:
    """One mutant through the pipeline, in a worker: (outcome, digest of the
    text, (crash, traceback) or None)."""
    kind, index = job
    text = mutant(kind, seed, index)
    digest = _digest(text)
    try:
        return pipeline(kind, text, run=run, time_limit=time_limit), digest, None
    except Crash as c:
        return "CRASH", digest, (str(c), c.tb)


def _excerpt(kind: str, seed: int, index: int, text: str) -> str:
    """What a mutant changed: the lines that differ from its instance (a
    numeric mutant), or its first 400 characters."""
    if kind != "numeric":
        return text[:400]
    name = random.Random(f"{seed}:{kind}:{index}").choice(sorted(TEXTS))  # the generator's first draw
    diff = difflib.unified_diff(TEXTS[name].splitlines(True), text.splitlines(True), name, "mutant", n=0)
    return "".join(diff)[:2000]


def warm_up(kinds: list[str]) -> None:
    """Import and load the compiled code once, in the parent: the workers,
    forked from it, start warm (and so does every replacement)."""
    pipeline("numeric", TEXTS["theorem.sq"], max_states=50, max_steps=50)
    if "ir" in kinds:
        _ir_texts()


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@dataclass
class Tally:
    kind: str
    n: int = 0
    outcomes: Counter = field(default_factory=Counter)
    crashes: Counter = field(default_factory=Counter)  # kind of crash -> count
    found: list = field(default_factory=list)  # (index, what, detail): every crash and hang
    digests: set = field(default_factory=set)
    seconds: float = 0.0
    cpu: float = 0.0  # of the workers, once they have ended
    interrupted: bool = False  # stopped by Ctrl-C: the counts so far

    def line(self, workers: int) -> str:
        rate = self.n / self.seconds if self.seconds else 0.0
        full = f"; 100,000 in ~{100_000 / rate / 60:.0f} min" if rate else ""
        if self.cpu and self.n:  # what the same work needs on `workers` cores of its own
            cores = min(workers, os.cpu_count() or 1)
            full += f", ~{100_000 * self.cpu / self.n / cores / 60:.0f} min on {cores} free core{'s' * (cores > 1)}"
        cpu = f", workers' CPU {self.cpu:.0f} s" if self.cpu else ""
        return (f"{self.kind}: {self.n} mutants{' (interrupted)' * self.interrupted} ({len(self.digests)} distinct) in {self.seconds:.0f} s{cpu}, "
                f"{rate:.1f} mutants/s with {workers} worker{'s' * (workers > 1)}{full}; "
                f"crashes {self.outcomes['CRASH']}, hangs {self.outcomes['HANG']}; "
                + ", ".join(f"{k} {v}" for k, v in self.outcomes.most_common()))


def _count(tally: Tally, kind: str, seed: int, index: int, status: str, value) -> None:
    tally.n += 1
    if status == DONE:
        outcome, digest, crash = value
        tally.digests.add(digest)
        if crash is not None:
            tally.found.append((index, crash[0], crash[1]))
    else:
        tally.digests.add(_digest(mutant(kind, seed, index)))  # the worker never answered: made again here
        if status == HANG:
            outcome = "HANG"
            wall, cpu = value
            spent = f"{wall:.1f} s" if cpu is None else f"{cpu:.1f} s of CPU in {wall:.1f} s"
            tally.found.append((index, f"hang: still running after {spent}, killed", ""))
        else:  # the worker died during the mutant, or the harness itself raised
            outcome = "CRASH"
            crash = value if status == ERROR else (f"worker: {value}", "")
            tally.found.append((index, crash[0], crash[1]))
    tally.outcomes[outcome] += 1
    if outcome == "CRASH":
        tally.crashes[finding_key(tally.found[-1][1])] += 1


def campaign(kind: str, n: int, *, seed: int = 0, workers: int = 2, run: bool = True, time_limit: float = 0.5,
             hang: float = 5.0, address_space: float = 4, every: int = 0, out=sys.stdout) -> Tally:
    """n mutants of `kind` through the pipeline in supervised workers. Every
    crash (an exception that is not a located diagnostic, or a worker that
    died) and every hang (a mutant past `hang` seconds, its worker killed)
    is recorded with its index; the counts do not depend on `workers`."""
    work = functools.partial(_one, seed=seed, run=run, time_limit=time_limit)
    tally = Tally(kind)
    t0, cpu0 = time.perf_counter(), _children_cpu()
    results = supervise(((kind, i) for i in range(n)), work, workers=workers, hang=hang,
                        init=functools.partial(_limit_address_space, address_space))
    try:
        with contextlib.closing(results):  # however the loop ends, no worker is left
            for (_, index), status, value in results:
                _count(tally, kind, seed, index, status, value)
                if every and tally.n % every == 0 and tally.n < n:  # partial counts, for a campaign stopped early
                    tally.seconds = time.perf_counter() - t0
                    print(tally.line(workers), flush=True, file=out)
    except KeyboardInterrupt:
        tally.interrupted = True
    tally.seconds, tally.cpu = time.perf_counter() - t0, _children_cpu() - cpu0  # every worker has been reaped
    tally.found.sort()
    return tally


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=100_000, help="mutants of each kind (default 100,000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--kinds", default="numeric,deep,ir,text")
    ap.add_argument("--no-run", action="store_true", help="compile, validate and fmt only")
    ap.add_argument("--time-limit", type=float, default=0.5, metavar="SEC",
                    help="wall-clock budget of each mutant's run and of its exploration (default 0.5)")
    ap.add_argument("--hang", type=float, default=5.0, metavar="SEC",
                    help="a mutant still running after SEC seconds is a hang: its worker is killed and "
                         "replaced (default 5: ten times --time-limit's default)")
    ap.add_argument("--jobs", type=int, default=2, metavar="N",
                    help="worker processes (default 2); the mutants and the counts are the same for any N")
    ap.add_argument("--only", metavar="KIND:INDEX",
                    help="run one mutant in this process, print it and its outcome or traceback")
    ap.add_argument("--show", type=int, default=5, help="reproducers printed per kind, the first of each distinct finding")
    ap.add_argument("--save", metavar="DIR", help="write every crashing or hanging mutant to DIR/KIND-INDEX.txt, whole")
    ap.add_argument("--every", type=int, default=1000, help="print the counts so far every N mutants")
    ap.add_argument("--address-space", type=float, default=4, metavar="GIB",
                    help="cap each worker's address space (default 4 GiB; 0: none), so that a mutant "
                         "that allocates without bound ends in a MemoryError, not a machine swapping")
    return ap


def finding_key(what: str) -> str:
    """What makes two findings the same: the first two fields of their text
    (the exception's type and place, "hang", "worker")."""
    return ":".join(what.split(":")[:2])


def main(argv: list[str] | None = None) -> int:
    import faulthandler
    import signal

    # Ctrl-C stops a campaign with its counts even where the shell started
    # this process with SIGINT ignored (Python then installs no handler of
    # its own); SIGUSR1 prints every thread's stack (a campaign that seems stuck)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with contextlib.suppress(ValueError, OSError):  # a stderr without a file (captured): no stacks
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    ap = parser()
    args = ap.parse_args(argv)
    kinds = args.kinds.split(",")
    for kind in kinds + ([args.only.partition(":")[0]] if args.only else []):
        if kind not in GENERATORS:
            ap.error(f"unknown kind {kind!r}: the kinds are {', '.join(GENERATORS)}")
    if args.only:
        kind, _, index = args.only.partition(":")
        if not index.isdigit():
            ap.error(f"--only {args.only}: give KIND:INDEX, e.g. numeric:79")
        text = mutant(kind, args.seed, int(index))
        print(text)
        _limit_address_space(args.address_space)  # as in a worker
        try:
            print("outcome:", pipeline(kind, text, run=not args.no_run, time_limit=args.time_limit))
        except Crash as c:
            print(f"CRASH {c}\n{c.tb}")
            return 1
        return 0
    warm_up(kinds)
    found = 0
    for kind in kinds:
        tally = campaign(kind, args.n, seed=args.seed, workers=args.jobs, run=not args.no_run,
                         time_limit=args.time_limit, hang=args.hang, address_space=args.address_space,
                         every=args.every)
        print(tally.line(args.jobs), flush=True)
        for k, v in tally.crashes.most_common():
            print(f"  crash {k}: {v}", flush=True)
        shown: set[str] = set()  # the first reproducer of each distinct finding, as the counts above group them
        for index, what, tb in tally.found:
            text = mutant(kind, args.seed, index)
            if args.save:
                Path(args.save).mkdir(parents=True, exist_ok=True)
                (Path(args.save) / f"{kind}-{index}.txt").write_text(text)
            key = finding_key(what)
            if key not in shown and len(shown) < args.show:
                shown.add(key)
                print(f"--- {kind} #{index} (python bench/fuzz.py --seed {args.seed} --only {kind}:{index}): "
                      f"{what}\n{tb}\n{_excerpt(kind, args.seed, index, text)}\n", file=sys.stderr, flush=True)
        found += len(tally.found)
        if tally.interrupted:
            return 130
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
