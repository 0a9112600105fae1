"""`serq fmt`: parse → fmt → parse gives an equal IR (up to positions), fmt
is idempotent, the instances are in canonical layout, and the layout rules
are pinned by a golden text."""

from __future__ import annotations

from pathlib import Path

import pytest

from serq.cli import main
from serq.diagnostics import SerqError
from serq.lang.fmt import format_path, format_program_source
from serq.ir.util import strip_positions
from serq.lang.load import compile_source

ROOT = Path(__file__).resolve().parents[2]
INSTANCES = sorted((ROOT / "instances").glob("*.sq"))


def ir_of(text: str, file: str = "x.sq"):
    return strip_positions(compile_source(text, file)[0])


@pytest.mark.parametrize("path", INSTANCES, ids=lambda p: p.stem)
def test_instance_round_trips_and_is_canonical(path):
    text = path.read_text()
    out = format_path(path)
    assert ir_of(out, str(path)) == ir_of(text, str(path))
    assert format_program_source(out, str(path)) == out
    assert out == text, "instances are kept in canonical layout: run `serq fmt -w`"


def test_strip_positions_clears_every_position():
    p = strip_positions(compile_source(INSTANCES[0].read_text(), "x.sq")[0])
    assert '"at": [' not in p.to_json()
    assert p.source == "x.sq"


MESSY = """\
// header comment
// second line
const BS=4;   const N = (1+2)*3;
pool kv   { cap 24;block BS ;admit via gpu; preempt lifo; evict lru; }
pool seqs {
  cap 4;   // slots
  admit via gpu;
}
stage gpu { budget 8; serve (admitted); chunk 4; cost 14ms+30us*ntok; }


/* a block
   comment */
session chat(n=1, m) {
  draw prompt in {6,10} ~ uniform;
  draw o in 1 .. 4 ~ geometric(0.3) hidden; // answer length
  let g = 0;
  let x = ((g + 1)) - (2 - 1) - -1;
  let y = if g > 0 then (if g > 1 then 1 else 2) else if g < 0 then 3 else 4;
  let z = (if g > 0 then 1 else 2) + 1;
  let b = not (g > 0 and (g < 2 or g == 5)) ;

  // hold it
  hold seqs 1, kv reuse (c) need (prompt + g - c) take 0 at admission (c = min(cached(kv), floor((prompt + g - 1) / BS) * BS)) admit if budget_left > 0 {
    prefill prompt + g - c growing kv;
    decode (o-1-g) growing kv progress g;
  } keep (kv full) ;
  if g>0 { turn; } else if g<0 { turn think 2s; } else { choose k in 1..2 by -k; }
  while g < 0 { set g = g+1; turn; }
  repeat 2 { spawn chat(n=1, m=2) x 2; join; }
  // trailing comment of the body
}
workload { 3 x chat(m=1) every 2.5s; 1 x chat(2, 3) poisson 0.4/s seed 7; }
check completes, invariant allocated(kv) <= 24;
// the end
"""

GOLDEN = """\
// header comment
// second line
const BS = 4;
const N = (1 + 2) * 3;
pool kv { cap 24; block BS; admit via gpu; preempt lifo; evict lru; }
pool seqs {
  cap 4;  // slots
  admit via gpu;
}
stage gpu { budget 8; serve (admitted); chunk 4; cost 14ms + 30us * ntok; }

/* a block
   comment */
session chat(n=1, m) {
  draw prompt in {6, 10} ~ uniform;
  draw o in 1..4 ~ geometric(0.3) hidden;  // answer length
  let g = 0;
  let x = g + 1 - (2 - 1) - -1;
  let y = if g > 0 then (if g > 1 then 1 else 2) else if g < 0 then 3 else 4;
  let z = (if g > 0 then 1 else 2) + 1;
  let b = not (g > 0 and (g < 2 or g == 5));

  // hold it
  hold seqs 1, kv reuse c need (prompt + g - c) take 0
       at admission (c = min(cached(kv), floor((prompt + g - 1) / BS) * BS))
       admit if budget_left > 0 {
    prefill (prompt + g - c) growing kv;
    decode (o - 1 - g) growing kv progress g;
  } keep (kv full);
  if g > 0 {
    turn;
  } else if g < 0 {
    turn think 2s;
  } else {
    choose k in 1..2 by -k;
  }
  while g < 0 {
    set g = g + 1;
    turn;
  }
  repeat 2 {
    spawn chat(n=1, m=2) x 2;
    join;
  }
  // trailing comment of the body
}
workload { 3 x chat(m=1) every 2.5s; 1 x chat(2, 3) poisson 0.4/s seed 7; }
check completes, invariant allocated(kv) <= 24;
// the end
"""


def test_golden_layout():
    out = format_program_source(MESSY, "messy.sq")
    assert out == GOLDEN
    assert format_program_source(GOLDEN, "messy.sq") == GOLDEN
    assert ir_of(MESSY) == ir_of(GOLDEN)


def test_minimal_parentheses_keep_the_tree():
    cases = {
        "a - (b - c)": "a - (b - c)",
        "(a - b) - c": "a - b - c",
        "a * (b + c)": "a * (b + c)",
        "(a * b) + c": "a * b + c",
        "a / (b * c)": "a / (b * c)",
        "-(a + b)": "-(a + b)",
        "- (-a)": "- -a",
        "(a < b) == (c < d)": "(a < b) == (c < d)",
        "not (a and b)": "not (a and b)",
        "(not a) and b": "not a and b",
        "a or (b or c)": "a or (b or c)",
        "(a or b) and c": "(a or b) and c",
        "min((a), (b + 1))": "min(a, b + 1)",
        "(if a then b else c) * 2": "(if a then b else c) * 2",
        "2 * (if a then b else c)": "2 * (if a then b else c)",
    }
    for src, want in cases.items():
        text = f"const K = 1;\nsession s(a, b, c, d) {{\n  assert {src};\n}}\n"
        out = format_program_source(text)
        assert out.splitlines()[2] == f"  assert {want};", src


def test_blank_lines_collapse_and_vanish_at_block_edges():
    text = "session s {\n\n\n  turn;\n\n\n\n  turn;\n\n}\n\n\n\nworkload { 1 x s; }\n"
    assert format_program_source(text) == "session s {\n  turn;\n\n  turn;\n}\n\nworkload { 1 x s; }\n"


def test_long_option_lists_break():
    text = "pool kv { cap 24; block 4; admit via gpu; preempt (desc prio, admitted); evict (desc size, released); requeue back; }\n"
    assert format_program_source(text) == (
        "pool kv {\n  cap 24;\n  block 4;\n  admit via gpu;\n  preempt (desc prio, admitted);\n"
        "  evict (desc size, released);\n  requeue back;\n}\n")


def test_fmt_rejects_a_syntax_error_with_a_diagnostic():
    with pytest.raises(SerqError) as e:
        format_program_source("session s {\n  turn\n}\n", "bad.sq")
    assert e.value.render().startswith("bad.sq:3:1: error[E001]: unexpected `}`; expected `;`")


def test_cli_fmt(tmp_path, capsys):
    f = tmp_path / "x.sq"
    f.write_text(MESSY)
    assert main(["fmt", "--check", str(f)]) == 1
    assert main(["fmt", str(f)]) == 0
    assert capsys.readouterr().out == GOLDEN
    assert main(["fmt", "-w", str(f)]) == 0
    assert f.read_text() == GOLDEN
    assert main(["fmt", "--check", str(f)]) == 0
