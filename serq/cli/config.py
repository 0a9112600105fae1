"""Limits a CI job would otherwise repeat in every call, from a file:
the `[tool.serq]` table of the nearest `pyproject.toml` that has one, or
the nearest `serq.toml` (searched from the current directory upward; in
one directory `serq.toml` comes first). docs/config.md.

    [tool.serq]            # every command that has the flag
    time_limit = 600
    memory = "4G"
    max_states = 2_000_000
    [tool.serq.explore]    # `serq explore` only
    workers = 2
    symmetry = false

A flag on the command line wins over the file. A key serq does not know,
a value of the wrong type or out of range is an input error (E027, exit 2)
located in the file (tomllib gives no positions: the key is found by
scanning the text). The command says on stderr which file it used and
what it took from it. `serq --no-config ...` reads no file; `serq
--config FILE ...` reads that one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from serq.cli.flags import LIMITS
from serq.diagnostics import Diagnostic, SerqError, did_you_mean

# key -> (the flag it stands for, the attribute it sets, the kind of its value)
KEYS: dict[str, tuple[str, str, str]] = {
    "time_limit": ("--time-limit", "time_limit", "seconds"),
    "memory": ("--memory", "memory", "size"),
    "max_states": ("--max-states", "max_states", "count"),
    "max_depth": ("--max-depth", "max_depth", "count"),
    "max_steps": ("--max-steps", "max_steps", "count"),
    "workers": ("--workers", "workers", "count"),
    "graph_limit": ("--graph-limit", "graph_limit", "count"),
    "symmetry": ("--no-symmetry", "no_symmetry", "negated"),
    "timing": ("--no-timing", "no_timing", "negated"),
    "ties": ("--ties", "ties", "choice"),
}
NAMES = ("serq.toml", "pyproject.toml")


@dataclass
class Config:
    path: Path
    table: str  # "[tool.serq]" or "" (a serq.toml)
    common: dict = field(default_factory=dict)  # key -> value
    commands: dict = field(default_factory=dict)  # command -> {key: value}
    used: list = field(default_factory=list)  # (key, value) applied to the command that runs

    def name(self) -> str:
        return f"{self.path} {self.table}".strip()


def wanted(argv: list[str]) -> tuple[bool, str | None]:
    """(read a file at all, the file named by --config) from the options
    before the subcommand."""
    it = iter(argv)
    for a in it:
        if not a.startswith("-"):
            break
        if a == "--no-config":
            return False, None
        if a == "--config":
            return True, next(it, None)
        if a.startswith("--config="):
            return True, a.split("=", 1)[1]
    return True, None


def find(start: Path) -> tuple[Path, str] | None:
    """The nearest serq.toml, or pyproject.toml with a [tool.serq] table."""
    for d in (start, *start.parents):
        f = d / "serq.toml"
        if f.is_file():
            return f, ""
        f = d / "pyproject.toml"
        if f.is_file() and re.search(r"^\s*\[\s*tool\s*\.\s*serq\s*[\].]", _read(f), re.M):
            return f, "[tool.serq]"
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise SerqError([Diagnostic(0, 0, "E011", f"cannot read {path}: {getattr(e, 'strerror', None) or e}",
                                    file=str(path))]) from None


def load(argv: list[str], commands: dict) -> Config | None:
    """The configuration for this call, checked; `commands` maps each
    command to the attributes its parser has."""
    read, named = wanted(argv)
    if not read:
        return None
    if named is not None:
        path = Path(named)
        text = _read(path)
        table = "[tool.serq]" if path.name == "pyproject.toml" else ""
    else:
        found = find(Path.cwd())
        if found is None:
            return None
        path, table = found
        text = _read(path)
    return parse(text, path, table, commands)


def parse(text: str, path: Path, table: str, commands: dict) -> Config:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        line, col = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        if "(at end of document)" in str(e) and text.strip():  # the end of the last line that has text
            lines = text.rstrip().splitlines()
            line, col = len(lines), len(lines[-1]) + 1
        msg = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(e)) or "not TOML"
        raise SerqError([Diagnostic(line, col, "E027", f"not a TOML file: {msg}", file=str(path))], text) from None
    base: tuple[str, ...] = ("tool", "serq") if table else ()
    top = data
    for n, k in enumerate(base):
        top = top.get(k, {})
        if not isinstance(top, dict):
            raise _error(text, path, base[:n], k, f"`{'.'.join(base[:n + 1])}` must be a table")
    cfg = Config(path, table)
    errors: list[Diagnostic] = []
    for key, value in top.items():
        if isinstance(value, dict):
            if key not in commands:
                errors.append(_diag(text, path, base, key, f"unknown command `{key}`; the commands are "
                                    f"{', '.join(commands)}", did_you_mean(key, commands)))
                continue
            cfg.commands[key] = {}
            for k, v in value.items():
                d = _check(text, path, base + (key,), k, v, commands[key], key)
                if isinstance(d, Diagnostic):
                    errors.append(d)
                else:
                    cfg.commands[key][k] = d
        else:
            d = _check(text, path, base, key, value, None, None)
            if isinstance(d, Diagnostic):
                errors.append(d)
            else:
                cfg.common[key] = d
    if errors:
        raise SerqError(errors, text)
    return cfg


def _check(text, path, where, key, value, attrs, command):
    """The value to set, or a located Diagnostic."""
    if key not in KEYS:
        return _diag(text, path, where, key, f"unknown key `{key}`; the keys are {', '.join(KEYS)}",
                     did_you_mean(key, KEYS))
    flag, attr, kind = KEYS[key]
    if attrs is not None and attr not in attrs:
        return _diag(text, path, where, key, f"`serq {command}` has no {flag}: `{key}` cannot be set for it")
    bad = _bad_value(key, flag, kind, value)
    if bad:
        return _diag(text, path, where, key, bad, value=True)
    return (not value) if kind == "negated" else value


def _bad_value(key: str, flag: str, kind: str, v) -> str | None:
    shown = _toml(v)
    if kind == "negated":
        return None if isinstance(v, bool) else f"`{key}` must be true or false, got {shown}"
    if kind == "choice":
        return None if v in ("all", "seq") else f"`{key}` must be \"all\" or \"seq\", got {shown}"
    if kind == "size":
        if not isinstance(v, str):
            return f"`{key}` must be a size with its unit, as a string (\"512M\", \"4G\"), got {shown}"
        from explorer.runtime.memory import parse_size

        try:
            parse_size(v)
        except ValueError as e:
            return f"`{key}`: {e}"
        return None
    _attr, least, unit = LIMITS[flag]
    number = (int, float) if kind == "seconds" else (int,)
    if isinstance(v, bool) or not isinstance(v, number):
        what = "a number" if kind == "seconds" else "an integer"
        return f"`{key}` must be {what} of {unit}, got {shown}"
    if isinstance(v, float) and not math.isfinite(v):
        return f"`{key}` must be a finite number of {unit}, got {shown}"
    if v < least:
        return f"`{key}` must be {'at least 1' if least == 1 else 'non-negative'} ({unit}), got {shown}"
    return None


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


# ---------------------------------------------------------------- where a key is


def locate(text: str, table: tuple[str, ...], key: str) -> tuple[int, int, int, int]:
    """(line, column of the key, column of its value, width of the value)
    of `key` in `table` (a dotted path), 1-based; (0, 0, 0, 1) if not found.
    A key may be written bare or quoted; tables as [a.b] headers."""
    current: tuple[str, ...] = ()
    head = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
    for n, line in enumerate(text.splitlines(), 1):
        h = head.match(line)
        if h:
            current = tuple(p.strip().strip("\"'") for p in h.group(1).split("."))
            if current == table + (key,):  # a sub-table: point at its name
                col = line.index(key) + 1
                return n, col, col, len(key)
            continue
        if current != table:
            continue
        m = re.match(r"^(\s*)([\"']?)([A-Za-z0-9_-]+)\2\s*=\s*", line)
        if m and m.group(3) == key:
            vcol = m.end() + 1
            value = line[m.end():].split("#")[0].rstrip()
            return n, len(m.group(1)) + 1, vcol, max(len(value), 1)
    return 0, 0, 0, 1


def _diag(text, path, where, key, message, notes=(), value: bool = False) -> Diagnostic:
    line, kcol, vcol, width = locate(text, where, key)
    col, span = (vcol, width) if value else (kcol, len(key))
    return Diagnostic(line, col, "E027", message, file=str(path), notes=tuple(notes), span=span)


def _error(text, path, where, key, message) -> SerqError:
    return SerqError([_diag(text, path, where, key, message)], text)


# ---------------------------------------------------------------- applying it


class FromFile:
    """A default set from the file: a flag given on the command line
    replaces it; what is still one after parsing came from the file."""

    def __init__(self, key: str, value) -> None:
        self.key, self.value = key, value


def apply(cfg: Config | None, parsers: dict) -> None:
    """Each command's parser takes the file's values as its defaults.
    `parsers`: command -> its parser."""
    if cfg is None:
        return
    for command, p in parsers.items():
        attrs = {a.dest for a in p._actions}
        keys = {k: v for k, v in cfg.common.items() if KEYS[k][1] in attrs}
        keys.update(cfg.commands.get(command, {}))
        if keys:
            p.set_defaults(**{KEYS[k][1]: FromFile(k, v) for k, v in keys.items()})


def settle(cfg: Config | None, args) -> None:
    """Replace what came from the file by its value, and note it in `cfg.used`."""
    for attr, v in vars(args).items():
        if isinstance(v, FromFile):
            setattr(args, attr, v.value)
            cfg.used.append((v.key, v.value))


def announce(cfg: Config | None, command: str) -> str | None:
    """The stderr line that says which file the command used, and what it took."""
    if cfg is None or not cfg.used:
        return None
    shown = ", ".join(f"{k} = {_toml(not v if KEYS[k][2] == 'negated' else v)}" for k, v in sorted(cfg.used))
    return f"serq {command}: from {cfg.name()}: {shown}"
