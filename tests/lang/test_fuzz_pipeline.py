"""Fuzzing the whole pipeline (hypothesis): mutants of the instance
library's source with numeric edges, deep and wide expressions, token
edits, and of its IR JSON, through compile, validate, fmt, run and explore with small
budgets. Nothing may come out but located diagnostics or a result. The
generators are bench/fuzz.py's (whose campaign runs 10^5 of each)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.fuzz import Crash, deep_mutant, ir_mutant, numeric_mutant, pipeline, text_mutant


def _clean(kind, text):
    try:
        pipeline(kind, text, max_states=100, max_steps=100, time_limit=1.0)
    except Crash as c:
        raise AssertionError(f"{c}\n{c.tb}\n--- mutant:\n{text[:2000]}") from None


def _settings(n):
    return settings(max_examples=n, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_settings(40)
@given(st.randoms(use_true_random=False))
def test_numeric_edges_give_diagnostics_or_results(rng):
    _clean("numeric", numeric_mutant(rng))


@_settings(12)
@given(st.randoms(use_true_random=False))
def test_deep_and_wide_expressions_give_diagnostics_or_results(rng):
    _clean("deep", deep_mutant(rng))


@_settings(80)
@given(st.randoms(use_true_random=False))
def test_ir_mutants_give_diagnostics_or_results(rng):
    _clean("ir", ir_mutant(rng))


@_settings(60)
@given(st.randoms(use_true_random=False))
def test_token_edits_give_diagnostics_or_results(rng):
    _clean("text", text_mutant(rng))


def test_a_workload_of_a_million_sessions_keeps_the_time_limit():
    """The fuzzer's hangs: `workload { 1000000 x ... }` mutants ran past
    their time limit while the simulator built their model; they now end
    at it (`serq run` exits 13)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "instances" / "join_in_hold.sq").read_text()
    text = text.replace("workload { 1 x parent; }", "workload { 1000000 x parent; }")
    assert "1000000 x parent" in text
    assert pipeline("numeric", text, max_states=100, max_steps=100, time_limit=0.0) == "bound"


def test_the_pipeline_reports_a_crash(monkeypatch):
    """The harness itself can fail: an exception that is not a diagnostic is a Crash."""
    import pytest

    from bench.fuzz import TEXTS
    from serq.sim import simulator as sim

    assert pipeline("numeric", "const A = ;") == "rejected"
    assert pipeline("numeric", TEXTS["theorem.sq"]) == "pass"

    def boom(self):
        raise ValueError("boom")
    monkeypatch.setattr(sim.Simulator, "run", boom)
    with pytest.raises(Crash, match="run: ValueError: boom"):
        pipeline("numeric", TEXTS["theorem.sq"])
