"""Every kind of bad input gives located diagnostics with a stable code:
`file:line:col: severity[CODE]: message`, the source line, a caret. The
expected texts are inline, in full: a change of wording shows up here.
Also: several errors are collected and sorted, the CLI exits 2 with no
traceback, and a broken `.ir.json` gets a clean error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from serq.cli import main
from serq.diagnostics import SerqError, render_all
from serq.lang.load import load_text

ROOT = Path(__file__).resolve().parents[2]

BASE = 'pool kv { cap 8; block 2; admit via gpu; }\nstage gpu { budget 4; }\n'


def diagnose(src: str, **kw) -> str:
    """The rendered diagnostics of `src`: the error report, or the warnings
    of an accepted program prefixed with `OK`."""
    try:
        loaded = load_text(src, "bad.sq", **kw)
    except SerqError as e:
        return e.render()
    return "OK\n" + render_all(loaded.warnings, src)


CASES = [
    pytest.param(
        'const A = 1\nconst B = 2;\n',
        {},
        """\
bad.sq:2:1: error[E001]: unexpected `const`; expected `*`, `/` or `%`, `+` or `-`, `;`, `and`, `or` or a comparison
  const B = 2;
  ^^^^^
  note: is a `;` missing before it?
1 error""",
        id='missing_semicolon',
    ),
    pytest.param(
        'session s {\n  turn\n  turn;\n}\n',
        {},
        """\
bad.sq:3:3: error[E001]: unexpected `turn`; expected `;` or `think`
    turn;
    ^^^^
  note: is a `;` missing before it?
1 error""",
        id='missing_semicolon_in_session',
    ),
    pytest.param(
        'pool kv { capacity 8; }\n',
        {},
        """\
bad.sq:1:11: error[E001]: unexpected `capacity`; expected `admit`, `block`, `cache`, `cap`, `copies`, `evict`, `hol`, `preempt`, ...
  pool kv { capacity 8; }
            ^^^^^^^^
1 error""",
        id='unknown_word',
    ),
    pytest.param(
        'session s {\n  turn;\n',
        {},
        """\
bad.sq:2:7: error[E003]: unexpected end of input; expected a statement or `}`
    turn;
        ^
  note: the `{` at line 1, column 11 is never closed
1 error""",
        id='unterminated_block',
    ),
    pytest.param(
        'const A = 1 $ 2;\n',
        {},
        """\
bad.sq:1:13: error[E002]: unexpected character '$'; expected `)`, `*`, `/` or `%`, `+` or `-`, `,`, `..`, `;`, `{`, `}`, ...
  const A = 1 $ 2;
              ^
1 error""",
        id='bad_character',
    ),
    pytest.param(
        'const A = 1 +',
        {},
        """\
bad.sq:1:13: error[E003]: unexpected end of input; expected an expression
  const A = 1 +
              ^
1 error""",
        id='unexpected_eof_in_expression',
    ),
    pytest.param(
        BASE + 'session s {\n  let prompt = 2;\n  prefill promt;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:5:11: error[E100]: unknown name `promt`
    prefill promt;
            ^
  note: did you mean `prompt`?
1 error""",
        id='unknown_name',
    ),
    pytest.param(
        BASE + 'session s {\n  hold kb 2 {\n    prefill 2;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:8: error[E101]: hold on unknown pool `kb`
    hold kb 2 {
         ^
1 error""",
        id='unknown_pool',
    ),
    pytest.param(
        BASE + 'session s {\n  hold kvs 2 {\n    prefill 2 growing kv;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:8: error[E101]: hold on unknown pool `kvs`
    hold kvs 2 {
         ^
  note: did you mean `kv`?
bad.sq:5:5: error[E406]: `growing kv`: no enclosing hold holds `kv`
      prefill 2 growing kv;
      ^
  note: wrap the run in `hold kv ... { }`
2 errors""",
        id='unknown_pool_did_you_mean',
    ),
    pytest.param(
        BASE + 'session s {\n  prefill 2 on gpuu;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:3: error[E102]: prefill on unknown stage `gpuu`
    prefill 2 on gpuu;
    ^
  note: did you mean `gpu`?
1 error""",
        id='unknown_stage',
    ),
    pytest.param(
        'pool kv { admit via gpx; }\nstage gpu { }\nworkload { }\n',
        {},
        """\
bad.sq:1:1: warning[W502]: the instance has no workload: no session will run
  pool kv { admit via gpx; }
  ^
bad.sq:1:6: error[E102]: pool `kv` is admitted via unknown stage `gpx`
  pool kv { admit via gpx; }
       ^
1 error, 1 warning""",
        id='unknown_admit_stage',
    ),
    pytest.param(
        BASE + 'session chat {\n  turn;\n}\nworkload { 1 x caht; }\n',
        {},
        """\
bad.sq:6:16: error[E103]: unknown session program `caht`
  workload { 1 x caht; }
                 ^
  note: did you mean `chat`?
1 error""",
        id='unknown_program',
    ),
    pytest.param(
        BASE + 'session chat {\n  spawn chta;\n  join;\n}\nworkload { 1 x chat; }\n',
        {},
        """\
bad.sq:4:3: error[E103]: unknown session program `chta`
    spawn chta;
    ^
  note: did you mean `chat`?
1 error""",
        id='unknown_spawned_program',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = mn(1, 2);\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:11: error[E104]: unknown function `mn`
    let x = mn(1, 2);
            ^
  note: did you mean `min`?
1 error""",
        id='unknown_function',
    ),
    pytest.param(
        BASE + 'session s {\n  draw x in 1..2 ~ normal(1);\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:20: error[E104]: unknown distribution `normal`; expected one of uniform, geometric, poisson, weights
    draw x in 1..2 ~ normal(1);
                     ^
1 error""",
        id='unknown_distribution',
    ),
    pytest.param(
        BASE + 'session c(n) {\n  prefill n;\n}\nsession s {\n  spawn c(1, 2);\n  join;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:7:14: error[E107]: too many arguments: `c` takes 1
    spawn c(1, 2);
               ^
1 error""",
        id='spawn_too_many_args',
    ),
    pytest.param(
        BASE + 'session c(n) {\n  prefill n;\n}\nsession s {\n  spawn c x 2;\n  join;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:7:3: error[E107]: spawn: `c` needs a value for parameter `n`
    spawn c x 2;
    ^
1 error""",
        id='spawn_missing_arg',
    ),
    pytest.param(
        BASE + 'session c(n) {\n  prefill n;\n}\nworkload { 1 x c; }\n',
        {},
        """\
bad.sq:6:16: error[E107]: workload line: `c` needs a value for parameter `n`
  workload { 1 x c; }
                 ^
1 error""",
        id='workload_missing_arg',
    ),
    pytest.param(
        BASE + 'session c(n) {\n  prefill n;\n}\nworkload { 1 x c(n=1, m=1); }\n',
        {},
        """\
bad.sq:6:25: error[E107]: `c` has no parameter `m`
  workload { 1 x c(n=1, m=1); }
                          ^
  note: its parameters: n
1 error""",
        id='workload_unknown_parameter',
    ),
    pytest.param(
        BASE + 'session c(n, m) {\n  prefill n;\n}\nworkload { 1 x c(n=1, 2); }\n',
        {},
        """\
bad.sq:6:23: error[E107]: a positional argument cannot follow a named one
  workload { 1 x c(n=1, 2); }
                        ^
1 error""",
        id='positional_after_named',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = min(1);\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:11: error[E107]: `min` takes at least 2 arguments, got 1
    let x = min(1);
            ^
1 error""",
        id='min_with_one_arg',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = floor(1, 2);\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:11: error[E107]: `floor` takes 1 argument, got 2
    let x = floor(1, 2);
            ^
1 error""",
        id='floor_with_two_args',
    ),
    pytest.param(
        BASE + 'session s {\n  draw x in 1..2 ~ geometric;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:20: error[E107]: `geometric` takes 1 parameter, got 0
    draw x in 1..2 ~ geometric;
                     ^
1 error""",
        id='geometric_without_parameter',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = cached(1);\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:11: error[E107]: `cached` takes one pool name, as in `cached(kv)`
    let x = cached(1);
            ^
1 error""",
        id='cached_of_a_number',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = 1;\n  if x + 1 {\n    turn;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:5:6: error[E200]: the test of `if` or `while` must be a condition, got an integer
    if x + 1 {
       ^
1 error""",
        id='type_if_condition',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = 1;\n  set x = x > 0;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:5:11: error[E200]: `x` is an integer; cannot assign a condition
    set x = x > 0;
            ^
1 error""",
        id='type_assign_condition',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = 1;\n  assert x and true;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:5:10: error[E200]: `and` needs conditions on both sides, got an integer
    assert x and true;
           ^
1 error""",
        id='type_and_on_numbers',
    ),
    pytest.param(
        BASE + 'session s {\n  prefill 2 / 3;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:11: error[E200]: a run length must be an integer, got a number
    prefill 2 / 3;
            ^
1 error""",
        id='type_run_length_real',
    ),
    pytest.param(
        BASE + 'session s {\n  assert (1 < 2) == 3;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:10: error[E200]: cannot compare a condition with an integer
    assert (1 < 2) == 3;
           ^
1 error""",
        id='type_compare_bool_int',
    ),
    pytest.param(
        'pool kv { cap 2.5; }\n',
        {},
        """\
bad.sq:1:15: error[E200]: `cap` of pool `kv` must be an integer, got 2.5
  pool kv { cap 2.5; }
                ^
1 error""",
        id='cap_not_integer',
    ),
    pytest.param(
        'const A = x + 1;\n',
        {},
        """\
bad.sq:1:11: error[E401]: constant `A` must be a constant expression; `x` is not a constant
  const A = x + 1;
            ^
1 error""",
        id='const_not_constant',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = budget_left;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:11: error[E300]: context variable `budget_left` cannot be read at @session
    let x = budget_left;
            ^
  note: it is readable at @admit(P), @step(S) chunk
1 error""",
        id='budget_left_in_a_statement',
    ),
    pytest.param(
        BASE + 'session s {\n  hold kv 2 admit if ntok > 0 {\n    prefill 2;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:22: error[E300]: context variable `ntok` cannot be read at @admit(kv)
    hold kv 2 admit if ntok > 0 {
                       ^
  note: it is readable at @step(S) cost
1 error""",
        id='ntok_in_admission',
    ),
    pytest.param(
        BASE + 'session s {\n  hold kv (n) at admission (n = ntok) {\n    prefill 2;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:33: error[E300]: context variable `ntok` cannot be read at @admit(kv)
    hold kv (n) at admission (n = ntok) {
                                  ^
  note: it is readable at @step(S) cost
1 error""",
        id='ntok_in_at_admission',
    ),
    pytest.param(
        'stage gpu { budget 8 - age; }\n',
        {},
        """\
bad.sq:1:1: warning[W502]: the instance has no workload: no session will run
  stage gpu { budget 8 - age; }
  ^
bad.sq:1:24: error[E300]: context variable `age` cannot be read at @step(gpu) budget
  stage gpu { budget 8 - age; }
                         ^
  note: it is readable at @evict(P)
1 error, 1 warning""",
        id='age_in_budget',
    ),
    pytest.param(
        'pool kv { cap 8; block 2; admit via gpu; }\nstage gpu { budget 4; cost 1ms * x; }\nsession s {\n  let x = 1;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:2:34: error[E302]: `x` is a session attribute; @step(gpu) cost reads no session attribute
  stage gpu { budget 4; cost 1ms * x; }
                                   ^
1 error""",
        id='attribute_in_cost',
    ),
    pytest.param(
        BASE + 'session s {\n  draw o in 1..3 hidden;\n  hold kv reserve (o) {\n    decode o growing kv;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:5:20: error[E301]: `o` is hidden: @admit(kv) is a scheduler moment and may not read it
    hold kv reserve (o) {
                     ^
  note: hidden attributes are readable at @session only: the scheduler must not peek at the answer
  note: declare a bound (e.g. `let max_out = 4;`) and use it instead
1 error""",
        id='hidden_in_reserve',
    ),
    pytest.param(
        BASE + 'session s {\n  draw o in 1..3 hidden;\n  hold kv need (2 + o) take 0 {\n    decode o growing kv;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:5:21: error[E301]: `o` is hidden: @admit(kv) is a scheduler moment and may not read it
    hold kv need (2 + o) take 0 {
                      ^
  note: hidden attributes are readable at @session only: the scheduler must not peek at the answer
  note: declare a bound (e.g. `let max_out = 4;`) and use it instead
1 error""",
        id='hidden_in_need',
    ),
    pytest.param(
        'pool kv { cap 8; admit via gpu; }\nstage gpu { budget 4; serve (o, admitted); }\nsession s {\n  draw o in 1..3 hidden;\n  hold kv 2 {\n    decode o;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:2:30: error[E301]: `o` is hidden: @step(gpu) serve key is a scheduler moment and may not read it
  stage gpu { budget 4; serve (o, admitted); }
                               ^
  note: hidden attributes are readable at @session only: the scheduler must not peek at the answer
  note: declare a bound (e.g. `let max_out = 4;`) and use it instead
1 error""",
        id='hidden_in_serve_key',
    ),
    pytest.param(
        'pool kv { cap 8; admit via gpu; queue (desc o); }\nstage gpu { budget 4; }\nsession s {\n  draw o in 1..3 hidden;\n  hold kv 2 {\n    decode o;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:1:45: error[E301]: `o` is hidden: @admit(kv) queue key is a scheduler moment and may not read it
  pool kv { cap 8; admit via gpu; queue (desc o); }
                                              ^
  note: hidden attributes are readable at @session only: the scheduler must not peek at the answer
  note: declare a bound (e.g. `let max_out = 4;`) and use it instead
1 error""",
        id='hidden_in_queue_key',
    ),
    pytest.param(
        BASE + 'session s {\n  draw o in 1..3 hidden;\n  let n = o + 1;\n  hold kv reserve (n) {\n    decode o;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:6:20: error[E301]: `n` is hidden: @admit(kv) is a scheduler moment and may not read it
    hold kv reserve (n) {
                     ^
  note: `n` is hidden because a value assigned to it reads a hidden attribute
  note: hidden attributes are readable at @session only: the scheduler must not peek at the answer
  note: declare a bound (e.g. `let max_out = 4;`) and use it instead
1 error""",
        id='hidden_spreads_through_let',
    ),
    pytest.param(
        BASE + 'session s {\n  hold kv 2 {\n    decode 3 growing kv progress done;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:5:5: error[E108]: `progress done`: `done` is not an attribute of `s`
      decode 3 growing kv progress done;
      ^
  note: declare it before the hold, e.g. `let done = 0;`
1 error""",
        id='progress_not_an_attribute',
    ),
    pytest.param(
        BASE + 'session s {\n  draw d in 1..2;\n  hold kv 2 {\n    decode 3 growing kv progress d;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:6:5: error[E108]: `progress d`: a progress counter must be an int `let` attribute or parameter
      decode 3 growing kv progress d;
      ^
1 error""",
        id='progress_on_a_draw',
    ),
    pytest.param(
        BASE + 'session s {\n  prefill 2 on cpu;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:3: error[E102]: prefill on unknown stage `cpu`
    prefill 2 on cpu;
    ^
1 error""",
        id='run_on_undeclared_stage',
    ),
    pytest.param(
        'stage a { }\nstage b { }\nsession s {\n  prefill 1;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:3: error[E102]: this prefill must say `on STAGE`: the instance declares 2 stages
    prefill 1;
    ^
1 error""",
        id='run_needs_a_stage',
    ),
    pytest.param(
        BASE + 'session s {\n  prefill 3 growing kv;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:3: error[E406]: `growing kv`: no enclosing hold holds `kv`
    prefill 3 growing kv;
    ^
  note: wrap the run in `hold kv ... { }`
1 error""",
        id='growing_a_pool_no_hold_holds',
    ),
    pytest.param(
        BASE + 'pool seqs { cap 2; admit via gpu; }\nsession s {\n  hold seqs 1 {\n    turn;\n  } keep (kv full);\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:7:11: error[E406]: `keep (kv ...)`: this hold does not hold `kv`
    } keep (kv full);
            ^
1 error""",
        id='keep_a_pool_the_hold_does_not_hold',
    ),
    pytest.param(
        BASE + 'session s {\n  let count = 0;\n  set cuont = 1;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:5:3: error[E109]: `set cuont`: `cuont` is not declared
    set cuont = 1;
    ^
  note: did you mean `count`?
1 error""",
        id='set_undeclared',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = 1;\n  let x = 2;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:5:7: error[E105]: `x` is already declared in session `s`
    let x = 2;
        ^
  note: it was declared at line 4; use `set x = ...` to change it
1 error""",
        id='declared_twice',
    ),
    pytest.param(
        'pool kv { }\npool kv { }\n',
        {},
        """\
bad.sq:2:6: error[E105]: pool `kv` is declared twice
  pool kv { }
       ^
  note: the first declaration is at line 1
1 error""",
        id='pool_declared_twice',
    ),
    pytest.param(
        'pool kv { cap 8; cap 9; }\n',
        {},
        """\
bad.sq:1:18: error[E403]: `cap` is given twice
  pool kv { cap 8; cap 9; }
                   ^
1 error""",
        id='option_given_twice',
    ),
    pytest.param(
        BASE + 'session s {\n  hold kv reserve 2 need 2 {\n    turn;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:8: error[E403]: pool `kv`: `reserve` already sets need and take; give either `reserve` or `need`/`take`
    hold kv reserve 2 need 2 {
         ^
  note: `P E` is short for `P reserve E`
1 error""",
        id='reserve_and_need',
    ),
    pytest.param(
        'pool kv { cap 8; admit via gpu; }\npool s2 { cap 2; }\nstage gpu { }\nsession s {\n  hold kv 2, s2 1 {\n    turn;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:5:3: error[E405]: one hold is one admission decision: its pools must be admitted the same way
    hold kv 2, s2 1 {
    ^
  note: here: `kv` (via gpu), `s2` (event driven)
1 error""",
        id='one_hold_two_admissions',
    ),
    pytest.param(
        BASE + 'session s {\n  let now = 1;\n}\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:4:7: error[E106]: `now` is a context variable and cannot name an attribute
    let now = 1;
        ^
1 error""",
        id='context_variable_as_name',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = now;\n}\nworkload { 1 x s; }\n',
        {'explorer': True},
        """\
bad.sq:4:11: error[E600]: `now` reads the clock; the explorer has no clock and cannot treat it finitely
    let x = now;
            ^
1 error""",
        id='now_in_the_explorer',
    ),
    pytest.param(
        BASE + 'session s {\n  turn;\n}\nworkload { 1 x s poisson 2/min; }\n',
        {},
        """\
bad.sq:6:28: error[E404]: unknown time unit `min`; expected `s`, `ms`, `us` or `ns`
  workload { 1 x s poisson 2/min; }
                             ^
1 error""",
        id='poisson_unknown_unit',
    ),
    pytest.param(
        BASE + 'session c {\n  prefill 1;\n}\nsession s {\n  hold kv 2 {\n    spawn c;\n    join;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
OK
bad.sq:9:5: warning[W500]: `join` while holding finite pool `kv` can deadlock
      join;
      ^
  note: children that need these units can wait forever for a parent that waits for them
1 warning""",
        id='join_in_finite_hold_warns',
    ),
    pytest.param(
        BASE + 'session c {\n  prefill 1;\n}\nsession s {\n  hold kv 2 {\n    spawn c;\n    join;\n  }\n}\nworkload { 1 x s; }\n',
        {'theorem': True},
        """\
bad.sq:9:5: error[E500]: `join` while holding finite pool `kv`: the completion theorem forbids it
      join;
      ^
  note: children that need these units can wait forever for a parent that waits for them
1 error""",
        id='join_in_finite_hold_theorem',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = 1;\n  while x > 0 {\n    set x = x + 1;\n  }\n}\nworkload { 1 x s; }\n',
        {},
        """\
OK
bad.sq:5:3: warning[W501]: this loop can repeat without ever blocking (no turn, hold, run, join or end in it)
    while x > 0 {
    ^
  note: if its condition stays true the session spins forever in one step
1 warning""",
        id='busy_loop_warns',
    ),
    pytest.param(
        BASE,
        {},
        """\
OK
bad.sq:1:1: warning[W502]: the instance has no workload: no session will run
  pool kv { cap 8; block 2; admit via gpu; }
  ^
1 warning""",
        id='no_workload_warns',
    ),
    pytest.param(
        BASE + 'session s {\n  let x = y;\n  prefill z on cpu;\n  set w = 1;\n}\nworkload { 1 x t; }\n',
        {},
        """\
bad.sq:4:11: error[E100]: unknown name `y`
    let x = y;
            ^
bad.sq:5:3: error[E102]: prefill on unknown stage `cpu`
    prefill z on cpu;
    ^
bad.sq:5:11: error[E100]: unknown name `z`
    prefill z on cpu;
            ^
bad.sq:6:3: error[E109]: `set w`: `w` is not declared
    set w = 1;
    ^
  note: declare it first with `let w = ...;`
bad.sq:8:16: error[E103]: unknown session program `t`
  workload { 1 x t; }
                 ^
5 errors""",
        id='many_errors_sorted',
    ),
]


CASES += [
    pytest.param(
        'pool kv { cap 8; block 2; admit via gpu; evict (free(kv)); }\nstage gpu { budget 4; }\n'
        'session s { hold kv 2 { prefill 2; } }\nworkload { 1 x s; }\n',
        {},
        """\
bad.sq:1:49: error[E303]: `free(kv)` cannot be read at @evict(kv)
  pool kv { cap 8; block 2; admit via gpu; evict (free(kv)); }
                                                  ^
1 error""",
        id='pool_function_at_the_wrong_moment',
    ),
    pytest.param(
        'pool kv { cap 8; block 2; admit via gpu; }\npool kv2 { cap 8; block 2; admit via gpu; queue (desc arrived); }\n'
        'stage gpu { budget 4; }\nsession s { hold kv 2, kv2 2 { prefill 2; } }\nworkload { 1 x s; }\n',
        {},
        """\
OK
bad.sq:4:24: warning[W503]: pool `kv2`'s `queue` does not apply to this hold: a hold waits in the queue of its first pool, `kv`
  session s { hold kv 2, kv2 2 { prefill 2; } }
                         ^
  note: list `kv2` first, or give `kv` the same `queue`
1 warning""",
        id='second_pool_queue_ignored',
    ),
]


@pytest.mark.parametrize("src, kw, expected", CASES)
def test_diagnostic_text(src, kw, expected):
    assert diagnose(src, **kw) == expected


def test_errors_are_collected_and_sorted():
    src = BASE + "session s {\n  set w = 1;\n  let x = y;\n}\nworkload { 1 x t; }\nsession t {\n  prefill q;\n}\n"
    with pytest.raises(SerqError) as e:
        load_text(src, "bad.sq")
    diags = e.value.diagnostics
    assert [(d.line, d.col, d.code) for d in diags] == [(4, 3, "E109"), (5, 11, "E100"), (9, 11, "E100")]
    assert diags == sorted(diags)
    # the workload line names `t`, declared later: no error for it


def test_a_warning_does_not_stop_compilation(tmp_path, capsys):
    f = tmp_path / "w.sq"
    f.write_text((ROOT / "instances" / "join_in_hold.sq").read_text())
    assert main(["compile", str(f)]) == 0
    cap = capsys.readouterr()
    assert '"sessions"' in cap.out
    assert "warning[W500]" in cap.err


def test_cli_exits_2_with_diagnostics_and_no_traceback(tmp_path, capsys):
    f = tmp_path / "bad.sq"
    f.write_text(BASE + "session s {\n  prefill promt;\n}\nworkload { 1 x s; }\n")
    assert main(["compile", str(f)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err == (
        f"{f}:4:11: error[E100]: unknown name `promt`\n"
        "    prefill promt;\n"
        "            ^\n"
        "1 error\n")
    assert "Traceback" not in cap.err


def test_cli_syntax_error_exits_2(tmp_path, capsys):
    f = tmp_path / "bad.sq"
    f.write_text("session s {\n  turn\n}\n")
    assert main(["compile", str(f)]) == 2
    assert capsys.readouterr().err.startswith(f"{f}:3:1: error[E001]: unexpected `}}`; expected `;` or `think`\n")


def test_cli_missing_file(tmp_path, capsys):
    f = tmp_path / "nope.sq"
    assert main(["compile", str(f)]) == 2
    assert capsys.readouterr().err == f"{f}: error[E011]: cannot read {f}: No such file or directory\n1 error\n"


@pytest.mark.parametrize("text, where, message", [
    ('{"version": 1, "pools": [', "1:26", "not a serq IR file: invalid JSON: Expecting value"),
    ('{"version": 2}', "1:13", "not a serq IR file: Input should be 1 at `version`"),
    ('{"pools": [{"name": "kv", "cap": "lots", "queue": {"tie": {"event": "arrived"}}, "victim": null,\n'
     ' "evict": {"tie": {"event": "released"}}}]}', "1:34",
     "not a serq IR file: Input should be a valid integer at `pools.0.cap`"),
    ('[1, 2]', "1:1", "not a serq IR file: Input should be an object"),
])
def test_broken_ir_json_gives_a_clean_error(tmp_path, capsys, text, where, message):
    f = tmp_path / "x.ir.json"
    f.write_text(text)
    assert main(["compile", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{f}:{where}: error[E010]: {message}\n"), err
    assert "Traceback" not in err


def _edited_ir(tmp_path, edit) -> Path:
    out = tmp_path / "t.ir.json"
    assert main(["compile", str(ROOT / "instances" / "theorem.sq"), "-o", str(out)]) == 0
    d = json.loads(out.read_text())
    edit(d)
    out.write_text(json.dumps(d))
    return out


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["sessions"][0]["states"][1].update(next=99), "state 1: next 99 is not a state"),
    (lambda d: d["sessions"][0]["states"][5].update(scope=7), "state 5: scope 7 is not a scope"),
    (lambda d: d["sessions"][0].update(entry=-1), "entry -1 is not a state"),
    (lambda d: d["sessions"][0]["states"][1].update(attr="nope"), "state 1: `nope` is not an attribute"),
])
def test_malformed_automaton_in_ir(tmp_path, capsys, edit, message):
    f = _edited_ir(tmp_path, edit)
    assert main(["compile", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"error[E407]: session `chat`: malformed automaton: {message}" in err
    assert "Traceback" not in err


def test_ir_json_errors_point_into_the_source(tmp_path, capsys):
    def edit(d):
        d["pools"][0]["admit_via"] = "gpx"

    f = _edited_ir(tmp_path, edit)
    assert main(["compile", str(f)]) == 2
    err = capsys.readouterr().err
    src = ROOT / "instances" / "theorem.sq"
    line = next(i for i, l in enumerate(src.read_text().splitlines(), 1) if l.startswith("pool kv"))
    assert f"theorem.sq:{line}:6: error[E102]: pool `kv` is admitted via unknown stage `gpx`\n  pool kv {{" in err


def test_theorem_mode_turns_the_join_warning_into_an_error():
    src = (ROOT / "instances" / "join_in_hold.sq").read_text()
    assert {d.code for d in load_text(src).warnings} == {"W500", "W504"}
    with pytest.raises(SerqError) as e:
        load_text(src, theorem=True)
    assert [d.code for d in e.value.diagnostics if d.is_error] == ["E500"]


def test_every_diagnostic_has_a_stable_documented_code():
    """Each case's expected text has a located header, and every
    code the cases use has its row in docs/language.md's table."""
    import re

    doc = (ROOT / "docs" / "language.md").read_text()
    documented = set(re.findall(r"^\| ([EW]\d{3}) \|", doc, re.M))
    for p in CASES:
        text = p.values[2]
        assert re.search(r"^bad\.sq:\d+:\d+: (error|warning)\[[EW]\d{3}\]: ", text, re.M), text
        for code in re.findall(r"^bad\.sq:\d+:\d+: (?:error|warning)\[([EW]\d{3})\]", text, re.M):
            assert code in documented, f"{code} is not in docs/language.md's table of diagnostics"


def test_constants_short_circuit_and_or_as_sessions_do():
    # once folded both sides: `10 / X` with X = 0 was rejected as E401
    src = ("const X = 0;\n"
           "pool kv { cap (if X != 0 and 10 / X > 1 then 4 else 8); block 2; admit via gpu; }\n"
           "pool kv2 { cap (if X == 0 or 10 / X > 1 then 6 else 2); block 2; admit via gpu; }\n"
           "stage gpu { budget 4; }\nsession s { hold kv 2, kv2 2 { prefill 2; } }\nworkload { 1 x s; }\n")
    prog = load_text(src, "t.sq").program
    assert (prog.pool("kv").cap, prog.pool("kv2").cap) == (8, 6)
    assert "error[E401]" in diagnose(src.replace("X != 0 and ", ""))


def test_a_short_arrival_trace_is_a_located_error(tmp_path):
    from serq.lang.load import load_path
    from serq.sim.arrivals import arrival_times

    (tmp_path / "arrivals.csv").write_text("0.25\n0.5\n")
    f = tmp_path / "bad.sq"
    f.write_text('stage gpu { cost 1ms; }\nsession s { end; }\nworkload { 3 x s trace "arrivals.csv"; }\n')
    with pytest.raises(SerqError) as e:
        arrival_times(load_path(f).program, seed=0)
    assert "bad.sq:3:16: error[E410]: the arrival trace " in e.value.render()


def test_a_missing_optional_package_is_named(monkeypatch):
    import importlib

    from serq.view import need

    def missing(name, *a, **k):
        raise ModuleNotFoundError(name)

    monkeypatch.setattr(importlib, "import_module", missing)
    with pytest.raises(SerqError) as e:
        need("jinja2", "serq view")
    assert "error[E019]: serq view needs the Python package `jinja2`" in e.value.render()


def _codes_emitted_by_the_source() -> set[str]:
    import re

    out = set()
    for f in (ROOT / "serq").rglob("*.py"):
        out |= set(re.findall(r"\"([EW]\d{3})\"", f.read_text()))
    return out


def test_every_emitted_code_is_tested_and_documented_and_back():
    """Both ways: every code the source can emit has a row in
    docs/language.md and a test that triggers it (its rendered
    `[CODE]`, `CODE: ` or `"CODE"` in a test file), and every documented code is one
    the source emits."""
    import re

    emitted = _codes_emitted_by_the_source()
    doc = (ROOT / "docs" / "language.md").read_text()
    documented = set(re.findall(r"^\| ([EW]\d{3}) \|", doc, re.M))
    tests = "".join(f.read_text() for f in (ROOT / "tests").rglob("test_*.py"))
    # rendered (`[E999]`), in the sweep's table (`E999: `) or compared as data (`"E999"`)
    triggered = set(re.findall(r"\[([EW]\d{3})\]|\b([EW]\d{3}): |\"([EW]\d{3})\"", tests))
    triggered = {c for group in triggered for c in group if c}
    assert emitted, "no diagnostic codes found in serq/"
    assert sorted(emitted - documented) == [], "emitted but not in docs/language.md's table"
    assert sorted(documented - emitted) == [], "documented but never emitted"
    assert sorted(emitted - triggered) == [], "emitted but no test triggers it"


_SLIP_BASE = "stage gpu { budget 2; }\nsession s(n) { if COND { end; } end; }\nworkload { 1 x s(n=2); }\n"


@pytest.mark.parametrize("src, note", [
    (_SLIP_BASE.replace("COND", "n = 2"),
     "to compare, write `==`; a single `=` gives a value (`let`, `set`, `const`, arguments)"),
    (_SLIP_BASE.replace("COND", "n > 1 && n < 3"), "write `and` for `&&`"),
    (_SLIP_BASE.replace("COND", "n > 1 || n < 3"), "write `or` for `||`"),
    (_SLIP_BASE.replace("COND", "!(n > 1)"), "write `not` for `!` (`!=` compares)"),
    (_SLIP_BASE.replace("budget 2;", "budget 1e3;"), "numbers have no exponent: write `1e3` out in full (`1000`)"),
    (_SLIP_BASE.replace("budget 2;", "budget 2.5E+2;"),
     "numbers have no exponent: write `2.5E+2` out in full (`250`)"),
    (_SLIP_BASE.replace("budget 2;", "budget 8 // 2;"),
     "`//` at line 1, column 22 starts a comment: the rest of that line is not read; "
     "for floor division write `floor(a / b)`"),
    (_SLIP_BASE.replace("COND", "n > floor(8 // 2)"),
     "`//` at line 2, column 31 starts a comment: the rest of that line is not read; "
     "for floor division write `floor(a / b)`"),
], ids=["eq", "and", "or", "not", "exponent", "exponent_sign", "slash_slash", "slash_slash_same_line"])
def test_common_slips_get_a_hint(src, note):
    with pytest.raises(SerqError) as e:
        load_text(src, "bad.sq")
    (d,) = e.value.diagnostics
    assert d.code in ("E001", "E002", "E003") and d.notes[-1] == note, d.render(src)
    assert "is a `;` missing before it?" not in d.notes


def test_no_hint_for_a_comment_after_a_complete_line():
    src = "stage gpu { budget 2; } // fine\nsession s { end }\n"
    with pytest.raises(SerqError) as e:
        load_text(src, "bad.sq")
    assert not any("`//`" in n for n in e.value.diagnostics[0].notes)


def _quoted(err: str, file: str) -> list[tuple[int, int, str, str]]:
    """(line, col, quoted line, caret line) of each diagnostic of `err`."""
    lines = err.splitlines()
    out = []
    for i, l in enumerate(lines):
        if l.startswith(file + ":") and "error[" in l:
            line, col = (int(x) for x in l[len(file) + 1:].split(":")[:2])
            out.append((line, col, lines[i + 1], lines[i + 2]))
    return out


def _caret_is_under(source: str, line: int, col: int, quote: str, caret: str) -> None:
    text = source.splitlines()[line - 1]
    at = caret.index("^")
    assert len(quote) <= 2 + 100 + 6, len(quote)  # the window and its `...` marks
    assert quote[at] == text[col - 1], (quote[at - 5:at + 5], text[col - 6:col + 4])
    assert quote[2:].rstrip(".").lstrip(".") in text


def test_a_long_source_line_is_quoted_around_the_spot(tmp_path, capsys):
    src = "session s { " + "turn; " * 9000 + "turn turn; }\nworkload { 1 x s; }\n"
    f = tmp_path / "long.sq"
    f.write_text(src)
    assert main(["compile", str(f)]) == 2
    err = capsys.readouterr().err
    ((line, col, quote, caret),) = _quoted(err, str(f))
    assert (line, col) == (1, 12 + 6 * 9000 + 6)
    assert quote.startswith("  ...") and quote.endswith("turn turn; }")  # the line's end is in the window
    assert caret.strip() == "^^^^"
    _caret_is_under(src, line, col, quote, caret)


def test_a_minified_ir_file_is_quoted_around_the_spot(tmp_path, capsys):
    def edit(d):
        d["sessions"][-1]["states"][-1]["next"] = "far"

    f = _edited_ir(tmp_path, edit)  # json.dumps: the whole file on one line
    text = f.read_text()
    assert "\n" not in text.strip() and len(text) > 3000
    assert main(["compile", str(f)]) == 2
    err = capsys.readouterr().err
    ((line, col, quote, caret),) = _quoted(err, str(f))
    assert line == 1 and 1000 < col < len(text) - 100
    assert quote.startswith("  ...") and quote.endswith("...")
    assert text[col - 1:col + 4] == '"far"'
    _caret_is_under(text, line, col, quote, caret)


def test_a_short_line_is_quoted_whole():
    from serq.diagnostics import Diagnostic

    line = "x" * 106
    assert Diagnostic(1, 106, "E001", "m").render(line).splitlines()[1:] == ["  " + line, "  " + " " * 105 + "^"]
