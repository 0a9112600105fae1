"""Loading an instance: `.sq` source or `.ir.json`, compiled and validated.
Every failure is a `SerqError` carrying located diagnostics."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from serq import ir
from serq.compiler import Compiler
from serq.diagnostics import Diagnostic, SerqError, Sink
from serq.parser import parse_tree
from serq.validate import validate


@dataclass
class Loaded:
    program: ir.Program
    source: str | None  # the source text, for rendering diagnostics
    warnings: list[Diagnostic]


def compile_source(text: str, file: str = "<input>", consts: dict | None = None) -> tuple[ir.Program, list[Diagnostic]]:
    """Parse and compile, without validation. Raises on syntax or structure
    errors. `consts` gives declared constants other values (`serq sweep`)."""
    tree = parse_tree(text, file)
    sink = Sink(file)
    try:
        prog = Compiler(file, sink, consts).compile(tree)
    except RecursionError:
        raise _too_deep(text, file) from None
    if sink.errors:
        raise SerqError(sink.items, text)
    return prog, sink.items


def load_text(text: str, file: str = "<input>", *, theorem: bool = False, explorer: bool = False,
              consts: dict | None = None) -> Loaded:
    prog, early = compile_source(text, file, consts)
    try:
        diags = early + validate(prog, theorem=theorem, explorer=explorer)
    except RecursionError:
        raise _too_deep(text, file) from None
    if any(d.is_error for d in diags):
        raise SerqError(diags, text)
    return Loaded(prog, text, sorted(diags))


def _too_deep(text: str, file: str) -> SerqError:
    return SerqError([Diagnostic(1, 1, "E001", "input nested too deeply", file=file)], text)


def load_ir(text: str, file: str, *, theorem: bool = False, explorer: bool = False) -> Loaded:
    try:
        prog = ir.Program.from_json(text)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        where = f" at `{where}`" if where else ""
        raise SerqError([Diagnostic(1, 1, "E010", f"not a serq IR file: {first.get('msg')}{where}",
                                    file=file, notes=(f"{len(e.errors())} problem(s) in all",))], None) from None
    src_text = None
    src = Path(prog.source)
    if src.is_file():
        try:
            src_text = src.read_text()
        except OSError:
            src_text = None
    diags = validate(prog, theorem=theorem, explorer=explorer)
    if any(d.is_error for d in diags):
        raise SerqError(diags, src_text)
    return Loaded(prog, src_text, diags)


def load_path(path: str | Path, *, theorem: bool = False, explorer: bool = False) -> Loaded:
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise SerqError([Diagnostic(0, 0, "E011", f"cannot read {path}: {getattr(e, 'strerror', None) or e}", file=str(path))]) from None
    if path.name.endswith(".json"):
        return load_ir(text, str(path), theorem=theorem, explorer=explorer)
    return load_text(text, str(path), theorem=theorem, explorer=explorer)
