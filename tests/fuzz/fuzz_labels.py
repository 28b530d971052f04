"""Fuzz target: labelled datasets (goenv.labels.Labels: the manifest and its Parquet shards).

A labelled dataset of 3 graphs in 2 shards is made once; each input starts from a copy of it
in a temporary folder (shard 1's files and the manifest written again from the template). First byte: 0 -> the rest is manifest.json; 1 or 2 -> the rest
is shard 1's labels (1) or graphs (2) file, the manifest resealed to its size and SHA-256 so
that reading reaches Arrow's Parquet reader and goenv's row checks behind it.

Only goenv errors may come out of opening, reading every graph and decision, the tables and
verify(). Invariant: nothing outside the folder is read or written (a decoy file beside it
stays unread and unchanged).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile

from fuzz_common import goenv, goenv_errors_only, note, run

from goenv.labels.folder import MANIFEST, Labels

BASE = tempfile.mkdtemp(prefix="goenv-fuzz-labels-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
TEMPLATE = os.path.join(BASE, "template")
goenv.datasets.generate("random-layered", 3, os.path.join(BASE, "graphs"), seed=7, shard_size=2,
                        params={"num_layers": 2, "width": 2}, progress=False)
goenv.datasets.label(os.path.join(BASE, "graphs"), TEMPLATE, decisions_per_graph=2, shard_size=2, progress=False)
WORK = os.path.join(BASE, "work")
shutil.copytree(TEMPLATE, WORK)
with open(os.path.join(TEMPLATE, MANIFEST), "rb") as f:
    MANIFEST_BYTES = f.read()
FILES = {kind: record["file"] for kind, record in json.loads(MANIFEST_BYTES)["shards"][1]["files"].items()}
ORIGINAL = {name: open(os.path.join(TEMPLATE, name), "rb").read() for name in FILES.values()}
DECOY = os.path.join(BASE, "decoy")  # what a manifest entry "../decoy" would reach
with open(DECOY, "wb") as f:
    f.write(b"PAR1" + b"\0" * 8 + b"PAR1")


def read_all() -> None:
    labels = Labels(WORK)
    note(f"opened {len(labels.shards)}")
    for i in range(len(labels)):
        labels.graph(i)
        labels.decisions(i)
    note("read")
    labels.table("labels")
    labels.table("graphs")
    labels.verify()
    note("verified")


def test_one_input(data: bytes) -> None:
    if not data:
        return
    mode, body = data[0] % 3, data[1:]
    files = dict(ORIGINAL)  # the folder as the template, but for the mutated file (shard 0 is never written)
    if mode:
        manifest = json.loads(MANIFEST_BYTES)
        record = manifest["shards"][1]["files"]["labels" if mode == 1 else "graphs"]
        files[record["file"]] = body
        record["bytes"], record["sha256"] = len(body), hashlib.sha256(body).hexdigest()
        body = json.dumps(manifest).encode()
    for name, content in files.items():
        with open(os.path.join(WORK, name), "wb") as f:
            f.write(content)
    with open(os.path.join(WORK, MANIFEST), "wb") as f:
        f.write(body)
    with goenv_errors_only(DECOY):
        read_all()


if __name__ == "__main__":
    run(test_one_input)
