"""Loading an instance: `.sq` source or `.ir.json`, compiled and validated.
Every failure is a `SerqError` carrying located diagnostics."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from serq import ir
from serq.lang.compiler import Compiler
from serq.diagnostics import Diagnostic, SerqError, Sink
from serq.ir.load import read_ir, read_source
from serq.lang.parser import parse_tree
from serq.lang.validate import validate


@dataclass
class Loaded:
    program: ir.Program
    source: str | None  # the source text, for rendering diagnostics
    warnings: list[Diagnostic]


def compile_source(text: str, file: str = "<input>", consts: dict | None = None) -> tuple[ir.Program, list[Diagnostic]]:
    """Parse and compile, without validation. Raises on syntax or structure
    errors. `consts` gives declared constants other values (`serq sweep`)."""
    text = text.removeprefix("\ufeff")  # a byte order mark: not part of the text
    tree = parse_tree(text, file)
    sink = Sink(file)
    with ir.trusted():  # the compiler's nodes are not validated (the tests check them: SERQ_CHECK_IR)
        prog = Compiler(file, sink, consts).compile(tree)
    if sink.errors:
        raise SerqError(sink.items, text)
    return prog, sink.items


def load_text(text: str, file: str = "<input>", *, theorem: bool = False, explorer: bool = False,
              consts: dict | None = None, simulate: bool = False) -> Loaded:
    text = text.removeprefix("\ufeff")
    prog, early = compile_source(text, file, consts)
    diags = early + validate(prog, theorem=theorem, explorer=explorer, simulate=simulate)
    if any(d.is_error for d in diags):
        raise SerqError(diags, text)
    return Loaded(prog, text, sorted(diags))


def load_ir(text: str, file: str, *, theorem: bool = False, explorer: bool = False,
            simulate: bool = False) -> Loaded:
    """An `.ir.json`'s text: read strictly (serq.ir.load, errors located in
    the JSON), then validated like a compiled source (errors located in
    the source the IR names, quoted when it can be read)."""
    prog = read_ir(text, file)
    src_text = read_source(prog.source)
    diags = validate(prog, theorem=theorem, explorer=explorer, shape_checked=True, simulate=simulate)
    if any(d.is_error for d in diags):
        raise SerqError(diags, src_text)
    return Loaded(prog, src_text, diags)


def require_sessions(loaded: Loaded, file: str, command: str) -> None:
    """E026 for `serq check` and `serq explore` when the workload starts no
    session: the run or the state space is empty, and an `ok` or `pass`
    would say that something was checked."""
    wl = loaded.program.workload
    if any(w.count for w in wl):
        return
    at = wl[0].at if wl and wl[0].at else (1, 1)
    why = "the instance has no workload" if not wl else "every workload line has count 0"
    raise SerqError([Diagnostic(at[0], at[1], "E026", f"nothing to check: {why}, so no session ever runs",
                                file=loaded.program.source or file,
                                notes=(f"`serq {command}` would report on an empty run; give the workload a session, "
                                       "e.g. `workload { 1 x s; }`",))], loaded.source)


def load_path(path: str | Path, *, theorem: bool = False, explorer: bool = False,
              simulate: bool = False) -> Loaded:
    """`simulate`: warn about what only a simulation reads (W506)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
    except (OSError, UnicodeDecodeError) as e:
        raise SerqError([Diagnostic(0, 0, "E011", f"cannot read {path}: {getattr(e, 'strerror', None) or e}", file=str(path))]) from None
    if path.name.endswith(".json"):
        return load_ir(text, str(path), theorem=theorem, explorer=explorer, simulate=simulate)
    return load_text(text, str(path), theorem=theorem, explorer=explorer, simulate=simulate)
