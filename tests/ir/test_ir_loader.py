"""The IR loader: strict (no coercion), the automaton's shape checked,
numbers range-checked, every error located in the JSON file and exit 2;
`source` resolved against the IR file; a byte order mark accepted."""

import json
import os
from pathlib import Path

import pytest

from serq.cli import main
from serq.ir.load import locate

ROOT = Path(__file__).resolve().parents[2]
THEOREM = ROOT / "instances" / "theorem.sq"


def _compiled() -> dict:
    from serq.lang.load import load_path

    return json.loads(load_path(THEOREM).program.to_json())


def _write(tmp_path, d, name="t.ir.json") -> Path:
    f = tmp_path / name
    f.write_text(json.dumps(d, indent=1))
    return f


def _states(d):
    return d["sessions"][0]["states"]


@pytest.mark.parametrize("edit, path, code, message", [
    (lambda d: d["pools"][0].update(cap=True), ("pools", 0, "cap"), "E010",
     "not a serq IR file: Input should be a valid integer at `pools.0.cap`"),
    (lambda d: _states(d)[2]["e"].update(v="4"), ("sessions", 0, "states", 2, "e", "v"), "E010",
     "Input should be a valid"),
    (lambda d: d["sessions"][0]["scopes"][1].update(pools=["nope"]), ("sessions", 0, "scopes", 1, "pools"), "E407",
     "session `chat`: malformed automaton: scope 1: pools nope are not the pools its hold takes (kv)"),
    (lambda d: _states(d)[0].update(next=6), ("sessions", 0, "states", 0, "next"), "E407",
     "state 0: next 6 jumps from scope 0 into scope 1 (a hold's body is entered through its acquire state"),
    (lambda d: _states(d)[7].update(next=9), ("sessions", 0, "states", 7, "next"), "E407",
     "state 7: next 9 jumps from scope 1 into scope 0"),
    (lambda d: _states(d)[3]["domain"].update(lo=None), ("sessions", 0, "states", 3, "domain"), "E407",
     "state 3: a domain needs `values` or both `lo` and `hi`"),
    (lambda d: d["workload"][0].update(count=-1), ("workload", 0, "count"), "E402",
     "a workload count must be at least 0, got -1"),
    (lambda d: d["workload"][0].update(count=-10**30), ("workload", 0, "count"), "E408",
     "a workload count -1000000000000000000... is out of range"),
    (lambda d: d["sessions"][0].update(entry=1), ("sessions", 0, "entry"), "E407",
     "entry 1 is not the arrive state 0"),
    (lambda d: _states(d)[2].update(at=[-3, 0]), ("sessions", 0, "states", 2, "at"), "E010",
     "`at` must be a (line, column) pair from 1, got [-3, 0]"),
    (lambda d: _states(d)[2].update(at=[1, 10**12]), ("sessions", 0, "states", 2, "at"), "E010",
     "`at` must be a (line, column) pair from 1"),
    (lambda d: d.update(source="x" * 5000), ("source",), "E010",
     "`source` is 5000 characters long; a file name has at most 4096"),
    (lambda d: d.update(source="a\udc80.sq"), None, "E010",
     "not a serq IR file: invalid JSON: lone leading surrogate in hex escape\n"),
    (lambda d: d["pools"].append(d["pools"][0]), ("pools", 1, "name"), "E105", "pool `kv` is declared twice"),
    (lambda d: _states(d)[2]["e"].update(v=2**62), ("sessions", 0, "states", 2, "e", "v"), "E408",
     "the integer 4611686018427387904 is out of range"),
    (lambda d: d["sessions"][0]["scopes"][0].update(pools=["kv"]), ("sessions", 0, "scopes", 0), "E407",
     "scope 0, the session's own, holds no pools and keeps nothing"),
    (lambda d: d["sessions"][0]["scopes"][0].update(acquire=1), ("sessions", 0, "scopes", 0, "acquire"), "E407",
     "scope 0 is the root scope: it has no acquire state"),
    (lambda d: _states(d).__setitem__(9, {"kind": "exit", "closes": 1, "next": 10, "scope": 0}),
     ("sessions", 0, "states", 9, "closes"), "E407", "state 9: closes scope 1, whose exit state is 8"),
])
@pytest.mark.parametrize("cmd", ["compile", "explore"])
def test_a_bad_ir_is_a_located_error(tmp_path, capsys, cmd, edit, path, code, message):
    d = _compiled()
    edit(d)
    f = _write(tmp_path, d)
    assert main([cmd, str(f)]) == 2
    err = capsys.readouterr().err
    if path is None:  # a string not even JSON: where the parser stopped (`source`, after `format` and `version`)
        line, col = 4, 19
    else:
        line, col = locate(f.read_text(), path)
    assert f"{f}:{line}:{col}: error[{code}]: " in err and message in err, err
    assert "Traceback" not in err


VLLM = ROOT / "tests" / "kernel_instances" / "vllm_constructs.sq"


def _vllm() -> dict:
    from serq.lang.load import load_path

    return json.loads(load_path(VLLM).program.to_json())


def _prefixed_item(d):
    """(path, item) of the first hold item naming a prefix."""
    for i, s in enumerate(d["sessions"]):
        for k, st in enumerate(s["states"]):
            for j, it in enumerate((st.get("hold") or {}).get("items", ())):
                if it.get("prefix"):
                    return ("sessions", i, "states", k, "hold", "items", j), it
    raise AssertionError("no hold with a prefix")


@pytest.mark.parametrize("edit, path, code, message", [
    (lambda d: d.update(tick="later"), ("tick",), "E010", "Input should be 'arrivals' or 'turns' at `tick`"),
    (lambda d: d["stages"][0].update(self_preempt="maybe"), ("stages", 0, "self_preempt"), "E010",
     "Input should be 'stop' or 'continue' at `stages.0.self_preempt`"),
    (lambda d: d["prefixes"][0].update(length="4"), ("prefixes", 0, "length"), "E010",
     "Input should be a valid integer at `prefixes.0.length`"),
    (lambda d: d["prefixes"][1].update(parent="NOPE"), ("prefixes", 1, "parent"), "E110",
     "prefix `TOOLS` extends `NOPE`, which is not declared before it"),
    (lambda d: d["prefixes"][1].update(length=4), ("prefixes", 1, "length"), "E402",
     "prefix `TOOLS` must be at least one token longer than `SYS`, got 4 in all"),
    (lambda d: d["prefixes"][0].update(length=2**62), ("prefixes", 0, "length"), "E408",
     "prefix `SYS`: `length` 4611686018427387904 is out of range"),
    (lambda d: d["prefixes"].append(d["prefixes"][0]), ("prefixes", 2, "name"), "E105", "prefix `SYS` is declared twice"),
    (lambda d: _prefixed_item(d)[1].update(prefix="SIS"), "hold-prefix", "E110", "hold on unknown prefix `SIS`"),
])
def test_the_vllm_fields_are_read_strictly(tmp_path, capsys, edit, path, code, message):
    d = _vllm()
    edit(d)
    if path == "hold-prefix":
        path = _prefixed_item(d)[0] + ("prefix",)
    f = _write(tmp_path, d)
    assert main(["compile", str(f)]) == 2
    err = capsys.readouterr().err
    line, col = locate(f.read_text(), path)
    assert f"{f}:{line}:{col}: error[{code}]: " in err and message in err, err
    assert "Traceback" not in err


def test_the_vllm_fields_round_trip(tmp_path, capsys):
    d = _vllm()
    assert d["tick"] == "arrivals" and [p["name"] for p in d["prefixes"]] == ["SYS", "TOOLS"]
    assert _prefixed_item(d)[1]["prefix"] == "TOOLS" and d["stages"][0]["self_preempt"] == "continue"
    d["tick"] = "turns"
    f = _write(tmp_path, d)
    out = tmp_path / "again.ir.json"
    assert main(["compile", str(f), "-o", str(out)]) == 0
    again = json.loads(out.read_text())
    assert again["tick"] == "turns" and again["prefixes"] == d["prefixes"]
    assert _prefixed_item(again)[1] == _prefixed_item(d)[1]


def test_the_locator_finds_the_value(tmp_path):
    f = _write(tmp_path, _compiled())
    text = f.read_text()
    line, col = locate(text, ("sessions", 0, "states", 2, "next"))
    assert text.splitlines()[line - 1].strip() == '"next": 3,'
    assert text.splitlines()[line - 1][col - 1:] == "3,"


def test_json_syntax_errors_at_their_line_and_column(tmp_path, capsys):
    f = tmp_path / "x.ir.json"
    f.write_text('{\n "version": 1,\n "pools": [1,, 2]\n}\n')
    assert main(["compile", str(f)]) == 2
    assert capsys.readouterr().err.startswith(f"{f}:3:14: error[E010]: not a serq IR file: invalid JSON: "
                                              "Expecting value\n   \"pools\": [1,, 2]\n               ^\n")


def test_non_numbers_in_json_are_rejected(tmp_path, capsys):
    d = _compiled()
    f = _write(tmp_path, d)
    f.write_text(f.read_text().replace('"count": 2', '"count": NaN'))
    assert main(["compile", str(f)]) == 2
    assert "error[E010]: not a serq IR file: `NaN` is not a JSON number" in capsys.readouterr().err


def test_a_long_source_name_that_is_no_file_still_loads(tmp_path, capsys):
    d = _compiled()
    d["source"] = "y" * 300 + ".sq"  # longer than a file name may be: nothing to quote
    d["pools"][0]["admit_via"] = "gpx"
    f = _write(tmp_path, d)
    assert main(["compile", str(f)]) == 2
    err = capsys.readouterr().err
    assert "error[E102]: pool `kv` is admitted via unknown stage `gpx`" in err and "Traceback" not in err


def test_source_resolved_against_the_ir_file_not_the_cwd(tmp_path, capsys, monkeypatch):
    src_dir, ir_dir, elsewhere = tmp_path / "src", tmp_path / "out", tmp_path / "elsewhere"
    for d in (src_dir, ir_dir, elsewhere):
        d.mkdir()
    (src_dir / "arrivals.txt").write_text("0.25\n0.5\n")
    (src_dir / "x.sq").write_text('pool kv { cap 4; admit via gpu; }\nstage gpu { budget 2; }\n'
                                  'session s { hold kv 2 { prefill 2; } }\nworkload { 2 x s trace "arrivals.txt"; }\n')
    monkeypatch.chdir(src_dir)
    assert main(["compile", "x.sq", "-o", "../out/x.ir.json"]) == 0
    assert json.loads((ir_dir / "x.ir.json").read_text())["source"] == os.path.join("..", "src", "x.sq")
    monkeypatch.chdir(elsewhere)
    from serq.lang.load import load_path
    from serq.sim.arrivals import arrival_times

    loaded = load_path("../out/x.ir.json")
    assert loaded.program.source == os.path.join("..", "src", "x.sq")
    assert loaded.source.startswith("pool kv")  # the source, quoted in diagnostics
    assert arrival_times(loaded.program, seed=0) == [250_000_000, 500_000_000]
    # a diagnostic quotes the right file's line
    d = json.loads((ir_dir / "x.ir.json").read_text())
    d["pools"][0]["admit_via"] = "gpx"
    (ir_dir / "y.ir.json").write_text(json.dumps(d))
    assert main(["compile", "../out/y.ir.json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{os.path.join('..', 'src', 'x.sq')}:1:6: error[E102]: pool `kv` is admitted via "
                          "unknown stage `gpx`\n  pool kv { cap 4; admit via gpu; }\n       ^")
    # written to standard output, `source` stays valid from the current directory
    assert main(["compile", "../out/x.ir.json"]) == 0
    assert json.loads(capsys.readouterr().out)["source"] == os.path.join("..", "src", "x.sq")


def test_a_byte_order_mark_is_accepted(tmp_path, capsys):
    f = tmp_path / "x.sq"
    f.write_bytes(b"\xef\xbb\xbf" + THEOREM.read_bytes())
    assert main(["compile", str(f), "-o", str(tmp_path / "x.ir.json")]) == 0
    g = tmp_path / "y.ir.json"
    g.write_bytes(b"\xef\xbb\xbf" + (tmp_path / "x.ir.json").read_bytes())
    assert main(["compile", str(g)]) == 0
    capsys.readouterr()
    assert main(["fmt", str(f)]) == 0
    assert capsys.readouterr().out == THEOREM.read_text()


def test_a_run_on_a_stage_named_question_mark_is_no_name(tmp_path, capsys):
    d = _compiled()
    _states(d)[6].update(stage="?")
    f = _write(tmp_path, d)
    assert main(["compile", str(f)]) == 2
    err = capsys.readouterr().err
    assert f"{f}:" in err and "error[E010]: not a serq IR file: `sessions." in err, err
    assert 'stage` must be a name (a letter or `_`, then letters, digits and `_`, as in the language), got "?"' in err


def test_a_call_without_its_arguments_in_an_ir(tmp_path, capsys):
    d = _compiled()
    d["stages"][0]["budget"] = {"k": "call", "fn": "floor", "args": [], "at": [1, 1]}
    f = _write(tmp_path, d)
    assert main(["compile", str(f)]) == 2
    err = capsys.readouterr().err
    assert "error[E107]: `floor` takes 1 argument, got 0" in err and "Traceback" not in err


_JUNK = [0, -1, 1, 2, 7, 99, 10**30, -10**30, 2**62, 0.5, -0.0, 1e308, True, False, None, "x", "", [], {},
         [1, 2], "kv", "gpu", "chat"]


def _value_paths(x, p=()):
    yield p
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _value_paths(v, p + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _value_paths(v, p + (i,))


@pytest.mark.parametrize("seed", range(4))
def test_ir_mutants_load_or_are_rejected_never_crash(seed):
    """Any value of a compiled IR replaced by junk (wrong types, edge
    numbers, other names): the loader and the validator accept it or
    raise SerqError, and what they accept lowers for the kernel."""
    import random

    from serq.diagnostics import SerqError
    from serq.lang.load import load_ir
    from serq.semantics.lower import Lowered, Unlowerable

    rng = random.Random(seed)
    sources = sorted((ROOT / "instances").glob("*.sq"))
    from serq.lang.load import load_path

    for f in rng.sample(sources, 3):
        base = json.loads(load_path(f).program.to_json())
        paths = [p for p in _value_paths(base) if p]
        for _ in range(60):
            d = json.loads(json.dumps(base))
            for _ in range(rng.randint(1, 2)):
                p = rng.choice(paths)
                try:
                    node = d
                    for k in p[:-1]:
                        node = node[k]
                    node[p[-1]] = rng.choice(_JUNK)
                except (KeyError, IndexError, TypeError):
                    pass  # an earlier edit removed the way there
            try:
                loaded = load_ir(json.dumps(d), "m.ir.json")
            except SerqError:
                continue
            try:
                Lowered(loaded.program, "first")
            except Unlowerable:
                pass


def test_compile_gives_the_warnings_and_loading_finds_them_again(tmp_path, capsys):
    """`serq compile` writes the instance's warnings into the IR (`warnings`,
    as data, `file` written as `source` is); loading the IR ignores them
    and finds the same warnings again from the program."""
    import json as _json

    from serq.cli import main as cli_main
    from serq.lang.load import load_path as load

    root = Path(__file__).resolve().parents[2]
    sq = tmp_path / "w.sq"
    sq.write_text((root / "instances" / "theorem.sq").read_text().replace("preempt lifo; }",
                                                                             "preempt lifo; copies keep; }"))
    out = tmp_path / "out" / "w.ir.json"
    out.parent.mkdir()
    assert cli_main(["compile", str(sq), "-o", str(out)]) == 0
    capsys.readouterr()
    data = _json.loads(out.read_text())
    assert [(w["code"], w["file"], w["line"]) for w in data["warnings"]] == [("W510", data["source"], 20)]
    loaded = load(str(out))
    assert loaded.program.warnings == ()
    assert [w.code for w in loaded.warnings] == ["W510"]
    plain = tmp_path / "plain.ir.json"
    assert cli_main(["compile", str(root / "instances" / "theorem.sq"), "-o", str(plain)]) == 0
    assert _json.loads(plain.read_text())["warnings"] == []
