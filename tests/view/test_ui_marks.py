"""`serq ui`'s marks, previews and status panel, through its JSON
endpoints, against independent computations.

The marks ("no run can complete from here") are checked on every reachable
state of small instances with `turn`, `spawn`/`join`, preemption and a
shared prefix against a brute force written here: a breadth-first search
over the model's own steps that stores every edge, then, for each state,
a search of its own for a completing run (a done state that violates
nothing, through states that violate nothing; a stuck session is no
violation, it may still finish). Nothing of explorer/graph is used.
"""

from __future__ import annotations

import time
from html import unescape
from collections import deque
from pathlib import Path

import pytest

from explorer.fingerprint import format_fp, state_fingerprint
from explorer.trace import replay
from serq.check.explore import explore
from serq.check.model import Checks, SerqModel
from serq.lang.load import load_path, load_text
from tests.fixtures import AGENT_TURNS
from tests.view.test_view import ui_client

ROOT = Path(__file__).resolve().parents[2]
INST = ROOT / "instances"

# two conversations of two requests each (`turn`) on a shared prefix, with
# lifo preemption: a request that draws q=6 can never fit (2 + 6 + 2 units
# of an 8-unit pool), so the draw at the reply is a point of no return
TURN_PREFIX = """
prefix SYS = 2;
pool kv { cap 8; block 2; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 4; }
session chat {
  repeat 2 {
    turn;
    draw q in {2, 6};
    hold kv prefix SYS reuse c need (SYS + q - c) take 0 at admission (c = min(cached(kv), SYS)) {
      prefill (SYS + q - c) growing kv;
      decode 2 growing kv;
    } keep (kv full);
  }
}
workload { 2 x chat; }
"""

# AGENT_TURNS whose subagents draw a prompt that may never fit (10 units
# of an 8-unit pool): the spawn that draws it loses every completing run
AGENT_DOOMED = AGENT_TURNS.replace("session sub {\n  hold kv need 2 take 0 { prefill 2 growing kv;",
                                   "session sub {\n  draw n in {2, 10};\n  hold kv need n take 0 { prefill n growing kv;")
assert AGENT_DOOMED != AGENT_TURNS

CASES = {
    "turn, prefix, preemption": TURN_PREFIX,
    "spawn, join (theorem_no_join_rule)": str(INST / "theorem_no_join_rule.sq"),
    "preemption, prefix cache (theorem_no_lifo)": str(INST / "theorem_no_lifo.sq"),
    "turn, spawn, join, prefix cache, preemption": AGENT_TURNS,
    "turn, spawn of a subagent that may never fit": AGENT_DOOMED,
}


def program(source: str):
    return load_path(source, explorer=True).program if source.endswith(".sq") else load_text(source).program


def brute(m):
    """(fps by replay path, good by fingerprint, edges by fingerprint):
    every reachable state by BFS over the model's steps (a violating
    state not expanded: a violation ends a behaviour), and whether some
    run from it completes, by a search from each state on its own."""
    paths, succ, done, bad = {}, {}, {}, {}
    queue = deque()
    for i, s in enumerate(m.initial_states()):
        fp = state_fingerprint(m, s)
        if fp not in paths:
            paths[fp] = [i]
            queue.append((fp, s))
    while queue:
        fp, s = queue.popleft()
        bad[fp] = bool(m.invariants(s, stuck=False))
        done[fp] = bool(m.is_done(s))
        succ[fp] = []
        if bad[fp]:
            continue
        for i, a in enumerate(m.actions(s)):
            n = m.step(s, a)
            if n is None:
                continue
            nfp = state_fingerprint(m, n)
            succ[fp].append((i, nfp))
            if nfp not in paths:
                paths[nfp] = paths[fp] + [i]
                queue.append((nfp, n))

    def completes(start) -> bool:
        seen, todo = {start}, [start]
        while todo:
            u = todo.pop()
            if done[u] and not bad[u]:
                return True
            for _i, v in succ[u]:
                if v not in seen:
                    seen.add(v)
                    todo.append(v)
        return False

    return paths, {fp: completes(fp) for fp in paths}, succ


def finished(ex, seconds: float = 300):
    ex.start_search()
    end = time.monotonic() + seconds
    while not ex.work.finished:
        assert time.monotonic() < end, "the background work did not end"
        time.sleep(0.05)
    return ex.status()


@pytest.mark.parametrize("case", sorted(CASES))
def test_marks_are_the_brute_forces_on_every_state(case):
    source = CASES[case]
    ex, c = ui_client(source)
    st = finished(ex)
    assert st["marks"]["status"] == "complete"
    prog = program(source)
    m = SerqModel(prog, checks=Checks.of_program(prog))
    paths, good, succ = brute(m)
    assert st["marks"]["states"] == len(paths)
    assert st["marks"]["doomed"] == sum(not g for g in good.values())
    # both kinds of states shown (AGENT_TURNS alone always completes)
    assert 0 < st["marks"]["doomed"] < len(paths) or source is AGENT_TURNS
    for fp, idx in paths.items():
        path = "/".join(map(str, idx))
        v = c.get(f"/api/state/{path}").get_json()
        assert v["fingerprint"] == format_fp(fp)
        assert v["doom"] == ("completes" if good[fp] else "doomed"), path
        # the path's point of no return: its first state from which nothing completes
        trace = replay(m, path)
        on_path = [s.fingerprint for s in trace]
        first_doomed = next((k for k, f in enumerate(on_path) if not good[f]), None)
        assert v["no_return_step"] == first_doomed, path
        assert [s["doom"] for s in v["steps"]] == ["completes" if good[f] else "doomed" for f in on_path]
        edges = dict(succ[fp])
        if not edges and not v["actions"]:
            continue
        for a in v["actions"]:
            if not a["applies"]:
                assert a["index"] not in edges
                continue
            if v["problems"]:  # a violating state: the brute force does not expand it
                continue
            nfp = edges[a["index"]]
            assert a["fingerprint"] == format_fp(nfp)
            assert a["doom"] == ("completes" if good[nfp] else "doomed"), (path, a["index"])
            assert a["no_return"] == (good[fp] and not good[nfp])
            assert a["visited"] == next((k for k, f in enumerate(on_path) if f == nfp), None)


def test_the_preview_is_the_next_steps_diff_and_the_change_is_the_last():
    """An action's preview is the diff of the step it takes, as `serq
    explore --replay` prints it; a state's change is its own last step's."""
    ex, c = ui_client(TURN_PREFIX)
    prog = program(TURN_PREFIX)
    m = SerqModel(prog)
    for path in ("0", "0/0", "0/0/1", "0/0/1/0", "0/0/1/0/0/0"):
        v = c.get(f"/api/state/{path}").get_json()
        for a in v["actions"]:
            trace = replay(m, f"{path}/{a['index']}")
            assert a["changes"] == trace[-1].diff and a["text"] == trace[-1].action_text
        trace = replay(m, path)
        if len(trace) == 1:
            assert v["change"] is None
            continue
        assert v["change"] == {"step": len(trace) - 1, "action": trace[-1].action_text, "lines": trace[-1].diff}
        before = {r["label"]: r for r in c.get(f"/api/state/{path.rsplit('/', 1)[0]}").get_json()["sessions"]}
        for s in v["sessions"]:
            was = before.get(s["label"])
            assert s["changed"] == (was is None or was["text"] != s["text"])
            assert s["before"] == (was["text"] if was else "(not spawned yet)")
        pools_before = {p["name"]: p for p in c.get(f"/api/state/{path.rsplit('/', 1)[0]}").get_json()["pools"]}
        for p in v["pools"]:
            keys = ("allocated", "cached", "free", "queue")
            assert p["changed"] == [k for k in keys if p[k] != pools_before[p["name"]][k]]
    # the draw of q=6 at a reply: the action that loses every completing run
    finished(ex)
    v = c.get("/api/state/0/0").get_json()
    marked = {a["index"]: a["no_return"] for a in v["actions"]}
    assert v["doom"] == "completes" and True in marked.values()


def test_status_panel_properties_and_their_counterexamples():
    """Each property's status: the one the first search finds violated
    fails with its trace, the others get a search of their own."""
    ex, c = ui_client(str(INST / "slo_ttft.sq"))
    assert c.get("/api/status").get_json()["started"] is False
    finished(ex)
    st = c.get("/api/status").get_json()
    assert st["done"] and st["search"]["status"] == "done"
    got = {p["name"]: (p["status"], p["path"]) for p in st["properties"]}
    prog = program(str(INST / "slo_ttft.sq"))
    main = explore(prog, graph_limit=0)
    assert got["ttft <= 3"] == ("fails", main.replay_path) and st["states"] == main.stats.distinct
    for name in ("deadlock", "livelock", "invariants and asserts", "preemptions <= 1"):
        assert got[name] == ("holds", None), name
    # each one's own search gives the same verdict
    alone = explore(prog, checks=["preemptions <= 1"], graph_limit=0)
    assert alone.verdict == "pass"
    # the page links to the counterexample, which the state page walks
    html = c.get("/state/0").get_data(as_text=True)
    assert f'<a class="cex" href="/state/{main.replay_path}"' in html
    html = c.get(f"/state/{main.replay_path}").get_data(as_text=True)
    assert f'class="error cex-of" data-prop="slo:ttft <= 3">the shortest counterexample of ttft <= 3 (fails): ' \
           f"{main.message}" in unescape(html)


def test_status_of_sometimes_and_eventually():
    ex, c = ui_client(str(INST / "sometimes_preempt.sq"))
    st = finished(ex)
    some = [p for p in st["properties"] if p["key"].startswith("sometimes:")]
    from serq.check.sometimes import search_witnesses

    found = search_witnesses(program(str(INST / "sometimes_preempt.sq")))
    assert [(p["status"], p["path"]) for p in some] == [("witnessed" if w.verdict == "witness" else w.verdict,
                                                         w.result.replay_path) for w in found]
    assert all(p["status"] == "holds" for p in st["properties"] if not p["key"].startswith("sometimes:"))
    ex, c = ui_client(str(INST / "starved_large.sq"))
    st = finished(ex)
    (p,) = st["properties"][-1:]
    assert p["key"] == "eventually:eventually admitted" and p["status"] == "fails" and p["path"]


def test_a_failing_analysis_is_said_and_the_rest_still_runs(monkeypatch):
    import serq.check.explore as ce

    def boom(*a, **k):
        raise RuntimeError("no graph today")

    monkeypatch.setattr(ce, "completion_graph", boom)
    ex, c = ui_client(str(INST / "self_preempt.sq"))
    st = finished(ex)
    assert st["marks"] == {"status": "failed", "message": "the point-of-no-return analysis failed: RuntimeError: "
                           "no graph today", "states": None, "doomed": None}
    assert {p["key"]: p["status"] for p in st["properties"]} == {"livelock": "fails", "invariant": "holds"}
    v = c.get("/api/state/0/0").get_json()
    assert v["doom"] == "unknown" and {a["doom"] for a in v["actions"]} == {"unknown"}


def test_a_cut_graph_marks_only_what_it_knows():
    # 577 of the 597 states: runs complete deep in the graph, so a cut this late still shows some
    ex, c = ui_client(TURN_PREFIX, graph_limit=577)
    st = finished(ex)
    assert st["marks"]["status"] == "cut" and "cut by --graph-limit 577 at 577 states" in st["marks"]["message"]
    prog = program(TURN_PREFIX)
    paths, good, _succ = brute(SerqModel(prog))
    seen = set()
    for fp, idx in paths.items():
        v = c.get("/api/state/" + "/".join(map(str, idx))).get_json()
        assert v["doom"] in ("completes", "unknown") and (v["doom"] == "unknown" or good[fp])
        seen.add(v["doom"])
    assert seen == {"completes", "unknown"}  # a cut graph says what it knows, and only that


def test_the_start_button_and_the_status_endpoint_ask_its_own_page():
    ex, c = ui_client(str(INST / "self_preempt.sq"))
    for form, headers in (({}, {}), ({"token": "guess"}, {}),
                          ({"token": ex.token}, {"Sec-Fetch-Site": "cross-site"})):
        assert c.post("/start", data=form, headers=headers).status_code == 403
    assert ex.search() == ("idle", None)
    assert c.get("/api/status", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "cors",
                                         "Sec-Fetch-Dest": "empty"}).status_code == 403
    r = c.post("/start", data={"token": ex.token, "back": "0/0"})
    assert r.status_code == 303 and r.headers["Location"] == "/state/0/0"
    assert c.post("/start", data={"token": ex.token, "back": "x"}).headers["Location"] == "/"
    finished(ex)
    assert ex.status()["done"]


def test_graph_limit_zero_skips_the_marks_and_a_bad_one_is_refused(capsys):
    from serq.cli import main

    ex, c = ui_client(str(INST / "self_preempt.sq"), graph_limit=0)
    st = finished(ex)
    assert st["marks"]["status"] == "off" and st["marks"]["message"] == "not computed (--graph-limit 0)"
    assert c.get("/api/state/0/0").get_json()["doom"] == "unknown"
    assert {p["key"]: p["status"] for p in st["properties"]} == {"livelock": "fails", "invariant": "holds"}
    assert main(["ui", str(INST / "self_preempt.sq"), "--graph-limit", "-1", "--port", "0"]) == 2
    assert "--graph-limit must be non-negative (states), got -1" in capsys.readouterr().err


def test_every_search_that_ends_abnormally_is_failed_and_the_work_goes_on(monkeypatch):
    """Supervision of the background thread: each of its steps that ends
    by any exception (SystemExit too) is `failed`, with its words; the
    steps after it still run, and the work ends."""
    import serq.check.explore as ce

    def explore(*a, **k):
        raise SystemExit(3)

    monkeypatch.setattr(ce, "explore", explore)
    ex, c = ui_client(str(INST / "self_preempt.sq"))
    st = finished(ex)
    assert st["search"] == {"status": "failed", "message": "the search failed: SystemExit: 3"}
    assert [(p["status"], p["message"]) for p in st["properties"]] == [
        ("failed", "the search for livelock failed: SystemExit: 3"),
        ("failed", "the search for asserts and run-time errors failed: SystemExit: 3")]
    assert st["marks"]["status"] == "complete" and st["done"] and st["job"] is None
    html = c.get("/state/0").get_data(as_text=True)
    assert 'class="pst pst-failed" title="the search for livelock failed: SystemExit: 3"' in html
    assert c.get("/violation").status_code == 500


def test_a_step_that_raises_after_its_search_fails_what_it_left_and_the_rest_runs(monkeypatch):
    """Judging what the first search found raises (not the search itself):
    the search is `failed` with its words, the analysis and each
    property's own search still run."""
    import serq.view.uiwork as uiwork

    calls = [0]
    real = uiwork.property_of

    def judged(*a, **k):
        calls[0] += 1
        if calls[0] == 1:
            raise RuntimeError("cannot judge")
        return real(*a, **k)

    monkeypatch.setattr(uiwork, "property_of", judged)
    ex, c = ui_client(str(INST / "self_preempt.sq"))
    st = finished(ex)
    assert st["search"] == {"status": "failed", "message": "the search failed: RuntimeError: cannot judge"}
    assert st["marks"]["status"] == "complete" and st["done"] and st["job"] is None
    assert {p["key"]: p["status"] for p in st["properties"]} == {"livelock": "fails", "invariant": "holds"}
