"""Files goenv writes and reads (docs/architecture.md): outputs are written atomically and only
over regular files or new paths; inputs are regular files within a size limit.

    write_atomic("out/result.npz", data)            # bytes, or a function writing to a binary file
    early = EarlySync(file)  # in such a function: sync a long-written file as it grows; early.close() before returning
    data = read_regular_file("model.onnx", what="ONNX model")
    log = CsvLog("runs/metrics.csv", ("step", "loss")); log.append({"step": 1, "loss": 0.5})  # a growing CSV
    remove_regular_files(folder, names, "shard")  # an overwrite: only files, all checked first
    new_output_path("go.agent", "checkpoint", overwrite)  # a user's file: replaced only with overwrite=True

A device node, FIFO, directory or dangling symbolic link at an output path is refused
with goenv.InvalidArgument (the write would replace it with a regular file, or block);
a symbolic link to a regular file is followed, so the link stays and its target is
replaced. Inputs are opened without blocking and checked on the open descriptor, so a
FIFO or /dev/zero swapped in after a check is still refused.
"""

from __future__ import annotations

import csv
import io
import json
import os
import secrets
import stat
import threading
from typing import BinaryIO, Callable

from goenv._core import InvalidArgument
from goenv.arguments import checked_flag

MAX_FILE_BYTES = 2 << 30  # as for graph files (docs/limits.md)

__all__ = ["MAX_FILE_BYTES", "CsvLog", "EarlySync", "checked_output_path", "new_output_path", "path_inside",
           "read_json_file", "read_regular_file", "remove_regular_files", "write_atomic"]

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def path_inside(root: str | os.PathLike, name: str, error: type[Exception] = InvalidArgument,
                what: str = "folder") -> str:
    """root/name, refused (`error`) when it resolves outside the folder `root` (a symbolic link
    out of it): a folder of files goenv manages reads and writes only its own files."""
    root = os.fspath(root)
    path = os.path.join(root, name)
    real_root = os.path.realpath(root)
    if os.path.commonpath([real_root, os.path.realpath(path)]) != real_root:
        raise error(f"{path}: resolves outside the {what} {root}")
    return path


def checked_output_path(path: str | os.PathLike, what: str = "output", folder_must_exist: bool = False) -> str:
    """The path an output to `path` replaces: `path` itself, or a symbolic link's regular
    target. InvalidArgument when something other than a regular file is there, and with
    `folder_must_exist` when a new file's folder is missing (an output written only after long
    work, such as a checkpoint, is checked before that work, not lost after it)."""
    path = os.fspath(path)
    if not path:
        raise InvalidArgument(f"{what}: empty path")
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise InvalidArgument(f"{what} {path}: a dangling symbolic link; goenv writes only over regular "
                                  f"files or new paths") from None
        if path.endswith(os.sep):
            raise InvalidArgument(f"{what} {path}: names a directory; give a file path") from None
        folder = os.path.dirname(os.path.abspath(path))
        if folder_must_exist and not os.path.isdir(folder):
            raise InvalidArgument(f"{what} {path}: folder {folder} does not exist; create it first") from None
        return path
    except NotADirectoryError:
        raise InvalidArgument(f"{what} {path}: a parent of this path is not a directory") from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidArgument(f"{what} {path}: {_kind(info.st_mode)}, not a regular file; goenv writes only over "
                              f"regular files or new paths")
    return os.path.realpath(path) if os.path.islink(path) else path


def new_output_path(path: str | os.PathLike, what: str, overwrite: bool, flag: str = "overwrite=True",
                    folder_must_exist: bool = False) -> str:
    """checked_output_path, and a file already at `path` refused (InvalidArgument naming the path
    and `flag`) unless `overwrite`: goenv replaces none of the user's files without being told.
    Checked before the work that makes the output, so the refusal costs nothing."""
    target = checked_output_path(path, what, folder_must_exist=folder_must_exist)
    if not checked_flag("overwrite", overwrite) and os.path.lexists(path):
        raise InvalidArgument(f"{what} {os.fspath(path)}: the file exists; pass {flag} to replace it "
                              f"(nothing was written)")
    return target


def remove_regular_files(root: str | os.PathLike, names: list[str], what: str) -> None:
    """Removes root/name for each name (what an overwrite replaces), after checking them all: a
    directory, FIFO, device or socket there raises InvalidArgument and nothing is removed (a
    symbolic link is removed itself, never its target)."""
    for name in names:
        info = os.lstat(os.path.join(root, name))
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)):
            raise InvalidArgument(f"{what} {os.path.join(root, name)}: {_kind(info.st_mode)}, not a file goenv wrote; "
                                  f"nothing was changed")
    for name in names:
        os.unlink(os.path.join(root, name))


def output_folder(path: str | os.PathLike, what: str = "output folder") -> str:
    """Makes the folder `path` (and its parents) if needed and returns it; InvalidArgument naming
    the problem when something other than a folder is there (os.makedirs' "File exists")."""
    root = os.fspath(path)
    if not root:
        raise InvalidArgument(f"{what}: empty path")
    try:
        os.makedirs(root, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise InvalidArgument(f"{what} {root}: a file (or a path through one) is there, not a folder; give a "
                              f"folder's path") from None
    return root


def write_atomic(path: str | os.PathLike, data: bytes | Callable[[BinaryIO], None], what: str = "output") -> str:
    """Writes `data` (bytes, or a function that writes to the open binary file) to a temporary
    file beside `path`, flushes it to disk and renames it over `path`: readers see the old
    file or the new one, never half of one. Returns the path written (a symbolic link's target)."""
    target = checked_output_path(path, what)
    directory, name = os.path.split(os.path.abspath(target))
    temporary = os.path.join(directory, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)  # the umask applies
    except OSError as error:  # named by the path asked for, not the temporary's hidden name
        raise type(error)(error.errno, error.strerror, os.fspath(path)) from None
    try:
        with os.fdopen(fd, "wb") as file:
            if callable(data):
                data(file)
            else:
                file.write(data)
            file.flush()
            os.fsync(file.fileno())
        checked_output_path(target, what)  # still a regular file or nothing (not swapped meanwhile)
        try:  # the file replaced keeps its permissions (a read-only checkpoint stays read-only)
            os.chmod(temporary, stat.S_IMODE(os.stat(target).st_mode))
        except FileNotFoundError:
            pass
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
    return target


class EarlySync:
    """Flushes a file that is still being written to disk on a background thread, so that
    write_atomic's closing fsync has little left to wait for: on this machine a 9 MB labels
    shard's fsync took 21 ms at the end of its run, 1.6 ms after an earlier fdatasync. The
    writer calls written() after its writes; the thread syncs whenever bytes arrived since its
    last sync (a sync takes about as long as its data, so they batch themselves) and mostly
    waits on the disk, not a core. close() stops and joins it; call it before the file is
    closed. Durability is unchanged: write_atomic still fsyncs before it renames."""

    def __init__(self, file: BinaryIO):
        self._fd = file.fileno()
        self._state = threading.Condition()
        self._pending = self._stopped = False
        self._thread = threading.Thread(target=self._run, name="goenv-early-sync", daemon=True)
        self._thread.start()

    def written(self) -> None:
        with self._state:
            self._pending = True
            self._state.notify()

    def _run(self) -> None:
        sync = getattr(os, "fdatasync", os.fsync)  # macOS has no fdatasync
        while True:
            with self._state:
                self._state.wait_for(lambda: self._pending or self._stopped)
                if self._stopped:
                    return
                self._pending = False
            try:
                sync(self._fd)
            except OSError:  # a file system that cannot: write_atomic's own fsync reports it
                return

    def close(self) -> None:
        with self._state:
            self._stopped = True
            self._state.notify()
        self._thread.join()


def read_regular_file(path: str | os.PathLike, limit: int = MAX_FILE_BYTES, what: str = "file",
                      error: type[Exception] = InvalidArgument) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; `error` (a goenv exception) naming
    the path otherwise. FileNotFoundError when there is nothing at `path`."""
    path = os.fspath(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO opens at once, then is refused
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{what} {path}: {_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise error(f"{what} {path}: {info.st_size} bytes, more than the limit of {limit}")
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as file:
        data = file.read(info.st_size + 1)  # read(n) allocates n bytes up front: the size, not the limit
    if len(data) != info.st_size:
        raise error(f"{what} {path}: changed size while it was read")
    return data


def read_json_file(path: str | os.PathLike, limit: int, what: str, error: type[Exception] = InvalidArgument):
    """The parsed JSON of a regular file of at most `limit` bytes (a manifest); `error` naming
    the path when it is not JSON. FileNotFoundError when there is nothing at `path`."""
    data = read_regular_file(path, limit, what=what, error=error)
    try:
        return json.loads(data.decode("utf-8"))
    # ValueError: an integer of more digits than Python converts (sys.get_int_max_str_digits)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError, ValueError) as problem:
        raise error(f"{os.fspath(path)}: not a valid {what} ({type(problem).__name__}: "
                    f"{str(problem)[:200]})") from None


class CsvLog:
    """A CSV file that grows a row at a time as training goes (metrics logs). After each row the
    whole file is rewritten with write_atomic (a log is kilobytes; a row comes every few
    seconds): a reader never sees half a row, and the path is checked when the log is made,
    before any work, so a FIFO or device there is refused rather than written into."""

    def __init__(self, path: str | os.PathLike, columns: tuple[str, ...], what: str = "log"):
        self.path, self.what = checked_output_path(path, what), what
        self._text = io.StringIO(newline="")
        self._writer = csv.DictWriter(self._text, fieldnames=columns, extrasaction="ignore")
        self._writer.writeheader()
        self._write()

    def append(self, row: dict) -> None:
        self._writer.writerow(row)
        self._write()

    def _write(self) -> None:
        write_atomic(self.path, self._text.getvalue().encode(), self.what)
