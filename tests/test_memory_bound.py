"""The memory bound: `--memory SIZE` (or the default, from the memory
available) and a `MemoryError` end a search with the verdict "bound"
(reason "memory", exit 13) and the statistics so far."""

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.memory import MemoryGuard, default_limit, parse_size, rss
from serq.cli import main
from test_interrupts import FOREVER

ROOT = Path(__file__).resolve().parent.parent


def test_parse_size():
    assert parse_size("512M") == 512 << 20
    assert parse_size("1.5G") == 3 << 29
    assert parse_size("2GiB") == parse_size("2gb") == 2 << 30
    for bad in ("400", "", "G", "-1G", "nanG", "1e400G", "12X"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_guard_and_default():
    assert rss() > 0
    assert MemoryGuard(1).over() and not MemoryGuard(None).over()
    assert default_limit() > rss()


@pytest.mark.parametrize("flags", [[], ["--workers", "2"], ["--strategy", "dfs"]], ids=["bfs", "workers2", "dfs"])
def test_memory_flag_stops_cleanly(tmp_path, capsys, flags):
    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)
    assert main(["explore", str(inst), "--memory", "1M", "--no-timing", *flags]) == 13
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "bound: no violation within the bound (memory=1MiB); exploration incomplete"
    assert out[-1].startswith("stats: generated=")


def test_memory_flag_needs_a_unit(capsys):
    assert main(["explore", "instances/self_preempt.sq", "--memory", "4000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("--memory:1:1: error[E012]: a memory size needs a unit")


def test_memory_error_under_ulimit_is_a_clean_stop(tmp_path):
    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER)

    def low():  # the address space of the child only: enough to load, not to explore for ever
        resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))

    r = subprocess.run([sys.executable, "-m", "serq", "explore", str(inst), "--strategy", "dfs", "--memory", "100G",
                        "--no-timing"], cwd=ROOT, capture_output=True, text=True, preexec_fn=low, timeout=600)
    assert r.returncode == 13, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "bound: no violation within the bound (memory=MemoryError); exploration incomplete"
    assert int(lines[-1].split("distinct=")[1].split()[0]) > 0
