"""`serq sweep --html FILE`: a sweep as heat maps on one self-contained page
(plotly, its script inlined, as `serq run --html`).

Per grid (one per value of a third constant): the verdict of every cell
(one colour per verdict, grey where no cell was evaluated); each
`--worst` metric's worst case (a colour scale; `inf` and a cut graph's
lower bound written in the cell); with `--require`, whether each cell
meets it. The Pareto frontier's cells are ringed on the map of what
passing means (the requirement's, else the verdicts'). One constant is a
heat map of one row. The report's lines (monotonicity, frontier,
requirement) are above the plots, as the text prints them.
"""

from __future__ import annotations

from serq import __version__

VERDICT_ORDER = ("pass", "deadlock", "livelock", "violation", "bound", "error", "not evaluated")
VERDICT_COLOURS = ("#2f9e44", "#c92a2a", "#e8590c", "#ae3ec9", "#f59f00", "#495057", "#e9ecef")
OUTCOME_ORDER = ("met", "not met", "undecided", "not evaluated")
OUTCOME_COLOURS = ("#2f9e44", "#c92a2a", "#f59f00", "#e9ecef")


def _steps(colours) -> list:
    """A discrete colour scale: category k (z = k) is colours[k]."""
    n = len(colours)
    out = []
    for k, c in enumerate(colours):
        out += [[k / n, c], [(k + 1) / n, c]]
    return out


def grids(sw) -> list[dict]:
    """Per grid: its title, the axes' labels and values, and per cell the
    row of the sweep (None: not evaluated)."""
    a = sw.axes
    by = {(r.value if isinstance(r.value, tuple) else (r.value,)): r for r in sw.rows}
    if len(a) == 1:
        return [{"id": "", "title": "", "x": a[0].name, "y": "", "xs": a[0].values, "ys": [""],
                 "cells": [[by.get((v,)) for v in a[0].values]], "key": lambda y, x: (x,)}]
    thirds = [(v,) for v in a[2].values] if len(a) == 3 else [()]
    out = []
    for t in thirds:
        out.append({"id": f"-{a[2].name}-{t[0]}" if t else "", "title": f" at {a[2].name} = {t[0]}" if t else "",
                    "x": a[1].name, "y": a[0].name, "xs": a[1].values, "ys": a[0].values,
                    "cells": [[by.get((v0, v1) + t) for v1 in a[1].values] for v0 in a[0].values],
                    "key": lambda y, x, t=t: (y, x) + t})
    return out


def _cell_hover(sw, r, at: str) -> str:
    if r is None:
        return f"{at}: not evaluated"
    lines = [f"{at}: {r.label}", r.message]
    lines += [w.text for w in r.worst.values()]
    if r.req is not None:
        lines.append("requirement: " + {"pass": "met", "fail": "not met", None: "undecided"}[r.outcome])
    import textwrap

    # plotly writes a hover label on one line per <br>: a long message is wrapped, not cut at the page's edge
    return "<br>".join(w.replace("<", "&lt;") for x in lines if x for w in textwrap.wrap(x, 90))


def _heat(go, g, z, text, hover, scale, colourbar=None):
    colourscale, zmin, zmax = scale  # the colours, and the values at their ends
    return go.Heatmap(x=[str(v) for v in g["xs"]], y=[str(v) for v in g["ys"]], z=z, text=text,
                      customdata=hover, texttemplate="%{text}", hovertemplate="%{customdata}<extra></extra>",
                      colorscale=colourscale, zmin=zmin, zmax=zmax, xgap=2, ygap=2,
                      showscale=colourbar is not None, colorbar=colourbar)


def figures(sw) -> list[tuple[str, str, object]]:
    """(id, title, plotly figure) of every heat map."""
    from plotly import graph_objects as go

    out = []
    frontier = set(sw.frontier) if len(sw.axes) > 1 else ({(sw.first_pass,)} if sw.first_pass is not None else set())
    for g in grids(sw):
        h = 140 if g["y"] == "" else max(260, 34 * len(g["ys"]) + 120)
        layout = dict(template="plotly_white", height=h, margin=dict(l=70, r=30, t=40, b=50),
                      xaxis=dict(title=g["x"], type="category"), yaxis=dict(title=g["y"], type="category"))
        names = [[_name(sw, g, y, x) for x in g["xs"]] for y in g["ys"]]
        hover = [[_cell_hover(sw, r, names[i][j]) for j, r in enumerate(row)] for i, row in enumerate(g["cells"])]
        z = [[VERDICT_ORDER.index(_verdict(r)) + 0.5 for r in row] for row in g["cells"]]
        text = [["" if r is None else _verdict(r) for r in row] for row in g["cells"]]
        fig = go.Figure(_heat(go, g, z, text, hover, (_steps(VERDICT_COLOURS), 0, len(VERDICT_ORDER))))
        ring = [(str(g["xs"][j]), str(g["ys"][i])) for i, row in enumerate(g["cells"]) for j, r in enumerate(row)
                if g["key"](g["ys"][i], g["xs"][j]) in frontier]
        if sw.requirement is None:
            _ring(go, fig, ring)
        fig.update_layout(title=f"verdict{g['title']}", showlegend=bool(ring) and sw.requirement is None, **layout)
        out.append((f"verdict{g['id']}", f"verdict{g['title']}", fig))
        for m in sw.metrics:
            vals = [[_number(r, m) for r in row] for row in g["cells"]]
            finite = [v for row in vals for v in row if v is not None]
            top = max(finite, default=0)
            zs = [[(top + 1 if (r is not None and m in r.worst and r.worst[m].value is None
                                and r.worst[m].error is None) else v) for v, r in zip(vrow, row)]
                  for vrow, row in zip(vals, g["cells"])]
            text = [["" if r is None else r.worst[m].short if m in r.worst else "" for r in row] for row in g["cells"]]
            fig = go.Figure(_heat(go, g, zs, text, hover, ("YlOrRd", 0, top + 1),
                                  colourbar=dict(title=m, thickness=14)))
            fig.update_layout(title=f"worst {m}{g['title']} (inf: unbounded, drawn above the largest value)",
                              **layout)
            out.append((f"worst-{m.replace(':', '-')}{g['id']}", f"worst {m}{g['title']}", fig))
        if sw.requirement is not None:
            z = [[OUTCOME_ORDER.index(_met(r)) + 0.5 for r in row] for row in g["cells"]]
            text = [["" if r is None else {"pass": "+", "fail": "-", None: "?"}[r.outcome] for r in row]
                    for row in g["cells"]]
            fig = go.Figure(_heat(go, g, z, text, hover, (_steps(OUTCOME_COLOURS), 0, len(OUTCOME_ORDER))))
            _ring(go, fig, ring)
            fig.update_layout(title=f"requirement{g['title']}: {sw.requirement.words}", showlegend=bool(ring),
                              **layout)
            out.append((f"requirement{g['id']}", f"requirement{g['title']}", fig))
    return out


def _ring(go, fig, ring: list) -> None:
    """The Pareto frontier's cells, ringed, on the map of what passing means."""
    if ring:
        fig.add_trace(go.Scatter(x=[x for x, _ in ring], y=[y for _, y in ring], mode="markers",
                                 name="Pareto frontier", hoverinfo="skip",
                                 marker=dict(symbol="square-open", size=30, color="#1d2330",
                                             line=dict(width=3, color="#1d2330"))))


def _name(sw, g, y, x) -> str:
    cell = g["key"](y, x)
    return ", ".join(f"{a.name}={v}" for a, v in zip(sw.axes, cell))


def _verdict(r) -> str:
    if r is None:
        return "not evaluated"
    return r.verdict if r.verdict in VERDICT_ORDER else "bound"


def _met(r) -> str:
    if r is None:
        return "not evaluated"
    return {"pass": "met", "fail": "not met", None: "undecided"}[r.outcome]


def _number(r, m: str):
    if r is None or m not in r.worst:
        return None
    return r.worst[m].value


def sweep_page(sw, instance: str) -> str:
    from serq.check.sweepreport import head_lines, tail_lines
    from serq.view import environment, need, plot_divs

    need("plotly", "serq sweep --html")
    from plotly.offline import get_plotlyjs

    plots = plot_divs(figures(sw))
    if len(sw.axes) > 1:
        from serq.check.sweepreport import frontier_line, monotony_line

        notes = [monotony_line(sw), frontier_line(sw)]
    else:
        notes = [sw.note]
    over = ", ".join(f"{a.name} over {a.lo}..{a.hi}" for a in sw.axes)
    legend = list(zip(VERDICT_ORDER, VERDICT_COLOURS))
    return environment().get_template("sweep.html.j2").render(
        instance=instance, over=over, cells=len(sw.rows), mode=sw.mode, head=head_lines(sw), notes=notes,
        tail=tail_lines(sw, "cells" if len(sw.axes) > 1 else "values"), plots=plots, legend=legend,
        frontier=[", ".join(f"{a.name}={v}" for a, v in zip(sw.axes, c)) for c in sw.frontier],
        plotlyjs=get_plotlyjs(), version=__version__)
