"""The commands that only read and print (`--help`, `fmt`, `compile`,
`completion`) start without the engine: they import neither numba, nor
numpy, nor the step kernel, the simulator or the explorer's engines (the
parser of every command is built without them: serq/cli/flags.py,
`later`). Checked on `sys.modules` in a fresh process, not timed
(bench/bench_startup.py measures the time)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTANCE = str(ROOT / "instances" / "vllm_chat.sq")

# the `serq` command's own entry (serq/__main__.py), then the modules it loaded
PROBE = """
import json, sys
sys.argv = ["serq"] + json.loads(sys.argv[1])
from serq.__main__ import main
try:
    code = main()
except SystemExit as e:
    code = e.code
import gc
print(json.dumps({"code": code, "modules": sorted(sys.modules), "frozen": gc.get_freeze_count()}), file=sys.stderr)
"""

HEAVY = ("numba", "numpy", "serq.semantics.kernel", "serq.semantics.engine", "serq.sim.simulator",
         "serq.check.model", "explorer.check", "explorer.strategies", "explorer.graph", "rich", "jinja2", "flask")


def probe(args: list[str], tmp_path) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True,
                       cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    return json.loads(r.stderr.strip().splitlines()[-1])


def loaded_by(args: list[str], tmp_path) -> tuple[int, list[str]]:
    out = probe(args, tmp_path)
    return out["code"], out["modules"]


def test_the_command_leaves_nothing_for_the_last_collection(tmp_path):
    """At its end the command freezes what it leaves out of the garbage
    collector (serq/__main__.py): the collection at exit scans nothing."""
    out = probe(["explore", str(ROOT / "instances" / "self_preempt.sq")], tmp_path)
    assert out["code"] == 11 and out["frozen"] > 10_000


@pytest.mark.parametrize("args", [["--help"], ["explore", "--help"], ["run", "--help"], ["fmt", INSTANCE],
                                  ["compile", INSTANCE], ["completion", "bash"]],
                         ids=["help", "explore-help", "run-help", "fmt", "compile", "completion"])
def test_reading_commands_import_no_engine(args, tmp_path):
    code, modules = loaded_by(args, tmp_path)
    assert code in (0, None)
    heavy = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert not heavy, f"serq {' '.join(args)} imports {heavy[:8]}"


def test_the_probe_sees_an_engine(tmp_path):
    """The check above is not vacuous: a command that explores loads the kernel."""
    bad = tmp_path / "bad.sq"
    bad.write_text("pool kv { cap x; }\n")  # an input error after the command's module is imported
    code, modules = loaded_by(["explore", str(bad)], tmp_path)
    assert code == 2
    assert "serq.cli.explore_run" in modules and "serq.check.model" in modules and "numba" in modules


def test_numbas_configuration_file_is_still_read(tmp_path):
    """numba starts without PyYAML when there is no `.numba_config.yaml`
    in the working directory (serq/__main__.py), and reads the file when
    there is one."""
    inst = str(ROOT / "instances" / "self_preempt.sq")
    out = probe(["explore", inst], tmp_path)
    assert out["code"] == 11 and "numba" in out["modules"] and "yaml" not in out["modules"]
    (tmp_path / ".numba_config.yaml").write_text("developer_mode: 0\n")
    out = probe(["explore", inst], tmp_path)
    assert out["code"] == 11 and "yaml" in out["modules"]
