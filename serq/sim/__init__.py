"""The deterministic simulator (`serq run`, `serq check`): coalescing, the report, the schedule."""
