"""Checkpoints of a partitioned BFS (`strategies/partitions/driver.py`) at level boundaries.

A checkpoint directory holds, per partition p and saved level t,
`states-p-t.ckpt` (the states the partition stored since the previous
save, with their non-progress edges) and `frontier-p-t.ckpt` (its frontier
at that boundary), and one `manifest.json`: what the run is (the model's
identity as its caller gives it, the search flags, the partition count),
the saved levels, the driver's counters and the checksum of every data
file, under a checksum of its own. The data files are numpy arrays behind
a JSON header (`checkfile.py`): nothing in a checkpoint can run code when
it is read, and a file altered, truncated, swapped or written by another
run or another version is refused with a CheckpointError naming it.

Every file is written under a temporary name and renamed into place
(explorer.runtime.outfile); the manifest is renamed last, so it always names
complete files: a run killed while saving resumes from the previous level.
Frontier files of older levels are removed once the manifest no longer
names them.

The partitions write their own files: on a cluster of several machines the
directory must be the same shared path on every node."""

from __future__ import annotations

import hashlib
import json
import os
import re

from explorer.strategies.partitions.checkfile import FORMAT, VERSION, CheckpointError, unresumable
from explorer.runtime.infile import NotReadable, read_regular
from explorer.runtime.outfile import write_output

__all__ = ["Checkpoint", "CheckpointError", "MANIFEST", "file_name"]

MANIFEST = "manifest.json"
MAX_MANIFEST = 64 << 20  # bytes
MAX_PARTITIONS = 1 << 16
_SHA = re.compile(r"[0-9a-f]{64}\Z")


def file_name(kind: str, partition: int, tag: int) -> str:
    """`states-P-T.ckpt` or `frontier-P-T.ckpt`."""
    return f"{kind}-{partition}-{tag}.ckpt"


def _checksum(doc: dict) -> str:
    body = {k: v for k, v in doc.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


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
            self.info = {k: v for k, v in state.items() if k != "dir"}  # its files and their checksums
        else:
            self.require_fresh()

    @staticmethod
    def stamp_of(identity: dict) -> dict:
        """What every data file's header says of the run (checkfile.py):
        its instance and the serq version that wrote it."""
        model = identity.get("model", {})
        return {"instance": model.get("instance"), "serq": model.get("serq")}

    def commit(self, tag: int, info: dict, files: dict[str, str]) -> None:
        """Name the files of level `tag` (already written; `files`: their
        checksums) in the manifest."""
        tags = [t for t in self.tags if t != tag] + [tag]
        old = set(self.tags) - {tag}
        kept = dict((self.info or {}).get("files", {}))
        for t in old:
            for p in range(self.partitions):
                kept.pop(file_name("frontier", p, t), None)
        kept.update(files)
        doc = {"format": FORMAT, "version": VERSION, "identity": self.identity, "partitions": self.partitions,
               "tags": tags, "files": kept, **info}
        doc["sha256"] = _checksum(doc)
        write_output(os.path.join(self.dir, MANIFEST), json.dumps(doc, indent=1, sort_keys=True))
        self.tags, self.info = tags, doc
        for t in old:
            for p in range(self.partitions):
                try:
                    os.remove(os.path.join(self.dir, file_name("frontier", p, t)))
                except FileNotFoundError:
                    pass

    def describe_last(self) -> str | None:
        if self.info is None:
            return Checkpoint.describe(self.dir)
        return _words(self.dir, self.info)

    @staticmethod
    def describe(directory: str) -> str | None:
        try:
            doc = _manifest(directory)
        except CheckpointError:
            return None
        return _words(os.path.abspath(directory), doc)

    @staticmethod
    def read(directory: str, identity: dict, partitions: int | None) -> dict:
        """The manifest of a checkpoint made by the same run (refused with
        CheckpointError otherwise), with "dir" added."""
        if not os.path.isdir(directory):
            raise CheckpointError(f"no checkpoint directory {directory}")
        doc = _manifest(directory)
        path = os.path.join(directory, MANIFEST)
        d = _diff(doc["identity"], identity)
        if d:
            raise CheckpointError(f"the checkpoint in {directory} was written by another run: {d}")
        if partitions is not None and partitions != doc["partitions"]:
            raise CheckpointError(f"the checkpoint in {directory} has {doc['partitions']} partitions, "
                                  f"--partitions asks for {partitions} (a checkpoint resumes with its own count)")
        want = [file_name("states", p, t) for t in doc["tags"] for p in range(doc["partitions"])]
        want += [file_name("frontier", p, doc["tags"][-1]) for p in range(doc["partitions"])]
        for f in want:
            if f not in doc["files"]:
                raise unresumable(path, f"it does not name the file {f}")
            if not os.path.exists(os.path.join(directory, f)):
                raise CheckpointError(f"the checkpoint in {directory} is incomplete: {f} is missing")
        doc["dir"] = os.path.abspath(directory)
        return doc


_COUNTERS = ("distinct", "generated", "max_depth", "level0", "nlevel", "depth")


def _manifest(directory: str) -> dict:
    """The manifest of `directory`, its checksum and the type of every
    field checked; CheckpointError naming what is wrong."""
    path = os.path.join(directory, MANIFEST)

    def bad(why: str) -> CheckpointError:
        return unresumable(path, why)

    try:
        text = read_regular(path, MAX_MANIFEST)
    except NotReadable as e:
        if not os.path.lexists(path):
            raise CheckpointError(f"no checkpoint in {directory} ({MANIFEST} is missing)") from None
        raise bad(f"cannot read it ({e.reason})") from None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        raise bad("not a serq checkpoint manifest (not JSON)") from None
    if not isinstance(doc, dict) or doc.get("format") not in (FORMAT, 1):
        raise bad("not a serq checkpoint manifest")
    if doc.get("format") == 1 or doc.get("version") != VERSION:
        v = 1 if doc.get("format") == 1 else doc.get("version")
        raise bad(f"checkpoint version {v!r}, this serq reads version {VERSION}")
    if doc.get("sha256") != _checksum(doc):
        raise bad("its checksum does not match its content (the file was altered or damaged)")
    tags, files, k = doc.get("tags"), doc.get("files"), doc.get("partitions")

    def count(x) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= 0

    if (not isinstance(doc.get("identity"), dict) or not (count(k) and 1 <= k <= MAX_PARTITIONS)
            or not isinstance(tags, list) or not tags or not all(count(t) for t in tags)
            or any(a >= b for a, b in zip(tags, tags[1:])) or not isinstance(files, dict)
            or not all(isinstance(v, str) and _SHA.match(v) for v in files.values())
            or not all(count(doc.get(c)) for c in _COUNTERS) or not isinstance(doc.get("any_cut"), bool)):
        raise bad("a field of the manifest is missing or malformed")
    return doc


def _words(directory: str, doc: dict) -> str:
    return (f"{directory} (level {doc['depth']}, {doc['distinct']} states; "
            f"continue with --resume {directory})")
