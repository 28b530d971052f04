"""The checkpoint converter (python -m goenv.agents.convert) on hostile legacy archives: every
limit is checked before memory is taken (docs/limits.md), every failure is a goenv exception
naming the file and the field, and peak memory stays within 4x the file plus 64 MB, measured
in a child process (peak RSS reset by /proc/self/clear_refs and read from VmHWM where Linux
offers them; ru_maxrss elsewhere)."""

from __future__ import annotations

import io
import json
import struct
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

import goenv
from helpers import require_agents
from legacy_pickles import floats, framed, glob, integer, legacy_file, module, storage, tensor, text, whole

require_agents()
from goenv.agents import convert  # noqa: E402
from goenv.agents import legacy_archive  # noqa: E402

LEGACY = Path(__file__).resolve().parent / "data" / "legacy" / "go-placement-2dev-format2.agent"
SLACK = 64 << 20


CHILD = textwrap.dedent("""
    import json, resource, sys
    import goenv
    from goenv.agents import convert
    from goenv.agents.agent import native

    native()  # libtorch loaded before the baseline

    def peak():
        # VmHWM where Linux has it: ru_maxrss also counts the parent's size at exec (pytest's)
        try:
            with open("/proc/self/status") as f:
                return 1024 * int(next(l for l in f if l.startswith("VmHWM:")).split()[1])
        except (OSError, StopIteration):
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

    try:  # resets the peak to the current size, so a larger peak while importing hides nothing
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    before = peak()
    try:
        convert.convert(sys.argv[1], sys.argv[2])
        error = None
    except goenv.InvalidArgument as problem:
        error = str(problem)
    print(json.dumps({"error": error, "peak": peak() - before}))
""")


def converted_in_child(tmp_path: Path, data: bytes) -> tuple[str | None, int]:
    """(the goenv error or None, peak memory growth in bytes) of converting `data` in a fresh process;
    the limit 4x the file plus 64 MB is asserted here."""
    source = tmp_path / "hostile.agent"
    source.write_bytes(data)
    done = subprocess.run([sys.executable, "-c", CHILD, str(source), str(tmp_path / "out.agent")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["peak"] <= 4 * len(data) + SLACK, result
    return result["error"], result["peak"]


def refused(data: bytes, match: str) -> str:
    with pytest.raises(goenv.InvalidArgument, match=match) as caught:
        convert.convert_bytes(data)
    return str(caught.value)


def test_the_shipped_legacy_file_converts_within_four_times_its_size(tmp_path):
    error, _ = converted_in_child(tmp_path, LEGACY.read_bytes())
    assert error is None


def test_a_stride_0_tensor_is_refused_before_it_is_copied(tmp_path):
    # 2^29 floats (2 GiB) from one stored value: the last index is in range, every value the same.
    data = legacy_file(whole(module([("weight", tensor(storage("0", 1), 0, [1 << 29], [0]))])), {"0": floats(1)})
    assert len(data) < 1024
    error, _ = converted_in_child(tmp_path, data)
    assert "hostile.agent" in error and "tensor over storage 0" in error and "repeats values" in error


@pytest.mark.parametrize("size, stride, match", [
    ([4, 4], [1, 1], "repeats values"),  # rows overlapping columns
    ([3, 2], [1, 2], "repeats values"),  # the second dim steps over fewer values than the first spans
    ([4], [1], "reaches value 4, its storage holds 4"),  # offset 1 pushes the last one out
])
def test_overlapping_and_out_of_range_views_are_refused(size, stride, match):
    offset, values = (1, 4) if match.startswith("reaches") else (0, 16)
    data = legacy_file(whole(module([("weight", tensor(storage("0", values), offset, size, stride))])),
                       {"0": floats(values)})
    refused(data, match)


def test_views_that_do_not_overlap_keep_their_values():
    # A transpose, and a size-1 dim whose stride does not matter (0 here).
    body = module([("weight", tensor(storage("0", 6) + b"q\x00", 0, [3, 2], [1, 3])),
                   ("bias", tensor(b"h\x00", 2, [1, 3], [0, 1]))])
    _, arrays = convert.legacy_contents(legacy_file(whole(body), {"0": floats(6)}))
    np.testing.assert_array_equal(arrays["policy.weight"], np.arange(6, dtype=np.float32).reshape(2, 3).T)
    np.testing.assert_array_equal(arrays["policy.bias"], [[2, 3, 4]])


def shared_storage_file(references: int, elements: int, per_tensor: int) -> bytes:
    """`references` tensors over one storage of `elements` floats, each viewing `per_tensor` of them."""
    first = storage("0", elements) + b"q\x00"
    items = [(f"w{i}", tensor(first if i == 0 else b"h\x00", i % (elements - per_tensor + 1), [per_tensor], [1]))
             for i in range(references)]
    return legacy_file(whole(module(items)), {"0": floats(elements)})


def test_a_storage_named_600_times_is_read_once(tmp_path):
    data = shared_storage_file(600, 1 << 20, 1)  # 4 MB stored once
    _, arrays = convert.legacy_contents(data)
    whole_file = np.frombuffer(data, dtype=np.uint8)
    assert len(arrays) == 600 and all(np.shares_memory(a, whole_file) for a in arrays.values())
    error, _ = converted_in_child(tmp_path, data)  # the policy is not a GO policy: refused, within bounds
    assert error is not None and "hostile.agent" in error


def test_tensors_that_view_a_storage_many_times_over_are_refused(tmp_path):
    data = shared_storage_file(600, 1 << 20, 1 << 20)  # 600 x 4 MB asked of a 4 MB file
    error, _ = converted_in_child(tmp_path, data)
    assert "the tensors hold" in error and "tensor over storage 0" in error and "2x the archive" in error


def test_a_deflated_data_pkl_is_capped_relative_to_the_archive(tmp_path):
    payload = io.BytesIO()
    with zipfile.ZipFile(payload, "w") as archive:
        info = zipfile.ZipInfo("archive/data.pkl")
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as member:
            member.write(whole(b"N"))
            zeros = bytes(16 << 20)
            for _ in range(32):  # 512 MiB of padding after STOP, about 0.5 MB deflated
                member.write(zeros)
    data = framed(payload.getvalue())
    assert len(data) < 1 << 20
    error, _ = converted_in_child(tmp_path, data)
    assert "zip member archive/data.pkl: inflates to" in error and "4x the" in error


def test_a_deflated_data_pkl_that_lies_about_its_size_stops_there():
    real = whole(module([("n", integer(1))])) + bytes(100_000)
    data = legacy_file(real, deflate_pickle=True)
    start = data.index(b"PK\x01\x02")  # the central directory's entry: claim fewer bytes than it holds
    claimed = bytearray(data)
    struct.pack_into("<L", claimed, start + 24, 10)
    refused(bytes(claimed), "cannot convert")


@pytest.mark.parametrize("body", [
    b"](" + b"]" * 3_000_000 + b"e",  # 3 million empty lists in 3 MB
    b"]" + b"".join(b"r" + struct.pack("<L", i) for i in range(2_000_000)),  # 2 million memo entries in 10 MB
])
def test_many_values_are_refused_at_the_limit(body, tmp_path):
    error, _ = converted_in_child(tmp_path, legacy_file(whole(body)))
    assert f"more than {legacy_archive.MAX_VALUES} values" in error and "archive/data.pkl at byte" in error


def test_a_dict_keyed_by_integers_is_refused_before_its_keys_can_collide():
    """Outside-probe finding: 49,000 integer keys of equal hash cost 48 s of dict inserts."""
    keys = b"".join(integer(k) + integer(0) for k in range(3))
    body = glob("__torch__", "Module") + b")\x81}(" + text("d") + b"}(" + keys + b"u" + b"ub"
    refused(legacy_file(whole(body)), "a dict key of type int, not a name")


def test_a_name_that_is_a_lone_surrogate_is_refused_as_invalid_argument():
    """Outside-probe finding: a parameter named by UTF-8-encoded lone surrogate (ED B0 80), which
    the pickle reads, raised UnicodeEncodeError when the converted checkpoint was written."""
    name = b"\xed\xb0\x80ght"
    body = (glob("__torch__", "Module") + b")\x81}(" + b"X" + struct.pack("<I", len(name)) + name
            + tensor(storage("0", 4) + b"q\x00", 0, [4], [1]) + b"ub")
    refused(legacy_file(whole(body), {"0": floats(4)}), "not valid UTF-8")


@pytest.mark.parametrize("name, body", [
    ("modules", b"".join([glob("__torch__", "Module") + b")\x81}(" + text("a")] * 5_000) + b"N" + b"ub" * 5_000),
    ("a persistent id", b")" + b"\x85" * 100_000 + b"Q"),
    ("lists", b"]" * 50_000 + b"a" * 49_999),
])
def test_deep_nesting_is_refused_not_a_recursion_error(name, body, tmp_path):
    message = refused(legacy_file(whole(body)), f"nested more than {legacy_archive.MAX_DEPTH} deep")
    assert "archive/data.pkl at byte" in message


def test_a_module_shared_by_two_parents_is_refused():
    # 30 levels, each naming the one below twice: 2^30 parameter names from a few hundred bytes.
    body = module([("w", tensor(storage("0", 1), 0, [1], [1]))])
    for level in range(1, 31):
        memo = bytes([level])
        body = module([("a", body + b"q" + memo), ("b", b"h" + memo)])
    refused(legacy_file(whole(body), {"0": floats(1)}), "is also a submodule elsewhere")


def test_a_container_filled_after_it_was_placed_is_refused():
    # Filling a list already inside another would make the depth recorded for the outer one stale.
    body = b"]q\x00" + b"(h\x00t" + b"h\x00]a" + b"0" + b"N"
    refused(legacy_file(whole(body)), "filled after it was placed")


def test_a_large_central_directory_is_refused_before_zipfile_reads_it():
    payload = io.BytesIO()
    with zipfile.ZipFile(payload, "w") as archive:
        for i in range(20_000):
            archive.writestr(f"archive/extra/{i:08d}", b"")
    refused(framed(payload.getvalue()), "central directory is .* more than the limit")


def test_the_cli_prints_one_line_naming_the_file_and_exits_non_zero(tmp_path, capsys, monkeypatch):
    deep = tmp_path / "deep.agent"
    deep.write_bytes(legacy_file(whole(b")" + b"\x85" * 100_000 + b"Q")))
    assert convert.main([str(deep), str(tmp_path / "out.agent")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(deep) in err and "nested more than" in err
    assert not (tmp_path / "out.agent").exists()

    def out_of_memory(data):
        raise MemoryError

    monkeypatch.setattr(convert, "legacy_contents", out_of_memory)
    assert convert.main([str(deep), str(tmp_path / "out.agent")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(deep) in err and "out of memory" in err
