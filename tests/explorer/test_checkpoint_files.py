"""A checkpoint is data that cannot run code (explorer/strategies/partitions/checkfile.py): a
checkpoint received from someone else -- pickled, altered, truncated,
swapped, of another instance or forged with fresh checksums -- is refused
with E021 naming the file, never a traceback, and nothing in it runs; a
checkpoint that cannot be written is E017 naming the file."""

from __future__ import annotations

import errno
import json
import os
import pickle
import signal
from pathlib import Path

import numpy as np
import pytest

from serq.cli import main

ROOT = Path(__file__).resolve().parents[2]
INST = str(ROOT / "instances" / "vllm_chat.sq")
FLAGS = ["--max-states", "3000"]


@pytest.fixture()
def cp(tmp_path, capsys):
    d = tmp_path / "cp"
    assert main(["explore", INST, "-q", "--no-timing", "--partitions", "2", "--checkpoint", str(d)] + FLAGS) == 13
    capsys.readouterr()
    return d


def resume(d, capsys, inst=INST) -> str:
    code = main(["explore", inst, "-q", "--no-timing", "--resume", str(d)] + FLAGS)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "error[E021]" in err and "Traceback" not in err, err
    return err


def data_files(d, kind):
    return sorted(p for p in d.iterdir() if p.name.startswith(kind + "-"))


class Payload:
    """A pickle that makes a directory when it is loaded."""

    def __init__(self, where):
        self.where = where

    def __reduce__(self):
        return os.mkdir, (str(self.where),)


def test_a_pickled_checkpoint_is_never_loaded(cp, tmp_path, capsys):
    """The format of earlier versions (pickles named by a format-1
    manifest) is refused before any file of it is opened."""
    doc = json.loads((cp / "manifest.json").read_text())
    marker = tmp_path / "the-pickle-ran"
    for p in range(doc["partitions"]):
        for t in doc["tags"]:
            (cp / f"states-{p}-{t}.pkl").write_bytes(pickle.dumps(Payload(marker)))
        (cp / f"frontier-{p}-{doc['tags'][-1]}.pkl").write_bytes(pickle.dumps(Payload(marker)))
    old = {k: v for k, v in doc.items() if k not in ("version", "files", "sha256")}
    old["identity"]["model"].pop("serq")  # as the versions that wrote pickles named a run
    (cp / "manifest.json").write_text(json.dumps({**old, "format": 1}))
    err = resume(cp, capsys)
    assert "checkpoint version 1, this serq reads version 2" in err
    assert not marker.exists()


def test_a_data_file_holds_no_pickle(cp):
    for f in data_files(cp, "states") + data_files(cp, "frontier"):
        assert b"\x80\x05" not in f.read_bytes()[:2] and f.read_bytes().startswith(b'{"')


def test_an_altered_byte_is_found(cp, capsys):
    f = data_files(cp, "states")[-1]
    raw = bytearray(f.read_bytes())
    raw[-3] ^= 0x40
    f.write_bytes(bytes(raw))
    err = resume(cp, capsys)
    assert f"{f}: its checksum does not match its content" in err


def test_a_truncated_file_is_found(cp, capsys):
    f = data_files(cp, "frontier")[0]
    f.write_bytes(f.read_bytes()[:-100])
    assert f"{f}: truncated or extended" in resume(cp, capsys)


def test_a_file_of_another_partition_or_level_is_found(cp, capsys):
    a, b = (cp / "states-0-0.ckpt"), (cp / "states-0-1.ckpt")
    keep = a.read_bytes()
    a.write_bytes(b.read_bytes())
    assert f"{a}: its level is 1, expected 0" in resume(cp, capsys)
    a.write_bytes((cp / "states-1-0.ckpt").read_bytes())
    assert f"{a}: its partition is 1, expected 0" in resume(cp, capsys)
    a.write_bytes(keep)  # the manifest names another file than this one
    from explorer.strategies.partitions.checkpoint import _checksum

    m = cp / "manifest.json"
    doc = json.loads(m.read_text())
    doc["files"][a.name] = "0" * 64
    doc["sha256"] = _checksum(doc)
    m.write_text(json.dumps(doc))
    assert f"{a}: it is not the file the manifest names" in resume(cp, capsys)


def test_a_checkpoint_of_another_instance_is_refused(cp, tmp_path, capsys):
    other = tmp_path / "other.sq"
    other.write_text(Path(INST).read_text() + "\n// another instance\n")
    assert "model.instance is" in resume(cp, capsys, str(other))


def test_an_altered_manifest_is_found(cp, capsys):
    m = cp / "manifest.json"
    doc = json.loads(m.read_text())
    doc["distinct"] -= 1
    m.write_text(json.dumps(doc))
    assert f"{m}: its checksum does not match its content" in resume(cp, capsys)
    m.write_text("{not json")
    assert "not a serq checkpoint manifest" in resume(cp, capsys)


def test_a_pipe_or_a_directory_in_place_of_a_file(cp, capsys):
    f = data_files(cp, "frontier")[0]
    f.unlink()
    os.mkfifo(f)

    def blocked(*_):
        raise AssertionError("reading the checkpoint blocked on a pipe")

    old = signal.signal(signal.SIGALRM, blocked)
    signal.alarm(60)
    try:
        assert f"{f}: not a regular file" in resume(cp, capsys)  # and it does not block
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    f.unlink()
    f.mkdir()
    assert f"{f}: not a regular file" in resume(cp, capsys)


def resign(cp, f, arrays):
    """Write `arrays` into the data file f with a valid header and
    checksum, and the manifest's checksums to match: a forgery."""
    from explorer.strategies.partitions.checkfile import read_arrays, write_arrays
    from explorer.strategies.partitions.checkpoint import _checksum

    head = json.loads(f.read_bytes().split(b"\n", 1)[0])
    stamp = {k: head[k] for k in ("kind", "partition", "level", "instance", "serq")}
    sha = write_arrays(str(f), stamp, arrays)
    m = cp / "manifest.json"
    doc = json.loads(m.read_text())
    doc["files"][f.name] = sha
    doc["sha256"] = _checksum(doc)
    m.write_text(json.dumps(doc))
    assert read_arrays(str(f), stamp, sha).keys() == arrays.keys()


def read(f):
    from explorer.strategies.partitions.checkfile import read_arrays

    return read_arrays(str(f), {}, None)


@pytest.mark.parametrize("change,why", [
    (lambda a: a.update(parent=a["parent"] + 10**6), "a value of `parent` is out of range"),
    (lambda a: a.update(ids=a["ids"][::-1].copy()), "not in increasing order"),
    (lambda a: a.update(fp=a["fp"][:-1]), "its arrays have different lengths"),
    (lambda a: a.update(fp=a["fp"].astype(np.int64)), "its arrays are not those of a states file"),
    (lambda a: a.pop("edge_ids"), "its arrays are not those of a states file"),
])
def test_a_forged_states_file_is_refused(cp, capsys, change, why):
    f = data_files(cp, "states")[-1]
    arrays = read(f)
    change(arrays)
    resign(cp, f, arrays)
    assert why in resume(cp, capsys)


@pytest.mark.parametrize("change,why", [
    (lambda a: a.update({"0.lo": a["0.lo"][:-1], "0.hi": a["0.hi"][:-1]}), "rows of"),
    (lambda a: a.update({"0.hi": a["0.hi"] + 2**40}), "packed words do not fit its layout"),
    (lambda a: a.update({"0.hi": a["0.lo"] - 1}), "column range out of bounds"),
    (lambda a: a.update({"0.ids": a["0.ids"] + 10**6}), "a frontier state's id is out of range"),
    (lambda a: a.update({"7.evil": np.zeros(1, np.int64)}), "holds arrays it should not"),
])
def test_a_forged_frontier_is_refused(cp, capsys, change, why):
    f = next(x for x in data_files(cp, "frontier") if "0.lo" in read(x))
    arrays = read(f)
    change(arrays)
    resign(cp, f, arrays)
    assert why in resume(cp, capsys)


def test_an_object_array_is_refused(cp, capsys):
    """A file whose header names a pickled (object) array, checksums and
    all: refused from its header, never unpickled."""
    from explorer.strategies.partitions.checkfile import read_arrays

    f = data_files(cp, "states")[0]
    arrays = read(f)
    arrays["fp"] = np.array([Payload(cp / "ran")], dtype=object)
    head = json.loads(f.read_bytes().split(b"\n", 1)[0])
    stamp = {k: head[k] for k in ("kind", "partition", "level", "instance", "serq")}
    from explorer.strategies.partitions import checkfile

    orig = np.lib.format.write_array
    try:
        np.lib.format.write_array = lambda fp, a, allow_pickle=False: orig(fp, a, allow_pickle=True)
        sha = checkfile.write_arrays(str(f), stamp, arrays)
    finally:
        np.lib.format.write_array = orig
    with pytest.raises(checkfile.CheckpointError, match="an array of type object"):
        read_arrays(str(f), stamp, sha)
    assert not (cp / "ran").exists()


def test_resumed_from_its_files_gives_the_same_result(cp, capsys):
    assert main(["explore", INST, "-q", "--no-timing", "--resume", str(cp)] + FLAGS) == 13
    assert "distinct=3000" in capsys.readouterr().out


def test_a_checkpoint_that_cannot_be_written(tmp_path, monkeypatch, capsys):
    def no_space(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    d = tmp_path / "cp"
    monkeypatch.setattr(os, "fsync", no_space)
    code = main(["explore", INST, "-q", "--partitions", "2", "--checkpoint", str(d)] + FLAGS)
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"error[E017]: cannot write {d}/states-0-0.ckpt: No space left on device" in err, err
    assert not [n for n in os.listdir(d) if n.endswith(".tmp")]
