"""Converts agent checkpoints of formats 1 and 2 (goenv 0.3 and older: parameters
in a TorchScript archive) to the current format, without running them.

    python -m goenv.agents.convert OLD.agent NEW.agent

Loading a TorchScript archive with torch can run code the file names. This
reads its pickle with an unpickler that builds plain stand-ins only: modules
become their attribute dicts, tensors numpy arrays over the archive's raw
storage bytes; any other global is refused, so nothing from the file executes.
Everything carries over: options, spec, counters, parameters, Adam's moments,
both generators and the teachers. The result is checked by loading it.
"""

from __future__ import annotations

import io
import os
import pickle
import struct
import sys
import zipfile

import numpy as np

LEGACY_MAGIC = b"GOENVAGT"
MAX_BYTES = 1 << 31  # checkpoints are megabytes; refuse what cannot be one before reading it

_STORAGES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "LongStorage": np.int64,
             "IntStorage": np.int32, "ByteStorage": np.uint8, "BoolStorage": np.bool_}


class _Module:
    """A TorchScript module's attributes, as the pickle sets them."""

    def __init__(self) -> None:
        self.state: dict = {}

    def __setstate__(self, state) -> None:
        if not isinstance(state, dict):
            raise pickle.UnpicklingError("a module's state is not a dict")
        self.state = state


def _rebuild_tensor(storage, offset, size, stride, *_):
    """torch._utils._rebuild_tensor_v2, as a bounds-checked numpy copy of the storage."""
    if not isinstance(storage, np.ndarray):
        raise pickle.UnpicklingError("a tensor without a storage")
    size, stride, offset = tuple(int(s) for s in size), tuple(int(s) for s in stride), int(offset)
    if len(size) != len(stride) or offset < 0 or any(s < 0 for s in size + stride):
        raise pickle.UnpicklingError("a tensor with a bad size or stride")
    if 0 not in size:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
        if last >= storage.size:
            raise pickle.UnpicklingError("a tensor reaches past its storage")
    itemsize = storage.dtype.itemsize
    return np.lib.stride_tricks.as_strided(storage[offset:], shape=size,
                                           strides=[s * itemsize for s in stride]).copy()


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, archive: zipfile.ZipFile, root: str) -> None:
        super().__init__(io.BytesIO(data))
        self.archive, self.root = archive, root

    def find_class(self, module: str, name: str):
        if (module == "__torch__" or module.startswith("__torch__.")) and name == "Module":
            return _Module
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch" and name in _STORAGES:
            return _STORAGES[name]
        if module == "collections" and name == "OrderedDict":
            return dict
        raise pickle.UnpicklingError(f"refused {module}.{name}: only modules, tensors and storages are read")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and pid[1] in _STORAGES.values()):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        _, dtype, key, _location, numel = pid
        info = self.archive.getinfo(f"{self.root}/data/{key}")
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != int(numel) * np.dtype(dtype).itemsize:
            raise pickle.UnpicklingError(f"storage {key} does not hold {numel} values")
        return np.frombuffer(self.archive.read(info), dtype=dtype)


def _flatten(module: _Module, prefix: str = "") -> dict:
    """A module's arrays by dotted name, depth first: the order of LibTorch's named_parameters()."""
    out = {}
    for key, value in module.state.items():
        if isinstance(value, np.ndarray):
            out[prefix + key] = value
        elif isinstance(value, _Module):
            out.update(_flatten(value, f"{prefix}{key}."))
    return out


def _adam_arrays(optimizer: _Module, names: list[str], shapes: list[tuple]) -> dict:
    """Adam's state per parameter: the archive keys it by parameter address, in param_groups order."""
    groups = optimizer.state.get("param_groups")
    states = optimizer.state.get("state")
    if not isinstance(groups, _Module) or not isinstance(states, _Module):
        raise ValueError("its optimizer archive has no param_groups or state")
    group = groups.state.get("param_groups/0")
    if not isinstance(group, _Module):
        raise ValueError("its optimizer archive has no parameter group")
    addresses = [group.state.get(f"params/{i}") for i in range(len(names))]
    if any(not isinstance(a, str) for a in addresses) or f"params/{len(names)}" in group.state:
        raise ValueError(f"its optimizer does not list the policy's {len(names)} parameters")
    out = {}
    for name, shape, address in zip(names, shapes, addresses):
        state = states.state.get(address)
        if state is None:
            continue  # a parameter that never had a gradient
        moments = [state.state.get("exp_avg"), state.state.get("exp_avg_sq")]
        if not all(isinstance(m, np.ndarray) and m.shape == shape for m in moments):
            raise ValueError(f"Adam's moments of {name} do not have its shape {shape}")
        out[f"adam.{name}.step"] = np.array([int(state.state.get("step", 0))], dtype=np.int64)
        out[f"adam.{name}.exp_avg"] = moments[0].astype(np.float32)
        out[f"adam.{name}.exp_avg_sq"] = moments[1].astype(np.float32)
    return out


def legacy_contents(data: bytes) -> tuple[dict, dict]:
    """(metadata strings, arrays by name) of a format 1 or 2 checkpoint, read without running it."""
    if data[:8] != LEGACY_MAGIC or len(data) < 24:
        if data[8:9] == b"{" and b'"goenv-agent"' in data[8:8 + min(len(data), 1 << 16)]:
            raise ValueError("it is already a current (format 3, safetensors) goenv agent checkpoint: "
                             "goenv.agents.load reads it; nothing to convert")
        raise ValueError("not a format 1 or 2 goenv agent checkpoint (no GOENVAGT magic)")
    version, header_size = struct.unpack_from("<QQ", data, 8)
    if version not in (1, 2) or header_size > len(data) - 24 - 16:
        raise ValueError(f"not a readable format 1 or 2 checkpoint (format {version})")
    header = data[24:24 + header_size].decode("utf-8")
    payload_size = struct.unpack_from("<Q", data, 24 + header_size)[0]
    payload = data[24 + header_size + 16:]
    if payload_size != len(payload):
        raise ValueError("truncated checkpoint")
    metadata = {"version": "0", "updates": "0", "schedule_origin": "0", "next_slot": "0"}
    for line in header.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"bad header line {line!r}")
        if key == "teacher":
            teacher_key, _, rest = value.partition(";")
            metadata[f"teacher.{teacher_key}"] = rest
        else:
            metadata[key] = value
    arrays: dict = {}
    if metadata.get("has_policy") != "1":
        return metadata, arrays
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise ValueError("the payload is not one TorchScript archive")
        root = pickles[0].split("/")[0]
        tree = _Unpickler(archive.read(pickles[0]), archive, root).load()
    if not isinstance(tree, _Module):
        raise ValueError("the payload's root is not a module")
    policy = tree.state.get("policy", tree) if version == 2 else tree
    if not isinstance(policy, _Module):
        raise ValueError("the payload has no policy")
    parameters = _flatten(policy)
    arrays.update({f"policy.{name}": np.ascontiguousarray(value, dtype=np.float32)
                   for name, value in parameters.items()})
    if version == 2:
        arrays.update(_adam_arrays(tree.state["optimizer"], list(parameters),
                                   [v.shape for v in parameters.values()]))
        for old, new in (("sampler", "generator.sampling"), ("shuffler", "generator.shuffling")):
            arrays[new] = np.ascontiguousarray(tree.state[old], dtype=np.uint8)
        for key, value in tree.state.items():
            if key.startswith("teacher.") and isinstance(value, np.ndarray):
                arrays[key] = np.ascontiguousarray(value, dtype=np.int64)
    return metadata, arrays


def convert_bytes(data: bytes) -> bytes:
    """The current format of a format 1 or 2 checkpoint's bytes; goenv.InvalidArgument when it is not one."""
    from goenv._core import InvalidArgument
    from goenv.agents.agent import native

    try:
        metadata, arrays = legacy_contents(data)
    except (ValueError, KeyError, UnicodeDecodeError, struct.error, zipfile.BadZipFile, pickle.UnpicklingError,
            EOFError, TypeError, AttributeError, IndexError, OverflowError) as error:
        raise InvalidArgument(f"cannot convert: {error}") from error
    return native().checkpoint_from_arrays(metadata, arrays)


def convert(source: str | os.PathLike, target: str | os.PathLike, overwrite: bool = False) -> None:
    """Writes the current format of the format 1 or 2 checkpoint `source` to `target`; a file
    already at `target` is refused unless overwrite=True (`source` itself too: keep the old one)."""
    from goenv.files import new_output_path, read_regular_file, write_atomic

    new_output_path(target, "checkpoint", overwrite, flag="overwrite=True (--overwrite)")
    write_atomic(target, convert_bytes(read_regular_file(source, what="checkpoint")), what="checkpoint")


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m goenv.agents.convert", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 2)[2], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old", metavar="OLD.agent", help="a format 1 or 2 checkpoint (goenv 0.3 and older)")
    parser.add_argument("new", metavar="NEW.agent", help="where the current format is written (atomically)")
    parser.add_argument("--overwrite", action="store_true", help="replace NEW.agent if it exists")
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # --help (0) or a usage error (2): a status, as from a failed conversion
        return int(done.code or 0)
    try:
        convert(args.old, args.new, overwrite=args.overwrite)
    except Exception as error:  # noqa: BLE001  (one line, like the CLI)
        print(f"goenv.agents.convert: {error}", file=sys.stderr)
        return 2
    print(f"converted {args.old} -> {args.new}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
