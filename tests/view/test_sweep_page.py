"""`serq sweep --html` without a browser: one set of heat maps per value of
a third constant, one row for one constant, a page that is a function of
the sweep alone; the browser test (test_browser.py) checks what it shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from serq.check import sweep as sweep_mod
from serq.check.sweep import Row, sweep

ROOT = Path(__file__).resolve().parents[2]
TEXT = ((ROOT / "instances" / "theorem.sq").read_text()
        .replace("pool kv { cap 8;", "const KV = 8;\nconst B = 4;\npool kv { cap KV;").replace("budget 4;", "budget B;"))


@pytest.fixture
def made_up(monkeypatch):
    """Cells whose verdict is `pass` when the sum of the values is at least 8."""
    def value(job):
        total = sum(job.value) if isinstance(job.value, tuple) else job.value
        return Row(job.value, "pass" if total >= 8 else "deadlock", None, "made up", 0, 1), None
    monkeypatch.setattr(sweep_mod, "_explore_value", value)


def test_three_constants_one_map_per_value_of_the_third(made_up):
    pytest.importorskip("plotly")
    from serq.view.heatmap import sweep_page

    sw = sweep(TEXT, "x.sq", ["KV=4..6", "BS=1..2", "B=1..2"], workers=1, require=["verdict=pass"])
    page = sweep_page(sw, "x.sq")
    assert [f'id="{p}"' in page for p in ("verdict-B-1", "requirement-B-1", "verdict-B-2", "requirement-B-2")] == \
        [True] * 4
    assert "verdict at B = 2" in page and "<li>KV=5, BS=2, B=1</li>" in page
    assert sw.frontier == [(4, 2, 2), (5, 1, 2), (5, 2, 1), (6, 1, 1)]
    assert page == sweep_page(sw, "x.sq")  # no time, no random id: the same sweep, the same bytes


def test_one_constant_is_one_row(made_up, tmp_path, capsys):
    pytest.importorskip("plotly")
    from serq.cli import main

    path = tmp_path / "x.sq"
    path.write_text(TEXT)
    out = tmp_path / "one.html"
    assert main(["sweep", str(path), "--vary", "KV=6..9", "--workers", "1", "--html", str(out), "--no-timing"]) == 12  # KV 6, 7 fail
    page = out.read_text()
    assert 'id="verdict"' in page and "smallest passing KV = 8; fails at KV = 7" in page
    assert "smallest passing KV = 8; fails at KV = 7" in capsys.readouterr().out


def test_html_target_is_checked_before_the_sweep(tmp_path, capsys):
    from serq.cli import main

    path = tmp_path / "x.sq"
    path.write_text(TEXT)
    assert main(["sweep", str(path), "--vary", "KV=6..9", "--html", str(tmp_path / "no" / "x.html")]) == 2
    assert "error[E017]: cannot write" in capsys.readouterr().err
