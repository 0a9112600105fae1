"""`serq ui`: a read-only state-graph explorer in the browser, in the
spirit of Stateright's explorer.

A page is a replay path (`/state/0/2/1`): the server replays it through
the same `SerqModel` and the same `explorer.trace.replay` as
`serq explore --replay`, so a state reached by clicking is the state that
replaying its path prints. Nothing is stored between requests but the
result of the violation search, which runs once, when first asked.

Flask serves it (werkzeug's threaded server on 127.0.0.1 only); a lock
keeps the model's memo of its last state to one request at a time.
"""

from __future__ import annotations

import errno
import json
import logging
import socket
import sys
import threading

from explorer.fingerprint import format_fp
from explorer.trace import NondeterministicModel, ReplayError, format_path, parse_path, replay
from serq.diagnostics import Diagnostic, SerqError
from serq.exits import add_parser
from serq.explore import (Checks, SerqModel, pool_levels, pool_text, session_phase, session_text)

PHASE_WORDS = {"not-arrived": "not arrived", "queued": "queued", "preempted": "queued after a preemption",
               "prefill": "prefill", "decode": "decode", "turn": "waits at turn", "join": "waits at join",
               "done": "done", "other": "internal"}


class Explorer:
    """What the pages show, independent of the web server (tests call it)."""

    def __init__(self, program, instance: str, *, ties: str = "all", symmetry: bool = True,
                 checks: list[str] | None = None, max_states: int | None = None,
                 time_limit: float | None = None, memory_limit: int | None = None):
        self.program = program
        self.instance = instance
        self.ties, self.symmetry, self.check_names = ties, symmetry, checks
        self.max_states = max_states
        self.time_limit, self.memory_limit = time_limit, memory_limit
        self.model = SerqModel(program, ties=ties, symmetry=symmetry, checks=Checks.of_program(program, checks))
        self.lock = threading.Lock()
        self._violation = None
        self.start = "0"  # where / leads: the initial state, or the run given with --replay

    def trace(self, path: str):
        """Replay a path; ReplayError for a path that is not a run."""
        parse_path(path)  # the format first: its message names the path
        with self.lock:
            return replay(self.model, path)

    def state_view(self, path: str) -> dict:
        trace = self.trace(path)
        m = self.model
        with self.lock:
            state = trace[-1].state
            acts = m.actions(state)
            actions = [{"index": i, "text": m.format_action(state, a), "choices": list(a[2]),
                        "path": f"{path}/{i}"} for i, a in enumerate(acts)]
            problems = [{"kind": k, "message": msg} for k, msg in m.invariants(state)]
            judged = path_verdict(m, trace)
            done = m.is_done(state)
            sessions = [{"label": m.label(state, sid), "phase": session_phase(m, state, sid),
                         "where": PHASE_WORDS[session_phase(m, state, sid)], "text": session_text(m, state, sid)}
                        for sid in range(len(state[0]))]
            pools = []
            for p, pool in enumerate(m.m.pools):
                alloc, cached, free = pool_levels(m, state, p)
                pools.append({"name": pool.name, "cap": m.m.caps[p], "allocated": alloc, "cached": cached,
                              "free": free, "queue": [m.label(state, q) for q in state[1][p][2]],
                              "text": pool_text(m, state, p)})
        steps = [{"n": s.index, "action": s.action_text or "initial state", "path": format_path(trace[:s.index + 1])}
                 for s in trace]
        return {
            "instance": self.instance,
            "path": path,
            "parent": format_path(trace[:-1]) if len(trace) > 1 else None,
            "depth": len(trace) - 1,
            "fingerprint": format_fp(trace[-1].fingerprint),
            "steps": steps,
            "sessions": sessions,
            "pools": pools,
            "actions": actions,
            "problems": problems,
            "done": done,
            "deadlock": not actions and not done and not problems,
            "verdict": judged,
        }

    def violation(self):
        """The explorer's verdict for the instance (BFS: the shortest path
        to the first violation), computed once."""
        if self._violation is None:
            from serq.exploration import explore

            self._violation = explore(self.program, ties=self.ties, symmetry=self.symmetry,
                                      checks=self.check_names, max_states=self.max_states,
                                      time_limit=self.time_limit, memory_limit=self.memory_limit)
        return self._violation

    def timeline(self, path: str) -> str:
        from serq.exploration import judged
        from serq.view.timeline import timeline_page

        trace = self.trace(path)
        with self.lock:  # judged as `serq explore --replay PATH` judges it: every state, the first failure ends it
            return timeline_page(self.model, judged(self.model, trace, path), self.instance)


def path_verdict(model, trace) -> dict:
    """The path's verdict as the search gives it (serq.exploration.judge_path):
    the first state that fails ends it, at `step` (the path's last step
    when none does), `path` the replay path to that state."""
    from serq.exploration import judge_path

    end, verdict, kind, msg, _start = judge_path(model, trace)
    return {"verdict": verdict, "kind": kind, "message": msg, "step": end, "path": format_path(trace[:end + 1]),
            "before_the_end": end < len(trace) - 1}


def make_app(ex: Explorer):
    from serq.view import environment, need

    flask = need("flask", "serq ui")
    app = flask.Flask("serq.ui")
    env = environment()

    def page(name: str, status: int = 200, **kw):
        body = env.get_template(name).render(instance=ex.instance, **kw)
        return flask.Response(body, status=status, mimetype="text/html")

    def bad_path(path: str, e: Exception, status: int):
        text = str(e) if str(e).startswith("bad replay path") else f"bad replay path `{path}`: {e}"
        return page("ui_message.html.j2", status, title="bad replay path", message=text, error=True)

    @app.get("/")
    def root():
        return flask.redirect(f"/state/{ex.start}")

    @app.get("/state/<path:path>")
    def state(path):
        try:
            view = ex.state_view(path)
        except ReplayError as e:
            return bad_path(path, e, 404)
        except NondeterministicModel as e:
            return page("ui_message.html.j2", 500, title="nondeterministic model", message=str(e), error=True)
        return page("ui_state.html.j2", v=view)

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

    @app.get("/violation")
    def violation():
        from explorer.report import verdict_line

        r = ex.violation()
        return page("ui_message.html.j2", title="first violation", message=verdict_line(r), error=False,
                    verdict=r.verdict, path=r.replay_path)

    @app.get("/violation/timeline")
    def violation_timeline():
        from serq.view.timeline import timeline_page

        r = ex.violation()
        with ex.lock:
            return flask.Response(timeline_page(ex.model, r, ex.instance), mimetype="text/html")

    @app.errorhandler(404)
    def not_found(_e):
        return page("ui_message.html.j2", 404, title="not found",
                    message=f"no page {flask.request.path}; states are at /state/PATH, e.g. /state/0", error=True)

    return app


def serve(ex: Explorer, port: int, out=sys.stdout) -> int:
    """Serve on 127.0.0.1:port until Ctrl-C; a busy port is an input error."""
    from werkzeug.serving import make_server

    app = make_app(ex)
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


def register(sub) -> None:
    u = add_parser(sub, "ui", help="explore the state graph of an instance in the browser",
                       description="Serve a read-only state-graph explorer on 127.0.0.1: the state as "
                                   "tables, its enabled actions, click to step, go back, jump to a replay "
                                   "path, the shortest path to the first violation, its timeline.")
    u.add_argument("instance", help="a .sq file or an .ir.json file")
    u.add_argument("--port", type=int, default=8080, metavar="N", help="port on 127.0.0.1 (default 8080; 0: any free port)")
    u.add_argument("--replay", metavar="PATH", help="check this replay path and print its address first")
    u.add_argument("--ties", choices=("all", "seq"), default="all", help="as for serq explore")
    u.add_argument("--no-symmetry", action="store_true", help="as for serq explore")
    u.add_argument("--max-states", type=int, metavar="N", help="bound of the violation search")
    u.add_argument("--time-limit", type=float, metavar="SEC", help="time bound of the violation search")
    u.add_argument("--memory", metavar="SIZE", help="memory bound of the violation search, as for serq explore")
    u.set_defaults(func=cmd_ui)


def cmd_ui(args) -> int:
    from serq.load import load_path

    loaded = load_path(args.instance, explorer=True)
    if not 0 <= args.port <= 65535:
        raise SerqError([Diagnostic(0, 0, "E018", f"--port must be between 0 and 65535, not {args.port}",
                                    file="serq ui")])
    from serq.flags import check_limits, memory_limit

    check_limits(args, "--max-states", "--time-limit")
    ex = Explorer(loaded.program, args.instance, ties=args.ties, symmetry=not args.no_symmetry,
                  max_states=args.max_states, time_limit=args.time_limit, memory_limit=memory_limit(args))
    if args.replay:
        path = args.replay.strip().strip("/")
        try:
            ex.trace(path)
        except ReplayError as e:
            raise SerqError([Diagnostic(0, 0, "E013", f"bad replay path `{args.replay}`: {e}",
                                        file="serq ui")]) from None
        ex.start = path
    return serve(ex, args.port)
