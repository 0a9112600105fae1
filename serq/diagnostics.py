"""Located diagnostics: `file:line:col: error[CODE]: message`, the source
line, a caret under the spot. Every user-facing error of serq is one of
these; no traceback reaches a user for bad input."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

_CONTROL = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})  # controls, format characters, line breaks, surrogates


def printable(text: str) -> str:
    """`text` with every control character escaped as Python writes it
    (`\\x1b`, `\\n`, `\\u202e`): text that comes from an input file (a
    name, a path, a quoted line) cannot move the cursor, recolour or clear
    the terminal, start a new line or reorder what it shows. Everything
    serq prints from an input file goes through here (Diagnostic.render)."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if unicodedata.category(ch) not in _CONTROL:
            out.append(ch)
        elif ch in "\t\n\r":
            out.append(repr(ch)[1:-1])
        else:
            n = ord(ch)
            out.append(f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}")
    return "".join(out)


@dataclass(frozen=True, order=True)
class Diagnostic:
    line: int
    col: int
    code: str
    message: str
    severity: str = "error"  # "error" | "warning"
    file: str = field(default="<input>", compare=False)
    notes: tuple[str, ...] = field(default=(), compare=False)
    span: int = field(default=1, compare=False)  # caret width

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def render(self, source: str | None) -> str:
        """The diagnostic as printed, every part that may come from an
        input file (file name, message, quoted line, notes) `printable`."""
        file = printable(self.file)
        where = f"{file}:{self.line}:{self.col}" if self.line >= 1 else file
        head = f"{where}: {self.severity}[{self.code}]: {printable(self.message)}"
        out = [head]
        if source is not None and self.line >= 1:
            lines = source.splitlines()
            if self.line <= len(lines):
                raw = lines[self.line - 1].expandtabs(1)
                col, span = max(self.col - 1, 0), max(self.span, 1)
                # the caret under the same characters once the line's controls are escaped
                at, width = len(printable(raw[:col])), max(len(printable(raw[col:col + span])), 1)
                text, at, width = clip_line(printable(raw), at, width)
                out.append(f"  {text}")
                out.append("  " + " " * at + "^" * width)
        for n in self.notes:
            out.append(f"  note: {printable(n)}")
        return "\n".join(out)


QUOTE_WIDTH = 100  # characters of a long line quoted around the spot
_MARK = "..."


def clip_line(text: str, at: int, width: int) -> tuple[str, int, int]:
    """The part of a long source line to quote: a window of QUOTE_WIDTH
    characters around offset `at`, with `...` where it was cut. Returns the
    quoted text, the caret's offset in it and the caret's width (cut at the
    window's end). A line that fits is quoted whole."""
    if len(text) <= QUOTE_WIDTH + 2 * len(_MARK):
        return text, at, width
    start = max(0, min(at - QUOTE_WIDTH // 2, len(text) - QUOTE_WIDTH))
    end = start + QUOTE_WIDTH
    head = _MARK if start > 0 else ""
    tail = _MARK if end < len(text) else ""
    caret = len(head) + at - start
    return head + text[start:end] + tail, caret, max(1, min(width, len(head) + QUOTE_WIDTH - caret))


class SerqError(Exception):
    """Raised with the collected diagnostics when an input is rejected."""

    def __init__(self, diagnostics: list[Diagnostic], source: str | None = None):
        self.diagnostics = sorted(diagnostics)
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        return render_all(self.diagnostics, self.source)


def render_all(diags: list[Diagnostic], source: str | None) -> str:
    parts = [d.render(source) for d in sorted(diags)]
    n_err = sum(1 for d in diags if d.is_error)
    n_warn = len(diags) - n_err
    if n_err or n_warn:
        summary = []
        if n_err:
            summary.append(f"{n_err} error{'s' if n_err != 1 else ''}")
        if n_warn:
            summary.append(f"{n_warn} warning{'s' if n_warn != 1 else ''}")
        parts.append(", ".join(summary))
    return "\n".join(parts)


def similar(name: str, options, cutoff: float = 0.75) -> str | None:
    """The option closest to a misspelled `name`, if one is close enough:
    the language's "did you mean `x`?" for names, and the command line's
    for subcommands, flags, choices and metrics."""
    import difflib

    m = difflib.get_close_matches(name, list(options), n=1, cutoff=cutoff)
    return m[0] if m else None


# the command line's words are few and short (`bsf` for `bfs`): a looser cutoff
CLI_CUTOFF = 0.6


def did_you_mean(name: str, options, cutoff: float = CLI_CUTOFF) -> tuple[str, ...]:
    """The note suggesting the option closest to `name`, or no note."""
    hint = similar(name, options, cutoff)
    return (f"did you mean `{hint}`?",) if hint else ()


def flag_error(flag: str, value: str, code: str, message: str, col: int = 1, span: int | None = None,
               notes: tuple[str, ...] = ()) -> SerqError:
    """An error in a command-line flag's value, located in that value: the
    flag is the file, the value its one line, a caret under the spot."""
    width = span if span is not None else max(len(value) - col + 1, 1)
    return SerqError([Diagnostic(1, col, code, message, file=flag, span=width, notes=notes)], value)


class Sink:
    """Collects diagnostics for one source file."""

    def __init__(self, file: str):
        self.file = file
        self.items: list[Diagnostic] = []

    def error(self, at, code: str, message: str, *notes: str, span: int = 1) -> None:
        line, col = at if at else (0, 0)
        self.items.append(Diagnostic(line, col, code, message, "error", self.file, tuple(notes), span))

    def warn(self, at, code: str, message: str, *notes: str, span: int = 1) -> None:
        line, col = at if at else (0, 0)
        self.items.append(Diagnostic(line, col, code, message, "warning", self.file, tuple(notes), span))

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.is_error]
