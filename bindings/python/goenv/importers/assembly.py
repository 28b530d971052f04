"""The pieces both importers share:

* **Cost rules** (`matmul_flops`, `conv_flops`, ...): FLOPs of one op from its
  input and output shapes, a multiply-accumulate counted as 2 FLOPs, as in the
  C++ builders (datasets/training_graph.h). Elementwise ops: 1 FLOP per output
  element; reductions: 1 per input element; softmax and normalizations: 5 per
  element; pooling: kernel size per output element; sorting: log2 of the sorted
  length per element (top-k: log2 k); grouped per-expert products: as matmuls;
  data movement (concat, pad,
  gather, copies): 0 FLOPs, their cost is their bytes. View ops (reshape,
  transpose of a view, slicing) are *free*: they allocate nothing
  (output_bytes 0) and carry a measured cost of 0 s, so the simulator charges
  neither time nor launch overhead; the edges out of them still carry the
  viewed tensor's bytes. An op with no rule costs 1 FLOP per output element and
  raises one `CostEstimateWarning` per op type and import.
* **GraphAssembler**: collects ops, parameters and inputs and writes the goenv
  graph: inference graphs put each parameter's bytes on the op that reads it (a
  `Variable` node when several ops share it); `training=True` appends the
  backward pass and the optimizer updates with the same naming as the C++
  training graphs (fwd/, bwd/, var/, update/): one gradient op mirrors each
  forward op that needs a gradient, reading the gradient of its output (summed by
  an AddN when several ops read that output), the forward activations it needs,
  and its weights; one ApplyGradient per trainable parameter, colocated with its
  Variable.
"""


from __future__ import annotations

import math
import os
import re
import sys
import warnings
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from goenv._core import Graph, op_type_names

Shape = tuple  # tuple[int, ...]

__all__ = [
    "CostEstimateWarning", "CostRules", "GraphAssembler", "attention_flops", "caller_stacklevel", "conv_flops",
    "einsum_flops", "elementwise_flops", "elementwise_op_flops", "matmul_flops", "no_flops", "norm_flops", "numel",
    "pool_flops", "reduction_flops", "reduction_op_flops", "rnn_flops", "sanitize_name", "softmax_flops",
    "unknown_op_flops",
]


class CostEstimateWarning(UserWarning):
    """An imported op had no cost rule; it was costed at 1 FLOP per output element."""


def caller_stacklevel() -> int:
    """The warnings.warn stacklevel of the nearest frame outside the goenv package, so a warning
    points at the caller's line (or at the user's forward() during an eager recording)."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


# ---------------------------------------------------------------------------
# Cost rules. Shapes are tuples of ints; every function returns FLOPs.

def numel(shape: Sequence[int]) -> int:
    return int(math.prod(int(d) for d in shape))


def matmul_flops(output: Shape, k: int, bias: bool = False) -> float:
    """Matrix products (mm, bmm, matmul, linear, Gemm): 2*K per output element, +1 with a bias."""
    return float(numel(output)) * (2 * int(k) + (1 if bias else 0))


def conv_flops(output: Shape, weight: Shape, bias: bool = False, transposed: bool = False,
               input_shape: Shape | None = None) -> float:
    """Convolutions, weight (Cout, Cin/groups, *kernel): 2*Cin/groups*prod(kernel) per output element.
    Transposed convolutions, weight (Cin, Cout/groups, *kernel), scatter from every input element."""
    per_element = 2 * numel(weight[1:])
    macs_over = input_shape if transposed and input_shape is not None else output
    return float(numel(macs_over)) * per_element + (float(numel(output)) if bias else 0.0)


def elementwise_flops(outputs: Iterable[Shape], per_element: float = 1.0) -> float:
    return per_element * float(sum(numel(s) for s in outputs))


def reduction_flops(input_shape: Shape, per_element: float = 1.0) -> float:
    return per_element * float(numel(input_shape))


def softmax_flops(shape: Shape) -> float:
    """max, subtract, exp, sum, divide: 5 per element (as the transformer builders)."""
    return 5.0 * numel(shape)


def norm_flops(shape: Shape) -> float:
    """Batch/layer/group norm: mean, variance, normalize, scale, shift: 5 per element."""
    return 5.0 * numel(shape)


def pool_flops(output: Shape, kernel: Sequence[int] | int, spatial_dims: int = 2) -> float:
    """Window pooling: one FLOP per window element per output element."""
    if isinstance(kernel, (int, np.integer)):
        window = int(kernel) ** spatial_dims
    else:
        window = numel(kernel)
    return float(numel(output)) * window


def attention_flops(query: Shape, key: Shape, value: Shape) -> float:
    """Scaled dot-product attention: Q K^T (2*L*S*E), softmax (5*L*S), weights times V (2*L*S*Ev)."""
    batch = numel(query[:-2])
    length, embed, source, value_embed = query[-2], query[-1], key[-2], value[-1]
    scores = float(batch) * length * source
    return scores * (2 * embed + 5 + 2 * value_embed)


def einsum_flops(equation: str, operands: Sequence[Shape]) -> float:
    """2 FLOPs per point of the iteration space when something is summed, else 1."""
    equation = equation.replace(" ", "")
    inputs, _, output = equation.partition("->")
    terms = inputs.split(",")
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, operands):
        letters = [c for c in term if c.isalpha()]
        if "..." in term:  # the ellipsis covers the leading dims not named by letters
            ellipsis_dims = len(shape) - len(letters)
            before = term.split("...")[0]
            named = [c for c in before if c.isalpha()]
            for i, d in enumerate(shape[len(named):len(named) + ellipsis_dims]):
                sizes[f"...{i}"] = max(sizes.get(f"...{i}", 1), int(d))
            shape = list(shape[:len(named)]) + list(shape[len(named) + ellipsis_dims:])
        for c, d in zip(letters, shape):
            sizes[c] = max(sizes.get(c, 1), int(d))
    if not output and "->" not in equation:  # implicit output: letters that appear once
        all_letters = "".join(terms)
        output = "".join(sorted(c for c in set(all_letters) if c.isalpha() and all_letters.count(c) == 1))
    summed = any(c.isalpha() and c not in output for c in sizes)
    return (2.0 if summed and len(operands) > 1 else 1.0) * float(math.prod(sizes.values()) if sizes else 1)


def rnn_flops(steps: int, batch: int, weight_shapes: Iterable[Shape], hidden: int, cells: int,
              per_gate_element: float = 8.0) -> float:
    """Recurrent layers: every weight matrix multiplies once per step and batch row (2 FLOPs per
    weight), plus the gates' elementwise work: `per_gate_element` per hidden unit per cell."""
    matrices = sum(numel(s) for s in weight_shapes if len(s) >= 2)
    return float(steps) * batch * (2.0 * matrices + per_gate_element * hidden * cells)


class CostRules(dict):
    """Cost rules by source op name: (goenv op type, or a function of the op giving it;
    FLOPs as a function of the op; free: a view that moves no data). Shared by the importers,
    whose ops all carry input shapes `ins` and output shapes `outs`."""

    def add(self, names: str, op_type, flops, free: bool = False) -> None:
        for name in names.split():
            self[name] = (op_type, flops, free)


def no_flops(op) -> float:
    return 0.0


def elementwise_op_flops(op) -> float:
    return elementwise_flops(op.outs[:1])


def reduction_op_flops(op) -> float:
    return reduction_flops(op.ins[0]) if op.ins else 0.0


def unknown_op_flops(outputs: Iterable[Shape]) -> float:
    """The conservative estimate for an op without a rule: 1 FLOP per output element."""
    return float(sum(numel(s) for s in outputs))


# ---------------------------------------------------------------------------
# Backward-pass rules: the op type of each forward op's gradient op, how its
# FLOPs relate to the forward op's, and which forward tensors it reads.

_GRAD_OP_TYPE = {
    "Conv2D": "Conv2DBackpropInput", "DepthwiseConv2D": "Conv2DBackpropInput", "Conv1D": "Conv1D",
    "Conv2DBackpropInput": "Conv2D",  # a transposed conv's input gradient is a conv
    "MatMul": "MatMul", "BatchMatMul": "BatchMatMul", "LSTMCell": "LSTMCell",
    "Embedding": "EmbeddingGrad", "Gather": "EmbeddingGrad",
    "MaxPool": "MaxPoolGrad", "AvgPool": "AvgPoolGrad",
    "BatchNorm": "BatchNormGrad", "LayerNorm": "LayerNormGrad",
    "Relu": "ReluGrad", "Tanh": "ActivationGrad", "Sigmoid": "ActivationGrad", "Gelu": "ActivationGrad",
    "Softmax": "SoftmaxGrad", "CrossEntropy": "CrossEntropyGrad", "BiasAdd": "BiasAddGrad",
    "Concat": "Split", "Split": "Concat", "Slice": "Pad", "Pad": "Slice",
    "Sum": "Mul", "Mean": "Mul", "AddN": "AddN",
}
# Dense ops compute one gradient per differentiated operand (data, weights), each as costly as the op
# (at most two: dx and dW of a layer, dA and dB of a product).
_DENSE = {"Conv2D", "DepthwiseConv2D", "Conv1D", "Conv2DBackpropInput", "MatMul", "BatchMatMul", "LSTMCell"}
_GRAD_FLOPS_FACTOR = {"BatchNorm": 8 / 5, "LayerNorm": 8 / 5, "CrossEntropy": 3 / 5}
# Gradients that need the forward output rather than the inputs (y' = f'(y) * dy).
_READS_OUTPUT = {"Relu", "Tanh", "Sigmoid", "Softmax", "BatchNorm", "LayerNorm", "MaxPool", "Dropout"}
# Gradients that need neither inputs nor output: linear maps of dy.
_READS_NOTHING = {"Add", "Sub", "AddN", "BiasAdd", "Reshape", "Transpose", "Slice", "Split", "Concat", "Pad",
                  "Cast", "Sum", "Mean", "AvgPool", "Constant", "Input"}
# The gradient of a view is a view, except where it must materialize zeros or a concatenation.
_GRAD_OF_VIEW_NOT_FREE = {"Slice", "Split"}


@dataclass
class _Param:
    name: str
    nbytes: int
    numel: int
    trainable: bool
    consumers: list = field(default_factory=list)


@dataclass
class _Op:
    name: str
    op_type: str
    flops: float
    output_bytes: int          # bytes allocated for the op's outputs (0 for views)
    value_bytes: int           # logical bytes of its outputs (what a consumer reads)
    inputs: list               # [(op index, bytes)]
    params: list               # param indices
    free: bool
    group: int
    is_input: bool = False


class GraphAssembler:
    """Collects imported ops in topological order and writes the goenv graph."""

    def __init__(self, name: str, source: str):
        self.name = name
        self.source = source  # "torch" / "onnx", for messages
        self.ops: list[_Op] = []
        self.params: list[_Param] = []
        self.outputs: list[int] = []
        self._warned: set[str] = set()
        self._vocabulary = set(op_type_names())

    # -- collecting ---------------------------------------------------------

    def add_param(self, name: str, nbytes: int, numel_: int, trainable: bool) -> int:
        self.params.append(_Param(name, int(nbytes), int(numel_), bool(trainable)))
        return len(self.params) - 1

    def add_input(self, name: str, nbytes: int, group: int = -1) -> int:
        return self._append(_Op(name, "Input", 0.0, int(nbytes), int(nbytes), [], [], False, group, is_input=True))

    def add_op(self, name: str, op_type: str, flops: float, output_bytes: int, inputs: Sequence[tuple],
               params: Sequence[int] = (), *, free: bool = False, group: int = -1) -> int:
        """One op. inputs: (producer op index, bytes read); params: indices from add_param."""
        if op_type not in self._vocabulary:
            raise ValueError(f"{self.source} importer: op type {op_type!r} is not in goenv.op_type_names()")
        if not (math.isfinite(flops) and flops >= 0):
            flops = 0.0
        merged: dict[int, int] = {}
        for producer, nbytes in inputs:  # an op reading one tensor twice receives it once
            merged[producer] = max(merged.get(producer, 0), int(nbytes))
        unique_params = list(dict.fromkeys(params))
        index = self._append(_Op(name, op_type, float(flops), 0 if free else int(output_bytes), int(output_bytes),
                                 list(merged.items()), unique_params, free, group))
        for p in unique_params:
            self.params[p].consumers.append(index)
        return index

    def mark_output(self, op: int) -> None:
        if op not in self.outputs:
            self.outputs.append(op)

    def warn_unknown(self, op_name: str, estimate: str = "1 FLOP per output element") -> None:
        """One CostEstimateWarning per op type per import."""
        self.warn_once(op_name, f"goenv {self.source} importer: no cost rule for op '{op_name}'; estimated at "
                                f"{estimate} (op type 'Other')")

    def warn_once(self, key: str, message: str) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        warnings.warn(message, CostEstimateWarning, stacklevel=caller_stacklevel())

    def _append(self, op: _Op) -> int:
        self.ops.append(op)
        return len(self.ops) - 1

    # -- writing ------------------------------------------------------------

    def build(self, training: bool = False) -> Graph:
        writer = _Writer()
        fwd = "fwd/" if training else ""
        node_of_op = [writer.add(fwd + op.name, op.op_type, op.flops, op.output_bytes, 0, op.group, free=op.free)
                      for op in self.ops]
        for op, node in zip(self.ops, node_of_op):
            for producer, nbytes in op.inputs:
                writer.edge(node_of_op[producer], node, nbytes)

        # Parameters: on the op when one op reads them (and nothing updates them), else a Variable.
        variable_of_param: dict[int, int] = {}
        colocation = 0
        for p, param in enumerate(self.params):
            if not param.consumers:
                continue
            updated = training and param.trainable
            if len(param.consumers) == 1 and not updated:
                writer.param_bytes[node_of_op[param.consumers[0]]] += param.nbytes
                continue
            group = self.ops[param.consumers[0]].group
            node = writer.add(("var/" if training else "") + param.name, "Variable", 0.0, 0, param.nbytes, group,
                              colocation=colocation if updated else -1)
            colocation += updated
            variable_of_param[p] = node
            for consumer in param.consumers:
                writer.edge(node, node_of_op[consumer], param.nbytes)

        if training:
            self._write_backward(writer, node_of_op, variable_of_param)
        return writer.graph(self.name)

    def _requires_grad(self) -> list[bool]:
        requires = [False] * len(self.ops)
        for i, op in enumerate(self.ops):
            requires[i] = (any(self.params[p].trainable for p in op.params)
                           or any(requires[producer] for producer, _ in op.inputs))
        return requires

    def _write_backward(self, writer: "_Writer", node_of_op: list[int], variable_of_param: dict[int, int]) -> None:
        requires = self._requires_grad()
        grads: list[list[tuple[int, int]]] = [[] for _ in self.ops]   # gradient contributions per op output
        param_grads: dict[int, list[tuple[int, int]]] = {}
        outputs = set(self.outputs)
        for i in reversed(range(len(self.ops))):
            op = self.ops[i]
            if not requires[i] or (not grads[i] and i not in outputs):
                continue  # needs no gradient, or does not reach an output
            prefix = "bwd/" + op.name
            dy = self._sum(writer, grads[i], prefix + "/grad_sum", op.value_bytes, op.group)
            data_inputs = [(p, b) for p, b in op.inputs if requires[p]]
            trainable = [p for p in op.params if self.params[p].trainable]
            produced = sum(b for _, b in data_inputs) + sum(self.params[p].nbytes for p in trainable)
            op_type = _GRAD_OP_TYPE.get(op.op_type, "Mul" if op.op_type in _ELEMENTWISE_TYPES else op.op_type)
            if op.op_type in ("Conv2D", "DepthwiseConv2D") and not data_inputs:
                op_type = "Conv2DBackpropFilter"
            if op.op_type in _DENSE:  # one product per differentiated operand: dx (per input), dW
                flops = op.flops * min(2, len(data_inputs) + (1 if trainable else 0))
            else:
                flops = op.flops * _GRAD_FLOPS_FACTOR.get(op.op_type, 1.0)
            free = op.free and op.op_type not in _GRAD_OF_VIEW_NOT_FREE
            node = writer.add(prefix, op_type, flops, 0 if free else produced, 0, op.group, free=free)
            if dy is not None:
                writer.edge(dy[0], node, dy[1])
            if op.op_type in _READS_OUTPUT:
                writer.edge(node_of_op[i], node, op.value_bytes)
            elif op.op_type not in _READS_NOTHING:
                for producer, nbytes in op.inputs:
                    writer.edge(node_of_op[producer], node, nbytes)
            if op.op_type not in _READS_NOTHING:
                for p in op.params:
                    if p in variable_of_param:
                        writer.edge(variable_of_param[p], node, self.params[p].nbytes)
            for producer, nbytes in data_inputs:
                grads[producer].append((node, nbytes))
            for p in trainable:
                param_grads.setdefault(p, []).append((node, self.params[p].nbytes))

        for p, contributions in param_grads.items():
            param = self.params[p]
            variable = variable_of_param[p]
            group = writer.group[variable]
            grad = self._sum(writer, contributions, f"bwd/{param.name}/grad_sum", param.nbytes, group)
            update = writer.add("update/" + param.name, "ApplyGradient", 2.0 * param.numel, 0, 0, group,
                                colocation=writer.colocation[variable])
            writer.edge(grad[0], update, grad[1])
            writer.edge(variable, update, param.nbytes)

    @staticmethod
    def _sum(writer: "_Writer", contributions: list, name: str, nbytes: int, group: int):
        """The node holding the summed gradient (an AddN when there are several), and its bytes."""
        if not contributions:
            return None
        if len(contributions) == 1:
            return contributions[0]
        elements = max(nbytes // 4, 1)
        node = writer.add(name, "AddN", float((len(contributions) - 1) * elements), nbytes, 0, group)
        for source, b in contributions:
            writer.edge(source, node, b)
        return node, nbytes


_ELEMENTWISE_TYPES = {"Add", "Mul", "Sub", "Div", "Relu", "Tanh", "Sigmoid", "Gelu", "BiasAdd", "Dropout", "Cast"}


class _Writer:
    """Columns of the graph being written; node names made unique."""

    def __init__(self):
        self.names: list[str] = []
        self.op_types: list[str] = []
        self.flops: list[float] = []
        self.output_bytes: list[int] = []
        self.param_bytes: list[int] = []
        self.group: list[int] = []
        self.colocation: list[int] = []
        self.cost: list[float] = []
        self.edges: dict[tuple[int, int], int] = {}
        self._used: dict[str, int] = {}  # last suffix per base name
        self._taken: set[str] = set()

    def add(self, name: str, op_type: str, flops: float, output_bytes: int, param_bytes: int, group: int,
            *, free: bool = False, colocation: int = -1) -> int:
        base = name or op_type
        unique, count = base, self._used.get(base, 0)
        while unique in self._taken:
            count += 1
            unique = f"{base}_{count}"
        self._used[base] = count
        self._taken.add(unique)
        self.names.append(unique)
        self.op_types.append(op_type)
        self.flops.append(float(flops))
        self.output_bytes.append(int(output_bytes))
        self.param_bytes.append(int(param_bytes))
        self.group.append(int(group))
        self.colocation.append(int(colocation))
        self.cost.append(0.0 if free else math.nan)
        return len(self.names) - 1

    def edge(self, src: int, dst: int, nbytes: int) -> None:
        if src == dst:
            return
        key = (src, dst)
        self.edges[key] = max(self.edges.get(key, 0), int(nbytes))

    def graph(self, name: str) -> Graph:
        n = len(self.names)
        edge_index = np.array(list(self.edges.keys()), dtype=np.int64).reshape(-1, 2).T.copy()
        edge_bytes = np.array(list(self.edges.values()), dtype=np.float64)
        cost = np.array(self.cost, dtype=np.float64)
        return Graph.from_arrays(
            edge_index.reshape(2, -1),
            flops=np.array(self.flops, dtype=np.float64),
            output_bytes=np.array(self.output_bytes, dtype=np.float64),
            param_bytes=np.array(self.param_bytes, dtype=np.float64),
            op_type=self.op_types,
            edge_bytes=edge_bytes,
            cost_us=cost if n and not np.isnan(cost).all() else None,
            names=self.names,
            group=np.array(self.group, dtype=np.int64),
            colocation=np.array(self.colocation, dtype=np.int64),
            name=name,
        )


def sanitize_name(name: str) -> str:
    """Names without whitespace or '/' runs, for readable node names."""
    return re.sub(r"\s+", "_", str(name)).strip("/") or "op"
