"""Fuzz target: dataset manifests and shards (goenv.datasets.open / generate).

A dataset of 5 graphs in 3 shards is made once; each input starts from a fresh
copy of it in a temporary folder. First byte: 0 -> the rest is manifest.json;
1 -> the rest is shard 1 (the manifest resealed to its size and SHA-256, so
reading reaches the container decoder); 2 -> manifest.json as in 0, then
generate() with the dataset's own arguments resumes in the folder.

Only goenv errors may come out. Invariants: nothing outside the folder is read
or written (a decoy file beside it stays unread and unchanged); generate()
without overwrite deletes no shard file, and when it returns, the dataset is
complete and every graph equals a fresh build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import warnings

from fuzz_common import goenv, goenv_errors_only, note, run

from goenv import dataset_files

ARGS = {"shard_size": 2, "seed": 7, "params": {"num_layers": 2, "width": 2}, "progress": False, "workers": 1}
COUNT = 5
BASE = tempfile.mkdtemp(prefix="goenv-fuzz-dataset-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
TEMPLATE = os.path.join(BASE, "template")
dataset_files.generate("random-layered", COUNT, TEMPLATE, **ARGS)
EXPECTED = [goenv.datasets.load("random-layered", seed=ARGS["seed"] + i, **ARGS["params"]).to_bytes()
            for i in range(COUNT)]
WORK = os.path.join(BASE, "work")
DECOY = os.path.join(BASE, "decoy")  # what a manifest entry "../decoy" would reach
with open(DECOY, "wb") as f:
    f.write(b"GOENVSHD" + b"\0" * 8)


def fresh_copy() -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    shutil.copytree(TEMPLATE, WORK)


def read_all() -> None:
    dataset = goenv.datasets.open(WORK)
    note(f"opened {len(dataset.shards)}")
    graphs = [g.to_bytes() for g in dataset]
    assert len(graphs) == len(dataset), "iteration and len() disagree"
    dataset.verify()


def resume() -> None:
    shards = {name for name in os.listdir(WORK) if name.endswith(dataset_files.SHARD_SUFFIX)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            dataset = dataset_files.generate("random-layered", COUNT, WORK, **ARGS)
    finally:
        left = {name for name in os.listdir(WORK) if name.endswith(dataset_files.SHARD_SUFFIX)}
        assert shards <= left, f"generate() without overwrite deleted {sorted(shards - left)}"
    note("resumed")
    assert [g.to_bytes() for g in dataset] == EXPECTED, "a resumed dataset holds other graphs"


def test_one_input(data: bytes) -> None:
    if not data:
        return
    fresh_copy()
    mode, body = data[0] % 3, data[1:]
    if mode == 1:
        with open(os.path.join(WORK, dataset_files.shard_file(1)), "wb") as f:
            f.write(body)
        manifest = json.load(open(os.path.join(WORK, dataset_files.MANIFEST)))
        record = manifest["shards"][1]
        record["bytes"], record["sha256"] = len(body), hashlib.sha256(body).hexdigest()
        body = json.dumps(manifest).encode()
    with open(os.path.join(WORK, dataset_files.MANIFEST), "wb") as f:
        f.write(body)
    with goenv_errors_only(DECOY):
        resume() if mode == 2 else read_all()


if __name__ == "__main__":
    run(test_one_input)
