"""A TorchScript archive (a legacy agent checkpoint's payload) read into plain stand-ins,
within bounds, without running anything from it.

data.pkl is interpreted here, opcode by opcode, instead of by pickle.Unpickler: only the
opcodes torch writes are known, the only callables are the stand-ins below (modules become
their attribute dicts, tensors read-only numpy views of their storage), and every value is
counted and its nesting depth known before it is placed. Storages are read once, as views
of the archive's own bytes, so what a conversion holds in memory is bounded by multiples of
the file's size (docs/limits.md lists the bounds).
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import numpy as np

MAX_DEPTH = 64  # nesting of lists, dicts, tuples and modules; a checkpoint nests about 10 deep
MAX_VALUES = 100_000  # values and memo entries the pickle may make (a checkpoint makes about 6,000)
MAX_PICKLE_BYTES = 64 << 20  # data.pkl, inflated
MAX_MEMBER_BYTES = 1 << 31
MAX_DIRECTORY_BYTES = 1 << 20  # the zip's central directory (about 80 bytes a member)
MEMBER_RATIO = 4  # no member inflates to more than 4x the archive (torch stores them uncompressed)
TENSOR_RATIO = 2  # all tensors together view the archive's bytes at most twice
MAX_DIMS = 32

STORAGE_DTYPES = {"FloatStorage": np.float32, "DoubleStorage": np.float64, "LongStorage": np.int64,
                  "IntStorage": np.int32, "ByteStorage": np.uint8, "BoolStorage": np.bool_}


class ArchiveError(ValueError):
    """A TorchScript archive that is damaged, hostile or beyond the limits."""


class Module:
    """A TorchScript module's attributes, as the pickle sets them."""

    def __init__(self) -> None:
        self.state: dict = {}


class _Global:
    """A name the pickle refers to: resolved only where a known stand-in is expected."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def is_module(self) -> bool:
        return (self.module == "__torch__" or self.module.startswith("__torch__.")) and self.name == "Module"

    def storage_dtype(self):
        return STORAGE_DTYPES.get(self.name) if self.module == "torch" else None


_KNOWN_GLOBALS = (("torch._utils", "_rebuild_tensor_v2"), ("collections", "OrderedDict"))


class _Storage:
    """One storage member's values (a read-only view of the archive) and its key, for messages."""

    __slots__ = ("key", "values")

    def __init__(self, key: str, values: np.ndarray) -> None:
        self.key, self.values = key, values


class _ViewReader(io.RawIOBase):
    """A seekable file over a memoryview: zipfile reads the archive without it being copied.
    read(n) returns at most what is there, whatever size a header claims."""

    def __init__(self, view: memoryview) -> None:
        super().__init__()
        self._view, self._position = view, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: len(self._view)}[whence]
        self._position = max(0, base + offset)
        return self._position

    def read(self, size: int = -1) -> bytes:
        end = len(self._view) if size is None or size < 0 else min(len(self._view), self._position + size)
        chunk = bytes(self._view[self._position:end]) if end > self._position else b""
        self._position += len(chunk)
        return chunk


def _directory_size(view: memoryview) -> int:
    """The central directory's size as the end records state it (the larger, if ZIP64 has its own):
    zipfile builds an object per entry, so it is bounded before zipfile reads it."""
    tail_start = max(0, len(view) - 22 - 0xFFFF)
    tail = bytes(view[tail_start:])
    end = tail.rfind(b"PK\x05\x06")
    if end < 0 or end + 22 > len(tail):
        raise ArchiveError("the payload is not a zip archive (no end of central directory)")
    size = struct.unpack_from("<L", tail, end + 12)[0]
    record = end - 20 - 56  # zipfile reads a ZIP64 record right before its locator
    zip64 = end >= 20 and tail[end - 20:end - 16] == b"PK\x06\x07"
    if zip64 and record >= 0 and tail[record:record + 4] == b"PK\x06\x06":
        size = max(size, struct.unpack_from("<Q", tail, record + 40)[0])
    return size


class TorchArchive:
    """The members of a TorchScript zip, every size checked before anything is inflated."""

    def __init__(self, payload: memoryview) -> None:
        self.payload = payload
        directory = _directory_size(payload)
        if directory > MAX_DIRECTORY_BYTES:
            raise ArchiveError(f"the zip's central directory is {directory} bytes, more than the limit of "
                               f"{MAX_DIRECTORY_BYTES}")
        self.zip = zipfile.ZipFile(_ViewReader(payload))
        self.member_limit = min(MAX_MEMBER_BYTES, MEMBER_RATIO * len(payload))
        for info in self.zip.infolist():
            if info.file_size > self.member_limit:
                raise ArchiveError(f"zip member {info.filename}: inflates to {info.file_size} bytes, more than the "
                                   f"limit of {self.member_limit} ({MEMBER_RATIO}x the {len(payload)}-byte archive)")
            if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
                raise ArchiveError(f"zip member {info.filename}: stored, yet {info.compress_size} bytes hold "
                                   f"{info.file_size}")
        self.storages: dict[str, _Storage] = {}
        self.tensor_bytes = 0

    def _stored_view(self, info: zipfile.ZipInfo) -> memoryview:
        """A stored member's bytes as a view of the archive, its CRC checked."""
        header_size = struct.calcsize(zipfile.structFileHeader)
        start = info.header_offset
        if start < 0 or start + header_size > len(self.payload):
            raise ArchiveError(f"zip member {info.filename}: its header lies outside the archive")
        fields = struct.unpack_from(zipfile.structFileHeader, self.payload, start)
        if fields[0] != zipfile.stringFileHeader or fields[3] & 0x1:
            raise ArchiveError(f"zip member {info.filename}: no local header there, or encrypted")
        begin = start + header_size + fields[10] + fields[11]
        if begin + info.file_size > len(self.payload):
            raise ArchiveError(f"zip member {info.filename}: its {info.file_size} bytes run past the archive")
        view = self.payload[begin:begin + info.file_size]
        if zlib.crc32(view) != info.CRC:
            raise ArchiveError(f"zip member {info.filename}: bad CRC")
        return view

    def pickle_bytes(self, name: str) -> bytes:
        info = self.zip.getinfo(name)
        limit = min(MAX_PICKLE_BYTES, self.member_limit)
        if info.file_size > limit:
            raise ArchiveError(f"zip member {name}: {info.file_size} bytes, more than the limit of {limit}")
        if info.compress_type == zipfile.ZIP_STORED:
            return bytes(self._stored_view(info))
        if info.compress_type != zipfile.ZIP_DEFLATED:
            raise ArchiveError(f"zip member {name}: compression {info.compress_type} (only stored or deflated)")
        with self.zip.open(info) as member:  # stops at the file_size just checked
            data = member.read(limit + 1)
        if len(data) != info.file_size:
            raise ArchiveError(f"zip member {name}: inflates to {len(data)} bytes, its header says {info.file_size}")
        return data

    def storage(self, root: str, key, dtype, numel) -> _Storage:
        """A storage's values, read once however many tensors name it."""
        if not isinstance(key, str) or type(numel) is not int or numel < 0:
            raise ArchiveError(f"a storage's key {type(key).__name__} or size {type(numel).__name__} is not valid")
        known = self.storages.get(key)
        if known is not None:
            if known.values.dtype != dtype or known.values.size != numel:
                raise ArchiveError(f"storage {root}/data/{key}: named with two dtypes or sizes")
            return known
        name = f"{root}/data/{key}"
        try:
            info = self.zip.getinfo(name)
        except KeyError:
            raise ArchiveError(f"storage {name}: no such zip member") from None
        itemsize = np.dtype(dtype).itemsize
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != numel * itemsize:
            raise ArchiveError(f"storage {name}: does not hold {numel} values of {itemsize} bytes, uncompressed")
        storage = _Storage(key, np.frombuffer(self._stored_view(info), dtype=dtype))
        self.storages[key] = storage
        return storage

    def tensor(self, where: str, storage, offset, size, stride) -> np.ndarray:
        """torch._utils._rebuild_tensor_v2 as a read-only view: the extent its size, stride and
        offset reach is checked against the storage, and no two elements may share a value
        (a stride 0 or an overlapping view would let a few bytes stand for gigabytes)."""
        if not isinstance(storage, _Storage):
            raise ArchiveError(f"{where}: a tensor without a storage")
        name = f"tensor over storage {storage.key}"
        if not (isinstance(size, tuple) and isinstance(stride, tuple) and len(size) == len(stride) <= MAX_DIMS
                and all(type(n) is int and n >= 0 for n in size + stride) and type(offset) is int and offset >= 0):
            raise ArchiveError(f"{where}: {name}: size, stride or offset is not {MAX_DIMS} or fewer non-negative ints")
        values = storage.values
        numel = 1
        for n in size:
            numel *= n
        if offset > values.size:
            raise ArchiveError(f"{where}: {name}: offset {offset} is past its {values.size} values")
        if numel:
            last = offset + sum((n - 1) * s for n, s in zip(size, stride))
            if last >= values.size:
                raise ArchiveError(f"{where}: {name}: reaches value {last}, its storage holds {values.size}")
            reach = 1
            for n, s in sorted(((n, s) for n, s in zip(size, stride) if n > 1), key=lambda dim: dim[1]):
                if s < reach:
                    raise ArchiveError(f"{where}: {name}: stride {s} repeats values (size {size}, stride {stride})")
                reach = s * n
        self.tensor_bytes += numel * values.itemsize
        limit = TENSOR_RATIO * len(self.payload)
        if self.tensor_bytes > limit:
            raise ArchiveError(f"{where}: {name}: the tensors hold {self.tensor_bytes} bytes, more than the limit of "
                               f"{limit} ({TENSOR_RATIO}x the archive)")
        if not numel:
            return np.empty(size, dtype=values.dtype)
        itemsize = values.itemsize
        return np.lib.stride_tricks.as_strided(values[offset:], shape=size, strides=[s * itemsize for s in stride],
                                               writeable=False)


class _PickleReader:
    """data.pkl's opcodes (protocol 2, as torch writes them), each value counted and its
    nesting depth known. A container is filled only before it is placed in another, so
    the depth recorded when it is placed is final."""

    def __init__(self, data: bytes, name: str, archive: TorchArchive, root: str) -> None:
        self.data, self.name, self.archive, self.root = data, name, archive, root
        self.position = 0
        self.stack: list = []
        self.marks: list[int] = []
        self.memo: dict[int, object] = {}
        self.depths: dict[int, int] = {}  # id of a container -> its nesting depth
        self.placed: set[int] = set()  # ids of containers inside another: no longer filled
        self.kept: list = []  # keeps every container alive, so its id is not reused
        self.values = 0

    def fail(self, message: str):
        raise ArchiveError(f"{self.name} at byte {self.position}: {message}")

    def take(self, count: int) -> bytes:
        if count > len(self.data) - self.position:
            self.fail(f"{count} bytes needed, {len(self.data) - self.position} left")
        chunk = self.data[self.position:self.position + count]
        self.position += count
        return chunk

    def line(self) -> str:
        end = self.data.find(b"\n", self.position, self.position + 4096)
        if end < 0:
            self.fail("a name without its end of line")
        text = self.data[self.position:end].decode("utf-8")
        self.position = end + 1
        return text

    def depth(self, value) -> int:
        return self.depths.get(id(value), 0)

    def count(self) -> None:
        self.values += 1
        if self.values > MAX_VALUES:
            self.fail(f"more than {MAX_VALUES} values")

    def push(self, value) -> None:
        self.count()
        self.stack.append(value)

    def container(self, value, items) -> object:
        """Records a new container holding `items`, which are thereby placed."""
        self.place(value, 1 + max((self.depth(item) for item in items), default=0), items)
        self.kept.append(value)
        return value

    def fill(self, target, items) -> None:
        """Checks that `target` may still be filled with `items` and records its new depth."""
        if id(target) in self.placed:
            self.fail("a container filled after it was placed in another")
        self.place(target, max(self.depth(target), 1 + max((self.depth(item) for item in items), default=0)), items)

    def place(self, holder, depth: int, items) -> None:
        """Records `holder` at `depth` (within the limit) and its containers among `items` as placed."""
        if depth > MAX_DEPTH:
            self.fail(f"nested more than {MAX_DEPTH} deep")
        for item in items:
            if id(item) in self.depths:
                self.placed.add(id(item))
        self.depths[id(holder)] = depth

    def pop(self):
        if not self.stack or (self.marks and len(self.stack) <= self.marks[-1]):
            self.fail("the stack is empty")
        return self.stack.pop()

    def pop_mark(self) -> list:
        if not self.marks:
            self.fail("no mark")
        mark = self.marks.pop()
        items = self.stack[mark:]
        del self.stack[mark:]
        return items

    def set_items(self, target, items: list) -> None:
        if not isinstance(target, dict) or len(items) % 2:
            self.fail("items set on something that is not a dict")
        self.fill(target, items)
        for key, value in zip(items[::2], items[1::2]):
            # torch writes names; other keys (integers whose hashes collide) could cost quadratic time
            if not isinstance(key, str):
                self.fail(f"a dict key of type {type(key).__name__}, not a name")
            target[key] = value

    def call(self, callable_, args):
        if not isinstance(callable_, _Global) or not isinstance(args, tuple):
            self.fail("a call of something that is not a known name")
        if (callable_.module, callable_.name) == ("collections", "OrderedDict") and not args:
            return self.container({}, ())
        if (callable_.module, callable_.name) == ("torch._utils", "_rebuild_tensor_v2") and len(args) >= 4:
            return self.archive.tensor(f"{self.name} at byte {self.position}", *args[:4])
        self.fail(f"{callable_.module}.{callable_.name} called with {len(args)} arguments")

    def persistent(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _Global)
                and pid[1].storage_dtype() is not None):
            self.fail(f"a persistent id that is not a storage's ({type(pid).__name__})")
        return self.archive.storage(self.root, pid[2], pid[1].storage_dtype(), pid[4])

    def load(self):
        while True:
            if self.position >= len(self.data):
                self.fail("no STOP")
            opcode = self.data[self.position]
            self.position += 1
            handler = _OPCODES.get(opcode)
            if handler is None:
                self.fail(f"opcode {opcode:#04x} is not one torch writes")
            if handler(self):
                if len(self.stack) != 1 or self.marks:
                    self.fail("STOP with more than one value left")
                return self.stack[0]


def _tuple(reader: _PickleReader, items: list) -> None:
    reader.push(reader.container(tuple(items), items) if items else ())


def _global(reader: _PickleReader) -> None:
    module, name = reader.line(), reader.line()
    value = _Global(module, name)
    if not (value.is_module() or value.storage_dtype() is not None or (module, name) in _KNOWN_GLOBALS):
        raise ArchiveError(f"refused {module}.{name} ({reader.name} at byte {reader.position}): "
                           "only modules, tensors and storages are read")
    reader.push(value)


def _put(reader: _PickleReader, index: int) -> None:
    if not reader.stack:
        reader.fail("memo of an empty stack")
    reader.count()
    reader.memo[index] = reader.stack[-1]


def _get(reader: _PickleReader, index: int) -> None:
    if index not in reader.memo:
        reader.fail(f"memo {index} was never set")
    reader.push(reader.memo[index])


def _append(reader: _PickleReader, items: list) -> None:
    target = reader.pop()
    if not isinstance(target, list):
        reader.fail("items appended to something that is not a list")
    reader.fill(target, items)
    target.extend(items)
    reader.push(target)


def _appends(reader: _PickleReader) -> None:
    items = reader.pop_mark()
    _append(reader, items)


def _setitems(reader: _PickleReader) -> None:
    items = reader.pop_mark()
    target = reader.pop()
    reader.set_items(target, items)
    reader.push(target)


def _setitem(reader: _PickleReader) -> None:
    value, key = reader.pop(), reader.pop()
    target = reader.pop()
    reader.set_items(target, [key, value])
    reader.push(target)


def _reduce(reader: _PickleReader) -> None:
    args, callable_ = reader.pop(), reader.pop()
    reader.push(reader.call(callable_, args))


def _newobj(reader: _PickleReader) -> None:
    args, cls = reader.pop(), reader.pop()
    if not (isinstance(cls, _Global) and cls.is_module() and args == ()):
        reader.fail("an object that is not a module")
    reader.push(reader.container(Module(), ()))


def _build(reader: _PickleReader) -> None:
    state = reader.pop()
    target = reader.pop()
    if not isinstance(target, Module) or not isinstance(state, dict):
        reader.fail("a state set on something that is not a module, or that is not a dict")
    reader.fill(target, [state])
    target.state = state
    reader.push(target)


def _unicode(reader: _PickleReader, length: int) -> None:
    reader.push(reader.take(length).decode("utf-8", "surrogatepass"))


def _mark(reader: _PickleReader) -> None:
    reader.marks.append(len(reader.stack))


def _int(reader: _PickleReader, size: int, form: str) -> None:
    reader.push(struct.unpack(form, reader.take(size))[0])


_OPCODES = {
    0x80: lambda r: r.take(1) and None,  # PROTO
    ord("."): lambda r: True,  # STOP
    ord("c"): _global,
    ord("q"): lambda r: _put(r, r.take(1)[0]),
    ord("r"): lambda r: _put(r, struct.unpack("<L", r.take(4))[0]),
    0x94: lambda r: _put(r, len(r.memo)),  # MEMOIZE
    ord("h"): lambda r: _get(r, r.take(1)[0]),
    ord("j"): lambda r: _get(r, struct.unpack("<L", r.take(4))[0]),
    ord("("): _mark,
    ord(")"): lambda r: r.push(()),
    ord("t"): lambda r: _tuple(r, r.pop_mark()),
    0x85: lambda r: _tuple(r, [r.pop()]),
    0x86: lambda r: _tuple(r, list(reversed([r.pop(), r.pop()]))),
    0x87: lambda r: _tuple(r, list(reversed([r.pop(), r.pop(), r.pop()]))),
    ord("]"): lambda r: r.push(r.container([], ())),
    ord("a"): lambda r: _append(r, [r.pop()]),
    ord("e"): _appends,
    ord("}"): lambda r: r.push(r.container({}, ())),
    ord("s"): _setitem,
    ord("u"): _setitems,
    ord("J"): lambda r: _int(r, 4, "<i"),
    ord("K"): lambda r: _int(r, 1, "<B"),
    ord("M"): lambda r: _int(r, 2, "<H"),
    0x8A: lambda r: r.push(int.from_bytes(r.take(r.take(1)[0]), "little", signed=True)),  # LONG1
    ord("G"): lambda r: _int(r, 8, ">d"),  # BINFLOAT
    ord("X"): lambda r: _unicode(r, struct.unpack("<L", r.take(4))[0]),
    0x8C: lambda r: _unicode(r, r.take(1)[0]),  # SHORT_BINUNICODE
    ord("N"): lambda r: r.push(None),
    0x88: lambda r: r.push(True),
    0x89: lambda r: r.push(False),
    ord("R"): _reduce,
    0x81: _newobj,
    ord("b"): _build,
    ord("Q"): lambda r: r.push(r.persistent(r.pop())),
}


def read_module_tree(payload: memoryview):
    """The root of the TorchScript archive `payload` (a zip): a Module, its attributes plain
    values, numpy arrays and Modules. ArchiveError (a ValueError) when it cannot be read within
    the limits; the arrays are read-only views of `payload`."""
    archive = TorchArchive(payload)
    pickles = [n for n in archive.zip.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise ArchiveError("the payload is not one TorchScript archive")
    root = pickles[0].split("/")[0]
    return _PickleReader(archive.pickle_bytes(pickles[0]), pickles[0], archive, root).load()
