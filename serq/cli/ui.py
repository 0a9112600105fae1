"""`serq ui`: its flags; the server is serq/view/ui.py, imported when the
command runs."""

from __future__ import annotations

from serq.cli.exits import add_parser
from serq.cli.flags import later


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
    u.set_defaults(func=later("serq.view.ui", "cmd_ui"))
