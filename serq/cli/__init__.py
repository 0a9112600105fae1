"""The `serq` command. Thin: each subcommand parses its flags and calls one
library function that the tests call too. Bad input exits 2 with located
diagnostics on stderr, never a traceback."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# serq does no linear algebra: OpenBLAS's worker threads (numpy's, and
# scipy's when a dependency loads it) would only spin at start-up and cost
# CPU time. Set before numpy is imported; a value already set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from serq import __version__
from serq.diagnostics import Diagnostic, SerqError, render_all
from explorer.runtime.outfile import OutputError, Stdout, write_output
from explorer.runtime.verdict import EXIT_BOUND, EXIT_INTERRUPTED, EXIT_PASS
from serq.cli.exits import EXIT_INPUT_ERROR, EXIT_NOT_CANONICAL, add_parser
from serq.cli.parser import Parser


def _print_warnings(loaded) -> None:
    if loaded.warnings:
        print(render_all(loaded.warnings, loaded.source), file=sys.stderr)


def cmd_compile(args) -> int:
    from serq.ir.load import ir_text
    from serq.lang.load import load_path

    loaded = load_path(args.instance)
    _print_warnings(loaded)
    text = ir_text(loaded.program, args.output, loaded.warnings)  # `source` relative to where the IR goes
    if args.output:
        write_output(args.output, text)
    else:
        sys.stdout.write(text)
    return EXIT_PASS


def cmd_fmt(args) -> int:
    from serq.lang.fmt import format_path

    out = format_path(args.instance)
    if args.write:
        write_output(args.instance, out)
    elif args.check:
        if Path(args.instance).read_text() != out:
            print(f"{args.instance}: not in canonical layout", file=sys.stderr)
            return EXIT_NOT_CANONICAL
    else:
        sys.stdout.write(out)
    return EXIT_PASS


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="serq", description="A language, simulator and model checker for LLM-serving schedulers.")
    p.add_argument("--version", action="version", version=f"serq {__version__}")
    conf = p.add_mutually_exclusive_group()
    conf.add_argument("--config", metavar="FILE", help="take the limits from this serq.toml or pyproject.toml "
                      "(default: the nearest one, from the current directory up; docs/config.md)")
    conf.add_argument("--no-config", action="store_true", help="read no serq.toml or pyproject.toml")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    c = add_parser(sub, "compile", help="compile an instance to its IR (JSON)")
    c.add_argument("instance", help="a .sq file or an .ir.json file")
    c.add_argument("-o", "--output", help="write the IR to this file instead of stdout")
    c.set_defaults(func=cmd_compile)

    f = add_parser(sub, "fmt", help="print an instance in canonical layout")
    f.add_argument("instance", help="a .sq file")
    g = f.add_mutually_exclusive_group()
    g.add_argument("-w", "--write", action="store_true", help="rewrite the file in place")
    g.add_argument("--check", action="store_true", help="exit 1 if the file is not in canonical layout")
    f.set_defaults(func=cmd_fmt)

    for register in _extra_commands():
        register(sub)
    if "completion" in sub.choices:  # its script is made from the whole parser
        sub.choices["completion"].set_defaults(parser=p)
    return p


def _extra_commands():
    """Commands that live in their own modules (run, check, explore, sweep, diff, ui, oracle, completion)."""
    out = []
    for mod in ("serq.cli.run", "serq.cli.explore", "serq.cli.sweep", "serq.cli.diff", "serq.cli.ui", "serq.cli.oracle", "serq.cli.completion"):
        try:
            m = __import__(mod, fromlist=["register"])
        except ModuleNotFoundError as e:
            if e.name != mod:
                raise
            continue
        out.append(m.register)
    return out


def _parse(argv: list[str]):
    """The command line, with the defaults of the configuration file
    (serq/cli/config.py) under it."""
    from serq.cli import config

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    try:
        cfg, bad = config.load(argv, {c: {a.dest for a in p._actions} for c, p in sub.choices.items()}), None
    except SerqError as e:  # said once the command line is read: `--help` and `--version` still answer
        cfg, bad = None, e
    config.apply(cfg, sub.choices)
    args = parser.parse_args(argv)
    if bad is not None:
        raise bad
    if cfg is not None:
        config.settle(cfg, args)
        line = config.announce(cfg, args.command)
        if line:
            print(line, file=sys.stderr)
    return args


def main(argv: list[str] | None = None) -> int:
    from explorer.runtime.interrupt import interrupt_of, interrupts, signal_name

    # SIGINT and SIGTERM raise Interrupted: the search and the simulator turn
    # it into their verdict "interrupted" with what they found so far; caught
    # here, it came before they started (loading the commands' modules,
    # compiling) or after them.
    args = None
    out = sys.stdout = Stdout(sys.stdout)  # a failed write to it is named (E017), not a traceback
    with interrupts():
        try:
            args = _parse(sys.argv[1:] if argv is None else list(argv))
            code = args.func(args)
            sys.stdout.flush()
            return code
        except SerqError as e:
            print(e.render(), file=sys.stderr)
            return EXIT_INPUT_ERROR
        except OutputError as e:  # an output file or standard output that could not be written
            if e.path == Stdout.NAME:
                _drop_stdout(out)
            cmd = " ".join(["serq", args.command] + [getattr(args, "oracle_command", None) or ""]).strip()
            err = SerqError([Diagnostic(0, 0, "E017", str(e), file=cmd)])
            print(err.render(), file=sys.stderr)
            return EXIT_INPUT_ERROR
        except BrokenPipeError:
            return EXIT_PASS
        except (KeyboardInterrupt, SystemError) as e:
            e = interrupt_of(e)
            name = "serq" if args is None else f"serq {args.command}"
            print(f"{name}: interrupted by {signal_name(e)}", file=sys.stderr)
            return EXIT_INTERRUPTED
        except MemoryError:  # before a search or a run started (loading its modules, under `ulimit -v`), or after
            name = "serq" if args is None else f"serq {args.command}"
            print(f"{name}: out of memory (MemoryError) outside the search: no verdict", file=sys.stderr)
            return EXIT_BOUND
        finally:
            if sys.stdout is out:
                sys.stdout = out.inner


def _drop_stdout(out: Stdout) -> None:
    """Standard output failed: what is still buffered for it is dropped
    (the interpreter's flush at exit would fail again, with a traceback)."""
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, out.inner.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass


if __name__ == "__main__":
    sys.exit(main())
