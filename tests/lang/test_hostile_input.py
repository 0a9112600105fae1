"""Reproducers of inputs that used to end in a traceback: each is now a
located diagnostic and exit 2 (numbers checked for range where they are
read, constant faults caught at compile time)."""

import pytest

from serq.cli import main

BASE = """pool kv {{ cap 6; block 2; admit via gpu; }}
stage gpu {{ budget {budget}; }}
session s(n) {{ hold kv need 2 {{ prefill n; }} end; }}
workload {{ 1 x s(n={n}){arrivals}; }}
"""


def inst(tmp_path, text, name="x.sq"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("cmd", ["compile", "run", "check", "explore"])
@pytest.mark.parametrize("text,where,message", [
    ("const A = " + "9" * 4301 + ";\n" + BASE.format(budget=2, n=2, arrivals=""), "1:11",
     "error[E408]: the integer `99999999999999999999...` is too large (at most 2^62)"),
    ("const A = 4611686018427387904;\n" + BASE.format(budget=2, n=2, arrivals=""), "1:11",
     "error[E408]: the integer `4611686018427387904` is too large (at most 2^62)"),
    ("const T = " + "9" * 400 + "s;\n" + BASE.format(budget=2, n=2, arrivals=""), "1:11",
     "error[E408]: the duration `999"),
    ("const R = " + " * ".join(["1" + "0" * 300 + ".0"] * 2) + ";\n" + BASE.format(budget=2, n=2, arrivals=""),
     "1:11", "error[E408]: constant `R`: the value overflows (beyond the largest real)"),
    (BASE.format(budget="floor(1 / 0)", n=2, arrivals=""), "2:26",
     "error[E401]: cannot evaluate this constant expression: division by zero"),
    (BASE.format(budget=2, n="-100000000000000000000.0", arrivals=""), "4:20",
     "error[E408]: the argument `n` is -1e+20: out of range (at most 2^62 in magnitude)"),
    (BASE.format(budget=2, n="(1 % 0)", arrivals=""), "4:21",
     "error[E401]: cannot evaluate this constant expression: modulo by zero"),
    (BASE.format(budget=2, n="1.0e0", arrivals="").replace("1.0e0", "2 * (1.0" + "0" * 5 + " * "
                                                                    + "1" + "0" * 300 + ".0 * 1" + "0" * 300 + ".0)"),
     "4:25", "error[E401]: cannot evaluate this constant expression: the value overflows"),
    (BASE.format(budget=2, n=2, arrivals="").replace("prefill n;", "prefill n; draw x in 1..floor(1 / 0);"),
     "3:63", "error[E401]: cannot evaluate this constant expression: division by zero"),
])
def test_located_error_no_traceback(tmp_path, capsys, cmd, text, where, message):
    path = inst(tmp_path, text)
    assert main([cmd, path]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{where}: {message}"), err
    assert "Traceback" not in err


def test_short_circuit_is_not_a_fault(tmp_path, capsys):
    # `and` never evaluates its right side when the left is false, as at run time
    text = BASE.format(budget="(if 0 != 0 and 1 / 0 > 1 then 1 else 2)", n=2, arrivals="")
    assert main(["compile", inst(tmp_path, text)]) == 0
    assert "E401" not in capsys.readouterr().err
    assert "error[E401]" in diagnose_text(text.replace("0 != 0 and ", ""))


def diagnose_text(text: str) -> str:
    from serq.diagnostics import SerqError
    from serq.lang.load import load_text

    try:
        load_text(text, "x.sq")
    except SerqError as e:
        return e.render()
    return ""


def test_huge_arrival_time_in_a_trace(tmp_path, capsys):
    (tmp_path / "t.txt").write_text("0.5\n1e300\n")
    path = inst(tmp_path, BASE.format(budget=2, n=2, arrivals=' trace "t.txt"').replace("1 x s", "2 x s"))
    assert main(["run", path]) == 2
    err = capsys.readouterr().err
    assert "error[E410]" in err and "t.txt:2: an arrival time must be a number of seconds from 0 to 2^62 ns" in err


def test_compile_to_a_missing_directory(tmp_path, capsys):
    path = inst(tmp_path, BASE.format(budget=2, n=2, arrivals=""))
    assert main(["compile", path, "-o", "/nonexistent/x.json"]) == 2
    assert capsys.readouterr().err.startswith(
        "serq compile: error[E017]: cannot write /nonexistent/x.json: no directory /nonexistent")


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out == "serq 0.1.0\n"


@pytest.mark.parametrize("cmd", ["compile", "fmt"])
@pytest.mark.parametrize("text,where,message", [
    # 20,000 terms: twenty times Python's recursion limit deep (a walk that recursed would fail), in a second
    ("const A = " + " + ".join(["1"] * 20_000) + ";\n", "1:11",
     "error[E004]: this expression nests more than 64 operations"),
    ("const A = " + "(1 + " * 5000 + "1" + ")" * 5000 + ";\n", "1:12",
     "error[E004]: this expression nests more than 64 operations"),
    ("stage gpu { budget 2; }\nsession s {\n" + "if true {\n" * 500 + "end;\n" + "}\n" * 500 + "}\n", "102:9",
     "error[E004]: statements nested more than 100 deep"),
    ("stage gpu { budget 2; }\nsession s {\n" + "if true { end; } else " * 500 + "{ end; }\n}\n", "3:2201",
     "error[E004]: statements nested more than 100 deep"),
], ids=["flat_sum", "nested_sum", "nested_if", "else_if_chain"])
def test_too_deep_is_located_and_says_what(tmp_path, capsys, cmd, text, where, message):
    path = inst(tmp_path, text)
    assert main([cmd, path]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{where}: {message}"), err[:300]
    assert "Traceback" not in err and "RecursionError" not in err


def test_as_deep_as_allowed_compiles_and_round_trips(tmp_path, capsys):
    from serq import ir
    from serq.lang.load import load_text

    text = ("stage gpu { budget 2; }\nsession s(n) { let y = " + " + ".join(["n"] * 64) + ";\n"
            + "if true {\n" * 99 + "end;\n" + "}\n" * 99 + "}\nworkload { 1 x s(n=1); }\n")
    prog = load_text(text).program
    assert ir.Program.from_json(prog.to_json()) == prog
    assert main(["explore", inst(tmp_path, text)]) == 0


@pytest.mark.parametrize("draw,at,message", [
    ("draw x in 1..4 ~ geometric(2);", "2)", "error[E409]: `geometric(p)` needs a probability 0 < p <= 1, got 2"),
    ("draw x in 1..4 ~ geometric(0);", "0)", "error[E409]: `geometric(p)` needs a probability 0 < p <= 1, got 0"),
    ("draw x in 1..4 ~ poisson(-1);", "-1)", "error[E409]: `poisson(λ)` needs a positive mean λ, got -1"),
    ("draw x in {1, 2} ~ weights(0, 0);", "weights", "error[E409]: the weights are all 0: no value can be drawn"),
    ("draw x in {1, 2} ~ weights(3, -1);", "-1)", "error[E409]: a weight cannot be negative, got -1"),
    ("draw x in 5..1;", "5..1", "error[E409]: the range 5..1 is empty: nothing to draw"),
], ids=["geometric_2", "geometric_0", "poisson_negative", "weights_zero", "weight_negative", "empty_range"])
@pytest.mark.parametrize("cmd", ["compile", "run", "explore"])
def test_distributions_and_domains_checked_at_compile_time(tmp_path, capsys, cmd, draw, at, message):
    text = BASE.format(budget=2, n=2, arrivals="").replace("prefill n;", "prefill n; " + draw)
    path = inst(tmp_path, text)
    assert main([cmd, path]) == 2
    err = capsys.readouterr().err
    line = text.splitlines()[2]
    assert err.startswith(f"{path}:3:{line.index(draw) + draw.index(at) + 1}: {message}"), err


@pytest.mark.parametrize("arrivals,where,message", [
    (" poisson 2/s seed " + "9" * 5000, "4:40", "error[E408]: the integer `99999999999999999999...` is too large"),
    (" poisson " + "9" * 400 + ".5/s", "4:31", "error[E408]: the number `99999999999999999999...` is too large"),
], ids=["huge_seed", "huge_rate"])
def test_poisson_numbers_are_range_checked(tmp_path, capsys, arrivals, where, message):
    path = inst(tmp_path, BASE.format(budget=2, n=2, arrivals=arrivals))
    assert main(["compile", path]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{where}: {message}"), err[:300]


@pytest.mark.parametrize("word,n,col", [("every", "2", 29), ("at", "5", 26)])
def test_a_time_without_a_unit_is_a_warning(tmp_path, capsys, word, n, col):
    text = BASE.format(budget=2, n=2, arrivals=f" {word} {n}")
    path = inst(tmp_path, text)
    assert main(["compile", path, "-o", str(tmp_path / "x.ir.json")]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:4:{col}: warning[W505]: `{word} {n}` is {n} ns: a time "
                          f"without a unit is in nanoseconds\n"), err
    assert f"note: write the unit: `{n}s`, `{n}ms`, `{n}us`, or `{n}ns` to keep nanoseconds" in err


def test_think_and_cost_without_a_unit_are_warnings(tmp_path, capsys):
    text = BASE.format(budget=2, n=2, arrivals="").replace("budget 2;", "budget 2; cost 3;").replace(
        "prefill n;", "prefill n; turn think 7;")
    path = inst(tmp_path, text)
    assert main(["compile", path, "-o", str(tmp_path / "x.ir.json")]) == 0
    err = capsys.readouterr().err
    assert "warning[W505]: `cost 3` is 3 ns" in err and "warning[W505]: `turn think 7` is 7 ns" in err


def test_integer_constant_beyond_the_range(tmp_path, capsys):
    path = inst(tmp_path, "const A = 4000000000000000000 * 2;\n" + BASE.format(budget=2, n=2, arrivals=""))
    assert main(["compile", path]) == 2
    assert capsys.readouterr().err.startswith(f"{path}:1:11: error[E408]: constant `A`: the value is beyond 2^62")
    path = inst(tmp_path, "const A = 4000000000000000000 * 4;\n" + BASE.format(budget=2, n=2, arrivals=""))
    assert main(["compile", path]) == 2  # beyond 64 bits: no value at all
    assert capsys.readouterr().err.startswith(f"{path}:1:11: error[E408]: constant `A`: integer overflow (the result is "
                                              "beyond the 64-bit range, -2^63 to 2^63 - 1)")


@pytest.mark.parametrize("src", [
    "1 + 2 * 3", "7 / 2", "7 % 3", "-7 % 3", "floor(7 / 2) + ceil(7 / 2)", "min(3, 1, 2) - max(1, 2)", "abs(-4)",
    "0 != 0 and 10 / 0 > 1", "1 == 1 or 1 / 0 > 0", "if 1 > 2 then 1 / 0 else 5", "not (1 < 2)",
    "1 / 0", "5 % 0", "2.0 * 1" + "0" * 300 + ".0 * 1" + "0" * 300 + ".0", "floor(1 / 0)",
    "if 1 < 2 then 3 else 1 / 0",
])
def test_constant_folding_is_the_evaluator_without_a_session(src):
    """Folding a constant and evaluating it with the kernel (the one
    evaluator of a running instance) give the same value, or both the same
    fault."""
    from serq.ir.fold import EvalError, const_eval
    from serq.lang.load import compile_source
    from serq.semantics.kernel.abi import T_REAL
    from serq.semantics.model import Model

    prog, _ = compile_source(f"stage gpu {{ budget 2; }}\nsession s {{ let v = {src}; end; }}\nworkload {{ 1 x s; }}\n")
    e = prog.sessions[0].states[1].e
    m = Model(prog)
    low = m.engine.low
    code, real = low.state_rows[0][1][4], low.types[0][low.slots[0]["v"]] == T_REAL

    def outcome(f):
        try:
            return ("value", f())
        except (EvalError, ValueError) as err:  # the kernel's words locate the expression: not compared
            return ("fault", str(err).removeprefix("cannot evaluate: ").split(" at line ")[0])

    folded = outcome(lambda: const_eval(e))
    run = outcome(lambda: m.engine.eval_session(m.initial_state(), 0, code, real))
    if folded[0] == "fault" and "overflows" in folded[1]:
        assert run == ("value", float("inf"))  # at run time a real saturates; a constant that does is E408
    else:
        assert folded == run  # a bool is the kernel's 0 or 1


def test_a_constant_call_with_the_wrong_number_of_arguments(tmp_path, capsys):
    path = inst(tmp_path, "const A = floor();\nconst B = min(1);\n" + BASE.format(budget=2, n=2, arrivals=""))
    assert main(["compile", path]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:1:11: error[E107]: `floor` takes 1 argument, got 0\n"), err
    assert f"{path}:2:11: error[E107]: `min` takes at least 2 arguments, got 1\n" in err


def test_a_cost_out_of_range_is_a_fault_not_a_traceback(tmp_path, capsys):
    src = BASE.format(budget=2, n=2, arrivals="").replace("budget 2;", "budget 2; cost 4611686018427387903 * ntok;")
    assert main(["run", inst(tmp_path, src)]) == 12
    out, err = capsys.readouterr()
    assert "stopped: fault" in out and "Traceback" not in out + err
    assert "cost of stage `gpu`: the cost 9.22337e+18 ns is out of range (at most 2^62 ns" in out


def test_a_cost_ending_past_the_time_range_is_a_fault(tmp_path, capsys):
    src = BASE.format(budget=2, n=2, arrivals="").replace("budget 2;", "budget 2; cost 4000000000000000000;")
    assert main(["run", inst(tmp_path, src)]) == 0  # one iteration fits
    src = src.replace("prefill n;", "prefill n; decode 2;")
    assert main(["run", inst(tmp_path, src)]) == 12
    out = capsys.readouterr().out
    assert "cost of stage `gpu`: the iteration would end at 8000000000000000000 ns, past 2^62 ns" in out


def test_sessions_spawned_in_a_loop_outgrow_the_first_capacity(tmp_path, capsys):
    src = """pool kv { cap 8; block 2; admit via gpu; }
stage gpu { budget 4; }
session sub { hold kv reserve 2 { prefill 1; } end; }
session agent {
  while true {
    hold kv reserve 2 { prefill 2; }
    spawn sub x 2;
  }
}
workload { 1 x agent; }
"""
    assert main(["run", inst(tmp_path, src), "--max-steps", "400", "--no-coalesce"]) == 0
    out, err = capsys.readouterr()
    assert "stopped: step limit" in out and "Traceback" not in err
