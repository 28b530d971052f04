"""Legacy (format 1 and 2) goenv checkpoints written by hand: data.pkl opcode by opcode, as
torch's TorchScript writer emits them (protocol 2), stored in a zip and framed as goenv 0.3 did.
Used by the converter's tests and its fuzz target's seed corpus."""

from __future__ import annotations

import io
import struct
import zipfile

import numpy as np


def glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def text(value: str) -> bytes:
    data = value.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def integer(value: int) -> bytes:
    return b"J" + struct.pack("<i", value)


def ints(values) -> bytes:
    return b"(" + b"".join(integer(v) for v in values) + b"t"


def storage(key: str, numel: int, kind: str = "FloatStorage") -> bytes:
    pid = b"(" + text("storage") + glob("torch", kind) + text(key) + text("cpu") + integer(numel) + b"t"
    return pid + b"Q"


def tensor(storage_ref: bytes, offset: int, size, stride) -> bytes:
    hooks = glob("collections", "OrderedDict") + b")R"
    return (glob("torch._utils", "_rebuild_tensor_v2") + b"(" + storage_ref + integer(offset) + ints(size)
            + ints(stride) + b"\x89" + hooks + b"tR")


def module(items: list[tuple[str, bytes]]) -> bytes:
    body = b"".join(text(key) + value for key, value in items)
    return glob("__torch__", "Module") + b")\x81}(" + body + b"ub"


def whole(body: bytes) -> bytes:
    return b"\x80\x02" + body + b"."


def legacy_file(pickled: bytes, storages: dict[str, bytes] | None = None, version: int = 1,
                deflate_pickle: bool = False) -> bytes:
    payload = io.BytesIO()
    with zipfile.ZipFile(payload, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", pickled,
                         compress_type=zipfile.ZIP_DEFLATED if deflate_pickle else zipfile.ZIP_STORED)
        for key, data in (storages or {}).items():
            archive.writestr(f"archive/data/{key}", data)
    return framed(payload.getvalue(), version)


def framed(payload: bytes, version: int = 1) -> bytes:
    head = b"config.algorithm=go\nhas_policy=1\n"
    return b"GOENVAGT" + struct.pack("<QQ", version, len(head)) + head + struct.pack("<QQ", len(payload), 0) + payload


def floats(count: int) -> bytes:
    return np.arange(count, dtype=np.float32).tobytes()
