"""The pictures without a browser: the data behind the timeline, the
simulation's series, the pages' bytes, the explorer's routes (Flask's test
client) and the bad inputs of every picture command.
tests/view/test_browser.py opens the same pages in Chromium."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from explorer.trace import replay
from serq.cli import main
from serq.check.model import SerqModel, pool_levels
from serq.check.explore import explore
from serq.lang.load import load_path, load_text
from serq.sim.report import build_report
from serq.sim.simulator import SimConfig, Simulator
from serq.view.simplots import attach, binned, busy_binned, sim_page
from serq.view.timeline import timeline, timeline_page
from serq.view.ui import Explorer, make_app
from tests.fixtures import serq_ui

ROOT = Path(__file__).resolve().parents[2]
INST = ROOT / "instances"

# one session: prefill 4 then 3 decode tokens, 10 ms per iteration; the
# second session arrives at 5 ms and is admitted at 10 ms
TPOT = """
pool kv { cap 64; admit via gpu; }
stage gpu { budget 8; cost 10ms; }
session s { hold kv reserve 8 { prefill 4; decode 3; } end; }
workload { 1 x s; 1 x s at 5ms; }
"""


def _result(name: str):
    prog = load_path(str(INST / f"{name}.sq"), explorer=True).program
    return prog, SerqModel(prog), explore(prog)


# ---------------------------------------------------------------- timeline data


def test_livelock_timeline_has_a_lane_and_a_bar_per_step_and_marks_the_cycle():
    prog, sm, r = _result("self_preempt")
    t = timeline(sm, r, "self_preempt.sq")
    n = len(r.trace)
    assert [len(lane["cells"]) for lane in t["lanes"]] == [n]
    assert [len(p["cells"]) for p in t["pools"]] == [n]
    assert [c["phase"] for c in t["lanes"][0]["cells"]] == \
        ["not-arrived", "queued", "prefill", "prefill", "preempted", "prefill"]
    assert t["lanes"][0]["cells"][4]["marks"] == ["preempt"]
    assert t["lasso_start"] == 2
    assert [s["n"] for s in t["steps"] if s["cycle"]] == [3, 4, 5]
    # the cycle really returns: the last state is the state the cycle starts from
    assert r.trace[-1].fingerprint == r.trace[2].fingerprint
    assert [(c["alloc"], c["cached"], c["free"], c["queue"]) for c in t["pools"][0]["cells"]] == \
        [(0, 0, 8, 0), (0, 0, 8, 1), (4, 0, 4, 0), (8, 0, 0, 0), (0, 0, 8, 1), (4, 0, 4, 0)]


def test_deadlock_timeline_names_the_wait_for_cycle():
    prog, sm, r = _result("join_in_hold")
    t = timeline(sm, r, "join_in_hold.sq")
    assert t["verdict"] == "deadlock"
    assert [(e["from"], e["to"], e["why"]) for e in t["wait_cycle"]] == \
        [("parent#1", "child#2", "its child"), ("child#2", "parent#1", "which holds kv")]
    assert [lane["label"] for lane in t["lanes"] if lane["in_cycle"]] == ["parent#1", "child#2"]
    # child#2 is spawned in step 2: before that its lane is empty
    assert [c["phase"] for c in t["lanes"][1]["cells"]] == ["absent", "absent", "queued"]


def test_timeline_marks_the_point_of_no_return():
    prog, sm, r = _result("theorem_no_lifo")
    t = timeline(sm, r, "theorem_no_lifo.sq")
    assert [s["n"] for s in t["steps"] if s["no_return"]] == [r.no_return.step] == [2]
    assert t["no_return"].startswith("point of no return: step 2 (arrive chat#2")
    html = timeline_page(sm, r, "theorem_no_lifo.sq")
    assert html.count('class="step noreturn"') == 1 and 'id="no-return"' in html


@pytest.mark.parametrize("name", ["multiturn_chat", "decode_preempt", "agent_subagents"])
def test_pool_cells_conserve_units(name):
    prog, sm, r = _result(name)
    if not r.trace:  # a pass: walk the replay path of the header instead
        import re

        path = re.search(r"^// Replay: (\S+)", (INST / f"{name}.sq").read_text(), re.M)
        r.trace = replay(sm, path.group(1)) if path else []
    t = timeline(sm, r, name)
    for p, pool in enumerate(t["pools"]):
        for c in pool["cells"]:
            if pool["cap"] is not None:
                assert c["alloc"] + c["cached"] + c["free"] == pool["cap"]
    for step in r.trace:
        for p in range(len(prog.pools)):
            a, c, f = pool_levels(sm, step.state, p)
            assert a >= 0 and c >= 0


def test_a_pass_has_a_page_without_a_timeline(tmp_path, capsys):
    out = tmp_path / "pass.html"
    assert main(["explore", str(INST / "theorem.sq"), "-q", "--html", str(out)]) == 0
    html = out.read_text()
    assert 'id="no-trace"' in html and 'id="timeline"' not in html


# ---------------------------------------------------------------- bytes


def test_timeline_page_is_byte_stable_across_processes(tmp_path):
    """Same trace, two processes with different hash seeds (this one and
    another): same bytes."""
    from tests.fixtures import another_hash_seed

    argv = ["explore", str(INST / "self_preempt.sq"), "-q", "--html"]
    env = {**os.environ, "PYTHONHASHSEED": another_hash_seed()}
    subprocess.run([sys.executable, "-m", "serq", *argv, str(tmp_path / "t1.html")], cwd=ROOT, env=env, check=False,
                   capture_output=True)
    main([*argv, str(tmp_path / "t2.html")])
    pages = [(tmp_path / f"t{k}.html").read_bytes() for k in (1, 2)]
    assert pages[0] == pages[1] and b"long#1" in pages[0]


def test_replay_page_equals_the_page_of_the_same_run(tmp_path, capsys):
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    inst = str(INST / "join_in_hold.sq")
    assert main(["explore", inst, "-q", "--html", str(a)]) == 10
    assert main(["explore", inst, "--replay", "0/0/0", "--html", str(b)]) == 10
    # the search's page says how it was found; the replay's the same steps
    ta, tb = a.read_text(), b.read_text()
    assert ta.count('class="cell') == tb.count('class="cell') == 2 * 3
    assert ta.split("<h2>Steps</h2>")[1] == tb.split("<h2>Steps</h2>")[1]


# ---------------------------------------------------------------- bad --html paths


@pytest.mark.parametrize("argv", [["explore", str(INST / "self_preempt.sq"), "-q"],
                                  ["explore", str(INST / "self_preempt.sq"), "--replay", "0/0"],
                                  ["run", str(INST / "vllm_chat.sq")]])
def test_unwritable_html_path_is_a_clear_error(argv, tmp_path, capsys):
    for bad, why in ((tmp_path / "no" / "such" / "dir" / "x.html", "no directory"),
                     (tmp_path, "it is a directory")):
        assert main(argv + ["--html", str(bad)]) == 2
        err = capsys.readouterr().err
        assert f"error[E017]: cannot write {bad}: {why}" in err and "Traceback" not in err


# ---------------------------------------------------------------- simulation series


def _sim(text: str, **kw):
    sim = Simulator(load_text(text).program, SimConfig(**kw))
    rec = attach(sim)
    return sim.run(), rec


def test_tpot_and_busy_intervals_by_hand():
    r, rec = _sim(TPOT)
    ms = 1_000_000
    # first tokens at 10 and 20 ms (prefill ends), ends at 40 and 50 ms, 3 decodes each
    assert rec.ttft == [[10 * ms, 15 * ms]] and rec.e2e == [[40 * ms, 45 * ms]]
    assert rec.tpot == [[10 * ms, 10 * ms]]
    assert rec.busy_iv == [[(i * 10 * ms, (i + 1) * 10 * ms) for i in range(5)]]
    assert binned([(t, lv[0]) for t, lv in rec.alloc_pts], r.now, 5) == [8.0, 16.0, 16.0, 8.0, 0.0]
    assert busy_binned(rec.busy_iv[0], r.now, 5) == [1.0] * 5
    assert binned([(t, q[0]) for t, _c, q in rec.pool_pts], r.now, 10) == [0.0, 1.0] + [0.0] * 8  # s#2 waits from 5 to 10 ms


def test_binning_by_hand():
    assert binned([(0, 0), (5, 10)], 20, 2) == [5.0, 10.0]
    assert binned([(0, 2), (10, 2)], 20, 4) == [2.0, 2.0, 2.0, 2.0]
    assert busy_binned([(0, 3), (8, 12)], 20, 2) == [0.5, 0.2]


def test_recorder_leaves_the_report_unchanged_and_series_survive_coalescing():
    text = (ROOT / "instances" / "vllm_chat.sq").read_text().replace("3 x chat every 2.5s", "12 x chat every 40ms")
    plain = Simulator(load_text(text).program, SimConfig()).run()
    r1, rec1 = _sim(text)
    r2, rec2 = _sim(text, coalesce=False)
    assert build_report(r1) == build_report(plain)
    T = r1.now
    assert T == r2.now
    for p in range(len(r1.program.pools)):
        assert binned([(t, lv[p]) for t, lv in rec1.alloc_pts], T) == binned([(t, lv[p]) for t, lv in rec2.alloc_pts], T)
        assert binned([(t, q[p]) for t, _c, q in rec1.pool_pts], T) == binned([(t, q[p]) for t, _c, q in rec2.pool_pts], T)
    assert busy_binned(rec1.busy_iv[0], T) == busy_binned(rec2.busy_iv[0], T)
    assert rec1.tpot == rec2.tpot and rec1.ttft == rec2.ttft


def test_the_pictures_decode_no_state_per_iteration(monkeypatch):
    """The series are read from the rows (cached units, queue lengths): a
    run with the pictures decodes no more states than a plain run, so it
    stays linear in the run's length (2,000 chats: 4.6 s of CPU against
    3.8 s plain, where decoding every state after every iteration took 96 s)."""
    from serq.semantics.engine import Engine
    from serq.semantics.rows import Rows

    text = (ROOT / "instances" / "vllm_chat.sq").read_text().replace("3 x chat every 2.5s", "60 x chat every 40ms")
    real, count = {Rows: Rows.decode, Engine: Engine.decode}, [0]

    def decode(self, *a, **kw):
        count[0] += 1
        return real[Rows if isinstance(self, Rows) else Engine](self, *a, **kw)

    monkeypatch.setattr(Rows, "decode", decode)
    monkeypatch.setattr(Engine, "decode", decode)
    plain = Simulator(load_text(text).program, SimConfig()).run()
    n_plain, count[0] = count[0], 0
    r, rec = _sim(text)
    assert build_report(r) == build_report(plain) and len(rec.pool_pts) > 60
    assert count[0] <= n_plain, (count[0], n_plain)
    # the samples are those a decoded state gives
    for t, cached, queued in rec.pool_pts[:3]:
        assert len(cached) == len(queued) == len(r.program.pools)


def test_sim_page_is_byte_stable_and_shows_the_report(tmp_path, capsys):
    pages = []
    for i in range(2):
        out = tmp_path / f"s{i}.html"
        assert main(["run", str(INST / "vllm_chat.sq"), "--seed", "3", "--html", str(out)]) == 0
        pages.append(out.read_text())
    assert pages[0] == pages[1]
    html = pages[0]
    capsys.readouterr()
    assert main(["run", str(INST / "vllm_chat.sq"), "--seed", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert f"stopped: {report['stopped']}" in html
    for pid in ("plot-pool-0", "plot-busy", "plot-latency"):
        assert f'id="{pid}"' in html
    assert "https://" not in html.split("<script>", 1)[0]  # no stylesheet from the network


def test_sim_page_of_a_run_without_time():
    r, rec = _sim("pool kv { cap 4; }\nsession s { end; }\nworkload { 1 x s; }\n")
    assert 'id="no-plots"' in sim_page(build_report(r), rec)


# ---------------------------------------------------------------- progress


def test_no_progress_display_when_piped(capsys):
    assert main(["explore", str(INST / "self_preempt.sq"), "--no-timing"]) == 11
    out, err = capsys.readouterr()
    assert err == "" and out == (ROOT / "tests" / "golden" / "self_preempt.txt").read_text()


def test_progress_display_on_a_terminal_is_erased():
    import io

    from explorer.result import Stats
    from serq.view.progress import ExploreProgress, describe

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    assert ExploreProgress.wanted(tty) and not ExploreProgress.wanted(io.StringIO())
    st = Stats(distinct=1234, queue=56, max_depth=7, elapsed=2.0)
    assert describe(st).startswith("1,234 distinct states · 617/s · queue 56 · depth 7 · ")
    with ExploreProgress(tty) as show:
        show(st)
    assert "1,234 distinct states" in tty.getvalue()


# ---------------------------------------------------------------- serq ui (routes)


PORT = 8123


def ui_client(source: str, name: str = "x.sq", **bounds):
    """(explorer, test client) of an instance given as a file or a text,
    served as on 127.0.0.1:PORT."""
    prog = load_path(source, explorer=True).program if source.endswith(".sq") else load_text(source).program
    ex = Explorer(prog, name, **bounds)
    app = make_app(ex, PORT)
    app.config["SERVER_NAME"] = f"127.0.0.1:{PORT}"  # the test client's Host
    return ex, app.test_client()


@pytest.fixture(scope="module")
def client():
    return ui_client(str(INST / "self_preempt.sq"), "instances/self_preempt.sq")[1]


def test_ui_state_pages_follow_the_replay(client):
    assert client.get("/").headers["Location"].endswith("/state/0")
    prog = load_path(str(INST / "self_preempt.sq"), explorer=True).program
    sm = SerqModel(prog)
    trace = replay(sm, "0/0/0/0")
    view = client.get("/api/state/0/0/0/0").get_json()
    assert view["fingerprint"] == f"{trace[-1].fingerprint:016x}"
    assert view["parent"] == "0/0/0" and view["depth"] == 3
    assert [a["text"] for a in view["actions"]] == [sm.format_action(trace[-1].state, a)
                                                     for a in sm.actions(trace[-1].state)]
    html = client.get("/state/0/0/0/0").get_data(as_text=True)
    assert 'href="?action=0"' in html and "preempt long#1 (kv full, lifo, self-preemption)" in html
    # the links are relative to the path: an action extends it, a step cuts it
    assert client.get("/state/0/0/0/0?action=0").headers["Location"] == "/state/0/0/0/0/0"
    assert client.get("/state/0/0/0/0?step=1").headers["Location"] == "/state/0/0"
    assert client.get("/state/0/0/0/0?step=0").headers["Location"] == "/state/0"
    r = client.get("/state/0/0/0/0?step=1&action=0")  # two links in one: refused, not one of them followed
    assert r.status_code == 400 and b"not both" in r.data
    r = client.get("/state/0/0?step=2")
    assert r.status_code == 400 and "no step `2` of the path `0/0`, which has 1 step(s)" in r.get_data(as_text=True)
    for bad in ("-1", "\u00b2", "1" * 5000, ""):
        assert client.get("/state/0/0", query_string={"step": bad}).status_code == 400
        r = client.get("/state/0/0", query_string={"action": bad})
        assert r.status_code == 400 and "an action is its index" in r.get_data(as_text=True)


def test_ui_bad_paths_get_a_message_not_a_trace(client):
    r = client.get("/state/0/7")
    assert r.status_code == 404
    assert "bad replay path `0/7`: step 1: action index 7 out of range (1 actions)" in r.get_data(as_text=True)
    r = client.get("/go?path=0/x")
    assert r.status_code == 400 and "expected integers separated by" in r.get_data(as_text=True)
    assert client.get("/go?path=0/0").headers["Location"].endswith("/state/0/0")
    r = client.get("/nowhere")
    assert r.status_code == 404 and "states are at /state/PATH" in r.get_data(as_text=True)
    assert client.get("/timeline/0/9").status_code == 404


def search(client) -> str:
    """Start the violation search from a state page's button; its page."""
    token = re.search(r'name="token" value="([^"]+)"', client.get("/state/0").get_data(as_text=True)).group(1)
    assert client.post("/violation", data={"token": token}).status_code == 303
    for _ in range(600):
        html = client.get("/violation").get_data(as_text=True)
        if "searching for" not in html:
            return html
        time.sleep(0.1)
    raise AssertionError("the search did not end")


def test_ui_violation_and_timelines(client):
    html = search(client)
    assert "livelock: a cycle of 3 steps" in html and 'href="/state/0/0/0/0/0/0"' in html
    tl = client.get("/violation/timeline").get_data(as_text=True)
    assert 'data-returns-to="2"' in tl
    assert 'id="timeline"' in client.get("/timeline/0/0/0").get_data(as_text=True)


# the search's counterexample on theorem_no_lifo ends at step 9, a stuck
# preemption; the run goes on from there one more step, to a state that
# alone violates nothing
STUCK_AT_9 = "0/5/5/0/0/0/0/0/0/0"
PAST_STUCK = STUCK_AT_9 + "/0"


def test_ui_judges_every_state_of_a_path():
    c = ui_client(str(INST / "theorem_no_lifo.sq"), checks=["stuck"])[1]
    v = c.get(f"/api/state/{PAST_STUCK}").get_json()
    assert v["depth"] == 10 and v["problems"] == []  # the last state alone violates nothing
    assert v["verdict"] == {"verdict": "violation", "kind": "stuck", "step": 9, "path": STUCK_AT_9,
                            "before_the_end": True,
                            "message": "chat#1 was preempted again without passing the position of its previous "
                                       "preemption"}
    html = c.get(f"/state/{PAST_STUCK}").get_data(as_text=True)
    assert 'id="path-verdict"' in html and f'href="/state/{STUCK_AT_9}"' in html
    # the timeline of the path is the one `serq explore --replay` gives: it ends at the failure
    tl = c.get(f"/timeline/{PAST_STUCK}").get_data(as_text=True)
    assert 'id="verdict">violation (stuck): chat#1 was preempted again' in tl
    assert f'id="replay">{STUCK_AT_9}</code>' in tl
    # a path that has not failed yet says nothing of it
    v = c.get("/api/state/0/5/5").get_json()["verdict"]
    assert (v["verdict"], v["step"], v["before_the_end"]) == ("pass", 2, False)
    assert 'id="path-verdict"' not in c.get("/state/0/5/5").get_data(as_text=True)


def test_ui_timeline_of_a_lasso_is_a_livelock(client):
    tl = client.get("/timeline/0/0/0/0/0/0").get_data(as_text=True)
    assert 'id="verdict">livelock: replayed 5 step(s): the last 3 return to the state of step 2' in tl
    v = client.get("/api/state/0/0/0/0/0/0").get_json()["verdict"]
    assert (v["verdict"], v["step"]) == ("livelock", 5)


# ---------------------------------------------------------------- serq ui (who may ask, what it costs)

# one session of 20,000 decode iterations: paths as long as a test wants, none failing
LONG = """
pool kv { cap 64; admit via gpu; }
stage gpu { budget 8; }
session s { hold kv reserve 8 { prefill 4; decode 20000; } end; }
workload { 1 x s; }
"""


def zeros(steps: int) -> str:
    return "/".join(["0"] * (steps + 1))


def test_ui_answers_only_its_own_host(client):
    # DNS rebinding: another site's name resolved to 127.0.0.1 reaches the server with that name
    for host in ("rebind.example:8123", "rebind.example", "127.0.0.1:9999", "localhost", "127.0.0.1.nip.io:8123"):
        for url in ("/api/state/0", "/state/0", "/", "/violation", "/nowhere"):
            r = client.get(url, headers={"Host": host})
            text = r.get_data(as_text=True)
            assert r.status_code == 403, (host, url)
            assert f"names the host `{host}`" in text and "self_preempt" not in text and "kv" not in text
    for host in ("127.0.0.1:8123", "localhost:8123", "LOCALHOST:8123"):
        assert client.get("/api/state/0", headers={"Host": host}).status_code == 200


def test_ui_serves_no_file_of_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "secret.txt").write_text("secret")
    monkeypatch.chdir(tmp_path)
    _ex, c = ui_client(str(INST / "self_preempt.sq"))
    for url in ("/static/secret.txt", "/static/../static/secret.txt", "/secret.txt"):
        r = c.get(url)
        assert r.status_code == 404 and "secret" not in r.get_data(as_text=True).replace("secret.txt", "")


def test_ui_refuses_another_sites_images_scripts_and_frames(client):
    fetch = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}
    r = client.get("/state/0", headers=fetch)
    assert r.status_code == 403 and "a page of another site asked" in r.get_data(as_text=True)
    for mode, dest in (("cors", "empty"), ("navigate", "iframe"), ("no-cors", "script")):
        h = {**fetch, "Sec-Fetch-Mode": mode, "Sec-Fetch-Dest": dest}
        assert client.get("/api/state/0", headers=h).status_code == 403
        assert client.get("/state/0", headers={**h, "Sec-Fetch-Site": "same-site"}).status_code == 403
    # a link followed from another site opens; the explorer's own requests and typed addresses too
    nav = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
    r = client.get("/state/0", headers=nav)
    assert r.status_code == 200 and r.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in r.headers["Content-Security-Policy"]
    for site in ("same-origin", "none"):
        assert client.get("/state/0", headers={**fetch, "Sec-Fetch-Site": site}).status_code == 200


def test_ui_violation_search_starts_from_its_own_page_only():
    ex, c = ui_client(str(INST / "self_preempt.sq"))
    # asking for the page, or its timeline, does not search (an <img> of another site could)
    html = c.get("/violation").get_data(as_text=True)
    assert 'id="search"' in html and "it starts with this button" in html
    assert c.get("/violation/timeline").headers["Location"] == "/violation"
    assert ex.search() == ("idle", None)
    refused = [({}, {}), ({"token": "guess"}, {}),
               ({"token": ex.token}, {"Sec-Fetch-Site": "cross-site"}),
               ({"token": ex.token}, {"Sec-Fetch-Site": "same-site"}),
               ({"token": ex.token}, {"Origin": "http://attacker.example"}),
               ({"token": ex.token}, {"Origin": "http://127.0.0.1:9999"})]
    for form, headers in refused:
        r = c.post("/violation", data=form, headers=headers)
        assert r.status_code == 403 and "refused" in r.get_data(as_text=True), (form, headers)
    assert ex.search() == ("idle", None)
    r = c.post("/violation", data={"token": ex.token},
               headers={"Origin": "http://127.0.0.1:8123", "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 303 and ex.search()[0] in ("running", "done")
    assert "livelock: a cycle of 3 steps" in search(c)


def test_ui_bounds_the_path_the_time_and_the_page():
    _ex, c = ui_client(LONG, max_steps=100)
    assert c.get(f"/state/{zeros(100)}").status_code == 200
    for url in (f"/state/{zeros(101)}", f"/timeline/{zeros(101)}", f"/go?path={zeros(101)}",
                f"/state/{zeros(100)}?action=0"):
        r = c.get(url, follow_redirects=True)
        assert r.status_code == 414, url
        assert "the replay path has 101 steps; serq ui shows paths of at most 100 steps" in r.get_data(as_text=True)
    r = c.get(f"/api/state/{zeros(101)}")
    assert r.status_code == 414 and "at most 100 steps" in r.get_json()["error"]
    # the default: 10,000 steps, refused before any replay
    _ex, c = ui_client(LONG)
    t = time.monotonic()
    assert c.get(f"/state/{zeros(10_001)}").status_code == 414 and time.monotonic() - t < 1
    # a time budget: the replay stops at the next step past it
    _ex, c = ui_client(LONG, request_seconds=0.05)
    t = time.monotonic()
    r = c.get(f"/state/{zeros(5000)}")
    assert r.status_code == 503 and time.monotonic() - t < 2
    assert "this page needs more than 0.05 s of CPU time, the most serq ui gives one request" in r.get_data(as_text=True)
    assert c.get(f"/api/state/{zeros(5000)}").status_code == 503
    # a page size
    _ex, c = ui_client(LONG, max_page=60_000)
    assert c.get(f"/state/{zeros(10)}").status_code == 200
    r = c.get(f"/state/{zeros(1000)}")
    assert r.status_code == 500 and "larger than 60,000 bytes, the most serq ui serves" in r.get_data(as_text=True)
    assert c.get(f"/timeline/{zeros(100)}").status_code == 500


def test_ui_page_is_linear_in_the_path():
    _ex, c = ui_client(LONG)
    sizes = {n: len(c.get(f"/state/{zeros(n)}").data) for n in (1000, 2000)}
    assert sizes[2000] < 2.1 * sizes[1000] and sizes[2000] < 250_000  # was 8.4 MB: every step linked its path
    html = c.get(f"/state/{zeros(2000)}").get_data(as_text=True)
    # the path is given a few times, not once per step: the title, the body's data, the start form's way
    # back, the path shown, the timeline link, the jump field, the footer's replay command
    assert html.count(zeros(2000)) <= 7
    assert html.count('href="?step=') == 2001 + 25  # every step under "How it got here", the last crumbs
    assert len(c.get(f"/api/state/{zeros(2000)}").data) < 250_000


def test_ui_requests_do_not_wait_on_each_other():
    ex, c = ui_client(LONG, models=2, request_seconds=0.5)
    with ex.models.borrow(ex.budget()):  # a long request holds a model: another is answered meanwhile
        assert c.get("/api/state/0/0").get_json()["depth"] == 1
        with ex.models.borrow(ex.budget()):  # every model busy: the next one waits its budget, then is told
            t = time.monotonic()
            r = c.get("/state/0/0")
            assert r.status_code == 503 and 0.4 < time.monotonic() - t < 5
            assert "serq ui works on at most 2 requests at once and none ended within 0.5 s" in \
                r.get_data(as_text=True)
    assert c.get("/state/0/0").status_code == 200


def test_ui_answers_while_a_long_request_runs(tmp_path):
    """A real server: a long request holds no lock the others wait on,
    and a name other than its own is refused."""
    import http.client
    import threading
    import urllib.request

    inst = tmp_path / "long.sq"
    inst.write_text(LONG)
    with serq_ui(inst) as (_proc, url, port):
        ends = {}

        def get(name, path):
            with urllib.request.urlopen(url + path, timeout=120) as r:
                assert r.status == 200
                r.read()
            ends[name] = time.monotonic()

        get("warm", "state/0")
        t0 = time.monotonic()
        long = threading.Thread(target=get, args=("long", f"timeline/{zeros(8000)}"))  # ~2 s of CPU
        long.start()
        time.sleep(0.2)
        t1 = time.monotonic()
        get("short", "state/0/0")
        long.join()
        # the short one is answered meanwhile, not after the long one's work
        # 0.01 s vs 3 s; behind a lock it ended after the long one (2.3 s vs 5 s): a margin for a loaded machine
        assert ends["short"] < ends["long"] and ends["short"] - t1 < (ends["long"] - t0) / 3
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", "/api/state/0", headers={"Host": f"rebind.example:{port}"})
        r = conn.getresponse()
        assert r.status == 403 and b"long.sq" not in r.read()
        conn.close()


# ---------------------------------------------------------------- serq ui (command)


def test_ui_rejects_a_bad_replay_path_and_a_busy_port(capsys):
    inst = str(INST / "self_preempt.sq")
    assert main(["ui", inst, "--replay", "0/5"]) == 2
    err = capsys.readouterr().err
    assert "error[E013]: bad replay path `0/5`: step 1: action index 5 out of range" in err
    assert main(["ui", inst, "--replay", zeros(10_001)]) == 2
    assert "the replay path has 10,001 steps; serq ui shows paths of at most 10,000 steps" in capsys.readouterr().err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["ui", inst, "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"error[E018]: cannot listen on 127.0.0.1:{port}: the port is in use" in err
    assert main(["ui", str(INST / "nope.sq")]) == 2
    assert "error[E011]: cannot read" in capsys.readouterr().err


def test_ui_serves_until_ctrl_c():
    with serq_ui(INST / "self_preempt.sq") as (p, url, _port):
        assert url.startswith("http://127.0.0.1:")
    assert p.out == "serq ui: stopped\n"  # serq_ui stopped it by SIGINT: exit 0, no traceback


def test_timeline_page_escapes_names():
    prog, sm, r = _result("self_preempt")
    html = timeline_page(sm, r, "<b>x</b>.sq")
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;.sq" in html
