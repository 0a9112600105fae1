"""The pages in a real browser: Debian's Chromium driven by Playwright.

Each test checks what a person sees — the lanes and pool bars of every
session and step of a golden counterexample, with their drawn sizes; the
marked cycle against the trace; the plots of a run; a click through
`serq ui` against `serq explore --replay` — and writes a screenshot of
the page to tests/artifacts/ for review.

Without Chromium (`/usr/bin/chromium`) or the playwright package the tests
are skipped on a developer's machine and fail under CI (CI=true), where
the install command of README.md must have brought both.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.fixtures import serq_ui

ROOT = Path(__file__).resolve().parents[2]
INST = ROOT / "instances"
GOLDEN = ROOT / "tests" / "golden"
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = "/usr/bin/chromium"
# a closed network: no background traffic, no first-run or update checks
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        # another site's name resolved to 127.0.0.1, as a DNS rebinding attack does
        "--host-resolver-rules=MAP rebind.test 127.0.0.1"]


def _missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"no {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "no playwright package (pip install -e '.[dev]')"
    return None


@pytest.fixture(scope="module")
def browser():
    why = _missing()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run: {why}")
        pytest.skip(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = ctx.new_page()
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    # offline: a page that asks the network for anything fails here
    pg.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), lambda route: (errors.append(route.request.url), route.abort()))
    yield pg
    ctx.close()
    assert not errors, errors


def shot(pg, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    out = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(out), full_page=True)
    assert out.stat().st_size > 10_000
    return out


def serq(*argv, check_code=None) -> subprocess.CompletedProcess:
    """A command's exit code and output, run by the CLI's entry in this
    process (these tests read what it writes, not how its process behaves:
    tests/cli/ has those)."""
    from serq.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    r = subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())
    if check_code is not None:
        assert r.returncode == check_code, r.stderr
    return r


def explore_page(tmp_path, name: str, *extra) -> tuple[dict, Path]:
    """The JSON trace and the page of one exploration."""
    inst = str(INST / f"{name}.sq")
    data = json.loads(serq("explore", inst, "--json", "--no-timing", *extra).stdout)
    out = tmp_path / f"{name}.html"
    serq("explore", inst, "-q", "--html", str(out), *extra)
    return data, out


def golden_steps(name: str) -> int:
    """The number of numbered steps in the golden text trace."""
    return len(re.findall(r"^  \d+\. ", (GOLDEN / f"{name}.txt").read_text(), re.M))


def check_lanes_and_bars(pg, data: dict) -> None:
    n = len(data["trace"])
    labels = pg.locator("tr.lane th.name").all_inner_texts()
    sessions = sorted({m for s in data["trace"] for line in s["diff"] for m in re.findall(r"^(\w+#\d+):", line)},
                      key=lambda x: int(x.split("#")[1]))
    assert labels == sessions
    for label in labels:
        cells = pg.locator(f'tr.lane[data-session="{label}"] td.cell')
        assert cells.count() == n
        for k in range(n):
            box = cells.nth(k).bounding_box()
            assert box and box["width"] > 20 and box["height"] > 20, (label, k)
    for row in pg.locator("tr.pool").all():
        bars = row.locator("td.bar")
        assert bars.count() == n
        cap = int(re.search(r"cap (\d+)", row.locator("th").inner_text()).group(1))
        for k in range(n):
            bar = bars.nth(k)
            alloc = int(bar.get_attribute("data-alloc"))
            cached = int(bar.get_attribute("data-cached"))
            free = int(bar.get_attribute("data-free"))
            assert alloc + cached + free == cap
            full = bar.locator(".stack").bounding_box()["height"]
            drawn = bar.locator(".alloc").bounding_box()["height"]
            assert abs(drawn - full * alloc / cap) < 1.5, (k, drawn, alloc)
            drawn = bar.locator(".cached").bounding_box()["height"]
            assert abs(drawn - full * cached / cap) < 1.5, (k, drawn, cached)


def test_livelock_timeline_in_the_browser(page, tmp_path):
    data, out = explore_page(tmp_path, "self_preempt")
    assert data["verdict"] == "livelock" and len(data["trace"]) == golden_steps("self_preempt")
    page.goto(out.as_uri())
    assert page.inner_text("#verdict") == (GOLDEN / "self_preempt.txt").read_text().splitlines()[0]
    assert page.inner_text("#replay") == data["replay_path"]
    check_lanes_and_bars(page, data)
    start, n = data["lasso_start"], len(data["trace"])
    assert [int(x) for x in page.eval_on_selector_all("thead th.cycle", "es => es.map(e => e.dataset.step)")] == \
        list(range(start + 1, n))
    assert page.get_attribute("[data-returns-to]", "data-returns-to") == str(start)
    # the cycle closes: the last step's state is the state at its start
    assert data["trace"][-1]["fingerprint"] == data["trace"][start]["fingerprint"]
    # the preemption is marked where the trace says it happened
    pre = [s["step"] for s in data["trace"] if s["action"] and "preempt" in s["action"]]
    marked = page.eval_on_selector_all("td.mark-preempt", "es => es.map(e => +e.dataset.step)")
    assert marked == pre
    # pointing at a step shows its action
    page.hover(f'tr.lane td.cell[data-step="{pre[0]}"]')
    assert page.inner_text("#detail").startswith(f"{pre[0]}. {data['trace'][pre[0]]['action']}")
    shot(page, "timeline_livelock")


def test_deadlock_timeline_in_the_browser(page, tmp_path):
    data, out = explore_page(tmp_path, "join_in_hold")
    page.goto(out.as_uri())
    check_lanes_and_bars(page, data)
    golden = (GOLDEN / "join_in_hold.txt").read_text()
    cycle = re.search(r"wait-for cycle: (.*)", golden).group(1).split("; ")
    assert page.locator("#wait-cycle li").all_inner_texts() == cycle
    assert page.locator("tr.lane.in-cycle th.name").all_inner_texts() == ["parent#1", "child#2"]
    # the sessions of the cycle are outlined in the last column
    last = page.locator('tr.lane.in-cycle td.cell[data-step="2"]')
    assert last.count() == 2 and all(c.evaluate("e => getComputedStyle(e).outlineStyle") == "dashed"
                                     for c in last.all())
    shot(page, "timeline_deadlock")


def test_replayed_run_with_cache_in_the_browser(page, tmp_path):
    path = re.search(r"^// Replay: (\S+)", (INST / "multiturn_chat.sq").read_text(), re.M).group(1)
    inst = str(INST / "multiturn_chat.sq")
    data = json.loads(serq("explore", inst, "--replay", path, "--json").stdout)
    out = tmp_path / "replay.html"
    serq("explore", inst, "--replay", path, "--html", str(out), check_code=0)
    page.goto(out.as_uri())
    check_lanes_and_bars(page, data)
    assert page.locator("td.bar[data-cached]").evaluate_all("es => es.some(e => +e.dataset.cached > 0)")
    shot(page, "timeline_replay")


def _selected(pg) -> int:
    return int(pg.get_attribute("body", "data-selected"))


def test_keys_move_the_selected_step_with_a_visible_focus(page, tmp_path):
    inst = str(INST / "agent_subagents.sq")
    out = tmp_path / "agent.html"
    serq("explore", inst, "--replay", "0/0/0/0/0/0", "--html", str(out), check_code=0)
    data = json.loads(serq("explore", inst, "--replay", "0/0/0/0/0/0", "--json").stdout)
    n = len(data["trace"])
    page.goto(out.as_uri())
    # a run without a point of no return opens on its last step
    assert _selected(page) == n - 1
    moves = [("Home", 0), ("ArrowRight", 1), ("ArrowRight", 2), ("j", 3), ("k", 2), ("ArrowLeft", 1),
             ("ArrowLeft", 0), ("ArrowLeft", 0), ("End", n - 1), ("ArrowRight", n - 1), ("k", n - 2)]
    for key, want in moves:
        page.keyboard.press(key)
        assert _selected(page) == want, key
        # the selected column's head has the focus, drawn; the panel shows that step's action
        assert page.evaluate("() => document.activeElement.dataset.step") == str(want)
        head = page.locator(f'thead th[data-step="{want}"]')
        assert "sel" in head.get_attribute("class")
        assert head.evaluate("e => getComputedStyle(e).outlineStyle") == "solid"
        assert float(head.evaluate("e => getComputedStyle(e).outlineWidth")[:-2]) >= 2
        assert page.inner_text("#detail").startswith(f"{want}. {data['trace'][want]['action'] or 'initial state'}")
        assert page.locator("thead th.sel").count() == 1
    # a click selects too
    page.click('tr.lane td.cell[data-step="3"]')
    assert _selected(page) == 3
    shot(page, "timeline_spawn_join")


def _ends(pg, path) -> tuple[dict, dict]:
    """The first and last point of an arrow, in the page's coordinates."""
    return path.evaluate("""p => { const m = p.getScreenCTM(), n = p.getTotalLength();
        const f = (q) => { const r = q.matrixTransform(m); return {x: r.x, y: r.y}; };
        return [f(p.getPointAtLength(0)), f(p.getPointAtLength(n))]; }""")


def _inside(pt: dict, box: dict, beside: bool = False) -> bool:
    """Whether a point is in a cell (`beside`: at its right edge, in its row)."""
    x0, x1 = (box["x"] + box["width"] - 1, box["x"] + box["width"] + 8) if beside else (box["x"], box["x"] + box["width"])
    return x0 <= pt["x"] <= x1 and box["y"] <= pt["y"] <= box["y"] + box["height"]


def check_arrows(pg, want: list[tuple[str, int, str, str]]) -> None:
    arrows = pg.locator("svg#arrows path.arrow")
    got = [(a.get_attribute("data-kind"), int(a.get_attribute("data-step")), a.get_attribute("data-from"),
            a.get_attribute("data-to")) for a in arrows.all()]
    assert got == want
    for a, (kind, k, src, dst) in zip(arrows.all(), want):
        start, end = _ends(pg, a)
        cell = lambda lab: pg.locator(f'tr.lane[data-session="{lab}"] td.cell[data-step="{k}"]').bounding_box()  # noqa: E731
        # spawn and join inside the column; the wait-for cycle's arcs leave from the last cells' right edge
        beside = kind == "wait"
        assert _inside(start, cell(src), beside) and _inside(end, cell(dst), beside), (kind, src, dst, start, end)
        assert a.evaluate("e => getComputedStyle(e).stroke") != "none"


def test_spawn_join_arrows_are_drawn_between_the_lanes(page, tmp_path):
    inst = str(INST / "agent_subagents.sq")
    out = tmp_path / "agent.html"
    serq("explore", inst, "--replay", "0/0/0/0/0/0", "--html", str(out), check_code=0)
    page.goto(out.as_uri())
    check_arrows(page, [("spawn", 2, "agent#1", "sub#2"), ("spawn", 2, "agent#1", "sub#3"),
                        ("join", 4, "sub#2", "agent#1"), ("join", 4, "sub#3", "agent#1")])
    # each arrow's kind is in the legend, drawn in the arrow's colour
    for kind in ("spawn", "join"):
        colour = page.locator(f"path.arrow-{kind}").first.evaluate("e => getComputedStyle(e).stroke")
        swatch = page.locator(f'#legend [data-key="arrow-{kind}"] i')
        assert swatch.evaluate("e => getComputedStyle(e).borderTopColor") == colour


def test_deadlock_page_shows_the_stakes_the_wait_for_arrows_and_the_pool_numbers(page, tmp_path):
    data, out = explore_page(tmp_path, "join_in_hold")
    page.goto(out.as_uri())
    last = len(data["trace"]) - 1
    check_arrows(page, [("spawn", 2, "parent#1", "child#2"), ("wait", last, "parent#1", "child#2"),
                        ("wait", last, "child#2", "parent#1")])
    # what is at stake is on the step, seen without pointing at anything
    stake = page.locator(f'#stake-row td[data-step="{last}"]')
    assert stake.is_visible() and stake.bounding_box()["height"] > 20
    assert stake.inner_text().splitlines()[0] == "child#2 needs 2 blocks of kv, 1 obtainable"
    (w,) = data["blocked"]["waiting"]
    assert (w["pools"][0]["blocks"]["needs"], w["pools"][0]["blocks"]["obtainable"]) == (2, 1)
    # the pool's numbers, as text under each bar
    for k, step in enumerate(data["trace"]):
        (pool,) = step["state"]["pools"]
        nums = page.locator(f'tr.pool td.bar[data-step="{k}"] .nums')
        assert nums.is_visible()
        assert nums.inner_text().split() == ["free", str(pool["free"]), "cached", str(pool["cached"]),
                                             "queue", str(len(pool["queue"]))]
    # prefill (here: served prefill tokens) and allocated units are told apart, as the legend draws them
    alloc = page.locator('#legend [data-key="alloc"] i').evaluate("e => getComputedStyle(e).backgroundColor")
    assert alloc == page.locator("td.bar .alloc").first.evaluate("e => getComputedStyle(e).backgroundColor")
    served = page.locator("td.mark-serve-prefill").first.evaluate("e => getComputedStyle(e).borderBottomColor")
    swatch = page.locator('#legend [data-key="mark-serve-prefill"] i')
    assert served != alloc and swatch.evaluate("e => getComputedStyle(e).borderBottomColor") == served
    shot(page, "timeline_deadlock_stakes")


def test_simulation_plots_in_the_browser(page, tmp_path):
    out = tmp_path / "sim.html"
    text = (INST / "vllm_chat.sq").read_text().replace("3 x chat every 2.5s", "10 x chat every 30ms")
    inst = tmp_path / "busy.sq"
    inst.write_text(text)
    serq("run", str(inst), "--html", str(out), check_code=0)
    report = json.loads(serq("run", str(inst), "--json").stdout)
    page.goto(out.as_uri())
    for pid in ["pool-0", "busy", "latency"]:
        svg = page.locator(f"#{pid} .main-svg").first
        box = svg.bounding_box()
        assert box and box["width"] > 400 and box["height"] > 200, pid
    # one area per pool level (allocated, cached) and the queue line
    assert page.locator("#pool-0 .scatterlayer .trace").count() == 3
    # a histogram per program and latency (TTFT, TPOT, end-to-end)
    assert page.locator("#latency .barlayer .trace").count() == 3 * len(report["programs"])
    rows = page.locator("#programs tr").all_inner_texts()
    assert rows[1].split("\t")[:3] == ["chat", str(report["programs"][0]["sessions"]),
                                        str(report["programs"][0]["ended"])]
    shot(page, "simulation")


def test_clicking_in_serq_ui_reaches_the_replayed_state(page):
    from playwright.sync_api import expect

    inst = str(INST / "multiturn_chat.sq")
    with serq_ui(inst) as (_proc, url, _port):
        page.goto(url)
        assert page.inner_text("#path") == "0"
        # click a path through the graph: arrivals, turns with their draws, iterations
        clicks = [0, 0, 0, 3, 0, 4, 5]
        for i in clicks:
            page.click(f'#actions a[data-index="{i}"]')
        path = "0/" + "/".join(map(str, clicks))
        assert page.inner_text("#path") == path and page.url == f"{url}state/{path}"
        shown = page.inner_text("#fingerprint")
        sessions = page.locator("#sessions tr[data-session] td.mono").all_inner_texts()
        data = json.loads(serq("explore", inst, "--replay", path, "--json").stdout)
        assert data["trace"][-1]["fingerprint"] == shown
        # the replay's words for the last state are the table's
        text = serq("explore", inst, "--replay", path).stdout
        for line in sessions:
            assert line in text
        shot(page, "ui_state")
        # back goes to the parent, and a bad jump gets a message
        page.click("#back")
        assert page.inner_text("#path") == path.rsplit("/", 1)[0]
        page.fill("#go-path", "0/9")
        page.click("#go")
        assert page.inner_text("#message") == "bad replay path `0/9`: step 1: action index 9 out of range (2 actions)"
        # the shortest path to the first violation: this instance has none
        page.goto(url + "violation")
        page.click("#search")
        expect(page.locator("#message")).to_have_text(re.compile("^pass: no violation in"), timeout=60_000)
        shot(page, "ui_violation")


def test_serq_ui_links_to_the_violation_timeline(page):
    from playwright.sync_api import expect

    with serq_ui(INST / "self_preempt.sq") as (_proc, url, _port):
        page.goto(url)
        page.click("#violation-link")
        expect(page.locator("#message")).to_have_text(re.compile("^livelock:"), timeout=60_000)
        page.click("#violation-state")
        assert page.inner_text("#path") == "0/0/0/0/0/0"
        page.goto(url + "violation")
        page.click("#violation-timeline")
        assert page.get_attribute("[data-returns-to]", "data-returns-to") == "2"
        shot(page, "ui_violation_timeline")


# a page of another site that tries to use the explorer on 127.0.0.1:PORT
ATTACK = """<!DOCTYPE html><html><body>
<img src="http://127.0.0.1:PORT/state/0/0/0">
<form id="f" method="post" action="http://127.0.0.1:PORT/violation"><input name="token" value="guess"></form>
<script>
fetch("http://127.0.0.1:PORT/api/state/0", {mode: "no-cors"}).catch(() => {});
setTimeout(() => document.getElementById("f").submit(), 300);
</script></body></html>"""


def test_serq_ui_is_not_for_another_sites_page(page):
    with serq_ui(INST / "self_preempt.sq") as (_proc, url, port):
        # DNS rebinding: the browser reaches 127.0.0.1 under another site's name, and is refused
        page.route(re.compile(r"^http://rebind\.test:"), lambda route: route.continue_())
        r = page.goto(f"http://rebind.test:{port}/api/state/0")
        assert r.status == 403 and "this explorer answers only" in page.inner_text("body")
        assert "self_preempt" not in page.content()
        # another site's page: an image, a fetch and a form posted to the search get nothing started
        page.route("http://attacker.test/", lambda route: route.fulfill(
            body=ATTACK.replace("PORT", str(port)), content_type="text/html"))
        with page.expect_navigation(url=re.compile(r"/violation$")):
            page.goto("http://attacker.test/")
        page.goto(url + "violation")
        assert page.is_visible("#search") and "it starts with this button" in page.inner_text("#message")


def test_sweep_heat_map_in_the_browser(page, tmp_path):
    """`serq sweep --html`: a cell's colour, text and hover are its verdict
    and worst case, and the Pareto frontier is ringed where --json has it."""
    text = (INST / "theorem.sq").read_text().replace("pool kv { cap 8;", "const KV = 8;\npool kv { cap KV;")
    inst = tmp_path / "theorem_kv.sq"
    inst.write_text(text)
    out = tmp_path / "sweep.html"
    r = serq("sweep", str(inst), "--vary", "KV=4..7", "--vary", "BS=1..3", "--require", "ttft<=2", "--any", "--json",
             "--no-timing", "--html", str(out), check_code=0)
    data = json.loads(r.stdout)
    kvs, bss = list(range(4, 8)), [1, 2, 3]
    cell = {(c["at"]["KV"], c["at"]["BS"]): c for c in data["cells"]}
    page.goto(out.as_uri())
    assert [p.get_attribute("id") for p in page.locator("div.plot").all()] == ["verdict", "worst-ttft", "requirement"]
    for pid in ("verdict", "worst-ttft", "requirement"):
        box = page.locator(f"#{pid} .main-svg").first.bounding_box()
        assert box and box["width"] > 400 and box["height"] > 200, pid
    # what each map draws, row by row (KV) and column by column (BS)
    drawn = page.evaluate("id => document.getElementById(id).data[0].text", "plot-verdict")
    assert drawn == [[cell[(kv, bs)]["verdict"] for bs in bss] for kv in kvs]
    drawn = page.evaluate("id => document.getElementById(id).data[0].text", "plot-worst-ttft")
    shown = {None: "inf"}
    assert drawn == [[shown.get(cell[(kv, bs)]["worst"]["ttft"]["value"], str(cell[(kv, bs)]["worst"]["ttft"]["value"]))
                      for bs in bss] for kv in kvs]
    drawn = page.evaluate("id => document.getElementById(id).data[0].text", "plot-requirement")
    assert drawn == [[{"pass": "+", "fail": "-"}[cell[(kv, bs)]["outcome"]] for bs in bss] for kv in kvs]
    # the ring: the frontier's cells, on the map of the requirement
    ring = page.evaluate("id => { const d = document.getElementById(id).data[1]; return [d.x, d.y]; }",
                         "plot-requirement")
    assert list(zip(ring[1], ring[0])) == [(str(c["KV"]), str(c["BS"])) for c in data["frontier"]] == [("7", "1")]
    assert page.locator("#frontier li").all_inner_texts() == ["KV=7, BS=1"]
    assert data["monotone"]["text"] in page.locator("#notes li").all_inner_texts()
    # pointing at a cell (KV = 5, BS = 2: the second row from the bottom, the middle column) says what it is
    drag = page.locator("#verdict .nsewdrag").first.bounding_box()
    page.mouse.move(drag["x"] + drag["width"] * 1.5 / 3, drag["y"] + drag["height"] * (1 - 1.5 / 4))
    page.wait_for_selector("#verdict .hovertext")
    hover = page.eval_on_selector("#verdict .hovertext", "e => [...e.querySelectorAll('tspan.line')]"
                                  ".map(t => t.textContent).join('\\n')")
    assert hover.startswith("KV=5, BS=2: livelock") and "worst ttft: unbounded" in hover, hover
    shot(page, "sweep_heat_map")
