"""Shared pieces of the atheris fuzz targets in this folder.

A target is run as `python tests/fuzz/fuzz_<name>.py [libFuzzer args] [corpus dirs]`
(see the Makefile's `fuzz` target and docs/limits.md). Every
target accepts only goenv's own exceptions (goenv.Error and subclasses) from the
code under test; anything else (a crash, a sanitizer report, a UnicodeDecodeError,
an OverflowError, a non-finite number where goenv promises finite ones) is a finding.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import local_goenv  # noqa: E402,F401  (GOENV_PACKAGE_DIR: fuzz a sanitizer-built goenv._core)

import numpy as np  # noqa: E402

import goenv  # noqa: E402

GRAPH_MAGIC = b"GOENVGRF"
CLUSTER_MAGIC = b"GOENVCLU"
FORMAT_VERSION = 2
HEADER = 28  # magic[8] | version u32 | payload size u64 | checksum64 u64


def checksum64(data: bytes) -> int:
    """core/serialization.cc's checksum64 (FNV-1a mixing over little-endian 64-bit words, then the tail)."""
    h, prime, mask = 14695981039346656037, 1099511628211, 2**64 - 1
    words = len(data) // 8
    if words:
        for word in np.frombuffer(data, dtype="<u8", count=words).tolist():
            h = ((h ^ word) * prime) & mask
    for byte in data[words * 8:]:
        h = ((h ^ byte) * prime) & mask
    return h


def seal(magic: bytes, payload: bytes) -> bytes:
    """A file envelope that matches `payload`: the fuzzer then reaches the decoder, not the checksum."""
    return magic + struct.pack("<IQQ", FORMAT_VERSION, len(payload), checksum64(payload)) + payload


def rich_graph() -> goenv.Graph:
    """Six ops with groups, colocation, measured costs and a fusible chain."""
    edge_index = np.array([[0, 1, 1, 2, 3, 4], [1, 2, 3, 4, 4, 5]])
    return goenv.Graph.from_arrays(
        edge_index, flops=np.array([1e9, 2e6, 0, 3e9, 1e6, 5e5]),
        output_bytes=np.array([4e6, 4e6, 1e3, 8e6, 4e6, 4]), param_bytes=np.array([1e6, 0, 0, 2e7, 0, 0]),
        op_type=["MatMul", "Relu", "Add", "Conv2D", "Sum", "Softmax"],
        cost_us=np.array([np.nan, 3.0, 0.0, np.nan, np.nan, np.nan]),
        group=np.array([0, 0, 1, 1, 2, 2]), colocation=np.array([-1, -1, 0, 0, -1, -1]),
        names=["in", "relu", "add", "conv", "sum", "out/é"], name="fuzz")


def check_finite(obs: dict, reward: float | None = None, info: dict | None = None) -> None:
    for key in ("node_state", "globals", "node_features", "edge_features"):
        assert np.isfinite(obs[key]).all(), f"non-finite {key}"
    if reward is not None:
        assert np.isfinite(reward), f"non-finite reward {reward}"
    if info is not None:
        for key in ("runtime", "initial_runtime", "speedup"):
            assert np.isfinite(info[key]), f"non-finite info[{key!r}] = {info[key]}"


# goenv._core is not instrumented, so libFuzzer sees no C++ coverage. The C++
# code names its rejection site ("[core/graph.cc:123]") in every error; each
# distinct site (and "accepted") calls its own instrumented function, which
# libFuzzer sees as new coverage: inputs reaching new checks are kept and mutated.
# The sites are capped: atheris's coverage counters are a fixed region, and a target whose
# messages vary (the converter's name their byte offsets and fields) once filled it and died
# with a "deadly signal" that was no goenv crash. Past the cap, keys share sites by hash.
_SITES: dict[str, object] = {}
_SITE = re.compile(r"\[([^\[\]]+:\d+)\]")
MAX_SITES = 512


def note(event: object) -> None:
    """Records which check an input reached: an exception (its C++ site) or a string."""
    import atheris

    match = _SITE.search(str(event)) if isinstance(event, BaseException) else None
    key = match.group(1) if match else f"{type(event).__name__}:{event if isinstance(event, str) else ''}"
    if key not in _SITES and len(_SITES) >= MAX_SITES:
        key = list(_SITES)[zlib.crc32(key.encode("utf-8", "replace")) % MAX_SITES]
    site = _SITES.get(key)
    if site is None:
        namespace: dict = {}
        exec(f"def site_{len(_SITES)}():\n    return {len(_SITES)}\n", namespace)
        site = _SITES[key] = atheris.instrument_func(namespace[f"site_{len(_SITES)}"])
    site()


@contextlib.contextmanager
def goenv_errors_only(decoy: str):
    """Runs a fuzzed folder's reads: a goenv error is noted by the check that raised it (not its
    values), any other exception is a finding, and `decoy`, a file beside the folder where an entry
    such as "../decoy" would reach, must stay unread and unchanged."""
    before = os.stat(decoy)
    try:
        yield
    except goenv.Error as error:
        note(re.sub(r"['\"(\[{].*|\d+", "", str(error).split(": ", 1)[-1])[:48])
    finally:
        now = os.stat(decoy)
        assert (now.st_atime_ns, now.st_mtime_ns, now.st_size) == (
            before.st_atime_ns, before.st_mtime_ns, before.st_size), "a file outside the folder was used"


def run(test_one_input) -> None:
    import atheris

    atheris.Setup(sys.argv, atheris.instrument_func(test_one_input))
    atheris.Fuzz()
