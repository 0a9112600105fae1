"""Pictures of serq's results: a counterexample as a timeline page
(`serq explore --html`), plots of a simulation (`serq run --html`), the
state-graph explorer in the browser (`serq ui`) and the live progress
display of long runs.

Every page is one self-contained HTML file: styles, scripts and the
charting library are inlined, so a page opens offline and can be mailed.
A page is a function of its inputs only (no time, no address, no random
id), so the page of a golden trace is byte-stable.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from serq.diagnostics import Diagnostic, SerqError

TEMPLATES = Path(__file__).resolve().parent / "templates"


def need(module: str, command: str):
    """Import an optional dependency of the pictures, or say how to get it."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError:
        raise SerqError([Diagnostic(0, 0, "E019", f"{command} needs the Python package `{module}`; "
                                    "install serq with the `view` extra: pip install 'serq[view]'",
                                    file=command)]) from None


def environment():
    """The Jinja environment of the page templates (HTML-escaped values)."""
    jinja2 = need("jinja2", "serq")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined)
    return env


def write_page(path: str, text: str, command: str) -> None:
    """Write a page whole (explorer.runtime.outfile), or fail with a clear message
    (a directory that does not exist, no permission, a path that is a
    directory, no space left)."""
    from explorer.runtime.outfile import OutputError, write_output

    try:
        write_output(path, text)
    except OutputError as e:
        raise SerqError([Diagnostic(0, 0, "E017", str(e), file=command)]) from None


def check_target(path: str, command: str) -> None:
    """Fail early when a page could not be written: its folder does not
    exist or the path is a folder (a run can be long; say it first)."""
    target = Path(path)
    if target.is_dir():
        raise SerqError([Diagnostic(0, 0, "E017", f"cannot write {path}: it is a directory", file=command)])
    if not target.parent.is_dir():
        raise SerqError([Diagnostic(0, 0, "E017", f"cannot write {path}: no directory {target.parent}",
                                    file=command)])


def plot_divs(figures) -> list[dict]:
    """(id, title, plotly figure) -> the page's plots: a div each, the
    plotly script left to the page (inlined once)."""
    out = []
    for pid, title, fig in figures:
        html = fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"plot-{pid}",
                           config={"displaylogo": False, "responsive": True})
        out.append({"id": pid, "title": title, "html": html})
    return out
