"""Checks of the arguments every room takes (docs/architecture.md: bad input raises a clear exception
naming it, before any work is done). A count is an integer, never a bool, a float or a string
(numpy's integer scalars count); a number is an int or a float, never a bool or a string; a
flag is a bool (numpy's too); binary data is bytes-like.

    count = checked_int("episodes", episodes, low=1, high=2**31 - 1)
    batch_size = checked_number("batch_size", batch_size)
    copy = checked_flag("copy", copy)
    state = checked_bytes(state, "set_state takes the bytes get_state() returned")
"""

from __future__ import annotations

import contextlib

from typing import Any

import numpy as np

from goenv._core import InvalidArgument

__all__ = ["checked_bytes", "checked_flag", "checked_int", "checked_number", "is_count"]


def is_count(value: Any, low: int = 0) -> bool:
    """Whether `value` is an integer (not a bool) >= low: what a manifest's counts must be."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value >= low


def checked_int(name: str, value: Any, low: int = 0, high: int | None = None) -> int:
    """`value` as an int, or InvalidArgument naming `name` and the range: an integer in
    [low, high] (high=None: no upper bound)."""
    if not is_count(value, low) or (high is not None and value > high):
        raise InvalidArgument(f"{name} must be {_integer_range(low, high)}, got {value!r}")
    return int(value)


def checked_number(name: str, value: Any) -> float:
    """`value` as a float: an int or float (numpy's too), never a bool or a string; else
    InvalidArgument naming `name`. Finiteness is the caller's to check."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InvalidArgument(f"{name} must be a number, got {value!r}")
    try:
        return float(value)
    except OverflowError:  # an int beyond a double (10**400)
        raise InvalidArgument(f"{name} is out of range: {value!r}") from None


def _integer_range(low: int, high: int | None) -> str:
    if low <= -2**63 and (high is None or high >= 2**63 - 1):  # any int64 (the range checks are elsewhere)
        return "an integer"
    if high is None:
        return f"an integer >= {low}"
    if high >= 2**31 - 1 and (high + 1) & high == 0:  # 2**k - 1: the type's limit, written as such
        return f"an integer in [{low}, 2**{high.bit_length()})"
    return f"an integer in [{low}, {high}]"


def checked_flag(name: str, value: Any) -> bool:
    """A bool option (numpy's too), or InvalidArgument naming it: 1 or "yes" is not a flag."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgument(f"{name} must be True or False, got {value!r}")
    return bool(value)


def checked_bytes(value: Any, takes: str) -> bytes | bytearray | memoryview:
    """`value` if it is bytes-like, else InvalidArgument: "<takes>, got <its type>"."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidArgument(f"{takes}, got {type(value).__name__}")
    return value


@contextlib.contextmanager
def as_command_line(*names: str):
    """A command's errors name its flags: an InvalidArgument raised inside that starts with one
    of the Python argument `names` ("shard_size must be ...") is raised again naming the flag
    ("--shard-size must be ...")."""
    try:
        yield
    except InvalidArgument as error:
        message = str(error)
        for name in names:
            if message.startswith(name + " "):
                raise InvalidArgument("--" + name.replace("_", "-") + message[len(name):]) from None
        raise
