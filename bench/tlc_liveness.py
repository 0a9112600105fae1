"""`check eventually` against TLC's liveness checking on the same graph.

    python bench/tlc_liveness.py --tlc tla2tools.jar instances/starved_large.sq ['eventually admitted' ...]

For each check, the instance's reachable graph is stored (the explorer's
stored graph, graph/stored.py: every state, without symmetry, every edge
with its fairness class, each state's waiting sessions) and written as a
TLA+ module whose one variable `s` is the state's number: `Succ[s]` the
(class, target) pairs of its edges, `W[k]` the states where subject k
waits. The specification is

    Spec == Init /\\ [][Next]_s /\\ WF_s(Next) /\\ \\A c \\in Classes : WF_s(Step(c))   (SF_s under strong)
    Live == \\A k \\in Subjects : [](s \\in W[k] => <>(s \\notin W[k]))

`WF_s(Next)`: a behaviour does not stop while an action is enabled (the
explorer's behaviours are the graph's maximal paths); a state without
successor stutters for ever (TLC -deadlock: no deadlock check). TLC is then run on it
and its verdict (`Temporal properties were violated` or no error), its
distinct states and its time are printed beside the explorer's. TLC is
not a dependency: pass its jar with --tlc (tla2tools.jar, any version
with liveness checking; java on PATH). Without --tlc, the modules are
written (--out) and not run."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def module(name: str, g, strong: bool) -> tuple[str, str]:
    """(TLA+ module, TLC configuration) of a stored graph whose edge data
    is the class and node data the waiting mask."""
    n = len(g)
    succ = []
    classes = set()
    for u in range(n):
        pairs = sorted({(c, v) for (_ai, v), c in zip(g.succ[u], g.info[u])})
        classes.update(c for c, _v in pairs if c)
        succ.append("{" + ", ".join(f"<<{c}, {v}>>" for c, v in pairs) + "}")
    ever = 0
    for w in g.value:
        ever |= w
    subjects = [k for k in range(64) if ever >> k & 1]
    parts = [f"({k} :> {{{', '.join(str(u) for u in range(n) if g.value[u] >> k & 1)}}})" for k in subjects]
    waits = " @@ ".join(parts) if parts else "[k \\in {} |-> {}]"
    fair = "SF_s" if strong else "WF_s"
    text = f"""---- MODULE {name} ----
EXTENDS Naturals, TLC
VARIABLE s
Succ == <<{', '.join(succ)}>>
Classes == {{{', '.join(map(str, sorted(classes)))}}}
Subjects == {{{', '.join(map(str, subjects))}}}
W == {waits}
Init == s = 0
Step(c) == \\E e \\in Succ[s + 1] : e[1] = c /\\ s' = e[2]
Next == \\E e \\in Succ[s + 1] : s' = e[2]
Spec == Init /\\ [][Next]_s /\\ WF_s(Next) /\\ \\A c \\in Classes : {fair}(Step(c))
Live == \\A k \\in Subjects : [](s \\in W[k] => <>(s \\notin W[k]))
====
"""
    cfg = "SPECIFICATION Spec\nPROPERTY Live\n"  # deadlock checking off on the command line (-deadlock)
    return text, cfg


def run(inst: Path, check: str, tlc: str | None, out: Path) -> None:
    from explorer.check import build_graph
    from serq.check.explore import explore
    from serq.check.model import Checks
    from serq.check.slo import make_model
    from serq.lang.load import load_path

    prog = load_path(inst, explorer=True).program
    t0 = time.perf_counter()
    r = explore(prog, checks=[check], graph_limit=0)
    t_serq = time.perf_counter() - t0
    m = make_model(prog, checks=Checks.of_program(prog, [check]))
    g = build_graph(m, edge_info=lambda st, a, nxt: m.fair_class(st, a), node_info=m.waiting)
    name = re.sub(r"\W", "_", f"{inst.stem}_{check}")
    text, cfg = module(name, g, check.endswith("strong"))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.tla").write_text(text)
    (out / f"{name}.cfg").write_text(cfg)
    serq_says = "violated" if r.verdict == "violation" else r.verdict
    line = f"{inst.name} `{check}`: serq {serq_says} ({r.stats.distinct} states, {t_serq:.2f} s)"
    if tlc is None:
        print(line + f"; TLC not run: {out / name}.tla")
        return
    t0 = time.perf_counter()
    p = subprocess.run(["java", "-XX:+UseParallelGC", "-cp", tlc, "tlc2.TLC", "-workers", "1", "-deadlock",
                        "-config", f"{name}.cfg", f"{name}.tla"], cwd=out, capture_output=True, text=True)
    t_tlc = time.perf_counter() - t0
    log = p.stdout + p.stderr
    (out / f"{name}.log").write_text(log)
    if "Temporal properties were violated" in log:
        tlc_says = "violated"
    elif "No error has been found" in log:
        tlc_says = "pass"
    else:
        tlc_says = "error (see the log)"
    counts = re.findall(r"([\d,]+) distinct states found", log)  # the last: the whole space
    print(line + f"; TLC {tlc_says} ({counts[-1].replace(',', '') if counts else '?'} states, {t_tlc:.2f} s)"
          + ("" if tlc_says == serq_says else "  <-- DIFFER"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("instance", type=Path)
    ap.add_argument("checks", nargs="*", default=["eventually admitted", "eventually admitted under strong",
                                                   "eventually done", "eventually done under strong"])
    ap.add_argument("--tlc", help="the path of tla2tools.jar")
    ap.add_argument("--out", type=Path, default=Path("/tmp/serq-tlc"))
    a = ap.parse_args()
    for c in a.checks:
        run(a.instance, c, a.tlc, a.out)


if __name__ == "__main__":
    main()
