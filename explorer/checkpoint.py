"""Checkpoints of a partitioned BFS (`distributed.py`) at level boundaries.

A checkpoint directory holds, per partition p and saved level t,
`states-p-t.pkl` (the states the partition stored since the previous save,
with their non-progress edges) and `frontier-p-t.pkl` (its frontier at
that boundary), and one `manifest.json`: what the run is (the model's
identity as its caller gives it, the search flags, the partition count),
the saved levels and the driver's counters. Every file is written under a
temporary name and renamed into place; the manifest is renamed last, so it
always names complete files: a run killed while saving resumes from the
previous level. Frontier files of older levels are removed once the
manifest no longer names them.

The partitions write their own files: on a cluster of several machines the
directory must be the same shared path on every node."""

from __future__ import annotations

import json
import os

__all__ = ["Checkpoint", "CheckpointError", "MANIFEST"]

MANIFEST = "manifest.json"
FORMAT = 1


class CheckpointError(ValueError):
    """A checkpoint directory that cannot be used for this run."""


def _diff(saved: dict, now: dict, prefix: str = "") -> str | None:
    for key in sorted(set(saved) | set(now)):
        a, b = saved.get(key), now.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            d = _diff(a, b, f"{prefix}{key}.")
            if d:
                return d
        elif a != b:
            return f"{prefix}{key} is {json.dumps(a)} there, {json.dumps(b)} now"
    return None


class Checkpoint:
    def __init__(self, directory: str, identity: dict, partitions: int) -> None:
        self.dir = os.path.abspath(directory)
        self.identity = identity
        self.partitions = partitions
        self.tags: list[int] = []
        self.info: dict | None = None
        try:
            os.makedirs(self.dir, exist_ok=True)
        except OSError as e:
            raise CheckpointError(f"cannot create checkpoint directory {directory}: {e.strerror or e}") from None
        if not os.access(self.dir, os.W_OK):
            raise CheckpointError(f"checkpoint directory {directory} is not writable")
        self.fresh = not os.path.exists(os.path.join(self.dir, MANIFEST))

    def require_fresh(self) -> None:
        if not self.fresh:
            raise CheckpointError(f"{self.dir} already holds a checkpoint: continue it with --resume {self.dir}, "
                                  "or choose an empty directory")

    def continue_from(self, state: dict) -> None:
        """Go on with the saved levels of the checkpoint being resumed."""
        if os.path.abspath(state["dir"]) == self.dir:
            self.tags = list(state["tags"])
        else:
            self.require_fresh()

    def commit(self, tag: int, info: dict) -> None:
        """Name the files of level `tag` (already written) in the manifest."""
        tags = [t for t in self.tags if t != tag] + [tag]
        doc = {"format": FORMAT, "identity": self.identity, "partitions": self.partitions, "tags": tags, **info}
        path = os.path.join(self.dir, MANIFEST)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        old = set(self.tags) - {tag}
        self.tags, self.info = tags, doc
        for t in old:
            for p in range(self.partitions):
                try:
                    os.remove(os.path.join(self.dir, f"frontier-{p}-{t}.pkl"))
                except FileNotFoundError:
                    pass

    def describe_last(self) -> str | None:
        if self.info is None:
            return Checkpoint.describe(self.dir)
        return _words(self.dir, self.info)

    @staticmethod
    def describe(directory: str) -> str | None:
        try:
            with open(os.path.join(directory, MANIFEST)) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return None
        return _words(os.path.abspath(directory), doc)

    @staticmethod
    def read(directory: str, identity: dict, partitions: int | None) -> dict:
        """The manifest of a checkpoint made by the same run (refused with
        CheckpointError otherwise), with "dir" added."""
        path = os.path.join(directory, MANIFEST)
        if not os.path.isdir(directory):
            raise CheckpointError(f"no checkpoint directory {directory}")
        try:
            with open(path) as f:
                doc = json.load(f)
        except FileNotFoundError:
            raise CheckpointError(f"no checkpoint in {directory} ({MANIFEST} is missing)") from None
        except (OSError, ValueError) as e:
            raise CheckpointError(f"unreadable checkpoint manifest {path}: {e}") from None
        if doc.get("format") != FORMAT:
            raise CheckpointError(f"{path}: checkpoint format {doc.get('format')!r}, expected {FORMAT}")
        d = _diff(doc.get("identity", {}), identity)
        if d:
            raise CheckpointError(f"the checkpoint in {directory} was written by another run: {d}")
        if partitions is not None and partitions != doc["partitions"]:
            raise CheckpointError(f"the checkpoint in {directory} has {doc['partitions']} partitions, "
                                  f"--partitions asks for {partitions} (a checkpoint resumes with its own count)")
        missing = [f for t in doc["tags"] for p in range(doc["partitions"]) for f in (f"states-{p}-{t}.pkl",)
                   if not os.path.exists(os.path.join(directory, f))]
        missing += [f"frontier-{p}-{doc['tags'][-1]}.pkl" for p in range(doc["partitions"])
                    if not os.path.exists(os.path.join(directory, f"frontier-{p}-{doc['tags'][-1]}.pkl"))]
        if missing:
            raise CheckpointError(f"the checkpoint in {directory} is incomplete: {missing[0]} is missing")
        doc["dir"] = os.path.abspath(directory)
        return doc


def _words(directory: str, doc: dict) -> str:
    return (f"{directory} (level {doc['depth']}, {doc['distinct']} states; "
            f"continue with --resume {directory})")
