"""`check eventually admitted|done [under weak|strong]` (serq/check/liveness.py,
explorer/graph/fair.py): verdicts, lassos and state counts pinned on the
library's instance and on variants of it (a pass, a vacuous pass, `done`,
strong fairness), the other engines' stored-graph path against the array
engine, `--replay` judging a lasso as the search does, JSON against the
shipped schema, and bad input located. The brute-force cross-check is
tests/check/test_liveness_brute.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.check import check
from explorer.model import ModelFactory
from serq.check.explore import explore
from serq.check.slo import make_model
from serq.cli import main
from serq.diagnostics import SerqError
from serq.lang.load import load_path, load_text

ROOT = Path(__file__).resolve().parents[2]
STARVED = ROOT / "instances" / "starved_large.sq"
TEXT = STARVED.read_text()
# first come, first served: `big` is admitted once the pool drains
FIFO = TEXT.replace("queue (desc pr, arrived); hol skip; ", "")
# event-driven admission on an infinite pool: nobody ever queues
NO_QUEUE = TEXT.replace("cap 8; ", "").replace("admit via gpu; ", "")


def program(text: str = TEXT, name: str = "starved_large.sq"):
    return load_text(text, name, explorer=True).program


def run(text: str = TEXT, checks=None, **kw):
    return explore(program(text), checks=checks, graph_limit=0, **kw)


def test_the_instance_starves_big_with_its_lasso():
    r = run()
    assert (r.verdict, r.kind, r.exit_code) == ("violation", "eventually admitted", 12)
    assert r.message.startswith("big#3 waits in kv's queue for ever: a cycle of 3 steps, reached after 5 steps")
    assert (r.stats.distinct, r.stats.generated) == (453, 995)  # without symmetry: a session keeps its id
    assert r.lasso_start == 5 and len(r.trace) == 9
    assert r.trace[-1].fingerprint == r.trace[r.lasso_start].fingerprint
    assert r.replay_path == "0/0/0/0/0/2/1/0/2"
    sm = make_model(program(), checks=None)
    assert all(sm.waiting(s.state) >> 2 & 1 for s in r.trace[r.lasso_start:])  # big#3 waits throughout
    # `check completes` alone passes: no deadlock, no livelock
    assert run(checks=["completes"]).verdict == "pass"


def test_golden_lasso_text(capsys):
    code = main(["explore", str(STARVED), "--no-timing", "-q"])
    out = capsys.readouterr().out
    assert code == 12
    assert out == (ROOT / "tests" / "golden" / "starved_large.txt").read_text()


def test_first_come_first_served_passes():
    r = run(FIFO)
    assert r.verdict == "pass" and r.message == "no violation in 335 distinct states"
    assert run(FIFO, checks=["eventually done under strong"]).verdict == "pass"


def test_no_queue_holds_vacuously():
    r = run(NO_QUEUE)
    assert r.verdict == "pass" and r.stats.distinct == 183
    assert r.message.endswith("no session ever waits in a queue: `check eventually admitted` (line 43) holds vacuously")
    # `done` is not vacuous there: the chats have requests under way
    assert "vacuously" not in run(NO_QUEUE, checks=["eventually done"]).message


def test_done_and_strong_fairness():
    r = run(checks=["eventually done under strong"])
    assert (r.verdict, r.kind) == ("violation", "eventually done")
    assert r.message.startswith("big#3's request never finishes (queued for ever): a cycle of 3 steps")
    assert "strongly fair" in r.message and "under strong" in r.message
    # both goals: the first discovered entry, the admitted goal's subject
    both = run(checks=["eventually admitted", "eventually done"])
    assert (both.verdict, both.kind) == ("violation", "eventually admitted")


def test_livelock_and_deadlock_instances():
    r = explore(load_path(ROOT / "instances" / "self_preempt.sq", explorer=True).program,
                checks=["eventually done"], graph_limit=0)
    assert (r.verdict, r.kind, r.lasso_start) == ("violation", "eventually done", 2)
    r = explore(load_path(ROOT / "instances" / "hol_none.sq", explorer=True).program,
                checks=["eventually done"], graph_limit=0)
    assert (r.verdict, r.kind, r.lasso_start) == ("violation", "eventually done", None)
    assert "the run ends after 6 steps with it waiting" in r.message
    # with the livelock check too, the livelock comes first (same pass over the edges)
    r = explore(load_path(ROOT / "instances" / "self_preempt.sq", explorer=True).program,
                checks=["livelock", "eventually done"], graph_limit=0)
    assert r.verdict == "livelock"


@pytest.mark.parametrize("text", [TEXT, FIFO, NO_QUEUE], ids=["starved", "fifo", "no_queue"])
@pytest.mark.parametrize("how", ["dfs", "exact"])
def test_stored_graph_path_agrees_with_the_array_engine(text, how):
    a = run(text)
    b = run(text, strategy="dfs") if how == "dfs" else run(text, exact=True)
    assert (a.verdict, a.kind) == (b.verdict, b.kind)
    if how == "exact":  # the same BFS numbering: the same lasso
        assert (a.replay_path, a.lasso_start, a.message) == (b.replay_path, b.lasso_start, b.message)


def test_replay_judges_the_lasso(capsys):
    r = run()
    code = main(["explore", str(STARVED), "--replay", r.replay_path, "--no-timing"])
    out = capsys.readouterr().out
    assert code == 12 and out.splitlines()[0] == "violation (eventually admitted): " + r.message
    code = main(["explore", str(STARVED), "--replay", "/".join(r.replay_path.split("/")[:-1]), "--no-timing"])
    assert code == 0, capsys.readouterr().out


def test_json_and_page(capsys, tmp_path):
    from tests.cli.test_json_formats import validate

    code = main(["explore", str(STARVED), "--json", "--no-timing"])
    d = json.loads(capsys.readouterr().out)
    assert code == 12 and d["verdict"] == "violation" and d["kind"] == "eventually admitted"
    assert d["lasso_start"] == 5 and len(d["trace"]) == 9
    validate(d, "serq-explore")
    page = tmp_path / "p.html"
    assert main(["explore", str(STARVED), "--html", str(page), "-q"]) == 12
    assert "big#3" in page.read_text()


def test_the_model_declares_fair_only_when_asked():
    plain = make_model(load_path(ROOT / "instances" / "multiturn_chat.sq", explorer=True).program)
    assert "fair" not in plain.capabilities and plain.symmetry
    live = make_model(program())
    assert "fair" in live.capabilities and not live.symmetry


def test_engine_refuses_workers():
    f = ModelFactory(make_model, (program(),))
    with pytest.raises(ValueError, match="one process"):
        check(f, workers=2)


# ---------------------------------------------------------------- bad input


def errors(text: str):
    with pytest.raises(SerqError) as e:
        load_text(text, "x.sq", explorer=True)
    return e.value.diagnostics


@pytest.mark.parametrize("line, code, col, words", [
    ("check eventually admited;", "E100", 18, "unknown goal `admited`"),
    ("check eventually done under fair;", "E100", 29, "unknown fairness `fair`"),
    ("check eventually done; check eventually done under strong;", "E403", 41, "given twice"),
    ("check eventually;", "E001", 17, "unexpected"),
    ("check eventually done under;", "E001", 28, "unexpected"),
])
def test_bad_check_lines_are_located(line, code, col, words):
    text = TEXT.replace("check eventually admitted;", line)
    d = errors(text)[0]
    assert (d.code, d.line, d.col) == (code, 43, col), (d.code, d.line, d.col, d.message)
    assert words in d.message


def test_did_you_mean():
    d = errors(TEXT.replace("check eventually admitted;", "check eventually admited;"))[0]
    assert d.notes == ("did you mean `admitted`?",)


@pytest.mark.parametrize("argv, flag, words", [
    (["--workers", "2"], "--workers", "by one process"),
    (["--partitions", "2"], "--partitions", "by one process"),
    (["--swarm", "2"], "--swarm", "by one process"),
    (["--check", "eventually dne"], "--check", "unknown goal `dne`"),
    (["--check", "eventually done under strng"], "--check", "unknown fairness `strng`"),
    (["--check", "eventually admitted", "--check", "ttft<=3"], "--check", "explored apart"),
])
def test_bad_flags_are_refused(argv, flag, words, capsys):
    code = main(["explore", str(STARVED), *argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"{flag}:1:") and words in err, err


def test_too_many_sessions_is_refused(capsys):
    text = TEXT.replace("2 x chat(pr=1);", "70 x chat(pr=1);")
    path = Path("/tmp") / "serq_many_sessions.sq"
    path.write_text(text)
    code = main(["explore", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "E601" in err and ":43:" in err and "at most 64 sessions" in err


def test_simulation_and_diff_say_they_do_not_check_it(capsys, tmp_path):
    # W516: serq run and serq check (one finite run cannot show a session waiting for ever)
    assert main(["check", str(STARVED), "--max-steps", "200"]) in (0, 13)
    err = capsys.readouterr().err
    assert "starved_large.sq:43:18: warning[W516]: `check eventually admitted` is not checked by a simulation" in err
    # W515: serq diff's joint search does not compare it
    b = tmp_path / "b.sq"
    b.write_text(FIFO)
    main(["diff", str(STARVED), str(b)])
    err = capsys.readouterr().err
    assert "starved_large.sq:43:18: warning[W515]: serq diff does not compare `check eventually admitted`" in err
    # --json prints nothing on stderr: the warnings are in the data, each variant's; the library has them too
    import json

    import serq

    main(["diff", str(STARVED), str(b), "--json"])
    out, err = capsys.readouterr()
    w = json.loads(out)["warnings"]
    assert [(x["code"], x["line"]) for x in w["a"]] == [("W515", 43)] and [x["code"] for x in w["b"]] == ["W515"]
    assert "W515" not in err
    assert [x.code for x in serq.diff(str(STARVED), str(b)).warnings] == ["W515", "W515"]


def test_library_refuses_liveness_beside_a_per_request_slo():
    with pytest.raises(ValueError, match="explored apart"):
        run(checks=["eventually admitted", "ttft<=3"])


def test_too_many_spawned_sessions_is_refused(capsys, tmp_path):
    path = tmp_path / "spawny.sq"
    path.write_text("pool kv { cap 200; admit via gpu; }\nstage gpu { budget 4; }\n"
                    "session sub { hold kv 1 { prefill 1; } end; }\n"
                    "session parent { spawn sub x 70; join; end; }\n"
                    "workload { 1 x parent; }\ncheck eventually admitted;\n")
    code = main(["explore", str(path)])
    err = capsys.readouterr().err
    assert code == 2 and "spawny.sq:6:18: error[E601]: `check eventually` follows at most 64 sessions" in err


@pytest.mark.parametrize("strategy", ["bfs", "dfs"])
def test_the_fair_analysis_is_cut_by_the_time_limit(monkeypatch, strategy):
    """The search ends within the limit; the clock then jumps past it as the
    fair analysis starts: the run ends with `bound`, not a verdict found
    after the limit (the array engine, and the stored graph of the other)."""
    import time

    import explorer.graph.fair as fair

    real, jump = time.perf_counter, [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: real() + jump[0])
    components = fair._components

    def late(*a, **kw):
        jump[0] = 10_000.0
        return components(*a, **kw)

    monkeypatch.setattr(fair, "_components", late)
    r = run(strategy=strategy, time_limit=3600)
    assert (r.verdict, r.exit_code) == ("bound", 13)
    assert "time_limit" in r.message
