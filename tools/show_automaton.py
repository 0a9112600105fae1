#!/usr/bin/env python3
"""Print the session automata of an instance (`.sq` or `.ir.json`) as
tables of states and scopes: `python tools/show_automaton.py x.sq`.
The tables come from `serq.ir.util.automaton_table` (docs/ir.md)."""

from __future__ import annotations

import sys

from serq.diagnostics import SerqError
from serq.ir.util import automaton_table
from serq.lang.load import load_path


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: show_automaton.py INSTANCE", file=sys.stderr)
        return 2
    try:
        loaded = load_path(argv[0])
    except SerqError as e:
        print(e.render(), file=sys.stderr)
        return 2
    sys.stdout.write(automaton_table(loaded.program))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
