"""Reading an `.ir.json`: strict, located, structure checked.

- a UTF-8 byte order mark is skipped;
- JSON syntax errors at their real line and column;
- the models are read strictly: no coercion (`"cap": true` and `"v": "4"`
  are errors, as are unknown fields), each error at the position of the
  offending value in the file;
- every name an identifier, as the grammar's (serq.ir.names): no escape
  sequence or newline reaches the terminal through a name;
- the automaton's shape and the range of its numbers (serq.ir.shape), each
  problem at the offending value;
- `source`, the file the positions refer to, is resolved against the IR
  file's directory (an absolute path stays as it is); in memory a
  program's `source` is a path valid from the current directory, and
  `ir_text(program, out)` writes it relative to where the IR is written.
  It is read, to quote its lines in diagnostics, only as a regular file of
  bounded size (`source_text`): a device, a pipe, a directory or a /proc
  file is refused, E010 at `source`.
Every failure is a `SerqError` whose diagnostics quote the JSON file."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from pydantic import ValidationError

from explorer.runtime.infile import NotReadable, read_regular

from serq import ir
from serq.diagnostics import Diagnostic, SerqError
from serq.ir.names import name_problems
from serq.ir.shape import prefix_problems, shape_problems

MAX_SOURCE_NAME = 4096  # characters in `source`
MAX_SOURCE_BYTES = 16 << 20  # bytes of the file `source` names
_AT_LINE = re.compile(r" at line (\d+) column (\d+)$")


def read_ir(text: str, file: str) -> ir.Program:
    """The program of an IR file's text, its `source` resolved against the
    file's directory. Raises SerqError located in `text`."""
    text = text.removeprefix("\ufeff")
    try:
        json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise _error(text, file, (e.lineno, e.colno), f"not a serq IR file: invalid JSON: {e.msg}") from None
    except _BadConstant as e:
        raise _error(text, file, _offset_pos(text, text.find(e.args[0])),
                     f"not a serq IR file: `{e.args[0]}` is not a JSON number") from None
    except (RecursionError, ValueError) as e:  # nesting beyond the parser's, an integer of thousands of digits
        raise _error(text, file, (1, 1), f"not a serq IR file: {e}") from None
    try:
        prog = ir.Program.model_validate_json(text, strict=True)
    except ValidationError as e:
        errs = e.errors()
        diags = []
        for err in errs[:20]:
            loc = tuple(err.get("loc", ()))
            where = ".".join(str(p) for p in loc)
            msg = f"not a serq IR file: {err.get('msg')}" + (f" at `{where}`" if where else "")
            line, col = locate(text, loc)
            m = _AT_LINE.search(msg) if err.get("type") == "json_invalid" else None
            if m:  # a string Python's parser takes and the models' does not (a lone surrogate)
                line, col = int(m.group(1)), int(m.group(2))
                msg = "not a serq IR file: invalid JSON: " + msg[len("not a serq IR file: Invalid JSON: "):m.start()]
            diags.append(Diagnostic(line, col, "E010", msg, file=file))
        if len(errs) > 20:
            diags[-1] = Diagnostic(diags[-1].line, diags[-1].col, "E010", diags[-1].message, file=file,
                                   notes=(f"{len(errs)} problems in all",))
        raise SerqError(diags, text) from None
    problems = name_problems(prog) + shape_problems(prog) + prefix_problems(prog)
    src = _source_problem(prog.source)
    if src:
        problems.append((("source",), "E010", src))
    if problems:
        raise SerqError([Diagnostic(*locate(text, path), code, msg, file=file) for path, code, msg in problems],
                        text)
    prog = prog.model_copy(update={"source": resolve_source(prog.source, file), "warnings": ()})
    refused = _source_refused(prog, text, file)
    if refused is not None:
        raise refused
    return prog


def resolve_source(source: str, ir_file: str) -> str:
    """`source` as a path valid from the current directory: relative to the
    IR file's directory unless absolute (or a name like `<input>`)."""
    if not source or source.startswith("<") or os.path.isabs(source) or ir_file.startswith("<"):
        return source
    return os.path.normpath(os.path.join(os.path.dirname(ir_file), source))


def ir_text(program: ir.Program, out: str | None, warnings=()) -> str:
    """The IR JSON to write to `out` (None: standard output, read from the
    current directory): `source` relative to `out`'s directory; `warnings`
    (Diagnostics) those the instance was loaded with."""
    from serq.formats import warnings_data

    src = program.source
    if out is not None and src and not src.startswith("<") and not os.path.isabs(src):
        src = os.path.relpath(src, os.path.dirname(os.path.abspath(out)))
    found = [dict(w, file=src if w["file"] == program.source else w["file"]) for w in warnings_data(warnings)]
    update = {"source": src, "warnings": tuple(ir.IrWarning(**w) for w in found)}
    return program.model_copy(update=update).to_json()


def read_source(source: str) -> str | None:
    """The text of a program's source file for quoting in diagnostics, or
    None when there is none to read (no file name, a file that cannot be
    opened) or when it is no source file (see `source_text`)."""
    try:
        return source_text(source)
    except SourceRefused:
        return None


class SourceRefused(ValueError):
    """A `source` that names something other than a source file."""


def source_text(source: str) -> str | None:
    """`read_source`, raising SourceRefused for what is no source file:
    only a regular file of at most MAX_SOURCE_BYTES bytes of UTF-8 text is
    read (explorer.runtime.infile), never a device, a pipe, a directory, a /proc
    file or a huge file."""
    if not source or source.startswith("<") or _source_problem(source):
        return None
    try:
        data = read_regular(source, MAX_SOURCE_BYTES)
    except NotReadable as e:
        if not e.opened:
            return None
        raise SourceRefused(e.reason) from None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeError:
        raise SourceRefused("not UTF-8 text") from None


def _source_refused(prog: ir.Program, text: str, file: str) -> SerqError | None:
    """E010 at `source` when it names something that is no source file."""
    try:
        source_text(prog.source)
    except SourceRefused as e:
        return SerqError([Diagnostic(*locate(text, ("source",)), "E010",
                                     f"`source` names {prog.source}, which is not a source file to read: {e}",
                                     file=file, notes=("`source` must name a regular file of UTF-8 text of at most "
                                                       f"{MAX_SOURCE_BYTES >> 20} MiB (the .sq the IR was compiled "
                                                       "from)",))], text)
    return None


def _source_problem(source: str) -> str | None:
    if len(source) > MAX_SOURCE_NAME:
        return f"`source` is {len(source)} characters long; a file name has at most {MAX_SOURCE_NAME}"
    if "\0" in source:
        return "`source` contains a NUL character: not a file name"
    try:
        source.encode("utf-8")
    except UnicodeError:
        return "`source` is not valid UTF-8 text"
    return None


class _BadConstant(ValueError):
    pass


def _no_constant(name: str):
    raise _BadConstant(name)


def _error(text: str, file: str, at: tuple[int, int], msg: str) -> SerqError:
    return SerqError([Diagnostic(at[0], at[1], "E010", msg, file=file)], text)


def _offset_pos(text: str, i: int) -> tuple[int, int]:
    i = max(i, 0)
    line = text.count("\n", 0, i) + 1
    return line, i - (text.rfind("\n", 0, i) + 1) + 1


# ------------------------------------------------------------------ JSON positions

_WS = " \t\n\r"


def locate(text: str, path: tuple) -> tuple[int, int]:
    """(line, column) of the JSON value at `path` (keys and indices; steps
    that name no key or index here, such as a union's tag, are skipped),
    or of the deepest value on the way that exists."""
    i = _ws(text, 0)
    for step in path:
        if i >= len(text):
            break
        c = text[i]
        if c == "{":
            j = _find_key(text, i, str(step))
            if j is not None:
                i = j
        elif c == "[" and isinstance(step, int):
            j = _find_index(text, i, step)
            if j is None:
                break
            i = j
        else:
            break
    return _offset_pos(text, i)


def _ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in _WS:
        i += 1
    return i


def _string_end(s: str, i: int) -> int:
    """Index after the string starting at s[i] == '"'."""
    i += 1
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        i += 1
    return i


def _value_end(s: str, i: int) -> int:
    if i < len(s) and s[i] == '"':
        return _string_end(s, i)
    if i < len(s) and s[i] in "{[":
        depth = 0
        while i < len(s):
            c = s[i]
            if c == '"':
                i = _string_end(s, i)
                continue
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    return i + 1
            i += 1
        return i
    while i < len(s) and s[i] not in ",]}" + _WS:
        i += 1
    return i


def _find_key(s: str, i: int, key: str) -> int | None:
    i = _ws(s, i + 1)
    while i < len(s) and s[i] == '"':
        end = _string_end(s, i)
        try:
            k = json.loads(s[i:end])
        except ValueError:
            return None
        i = _ws(s, end)
        if i >= len(s) or s[i] != ":":
            return None
        i = _ws(s, i + 1)
        if k == key:
            return i
        i = _ws(s, _value_end(s, i))
        if i < len(s) and s[i] == ",":
            i = _ws(s, i + 1)
    return None


def _find_index(s: str, i: int, n: int) -> int | None:
    i = _ws(s, i + 1)
    for _ in range(n):
        if i >= len(s) or s[i] == "]":
            return None
        i = _ws(s, _value_end(s, i))
        if i < len(s) and s[i] == ",":
            i = _ws(s, i + 1)
    return i if i < len(s) and s[i] != "]" else None
