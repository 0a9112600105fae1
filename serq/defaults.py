"""Names and defaults that the command line's help shows and the library
uses, in a module that imports nothing: building the parser (`serq
--help`, and every command before it starts) loads no engine."""

# the properties a `check` line or `--check` can select (`completes` stands for the first, second and fourth)
ALL_CHECKS = ("deadlock", "livelock", "stuck", "invariant")

# states the point-of-no-return analysis may store or visit by default (`--graph-limit`)
GRAPH_LIMIT = 200_000

# actions a simulation applies at most by default (`--max-steps`)
DEFAULT_MAX_STEPS = 20_000_000
