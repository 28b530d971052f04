"""Results in the order work was planned, with a bounded number in flight: the pattern the
dataset writers share (graphs of a generated dataset, builds of the zoo), so that the files
they write do not depend on which worker finished first."""

from __future__ import annotations

import collections
from typing import Callable, Iterable, Iterator, TypeVar

Item = TypeVar("Item")
Handle = TypeVar("Handle")
Result = TypeVar("Result")

__all__ = ["in_order"]


def in_order(items: Iterable[Item], window: int, submit: Callable[[Item], Handle],
             wait: Callable[[Handle], Result]) -> Iterator[Result]:
    """wait(submit(item)) for every item, in the items' order, with at most `window` submitted
    and not yet waited for: every worker stays busy, and memory held by finished results that
    wait for earlier ones stays bounded."""
    pending = iter(items)
    in_flight: collections.deque = collections.deque()

    def fill() -> None:
        while len(in_flight) < window:
            item = next(pending, None)
            if item is None:
                return
            in_flight.append(submit(item))

    fill()
    while in_flight:
        result = wait(in_flight.popleft())
        fill()
        yield result
