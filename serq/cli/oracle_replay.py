"""`serq oracle replay`: a counterexample of a vLLM-exact instance, run on
vLLM's own scheduler (docs/vllm.md, "Replaying a counterexample on vLLM").

  serq oracle replay X.SQ CX.json            the counterexample `serq explore X.SQ --json` printed
  serq oracle replay X.SQ --path 0/0/3/...   the run `serq explore X.SQ --replay PATH` prints

Exit codes: 0 vLLM shows the same pattern; 12 (violation) a step differs, or
the ending; 2 bad input (E030: not a vLLM-exact instance, a counterexample of
another instance or that no vLLM scenario says; E024: no oracle environment).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from serq.diagnostics import Diagnostic, SerqError


def register(osub) -> None:
    r = osub.add_parser("replay", help="run a counterexample of a vLLM-exact instance on vLLM's scheduler and "
                                       "say whether vLLM shows the same pattern")
    r.add_argument("instance", help="the instance (as `serq oracle convert` writes it)")
    r.add_argument("counterexample", nargs="?", help="`serq explore INSTANCE --json`'s output (a file)")
    r.add_argument("--path", metavar="PATH", help="a replay path instead (`serq explore --replay PATH`)")
    from serq.defaults import EXPLORE_CHECKS

    r.add_argument("--check", action="append", choices=EXPLORE_CHECKS, metavar="PROPERTY",
                   help="the properties the path is judged by, as `serq explore --check` (default: the instance's "
                        "`check` lines); repeatable")
    r.add_argument("--ties", choices=("all", "seq"), default="all", help="as the exploration had it (default all)")
    r.add_argument("--no-symmetry", action="store_true", help="as the exploration had it")
    r.add_argument("--venv", help="the oracle's environment (default $SERQ_ORACLE_VENV or ~/.cache/serq/vllm-oracle)")
    r.add_argument("--trace", metavar="TRACE", help="compare with this recorded vLLM trace instead of running vLLM")
    r.add_argument("--scenario", metavar="FILE", help="also write the vLLM scenario (JSON)")
    r.add_argument("--save-trace", metavar="FILE", help="also write vLLM's trace (JSON lines)")
    r.set_defaults(func=cmd_replay)


def _err(file: str, msg: str, line: int = 0, col: int = 0, source: str | None = None,
         notes: tuple[str, ...] = (), code: str = "E030") -> SerqError:
    return SerqError([Diagnostic(line, col, code, msg, file=file, notes=notes)], source)


def _read(path: str) -> str:
    from explorer.runtime.infile import NotReadable, read_regular

    try:
        return read_regular(path, 1 << 30).decode("utf-8")
    except NotReadable as e:
        raise _err(path, f"cannot read {path}: {e.reason}", code="E011") from None
    except UnicodeDecodeError as e:
        raise _err(path, f"cannot read {path}: {e}", code="E011") from None


def _from_file(path: str) -> tuple[dict, str]:
    """The counterexample object of `serq explore --json`, and its text."""
    text = _read(path)
    try:
        cx = json.loads(text)
    except json.JSONDecodeError as e:
        raise _err(path, f"not a counterexample: {e.msg}", e.lineno, e.colno, text) from None
    if not isinstance(cx, dict) or cx.get("format") != "serq-explore":
        raise _err(path, "not a counterexample of `serq explore --json` (format serq-explore)", 1, 1, text)
    if not cx.get("replay_path"):
        raise _err(path, f"no counterexample to replay: the exploration's verdict is {cx.get('verdict')}", 1, 1, text,
                   ("replay needs a run: a violation, deadlock or livelock, or give a path with --path",))
    return cx, text


def _same_run(path: str, text: str, mine: dict, theirs: dict) -> None:
    """The file's trace is the replay's, state by state (fingerprints)."""
    a, b = mine["trace"], theirs.get("trace") or []
    for k, (x, y) in enumerate(zip(a, b)):
        if x.get("fingerprint") != y.get("fingerprint"):
            line = _line_of(text, "\"fingerprint\"", k)
            raise _err(path, f"not a counterexample of this instance: its step {k} is another state",
                       line, 1 if line else 0, text,
                       ("was it explored from another instance, or with other --ties or --no-symmetry? give the same",))
    if len(a) != len(b):
        raise _err(path, f"not a counterexample of this instance: it has {len(b) - 1} steps, its path replays "
                         f"{len(a) - 1}", 1, 1, text)


def _line_of(text: str, needle: str, k: int) -> int:
    seen = -1
    for n, line in enumerate(text.splitlines(), 1):
        if needle in line:
            seen += 1
            if seen == k:
                return n
    return 0


def cmd_replay(args) -> int:
    from explorer.trace import ReplayError
    from serq.check.explore import replay_verdict
    from serq.check.tracedata import explore_json
    from serq.cli.exits import EXIT_CODES
    from serq.diagnostics import flag_error
    from serq.lang.load import load_path
    from serq.oracle.compare import TraceError
    from serq.oracle.exact import NotExact
    from serq.oracle.replay import NotExpressible, judge, scenario_of, serq_rows

    if (args.counterexample is None) == (args.path is None):
        raise flag_error("--path", args.path or "", "E012",
                         "give a counterexample file or --path PATH (one of them)")
    if args.trace and args.save_trace:
        raise flag_error("--save-trace", args.save_trace, "E012",
                         "--save-trace writes the trace vLLM gives; with --trace no vLLM runs")
    loaded = load_path(args.instance, explorer=True)
    prog, text = loaded.program, loaded.source
    cx_file = cx_text = None
    path = args.path
    if args.counterexample:
        theirs, cx_text = _from_file(args.counterexample)
        cx_file, path = args.counterexample, theirs["replay_path"]
    try:
        model, r = replay_verdict(prog, path, ties=args.ties, symmetry=not args.no_symmetry, checks=args.check)
    except ReplayError as e:
        raise _err(cx_file or "serq oracle replay", f"bad replay path `{path}`: {e}", code="E013") from None
    cx = explore_json(model, r, with_timing=False, with_stats=False)
    if cx_file:
        _same_run(cx_file, cx_text, cx, theirs)
        if (cx["verdict"], cx["kind"]) != (theirs.get("verdict"), theirs.get("kind")):
            raise _err(cx_file, f"its path replays to the verdict {cx['verdict']} ({cx['kind'] or 'no kind'}), "
                                f"where the file says {theirs.get('verdict')} ({theirs.get('kind') or 'no kind'})",
                       1, 1, cx_text, ("judge it by the properties the exploration checked: --check",))
        cx["message"] = theirs.get("message", cx["message"])
    try:
        plan = scenario_of(cx, text, args.instance)
        serq_by_tick, _ = serq_rows(plan)
    except NotExact as e:
        raise _err(args.instance, f"not a vLLM-exact instance: {e}", e.line, e.col, text, e.notes) from None
    except NotExpressible as e:
        raise _err(cx_file or args.instance, f"the counterexample cannot be run on vLLM: {e}",
                   notes=tuple(e.detail.splitlines())) from None
    scenario_text = json.dumps(plan.scenario, indent=1) + "\n"
    if args.scenario:
        from explorer.runtime.outfile import write_output

        write_output(args.scenario, scenario_text)
    if args.trace:
        trace_file, trace = args.trace, _read(args.trace)
    else:
        trace_file, trace = "vLLM's trace", _run_vllm(_venv_for_replay(args.venv), scenario_text)
        if trace is None:
            return EXIT_CODES["input_error"]
        if args.save_trace:
            from explorer.runtime.outfile import write_output

            write_output(args.save_trace, trace)
    try:
        j = judge(plan, trace, serq_by_tick)
    except TraceError as e:
        raise SerqError([Diagnostic(e.line, e.col, "E025", f"malformed trace: {e}", file=trace_file)], trace) from None
    except (ValueError, KeyError) as e:
        raise _err(trace_file, f"not a trace of this counterexample's scenario: {e}", code="E025") from None
    out = sys.stdout.write
    out(f"counterexample: {plan.verdict} after {plan.steps} engine steps (replay {r.replay_path}): {plan.message}\n"
        "(steps below are vLLM's engine steps: the counterexample's iterations, from 0)\n")
    out(f"scenario: {_settings(plan.scenario)}\n")
    for q in plan.scenario["requests"]:
        when = (f"{q['think_steps']} step(s) after {q['follows']} finishes" if "follows" in q
                else f"at step {q['arrival_step']}")
        out(f"  {q['id']}: prompt {q['prompt_len']}{' more' if 'follows' in q else ''}, "
            f"{q['max_tokens']} tokens, {when}\n")
    if plan.left_out:
        out(f"  left out (not arrived when the counterexample ends): {', '.join(plan.left_out)}\n")
    out(("vLLM: the same pattern\n" if j.same else "vLLM: a different pattern\n")
        + "".join(f"  {x}\n" for x in j.lines))
    if j.difference:
        out(j.difference + "\n")
    if j.after:
        out(j.after + "\n")
    return 0 if j.same else EXIT_CODES["violation"]


def _settings(sc: dict) -> str:
    keys = ("block_size", "num_gpu_blocks", "max_num_batched_tokens", "max_num_scheduled_tokens", "max_num_seqs",
            "enable_prefix_caching", "scheduler_reserve_full_isl", "enable_chunked_prefill",
            "long_prefill_token_threshold", "watermark", "policy", "max_steps")
    return ", ".join(f"{k} {json.dumps(sc[k])}" for k in keys if k in sc)


def _run_vllm(venv: Path, scenario_text: str) -> str | None:
    from serq.oracle.venv import run_driver

    with tempfile.TemporaryDirectory() as d:
        sc = os.path.join(d, "scenario.json")
        Path(sc).write_text(scenario_text)
        p = run_driver(venv, sc, "-")
    if p.returncode not in (0, 3):  # 3: the step cap, which a deadlock's replay reaches on purpose
        err = "\n".join(x for x in p.stderr.splitlines() if "Failed to import from vllm._C" not in x)
        print(err, file=sys.stderr)
        print(f"serq oracle replay: vLLM's driver failed (exit {p.returncode})", file=sys.stderr)
        return None
    return p.stdout


def _venv_for_replay(arg) -> Path:
    from serq.oracle.venv import default_venv, python_of

    venv = Path(arg) if arg else default_venv()
    if not python_of(venv).exists():
        raise _err("serq oracle replay", f"no oracle environment at {venv}: vLLM cannot run the counterexample",
                   code="E024", notes=(
                       "build it with `serq oracle setup [VENV]` (a few minutes: vLLM 0.33.0 without its "
                       "dependencies and a CPU torch, in VENV, default $SERQ_ORACLE_VENV or ~/.cache/serq/vllm-oracle)"
                       ", then give --venv VENV or set SERQ_ORACLE_VENV",
                       "or judge the counterexample against a recorded trace of its scenario: --scenario FILE writes "
                       "the scenario, `serq oracle trace FILE` records vLLM's trace where vLLM is, --trace TRACE "
                       "reads it"))
    return venv
