"""Sharded folders: a manifest.json and numbered shard files (STEM-NNNNN.SUFFIX), each shard
recorded in the manifest with its size and SHA-256.

    DATASET_FOLDER = ShardedFolder("dataset folder", ("shard",), ".goenv-shard")
    record = DATASET_FOLDER.store(root, DATASET_FOLDER.shard_file(0), data, what="dataset file")
    kept = DATASET_FOLDER.verified_prefix(root, manifest["shards"], what="shard")   # resuming

Every file is written atomically (goenv.files.write_atomic), so an interrupted run leaves whole
files and at most temporaries, which the next run removes; a resumed run keeps the shards whose
files still match their records. Every path is checked to stay inside the folder. Datasets of
graphs and the zoo (goenv.dataset_files, goenv.datasets.zoo.dataset) and labelled datasets
(goenv.labels) are such folders; each owns its manifest's fields and its shards' contents.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from typing import Any, Iterable, Sequence

from goenv._core import InvalidGraph
from goenv.files import MAX_FILE_BYTES, path_inside, read_json_file, read_regular_file, write_atomic

MANIFEST = "manifest.json"
# About 1.5 M shard records (100 M graphs in shards of 64); json.loads needs ~10x in memory.
MAX_MANIFEST_BYTES = 256 << 20
TEMPORARY_MARK = ".tmp-"  # goenv.files.write_atomic's temporary names: .NAME.tmp-PID-RANDOM
_SHA256 = re.compile(r"[0-9a-f]{64}")

__all__ = ["MANIFEST", "MAX_MANIFEST_BYTES", "TEMPORARY_MARK", "ShardedFolder", "goenv_version", "is_sha256",
           "plan_shards", "read_shard"]


def is_sha256(value: Any) -> bool:
    """Whether `value` is a SHA-256 as manifests record it: 64 lowercase hex digits."""
    return isinstance(value, str) and _SHA256.fullmatch(value) is not None


def goenv_version() -> str:
    """The goenv version a manifest records; looked up when called, as goenv sets it after
    importing its modules."""
    return str(getattr(sys.modules.get("goenv"), "__version__", "unknown"))


def plan_shards(count: int, shard_size: int) -> list[dict]:
    """Shard k of `count` items: {"index": k, "first": k * shard_size, "count": its size}."""
    return [{"index": k, "first": first, "count": min(shard_size, count - first)}
            for k, first in enumerate(range(0, count, shard_size))]


def read_shard(path: str, what: str) -> bytes:
    """A shard file's bytes: a regular file of at most MAX_FILE_BYTES (InvalidGraph otherwise)."""
    return read_regular_file(path, MAX_FILE_BYTES, what=what, error=InvalidGraph)


class ShardedFolder:
    """One kind of sharded folder: what its messages call it (`what`) and how its shard files
    are named, STEM-NNNNN.SUFFIX for each of its `stems` (five digits or more). `what`
    arguments name the file in a message, as goenv.files' functions do."""

    def __init__(self, what: str, stems: Sequence[str], suffix: str):
        self.what, self.stems, self.suffix = what, tuple(stems), suffix
        self._shard_name = re.compile(f"({'|'.join(map(re.escape, self.stems))})-(\\d{{5,}}){re.escape(suffix)}")

    def shard_file(self, index: int, stem: str | None = None) -> str:
        """Shard `index`'s file of `stem` (default: the first stem)."""
        return f"{stem or self.stems[0]}-{index:05d}{self.suffix}"

    def path(self, root: str, name: str) -> str:
        """root/name, refused (InvalidGraph) when it resolves outside the folder (a symbolic link
        out of it): a folder reads and writes only its own files."""
        return path_inside(root, name, error=InvalidGraph, what=self.what)

    def shard_names(self, root: str) -> list[str]:
        """The shard files in the folder, sorted by name (whatever kind of file they are)."""
        return sorted(name for name in os.listdir(root) if self._shard_name.fullmatch(name))

    def remove_temporaries(self, root: str, also: Iterable[str] = ()) -> None:
        """Removes what interrupted writers left: write_atomic's temporaries of shard files, of the
        manifest and of names containing a mark in `also` (other files the folder's writer makes)."""
        marks = (self.suffix, MANIFEST, *also)
        for name in os.listdir(root):
            if name.startswith(".") and TEMPORARY_MARK in name and any(mark in name for mark in marks):
                try:
                    os.unlink(os.path.join(root, name))
                except OSError:
                    pass

    def read_manifest(self, root: str, what: str) -> tuple[str, Any]:
        """The manifest's path and parsed JSON, read as a regular file of at most
        MAX_MANIFEST_BYTES; InvalidGraph naming the problem, FileNotFoundError when absent."""
        path = self.path(root, MANIFEST)
        return path, read_json_file(path, MAX_MANIFEST_BYTES, what=what, error=InvalidGraph)

    def write_manifest(self, root: str, manifest: dict, what: str) -> None:
        """Writes the manifest atomically, as indented JSON."""
        write_atomic(self.path(root, MANIFEST), (json.dumps(manifest, indent=1) + "\n").encode("utf-8"), what=what)

    def store(self, root: str, name: str, data, what: str) -> dict:
        """Writes a shard file's bytes (anything with the buffer protocol, not copied) atomically:
        its record {"file", "bytes", "sha256"}."""
        view = memoryview(data)
        write_atomic(self.path(root, name), lambda file: file.write(view), what=what)
        return {"file": name, "bytes": view.nbytes, "sha256": hashlib.sha256(view).hexdigest()}

    def matches(self, root: str, record: dict, what: str) -> bool:
        """Whether the file of a record {"file", "bytes", "sha256"} is a regular file of that size
        and SHA-256 (it is read only when its size matches)."""
        path = self.path(root, record["file"])
        if not os.path.isfile(path) or os.path.getsize(path) != record["bytes"]:
            return False
        return hashlib.sha256(read_shard(path, what)).hexdigest() == record["sha256"]

    def verified_prefix(self, root: str, records: Iterable[dict], what: str) -> list[dict]:
        """The records up to the first whose file is missing, unreadable, outside the folder or
        does not match its size and SHA-256: what a resumed run keeps when shards depend on the
        ones before them."""
        kept = []
        for record in records:
            try:
                if not self.matches(root, record, what):
                    break
            except (InvalidGraph, OSError):
                break
            kept.append(record)
        return kept
