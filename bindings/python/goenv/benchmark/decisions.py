"""Decisions in results files: each head's per-node values as little-endian int32, zlib-compressed
and base64-encoded, so a file of thousands of decisions stays small. Decoding is bounded by the
graph's node count before anything is decompressed past it."""

from __future__ import annotations

import base64
import binascii
import zlib
from typing import Mapping

import numpy as np

from goenv._core import InvalidArgument

HEADS = ("placement", "priority", "fusion")
TASK_HEADS = {"placement": ("placement",), "scheduling": ("priority",), "fusion": ("fusion",), "joint": HEADS}


def as_heads(action, task: str) -> dict[str, np.ndarray]:
    """An env action (an array for one head, a dict for joint) as {head: int array}."""
    if isinstance(action, Mapping):
        heads = {str(head): values for head, values in action.items()}
    else:
        heads = {heads_of(task)[0]: action}
    out = {}
    for head, values in heads.items():
        array = np.asarray(values)
        if array.ndim != 1 or not np.all(np.isfinite(array)) or not np.all(array == np.round(array)):
            raise InvalidArgument(f"decision {head!r}: expected one integer per node, got {array.dtype} {array.shape}")
        out[head] = array.astype(np.int64)
    return out


def in_force(core, task: str) -> dict[str, np.ndarray]:
    """The decisions an env core holds now, of the heads `task` decides (colocation moves applied)."""
    return as_heads({head: np.asarray(getattr(core, head)) for head in heads_of(task)}, task)


def heads_of(task: str) -> tuple[str, ...]:
    """The heads a task decides: scheduling decides priorities, joint all three."""
    return TASK_HEADS[task]


def as_action(heads: Mapping[str, np.ndarray], task: str):
    """{head: array} back as the env's action: the array itself for a one-head task."""
    return dict(heads) if task == "joint" else next(iter(heads.values()))


def encode(heads: Mapping[str, np.ndarray]) -> dict[str, str]:
    return {head: base64.b64encode(zlib.compress(np.asarray(values, dtype="<i4").tobytes(), 9)).decode("ascii")
            for head, values in heads.items()}


def decode(encoded, num_nodes: int, where: str) -> dict[str, np.ndarray]:
    """The decision of a results file: InvalidArgument naming `where` unless every head holds
    exactly `num_nodes` values."""
    if not isinstance(encoded, dict) or not encoded or any(head not in HEADS for head in encoded):
        raise InvalidArgument(f"{where}: decisions must map heads ({', '.join(HEADS)}) to encoded values")
    out = {}
    size = 4 * num_nodes
    for head, text in encoded.items():
        try:
            packed = base64.b64decode(text.encode("ascii"), validate=True)
            inflater = zlib.decompressobj()
            raw = inflater.decompress(packed, size + 1)  # never more than one value past the graph
        except (AttributeError, UnicodeError, binascii.Error, zlib.error) as problem:
            raise InvalidArgument(f"{where}: decision {head!r} is not encoded values ({problem})") from None
        if len(raw) != size or not inflater.eof:
            raise InvalidArgument(f"{where}: decision {head!r} does not hold {num_nodes} values (one per node)")
        out[head] = np.frombuffer(raw, dtype="<i4").astype(np.int64)
    return out
