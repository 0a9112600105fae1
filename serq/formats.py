"""The JSON that serq's commands print: each document's `format` and
`version`, one indentation, and the schemas shipped in `serq/schemas/`
(docs/json.md).

Version policy: a later serq only adds keys to a version; a key removed or
whose meaning changes makes a new version number, and a reader should
refuse a version it does not know."""

from __future__ import annotations

import json

EXPLORE = "serq-explore"  # serq explore --json (and --replay)
WORST = "serq-worst"  # serq explore --worst METRIC --json
THEOREM = "serq-theorem"  # serq explore --theorem --json
RUN = "serq-run"  # serq run --json
CHECK = "serq-check"  # serq check --json
SWEEP = "serq-sweep"  # serq sweep --json (serq/check/sweepreport.py)
SCHEDULE = "serq-schedule"  # serq run --schedule FILE, its header line (serq/sim/schedule.py)
REQUESTS = "serq-requests"  # serq run --requests FILE.jsonl, its header line
IR = "serq-ir"  # serq compile (serq/ir)
DIFF = "serq-diff"  # serq diff --json (serq/check/diffreport.py)
PROB = "serq-prob"  # serq explore --probability EVENT / --expected METRIC --json (serq/check/probreport.py)

FORMATS = (EXPLORE, WORST, THEOREM, RUN, CHECK, SWEEP, SCHEDULE, REQUESTS, IR, DIFF, PROB)

# each format's version: one format's new version leaves the others' as they are
VERSIONS = {fmt: 1 for fmt in FORMATS}


def stamp(fmt: str, doc: dict) -> dict:
    """`doc` with `format` and `version` first."""
    return {"format": fmt, "version": VERSIONS[fmt], **{k: v for k, v in doc.items() if k not in ("format", "version")}}


def dumps(doc) -> str:
    """A document as the commands print it: indented by one space, a newline at the end."""
    return json.dumps(doc, indent=1) + "\n"


def warnings_data(diags) -> list[dict]:
    """The warnings (serq.diagnostics.Diagnostic) a command printed on
    stderr, as data: code, message, where (file, line and column; line 0
    when the warning has no place), notes."""
    return [{"code": d.code, "message": d.message, "file": d.file, "line": d.line, "col": d.col,
             "notes": list(d.notes)} for d in diags if not d.is_error]


def schema(fmt: str) -> dict:
    """The JSON Schema of a format (one of FORMATS), as shipped in serq/schemas/."""
    from importlib.resources import files

    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; the formats are {', '.join(FORMATS)}")
    return json.loads(files("serq").joinpath("schemas", f"{fmt}.json").read_text())
