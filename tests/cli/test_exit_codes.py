"""One exit-code table (serq.cli.exits.EXITS): each command's --help
lists exactly its rows, the docs list every code each command can exit
with, and the library verdicts map onto it."""

import re
from pathlib import Path

import pytest

from serq.cli.exits import EXIT_CODES, EXITS
from serq.cli import build_parser
from serq.cli.exits import COMMAND_EXITS, exits_of

ROOT = Path(__file__).resolve().parents[2]


def _help(command: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices[command].format_help()


def test_every_command_has_its_exit_codes():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) <= set(COMMAND_EXITS), set(sub.choices) - set(COMMAND_EXITS)


@pytest.mark.parametrize("command", sorted(COMMAND_EXITS))
def test_help_lists_the_commands_rows_of_the_table(command):
    text = _help(command)
    assert "exit codes (verdicts):" in text
    listed = re.findall(r"^\s+(\d+)\s+(\w+)\s{2,}(.+)$", text.split("exit codes (verdicts):")[1], re.M)
    assert [(int(c), n) for c, n, _ in listed] == [(c, n) for c, n, _ in exits_of(command)]
    for code, name, _ in listed:
        assert EXIT_CODES[name] == int(code)


def test_the_table_is_in_code_order_and_complete():
    codes = [e.code for e in EXITS]
    assert codes == sorted(set(codes))
    assert set().union(*map(set, COMMAND_EXITS.values())) == set(EXIT_CODES)


def _exit_column(doc: str, header: str) -> set[int]:
    """The codes in the `exit` column of the doc's table whose header starts with `header`."""
    lines = (ROOT / "docs" / doc).read_text().splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(header))
    col = [c.strip() for c in lines[start].strip("|").split("|")].index("exit")
    out = set()
    for row in lines[start + 2:]:
        if not row.startswith("|"):
            break
        out |= {int(x) for x in re.findall(r"\d+", row.strip("|").split("|")[col])}
    return out


def test_explorer_docs_list_every_exit_code_of_explore():
    assert _exit_column("explorer.md", "| verdict | exit |") == {c for c, _, _ in exits_of("explore")}


def test_simulator_docs_list_every_exit_code_of_run_and_check():
    codes = {c for c, _, _ in exits_of("run") + exits_of("check")}
    assert _exit_column("simulator.md", "| what stops the run |") == codes


def test_sweep_and_ui_codes_are_documented():
    text = (ROOT / "docs" / "explorer.md").read_text()
    for command in ("sweep", "ui"):
        for code, _, _ in exits_of(command):
            if code not in (0, 2):
                assert re.search(rf"exit {code}\b", text), (command, code)
