"""`serq ui`: its flags; the server is serq/view/ui.py, imported when the
command runs."""

from __future__ import annotations

from serq.cli.exits import add_parser
from serq.cli.flags import later
from serq.defaults import GRAPH_LIMIT


def register(sub) -> None:
    u = add_parser(sub, "ui", help="explore the state graph of an instance in the browser",
                       description="Serve a read-only state-graph explorer on 127.0.0.1: the state as "
                                   "tables, what the last step changed, its actions with a preview of each "
                                   "successor, click or keys to step, go back, jump to a replay path; in the "
                                   "background, the shortest path to the first violation, each property's "
                                   "status and counterexample, and the marks of the states and actions from "
                                   "which no run can complete.")
    u.add_argument("instance", help="a .sq file or an .ir.json file")
    u.add_argument("--port", type=int, default=8080, metavar="N", help="port on 127.0.0.1 (default 8080; 0: any free port)")
    u.add_argument("--replay", metavar="PATH", help="check this replay path and print its address first")
    u.add_argument("--ties", choices=("all", "seq"), default="all", help="as for serq explore")
    u.add_argument("--no-symmetry", action="store_true", help="as for serq explore")
    u.add_argument("--search", action="store_true",
                   help="start the background work at once (by default, the button of the status panel starts it)")
    u.add_argument("--max-states", type=int, metavar="N", help="bound of each background search")
    u.add_argument("--time-limit", type=float, metavar="SEC", help="time bound of each background search")
    u.add_argument("--memory", metavar="SIZE", help="memory bound of the background work, as for serq explore")
    u.add_argument("--graph-limit", type=int, default=GRAPH_LIMIT, metavar="N",
                   help="states the point-of-no-return analysis may store (the whole graph; past it, only the "
                        f"states from which a run completes are marked) (default {GRAPH_LIMIT})")
    u.set_defaults(func=later("serq.view.ui", "cmd_ui"))
