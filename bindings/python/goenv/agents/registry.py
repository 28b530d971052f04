"""The algorithms goenv.agents builds, registered by a descriptor (as OpenSpiel
registers games): ``algorithms()`` lists them, ``make_agent(name, **options)``
builds one. goenv.distributed, the CLI and ``load()`` go through here.

    goenv.agents.algorithms()                 # ['go', 'ppo']
    goenv.agents.make_agent("go", hidden=64)  # a GO agent
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from goenv._core import InvalidArgument


@dataclass(frozen=True)
class Algorithm:
    name: str          # the `algorithm` option and checkpoints' name for it
    agent_class: type  # a goenv.agents.Agent subclass
    description: str


_ALGORITHMS: dict[str, Algorithm] = {}


def register(name: str, agent_class: type, description: str) -> None:
    """Adds an algorithm (again for the same class: nothing changes); a name already taken by
    another class raises ValueError."""
    known = _ALGORITHMS.get(name)
    if known is not None:
        if known.agent_class is not agent_class:
            raise InvalidArgument(f"algorithm {name!r} is already registered to {known.agent_class.__name__}")
        return
    _ALGORITHMS[name] = Algorithm(name, agent_class, description)


def algorithms() -> list[str]:
    """The registered algorithm names, sorted."""
    return sorted(_ALGORITHMS)


def describe(name: str) -> Algorithm:
    """The descriptor of `name`; ValueError naming the choices for an unknown one."""
    if not isinstance(name, str) or name not in _ALGORITHMS:
        raise InvalidArgument(f"algorithm must be one of {algorithms()}, got {name!r}")
    return _ALGORITHMS[name]


def make_agent(name: str, **options: Any):
    """A new agent of algorithm `name` with `options` (goenv.agents.options())."""
    return describe(name).agent_class(**options)
