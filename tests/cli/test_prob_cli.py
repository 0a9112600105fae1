"""`serq explore --probability EVENT` / `--expected METRIC` as a command:
its words, its JSON (format serq-prob, validated against the shipped
schema), its located errors and refusals, a graph cut by a limit."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from serq import formats
from serq.cli import main
from tests.prob_brute import PREEMPT as SMALL

ROOT = Path(__file__).resolve().parents[2]
CHAT = ROOT / "instances" / "prob_chat.sq"

def small(tmp_path) -> str:
    p = tmp_path / "small.sq"
    p.write_text(SMALL)
    return str(p)


def test_words(tmp_path, capsys):
    code = main(["explore", small(tmp_path), "--probability", "preemptions>=1", "--probability", "deadlock",
                 "--expected", "ttft"])
    out = capsys.readouterr().out
    assert code == 0
    assert "P(preemptions>=1: some session's `preemptions` reaches 1 (preemptions one session suffers)): " \
           "best scheduler 0, worst scheduler 1" in out
    assert "P(deadlock: " in out and "best scheduler 0, worst scheduler 0" in out
    assert "per request: best scheduler 1, worst scheduler 115/98 = 1.17347" in out
    assert "q ~ geometric(0.5) over 1..3: the domain holds 0.875 of the distribution's mass; the rest (0.125) " \
           "is renormalized over the domain" in out
    assert "arithmetic: exact rationals" in out


def test_json_is_the_schemas(tmp_path, capsys):
    code = main(["explore", small(tmp_path), "--probability", "stuck", "--expected", "latency", "--json"])
    d = json.loads(capsys.readouterr().out)
    s = formats.schema(formats.PROB)
    jsonschema.Draft202012Validator(s).validate(d)
    assert code == 0 and (d["format"], d["version"]) == ("serq-prob", 1)
    assert d["expected"]["worst"]["total_exact"] == "437/49" and d["expected"]["per"] == "request"
    assert d["events"][0]["worst"] == 0 and d["arithmetic"]["method"] == "exact"
    assert d["draws"][0]["probabilities_exact"] == ["4/7", "2/7", "1/7"]


def test_a_misspelled_event_or_metric_is_located(tmp_path, capsys):
    inst = small(tmp_path)
    assert main(["explore", inst, "--probability", "stuk"]) == 2
    err = capsys.readouterr().err
    assert "--probability:1:1: error[E014]: unknown event `stuk`" in err and "did you mean `stuck`?" in err
    assert main(["explore", inst, "--probability", "preemtions>=2"]) == 2
    err = capsys.readouterr().err
    assert "--probability:1:1: error[E014]: unknown metric `preemtions`" in err
    assert "did you mean `preemptions`?" in err
    assert main(["explore", inst, "--expected", "ttfx"]) == 2
    assert "did you mean `ttft`?" in capsys.readouterr().err
    assert main(["explore", inst, "--expected", "peak"]) == 2
    assert "--expected:1:1: error[E014]: `peak` is the largest value of one state" in capsys.readouterr().err


def test_refusals(tmp_path, capsys):
    inst = small(tmp_path)
    assert main(["explore", inst, "--probability", "stuck", "--worst", "ttft"]) == 2
    assert "--probability cannot be combined with --worst" in capsys.readouterr().err
    assert main(["explore", inst, "--expected", "ttft", "--html", str(tmp_path / "x.html")]) == 2
    assert "--html cannot be honoured with --expected" in capsys.readouterr().err
    assert main(["explore", inst, "--expected", "ttft", "--workers", "2"]) == 2
    assert "--workers cannot be honoured with --expected" in capsys.readouterr().err
    assert main(["explore", inst, "--probability", "stuck", "--probability", "stuck"]) == 2
    assert "the event `stuck` is given twice" in capsys.readouterr().err
    assert main(["explore", inst, "--probability", "preemptions>=1", "--probability", "ttft>=2"]) == 2
    assert "count one metric" in capsys.readouterr().err


def test_a_cut_graph_gives_no_probability(tmp_path, capsys):
    code = main(["explore", str(CHAT), "--probability", "stuck", "--max-states", "50"])
    out = capsys.readouterr().out
    assert code == 13
    assert "the state graph was cut at its max_states bound: its frontier is not the end of a run, " \
           "so no probability is given" in out
    assert "P(" not in out


def test_a_time_limit_cuts_the_graph():
    from serq.check.prob import Question, parse_event
    from serq.check.probreport import analyse, render_json
    from serq.lang.load import load_path

    prog = load_path(CHAT, explorer=True).program
    r = analyse(prog, Question([parse_event("stuck", prog)]), time_limit=0.05)
    assert not r.complete and r.bound_reason == "time_limit" and r.exit_code == 13
    d = render_json(r)
    assert d["events"][0]["best"] is None and d["complete"] is False
    jsonschema.Draft202012Validator(formats.schema(formats.PROB)).validate(d)
