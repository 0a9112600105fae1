"""`[tool.serq]` in the nearest pyproject.toml, or serq.toml: the limits a
CI job would repeat in every call. A flag on the command line wins; an
unknown key or a bad value is a located E027 with a caret; the command
says on stderr which file it used and what it took."""

from __future__ import annotations

from pathlib import Path

import pytest

from serq.cli import _parse, main

ROOT = Path(__file__).resolve().parents[2]
CHAT = (ROOT / "instances" / "vllm_chat.sq").read_text()

PYPROJECT = """[project]
name = "mine"

[tool.serq]
time_limit = 600
max_states = 5
memory = "2G"

[tool.serq.explore]
symmetry = false
workers = 2
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    (sub / "chat.sq").write_text(CHAT)
    monkeypatch.chdir(sub)
    return tmp_path


def test_the_nearest_pyproject_table_is_found_upward_and_applied(project, capsys):
    args = _parse(["explore", "chat.sq"])
    assert (args.time_limit, args.max_states, args.memory, args.no_symmetry, args.workers) == (600, 5, "2G", True, 2)
    err = capsys.readouterr().err
    assert err == (f"serq explore: from {project / 'pyproject.toml'} [tool.serq]: max_states = 5, memory = \"2G\", "
                   "symmetry = false, time_limit = 600, workers = 2\n")


def test_a_key_applies_to_the_commands_that_have_the_flag(project, capsys):
    run = _parse(["run", "chat.sq"])
    assert (run.time_limit, run.memory) == (600, "2G") and not hasattr(run, "max_states")
    sweep = _parse(["sweep", "chat.sq", "--vary", "KV=1..2"])
    assert (sweep.max_states, sweep.no_symmetry, sweep.workers) == (5, False, None)  # [tool.serq.explore] is explore's
    assert "serq sweep: from" in capsys.readouterr().err
    fmt = _parse(["fmt", "chat.sq"])
    assert not hasattr(fmt, "time_limit")
    assert capsys.readouterr().err == ""  # fmt took nothing: no line


def test_a_flag_on_the_command_line_wins(project, capsys):
    args = _parse(["explore", "chat.sq", "--max-states", "100", "--workers", "1", "--time-limit", "7"])
    assert (args.max_states, args.workers, args.time_limit, args.memory) == (100, 1, 7.0, "2G")
    err = capsys.readouterr().err
    assert "max_states" not in err and "workers" not in err and "time_limit" not in err and 'memory = "2G"' in err


def test_the_run_uses_the_file(project, capsys):
    assert main(["explore", "chat.sq", "-q", "--no-timing"]) == 13  # bound: max_states = 5
    out = capsys.readouterr().out
    assert "bound: no violation within the bound (max_states=5)" in out


def test_no_config_and_a_named_config(project, tmp_path, capsys):
    args = _parse(["--no-config", "explore", "chat.sq"])
    assert (args.max_states, args.workers, args.no_symmetry) == (None, 1, False)
    assert capsys.readouterr().err == ""
    other = tmp_path / "ci.toml"
    other.write_text("max_depth = 3\n")
    args = _parse(["--config", str(other), "explore", "chat.sq"])
    assert (args.max_depth, args.max_states) == (3, None)
    assert f"from {other}: max_depth = 3" in capsys.readouterr().err


def test_serq_toml_comes_first_and_the_nearest_wins(project, monkeypatch, capsys):
    here = Path.cwd()
    (here.parent / "serq.toml").write_text("max_states = 9\n")
    assert _parse(["explore", "chat.sq"]).max_states == 9
    (here / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no [tool.serq]: passed over
    assert _parse(["explore", "chat.sq"]).max_states == 9
    (here.parent / "pyproject.toml").write_text("[tool.serq]\nmax_states = 8\n")  # same folder: serq.toml first
    assert _parse(["explore", "chat.sq"]).max_states == 9
    (here / "pyproject.toml").write_text("[tool.serq]\nmax_states = 7\n")
    assert _parse(["explore", "chat.sq"]).max_states == 7


def errors_of(tmp_path, monkeypatch, capsys, text: str) -> str:
    (tmp_path / "serq.toml").write_text(text)
    (tmp_path / "chat.sq").write_text(CHAT)
    monkeypatch.chdir(tmp_path)
    assert main(["fmt", "chat.sq"]) == 2  # every command reads the file: fmt too
    out = capsys.readouterr()
    assert out.out == ""
    return out.err.replace(str(tmp_path) + "/", "")


def test_an_unknown_key_is_located_with_a_suggestion(tmp_path, monkeypatch, capsys):
    err = errors_of(tmp_path, monkeypatch, capsys, "# CI limits\ntime_limt = 600\n")
    assert err.splitlines()[:4] == [
        "serq.toml:2:1: error[E027]: unknown key `time_limt`; the keys are time_limit, memory, max_states, "
        "max_depth, max_steps, workers, graph_limit, symmetry, timing, ties",
        "  time_limt = 600",
        "  ^^^^^^^^^",
        "  note: did you mean `time_limit`?"]


@pytest.mark.parametrize("text, where, words", [
    ("max_states = -1\n", "1:14", "`max_states` must be non-negative (distinct states), got -1"),
    ("workers = 0\n", "1:11", "`workers` must be at least 1 (processes), got 0"),
    ("time_limit = \"10\"\n", "1:14", "`time_limit` must be a number of seconds of wall-clock time, got \"10\""),
    ("time_limit = nan\n", "1:14", "`time_limit` must be a finite number"),
    ("max_states = 1.5\n", "1:14", "`max_states` must be an integer of distinct states, got 1.5"),
    ("max_states = true\n", "1:14", "`max_states` must be an integer"),
    ("memory = 4096\n", "1:10", "`memory` must be a size with its unit"),
    ("memory = \"4\"\n", "1:10", "`memory`: a memory size needs a unit"),
    ("symmetry = \"no\"\n", "1:12", "`symmetry` must be true or false, got \"no\""),
    ("ties = \"any\"\n", "1:8", "`ties` must be \"all\" or \"seq\", got \"any\""),
    ("[explor]\nworkers = 2\n", "1:2", "unknown command `explor`"),
    ("[run]\nworkers = 2\n", "2:1", "`serq run` has no --workers: `workers` cannot be set for it"),
    ("[explore]\n  \"max_depth\" = -3  # a comment\n", "2:17", "`max_depth` must be non-negative"),
    ("a = 1\nb = = 2\n", "2:5", "not a TOML file: Invalid value"),
])
def test_a_bad_value_is_located(text, where, words, tmp_path, monkeypatch, capsys):
    err = errors_of(tmp_path, monkeypatch, capsys, text)
    head, quoted, caret = err.splitlines()[:3]
    assert head.startswith(f"serq.toml:{where}: error[E027]: ") and words in head, head
    line, col = map(int, where.split(":"))
    assert quoted == "  " + text.splitlines()[line - 1]
    assert caret.index("^") == col + 1


def test_a_pyproject_error_is_located_in_the_pyproject(tmp_path, monkeypatch, capsys):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.serq.explore]\nworkers = -2\n")
    (tmp_path / "chat.sq").write_text(CHAT)
    monkeypatch.chdir(tmp_path)
    assert main(["explore", "chat.sq"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}/pyproject.toml:5:11: error[E027]: `workers` must be at least 1" in err


def test_every_key_names_a_flag_some_command_has():
    from serq.cli import build_parser
    from serq.cli.config import KEYS

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    flags = {s for p in sub.choices.values() for a in p._actions for s in a.option_strings}
    attrs = {a.dest for p in sub.choices.values() for a in p._actions}
    for key, (flag, attr, _kind) in KEYS.items():
        assert flag in flags and attr in attrs, key


def test_help_answers_even_with_a_bad_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "serq.toml").write_text("workers = 0\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0 and "COMMAND" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["explore", "--help"])
    assert e.value.code == 0


@pytest.mark.parametrize("text, where, words", [
    ("tool = 3\n", "1:1", "`tool` must be a table"),
    ("[tool]\nserq = \"x\"\n", "2:1", "`tool.serq` must be a table"),
])
def test_a_named_pyproject_whose_table_is_no_table(text, where, words, tmp_path, capsys):
    f = tmp_path / "pyproject.toml"
    f.write_text(text)
    assert main(["--config", str(f), "fmt", "x.sq"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{f}:{where}: error[E027]: {words}"), err


def test_a_named_config_that_cannot_be_read(tmp_path, capsys):
    assert main(["--config", str(tmp_path / "nope.toml"), "fmt", "x.sq"]) == 2
    assert f"{tmp_path}/nope.toml: error[E011]: cannot read" in capsys.readouterr().err
