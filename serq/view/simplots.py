"""Plots of a simulation (`serq run --html`): pool levels and queue
lengths over simulated time, each stage's busy fraction, and the TTFT,
TPOT and end-to-end latency distributions per program, with the report's
tables, on one self-contained page (plotly, its script inlined).

`Recorder` is the report's `Stats` plus what a picture needs and a table
does not: the change points of the pool levels, the busy intervals of
every stage, and per request the first-token tick and decode tokens (for
TPOT). It consumes exactly the stamped events and levels the report does,
so its latency samples are the report's (tests/view/test_view.py checks it).
"""

from __future__ import annotations

from serq import __version__
from serq.durations import ITERATION, cell_text, cell_unit, span_text
from serq.sim.report import NS, Stats, _num

BINS = 400  # time bins of the series: a page stays small however long the run


class Recorder(Stats):
    def __init__(self, program, m, warmup: int = 0):
        super().__init__(program, m, warmup)
        P, S, G = len(program.pools), len(program.stages), len(program.sessions)
        self.alloc_pts: list[tuple[int, tuple[int, ...]]] = [(0, (0,) * P)]
        self.pool_pts: list[tuple[int, tuple[int, ...], tuple[int, ...]]] = []  # (tick, cached, queued)
        self.busy_iv: list[list[tuple[int, int]]] = [[] for _ in range(S)]
        self._cost = [0] * S
        self._level_tick = 0
        self.decodes: dict[int, int] = {}
        self.first_at: dict[int, tuple[int, int]] = {}  # sid -> (tick, decodes by then)
        self.tpot: list[list[int]] = [[] for _ in range(G)]  # ns per output token after the first

    # -- levels and busy time -------------------------------------------
    def level(self, tick, levels) -> None:
        super().level(tick, levels)
        self._level_tick = tick
        if levels != self.alloc_pts[-1][1]:
            self.alloc_pts.append((tick, tuple(levels)))

    def busy(self, si, cost) -> None:
        super().busy(si, cost)
        self._cost[si] = cost  # the iteration whose effects come next ended now

    def _sample(self, tick, state) -> None:
        cached, queued = self.m.engine.cached_queued(state)
        if not self.pool_pts or self.pool_pts[-1][1:] != (cached, queued):
            self.pool_pts.append((tick, cached, queued))

    def events(self, tick, events, state) -> None:
        for e in events:
            if e.kind == "serve" and e.phase == "decode":
                self.decodes[e.sid] = self.decodes.get(e.sid, 0) + e.n
            elif e.kind == "iterate":
                si = e.stage
                self.busy_iv[si].append((tick - self._cost[si], tick))
        super().events(tick, events, state)
        self._sample(tick, state)

    def block_start(self, blk) -> None:
        super().block_start(blk)
        # the simulator has just recorded the block's levels, one per
        # iteration start: the last was at t0 + the costs before it
        self._sample(self._level_tick - sum(blk.costs[:-1]), blk.state)

    def block_end(self, si, tick, blk, upto=None) -> None:
        before = self.iters[si]
        pending = {sid for sid, _n, dec in blk.served if dec and sid in self.ttft_pending}
        super().block_end(si, tick, blk, upto)
        k = self.iters[si] - before
        t = tick
        for c in blk.costs[:k]:
            self.busy_iv[si].append((t, t + c))
            t += c
        for sid, n, dec in blk.served:
            if not dec or not k:
                continue
            if sid in pending and sid in self.first_at:
                ft, d = self.first_at[sid]
                self.first_at[sid] = (ft, d + n)  # the block's first iteration made the first token
            self.decodes[sid] = self.decodes.get(sid, 0) + k * n

    # -- requests (TPOT) ---------------------------------------------------
    def _first_token(self, sid, tick) -> None:
        if sid in self.ttft_pending:
            self.first_at[sid] = (tick, self.decodes.get(sid, 0))
        super()._first_token(sid, tick)

    def _request_end(self, sid, tick) -> None:
        first = self.first_at.pop(sid, None)
        if first is not None and self._counted(sid):
            n = self.decodes.get(sid, 0) - first[1]
            if n > 0:
                self.tpot[self.prog_of[sid]].append((tick - first[0]) // n)
        super()._request_end(sid, tick)

    def _request_start(self, sid, tick) -> None:
        self.first_at.pop(sid, None)
        super()._request_start(sid, tick)


def attach(sim) -> Recorder:
    """Give a Simulator a Recorder in place of its Stats (before `run`)."""
    rec = Recorder(sim.program, sim.m, sim.cfg.warmup)
    sim.stats = rec
    return rec


# ---------------------------------------------------------------- series


def edges(T: int, bins: int = BINS) -> list[int]:
    n = max(1, min(bins, T))
    return [i * T // n for i in range(n + 1)]


def binned(points: list[tuple[int, float]], T: int, bins: int = BINS) -> list[float]:
    """Time-weighted mean per bin of a step function given by its change
    points (tick, value), the value holding from its tick to the next."""
    ed = edges(T, bins)
    out = [0.0] * (len(ed) - 1)
    for i, (t, v) in enumerate(points):
        end = points[i + 1][0] if i + 1 < len(points) else T
        _add(out, ed, t, min(end, T), v)
    return [round(x / (ed[b + 1] - ed[b]), 4) if ed[b + 1] > ed[b] else 0.0 for b, x in enumerate(out)]


def busy_binned(intervals: list[tuple[int, int]], T: int, bins: int = BINS) -> list[float]:
    ed = edges(T, bins)
    out = [0.0] * (len(ed) - 1)
    for a, b in intervals:
        _add(out, ed, max(a, 0), min(b, T), 1)
    return [round(x / (ed[b + 1] - ed[b]), 4) if ed[b + 1] > ed[b] else 0.0 for b, x in enumerate(out)]


def _add(out: list[float], ed: list[int], a: int, b: int, v: float) -> None:
    """Add v * |[a, b) ∩ bin| to every bin."""
    if b <= a or not v:
        return
    import bisect

    i = max(bisect.bisect_right(ed, a) - 1, 0)
    while i < len(out) and ed[i] < b:
        lo, hi = max(a, ed[i]), min(b, ed[i + 1])
        if hi > lo:
            out[i] += v * (hi - lo)
        i += 1


# ---------------------------------------------------------------- the page


def figures(report: dict, rec: Recorder) -> list[tuple[str, str, object]]:
    """(id, title, plotly figure) for every plot of the page."""
    from plotly import graph_objects as go
    from plotly.subplots import make_subplots

    T = report["simulated_ns"]
    out = []
    if T <= 0:
        return out
    ed = edges(T)
    # no stage has a cost: a tick is an iteration, and the axes count them
    iters = report["time_unit"] == ITERATION
    axis, lat, per = ("iterations", "iterations", 1) if iters else ("s", "ms", 1e6)
    xs = [e if iters else round(e / NS, 6) for e in ed[:-1]]
    layout = dict(template="plotly_white", height=300, margin=dict(l=60, r=60, t=40, b=40),
                  legend=dict(orientation="h", x=1, xanchor="right", y=1.16), xaxis_title=f"simulated time ({axis})")
    for p, pool in enumerate(report["pools"]):
        alloc = binned([(t, lv[p]) for t, lv in rec.alloc_pts], T)
        cached = binned([(t, c[p]) for t, c, _q in rec.pool_pts], T)
        queued = binned([(t, q[p]) for t, _c, q in rec.pool_pts], T)
        # units above, the queue below on the same time axis
        fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.7, 0.3], vertical_spacing=0.08)
        fig.add_trace(go.Scatter(x=xs, y=alloc, name="allocated", stackgroup="units", line_shape="hv",
                                 line=dict(color="#4c6ef5")), row=1, col=1)
        if any(cached):  # a pool that never caches (slots) gets no cached area
            fig.add_trace(go.Scatter(x=xs, y=cached, name="cached", stackgroup="units", line_shape="hv",
                                     line=dict(color="#ffa94d")), row=1, col=1)
        fig.add_trace(go.Scatter(x=xs, y=queued, name="queued holds", line_shape="hv",
                                 line=dict(color="#c92a2a")), row=2, col=1)
        if pool["cap"] is not None:
            fig.add_hline(y=pool["cap"], line_dash="dash", line_color="#868e96",
                          annotation_text=f"cap {pool['cap']}", row=1, col=1)
        fig.update_layout(title=f"pool {pool['name']}: units and queue length (means per time bin)",
                          **{**layout, "height": 380, "xaxis_title": None})
        fig.update_xaxes(title_text=f"simulated time ({axis})", row=2, col=1)
        fig.update_yaxes(title_text="units", rangemode="tozero", row=1, col=1)
        fig.update_yaxes(title_text="queued", rangemode="tozero", row=2, col=1)
        out.append((f"pool-{p}", f"pool {pool['name']}", fig))
    fig = go.Figure()
    for si, stage in enumerate(report["stages"]):
        fig.add_trace(go.Scatter(x=xs, y=busy_binned(rec.busy_iv[si], T), name=stage["name"], line_shape="hv"))
    fig.update_layout(title="busy fraction per stage (per time bin)", **layout)
    fig.update_yaxes(range=[0, 1.05], title_text="busy")
    out.append(("busy", "busy fraction", fig))
    names = ("TTFT", "TPOT", "end-to-end")
    fig = make_subplots(rows=1, cols=3, subplot_titles=[f"{n} ({lat})" for n in names])
    palette = ("#4c6ef5", "#2f9e44", "#e8590c", "#ae3ec9", "#1098ad", "#f08c00")
    for g, prog in enumerate(report["programs"]):
        samples = (rec.ttft[g], rec.tpot[g], rec.e2e[g])
        for c, xs_ns in enumerate(samples):
            fig.add_trace(go.Histogram(x=[round(v / per, 6) for v in sorted(xs_ns)], name=prog["name"],
                                       legendgroup=prog["name"], showlegend=c == 0, opacity=0.7,
                                       marker_color=palette[g % len(palette)]), row=1, col=c + 1)
    fig.update_layout(title="latency distributions per program (requests)", barmode="overlay",
                      **{**layout, "height": 320, "xaxis_title": None})
    fig.update_yaxes(title_text="requests", row=1, col=1)
    out.append(("latency", "latency distributions", fig))
    return out


def sim_page(report: dict, rec: Recorder) -> str:
    from serq.view import environment, need, plot_divs

    need("plotly", "serq run --html")
    from plotly.offline import get_plotlyjs

    plots = plot_divs(figures(report, rec))
    env = environment()
    unit = report["time_unit"]
    return env.get_template("sim.html.j2").render(
        r=report, plots=plots, plotlyjs=get_plotlyjs(), ms=lambda v: cell_text(v, unit), num=_num, NS=NS,
        span=lambda t: span_text(t, unit), unit=cell_unit(unit), version=__version__,
        tpot=[_summary(rec.tpot[g]) for g in range(len(report["programs"]))])


def _summary(xs: list[int]) -> dict:
    from serq.sim.report import summary

    return summary(xs)
