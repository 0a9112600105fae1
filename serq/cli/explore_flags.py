"""Which flags of `serq explore` each mode can honour.

`--worst`, `--theorem`, `--replay` and `--swarm` each do one thing, and
some flags of the exhaustive search mean nothing there (a replay explores
no states, a worst case builds its graph breadth-first in one process). A
flag given to a mode that cannot honour it is refused (E012, exit 2),
located in its value, with what to do instead: never ignored.
"""

from __future__ import annotations

from serq.diagnostics import flag_error
from serq.defaults import GRAPH_LIMIT

# flag -> (attribute, is it given: a value other than the one that changes nothing)
GIVEN = {
    "--strategy dfs": ("strategy", lambda v: v == "dfs"),
    "--max-depth": ("max_depth", lambda v: v is not None),
    "--memory": ("memory", lambda v: v is not None),
    "--check": ("check", lambda v: v is not None),
    "--workers": ("workers", lambda v: v != 1),
    "--exact": ("exact", bool),
    "--graph-limit": ("graph_limit", lambda v: v != GRAPH_LIMIT),
    "--progress": ("progress", bool),
    "--replay": ("replay", lambda v: v is not None),
    "--coverage": ("coverage", bool),
    "--reduce": ("reduce", lambda v: v is not None),
}

# mode -> {flag it cannot honour: why, and what to do}
REFUSED = {
    "--worst": {
        "--coverage": "a worst case counts no coverage; drop --coverage, or ask for it without --worst",
        "--strategy dfs": "a worst case builds the whole state graph breadth-first; drop --strategy dfs",
        "--max-depth": "a worst case is over whole behaviours, cut only by --max-states, --time-limit and "
                       "--memory; drop --max-depth",
        "--check": "a worst case checks no property (violations do not end a behaviour there); drop --check, "
                   "or check the properties without --worst",
        "--workers": "a worst case is computed in one process; drop --workers",
        "--exact": "a worst case stores its graph by fingerprint in one process; drop --exact",
        "--graph-limit": "a worst case has no point of no return; its graph is cut by --max-states; "
                         "drop --graph-limit",
        "--progress": "a worst case shows no progress line; drop --progress",
        "--reduce": "a worst case reads the sequence numbers of its graph's states as they are; drop --reduce",
    },
    "--probability": {
        "--strategy dfs": "probabilities are computed on the whole state graph built breadth-first; drop --strategy dfs",
        "--max-depth": "probabilities are over whole behaviours, cut only by --max-states, --time-limit and "
                       "--memory; drop --max-depth",
        "--check": "probabilities check no property; ask for an event instead (--probability stuck, deadlock, "
                   "violation); drop --check",
        "--workers": "probabilities are computed in one process; drop --workers",
        "--exact": "probabilities store their graph by fingerprint in one process; drop --exact",
        "--graph-limit": "probabilities have no point of no return; their graph is cut by --max-states; "
                         "drop --graph-limit",
        "--progress": "probabilities show no progress line; drop --progress",
        "--reduce": "probabilities are computed on the unreduced graph; drop --reduce",
    },
    "--theorem": {
        "--coverage": "the theorem's exploration counts no coverage; drop --coverage, or ask for it without --theorem",
        "--check": "the theorem checks its own conclusion (every admitted session completes); drop --check",
        "--replay": "the theorem explores every behaviour; drop --replay, or replay the path without --theorem",
        "--reduce": "the theorem's exploration is not reduced; drop --reduce",
    },
    "--replay": {
        "--coverage": "a replay follows one path; drop --coverage",
        "--strategy dfs": "a replay follows one path; drop --strategy",
        "--max-depth": "a replay follows its whole path; drop --max-depth",
        "--memory": "a replay follows one path; drop --memory",
        "--workers": "a replay follows one path in one process; drop --workers",
        "--exact": "a replay follows one path and stores no states; drop --exact",
        "--progress": "a replay shows no progress line; drop --progress",
    },
    "--swarm": {
        "--coverage": "a swarm's searches keep no count of events; drop --coverage",
        "--exact": "a swarm keeps no table of states to make exact; drop --exact",
        "--progress": "a swarm shows no progress line; drop --progress",
    },
}


def mode_of(args) -> str | None:
    for mode, on in (("--worst", args.worst is not None), ("--theorem", args.theorem),
                     ("--probability", bool(args.probability) or args.expected is not None),
                     ("--replay", args.replay is not None), ("--swarm", args.swarm is not None)):
        if on:
            return mode
    return None


def refuse_unhonoured(args) -> None:
    """A located E012 for the first flag the command's mode cannot honour."""
    mode = mode_of(args)
    if args.seed != 0 and mode != "--swarm":
        raise flag_error("--seed", str(args.seed), "E012", "--seed chooses the searches of --swarm; "
                         "drop --seed, or add --swarm N")
    for flag, why in REFUSED.get(mode, {}).items():
        attr, given = GIVEN[flag]
        value = getattr(args, attr)
        if given(value):
            name = flag.split()[0]
            if mode == "--probability" and not args.probability:
                mode = "--expected"
            shown = ",".join(value) if isinstance(value, list) else name if isinstance(value, bool) else str(value)
            raise flag_error(name, shown, "E012", f"{name} cannot be honoured with {mode}: {why}")


def refuse_disk(args) -> None:
    """`--disk DIR`: the array engine's disk mode, one process, one BFS
    over fingerprints; a located E012 for a flag it cannot honour."""
    if getattr(args, "disk", None) is None:
        return
    if not args.disk.strip():
        raise flag_error("--disk", args.disk, "E013", "empty directory: expected where the search's files go")
    mode = mode_of(args)
    if mode is not None:
        raise flag_error("--disk", args.disk, "E012", f"--disk cannot be honoured with {mode}: it is the "
                         "exhaustive search's; drop --disk")
    for flag, on, what in (("--workers", args.workers > 1, str(args.workers)),
                           ("--strategy", args.strategy == "dfs", "dfs"),
                           ("--exact", args.exact, "--exact"),
                           ("--coverage", args.coverage, "--coverage")):
        if on:
            raise flag_error(flag, what, "E012", f"{flag} cannot be honoured with --disk: the disk mode is one "
                             "worker's BFS over fingerprints, with no visitor; drop one of them")
    for flag in ("partitions", "ray", "checkpoint", "resume"):
        if getattr(args, flag, None) is not None:
            raise flag_error(f"--{flag}", str(getattr(args, flag)), "E012", f"--{flag} cannot be honoured with "
                             "--disk: partitions keep their tables in memory; drop one of them")


def refuse_disk_checks(args, checks) -> None:
    """`--disk` and the properties the search checks: the disk mode
    explores the instance's own states (no per-request SLO product, no
    witnesses of `check sometimes`, each a search of its own)."""
    if getattr(args, "disk", None) is None:
        return
    from serq.check.slo import needs_product

    why = None
    if needs_product(checks):
        why = (f"a per-request SLO check ({checks.slo[0].text}) is explored on a product without rows, which the "
               "disk mode needs; drop --disk")
    elif checks.sometimes:
        why = "the `check sometimes` lines are searched apart, in memory; drop --disk, or select other checks (--check)"
    if why:
        raise flag_error("--disk", args.disk, "E012", f"--disk cannot be honoured: {why}")
