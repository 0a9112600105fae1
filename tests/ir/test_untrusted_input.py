"""Files serq reads but the user did not write: an `.ir.json`'s `source`
is read only as a regular file of bounded size (a device, a pipe, a
directory, a /proc file is refused at `source`, never read, never quoted);
a trace given to `serq oracle compare` is checked for its shape (header,
steps once each in increasing order, the fields compared), each problem
located at its line, never a traceback."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from serq.cli import main

ROOT = Path(__file__).resolve().parents[2]
VLLM = ROOT / "tests" / "vllm"


def serq(*argv, env=None, timeout=60):
    """serq in a process of its own, bounded in time and memory (a file
    that never ends must not take the machine with it)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run([sys.executable, "-m", "serq", *map(str, argv)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, preexec_fn=limit, env=env)


@pytest.fixture()
def ir_file(tmp_path):
    out = tmp_path / "x.ir.json"
    assert main(["compile", str(ROOT / "instances" / "hol_none.sq"), "-o", str(out)]) == 0

    def with_source(source) -> Path:
        doc = json.loads(out.read_text())
        doc["source"] = str(source)
        out.write_text(json.dumps(doc, indent=1))
        return out

    return with_source


def refused(p, source, why):
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert f"error[E010]: `source` names {source}, which is not a source file to read: {why}" in p.stderr, p.stderr
    assert '   "source": ' in p.stderr  # the line of the IR file, with a caret under the value
    assert "Traceback" not in p.stderr


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="needs /proc")
def test_a_source_in_proc_is_not_read(ir_file):
    secret = "serq-secret-value-1234"
    p = serq("check", ir_file("/proc/self/environ"), env=dict(os.environ, SERQ_SECRET=secret))
    refused(p, "/proc/self/environ", "not a regular file on disk")
    assert secret not in p.stderr + p.stdout


@pytest.mark.parametrize("source,why", [("/dev/zero", "not a regular file"), ("/", "it is a directory")])
def test_a_device_or_a_directory_is_refused(ir_file, source, why):
    refused(serq("check", ir_file(source)), source, why)


def test_a_pipe_is_refused_without_blocking(ir_file, tmp_path):
    fifo = tmp_path / "src.sq"
    os.mkfifo(fifo)
    refused(serq("check", ir_file(fifo), timeout=60), fifo, "not a regular file")


def test_a_huge_or_binary_source_is_refused(ir_file, tmp_path):
    big = tmp_path / "big.sq"
    with open(big, "wb") as f:
        f.truncate(17 << 20)  # sparse: no disk used
    refused(serq("check", ir_file(big)), big, "too large (17 MiB; at most 16 MiB)")
    binary = tmp_path / "bin.sq"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    refused(serq("check", ir_file(binary)), binary, "not UTF-8 text")


def test_the_real_source_is_still_read_and_a_missing_one_is_no_error(ir_file, tmp_path, capsys):
    from serq.lang.load import load_path

    src = tmp_path / "src.sq"
    src.write_text((ROOT / "instances" / "hol_none.sq").read_text())
    assert load_path(ir_file(src)).source == src.read_text()  # quoted in diagnostics
    assert load_path(ir_file(tmp_path / "gone.sq")).source is None  # nothing to quote: no error
    assert main(["check", str(ir_file(tmp_path / "gone.sq"))]) == 10
    capsys.readouterr()


@pytest.mark.parametrize("trace,why", [("/dev/zero", "not a regular file"), ("/proc/self/environ",
                                                                            "not a regular file on disk")])
def test_an_arrival_trace_that_is_no_regular_file(tmp_path, trace, why):
    f = tmp_path / "x.sq"
    f.write_text(f'stage gpu {{ cost 1ms; }}\nsession s {{ end; }}\nworkload {{ 3 x s trace "{trace}"; }}\n')
    p = serq("run", f)
    assert p.returncode == 2, p.stderr
    assert f"x.sq:3:16: error[E410]: cannot read the arrival trace {trace}: {why}" in p.stderr, p.stderr


# ---------------------------------------------------------------- oracle traces

SCENARIO = VLLM / "01_chunked_prefill_with_decodes.json"
TRACE = VLLM / "01_chunked_prefill_with_decodes.trace.jsonl"


def compare(tmp_path, lines, capsys):
    t = tmp_path / "t.jsonl"
    t.write_text("\n".join(lines) + "\n")
    code = main(["oracle", "compare", str(SCENARIO), str(t)])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err, t


def test_every_step_listed_twice_does_not_agree(tmp_path, capsys):
    head, *steps = TRACE.read_text().splitlines()
    code, err, t = compare(tmp_path, [head] + [s for s in steps for _ in (0, 1)], capsys)
    assert code == 2
    assert f"{t}:3:1: error[E025]: malformed trace: step 0 after step 0: the steps must be listed once each" in err


@pytest.mark.parametrize("edit,where,why", [
    (lambda h, s: [h] + s[1:2] + s[:1] + s[2:], "3:1", "step 0 after step 1"),
    (lambda h, s: [h.replace('"version": 1', '"version": 2')] + s, "1:1",
     "trace version 2; this serq reads version 1"),
    (lambda h, s: [h] + s[:1] + ['{"step": 1, "scheduled": 5}'] + s[2:], "3:1", "step 1: `scheduled` must be a list"),
    (lambda h, s: [h] + s[:1] + ['{"step": "1"}'] + s[2:], "3:1", "a step needs `step`, a number from 0"),
    (lambda h, s: [h] + s[:1] + ['[1, 2]'] + s[2:], "3:1", "a step must be a JSON object"),
    (lambda h, s: [h] + s[:1] + ['{"step": 1, '] + s[2:], "3:13", "invalid JSON"),
    (lambda h, s: [h] + [x.replace('"free_blocks": 61', '"free_blocks": -1') for x in s], "2:1",
     "step 0: `free_blocks` must be a count"),
    (lambda h, s: [x.replace('"scheduled": [["r0", 3]', '"scheduled": [["r0"]') for x in [h] + s], "2:1",
     "step 0: `scheduled` must list [request, tokens] pairs"),
    (lambda h, s: [], "1:1", "not a vLLM trace of `serq oracle trace` (the file is empty)"),
])
def test_a_malformed_trace_is_located(tmp_path, capsys, edit, where, why):
    head, *steps = TRACE.read_text().splitlines()
    code, err, t = compare(tmp_path, edit(head, steps), capsys)
    assert code == 2
    assert f"{t}:{where}: error[E025]: malformed trace: {why}" in err, err


def test_the_recorded_trace_still_agrees(capsys):
    assert main(["oracle", "compare", str(SCENARIO), str(TRACE)]) == 0
    assert "agree on all" in capsys.readouterr().out


def test_a_trace_that_is_no_regular_file():
    p = serq("oracle", "compare", SCENARIO, "/dev/zero")  # in a process bounded in memory
    assert p.returncode == 2, p.stderr
    assert "error[E011]: cannot read /dev/zero: not a regular file" in p.stderr


# ---------------------------------------------------------------- names and control characters


def controls(text: str) -> set[str]:
    import unicodedata

    return {c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs")}


def _set(path):
    def edit(doc, value):
        node = doc
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return edit


@pytest.mark.parametrize("path", [("pools", 0, "name"), ("stages", 0, "name"), ("sessions", 0, "name"),
                                  ("workload", 0, "program"), ("pools", 0, "admit_via"),
                                  ("sessions", 0, "states", 1, "hold", "items", 0, "pool")])
@pytest.mark.parametrize("name", ["kv\x1b[2J\x1b[31m", "a\nfake: pass", "x y", "9lives", "", "r\u202eevil"])
def test_an_ir_name_must_be_an_identifier(ir_file, tmp_path, capsys, path, name):
    from serq.diagnostics import printable

    f = ir_file(tmp_path / "gone.sq")
    doc = json.loads(f.read_text())
    _set(path)(doc, name)
    f.write_text(json.dumps(doc, indent=1))
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    where = ".".join(map(str, path))
    assert f"error[E010]: not a serq IR file: `{where}` must be a name" in err, err
    assert f'got "{printable(name)}"' in err
    assert controls(err) <= {"\n"}
    assert "\x1b" not in err and "\u202e" not in err and "fake: pass\n" not in err


def test_compiled_names_load(tmp_path):
    """Every name the compiler writes is one the loader takes, its loop
    counters (`repeat#N`) included."""
    from serq.ir.load import ir_text, read_ir
    from serq.lang.load import load_path

    for f in sorted((ROOT / "instances").glob("*.sq")) + [ROOT / "tests" / "kernel_instances" / "constructs.sq"]:
        prog = load_path(f).program
        assert read_ir(ir_text(prog, None), "x.ir.json") == prog.model_copy(update={"source": prog.source})


@pytest.mark.parametrize("line,col,token", [
    ("stage gpu { budget 2; }\x1b[2J\x1b[31m", 24, "\\x1b"),
    ('stage gpu { budget "\x1b[31m\u202e" + zz; }', 20, '"\\x1b[31m\\u202e"'),
])
def test_a_quoted_line_has_its_controls_escaped(tmp_path, capsys, line, col, token):
    f = tmp_path / "a.sq"
    f.write_text(line + "\nsession s { end; }\nworkload { 1 x s; }\n")
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\u202e" not in err, err
    head, quoted, caret = err.splitlines()[:3]
    assert head.startswith(f"{f}:1:{col}: error[")
    at = quoted.index(token)
    assert caret.index("^") == at and caret.count("^") == len(token), (quoted, caret)


def test_printable_escapes_every_control():
    from serq.diagnostics import printable

    assert printable("a\x1b[31mb\n\t\r\x00\x7f\x85\u2028\u202e\u200b\U000e0001 é 中") == \
        "a\\x1b[31mb\\n\\t\\r\\x00\\x7f\\x85\\u2028\\u202e\\u200b\\U000e0001 é 中"
    for n in range(0x110000):
        assert not controls(printable(chr(n))), hex(n)


def test_a_scenario_id_cannot_break_out_of_its_comment(tmp_path, capsys):
    sc = json.loads(SCENARIO.read_text())
    sc["requests"][0]["id"] = "r0\nsession evil { end; }"
    p = tmp_path / "s.json"
    p.write_text(json.dumps(sc))
    assert main(["oracle", "convert", str(p)]) == 2
    err = capsys.readouterr().err
    assert "error[E023]" in err and "must be printable text" in err and "\nsession evil" not in err
