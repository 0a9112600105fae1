"""`serq ui`: a read-only state-graph explorer in the browser, in the
spirit of Stateright's explorer.

A page is a replay path (`/state/0/2/1`): the server replays it through
the same model and the same `explorer.trace.replay` as
`serq explore --replay`, so a state reached by clicking is the state that
replaying its path prints. Nothing is stored between requests but the
results of the background work (serq/view/uiwork.py: the first
violation, each property's status and counterexample, the marks of the
states from which no run completes), which runs once, when the
explorer's own page asks for it or with `--search`; what a state page
adds to the state (each action's successor, its marks, the last step's
change) is serq/view/uistate.py.

Flask serves it (werkzeug's threaded server on 127.0.0.1 only). What a
request may cost and who may make one is serq.view.uilimits: only this
server's Host, no other site's images, scripts or frames, a bounded path,
time and page; each request borrows a model of its own, so a long one
does not hold up the others.
"""

from __future__ import annotations

import errno
import json
import logging
import re
import secrets
import socket
import sys
from contextlib import contextmanager

from explorer.fingerprint import format_fp
from explorer.trace import NondeterministicModel, ReplayError, format_path, parse_path, replay
from serq.diagnostics import Diagnostic, SerqError
from serq.check.model import Checks, pool_levels, pool_text, session_phase, session_text
from serq.defaults import GRAPH_LIMIT
from serq.view.uistate import DOOM_WORDS, actions_view, last_change, path_marks
from serq.view.uiwork import Background
from serq.view.uilimits import (MAX_PAGE, MAX_STEPS, MODELS, REQUEST_SECONDS, Budget, BudgetedModel, ModelPool,
                                Refused, check_request, check_search, check_steps, render)

PHASE_WORDS = {"not-arrived": "not arrived", "queued": "queued", "preempted": "queued after a preemption",
               "prefill": "prefill", "decode": "decode", "turn": "waits at turn", "join": "waits at join",
               "done": "done", "other": "internal"}
CRUMBS = 24  # the last steps the breadcrumbs link to (every step is under "How it got here")


class Explorer:
    """What the pages show, independent of the web server (tests call it)."""

    def __init__(self, program, instance: str, *, ties: str = "all", symmetry: bool = True,
                 checks: list[str] | None = None, max_states: int | None = None,
                 time_limit: float | None = None, memory_limit: int | None = None,
                 max_steps: int = MAX_STEPS, request_seconds: float = REQUEST_SECONDS,
                 max_page: int = MAX_PAGE, models: int = MODELS, graph_limit: int = GRAPH_LIMIT):
        self.program = program
        self.instance = instance
        self.ties, self.symmetry, self.check_names = ties, symmetry, checks
        self.max_states = max_states
        self.time_limit, self.memory_limit = time_limit, memory_limit
        self.max_steps, self.request_seconds, self.max_page = max_steps, request_seconds, max_page
        checked = Checks.of_program(program, checks)
        self.models = ModelPool(lambda: BudgetedModel(program, ties=ties, symmetry=symmetry, checks=checked),
                                models)
        self.token = secrets.token_urlsafe(24)  # the background work's: only the explorer's pages carry it
        self.work = Background(program, ties=ties, symmetry=symmetry, check_names=checks, max_states=max_states,
                               time_limit=time_limit, memory_limit=memory_limit, graph_limit=graph_limit)
        self.start = "0"  # where / leads: the initial state, or the run given with --replay

    def budget(self) -> Budget:
        return Budget(self.request_seconds)

    @contextmanager
    def replayed(self, path: str, budget: Budget | None = None):
        """(a model lent to this request, the trace of the path); ReplayError
        for a path that is not a run, Refused for one over a bound."""
        check_steps(path, self.max_steps)
        parse_path(path)  # the format first: its message names the path
        with self.models.borrow(budget or self.budget()) as m:
            yield m, replay(m, path)

    def trace(self, path: str, budget: Budget | None = None):
        """Replay a path; ReplayError for a path that is not a run."""
        with self.replayed(path, budget) as (_m, trace):
            return trace

    def state_view(self, path: str, budget: Budget | None = None) -> dict:
        marks = self.work.marks  # None until the point-of-no-return analysis has run
        with self.replayed(path, budget) as (m, trace):
            state = trace[-1].state
            actions = actions_view(m, trace, marks)
            problems = [{"kind": k, "message": msg} for k, msg in m.invariants(state)]
            judged = path_verdict(m, trace)
            done = m.is_done(state)
            sessions = [{"label": m.label(state, sid), "phase": session_phase(m, state, sid),
                         "where": PHASE_WORDS[session_phase(m, state, sid)], "text": session_text(m, state, sid)}
                        for sid in range(len(state.sessions))]
            pools = []
            for p, pool in enumerate(m.m.pools):
                alloc, cached, free = pool_levels(m, state, p)
                pools.append({"name": pool.name, "cap": m.m.caps[p], "allocated": alloc, "cached": cached,
                              "free": free, "queue": [m.label(state, q) for q in state.pools[p].queue],
                              "text": pool_text(m, state, p)})
            change = last_change(m, trace, sessions, pools)
        dooms, no_return = path_marks(trace, marks)
        # step k's path is the first k + 1 indices of `path`: given once, the page stays linear in the path
        steps = [{"n": s.index, "action": s.action_text or "initial state", "doom": d}
                 for s, d in zip(trace, dooms)]
        return {
            "instance": self.instance,
            "path": path,
            "parent": path.rsplit("/", 1)[0] if len(trace) > 1 else None,
            "depth": len(trace) - 1,
            "fingerprint": format_fp(trace[-1].fingerprint),
            "doom": dooms[-1],
            "doom_words": DOOM_WORDS[dooms[-1]],
            "no_return_step": no_return,
            "marks": self.work.marks_status,
            "steps": steps,
            "change": change,
            "sessions": sessions,
            "pools": pools,
            "actions": actions,
            "problems": problems,
            "done": done,
            "deadlock": not actions and not done and not problems,
            "verdict": judged,
        }

    # the background work (serq/view/uiwork.py): once, started by the explorer's own page or --search

    def start_search(self) -> None:
        self.work.start()

    def search(self) -> tuple[str, object]:
        """The first search: ("idle", None), ("running", seconds so far),
        ("done", Result) or ("failed", message)."""
        return self.work.search()

    def status(self) -> dict:
        return self.work.status()

    def violation(self, timeout: float | None = None):
        """The explorer's verdict for the instance (BFS: the shortest path
        to the first violation), computed once; None while it runs."""
        self.start_search()
        self.work.main_done.wait(timeout)
        return self.work.violation

    def timeline(self, path: str, budget: Budget | None = None) -> str:
        from serq.check.explore import judged

        budget = budget or self.budget()
        with self.replayed(path, budget) as (m, trace):  # judged as `serq explore --replay PATH` judges it
            return self.timeline_page(m, judged(m, trace, path), budget)

    def timeline_page(self, model, result, budget: Budget) -> str:
        from serq.view import environment
        from serq.view.timeline import timeline, timeline_values

        data = timeline(model, result, self.instance)
        budget.check()
        return render(environment().get_template("timeline.html.j2"), budget, self.max_page,
                      **timeline_values(data))


def path_verdict(model, trace) -> dict:
    """The path's verdict as the search gives it (serq.check.explore.judge_path):
    the first state that fails ends it, at `step` (the path's last step
    when none does), `path` the replay path to that state."""
    from serq.check.explore import judge_path

    end, verdict, kind, msg, _start = judge_path(model, trace)
    return {"verdict": verdict, "kind": kind, "message": msg, "step": end,
            "path": format_path(trace[:end + 1]),
            "before_the_end": end < len(trace) - 1}


def make_app(ex: Explorer, port: int):
    """The explorer's routes, for a server at 127.0.0.1:`port`."""
    from serq.view import environment, need

    flask = need("flask", "serq ui")
    # no static route: it would serve ./static/ of the current directory; every page is self-contained
    app = flask.Flask(__name__, static_folder=None)
    env = environment()

    def page(name: str, status: int = 200, budget: Budget | None = None, **kw):
        body = render(env.get_template(name), budget or ex.budget(), ex.max_page, instance=ex.instance,
                      token=ex.token, **kw)
        return flask.Response(body, status=status, mimetype="text/html")

    def message(status: int, title: str, text: str, error: bool = True, **kw):
        return page("ui_message.html.j2", status, title=title, message=text, error=error, **kw)

    def bad_path(path: str, e: Exception, status: int):
        text = str(e) if str(e).startswith("bad replay path") else f"bad replay path `{path}`: {e}"
        return message(status, "bad replay path", text)

    @app.errorhandler(Refused)
    def refused(e: Refused):
        if e.status == 403:  # a request that may come from another site: nothing of the instance, not its name
            return flask.Response(f"{e.title}: {e.message}\n", status=403, mimetype="text/plain")
        if flask.request.path.startswith("/api/"):
            return flask.Response(json.dumps({"error": e.message}), status=e.status, mimetype="application/json")
        return message(e.status, e.title, e.message)

    @app.errorhandler(NondeterministicModel)
    def nondeterministic(e: NondeterministicModel):
        return message(500, "nondeterministic model", str(e))

    @app.before_request
    def guard():
        check_request(flask.request.environ, flask.request.headers, port)

    @app.after_request
    def no_framing(response):
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Content-Security-Policy"] = "frame-ancestors 'none'"
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response

    @app.get("/")
    def root():
        return flask.redirect(f"/state/{ex.start}")

    @app.get("/state/<path:path>")
    def state(path):
        args = flask.request.args
        if "step" in args or "action" in args:
            return relative(path, args)
        budget = ex.budget()
        try:
            view = ex.state_view(path, budget)
        except ReplayError as e:
            return bad_path(path, e, 404)
        return page("ui_state.html.j2", budget=budget, v=view, crumbs=view["steps"][-CRUMBS:], panel=ex.status())

    def relative(path, args):
        """The links of a state page, relative to its path (given once, so
        the page is linear in the path): `?step=K`, the state after step K
        of the path; `?action=I`, the state after action I of its last."""
        if "step" in args and "action" in args:  # a second value is refused, never ignored
            return message(400, "bad link", "give ?step=K or ?action=I, not both")
        check_steps(path, ex.max_steps)
        try:
            idx = parse_path(path)
        except ReplayError as e:
            return bad_path(path, e, 404)
        word = "step" if "step" in args else "action"
        n = args[word]
        if not re.fullmatch(r"[0-9]{1,9}", n) or (word == "step" and int(n) >= len(idx)):
            return message(400, f"bad {word}", f"no {word} `{n}` of the path `{path}`, which has {len(idx) - 1} "
                           "step(s)" if word == "step" else f"no action `{n}`: an action is its index")
        idx = idx[:int(n) + 1] if word == "step" else idx + [int(n)]
        return flask.redirect("/state/" + "/".join(map(str, idx)))

    @app.get("/api/state/<path:path>")
    def api_state(path):
        try:
            view = ex.state_view(path)
        except (ReplayError, NondeterministicModel) as e:
            return flask.Response(json.dumps({"error": f"bad replay path `{path}`: {e}"}), status=404,
                                  mimetype="application/json")
        return flask.Response(json.dumps(view, indent=1), mimetype="application/json")

    @app.get("/go")
    def go():
        path = flask.request.args.get("path", "").strip().strip("/")
        try:
            ex.trace(path)
        except ReplayError as e:
            return bad_path(path, e, 400)
        return flask.redirect(f"/state/{path}")

    @app.get("/timeline/<path:path>")
    def timeline(path):
        try:
            return flask.Response(ex.timeline(path), mimetype="text/html")
        except ReplayError as e:
            return bad_path(path, e, 404)

    @app.post("/violation")
    def start_violation():
        check_search(flask.request.form, flask.request.headers, ex.token, port)
        ex.start_search()
        return flask.redirect("/violation", code=303)

    @app.post("/start")
    def start_work():
        """The status panel's button: the background work starts, and the
        page it was pressed on shows again."""
        check_search(flask.request.form, flask.request.headers, ex.token, port)
        ex.start_search()
        back = flask.request.form.get("back", "0")
        return flask.redirect(f"/state/{back}" if re.fullmatch(r"[0-9]+(/[0-9]+)*", back) else "/", code=303)

    @app.get("/api/status")
    def api_status():
        return flask.Response(json.dumps(ex.status(), indent=1), mimetype="application/json")

    @app.get("/violation")
    def violation():
        from explorer.report import verdict_line

        status, r = ex.search()
        if status == "idle":
            return message(200, "first violation", "the breadth-first search for the shortest path to the "
                           "first violation explores the whole state graph; it starts with this button",
                           error=False, search_button=True)
        if status == "running":
            return message(200, "first violation", f"searching for {r:.0f} s (this page reloads every "
                           "second)", error=False, reload=True)
        if status == "failed":
            return message(500, "first violation", r)
        return message(200, "first violation", verdict_line(r), error=False, verdict=r.verdict,
                       path=r.replay_path)

    @app.get("/violation/timeline")
    def violation_timeline():
        status, r = ex.search()
        if status != "done":
            return flask.redirect("/violation", code=303)
        budget = ex.budget()
        with ex.models.borrow(budget) as m:
            return flask.Response(ex.timeline_page(m, r, budget), mimetype="text/html")

    @app.errorhandler(404)
    def not_found(_e):
        return message(404, "not found", f"no page {flask.request.path}; states are at /state/PATH, e.g. /state/0")

    @app.errorhandler(405)
    def not_allowed(_e):
        return message(405, "method not allowed", f"serq ui does not answer {flask.request.method} "
                       f"{flask.request.path}")

    return app


def serve(ex: Explorer, port: int, out=sys.stdout) -> int:
    """Serve on 127.0.0.1:port until Ctrl-C; a busy port is an input error."""
    from werkzeug.serving import make_server

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    # Bind here, not in werkzeug: it reports a busy port by exiting itself.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as werkzeug would
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except OSError as e:
        sock.close()
        why = "the port is in use; choose another with --port N (0: any free port)" \
            if e.errno == errno.EADDRINUSE else (e.strerror or str(e))
        raise SerqError([Diagnostic(0, 0, "E018", f"cannot listen on 127.0.0.1:{port}: {why}",
                                    file="serq ui")]) from None
    port = sock.getsockname()[1]  # the one the system chose for --port 0
    app = make_app(ex, port)
    server = make_server("127.0.0.1", port, app, threaded=True, fd=sock.fileno())
    try:
        print(f"serq ui: exploring {ex.instance} at http://127.0.0.1:{port}/ "
              "(read-only; Ctrl-C stops)", file=out, flush=True)
        server.serve_forever()  # werkzeug's: returns on Ctrl-C
    except KeyboardInterrupt:  # Ctrl-C before the loop started
        pass
    finally:
        server.server_close()
        sock.close()
    print("serq ui: stopped", file=out, flush=True)
    return 0


def cmd_ui(args) -> int:
    from serq.lang.load import load_path

    loaded = load_path(args.instance, explorer=True)
    if not 0 <= args.port <= 65535:
        raise SerqError([Diagnostic(0, 0, "E018", f"--port must be between 0 and 65535, not {args.port}",
                                    file="serq ui")])
    from serq.cli.flags import check_limits, memory_limit

    check_limits(args, "--max-states", "--time-limit", "--graph-limit")
    ex = Explorer(loaded.program, args.instance, ties=args.ties, symmetry=not args.no_symmetry,
                  max_states=args.max_states, time_limit=args.time_limit, memory_limit=memory_limit(args),
                  graph_limit=args.graph_limit)
    if args.replay:
        path = args.replay.strip().strip("/")
        try:
            ex.trace(path)
        except (ReplayError, Refused) as e:
            raise SerqError([Diagnostic(0, 0, "E013", f"bad replay path `{args.replay}`: {e}",
                                        file="serq ui")]) from None
        ex.start = path
    if args.search:
        ex.start_search()
    return serve(ex, args.port)
