"""Exploration by hash partitions in this process (explorer/strategies/partitions/driver.py),
checkpoints and resume (explorer/strategies/partitions/checkpoint.py), swarm search
(explorer/strategies/swarm.py): the partitions give the array engine's result exactly;
a resumed run gives the result of an uninterrupted one; a swarm's
counterexample replays. The same on a Ray cluster: tests/explorer/test_ray.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from explorer.model import ModelFactory
from explorer import check
from explorer.strategies.swarm import depth_bound
from serq.cli import main
from serq.check.model import Checks, SerqModel
from serq.check.explore import model_identity
from serq.lang.load import load_path
from tests.fixtures import liveness

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = sorted((ROOT / "instances").glob("*.sq"))
GOLDEN = ROOT / "tests" / "golden"

# six chats of the chat family (bench/bench_chat_family.py): long enough to
# be killed in the middle (14 levels, 282,547 states)
CHAT6 = """\
const BS = 4;
pool kv { cap 24; block BS; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 8; }
session chat {
  draw o in 1..4 hidden;
  let g = 0;
  hold kv need (6 + g) take 0 {
    prefill (6 + g) growing kv;
    decode (o - 1 - g) growing kv progress g;
  }
  end;
}
workload { 6 x chat; }
"""
CHAT6_OUT = ("pass: no violation in 282547 distinct states\n"
             "stats: generated=490197 distinct=282547 queue=0 max_depth=14\n")


def key(r):
    s = r.stats
    return (r.verdict, r.message, r.kind, r.replay_path, r.fingerprint, r.bound_reason, r.lasso_start,
            [t.fingerprint for t in r.trace], s.generated, s.distinct, s.queue, s.max_depth)


def factory(path, **kw):
    return ModelFactory(SerqModel, (load_path(path).program,), kw)


@pytest.mark.parametrize("path", [p for p in INSTANCES if not liveness(p)]  # (one process: refused)
                         + [ROOT / "tests" / "kernel_instances" / "constructs.sq"], ids=lambda p: p.stem)
def test_partitions_match_the_array_engine(path):
    f = factory(path)
    for kw, k in (({}, 1), ({}, 3), ({"max_states": 40}, 3), ({"max_depth": 3}, 2)):
        assert key(check(f, strategy="partitioned", partitions=k, **kw)) == key(check(f(), **kw)), (k, kw)
    for kw, k in (({}, 2), ({"max_states": 40}, 3)):  # partitions on 2 threads
        assert key(check(f, strategy="partitioned", partitions=k, workers=2, **kw)) == key(check(f(), **kw)), (k, kw)


@pytest.mark.parametrize("inst", [ROOT / "instances" / f"{n}.sq"
                                  for n in ("hol_none", "self_preempt", "theorem_no_fit")], ids=lambda p: p.stem)
def test_cli_partitions_print_the_golden_output(inst, capsys):
    code = main(["explore", str(inst), "--no-timing", "-q", "--partitions", "2"])
    out = capsys.readouterr().out
    assert out == (GOLDEN / f"{inst.stem}.txt").read_text()
    assert code == main(["explore", str(inst), "--no-timing", "-q"]) != 0
    capsys.readouterr()
    assert main(["explore", str(inst), "--no-timing", "-q", "--partitions", "2", "--workers", "2"]) == code
    assert capsys.readouterr().out == (GOLDEN / f"{inst.stem}.txt").read_text()


class StopAfter:
    """A progress callback that interrupts the run at its n-th level."""

    def __init__(self, n):
        self.n = n

    def __call__(self, stats):
        self.n -= 1
        if self.n < 0:
            raise KeyboardInterrupt


@pytest.mark.parametrize("name", ["multiturn_chat", "hol_none", "theorem_no_fit", "self_preempt", "vllm_chat"])
def test_resume_gives_the_uninterrupted_result(name, tmp_path):
    path = ROOT / "instances" / f"{name}.sq"
    f = factory(path)
    ident = {"instance": name}
    want = key(check(f()))
    cut = check(f, strategy="partitioned", partitions=2, checkpoint=str(tmp_path / "cp"), identity=ident,
                            progress=StopAfter(2), progress_interval=0.0)
    if cut.verdict != "interrupted":  # the verdict came in the first levels
        assert key(cut) == want
        return
    manifest = json.loads((tmp_path / "cp" / "manifest.json").read_text())
    assert manifest["depth"] >= 1
    got = check(f, strategy="partitioned", resume=str(tmp_path / "cp"), identity=ident)
    assert key(got) == want
    # and once more from where the resumed run left its checkpoint
    assert key(check(f, strategy="partitioned", resume=str(tmp_path / "cp"), identity=ident)) == want
    # a run resumed into another directory saves everything there
    cut = check(f, strategy="partitioned", resume=str(tmp_path / "cp"), checkpoint=str(tmp_path / "cp2"), identity=ident)
    assert key(cut) == want
    assert key(check(f, strategy="partitioned", resume=str(tmp_path / "cp2"), identity=ident)) == want


def test_resume_refuses_another_run(tmp_path, capsys):
    inst = ROOT / "instances" / "vllm_chat.sq"
    cp = tmp_path / "cp"
    assert main(["explore", str(inst), "-q", "--no-timing", "--checkpoint", str(cp), "--max-states", "3000"]) == 13
    capsys.readouterr()
    assert main(["explore", str(inst), "-q", "--checkpoint", str(cp)]) == 2
    assert "already holds a checkpoint" in capsys.readouterr().err
    for flags, why in ((["--max-states", "4000"], "search.max_states is 3000 there, 4000 now"),
                       (["--max-states", "3000", "--no-symmetry"], "model.symmetry is true there, false now"),
                       (["--max-states", "3000", "--partitions", "3"], "has 1 partitions, --partitions asks for 3")):
        assert main(["explore", str(inst), "-q", "--resume", str(cp)] + flags) == 2
        err = capsys.readouterr().err
        assert "E021" in err and why in err, err
    other = ROOT / "instances" / "theorem.sq"
    assert main(["explore", str(other), "-q", "--resume", str(cp), "--max-states", "3000"]) == 2
    assert "model.instance is" in capsys.readouterr().err
    assert main(["explore", str(inst), "-q", "--resume", str(tmp_path / "none")]) == 2
    assert "no checkpoint directory" in capsys.readouterr().err
    assert main(["explore", str(inst), "-q", "--no-timing", "--resume", str(cp), "--max-states", "3000"]) == 13
    assert "distinct=3000" in capsys.readouterr().out


def test_identity_names_instance_and_flags():
    prog = load_path(ROOT / "instances" / "theorem.sq").program
    m = SerqModel(prog)
    a = model_identity(prog, "all", True, m.checks)
    assert a == model_identity(load_path(ROOT / "instances" / "theorem.sq").program, "all", True, m.checks)
    assert a != model_identity(prog, "seq", True, m.checks)
    assert a["instance"] != model_identity(load_path(ROOT / "instances" / "theorem_no_lifo.sq").program,
                                           "all", True, m.checks)["instance"]


def wait_for_level(proc, manifest: Path, level: int, limit: float = 120.0) -> None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if proc.poll() is not None:
            pytest.fail(f"the run ended before level {level} was checkpointed: {proc.stderr.read()}")
        try:
            if json.loads(manifest.read_text())["depth"] >= level:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    pytest.fail("no checkpoint appeared")


def kill_and_resume(tmp_path, extra: list[str], capsys) -> None:
    inst = tmp_path / "chat6.sq"
    inst.write_text(CHAT6)
    cp = tmp_path / "cp"
    cmd = [sys.executable, "-m", "serq", "explore", str(inst), "-q", "--no-timing", "--checkpoint", str(cp)] + extra
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
    assert 4 <= depth < 14  # killed in the middle
    capsys.readouterr()
    code = main(["explore", str(inst), "-q", "--no-timing", "--resume", str(cp)] + [x for x in extra if x != "-q"])
    assert (code, capsys.readouterr().out) == (0, CHAT6_OUT)


def test_resume_after_sigkill(tmp_path, capsys):
    kill_and_resume(tmp_path, ["--partitions", "2"], capsys)


def test_checkpoint_is_committed_by_rename(tmp_path):
    f = factory(ROOT / "instances" / "multiturn_chat.sq")
    check(f, strategy="partitioned", partitions=2, checkpoint=str(tmp_path), identity={})
    names = sorted(os.listdir(tmp_path))
    assert not [n for n in names if n.endswith(".tmp")]
    doc = json.loads((tmp_path / "manifest.json").read_text())
    assert doc["partitions"] == 2 and doc["tags"] == list(range(doc["depth"] + 1))
    # only the last level's frontier is kept
    assert sorted(n for n in names if n.startswith("frontier")) == [f"frontier-{p}-{doc['depth']}.ckpt" for p in (0, 1)]


# ---------------------------------------------------------------- swarm


def test_swarm_finds_a_deadlock_that_replays(capsys):
    inst = ROOT / "instances" / "hol_none.sq"
    code = main(["explore", str(inst), "--swarm", "3", "--no-timing", "-q"])
    out = capsys.readouterr().out
    assert code == 10, out
    assert out.startswith("deadlock: ") and "found by search" in out
    path = [ln for ln in out.splitlines() if ln.startswith("replay: ")][0].split()[1]
    assert main(["explore", str(inst), "--replay", path, "--no-timing"]) == 10
    assert "into a deadlock" in capsys.readouterr().out


def test_swarm_finds_a_violation():
    # the stuck check finds this one (before any search ends and looks for a livelock)
    f = factory(ROOT / "instances" / "theorem_no_fit.sq", checks=Checks(stuck=True))
    r = check(f, strategy="swarm", searches=2, seed=5)
    assert (r.verdict, r.kind) == ("violation", "stuck")
    assert r.exit_code == 12 and r.replay_path


def test_swarm_without_a_finding_is_no_proof(capsys):
    inst = ROOT / "instances" / "vllm_chat.sq"
    code = main(["explore", str(inst), "--swarm", "2", "--max-states", "500", "--no-timing", "-q"])
    out = capsys.readouterr().out
    assert code == 17
    assert out.startswith("inconclusive: no violation, deadlock or livelock found by 2 randomized depth-first "
                          "searches")
    assert "this is not a proof" in out


def test_swarm_search_is_reproducible():
    f = factory(ROOT / "instances" / "theorem_no_fit.sq", checks=Checks(stuck=True))
    from explorer.strategies.swarm import search_once

    a = search_once(f, 0, 7, None, 10_000, None, True)
    b = search_once(f, 0, 7, None, 10_000, None, True)
    assert a.chain == b.chain and a.kind == b.kind == "violation"


def test_depth_bounds_vary():
    assert [depth_bound(i, None) for i in range(5)] == [None, 8, 32, 128, None]
    assert [depth_bound(i, 20) for i in range(4)] == [5, 10, 15, 20]


# ---------------------------------------------------------------- flags


@pytest.mark.parametrize("argv, flag, text", [
    (["--partitions", "0"], "--partitions", "--partitions must be at least 1"),
    (["--swarm", "0"], "--swarm", "--swarm must be at least 1"),
    (["--swarm", "2", "--checkpoint", "x"], "--checkpoint", "a swarm keeps no tables"),
    (["--partitions", "2", "--strategy", "dfs"], "--strategy", "explore by BFS only"),
    (["--ray", "local", "--workers", "2"], "--workers", "use --partitions K"),
    (["--partitions", "2", "--replay", "0"], "--partitions", "cannot be combined with --replay"),
])
def test_bad_cluster_flags(argv, flag, text, capsys):
    inst = ROOT / "instances" / "theorem.sq"
    assert main(["explore", str(inst)] + argv) == 2
    err = capsys.readouterr().err
    assert "E012" in err and text in err and flag in err, err


@pytest.mark.parametrize("extra", [[], ["--swarm", "2"], ["--resume", "x"]])
def test_ray_missing_names_the_extra(extra, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)
    assert main(["explore", str(ROOT / "instances" / "theorem.sq"), "--ray", "auto"] + extra) == 2
    err = capsys.readouterr().err
    assert "E020" in err and "pip install 'serq[ray]'" in err


def test_serq_does_not_import_ray():
    code = ("import sys; import serq.cli, serq.cli.explore, explorer.strategies.partitions.driver, explorer.strategies.swarm; "
            "from serq.cli import main; main(['explore', 'instances/theorem.sq', '-q', '--partitions', '2']); "
            "assert 'ray' not in sys.modules, 'ray imported'")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
