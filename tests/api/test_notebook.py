"""examples/first_steps.ipynb runs: every code cell, in order, in one
namespace, in the notebook's folder, as a notebook kernel would; the value
of a cell's last expression is shown as a notebook would (its
`_repr_html_`, else its repr). A small runner of our own (no Jupyter
kernel in the project's dependencies: docs/dependencies.md)."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "first_steps.ipynb"


def run_notebook(path: Path) -> tuple[dict, list[dict]]:
    """(the namespace after the last cell, per code cell: its stdout and shown value)."""
    nb = json.loads(path.read_text())
    assert nb["nbformat"] == 4
    ns: dict = {"__name__": "__main__"}
    shown = []
    here = os.getcwd()
    os.chdir(path.parent)
    try:
        for i, cell in enumerate(nb["cells"]):
            if cell["cell_type"] != "code":
                continue
            src = "".join(cell["source"])
            tree = ast.parse(src, f"{path.name}[{i}]")
            last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(tree, f"{path.name}[{i}]", "exec"), ns)
                value = eval(compile(ast.Expression(last.value), f"{path.name}[{i}]", "eval"), ns) if last else None
            html = getattr(value, "_repr_html_", None)
            shown.append({"cell": i, "stdout": out.getvalue(), "value": value,
                          "html": html() if html else None, "repr": repr(value) if last else None})
    finally:
        os.chdir(here)
    return ns, shown


def test_the_notebook_runs_and_shows_its_results():
    ns, shown = run_notebook(NOTEBOOK)
    assert ns["r"].verdict == "livelock" and ns["run"].stopped == "done" and ns["c"].ok
    assert ns["small"].verdict == "pass" and ns["sw"].verdicts() == {1: "pass", 2: "pass"}
    pages = [s for s in shown if s["html"] and s["html"].startswith("<iframe srcdoc=")]
    assert len(pages) >= 3  # the livelock's timeline, the run's plots, the small instance's page
    assert any("livelock" in s["stdout"] for s in shown)  # print(r.text())
    assert any("error[E001]" in s["stdout"] for s in shown)  # the mistake, located
    assert all(not s["repr"] or "Traceback" not in s["repr"] for s in shown)


def test_the_notebook_has_no_stored_outputs():
    """Outputs would go stale; the test above is what runs it."""
    nb = json.loads(NOTEBOOK.read_text())
    assert all(c.get("outputs", []) == [] for c in nb["cells"])


def test_the_runner_fails_on_a_failing_cell(tmp_path):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "source": ["x = 1\n"], "outputs": [], "metadata": {}, "execution_count": None},
        {"cell_type": "code", "source": ["1 / (x - 1)\n"], "outputs": [], "metadata": {}, "execution_count": None}]}
    f = tmp_path / "bad.ipynb"
    f.write_text(json.dumps(nb))
    try:
        run_notebook(f)
    except ZeroDivisionError:
        return
    raise AssertionError("a failing cell passed")
