"""Converts agent checkpoints of formats 1 and 2 (goenv 0.3 and older: parameters
in a TorchScript archive) to the current format, without running them.

    python -m goenv.agents.convert OLD.agent NEW.agent

Loading a TorchScript archive with torch can run code the file names. This
reads its pickle with goenv.agents.legacy_archive, which interprets it opcode by
opcode into plain stand-ins only: modules become their attribute dicts, tensors
read-only numpy views of the archive's storage bytes; any other name is refused,
so nothing from the file executes, and every size is bounded by the file's
(docs/limits.md).
Everything carries over: options, spec, counters, parameters, Adam's moments,
both generators and the teachers. The result is checked by loading it.
"""

from __future__ import annotations

import os
import pickle
import struct
import sys
import zipfile
import zlib

import numpy as np

from goenv._core import InvalidArgument
from goenv.agents.legacy_archive import TENSOR_RATIO, Module, read_module_tree
from goenv.agents.native import native
from goenv.files import new_output_path, read_regular_file, write_atomic

LEGACY_MAGIC = b"GOENVAGT"


def _flatten(module: Module, prefix: str = "", seen: set | None = None) -> dict:
    """A module's arrays by dotted name, depth first: the order of LibTorch's named_parameters().
    A submodule reached twice is refused: shared ones would multiply the names, 2^depth of them."""
    seen = set() if seen is None else seen
    if id(module) in seen:
        raise ValueError(f"module {prefix[:-1] or 'policy'} is also a submodule elsewhere")
    seen.add(id(module))
    out = {}
    for key, value in module.state.items():
        if isinstance(value, np.ndarray):
            out[prefix + key] = value
        elif isinstance(value, Module):
            out.update(_flatten(value, f"{prefix}{key}.", seen))
    return out


def _adam_arrays(optimizer: Module, names: list[str], shapes: list[tuple]) -> dict:
    """Adam's state per parameter, {name: (array, dtype it is written as)}: the archive keys it by
    parameter address, in param_groups order."""
    groups = optimizer.state.get("param_groups")
    states = optimizer.state.get("state")
    if not isinstance(groups, Module) or not isinstance(states, Module):
        raise ValueError("its optimizer archive has no param_groups or state")
    group = groups.state.get("param_groups/0")
    if not isinstance(group, Module):
        raise ValueError("its optimizer archive has no parameter group")
    addresses = [group.state.get(f"params/{i}") for i in range(len(names))]
    if any(not isinstance(a, str) for a in addresses) or f"params/{len(names)}" in group.state:
        raise ValueError(f"its optimizer does not list the policy's {len(names)} parameters")
    out = {}
    for name, shape, address in zip(names, shapes, addresses):
        state = states.state.get(address)
        if state is None:
            continue  # a parameter that never had a gradient
        if not isinstance(state, Module):
            raise ValueError(f"Adam's state of {name} is not a module")
        moments = [state.state.get("exp_avg"), state.state.get("exp_avg_sq")]
        if not all(isinstance(m, np.ndarray) and m.shape == shape for m in moments):
            raise ValueError(f"Adam's moments of {name} do not have its shape {shape}")
        out[f"adam.{name}.step"] = (np.array([int(state.state.get("step", 0))], dtype=np.int64), np.int64)
        out[f"adam.{name}.exp_avg"] = (moments[0], np.float32)
        out[f"adam.{name}.exp_avg_sq"] = (moments[1], np.float32)
    return out


def _written(planned: dict, archive_size: int) -> dict:
    """The arrays as written, {name: contiguous array of its dtype}, once their total size is
    known to fit: TENSOR_RATIO x the archive (the tensors are views of it; a dtype that widens,
    bytes read as floats, must not multiply what the file holds)."""
    total = sum(value.size * np.dtype(dtype).itemsize for value, dtype in planned.values())
    limit = TENSOR_RATIO * archive_size
    if total > limit:
        raise ValueError(f"its arrays would take {total} bytes as written, more than the limit of {limit} "
                         f"({TENSOR_RATIO}x the {archive_size}-byte archive)")
    return {name: np.ascontiguousarray(value, dtype=dtype) for name, (value, dtype) in planned.items()}


def legacy_contents(data: bytes) -> tuple[dict, dict]:
    """(metadata strings, arrays by name) of a format 1 or 2 checkpoint, read without running it;
    the arrays may be read-only views of `data`."""
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
    payload = memoryview(data)[24 + header_size + 16:]  # a view: the archive is never copied
    if payload_size != len(payload):
        raise ValueError("truncated checkpoint")
    metadata = {"version": "0", "updates": "0", "schedule_origin": "0", "next_slot": "0"}
    for line in header.splitlines():
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"bad header line {line[:80]!r}")
        if key == "teacher":
            teacher_key, _, rest = value.partition(";")
            metadata[f"teacher.{teacher_key}"] = rest
        else:
            metadata[key] = value
    if metadata.get("has_policy") != "1":
        return metadata, {}
    tree = read_module_tree(payload)
    if not isinstance(tree, Module):
        raise ValueError("the payload's root is not a module")
    policy = tree.state.get("policy", tree) if version == 2 else tree
    if not isinstance(policy, Module):
        raise ValueError("the payload has no policy")
    parameters = _flatten(policy)
    planned = {f"policy.{name}": (value, np.float32) for name, value in parameters.items()}
    if version == 2:
        optimizer = tree.state.get("optimizer")
        if not isinstance(optimizer, Module):
            raise ValueError("the payload has no optimizer")
        planned.update(_adam_arrays(optimizer, list(parameters), [v.shape for v in parameters.values()]))
        for old, new in (("sampler", "generator.sampling"), ("shuffler", "generator.shuffling")):
            if not isinstance(tree.state.get(old), np.ndarray):
                raise ValueError(f"the payload has no {old} state")
            planned[new] = (tree.state[old], np.uint8)
        for key, value in tree.state.items():
            if isinstance(key, str) and key.startswith("teacher.") and isinstance(value, np.ndarray):
                planned[key] = (value, np.int64)
    return metadata, _written(planned, len(payload))


def convert_bytes(data: bytes) -> bytes:
    """The current format of a format 1 or 2 checkpoint's bytes; goenv.InvalidArgument when it is not one."""
    try:
        metadata, arrays = legacy_contents(data)
        for text in (*metadata, *metadata.values(), *arrays):
            if not text.isascii():
                try:  # a pickle may hold lone surrogates; a checkpoint's names and values are UTF-8
                    text.encode("utf-8")
                except UnicodeEncodeError:
                    raise ValueError(f"a name or value in the archive is not valid UTF-8 ({text[:80]!r})") from None
    except (ValueError, KeyError, UnicodeDecodeError, struct.error, zipfile.BadZipFile, zipfile.LargeZipFile,
            pickle.UnpicklingError, EOFError, TypeError, AttributeError, IndexError, OverflowError,
            NotImplementedError, zlib.error) as error:
        raise InvalidArgument(f"cannot convert: {error}") from error
    except RecursionError as error:  # the reader does not recurse; a last guard all the same
        raise InvalidArgument("cannot convert: the archive nests too deep") from error
    except MemoryError as error:
        raise InvalidArgument(f"cannot convert: out of memory reading a {len(data)}-byte checkpoint") from error
    return native().checkpoint_from_arrays(metadata, arrays)


def convert(source: str | os.PathLike, target: str | os.PathLike, overwrite: bool = False) -> None:
    """Writes the current format of the format 1 or 2 checkpoint `source` to `target`; a file
    already at `target` is refused unless overwrite=True (`source` itself too: keep the old one).
    goenv.InvalidArgument naming `source` when it cannot be converted."""
    new_output_path(target, "checkpoint", overwrite, flag="overwrite=True (--overwrite)")
    try:
        converted = convert_bytes(read_regular_file(source, what="checkpoint"))
    except InvalidArgument as error:
        message = str(error)
        if os.fspath(source) in message:
            raise
        raise InvalidArgument(f"{os.fspath(source)}: {message}") from error
    write_atomic(target, converted, what="checkpoint")


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
        message = " ".join(str(error).split()) or type(error).__name__  # MemoryError() has no message
        print(f"goenv.agents.convert: {message}", file=sys.stderr)
        return 2
    print(f"converted {args.old} -> {args.new}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
