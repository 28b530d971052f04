"""Fuzz target: the ONNX importer (goenv.datasets.from_onnx).

First byte: even -> the rest is a serialized ModelProto (the seed corpus holds
real ones: libFuzzer mutates their bytes); odd -> the rest drives a small model
built here: nodes of shape-computation and size-changing ops (ConstantOfShape,
Expand, Tile, Range, Reshape, Concat, ...) wired to earlier, later or undefined
values (unsorted files, cycles), with small int64 initializers whose values come
from the input (folding must check sizes before computing).

Only goenv errors may come out; libFuzzer's RSS limit turns a memory blow-up
(folding a huge constant) into a finding. An imported graph is a valid goenv
graph: it simulates to a finite runtime.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np

from fuzz_common import goenv, note, run

from onnx import TensorProto, helper  # noqa: E402

OPS = [("ConstantOfShape", 1), ("Expand", 2), ("Tile", 2), ("Range", 3), ("Reshape", 2), ("Concat", 2),
       ("Add", 2), ("Mul", 2), ("Relu", 1), ("MatMul", 2), ("Shape", 1), ("Gather", 2), ("Unsqueeze", 2),
       ("Slice", 3), ("Transpose", 1), ("Where", 3), ("Identity", 1), ("Softmax", 1)]
CLUSTER = goenv.Cluster.preset("2xgpu-pcie")


def structured(data: bytes) -> bytes:
    """A model from the bytes (see the module docstring), serialized."""
    import atheris

    fdp = atheris.FuzzedDataProvider(data)
    initializers, names = [], ["x"]
    for k in range(fdp.ConsumeIntInRange(0, 4)):
        size = fdp.ConsumeIntInRange(0, 4)
        values = [fdp.ConsumeIntInRange(-3, 1 << 40) for _ in range(size)]
        initializers.append(helper.make_tensor(f"c{k}", TensorProto.INT64, [size], values))
        names.append(f"c{k}")
    num_nodes = fdp.ConsumeIntInRange(1, 8)
    outputs = [f"v{i}" for i in range(num_nodes)]
    pool = names + outputs + ["undefined"]  # later outputs: unsorted files and cycles
    nodes = []
    for i in range(num_nodes):
        op, arity = OPS[fdp.ConsumeIntInRange(0, len(OPS) - 1)]
        inputs = [pool[fdp.ConsumeIntInRange(0, len(pool) - 1)] for _ in range(arity)]
        nodes.append(helper.make_node(op, inputs, [outputs[i]], name=f"n{i}"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [fdp.ConsumeIntInRange(1, 4), 3])
    y = helper.make_tensor_value_info(outputs[-1], TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "fuzz", [x], [y], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_one_input(data: bytes) -> None:
    if not data:
        return
    model = data[1:] if data[0] % 2 == 0 else structured(data[1:])
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            graph = goenv.datasets.from_onnx(model, training=bool(data[0] & 2))
    except goenv.Error as error:
        note(re.sub(r"['\"(\[{].*|\d+", "", str(error).split(": ", 1)[-1])[:48])  # the check, not the values
        return
    note(f"accepted {min(graph.num_nodes, 16)}")
    result = goenv.simulate(graph, CLUSTER, placement=np.arange(graph.num_nodes) % CLUSTER.num_devices)
    assert math.isfinite(result.runtime), f"non-finite runtime {result.runtime}"


if __name__ == "__main__":
    run(test_one_input)
