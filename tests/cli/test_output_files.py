"""Every output file (`-o`, `--schedule`, `--html`, standard output,
checkpoints) goes through explorer/runtime/outfile.py: a write that fails is E017
naming the file and the cause, never a traceback, and a file is written
under a temporary name and renamed, so a partial file never takes the
name."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from serq.cli import main

ROOT = Path(__file__).resolve().parents[2]
INST = str(ROOT / "instances" / "hol_none.sq")
SCENARIO = str(ROOT / "tests" / "vllm" / "01_chunked_prefill_with_decodes.json")

needs_devices = pytest.mark.skipif(not (os.path.exists("/dev/full") and os.path.exists("/proc/version")),
                                   reason="needs /dev/full and /proc/version")


@needs_devices
@pytest.mark.parametrize("argv", [
    ["compile", INST, "-o", "{}"],
    ["run", INST, "--schedule", "{}"],
    ["run", INST, "--html", "{}"],
    ["explore", INST, "-q", "--html", "{}"],
    ["oracle", "convert", SCENARIO, "-o", "{}"],
])
@pytest.mark.parametrize("target,why", [("/dev/full", "No space left on device"),
                                        ("/proc/version", "Input/output error")])
def test_a_failed_write_names_the_file_and_the_cause(argv, target, why, capsys):
    pytest.importorskip("jinja2") if "--html" in argv else None
    code = main([a.format(target) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"error[E017]: cannot write {target}: {why}" in err, err
    assert "Traceback" not in err


@needs_devices
@pytest.mark.parametrize("argv", [["explore", INST, "--json"], ["run", INST, "--json"], ["compile", INST]])
def test_standard_output_that_fails_is_named(argv):
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "serq"] + argv, cwd=ROOT, stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "error[E017]: cannot write standard output: No space left on device" in p.stderr
    assert "Traceback" not in p.stderr and "Exception ignored" not in p.stderr


def _no_space(fd):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("argv", [
    ["compile", INST, "-o", "{}"],
    ["run", INST, "--schedule", "{}"],
    ["oracle", "convert", SCENARIO, "-o", "{}"],
])
def test_a_failed_write_leaves_no_partial_file(argv, tmp_path, monkeypatch, capsys):
    """The data cannot be made durable (no space when flushed): the old
    file keeps its content, no temporary file is left behind."""
    target = tmp_path / "out"
    target.write_text("old\n")
    monkeypatch.setattr(os, "fsync", _no_space)
    assert main([a.format(target) for a in argv]) == 2
    err = capsys.readouterr().err
    assert f"error[E017]: cannot write {target}: No space left on device" in err, err
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out"]


def test_a_new_file_appears_whole_or_not_at_all(tmp_path, monkeypatch):
    from explorer.runtime.outfile import output, write_output

    target = tmp_path / "new.txt"
    with pytest.raises(RuntimeError):
        with output(str(target)) as f:
            f.write("half")
            raise RuntimeError("the producer failed")
    assert os.listdir(tmp_path) == []
    write_output(str(target), "whole\n")
    assert target.read_text() == "whole\n" and os.listdir(tmp_path) == ["new.txt"]


def test_links_modes_and_devices(tmp_path):
    from explorer.runtime.outfile import OutputError, write_output

    real = tmp_path / "real.txt"
    real.write_text("x")
    real.chmod(0o640)
    link = tmp_path / "link.txt"
    link.symlink_to("real.txt")
    write_output(str(link), "y")
    assert link.is_symlink() and real.read_text() == "y"
    assert (real.stat().st_mode & 0o777) == 0o640
    write_output(os.devnull, "nothing")  # a device is written in place, not replaced
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
    with pytest.raises(OutputError, match="it is a directory"):
        write_output(str(tmp_path), "z")
    with pytest.raises(OutputError, match=f"no directory {tmp_path / 'none'}"):
        write_output(str(tmp_path / "none" / "f"), "z")


def fake_oracle(tmp_path, code: int = 0):
    """An oracle environment whose `python` prints the recorded trace of a
    scenario (the driver's standard output) and its summary (stderr)."""
    trace = ROOT / "tests" / "vllm" / "01_chunked_prefill_with_decodes.trace.jsonl"
    py = tmp_path / "venv" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text(f"#!/bin/sh\ncat '{trace}'\necho '{{\"status\": \"complete\", \"steps\": 9, \"finished\": 3, "
                  f"\"requests\": 3}}' >&2\nexit {code}\n")
    py.chmod(0o755)
    return tmp_path / "venv", trace


def test_oracle_trace_is_written_whole(tmp_path, capsys):
    venv, trace = fake_oracle(tmp_path)
    out = tmp_path / "t.jsonl"
    assert main(["oracle", "trace", SCENARIO, "--venv", str(venv), "-o", str(out)]) == 0
    assert out.read_text() == trace.read_text()
    assert main(["oracle", "trace", SCENARIO, "--venv", str(venv)]) == 0
    assert capsys.readouterr().out == trace.read_text()  # `-o -`: standard output
    if os.path.exists("/dev/full"):
        assert main(["oracle", "trace", SCENARIO, "--venv", str(venv), "-o", "/dev/full"]) == 2
        assert "error[E017]: cannot write /dev/full: No space left on device" in capsys.readouterr().err


def test_oracle_trace_of_a_failed_driver_leaves_no_file(tmp_path, capsys):
    venv, _ = fake_oracle(tmp_path, code=1)
    out = tmp_path / "t.jsonl"
    assert main(["oracle", "trace", SCENARIO, "--venv", str(venv), "-o", str(out)]) == 2
    assert "the driver failed (exit 1)" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["venv"]
