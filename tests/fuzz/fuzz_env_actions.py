"""Fuzz target: env options and actions of every shape, dtype and value.

The input picks a task, decision mode and options (levels, horizon, penalty,
placement and priority arrays, including bools, huge and non-finite values),
then a few actions (arrays of any dtype and shape, scalars, lists, dicts with
missing or extra keys, masked arrays). Only goenv errors may be raised; every
accepted step yields finite rewards and observations.
"""

from __future__ import annotations

import sys

import atheris
import numpy as np

from fuzz_common import check_finite, goenv, note, rich_graph, run

GRAPH = rich_graph()
N = GRAPH.num_nodes
TASKS = ["placement", "scheduling", "fusion", "joint"]
CLUSTERS = ["cpu+2xgpu", "1xgpu", "2xgpu-pcie"]
DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64, np.float32, np.float64, np.bool_]
SPECIAL = [0, 1, -1, 2**31 - 1, 2**31, 2**63 - 1, 2**64 - 1, -(2**63), True, 1.5, float("nan"), float("inf")]


def number(fdp: atheris.FuzzedDataProvider):
    kind = fdp.ConsumeIntInRange(0, 3)
    if kind == 0:
        return SPECIAL[fdp.ConsumeIntInRange(0, len(SPECIAL) - 1)]
    if kind == 1:
        return fdp.ConsumeIntInRange(-2, 40)
    if kind == 2:
        return fdp.ConsumeFloat()
    return fdp.ConsumeInt(9)


def options(fdp: atheris.FuzzedDataProvider) -> dict:
    out = {}
    for key in ("horizon", "priority_levels", "fusion_levels", "max_fusion_size", "invalid_penalty"):
        if fdp.ConsumeBool():
            out[key] = number(fdp)
    if fdp.ConsumeBool():
        out["decision_mode"] = "node" if fdp.ConsumeBool() else fdp.ConsumeUnicodeNoSurrogates(4)
    if fdp.ConsumeBool():
        out["placement"] = np.array([number(fdp) for _ in range(fdp.ConsumeIntInRange(0, N + 1))])
    if fdp.ConsumeBool():
        out["priority"] = np.array([fdp.ConsumeFloat() for _ in range(fdp.ConsumeIntInRange(0, N + 1))])
    return out


def array(fdp: atheris.FuzzedDataProvider, length: int):
    kind = fdp.ConsumeIntInRange(0, 5)
    if kind == 0:
        return number(fdp)
    values = [number(fdp) for _ in range(length if fdp.ConsumeBool() else fdp.ConsumeIntInRange(0, N + 2))]
    if kind == 1:
        return values
    dtype = DTYPES[fdp.ConsumeIntInRange(0, len(DTYPES) - 1)]
    with np.errstate(all="ignore"):
        try:
            a = np.array(values, dtype=object).astype(dtype)
        except (OverflowError, ValueError, TypeError):
            a = np.zeros(len(values), dtype=dtype)
    if kind == 3:
        a = a.reshape(1, -1)
    if kind == 4:
        return np.ma.masked_array(a, mask=np.arange(a.size).reshape(a.shape) % 2 == 0)
    return a


def action(fdp: atheris.FuzzedDataProvider, env: goenv.GraphEnv):
    length = 1 if env.core.node_mode else N
    heads = list(env.core.heads)
    if len(heads) == 1 and fdp.ConsumeIntInRange(0, 7):
        return array(fdp, length)
    names = heads + ["placement", "bogus"]
    return {names[fdp.ConsumeIntInRange(0, len(names) - 1)]: array(fdp, length)
            for _ in range(fdp.ConsumeIntInRange(0, 4))} if fdp.ConsumeBool() else {h: array(fdp, length) for h in heads}


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    task = TASKS[fdp.ConsumeIntInRange(0, len(TASKS) - 1)]
    cluster = CLUSTERS[fdp.ConsumeIntInRange(0, len(CLUSTERS) - 1)]
    try:
        env = goenv.GraphEnv.from_graph(task, GRAPH, cluster, **options(fdp))
        obs, info = env.reset(seed=fdp.ConsumeIntInRange(0, 2**32))
    except goenv.Error as error:
        note(error)
        return
    note(f"env {task} {env.core.node_mode}")
    check_finite(obs, None, info)
    for _ in range(fdp.ConsumeIntInRange(1, 6)):
        try:
            obs, reward, terminated, truncated, info = env.step(action(fdp, env))
        except goenv.ResetNeeded:
            env.reset(seed=0)
            continue
        except goenv.Error as error:
            note(error)
            continue
        note("stepped")
        check_finite(obs, reward, info)


if __name__ == "__main__":
    run(test_one_input)
