"""`serq run --schedule FILE`: the per-iteration schedule as JSON lines."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from serq.cli import main
from serq.lang.load import load_path, load_text
from serq.sim.schedule import FORMAT, VERSION, ScheduleWriter, read_schedule
from serq.sim.simulator import SimConfig, Simulator

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = sorted((ROOT / "instances").glob("*.sq"))

# two requests decoding into a pool of 4 blocks of 2: the later admitted is
# preempted in its decode, keeps its full blocks cached, resumes with a hit
DECODE_PREEMPT = """
const BS = 2;
pool kv { cap 8; block BS; admit via gpu; preempt lifo; evict lru; }
stage gpu { budget 8; }
session chat(prompt, o) {
  let g = 0;
  hold kv reuse c need (prompt + g - c) take 0
       at admission (c = min(cached(kv), floor((prompt + g - 1) / BS) * BS)) {
    prefill (prompt + g - c) growing kv;
    set g = g + 1;
    decode (o - g) growing kv progress g;
  } keep (kv full);
}
workload { 2 x chat(prompt=3, o=4); }
"""


def schedule(program, coalesce=True, **kw):
    sim = Simulator(program, SimConfig(coalesce=coalesce, **kw))
    buf = io.StringIO()
    ScheduleWriter(buf).attach(sim)
    result = sim.run()
    lines = [json.loads(x) for x in buf.getvalue().splitlines()]
    return lines[0], lines[1:], result


def test_exact_schedule_of_a_decode_preemption():
    head, recs, _ = schedule(load_text(DECODE_PREEMPT, "dp.sq").program)
    assert head == {"format": FORMAT, "version": VERSION, "instance": "dp.sq", "seed": 0, "coalesce": True,
                    "time_unit": "iteration",  # no stage has a cost: a tick is an iteration
                    "pools": [{"name": "kv", "cap": 8, "block": 2}], "stages": ["gpu"]}
    got = [(r["tick"], r["served"], r["admitted"], r["preempted"], r["hits"], r["finished"],
            tuple(r["pools"]["kv"].values())) for r in recs]
    assert got == [
        (0, [["chat#1", 3], ["chat#2", 3]], ["chat#1", "chat#2"], [], {}, [], (0, 0, 0, 8)),
        (1, [["chat#1", 1], ["chat#2", 1]], [], [], {}, [], (0, 0, 0, 8)),
        # chat#1 grows: chat#2 is preempted, keeps its 2 full blocks, one is evicted at once
        (2, [["chat#1", 1]], [], ["chat#2"], {}, [], (0, 2, 2, 6)),
        (3, [["chat#1", 1]], [], [], {}, ["chat#1"], (0, 8, 8, 0)),
        # chat#2 resumes: 3 prompt + 2 answer tokens, 2 of them a hit; its prefill gives answer token 3
        (4, [["chat#2", 3]], ["chat#2"], [], {"chat#2": {"kv": 2}}, [], (0, 2, 2, 6)),
        (5, [["chat#2", 1]], [], [], {}, ["chat#2"], (0, 8, 8, 0)),
    ]
    assert [r["iteration"] for r in recs] == list(range(len(recs)))


SHARED = """
prefix SYS = 4;
pool kv { cap 16; block 2; admit via gpu; evict lru; }
stage gpu { budget 16; }
session s {
  hold kv prefix SYS reuse c need (6 - c) take 0 at admission (c = min(cached(kv), 4)) {
    prefill (6 - c) growing kv;
    decode 2 growing kv;
  } keep (kv full);
}
workload { 1 x s; 1 x s at 1ns; }
"""


def test_a_shared_prefix_in_use_is_cached_but_not_evictable():
    _, recs, _ = schedule(load_text(SHARED, "sh.sq").program)
    got = [(r["tick"], r["served"], r["hits"], r["finished"], r["pools"]["kv"]) for r in recs]
    assert got == [
        # s#1 computes SYS's 2 blocks (owned by the cache, pinned while s#1 uses them) and its own
        (0, [["s#1", 6]], {}, [], {"free": 10, "cached": 4, "evictable": 0, "allocated": 2}),
        (1, [["s#1", 1], ["s#2", 2]], {"s#2": {"kv": 4}}, [], {"free": 6, "cached": 4, "evictable": 0, "allocated": 6}),
        # s#1's own full blocks are kept under its key, evictable; SYS is still pinned by s#2
        (2, [["s#1", 1], ["s#2", 1]], {}, ["s#1"], {"free": 4, "cached": 8, "evictable": 4, "allocated": 4}),
        (3, [["s#2", 1]], {}, ["s#2"], {"free": 4, "cached": 12, "evictable": 12, "allocated": 0}),
    ]


LONG_DECODES = """
pool kv { cap 64; block 4; admit via gpu; evict lru; }
stage gpu { budget 16; chunk 4; cost 10us + 1us * ntok; }
session s(p, o) {
  hold kv need (p) take 0 { prefill p growing kv; decode o growing kv; } keep (kv full);
}
workload { 2 x s(p=9, o=30); 1 x s(p=5, o=40) at 200us; 1 x s(p=3, o=9) at 1ms; }
"""


def test_coalesced_blocks_are_expanded_to_the_uncoalesced_schedule():
    prog = load_text(LONG_DECODES, "long.sq").program
    h1, on, r1 = schedule(prog, True)
    h0, off, r0 = schedule(prog, False)
    assert r1.stats.evaluated < sum(r1.stats.iters)  # blocks happened
    assert h1["coalesce"] is True and h0["coalesce"] is False
    assert on == off
    # growth inside blocks evicted cached units: levels change inside blocks
    assert any(r["pools"]["kv"]["cached"] for r in on)


@pytest.mark.parametrize("path", INSTANCES, ids=lambda p: p.stem)
def test_every_instance_same_schedule_with_and_without_coalescing(path):
    prog = load_path(path).program
    _, on, _ = schedule(prog, True, max_steps=5_000)
    _, off, _ = schedule(prog, False, max_steps=5_000)
    assert on == off


def test_serve_keys_turn_coalescing_off_for_the_schedule():
    text = LONG_DECODES.replace("stage gpu { budget 16;", "stage gpu { budget 16; serve (desc p);")
    prog = load_text(text, "keys.sq").program
    sim = Simulator(prog, SimConfig())
    ScheduleWriter(io.StringIO()).attach(sim)
    assert sim.licence[0] == (False, "--schedule: serve keys may reorder the residents inside a block")
    _, on, _ = schedule(prog, True)
    _, off, _ = schedule(prog, False)
    assert on == off


def test_cli_writes_the_schedule(tmp_path, capsys):
    out = tmp_path / "s.jsonl"
    assert main(["run", str(ROOT / "instances" / "decode_preempt.sq"), "--schedule", str(out)]) == 0
    head, recs = read_schedule(str(out))
    assert head["instance"].endswith("decode_preempt.sq")
    assert any(r["preempted"] for r in recs) and any(r["hits"] for r in recs)
    assert sum(len(r["finished"]) for r in recs) == 2


def test_cli_unwritable_schedule_is_e017(tmp_path, capsys):
    bad = tmp_path / "missing" / "s.jsonl"
    assert main(["run", str(ROOT / "instances" / "decode_preempt.sq"), "--schedule", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "error[E017]: cannot write" in err and "Traceback" not in err


def test_read_schedule_refuses_other_formats(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text('{"format": "something"}\n')
    with pytest.raises(ValueError, match="not a serq schedule"):
        read_schedule(str(p))
    p.write_text(json.dumps({"format": FORMAT, "version": VERSION + 1}) + "\n")
    with pytest.raises(ValueError, match="newer"):
        read_schedule(str(p))
