"""goenv.storage: the sharded folder that datasets, the zoo and labels share."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

import goenv
from goenv.storage import (MANIFEST, MAX_MANIFEST_BYTES, TEMPORARY_MARK, ShardedFolder, is_sha256, plan_shards,
                           read_shard)

FOLDER = ShardedFolder("test folder", ("shard",), ".test-shard")
TWO_KINDS = ShardedFolder("test folder", ("graphs", "labels"), ".parquet")


def _store_three(root) -> list[dict]:
    return [FOLDER.store(str(root), FOLDER.shard_file(k), bytes([k]) * (100 + k), "test shard") for k in range(3)]


def test_store_records_the_size_and_sha256_of_what_it_wrote(tmp_path):
    data = b"shard bytes" * 10
    record = FOLDER.store(str(tmp_path), "shard-00007.test-shard", bytearray(data), "test shard")
    assert record == {"file": "shard-00007.test-shard", "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    assert (tmp_path / "shard-00007.test-shard").read_bytes() == data
    assert os.listdir(tmp_path) == ["shard-00007.test-shard"]  # no temporary left
    assert FOLDER.matches(str(tmp_path), record, "test shard")


def test_a_damaged_shard_ends_the_kept_prefix(tmp_path):
    records = _store_three(tmp_path)
    assert FOLDER.verified_prefix(str(tmp_path), records, "test shard") == records
    damaged = bytearray((tmp_path / records[1]["file"]).read_bytes())
    damaged[50] ^= 0xFF  # same size, other bytes: only the checksum tells
    (tmp_path / records[1]["file"]).write_bytes(bytes(damaged))
    assert not FOLDER.matches(str(tmp_path), records[1], "test shard")
    assert FOLDER.verified_prefix(str(tmp_path), records, "test shard") == records[:1]  # shard 2 is whole, not kept
    os.unlink(tmp_path / records[0]["file"])
    assert FOLDER.verified_prefix(str(tmp_path), records, "test shard") == []


def test_a_truncated_or_non_regular_shard_ends_the_prefix(tmp_path):
    records = _store_three(tmp_path)
    with open(tmp_path / records[2]["file"], "r+b") as file:
        file.truncate(10)
    assert FOLDER.verified_prefix(str(tmp_path), records, "test shard") == records[:2]
    os.unlink(tmp_path / records[1]["file"])
    os.mkfifo(tmp_path / records[1]["file"])
    assert FOLDER.verified_prefix(str(tmp_path), records, "test shard") == records[:1]


def test_temporaries_of_the_folders_files_are_removed_and_nothing_else(tmp_path):
    ours = [f".shard-00003.test-shard{TEMPORARY_MARK}12-ab", f".{MANIFEST}{TEMPORARY_MARK}12-cd",
            f".coverage.json{TEMPORARY_MARK}1-ef"]
    others = ["shard-00003.test-shard", MANIFEST, f"notes{TEMPORARY_MARK}1.test-shard",  # not hidden
              ".shard-00003.test-shard", f".picture.png{TEMPORARY_MARK}1-aa", "coverage.json"]
    for name in ours + others:
        (tmp_path / name).write_bytes(b"x")
    FOLDER.remove_temporaries(str(tmp_path), also=("coverage",))
    assert sorted(os.listdir(tmp_path)) == sorted(others)
    (tmp_path / ours[2]).write_bytes(b"x")
    FOLDER.remove_temporaries(str(tmp_path))  # without the mark: not this folder's file
    assert sorted(os.listdir(tmp_path)) == sorted(others + [ours[2]])


def test_shard_names_are_listed_in_order_and_only_shard_names(tmp_path):
    for index in (12, 0, 100000, 3):
        (tmp_path / FOLDER.shard_file(index)).write_bytes(b"")
    for name in ("shard-1.test-shard", "shard-00001.test-shard.bak", "Shard-00001.test-shard", "graphs-00001.parquet",
                 f".shard-00001.test-shard{TEMPORARY_MARK}1-ab"):
        (tmp_path / name).write_bytes(b"")
    os.mkdir(tmp_path / FOLDER.shard_file(7))  # listed whatever kind of file it is
    assert FOLDER.shard_names(str(tmp_path)) == ["shard-00000.test-shard", "shard-00003.test-shard",
                                                 "shard-00007.test-shard", "shard-00012.test-shard",
                                                 "shard-100000.test-shard"]
    assert TWO_KINDS.shard_file(4, "labels") == "labels-00004.parquet"
    assert TWO_KINDS.shard_names(str(tmp_path)) == ["graphs-00001.parquet"]


def test_a_path_outside_the_folder_is_refused(tmp_path):
    root, outside = tmp_path / "folder", tmp_path / "outside"
    root.mkdir()
    outside.write_bytes(b"someone else's file")
    os.symlink(outside, root / FOLDER.shard_file(0))
    with pytest.raises(goenv.InvalidGraph, match="resolves outside the test folder"):
        FOLDER.path(str(root), FOLDER.shard_file(0))
    with pytest.raises(goenv.InvalidGraph, match="resolves outside the test folder"):
        FOLDER.path(str(root), "../outside")
    with pytest.raises(goenv.InvalidGraph, match="resolves outside the test folder"):
        FOLDER.store(str(root), FOLDER.shard_file(0), b"new bytes", "test shard")
    assert outside.read_bytes() == b"someone else's file"
    record = {"file": FOLDER.shard_file(0), "bytes": outside.stat().st_size,
              "sha256": hashlib.sha256(outside.read_bytes()).hexdigest()}
    assert FOLDER.verified_prefix(str(root), [record], "test shard") == []  # matching, but not the folder's


def test_the_manifest_is_written_as_indented_json_and_read_within_its_limit(tmp_path):
    manifest = {"format": "test", "shards": [{"index": 0}]}
    FOLDER.write_manifest(str(tmp_path), manifest, "test manifest")
    assert (tmp_path / MANIFEST).read_bytes() == (json.dumps(manifest, indent=1) + "\n").encode()
    assert FOLDER.read_manifest(str(tmp_path), "test manifest") == (str(tmp_path / MANIFEST), manifest)
    (tmp_path / MANIFEST).write_bytes(b"{not json")
    with pytest.raises(goenv.InvalidGraph, match="not a valid test manifest"):
        FOLDER.read_manifest(str(tmp_path), "test manifest")
    with open(tmp_path / MANIFEST, "r+b") as file:
        file.truncate(MAX_MANIFEST_BYTES + 1)  # sparse: nothing is allocated
    with pytest.raises(goenv.InvalidGraph, match="more than the limit"):
        FOLDER.read_manifest(str(tmp_path), "test manifest")
    os.unlink(tmp_path / MANIFEST)
    with pytest.raises(FileNotFoundError):
        FOLDER.read_manifest(str(tmp_path), "test manifest")


def test_plan_shards_and_sha256s():
    assert plan_shards(5, 2) == [{"index": 0, "first": 0, "count": 2}, {"index": 1, "first": 2, "count": 2},
                                 {"index": 2, "first": 4, "count": 1}]
    assert plan_shards(4, 4) == [{"index": 0, "first": 0, "count": 4}]
    assert is_sha256(hashlib.sha256(b"").hexdigest())
    assert not any(is_sha256(value) for value in ("0" * 63, "A" * 64, "g" * 64, None, 7, b"0" * 64))


def test_read_shard_refuses_what_is_not_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(goenv.InvalidGraph, match="test shard .*fifo: a FIFO"):
        read_shard(str(tmp_path / "fifo"), "test shard")
