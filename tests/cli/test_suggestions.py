"""A misspelled subcommand, flag, flag choice or `--worst` metric gets
"did you mean ...?" (the note the language gives for a misspelled name),
after argparse's own words; nothing close, no note."""

from __future__ import annotations

from pathlib import Path

import pytest

from serq.cli import main

ROOT = Path(__file__).resolve().parents[2]
CHAT = str(ROOT / "instances" / "vllm_chat.sq")


def error_of(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as e:
        main(list(argv))
    assert e.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("argv, words, hint", [
    (["explor", "x.sq"], "invalid choice: 'explor'", "explore"),
    (["fmtt", "x.sq"], "invalid choice: 'fmtt'", "fmt"),
    (["oracle", "trac"], "invalid choice: 'trac'", "trace"),
    (["explore", "x.sq", "--strategy", "bsf"], "argument --strategy: invalid choice: 'bsf'", "bfs"),
    (["explore", "x.sq", "--check", "deadlok"], "invalid choice: 'deadlok'", "deadlock"),
    (["explore", "x.sq", "--max-stats", "3"], "unrecognized arguments: --max-stats 3", "--max-states"),
    (["explore", "x.sq", "--workrs=3"], "unrecognized arguments: --workrs=3", "--workers"),
    (["run", "x.sq", "--horizn", "5s"], "unrecognized arguments: --horizn 5s", "--horizon"),
    (["oracle", "trace", "s.json", "--fulll"], "unrecognized arguments: --fulll", "--full"),
])
def test_a_misspelling_gets_the_nearest_word(argv, words, hint, capsys):
    err = error_of(capsys, *argv)
    assert words in err
    assert err.rstrip().endswith(f"note: did you mean `{hint}`?"), err


def test_an_unknown_flag_is_shown_with_its_commands_usage(capsys):
    err = error_of(capsys, "explore", "x.sq", "--max-stats", "3")
    assert err.startswith("usage: serq explore ")
    assert "serq explore: error: unrecognized arguments" in err


def test_nothing_close_no_note(capsys):
    assert "did you mean" not in error_of(capsys, "zzzzzz")
    assert "did you mean" not in error_of(capsys, "explore", "x.sq", "--qqqqqqq")
    assert "did you mean" not in error_of(capsys, "explore", "x.sq", "--strategy", "zzz")


def test_a_misspelled_metric_gets_the_nearest_metric(capsys):
    assert main(["explore", CHAT, "--worst", "ttf"]) == 2
    err = capsys.readouterr().err
    assert "--worst:1:1: error[E014]: unknown metric `ttf`" in err
    assert "  note: did you mean `ttft`?" in err
    assert main(["explore", CHAT, "--worst", "latncy-time"]) == 2
    assert "did you mean `latency-time`?" in capsys.readouterr().err


def test_a_misspelled_pool_of_a_metric_gets_the_nearest_pool(capsys):
    assert main(["explore", CHAT, "--worst", "peak:kvv"]) == 2
    err = capsys.readouterr().err
    assert "--worst:1:6: error[E014]: unknown pool `kvv`; the pools are kv, seqs" in err
    assert "did you mean `kv`?" in err


def test_an_unknown_metric_far_from_any_has_no_note(capsys):
    assert main(["explore", CHAT, "--worst", "zzzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err
