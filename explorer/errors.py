"""The errors a check raises besides its verdicts (a verdict is a Result):
a partitioned run that cannot go on or cannot start, a checkpoint that
does not fit. Kept apart from the engines that raise them, so that a
caller catches them without importing an engine."""

from __future__ import annotations

__all__ = ["CheckpointError", "PartitionError", "RayUnavailable", "WorkerLost"]


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be used for this run."""


class WorkerLost(RuntimeError):
    """A partition's worker died or its node left: the run cannot go on."""


class RayUnavailable(RuntimeError):
    """Ray is not installed (it is an optional dependency)."""


class PartitionError(RuntimeError):
    """The partitioned engine cannot run this model (e.g. rows must grow)."""
