"""Envs as goenv._agents takes them: an env id, or a GraphEnv described as plain data.

goenv._agents rebuilds every env from this description and never touches
goenv._core's C++ objects (the two modules share no class layout). The same
descriptions travel to Ray rollout workers (goenv.distributed).
"""

from __future__ import annotations

from typing import Any

import goenv._core as _core
from goenv._core import InvalidArgument
from goenv.envs import GraphEnv, env_options, env_start, strip_gym_id


def env_argument(env: Any):
    """An env id (gymnasium ids too), or a GraphEnv / wrapper / goenv._core.Env described as a dict
    {id, task, graph: bytes, cluster: bytes, options, start}: `start` the decisions its resets
    begin from ({head: values}) when it has a start (set_start with decisions, or a named one),
    else None."""
    if isinstance(env, str):
        return strip_gym_id(env)
    if isinstance(env, dict) and {"task", "graph", "cluster", "options"} <= env.keys():
        return env  # already described (e.g. sent to a rollout worker)
    core = env if isinstance(env, _core.Env) else getattr(getattr(env, "unwrapped", env), "core", None)
    if not isinstance(core, _core.Env):
        raise TypeError(f"expected an env id, a goenv GraphEnv or goenv._core.Env, got {type(env).__name__}")
    return {
        "id": core.id,
        "task": core.task,
        "graph": core.graph.to_bytes(),
        "cluster": core.cluster.__getstate__(),
        "options": env_options(core),
        "start": env_start(core),
    }


def listed(envs: Any) -> list:
    """One env (an id, a GraphEnv, a wrapper, a goenv._core.Env) as a list of one; a list as it is."""
    return [envs] if isinstance(envs, (str, GraphEnv, _core.Env)) or hasattr(envs, "unwrapped") else list(envs)


def env_arguments(envs: Any) -> list:
    """`envs` (one or a list) described for goenv._agents; ValueError when there is none."""
    described = [env_argument(e) for e in listed(envs)]
    if not described:
        raise InvalidArgument("expected at least one env")
    return described


def title(described: list) -> str:
    """A short name for described envs: the id, or "N graphs (a, b, c, ...)"."""
    ids = [e if isinstance(e, str) else e["id"] for e in described]
    return ids[0] if len(ids) == 1 else f"{len(ids)} graphs ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''})"
