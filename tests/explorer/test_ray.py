"""Exploration on a real Ray cluster started here: a head and a second node
(two raylets on this machine's address -- told 127.0.0.1, Ray 2.60's
processes wait forever for a GCS it advertises elsewhere -- with one CPU
and a 100 MB object store each), shared by every test of the module.
The partitions on Ray print the golden output of every instance; a run
whose driver is killed resumes to the same result; a partition's worker
killed mid-run ends the run with a message naming the last checkpoint; a
swarm runs as Ray tasks."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from explorer.strategies.partitions import backends as distributed, driver  # noqa: E402
from serq.cli import main  # noqa: E402

from test_distributed import CHAT6, CHAT6_OUT, wait_for_level  # noqa: E402
from tests.fixtures import liveness, per_request_slo  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
# an instance with a per-request SLO check explores a model without rows, which Ray cannot run (E012);
# one with `check eventually` is looked for by one process (E012)
INSTANCES = [p for p in sorted((ROOT / "instances").glob("*.sq")) if not per_request_slo(p) and not liveness(p)]
GOLDEN = ROOT / "tests" / "golden"
STORE = 100 * 2**20  # object store bytes per node: the machine is shared


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True,
                head_node_args={"num_cpus": 1, "object_store_memory": STORE, "include_dashboard": False})
    try:
        c.add_node(num_cpus=1, object_store_memory=STORE)
        distributed.connect(c.address)
        assert len([n for n in ray.nodes() if n["Alive"]]) == 2
        yield c.address
    finally:
        distributed._POOL.clear()
        ray.shutdown()
        c.shutdown()


def test_unreachable_cluster_is_an_input_error(capsys):
    assert not ray.is_initialized()  # before the module's cluster starts
    assert main(["explore", str(ROOT / "instances" / "theorem.sq"), "-q", "--ray", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "E022" in err and "nothing answers at 127.0.0.1:1" in err


def _example(out: str) -> str:
    return re.sub(r"a session can be stuck \((chat|agent|sub)[^ ]* ", "a session can be stuck (S ", out)


@pytest.mark.parametrize("inst", INSTANCES, ids=lambda p: p.stem)
def test_ray_prints_the_golden_output(cluster, inst, capsys):
    code = main(["explore", str(inst), "--no-timing", "-q", "--ray", cluster, "--partitions", "2"])
    out = capsys.readouterr().out
    # the stuck note's example is the first its partition met (docs/explorer.md): the rest is byte for byte
    assert _example(out) == _example((GOLDEN / f"{inst.stem}.txt").read_text())
    assert code == main(["explore", str(inst), "--no-timing", "-q"])


def test_ray_actors_spread_over_both_nodes(cluster, capsys):
    main(["explore", str(ROOT / "instances" / "theorem.sq"), "-q", "--ray", cluster, "--partitions", "2"])
    actors = distributed._POOL[2]
    nodes = ray.get([a.__ray_call__.remote(lambda self: ray.get_runtime_context().get_node_id()) for a in actors])
    assert len(set(nodes)) == 2


def test_ray_resume_after_the_driver_is_killed(cluster, tmp_path, capsys):
    inst = tmp_path / "chat6.sq"
    inst.write_text(CHAT6)
    cp = tmp_path / "cp"
    cmd = [sys.executable, "-m", "serq", "explore", str(inst), "-q", "--no-timing", "--checkpoint", str(cp),
           "--ray", cluster, "--partitions", "2"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_level(proc, cp / "manifest.json", 4)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    depth = json.loads((cp / "manifest.json").read_text())["depth"]
    assert 4 <= depth < 14
    code = main(["explore", str(inst), "-q", "--no-timing", "--resume", str(cp), "--ray", cluster])
    assert (code, capsys.readouterr().out) == (0, CHAT6_OUT)


def test_ray_swarm_finds_a_deadlock(cluster, capsys):
    inst = ROOT / "instances" / "hol_none.sq"
    code = main(["explore", str(inst), "--swarm", "2", "--ray", cluster, "--no-timing", "-q"])
    out = capsys.readouterr().out
    assert code == 10 and "found by search" in out, out
    path = [ln for ln in out.splitlines() if ln.startswith("replay: ")][0].split()[1]
    assert main(["explore", str(inst), "--replay", path, "--no-timing"]) == 10


def test_ray_lost_worker_names_the_last_checkpoint(cluster, tmp_path, monkeypatch, capsys):
    level = driver._Driver._level

    def kill_at_level_3(self):
        if self.depth == 3:
            pid = ray.get(self.b.actors[1].pid.remote())
            os.kill(pid, signal.SIGKILL)  # a worker of the cluster this module started
        return level(self)

    monkeypatch.setattr(driver._Driver, "_level", kill_at_level_3)
    cp = tmp_path / "cp"
    code = main(["explore", str(ROOT / "instances" / "vllm_chat.sq"), "-q", "--ray", cluster, "--partitions", "2",
                 "--checkpoint", str(cp)])
    err = capsys.readouterr().err
    assert code == 18, err
    assert "partition 1 of 2 was lost" in err
    assert f"last checkpoint: {cp} (level 3," in err and f"--resume {cp}" in err
    assert 2 not in distributed._POOL  # the other actors were stopped, not kept


def _ray_task_pids(name: str) -> list[int]:
    """Processes of this machine running the Ray task `name` (Ray titles them `ray::name`)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "cmdline").read_bytes().startswith(f"ray::{name}".encode()):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def test_ray_swarm_search_killed_is_failed(cluster, tmp_path, capsys):
    """A swarm's Ray task whose worker is killed with SIGKILL: `failed`
    (exit 18) naming the search, the statistics so far, the others cancelled."""
    import re
    import threading
    import time

    from test_supervised_pools import FOREVER_N

    inst = tmp_path / "forever.sq"
    inst.write_text(FOREVER_N.replace("const N = 1;", "const N = 2;"))
    killed = []

    def killer():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pids = _ray_task_pids("_ray_search")
            if pids:
                time.sleep(1.0)
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
                return
            time.sleep(0.1)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    code = main(["explore", str(inst), "--swarm", "2", "--ray", cluster, "--max-depth", "100000",
                 "--time-limit", "100", "--no-timing"])
    t.join(5)
    out = capsys.readouterr().out
    assert killed, "no search task seen"
    assert code == 18, out
    # (Ray's own log of the dead worker may come first on stdout)
    assert re.search(r"^failed: search [01] was lost \(\w+\); stopped after \d+ distinct states, none of them a "
                     r"violation; exploration incomplete$", out, re.M), out
    assert out.splitlines()[-1].startswith("stats: generated=")
