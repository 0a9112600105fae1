"""The step kernel: numba-compiled functions over integer rows, the same
for every instance (`cache=True`: compiled once per install). With
`NUMBA_DISABLE_JIT=1` the very same code runs as plain Python."""
