"""`serq oracle`: vLLM's own scheduler as an oracle (docs/vllm.md).

  serq oracle setup [VENV]                 build the oracle's environment (vLLM --no-deps, CPU torch)
  serq oracle trace SCENARIO [-o TRACE]    run vLLM's scheduler on a scenario, write its trace (JSON lines)
  serq oracle convert SCENARIO [-o X.sq]   the scenario as a serq instance
  serq oracle compare SCENARIO TRACE       run serq on the converted instance and compare step by step
  serq oracle replay X.sq CX.json          run a counterexample of a vLLM-exact instance on vLLM's scheduler

Exit codes: 0 done (compare: every step agrees; replay: the same pattern); 12 compare, replay: a step differs;
2 bad input or no oracle environment; 13 trace: vLLM hit the step cap before
every request finished.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from serq.cli.exits import EXIT_CODES
from serq.diagnostics import Diagnostic, SerqError
from serq.cli.exits import add_parser

# rows of the one exit-code table (serq/cli/exits.py): a differing step is a violation, the step cap a bound
EXIT_DIFF, EXIT_INPUT, EXIT_CAP = EXIT_CODES["violation"], EXIT_CODES["input_error"], EXIT_CODES["bound"]


def register(sub) -> None:
    o = add_parser(sub, "oracle", help="vLLM's own scheduler as an oracle: set up, trace, convert, compare")
    osub = o.add_subparsers(dest="oracle_command", required=True, metavar="ACTION")
    s = osub.add_parser("setup", help="build the oracle's Python environment (about 2 minutes)")
    s.add_argument("venv", nargs="?", help="where (default $SERQ_ORACLE_VENV or ~/.cache/serq/vllm-oracle)")
    s.add_argument("--vllm-wheel", metavar="WHL", help="install vLLM from this wheel (still without dependencies)")
    s.add_argument("--unpinned", action="store_true", help="do not pin the packages to the tested versions")
    s.set_defaults(func=cmd_setup)
    t = osub.add_parser("trace", help="run vLLM's scheduler on a scenario and write its per-step trace")
    t.add_argument("scenario", help="a scenario (.json, docs/vllm.md)")
    t.add_argument("-o", "--output", default="-", help="the trace file (default stdout)")
    t.add_argument("--venv", help="the oracle's environment (default $SERQ_ORACLE_VENV or ~/.cache/serq/vllm-oracle)")
    t.add_argument("--max-steps", type=int, metavar="N", help="stop after N steps (default 10000)")
    t.add_argument("--full", action="store_true", help="also write the queues and every request's state")
    t.set_defaults(func=cmd_trace)
    c = osub.add_parser("convert", help="write a scenario as a serq instance")
    c.add_argument("scenario")
    c.add_argument("-o", "--output", help="the .sq file (default stdout)")
    c.set_defaults(func=cmd_convert)
    m = osub.add_parser("compare", help="compare a vLLM trace with serq's schedule of the converted scenario")
    m.add_argument("scenario")
    m.add_argument("trace")
    m.add_argument("--no-coalesce", action="store_true", help="run serq without step coalescing")
    m.set_defaults(func=cmd_compare)
    from serq.cli.oracle_replay import register as register_replay

    register_replay(osub)


def _err(file: str, code: str, msg: str, line: int = 0, col: int = 0, source: str | None = None,
         notes: tuple[str, ...] = ()) -> SerqError:
    return SerqError([Diagnostic(line, col, code, msg, file=file, notes=notes)], source)


def load_scenario(path: str) -> dict:
    """A scenario file, checked; bad input is a located E023."""
    from serq.oracle.driver import ScenarioError, check_scenario

    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise _err(path, "E011", f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    try:
        sc = json.loads(text)
    except json.JSONDecodeError as e:
        raise _err(path, "E023", f"not a scenario: {e.msg}", e.lineno, e.colno, text) from None
    try:
        return check_scenario(sc, path)
    except ScenarioError as e:
        msg = str(e)
        prefix = f"{path}: "
        raise _err(path, "E023", msg[len(prefix):] if msg.startswith(prefix) else msg) from None


def _venv(arg) -> Path:
    from serq.oracle.venv import default_venv, python_of

    venv = Path(arg) if arg else default_venv()
    if not python_of(venv).exists():
        raise _err("serq oracle", "E024", f"no oracle environment at {venv}",
                   notes=("build it with `serq oracle setup` (about 2 minutes; vLLM is not an ordinary "
                          "dependency of serq)",))
    return venv


def cmd_setup(args) -> int:
    from serq.oracle.venv import default_venv, smoke, steps

    venv = Path(args.venv) if args.venv else default_venv()
    for what, argv in steps(venv, wheel=args.vllm_wheel, pinned=not args.unpinned):
        print(f"[oracle setup] {what}", file=sys.stderr)
        p = subprocess.run(argv)
        if p.returncode != 0:
            print(f"[oracle setup] failed: {' '.join(argv)} (exit {p.returncode})", file=sys.stderr)
            return EXIT_INPUT
    print("[oracle setup] smoke test (an empty vLLM cache)", file=sys.stderr)
    try:
        summary = smoke(venv)
    except RuntimeError as e:
        print(f"[oracle setup] the smoke test failed:\n{e}", file=sys.stderr)
        return EXIT_INPUT
    print(f"[oracle setup] ok: {venv} ({summary[:80]}...)", file=sys.stderr)
    return 0


def cmd_trace(args) -> int:
    from explorer.runtime.outfile import Output
    from serq.oracle.venv import run_driver

    load_scenario(args.scenario)  # bad input is reported here, in serq's words
    venv = _venv(args.venv)
    if args.max_steps is not None and args.max_steps < 1:
        from serq.diagnostics import flag_error

        raise flag_error("--max-steps", str(args.max_steps), "E012", "--max-steps must be at least 1")
    # the driver writes to its standard output, kept here; the file is written whole after it
    # (explorer.runtime.outfile: an unwritable path is E017 before the run, a failed write E017 after it)
    out = Output(args.output) if args.output != "-" else None
    try:
        p = run_driver(venv, args.scenario, "-", args.max_steps, args.full)
    except BaseException:
        if out is not None:
            out.abort()
        raise
    noise = "Failed to import from vllm._C"
    err = "\n".join(x for x in p.stderr.splitlines() if noise not in x)
    if p.returncode not in (0, 3):
        if out is not None:
            out.abort()
        print(err, file=sys.stderr)
        print(f"serq oracle trace: the driver failed (exit {p.returncode})", file=sys.stderr)
        return EXIT_INPUT
    if out is None:
        sys.stdout.write(p.stdout)
    else:
        out.write(p.stdout)
        out.commit()
    summary = err.splitlines()[0] if err else "{}"
    try:
        s = json.loads(summary)
        print(f"{args.scenario}: {s['status']}, {s['steps']} steps, {s['finished']} of {s['requests']} "
              "requests finished", file=sys.stderr)
    except (ValueError, KeyError):
        print(err, file=sys.stderr)
    return EXIT_CAP if p.returncode == 3 else 0


def cmd_convert(args) -> int:
    from explorer.runtime.outfile import write_output
    from serq.oracle.convert import convert

    sc = load_scenario(args.scenario)
    conv = convert(sc, Path(args.scenario).stem)
    if args.output:
        write_output(args.output, conv.text)  # a failure: E017 (serq.cli)
    else:
        sys.stdout.write(conv.text)
    for n in conv.needs:
        print(f"{args.scenario}: not exact: vLLM's behaviour needs {n}", file=sys.stderr)
    return 0


MAX_TRACE = 1 << 30  # bytes of a trace to compare


def cmd_compare(args) -> int:
    from explorer.runtime.infile import NotReadable, read_regular
    from serq.oracle.compare import TraceError, agree

    sc = load_scenario(args.scenario)
    try:
        text = read_regular(args.trace, MAX_TRACE).decode("utf-8")
    except NotReadable as e:
        raise _err(args.trace, "E011", f"cannot read {args.trace}: {e.reason}") from None
    except UnicodeDecodeError as e:
        raise _err(args.trace, "E011", f"cannot read {args.trace}: {e}") from None
    try:  # the trace is read once, its shape checked as it is (agree reads it with read_trace)
        a = agree(sc, text, coalesce=not args.no_coalesce, name=Path(args.scenario).stem)
    except TraceError as e:  # before ValueError: a TraceError is one
        raise SerqError([Diagnostic(e.line, e.col, "E025", f"malformed trace: {e}",
                                    file=args.trace)], text) from None
    except (ValueError, KeyError) as e:
        raise _err(args.trace, "E025", f"not a trace of this scenario: {e}") from None
    for n in a.needs:
        print(f"{args.scenario}: not exact: vLLM's behaviour needs {n}")
    if a.ok:
        print(f"{args.scenario}: agree on all {a.steps} steps")
        return 0
    print(f"{args.scenario}: agree on {a.agree} of {a.steps} steps, then:")
    print(a.first)
    return EXIT_DIFF
