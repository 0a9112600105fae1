"""The command line's parser: argparse's, with a suggestion for a
misspelled subcommand, flag or choice ("did you mean `explore`?", the
note the language gives for a misspelled name: serq.diagnostics.similar).
Its words are argparse's own, then the note."""

from __future__ import annotations

import argparse
import re

from serq.diagnostics import CLI_CUTOFF, similar

_CHOICE = re.compile(r"invalid choice: '(.*)' \(choose from (.*)\)$", re.S)


def _note(hint: str | None) -> str:
    return f"\n  note: did you mean `{hint}`?" if hint else ""


class Parser(argparse.ArgumentParser):
    """argparse's parser, whose errors suggest the nearest valid word."""

    def error(self, message: str):
        m = _CHOICE.search(message)
        if m is not None:
            message += _note(similar(m.group(1), re.findall(r"'((?:[^'\\]|\\.)*)'", m.group(2)), CLI_CUTOFF))
        super().error(message)

    def parse_args(self, args=None, namespace=None):
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            p = self._command_parser(ns)
            flags = [s for a in p._actions for s in a.option_strings]
            hint = next((h for h in (similar(x.split("=")[0], flags, CLI_CUTOFF) for x in extra if x.startswith("-")) if h),
                        None)
            p.error(f"unrecognized arguments: {' '.join(extra)}" + _note(hint))
        return ns

    def _command_parser(self, ns) -> argparse.ArgumentParser:
        """The (sub)parser of the command `ns` was parsed for: its flags are
        the ones a misspelled flag is compared with."""
        p = self
        while True:
            sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
            name = getattr(ns, sub.dest, None) if sub is not None else None
            if name not in (sub.choices if sub is not None else {}):
                return p
            p = sub.choices[name]
