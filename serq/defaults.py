"""Names and defaults that the command line's help shows and the library
uses, in a module that imports nothing: building the parser (`serq
--help`, and every command before it starts) loads no engine."""

# the properties a `check` line or `--check` can select (`completes` stands for the first, second and fourth)
ALL_CHECKS = ("deadlock", "livelock", "stuck", "invariant")

# states the point-of-no-return analysis may store or visit by default (`--graph-limit`)
GRAPH_LIMIT = 200_000

# actions a simulation applies at most by default (`--max-steps`)
DEFAULT_MAX_STEPS = 20_000_000


class CheckChoices(tuple):
    """`--check`'s choices for the explorer: the property names, any
    SLO written with a comparison (`ttft<=4`, `queue(kv)<=2`), which the
    command parses against the instance (serq/check/slo.py), and
    `eventually GOAL [under weak|strong]` (serq/check/liveness.py). Iterating
    gives the names (help, completion, "did you mean")."""

    def __contains__(self, value) -> bool:
        return tuple.__contains__(self, value) or (isinstance(value, str) and (
            any(c in value for c in "<>=") or value.split()[:1] == ["eventually"]))


EXPLORE_CHECKS = CheckChoices(ALL_CHECKS + ("completes",))

# the kinds of event `serq explore --coverage` counts (serq/check/coverage.py), `--witness`'s choices
COVERAGE_KINDS = ("admission", "admission-blocked", "preemption", "preemption-prefill", "preemption-decode",
                  "self-preemption", "cache-hit", "eviction", "requeue", "spawn", "join")
# `serq explore` alone searches `check sometimes` lines (serq/check/sometimes.py)
SEARCH_CHECKS = CheckChoices(ALL_CHECKS + ("completes", "sometimes"))
