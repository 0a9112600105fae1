"""`serq diff`: pairs of variants with known answers, a brute-force
cross-check (tests/diff_brute.py: every environment run on both variants
with the simulator's step function), the matching errors (E028), the
report's forms (text, golden; JSON; the page) and the exit codes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from serq.check.diff import EXIT_DIFFER, DiffModel, diff
from serq.check.model import Checks
from serq.cli import main
from serq.cli.exits import EXIT_CODES
from serq.lang.load import load_path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "check"))

from diff_brute import brute_diff, brute_worst  # noqa: E402
from test_instances import compare_golden  # noqa: E402

INST = ROOT / "instances"


def variant(tmp_path: Path, name: str, base: str, *edits: tuple[str, str]) -> str:
    """A library instance with text replaced (each edit must apply)."""
    text = (INST / base).read_text()
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def programs(a: str, b: str):
    return load_path(a, explorer=True).program, load_path(b, explorer=True).program


@pytest.fixture
def pairs(tmp_path):
    """name -> (a, b, what each variant's failure where the other completes is: (a's, b's))."""
    lib = lambda n: str(INST / n)  # noqa: E731
    return {
        "lifo-fifo": (lib("theorem.sq"), lib("theorem_no_lifo.sq"), (None, "livelock")),
        "join-cap": (lib("join_in_hold.sq"), variant(tmp_path, "join10.sq", "join_in_hold.sq", ("cap 8;", "cap 10;")),
                     ("deadlock", None)),
        "budget": (lib("theorem.sq"), variant(tmp_path, "b2.sq", "theorem.sq", ("budget 4;", "budget 2;")),
                   (None, None)),
        "spawn-draws": (lib("agent_subagents.sq"),
                        variant(tmp_path, "agent2.sq", "agent_subagents.sq", ("budget 4;", "budget 2;")), (None, None)),
        "turn-cap": (variant(tmp_path, "mt1.sq", "multiturn_chat.sq", ("2 x chat", "1 x chat")),
                     variant(tmp_path, "mt1c8.sq", "multiturn_chat.sq", ("2 x chat", "1 x chat"), ("cap 12;", "cap 8;")),
                     (None, "livelock")),
        "turn-chunk": (variant(tmp_path, "mt1.sq", "multiturn_chat.sq", ("2 x chat", "1 x chat")),
                       variant(tmp_path, "mt1k1.sq", "multiturn_chat.sq", ("2 x chat", "1 x chat"),
                               ("chunk 4;", "chunk 1;")), (None, None)),
        # a watermark (`admit if free(kv) >= W`) under fifo: none lets both in, and both preempt
        # each other for good; 6 admits one at a time
        "watermark": tuple(variant(tmp_path, f"wm{w}.sq", "theorem_no_reserve.sq", ("preempt lifo", "preempt fifo"),
                                   ("take 0 {", f"take 0 admit if free(kv) >= {w} {{")) for w in (0, 6))
        + (("livelock", None),),
        "both-deadlock": (lib("hol_none.sq"), variant(tmp_path, "skip.sq", "hol_none.sq", ("hol block;", "hol skip;")),
                          (None, None)),
    }


@pytest.mark.parametrize("name", ["lifo-fifo", "join-cap", "budget", "spawn-draws", "turn-cap", "turn-chunk",
                                  "watermark", "both-deadlock"])
def test_known_answers_and_brute_force(name, pairs):
    a, b, expect = pairs[name]
    pa, pb = programs(a, b)
    r = diff(pa, pb, (a, b))
    got = [None, None]
    for w in r.witnesses:
        got[w.fails] = w.how
    assert tuple(got) == expect
    assert r.verdict == ("differ" if any(expect) else "same")
    assert r.exit_code == (EXIT_DIFFER if any(expect) else 0)
    dead, live = brute_diff(pa, pb, Checks.of_program(pa), Checks.of_program(pb))
    for w in r.witnesses:  # a dead end is the shortest there is; a lasso exists in the brute force too
        if w.lasso_start is None:
            assert w.length == dead[w.fails]
        else:
            assert live[w.fails]
    for x in (0, 1):
        assert (got[x] is not None) == (dead[x] is not None or live[x])


def test_stuck_checked_is_a_violation(pairs):
    a, b, _ = pairs["lifo-fifo"]
    pa, pb = programs(a, b)
    r = diff(pa, pb, (a, b), checks=["stuck"])
    [w] = r.witnesses
    assert (w.fails, w.how) == (1, "violation (stuck)")
    ch = Checks.of_program(pa, ["stuck"])
    dead, live = brute_diff(pa, pb, ch, ch)
    assert dead == [None, w.length] and live == [False, False]


def test_a_variant_against_itself_is_the_same_run():
    """Each joint state is a pair of equal states: as many as one variant
    explored without symmetry."""
    from serq.check.explore import explore

    p = load_path(INST / "theorem.sq", explorer=True).program
    r = diff(p, p, ("x", "x"))
    assert r.verdict == "same" and r.states == explore(p, ties="seq", symmetry=False, graph_limit=0).stats.distinct


def test_the_failing_side_is_either(pairs):
    a, b, _ = pairs["join-cap"]
    pa, pb = programs(b, a)
    r = diff(pa, pb, (b, a))
    [w] = r.witnesses
    assert (w.fails, w.how, w.length) == (1, "deadlock", 3)
    assert any("wait-for cycle" in line for line in w.diagnosis)


def test_golden_text_and_exit_code(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code = main(["diff", "instances/theorem.sq", "instances/theorem_no_lifo.sq"])
    out = capsys.readouterr().out
    assert code == EXIT_DIFFER == EXIT_CODES["differ"] == 19
    compare_golden("diff_theorem_no_lifo.txt", out)


def test_each_variants_replay_path_replays_its_run(capsys):
    a, b = str(INST / "theorem.sq"), str(INST / "theorem_no_lifo.sq")
    main(["diff", a, b, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "serq-diff" and data["version"] == 1 and data["exit_code"] == 19
    [d] = data["differences"]
    assert (d["fails"], d["completes"], d["how"]) == ("b", "a", "livelock")
    assert data["verdicts"]["a"]["verdict"] == "pass" and data["verdicts"]["b"]["verdict"] == "livelock"
    assert main(["explore", a, "--ties", "seq", "--no-symmetry", "--replay", d["replay"]["a"]]) == 0
    assert main(["explore", b, "--ties", "seq", "--no-symmetry", "--replay", d["replay"]["b"]]) == 11
    capsys.readouterr()
    moved = [s["b"]["moved"] for s in d["steps"][1:]]
    assert all(moved) and not all(s["a"]["moved"] for s in d["steps"][1:])


def test_same_exits_0(capsys, pairs):
    a, b, _ = pairs["budget"]
    assert main(["diff", a, b]) == 0
    assert capsys.readouterr().out.startswith("same: ")


def test_bound(capsys):
    assert main(["diff", str(INST / "theorem.sq"), str(INST / "theorem_no_lifo.sq"), "--max-states", "20"]) == 13
    out = capsys.readouterr().out
    assert out.startswith("bound: no difference within the bound")


def test_ties_all_is_noted(pairs):
    a, b, _ = pairs["budget"]
    pa, pb = programs(a, b)
    r = diff(pa, pb, (a, b), ties="all")
    assert r.notes and "independently" in r.notes[0]


# ---------------------------------------------------------------- matching


@pytest.mark.parametrize("edits, where, words", [
    ((("workload { 2 x chat; }", "workload { 3 x chat; }"),), "35:16",
     "workload line 1 is `3 x chat`, the first instance's is `2 x chat`"),
    ((("draw prompt in {2, 3};", "draw prompt in {2, 4};"),), "24:3",
     "program `chat` has `draw prompt in {2, 4}` where the first instance's has `draw prompt in {2, 3}`"),
    ((("draw prompt in {2, 3};", "let prompt = 2;"),), "26:3",
     "program `chat` has `draw o in 1..max_out` where the first instance's has `draw prompt in {2, 3}`"),
    ((("session chat", "session talk"), ("2 x chat", "2 x talk")), "35:16",
     "workload line 1 is `2 x talk`, the first instance's is `2 x chat`"),
])
def test_unmatched_pairs_are_located_errors(tmp_path, capsys, edits, where, words):
    b = variant(tmp_path, "b.sq", "theorem.sq", ("// theorem: an instance", "// a variant: an instance"), *edits)
    b_text = Path(b).read_text()
    line, col = map(int, where.split(":"))
    assert main(["diff", str(INST / "theorem.sq"), b]) == 2
    err = capsys.readouterr().err
    assert f"{b}:{where}: error[E028]: cannot match {b} with {INST / 'theorem.sq'}: {words}" in err, err
    assert b_text.splitlines()[line - 1] in err and "^" in err
    assert "note: in " in err and "Traceback" not in err


def test_a_missing_program_is_located(tmp_path, capsys):
    b = variant(tmp_path, "b.sq", "agent_subagents.sq", ("spawn sub(task=1) x 2;", "spawn sub(task=1) x 3;"))
    assert main(["diff", str(INST / "agent_subagents.sq"), b]) == 2
    err = capsys.readouterr().err
    assert "error[E028]" in err and "has `spawn sub(task=1) x 3` where the first instance's has " \
        "`spawn sub(task=1) x 2`" in err


def test_bad_metric_is_located(capsys):
    assert main(["diff", str(INST / "theorem.sq"), str(INST / "theorem.sq"), "--worst", "ttfx"]) == 2
    err = capsys.readouterr().err
    assert "--worst:1:1: error[E014]: unknown metric `ttfx`" in err and "did you mean `ttft`?" in err


# ---------------------------------------------------------------- --worst


def test_worst_ttft_both_directions_and_brute_force(pairs):
    a, b, _ = pairs["budget"]
    pa, pb = programs(a, b)
    r = diff(pa, pb, (a, b), worst="ttft")
    w = r.worst
    assert [one.value for one in w.alone] == [2, 6]
    ab, ba = w.found
    assert ab[0] == brute_worst(pa, pb, "ttft")[0] and ba[0] == brute_worst(pa, pb, "ttft")[1]
    assert ba[0] == 4 and ba[2:4] == (2, 6)  # the request's ttft in a, in b


@pytest.mark.parametrize("name, metric", [("budget", "iterations"), ("budget", "preemptions"), ("budget", "latency"),
                                          ("turn-chunk", "ttft"), ("turn-chunk", "latency"),
                                          ("turn-chunk", "iterations"), ("spawn-draws", "ttft")])
def test_worst_other_metrics_against_brute_force(pairs, name, metric):
    """Requests matched across turns (a session's k-th) and spawned children by name."""
    a, b, _ = pairs[name]
    pa, pb = programs(a, b)
    w = diff(pa, pb, (a, b), worst=metric).worst
    assert tuple(f[0] if f else None for f in w.found) == brute_worst(pa, pb, metric)


def test_worst_of_a_variant_against_itself_is_zero():
    p = load_path(INST / "theorem.sq", explorer=True).program
    w = diff(p, p, ("x", "x"), worst="ttft").worst
    assert [f[0] for f in w.found] == [0, 0]


def test_worst_unbounded_in_one_variant(capsys):
    code = main(["diff", str(INST / "theorem.sq"), str(INST / "theorem_no_lifo.sq"), "--worst", "preemptions"])
    out = capsys.readouterr().out
    assert code == 19
    assert "b above a: unbounded" in out


def test_html_page(tmp_path, capsys):
    pytest.importorskip("jinja2")
    page = tmp_path / "d.html"
    code = main(["diff", str(INST / "theorem.sq"), str(INST / "theorem_no_lifo.sq"), "--html", str(page),
                 "--worst", "ttft"])
    capsys.readouterr()
    assert code == 19
    html = page.read_text()
    assert "theorem_no_lifo.sq" in html and "b livelocks where a completes" in html and "<script" not in html


def interrupt_joint_search(monkeypatch, after: int = 40) -> None:
    """A KeyboardInterrupt (as serq's signal handler raises it) once the
    variants have been expanded `after` times."""
    from serq.check.diff import Side

    calls = [0]
    succ = Side.succ

    def stop_later(self, rs):
        calls[0] += 1
        if calls[0] > after:
            raise KeyboardInterrupt
        return succ(self, rs)

    monkeypatch.setattr(Side, "succ", stop_later)


def test_interrupted_is_never_same(monkeypatch, capsys):
    """A signal during the joint search (KeyboardInterrupt, as serq's signal
    handler raises it) gives `interrupted`, exit 16, with the states so far."""
    interrupt_joint_search(monkeypatch)
    code = main(["diff", str(INST / "theorem.sq"), str(INST / "theorem.sq")])
    out = capsys.readouterr().out
    assert code == EXIT_CODES["interrupted"] == 16
    assert out.startswith("interrupted by SIGINT: no difference found before it")


def test_worst_joint_search_runs_under_the_limits(monkeypatch, pairs):
    """--worst's joint search checks --time-limit and --memory inside each
    expansion (the variants' models hold the limits while it runs), as the
    difference search does."""
    import importlib

    engine = importlib.import_module("explorer.check")  # the module: `explorer.check` the attribute is the door
    seen = []
    build = engine.build_graph

    def watch(dm, **kw):
        if isinstance(dm, DiffModel):  # not each variant's own --worst search
            seen.append([side.sm.rows.limits for side in dm.sides])
        return build(dm, **kw)

    monkeypatch.setattr(engine, "build_graph", watch)
    a, b, _ = pairs["budget"]
    r = diff(*programs(a, b), (a, b), worst="ttft", time_limit=600)
    assert r.worst is not None and r.worst.complete
    assert len(seen) == 2  # the difference search, then --worst's
    assert all(lim is not None and lim.time_limit == 600 for lims in seen for lim in lims)


def test_interrupted_skips_worst_and_says_so(monkeypatch, capsys):
    """A signal during the joint search: --worst is not computed after it,
    and the report says so (exit 16)."""
    import serq.check.worst as worst

    def never(*a, **k):
        raise AssertionError("--worst searched after a signal")

    interrupt_joint_search(monkeypatch)
    monkeypatch.setattr(worst, "find_worst", never)
    code = main(["diff", str(INST / "theorem.sq"), str(INST / "theorem.sq"), "--worst", "ttft"])
    out = capsys.readouterr().out
    assert code == 16
    assert "--worst ttft: not computed, the run was interrupted by SIGINT" in out


def test_interrupted_variant_alone_says_worst_was_not_computed(monkeypatch, capsys):
    """A signal during one variant's own exploration: no product search and
    no --worst after it, and the report says so."""
    import serq.check.explore as explore_mod
    from explorer.runtime.verdict import INTERRUPTED

    real = explore_mod.explore

    def interrupted(*a, **k):
        r = real(*a, **k)
        r.verdict, r.message = INTERRUPTED, "interrupted by SIGINT"
        return r

    monkeypatch.setattr(explore_mod, "explore", interrupted)
    code = main(["diff", str(INST / "theorem.sq"), str(INST / "theorem.sq"), "--worst", "ttft"])
    out = capsys.readouterr().out
    assert code == 16
    assert "--worst ttft: not computed, the run was interrupted by SIGINT" in out
