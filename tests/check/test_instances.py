"""The instance library: every instance's header states its expected
verdict (`// Expected verdict: WORD`) and, for theorem instances, its
expected theorem verdict (`// Expected theorem: holds` or
`// Expected theorem: H3 fails`); the explorer must agree, and its output
must equal the golden file under tests/golden/ byte for byte.

Regenerate the golden files after an intended change with
`SERQ_UPDATE_GOLDEN=1 pytest tests/check/test_instances.py` and read the diff."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from serq.cli import main

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = sorted((ROOT / "instances").glob("*.sq"))
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
UPDATE = os.environ.get("SERQ_UPDATE_GOLDEN") == "1"

VERDICT_CODES = {"pass": 0, "deadlock": 10, "livelock": 11, "stuck": 12, "violation": 12, "bound": 13}


def header(path: Path, key: str) -> str | None:
    m = re.search(rf"^// Expected {key}: *([A-Za-z0-9]+(?: fails)?)", path.read_text(), re.M)
    return m.group(1) if m else None


def run_cli(capsys, *argv) -> tuple[int, str]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, out


def compare_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"missing golden file {path}; run with SERQ_UPDATE_GOLDEN=1 to create it")
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"output differs from {path}"


@pytest.mark.parametrize("inst", INSTANCES, ids=lambda p: p.stem)
def test_instance_verdict_and_trace(inst, capsys):
    expected = header(inst, "verdict")
    assert expected is not None, f"{inst.name} has no `// Expected verdict:` header line"
    code, out = run_cli(capsys, "explore", str(inst), "--no-timing", "-q")
    first = out.splitlines()[0]
    assert code == VERDICT_CODES[expected], first
    if expected == "stuck":
        assert first.startswith("violation (stuck)"), first
    else:
        assert first.startswith(expected), first
    compare_golden(f"{inst.stem}.txt", out)


REPLAY_INSTANCES = [p for p in INSTANCES if re.search(r"^// Replay: ", p.read_text(), re.M)]


@pytest.mark.parametrize("inst", REPLAY_INSTANCES, ids=lambda p: p.stem)
def test_replay_in_header(inst, capsys):
    """A header's `// Replay: PATH` names a run worth reading (a
    preemption during decode and the resume, a self-preemption...); the
    path must replay and print the golden trace."""
    path = re.search(r"^// Replay: (\S+)", inst.read_text(), re.M).group(1)
    code, out = run_cli(capsys, "explore", str(inst), "--replay", path, "--no-timing")
    assert code == 0, out.splitlines()[0]
    compare_golden(f"{inst.stem}.replay.txt", out)


THEOREM_INSTANCES = [p for p in INSTANCES if header(p, "theorem")]


@pytest.mark.parametrize("inst", THEOREM_INSTANCES, ids=lambda p: p.stem)
def test_theorem_verdict(inst, capsys):
    expected = header(inst, "theorem")
    code, out = run_cli(capsys, "explore", "--theorem", str(inst), "--no-timing", "-q")
    first = out.splitlines()[0]
    if expected == "holds":
        assert first.startswith("theorem holds on this instance"), first
        assert code == 0
    else:
        hyp = expected.split()[0]
        assert first.startswith(f"hypothesis {hyp} "), first
        assert code != 14
    compare_golden(f"{inst.stem}.theorem.txt", out)


def test_every_instance_compiles(capsys):
    for inst in INSTANCES:
        assert main(["compile", str(inst)]) == 0, inst.name
        capsys.readouterr()


def test_h2_compares_what_is_taken_with_what_the_prefill_grows_to():
    # `take 0` alone sets need 0 too: need and take agree, yet nothing is
    # reserved and the prefill grows the hold block by block (H2 once held
    # vacuously here); `reserve (prompt + g)` covers its prefill
    from serq.lang.load import load_path
    from serq.check.theorem import hypotheses

    h2 = {h.code: h for h in hypotheses(load_path(ROOT / "instances" / "self_preempt.sq").program)}["H2"]
    assert h2.holds is False
    assert h2.witnesses == ["long: its prefill grows its hold on `kv` from 0 to 2 blocks, past what the hold took at admission"]
    h2 = {h.code: h for h in hypotheses(load_path(ROOT / "instances" / "theorem.sq").program)}["H2"]
    assert (h2.holds, h2.witnesses) == (True, [])


def test_h2_counts_a_negative_take_as_the_kernel_admits_it():
    """A hold admitted in the step its prefill grows: what it took is the
    kernel's admission rule (a negative take is 0 units), not the clause's
    raw value (it said "from -2 to 3 blocks")."""
    from serq.lang.load import load_text
    from serq.check.theorem import hypotheses

    src = """pool kv { cap 8; block 1; admit via gpu; preempt lifo; }
stage gpu { budget 4; serve (admitted); }
session chat { let g = 0; hold kv need 3 take (g - 2) { prefill 3 growing kv; decode 1 growing kv progress g; } }
workload { 1 x chat; }
"""
    h2 = {h.code: h for h in hypotheses(load_text(src, "t.sq").program)}["H2"]
    assert "chat: its prefill grows its hold on `kv` from 0 to 3 blocks, past what the hold took at admission" \
        in h2.witnesses, h2.witnesses
