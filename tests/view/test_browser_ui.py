"""`serq ui` in a real browser (Debian's Chromium driven by Playwright, as
tests/view/test_browser.py): the status panel and its counterexample
links, the start button, the marks and previews of the actions, the keys,
and the highlighted change of the last step. What the marks say is
cross-checked against a brute force in tests/view/test_ui_marks.py; here,
that the page shows what the server computed, and that a person can use it.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.fixtures import serq_ui
from tests.view.test_browser import INST, browser, page, serq, shot  # noqa: F401 (fixtures)
from tests.view.test_ui_marks import TURN_PREFIX


@pytest.fixture(scope="module")
def chat_ui():
    """One `serq ui` of instances/multiturn_chat.sq (no search: what the
    tests below read of it does not change) for the tests that only browse
    it; each test has a browser context, so a tab, of its own."""
    with serq_ui(INST / "multiturn_chat.sq") as (_proc, url, _port):
        yield url


def wait_done(pg, url: str, seconds: float = 180) -> dict:
    """The status once the background work has ended."""
    end = time.monotonic() + seconds
    while True:
        st = pg.request.get(url + "api/status").json()
        if st["done"]:
            return st
        assert time.monotonic() < end, "the background work did not end"
        time.sleep(0.2)


def api(pg, url: str, path: str) -> dict:
    return pg.request.get(f"{url}api/state/{path}").json()


def test_status_panel_links_each_property_to_its_counterexample(page):  # noqa: F811
    from playwright.sync_api import expect

    inst = str(INST / "theorem_no_join_rule.sq")
    data = json.loads(serq("explore", inst, "--json", "--no-timing").stdout)
    with serq_ui(inst, "--search") as (_proc, url, _port):
        page.goto(url)
        # the page asks for the status until the work is done, then shows its marks
        expect(page.locator("#status")).to_have_attribute("data-done", "1", timeout=120_000)
        assert page.inner_text("#status-states") == f"{data['stats']['distinct']:,}"
        assert page.inner_text("#status-done") == "done"
        row = page.locator('#properties tr[data-prop="deadlock"]')
        assert row.locator(".pst").inner_text() == "fails"
        assert page.locator('#properties tr[data-prop="invariant"] .pst').inner_text() == "holds"
        assert "18 states, 13 from which no run completes" in page.inner_text("#marks-words")
        shot(page, "ui_status")
        row.locator("a.cex").click()
        assert page.url == f"{url}state/{data['replay_path']}"
        assert page.inner_text("#path") == data["replay_path"]
        assert page.inner_text(".cex-of").startswith("the shortest counterexample of deadlock (fails): ")
        # the counterexample's state: no run completes, from the point of no return `serq explore` gives
        assert page.get_attribute("#doom", "data-doom") == "doomed"
        nr = data["point_of_no_return"]["step"]
        assert page.get_attribute("#no-return-link", "href") == f"?step={nr}"
        assert page.locator("ol.steps li.no-return").inner_text().startswith(f"{nr}. ")
        assert page.locator("ol.steps li.doomed").count() == len(data["trace"]) - 1 - nr


def test_the_start_button_runs_the_work_and_the_page_follows_it(page):  # noqa: F811
    from playwright.sync_api import expect

    with serq_ui(INST / "self_preempt.sq") as (_proc, url, _port):
        page.goto(url + "state/0/0")
        assert page.get_attribute("#doom", "data-doom") == "unknown"
        assert page.locator('#properties tr[data-prop="livelock"] .pst').inner_text() == "pending"
        page.click("#start")
        expect(page.locator("#status")).to_have_attribute("data-done", "1", timeout=120_000)
        assert page.url == url + "state/0/0"
        assert page.locator('#properties tr[data-prop="livelock"] .pst').inner_text() == "fails"
        assert page.get_attribute("#doom", "data-doom") == "doomed"
        assert page.locator("#start").count() == 0


def test_actions_show_their_successor_and_its_marks(page, tmp_path):  # noqa: F811
    inst = tmp_path / "turn_prefix.sq"
    inst.write_text(TURN_PREFIX)
    with serq_ui(inst, "--search") as (_proc, url, _port):
        wait_done(page, url)
        path = "0/0"
        page.goto(f"{url}state/{path}")
        v = api(page, url, path)
        items = page.locator("#actions li[data-index]")
        assert items.count() == len(v["actions"]) > 1
        for k, a in enumerate(v["actions"]):
            li = items.nth(k)
            assert li.get_attribute("data-doom") == a["doom"]
            assert li.locator(".mark.no-return").count() == int(a["no_return"])
            assert li.locator(".mark.doomed").count() == int(a["doom"] == "doomed" and not a["no_return"])
            assert li.locator("ul.preview li").all_inner_texts() == a["changes"]
        assert any(a["no_return"] for a in v["actions"]) and not all(a["no_return"] for a in v["actions"])
        shot(page, "ui_actions")
        # following a marked action: the state says no run completes, and where the path lost it
        k = next(a["index"] for a in v["actions"] if a["no_return"])
        page.click(f'#actions a[data-index="{k}"]')
        assert page.get_attribute("#doom", "data-doom") == "doomed"
        assert page.get_attribute("#no-return-link", "href") == "?step=2"
    # an action back to a state of the path: marked, and its mark leads there
    with serq_ui(INST / "self_preempt.sq", "--search") as (_proc, url, _port):
        wait_done(page, url)
        page.goto(url + "state/0/0/0/0/0")
        mark = page.locator('#actions li[data-index="0"] .mark.visited')
        assert mark.inner_text() == "\u21ba visited: step 2"
        mark.click()
        assert page.inner_text("#path") == "0/0/0"


def test_keys_choose_follow_go_back_and_home(page, chat_ui):  # noqa: F811
    url = chat_ui
    page.goto(url)
    page.keyboard.press("0")
    page.wait_for_url(url + "state/0/0")
    n = page.locator("#actions li[data-index]").count()
    assert n >= 2 and page.get_attribute("#actions li.sel", "data-index") == "0"
    page.keyboard.press("ArrowDown")
    assert page.get_attribute("#actions li.sel", "data-index") == "1"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_url(url + "state/0/0/1")
    page.keyboard.press("1")  # one digit is the whole number when the actions are fewer than 10
    page.wait_for_url(url + "state/0/0/1/1")
    page.keyboard.press("Backspace")
    page.wait_for_url(url + "state/0/0/1")
    page.keyboard.press("ArrowLeft")
    page.wait_for_url(url + "state/0/0")
    page.keyboard.press("ArrowRight")  # follows the selected action, the first
    page.wait_for_url(url + "state/0/0/0")
    # a number past the last action does nothing; typing in the jump field is typing
    page.keyboard.press("9")
    assert page.url == url + "state/0/0/0"
    page.click("#go-path")
    page.keyboard.press("End")
    page.keyboard.type("/0")
    assert page.url == url + "state/0/0/0" and page.input_value("#go-path") == "0/0/0/0"
    page.keyboard.press("Enter")  # the form's own Enter: the jump
    page.wait_for_url(url + "state/0/0/0/0")
    page.locator("h1").click()
    page.keyboard.press("Home")
    page.wait_for_url(url + "state/0")


def test_keys_take_a_two_digit_action(page, tmp_path):  # noqa: F811
    """With 10 or more actions, a digit that can begin a longer number
    waits for the next (or for Enter)."""
    inst = tmp_path / "many.sq"
    inst.write_text("""
pool kv { cap 64; admit via gpu; }
stage gpu { budget 8; }
session s { draw x in 1..12; hold kv need x { prefill 1; } end; }
workload { 1 x s; }
""")
    with serq_ui(inst) as (_proc, url, _port):
        page.goto(url)
        n = page.locator("#actions li[data-index]").count()
        assert n == 12, n
        page.keyboard.press("1")
        assert page.url == url + "state/0" and page.inner_text("#key-buffer") == "action 1\u2026"
        assert page.get_attribute("#actions li.sel", "data-index") == "1"
        page.keyboard.press("1")
        page.wait_for_url(url + "state/0/11")
        page.go_back()
        page.wait_for_url(url + "state/0")
        page.keyboard.press("1")
        page.keyboard.press("Enter")
        page.wait_for_url(url + "state/0/1")


def test_the_last_steps_change_is_highlighted(page, chat_ui):  # noqa: F811
    inst, url = str(INST / "multiturn_chat.sq"), chat_ui
    page.goto(url + "state/0/0/0")
    before = {r.get_attribute("data-session"): r.locator("td.mono").inner_text()
              for r in page.locator("#sessions tr[data-session]").all()}
    pools_before = {r.get_attribute("data-pool"): r.locator("td").all_inner_texts()
                    for r in page.locator("#pools tr[data-pool]").all()}
    page.click('#actions a[data-index="0"]')
    path = "0/0/0/0"
    assert page.inner_text("#path") == path
    replayed = json.loads(serq("explore", inst, "--replay", path, "--json").stdout)["trace"][-1]
    assert page.locator("#change li").all_inner_texts() == replayed["diff"]
    changed = page.locator("#sessions tr.changed")
    assert changed.count() >= 1
    for r in page.locator("#sessions tr[data-session]").all():
        name, text = r.get_attribute("data-session"), r.locator("td.mono").inner_text()
        assert ("changed" in (r.get_attribute("class") or "")) == (before.get(name) != text)
    for r in changed.all():
        assert r.get_attribute("title") == f"before: {before[r.get_attribute('data-session')]}"
        bg = r.locator("td").first.evaluate("e => getComputedStyle(e).backgroundColor")
        assert bg == "rgb(255, 243, 191)"
    cells = ("allocated", "cached", "free")
    for r in page.locator("#pools tr[data-pool]").all():
        was = pools_before[r.get_attribute("data-pool")]
        for k, key in enumerate(cells, start=1):
            cell = r.locator(f'td[data-cell="{key}"]')
            assert ("changed" in cell.get_attribute("class")) == (cell.inner_text() != was[k])
    shot(page, "ui_change")


def test_actions_to_states_seen_in_this_tab_are_marked(page, chat_ui):  # noqa: F811
    """A successor this tab has shown, by any path, is marked `seen` and
    links to where it was seen; one on the path is `visited` instead."""
    url = chat_ui
    # two different paths to one state: the first seen by the person, then reached from the other side
    fps: dict[str, str] = {}
    pair = None
    for first in api(page, url, "0")["actions"]:
        for a in api(page, url, f"0/{first['index']}")["actions"]:
            path = f"0/{first['index']}/{a['index']}"
            if a["fingerprint"] in fps and pair is None:
                pair = (fps[a["fingerprint"]], path)
            fps.setdefault(a["fingerprint"], path)
    assert pair is not None, "no state reached by two paths"
    seen_path, other = pair
    page.goto(url + "state/0")
    assert page.locator(".mark.seen").count() == 0
    page.goto(f"{url}state/{seen_path}")
    parent, last = other.rsplit("/", 1)
    page.goto(f"{url}state/{parent}")
    mark = page.locator(f'#actions li[data-index="{last}"] .mark.seen')
    assert mark.inner_text() == "\u25e6 seen" and mark.get_attribute("href") == f"/state/{seen_path}"
    # only the actions whose successor was shown are marked
    shown = {seen_path, "0", parent}
    for li in page.locator("#actions li[data-index]").all():
        target = f"{parent}/{li.get_attribute('data-index')}"
        want = fps.get(li.get_attribute("data-fp")) in shown or target in shown
        assert li.locator(".mark.seen").count() == int(want and li.locator(".mark.visited").count() == 0)
    mark.click()
    assert page.inner_text("#path") == seen_path
