"""The counterexample page's reading aids, without a browser: what is at
stake on each step, the arrows of spawn, join and the wait-for cycle, the
pools' numbers as text, the legend. Each is checked against the trace's
data (serq/check/tracedata.py) or the text trace, not against the page's
own code. tests/view/test_browser.py draws them and presses the keys."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from explorer.trace import replay
from serq.check.explore import explore
from serq.check.model import SerqModel
from serq.check.tracedata import blocked_data, trace_data
from serq.lang.load import load_path
from serq.view.timeline import LEGEND, timeline, timeline_page

ROOT = Path(__file__).resolve().parents[2]
INST = ROOT / "instances"
# a run of agent_subagents.sq (a pass) that spawns both subagents and joins them
AGENT_RUN = "0/0/0/0/0/0"


def _explored(name: str):
    prog = load_path(str(INST / f"{name}.sq"), explorer=True).program
    return SerqModel(prog), explore(prog)


def _replayed(name: str, path: str | None = None):
    """A run of a passing instance: `path`, or the replay path its header gives."""
    sm, r = _explored(name)
    path = path or re.search(r"^// Replay: (\S+)", (INST / f"{name}.sq").read_text(), re.M).group(1)
    r.trace = replay(sm, path)
    return sm, r


def _stakes(html: str) -> dict[int, list[str]]:
    """The stake row's words, by step."""
    row = re.search(r'<tr class="stake-row".*?</tr>', html, re.S).group(0)
    out = {}
    for k, cell in re.findall(r'<td data-step="(\d+)">(.*?)</td>', row, re.S):
        out[int(k)] = [unescape(x) for x in re.findall(r'<div class="st [^"]*" data-kind="[^"]*">(.*?)</div>', cell)]
    return out


def _arrows(html: str) -> list[tuple[str, int, str, str]]:
    return [(k, int(s), unescape(a), unescape(b)) for k, s, a, b in re.findall(
        r'<path class="arrow arrow-\w+" data-kind="(\w+)" data-step="(\d+)" data-from="([^"]*)" data-to="([^"]*)"', html)]


# ---------------------------------------------------------------- what is at stake


def test_a_deadlock_says_what_each_waiting_hold_needs_on_its_last_step():
    sm, r = _explored("join_in_hold")
    html = timeline_page(sm, r, "join_in_hold.sq")
    stakes = _stakes(html)
    last = len(r.trace) - 1
    # the numbers are the diagnosis's (needs 2 blocks (4 units) and can obtain 1 block)
    assert "child#2 is not admitted: `kv` is short: it needs 2 blocks (4 units) and can obtain 1 block" in \
        "\n".join(r.diagnosis)
    assert stakes[last] == ["child#2 needs 2 blocks of kv, 1 obtainable", "parent#1 waits at join for child#2",
                            "nothing can move: deadlock"]
    # no run completes from the initial state (the point of no return says so): step 0 says it
    assert r.no_return.status == "initial" and stakes[0] == ["from the start, no run completes"]
    # and the step list under the grid carries the same words, shown without pointing at anything
    li = re.search(rf'<li id="step-{last}".*?</li>', html, re.S).group(0)
    assert "child#2 needs 2 blocks of kv, 1 obtainable" in li


def test_the_point_of_no_return_and_each_blocked_session_are_on_their_steps():
    sm, r = _explored("theorem_no_nesting")
    stakes = _stakes(timeline_page(sm, r, "theorem_no_nesting.sq"))
    assert r.no_return.step == 2
    assert stakes[2] == ["point of no return: from here no run completes"]
    b = blocked_data(sm, r.trace[-1].state)
    for w in b["waiting"]:
        (p,) = w["pools"]
        assert f"{w['session']} needs {p['blocks']['needs']} block of {p['pool']}, " \
               f"{p['blocks']['obtainable']} obtainable" in stakes[3]
    # a#1 and b#2 queue again for their second pool in step 3 (not as they arrive): blocked there
    assert stakes[3][:2] == ["a#1 waits for slot", "b#2 waits for kv"]
    assert stakes[1] == [] and "nothing can move: deadlock" in stakes[3]


def test_a_head_of_line_deadlock_names_who_waits_behind_whom_and_who_cannot_grow():
    sm, r = _explored("hol_none")
    stakes = _stakes(timeline_page(sm, r, "hol_none.sq"))
    assert stakes[len(r.trace) - 1] == [
        "short#2 needs 1 block of kv, 0 obtainable", "short#3 waits behind short#2",
        "long#1 cannot grow kv: 0 units obtainable, a block is 2", "nothing can move: deadlock"]
    # arriving and queueing is what every request does: not at stake
    assert all(not stakes[k] for k in (1, 2, 3))


def test_a_preemption_says_who_and_what_it_loses_and_a_livelock_that_it_repeats():
    sm, r = _explored("self_preempt")
    t = timeline(sm, r, "self_preempt.sq")
    data = trace_data(sm, r.trace)
    for k, d in enumerate(data):
        words = [x["text"] for x in t["steps"][k]["stakes"]]
        for e in d["events"]:
            if e["kind"] == "preempt":
                lost = next(x["units"] for x in d["events"] if x["kind"] == "release" and x["session"] == e["session"])
                assert f"{e['session']} preempted (its own growth), loses {lost} units of {e['pool']}" in words
    assert [x["text"] for x in t["steps"][4]["stakes"]] == ["long#1 preempted (its own growth), loses 8 units of kv"]
    assert t["steps"][-1]["stakes"][-1]["text"] == f"back to step {r.lasso_start}: the cycle repeats forever"


def test_a_replayed_run_with_turns_and_prefixes_has_stakes_only_where_something_is_lost():
    sm, r = _replayed("multiturn_chat")
    t = timeline(sm, r, "multiturn_chat.sq")
    data = trace_data(sm, r.trace)
    preempted = {k for k, d in enumerate(data) if any(e["kind"] == "preempt" for e in d["events"])}
    assert preempted
    assert preempted <= {s["n"] for s in t["steps"] if any(x["kind"] == "preempt" for x in s["stakes"])}
    assert not any(x["kind"] in ("deadlock", "livelock", "no-return") for s in t["steps"] for x in s["stakes"])


# ---------------------------------------------------------------- arrows


def test_spawn_and_join_arrows_follow_the_events():
    sm, r = _replayed("agent_subagents", AGENT_RUN)
    html = timeline_page(sm, r, "agent_subagents.sq")
    want = []
    for k, d in enumerate(trace_data(sm, r.trace)):
        for e in d["events"]:
            if e["kind"] == "spawn":
                want.append(("spawn", k, e["session"], e["child"]))
            if e["kind"] == "joined":  # each child of the joining parent points at it
                want += [("join", k, s["session"], e["session"]) for s in d["state"]["sessions"]
                         if s["parent"] == e["session"]]
    assert want == [("spawn", 2, "agent#1", "sub#2"), ("spawn", 2, "agent#1", "sub#3"),
                    ("join", 4, "sub#2", "agent#1"), ("join", 4, "sub#3", "agent#1")]
    assert _arrows(html) == want
    keys = re.findall(r'<span data-key="([^"]+)">', html)
    assert "arrow-spawn" in keys and "arrow-join" in keys and "arrow-wait" not in keys


@pytest.mark.parametrize("name", ["join_in_hold", "theorem_no_nesting"])
def test_the_wait_for_cycle_is_drawn_on_the_last_step(name):
    sm, r = _explored(name)
    html = timeline_page(sm, r, f"{name}.sq")
    cycle = re.search(r"wait-for cycle: (.*)", "\n".join(r.diagnosis)).group(1).split("; ")
    last = len(r.trace) - 1
    drawn = [(a, b) for k, s, a, b in _arrows(html) if k == "wait"]
    assert [f"{a} waits for {b}" for a, b in drawn] == [c.split(" (")[0] for c in cycle]
    assert all(s == last for k, s, _a, _b in _arrows(html) if k == "wait")
    assert 'data-key="arrow-wait"' in html


def test_a_deadlock_without_a_cycle_draws_no_wait_arrow():
    sm, r = _explored("hol_none")
    html = timeline_page(sm, r, "hol_none.sq")
    assert not re.search(r"^\s*wait-for cycle:", "\n".join(r.diagnosis), re.M) and _arrows(html) == []


# ---------------------------------------------------------------- pools, legend


def test_pool_numbers_are_text_under_each_bar():
    sm, r = _replayed("multiturn_chat")
    html = timeline_page(sm, r, "multiturn_chat.sq")
    data = trace_data(sm, r.trace)
    for row in re.findall(r'<tr class="pool" data-pool="([^"]+)">(.*?)</tr>', html, re.S):
        name, cells = row
        nums = re.findall(r'<div class="nums">(.*?)</div>', cells)
        assert len(nums) == len(data)
        for d, text in zip(data, nums):
            pool = next(p for p in d["state"]["pools"] if p["pool"] == name)
            words = re.sub(r"<[^>]+>", " ", text).split()
            free = "∞" if pool["free"] is None else str(pool["free"])
            assert words == ["free", free, "cached", str(pool["cached"]), "queue", str(len(pool["queue"]))]
    # the run reuses cached units: some number is not zero
    assert re.search(r'<span class="n-cached">cached [1-9]', html)


@pytest.mark.parametrize("name,path", [("self_preempt", None), ("join_in_hold", None), ("hol_none", None),
                                       ("multiturn_chat", "header"), ("agent_subagents", AGENT_RUN),
                                       ("decode_preempt", "header")])
def test_the_legend_covers_every_mark_and_colour_the_grid_uses(name, path):
    sm, r = _replayed(name, None if path == "header" else path) if path else _explored(name)
    html = timeline_page(sm, r, f"{name}.sq")
    keys = re.findall(r'<span data-key="([^"]+)">', html)
    assert len(keys) == len(set(keys))
    grid = html[html.index('id="timeline"'):html.index('id="detail"')]
    used = set(re.findall(r'\b((?:phase|mark)-[a-z-]+)\b', " ".join(re.findall(r'class="([^"]*)"', grid))))
    used |= {f"arrow-{k}" for k, *_ in _arrows(html)}
    used |= {"alloc", "cached", "free", "selected"}
    if 'class="stake-row"' in html:
        used.add("stake")
    if 'class="step noreturn"' in html:
        used.add("no-return")
    if 'id="cycle-row"' in html:
        used.add("cycle")
    if 'class="lane in-cycle"' in html:
        used.add("in-cycle")
    assert used <= set(keys), used - set(keys)
    assert set(keys) <= {f"phase-{p}" for p in re.findall(r"phase-([a-z-]+)", grid)} | set(LEGEND)


def test_prefill_and_allocated_units_have_different_colours():
    css = (ROOT / "serq" / "view" / "templates" / "style.css").read_text()
    colour = {k: re.search(rf"--{k}: (#[0-9a-f]+);", css).group(1) for k in ("prefill", "alloc", "decode", "cached")}
    assert len(set(colour.values())) == 4, colour


def test_pages_with_turns_spawns_preemptions_and_prefixes_render():
    for name, path in [("multiturn_chat", None), ("agent_subagents", AGENT_RUN), ("decode_preempt", None),
                       ("vllm_chat", None), ("theorem_no_lifo", None)]:
        sm, r = _replayed(name, path) if name != "theorem_no_lifo" else _explored(name)
        html = timeline_page(sm, r, f"{name}.sq")
        assert html.count('<td class="cell') == len(r.trace) * len(r.trace[-1].state.sessions)
        assert "http://" not in html and "https://" not in html  # nothing fetched at view time
