"""`serq completion bash|zsh|fish`: scripts generated from the parser name
every subcommand and flag; the bash script is valid bash and completes
subcommands, flags and the choices of a flag when bash runs it."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from serq.cli import build_parser, main
from serq.cli.completion import commands


def script(shell: str, capsys) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def every_command():
    return commands(build_parser())


def test_the_parser_as_data_has_every_command():
    cmds = {c.path: c for c in every_command()}
    assert {"compile", "fmt", "run", "check", "explore", "sweep", "ui", "oracle", "completion",
            "oracle trace", "oracle compare"} <= set(cmds)
    assert "--max-states" in [n for o in cmds["explore"].options for n in o.names]
    strategy = next(o for o in cmds["explore"].options if "--strategy" in o.names)
    assert strategy.choices == ["bfs", "dfs"] and strategy.takes_value


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_subcommand_and_flag_is_in_the_script(shell, capsys):
    text = script(shell, capsys)
    for c in every_command():
        for s in c.subcommands:
            assert s in text, (shell, s)
        for o in c.options:
            for n in o.names:
                assert (n if shell != "fish" else n.lstrip("-")) in text, (shell, n)


def test_bash_script_is_valid_bash(capsys, tmp_path):
    f = tmp_path / "serq.bash"
    f.write_text(script("bash", capsys))
    r = subprocess.run(["bash", "-n", str(f)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def complete(tmp_path, capsys, *words: str) -> list[str]:
    """What bash offers for `serq WORDS...` (the last word being completed)."""
    f = tmp_path / "serq.bash"
    if not f.exists():
        f.write_text(script("bash", capsys))
    ws = " ".join(f"'{w}'" for w in ("serq",) + words)
    prog = f'source {f}; COMP_WORDS=({ws}); COMP_CWORD={len(words)}; _serq; printf "%s\\n" "${{COMPREPLY[@]}}"'
    r = subprocess.run(["bash", "-c", prog], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return [x for x in r.stdout.splitlines() if x]


def test_bash_completes_subcommands_flags_and_choices(tmp_path, capsys):
    assert complete(tmp_path, capsys, "ex") == ["explore"]
    assert complete(tmp_path, capsys, "c") == ["compile", "check", "completion"]
    assert complete(tmp_path, capsys, "explore", "--max-s") == ["--max-states"]
    assert complete(tmp_path, capsys, "explore", "--strategy", "") == ["bfs", "dfs"]
    assert complete(tmp_path, capsys, "explore", "x.sq", "--check", "dead") == ["deadlock"]
    assert complete(tmp_path, capsys, "oracle", "tr") == ["trace"]
    assert complete(tmp_path, capsys, "oracle", "trace", "--f") == ["--full"]
    # a flag's value is not taken for a subcommand: `--seed run` stays in `explore`
    assert complete(tmp_path, capsys, "explore", "--seed", "run", "--the") == ["--theorem"]
    (tmp_path / "a.sq").write_text("")
    assert complete(tmp_path, capsys, "explore", "a.") == ["a.sq"]


def test_an_unknown_shell_is_refused_with_a_suggestion(capsys):
    with pytest.raises(SystemExit) as e:
        main(["completion", "bsh"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'bsh'" in err and "did you mean `bash`?" in err


@pytest.mark.skipif(shutil.which("fish") is None, reason="no fish on this machine")
def test_fish_script_is_valid_fish(capsys, tmp_path):
    f = tmp_path / "serq.fish"
    f.write_text(script("fish", capsys))
    assert subprocess.run(["fish", "--no-execute", str(f)]).returncode == 0


@pytest.mark.skipif(shutil.which("zsh") is None, reason="no zsh on this machine")
def test_zsh_script_is_valid_zsh(capsys, tmp_path):
    f = tmp_path / "_serq"
    f.write_text(script("zsh", capsys))
    assert subprocess.run(["zsh", "-n", str(f)]).returncode == 0
