"""`serq diff --html`: the two variants' traces side by side, one page (a
row per joint step: the environment's event, then what each variant did
and what changed), self-contained like every page of serq."""

from __future__ import annotations

from serq.view import environment


def _apart(step: dict) -> bool:
    """The variants did different things in a joint step (source lines aside)."""
    from serq.check.diffreport import merged_moves

    return merged_moves(*((step[x]["action"], step[x]["diff"]) for x in ("a", "b"))) is None


def diff_page(r) -> str:
    from serq.check.diffreport import headline, render_json

    data = render_json(r)
    sections = []
    for d in data["differences"]:
        start = d["lasso_start"]
        steps = [dict(s, cycle=start is not None and s["step"] > start) for s in d["steps"][1:]]
        after = [f"{d['completes']}: every session ended"] + [f"{d['fails']}: {x}" for x in d["diagnosis"]]
        if start is not None:
            after.insert(0, f"the cycle (marked) returns to step {start}")
        sections.append({"title": d["text"], "steps": steps, "after": after})
    worst = data.get("worst")
    if worst:
        for dd in worst["directions"]:
            if dd is None or dd["difference"] <= 0:
                continue
            sections.append({"title": f"worst {worst['metric']}: {dd['above']} above {dd['below']} by "
                                      f"{dd['difference']} {worst['unit']}: {dd['subject']} "
                                      f"({dd['a']} in a, {dd['b']} in b)",
                             "steps": [dict(s, cycle=False) for s in dd["steps"][1:]], "after": []})
    for sec in sections:
        for step in sec["steps"]:
            step["apart"] = _apart(step)
    lines = [f"{x}: {data['files'][x]}: {data['verdicts'][x]['verdict']}: {data['verdicts'][x]['message']}"
             for x in ("a", "b")] + [f"note: {n}" for n in data["notes"]]
    return environment().get_template("diff.html.j2").render(
        files=data["files"], headline=headline(r), lines=lines, sections=sections)
