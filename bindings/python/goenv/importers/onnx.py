"""ONNX models to goenv graphs, one node per ONNX node.

    g = goenv.datasets.from_onnx("resnet50.onnx")

Shapes come from `onnx.shape_inference.infer_shapes`, without its data propagation
(which materializes values of any size a model asks for: Expand of a 7e11-long
shape took gigabytes); Reshape targets computed by Shape/Gather chains resolve by
the bounded constant folding below instead. A symbolic dimension
("batch") counts as 1, with one warning. Initializers and Constant nodes are not
nodes: their bytes become `param_bytes` on the op reading them, or a `Variable`
when several ops read them. With training=True the backward pass and updates are
appended as for PyTorch modules; floating-point initializers with more than one
element count as trainable weights. Ops are costed by the shared rules of
goenv.importers, keyed here by ONNX op type; Reshape, Flatten, Squeeze,
Unsqueeze, Identity, Shape and Size are free views.

Nodes are imported in topological order whatever their order in the file; a
cycle, a value two nodes produce, or an input nothing defines is InvalidGraph
naming the node. Constant folding runs a node only when ONNX's shape inference,
given the node's actual constant inputs, bounds every output to
_FOLD_MAX_ELEMENTS elements. A model file is read as a regular file of at most
MAX_FILE_BYTES; external tensor data is never read (costs need only the shapes).
"""

from __future__ import annotations

import heapq
import os
import warnings
from dataclasses import dataclass
from typing import Callable

from goenv._core import Graph, InvalidArgument, InvalidGraph
from goenv.extras import import_extra
from goenv.files import MAX_FILE_BYTES, read_regular_file
from goenv.importers.assembly import (
    CostRules,
    elementwise_op_flops,
    no_flops,
    reduction_op_flops,
    GraphAssembler,
    caller_stacklevel,
    conv_flops,
    einsum_flops,
    elementwise_flops,
    matmul_flops,
    norm_flops,
    numel,
    pool_flops,
    rnn_flops,
    sanitize_name,
    softmax_flops,
    unknown_op_flops,
)


@dataclass
class _Node:
    """What a cost rule sees: op type, input shapes (None for an omitted optional input), output
    shapes, attributes, and which inputs are initializers."""

    op: str
    ins: list
    outs: list
    attrs: dict
    constant_inputs: list

    def attr(self, name: str, default=None):
        return self.attrs.get(name, default)


_RULES = CostRules()
_rule = _RULES.add
_zero = no_flops
_elementwise = elementwise_op_flops


def _variadic(n: _Node) -> float:
    return elementwise_flops(n.outs[:1], max(len([s for s in n.ins if s is not None]) - 1, 1))

_reduction = reduction_op_flops


def _matmul_type(n: _Node) -> str:
    a, b = n.ins[0], n.ins[-1]
    return "BatchMatMul" if len(a) > 2 and len(b) > 2 else "MatMul"


def _conv_type(n: _Node) -> str:
    weight = n.ins[1]
    if len(weight) == 3:
        return "Conv1D"
    return "DepthwiseConv2D" if int(n.attr("group", 1)) > 1 and weight[1] == 1 else "Conv2D"


def _gemm(n: _Node) -> float:
    a = n.ins[0]
    k = a[0] if n.attr("transA", 0) else a[1]
    return matmul_flops(n.outs[0], k, bias=len(n.ins) > 2 and n.ins[2] is not None)


def _rnn(per_gate_element: float) -> Callable[[_Node], float]:
    """LSTM / GRU / RNN: X (T, B, I) (layout 1: (B, T, I)), W (dirs, gates*H, I), R (dirs, gates*H, H)."""

    def flops(n: _Node) -> float:
        x = n.ins[0]
        steps, batch = (x[1], x[0]) if n.attr("layout", 0) else (x[0], x[1])
        hidden = int(n.attr("hidden_size", n.ins[2][-1]))
        return rnn_flops(steps, batch, [n.ins[1], n.ins[2]], hidden, n.ins[1][0], per_gate_element)

    return flops


def _gather_type(n: _Node) -> str:
    return "Embedding" if n.constant_inputs and n.constant_inputs[0] and len(n.ins[0]) == 2 else "Gather"


def _einsum(n: _Node) -> float:
    equation = n.attr("equation", "")
    equation = equation.decode() if isinstance(equation, bytes) else equation
    return einsum_flops(equation, n.ins)


# Dense compute.
_rule("Conv", _conv_type, lambda n: conv_flops(n.outs[0], n.ins[1], bias=len(n.ins) > 2 and n.ins[2] is not None))
_rule("ConvTranspose", "Conv2DBackpropInput",
      lambda n: conv_flops(n.outs[0], n.ins[1], bias=len(n.ins) > 2 and n.ins[2] is not None, transposed=True,
                           input_shape=n.ins[0]))
_rule("Gemm", "MatMul", _gemm)
_rule("MatMul MatMulInteger", _matmul_type, lambda n: matmul_flops(n.outs[0], n.ins[0][-1]))
_rule("QLinearMatMul", "MatMul", lambda n: matmul_flops(n.outs[0], n.ins[0][-1]))
_rule("Einsum", lambda n: "BatchMatMul" if any(len(s) > 2 for s in n.ins) else "MatMul", _einsum)
_rule("LSTM", "LSTMCell", _rnn(8.0))
_rule("GRU", "LSTMCell", _rnn(6.0))
_rule("RNN", "LSTMCell", _rnn(2.0))

# Normalization, softmax, pooling, losses, reductions.
_rule("BatchNormalization InstanceNormalization", "BatchNorm", lambda n: norm_flops(n.ins[0]))
_rule("LayerNormalization GroupNormalization RMSNormalization com.microsoft.SkipLayerNormalization "
      "com.microsoft.SimplifiedLayerNormalization com.microsoft.SkipSimplifiedLayerNormalization", "LayerNorm",
      lambda n: norm_flops(n.ins[0]))
_rule("Softmax LogSoftmax Hardmax", "Softmax", lambda n: softmax_flops(n.outs[0]))
_rule("MaxPool", "MaxPool", lambda n: pool_flops(n.outs[0], n.attr("kernel_shape")))
_rule("AveragePool LpPool", "AvgPool", lambda n: pool_flops(n.outs[0], n.attr("kernel_shape")))
_rule("GlobalAveragePool GlobalLpPool", "AvgPool", _reduction)
_rule("GlobalMaxPool", "MaxPool", _reduction)
_rule("SoftmaxCrossEntropyLoss NegativeLogLikelihoodLoss", "CrossEntropy", lambda n: 5.0 * _reduction(n))
_rule("ReduceSum ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceSumSquare "
      "ArgMax ArgMin CumSum", "Sum", _reduction)
_rule("ReduceMean", "Mean", _reduction)

# Elementwise: 1 FLOP per output element.
_rule("Add", "Add", _elementwise)
_rule("Sub", "Sub", _elementwise)
_rule("Mul Pow Exp Log Sqrt Erf Neg Abs Sign Floor Ceil Round Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh "
      "Atanh Where Equal Less LessOrEqual Greater GreaterOrEqual Not And Or Xor BitwiseAnd BitwiseOr BitwiseNot "
      "BitwiseXor IsNaN IsInf Trilu BitShift", "Mul", _elementwise)
_rule("Div Mod Reciprocal", "Div", _elementwise)
_rule("Relu LeakyRelu PRelu Elu Selu Celu ThresholdedRelu HardSigmoid HardSwish Clip Shrink", "Relu", _elementwise)
_rule("Max Min", "Relu", _variadic)
_rule("Sum Mean", "AddN", _variadic)
_rule("Gelu com.microsoft.Gelu com.microsoft.FastGelu com.microsoft.BiasGelu Mish", "Gelu", _elementwise)
_rule("Sigmoid Softplus", "Sigmoid", _elementwise)
_rule("Tanh Softsign", "Tanh", _elementwise)
_rule("Dropout", "Dropout", _elementwise)
_rule("Resize Upsample GridSample", "Mul", lambda n: elementwise_flops(n.outs[:1], 4.0))

# Data movement: no FLOPs; the bytes are the cost.
_rule("Cast CastLike QuantizeLinear DequantizeLinear", "Cast", _zero)
_rule("Concat Tile Expand", "Concat", _zero)
_rule("Split", "Split", _zero)
_rule("Slice", "Slice", _zero)
_rule("Pad", "Pad", _zero)
_rule("Transpose DepthToSpace SpaceToDepth", "Transpose", _zero)
_rule("Gather", _gather_type, _zero)
_rule("GatherElements GatherND ScatterND ScatterElements Scatter OneHot Compress", "Gather", _zero)
_rule("ConstantOfShape Range EyeLike RandomNormal RandomUniform RandomNormalLike RandomUniformLike", "Constant",
      _zero)

# Views: free.
_rule("Reshape Flatten Squeeze Unsqueeze Identity Shape Size", "Reshape", _zero, free=True)


# ---------------------------------------------------------------------------


def from_onnx(path_or_model, *, training: bool = True, name: str | None = None) -> Graph:
    """A goenv graph of an ONNX model: a file path, serialized bytes, or an onnx.ModelProto."""
    onnx = import_extra("onnx", extra="onnx", feature="goenv.datasets.from_onnx")
    model = _topologically_sorted(onnx, _load(onnx, path_or_model))
    inferred, folded = _fold_shape_computations(onnx, model)
    graph = inferred.graph
    graph_name = name or graph.name or "onnx"
    assembler = GraphAssembler(graph_name, "onnx")
    importer = _Importer(onnx, assembler, training, folded)
    importer.run(graph)
    if not any(not op.is_input for op in assembler.ops):
        raise InvalidArgument(f"from_onnx: {graph_name} has no nodes")
    return assembler.build(training=training)


_FOLD_MAX_ELEMENTS = 4096  # shapes, indices, scalars: what shape computations handle
_NEVER_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli",
               "If", "Loop", "Scan", "SequenceConstruct", "SequenceInsert", "SequenceAt", "SplitToSequence"}


def _infer(onnx, model):
    try:
        return onnx.shape_inference.infer_shapes(model, data_prop=False)
    except Exception as error:  # noqa: BLE001 - a model shape inference rejects is still importable
        warnings.warn(f"goenv onnx importer: shape inference failed ({str(error)[:300]}); using the shapes stored "
                      f"in the model", UserWarning, stacklevel=caller_stacklevel())
        return model


def _static_shapes(graph) -> dict:
    shapes = {}
    for value_info in list(graph.input) + list(graph.value_info) + list(graph.output):
        if value_info.type.WhichOneof("value") != "tensor_type" or not value_info.type.tensor_type.HasField("shape"):
            continue
        dims = value_info.type.tensor_type.shape.dim
        if all(d.HasField("dim_value") for d in dims):
            shapes[value_info.name] = [int(d.dim_value) for d in dims]
    return shapes


def _fold_shape_computations(onnx, model):
    """Constant-folds what a runtime folds before running: Constant nodes, Shape/Size of statically
    shaped tensors, and small computations on constants only (shape arithmetic, as the legacy
    PyTorch exporter writes it); then infers shapes again, until nothing new folds. Returns the
    model to import (folded nodes replaced by initializers) and the names of the folded values."""
    import numpy as np
    from onnx import numpy_helper

    inferred = _infer(onnx, model)
    graph = model.graph
    constants = {t.name: t for t in graph.initializer if numel(t.dims) <= _FOLD_MAX_ELEMENTS}
    values: dict = {}  # folded or small constant values, as numpy
    folded_nodes: set[int] = set()
    folded: dict[str, object] = {}  # name -> TensorProto

    def value(name):
        if name not in values:
            values[name] = numpy_helper.to_array(constants[name])
        return values[name]

    for _ in range(16):
        shapes = _static_shapes(inferred.graph)
        progress = False
        for i, node in enumerate(graph.node):
            if i in folded_nodes or node.domain not in ("", "ai.onnx") or node.op_type in _NEVER_FOLD:
                continue
            if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in node.attribute):
                continue
            inputs = [name for name in node.input if name]
            try:
                if node.op_type in ("Shape", "Size"):
                    if not inputs or inputs[0] not in shapes:
                        continue
                    shape = shapes[inputs[0]]
                    if node.op_type == "Size":
                        outputs = [np.array(numel(shape), dtype=np.int64)]
                    else:
                        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
                        start, end = attrs.get("start", 0), attrs.get("end", len(shape))
                        outputs = [np.array(shape[start:end], dtype=np.int64)]
                elif all(name in constants or name in folded for name in inputs):
                    from onnx.reference import ReferenceEvaluator

                    feeds = {name: value(name) for name in inputs}
                    if not _fold_outputs_small(onnx, node, feeds, model.opset_import):
                        continue  # e.g. ConstantOfShape([1e6, 1e6]): never computed
                    outputs = ReferenceEvaluator(node).run(None, feeds)
                else:
                    continue
            except Exception:  # noqa: BLE001 - not foldable here: it stays a node
                continue
            if any(not isinstance(out, np.ndarray) or out.size > _FOLD_MAX_ELEMENTS for out in outputs):
                continue
            for name, out in zip(node.output, outputs):
                if name:
                    tensor = numpy_helper.from_array(np.asarray(out), name)
                    folded[name] = constants[name] = tensor
                    values[name] = np.asarray(out)
            folded_nodes.add(i)
            progress = True
        if not progress:
            break
        remaining = [node for i, node in enumerate(graph.node) if i not in folded_nodes]
        initializers = list(graph.initializer) + list(folded.values())
        rewritten = onnx.helper.make_graph(remaining, graph.name, graph.input, graph.output, initializers,
                                           value_info=[])
        rewritten.sparse_initializer.extend(graph.sparse_initializer)
        model = onnx.helper.make_model(rewritten, opset_imports=model.opset_import, ir_version=model.ir_version)
        inferred = _infer(onnx, model)
    return inferred, set(folded)


def _fold_outputs_small(onnx, node, feeds: dict, opset_import) -> bool:
    """Whether every output of `node` has a static shape of at most _FOLD_MAX_ELEMENTS elements,
    as ONNX's shape inference derives it from the node's actual constant inputs (not from shapes
    the model states, which may be wrong), before anything is computed."""
    from onnx import numpy_helper

    graph = onnx.helper.make_graph([node], "fold", [], [],
                                   [numpy_helper.from_array(array, name) for name, array in feeds.items()])
    try:
        inferred = onnx.shape_inference.infer_shapes(
            onnx.helper.make_model(graph, opset_imports=opset_import), strict_mode=True)
    except Exception:  # noqa: BLE001 - no inferred shape: not folded
        return False
    shapes = _static_shapes(inferred.graph)
    outputs = [name for name in node.output if name]
    return all(name in shapes and numel(shapes[name]) <= _FOLD_MAX_ELEMENTS for name in outputs)


def _topologically_sorted(onnx, model):
    """The model with its nodes in topological order (file order among ready nodes; the model
    itself when already sorted). InvalidGraph naming the node for an input nothing defines, a
    value produced twice, or a cycle."""
    graph = model.graph
    nodes = list(graph.node)

    def label(i: int) -> str:
        return f"node '{nodes[i].name or f'{nodes[i].op_type}_{i}'}' ({nodes[i].op_type})"

    defined = {t.name for t in graph.initializer} | {t.values.name for t in graph.sparse_initializer}
    defined |= {v.name for v in graph.input}
    producer: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for name in node.output:
            if not name:
                continue
            if name in producer or name in defined:
                raise InvalidGraph(f"from_onnx: {label(i)} produces '{name}', which "
                                   f"{label(producer[name]) if name in producer else 'an input or initializer'} "
                                   f"already defines")
            producer[name] = i
    waiting = [0] * len(nodes)  # inputs each node still waits for
    readers: dict[int, list[int]] = {}
    for i, node in enumerate(nodes):
        for name in node.input:
            if not name or name in defined:
                continue
            if name not in producer:
                raise InvalidGraph(f"from_onnx: {label(i)} reads '{name}', which no node, graph input or "
                                   f"initializer defines")
            waiting[i] += 1
            readers.setdefault(producer[name], []).append(i)
    ready = [i for i in range(len(nodes)) if waiting[i] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for j in readers.get(i, []):
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, j)
    if len(order) < len(nodes):  # follow unfinished inputs back until a node repeats: it is on a cycle
        i, seen = next(i for i in range(len(nodes)) if waiting[i]), set()
        while i not in seen:
            seen.add(i)
            i = next(producer[name] for name in nodes[i].input if name in producer and waiting[producer[name]])
        raise InvalidGraph(f"from_onnx: {label(i)} is on a cycle (its inputs depend on its own output)")
    if order == sorted(order):
        return model
    ordered = onnx.ModelProto()
    ordered.CopyFrom(model)  # never reorder the caller's model in place
    del ordered.graph.node[:]
    ordered.graph.node.extend(nodes[i] for i in order)
    return ordered


def _load(onnx, path_or_model):
    if isinstance(path_or_model, onnx.ModelProto):
        return path_or_model
    if isinstance(path_or_model, (bytes, bytearray)):
        try:
            return onnx.load_from_string(bytes(path_or_model))
        except Exception as error:  # noqa: BLE001
            raise InvalidGraph(f"from_onnx: the bytes are not an ONNX model ({error})") from error
    if isinstance(path_or_model, (str, os.PathLike)):
        path = os.fspath(path_or_model)
        data = read_regular_file(path, MAX_FILE_BYTES, what="ONNX model", error=InvalidGraph)
        try:
            return onnx.load_from_string(data)
        except Exception as error:  # noqa: BLE001
            raise InvalidGraph(f"from_onnx: {path} is not an ONNX model ({error})") from error
    raise InvalidArgument(f"from_onnx needs a path, bytes or onnx.ModelProto, got {type(path_or_model).__name__}")


class _Importer:
    def __init__(self, onnx, assembler: GraphAssembler, training: bool, folded: set):
        self.onnx = onnx
        self.folded = folded  # values constant-folded at import: shapes and indices, never trained
        self.assembler = assembler
        self.training = training
        self.shapes: dict[str, tuple | None] = {}
        self.itemsize: dict[str, int] = {}
        self.values: dict[str, tuple] = {}  # name -> ("tensor", op, bytes) | ("param", index)
        self.symbolic: set[str] = set()

    def _itemsize(self, elem_type: int) -> int:
        try:
            return int(self.onnx.helper.tensor_dtype_to_np_dtype(elem_type).itemsize) or 4
        except Exception:  # noqa: BLE001 - undefined or string types
            return 4

    def _record(self, value_info) -> None:
        kind = value_info.type.WhichOneof("value")
        if kind != "tensor_type":
            return
        tensor_type = value_info.type.tensor_type
        self.itemsize[value_info.name] = self._itemsize(tensor_type.elem_type)
        if not tensor_type.HasField("shape"):
            self.shapes.setdefault(value_info.name, None)
            return
        dims = []
        for dim in tensor_type.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value > 0:
                dims.append(int(dim.dim_value))
            else:
                self.symbolic.add(dim.dim_param or "?")
                dims.append(1)
        self.shapes[value_info.name] = tuple(dims)

    def _nbytes(self, name: str) -> int:
        shape = self.shapes.get(name)
        return numel(shape) * self.itemsize.get(name, 4) if shape is not None else 0

    def _add_constant(self, name: str, tensor) -> None:
        shape = tuple(int(d) for d in tensor.dims)
        self.shapes[name] = shape
        self.itemsize[name] = self._itemsize(tensor.data_type)
        floating = tensor.data_type in (self.onnx.TensorProto.FLOAT, self.onnx.TensorProto.DOUBLE,
                                        self.onnx.TensorProto.FLOAT16, self.onnx.TensorProto.BFLOAT16)
        trainable = floating and numel(shape) > 1 and name not in self.folded
        index = self.assembler.add_param(name, self._nbytes(name), numel(shape), trainable)
        self.values[name] = ("param", index)

    def run(self, graph) -> None:
        for value_info in list(graph.input) + list(graph.value_info) + list(graph.output):
            self._record(value_info)
        for tensor in graph.initializer:
            self._add_constant(tensor.name, tensor)
        for sparse in graph.sparse_initializer:
            self._add_constant(sparse.values.name, sparse.values)
        for value_info in graph.input:
            if value_info.name in self.values:
                continue  # an initializer listed as an input (opset < 9 style)
            nbytes = self._nbytes(value_info.name)
            self.values[value_info.name] = ("tensor", self.assembler.add_input(value_info.name, nbytes), nbytes)
        if self.symbolic:
            warnings.warn(f"goenv onnx importer: symbolic dimensions {sorted(self.symbolic)} are taken as 1; export "
                          f"the model with static shapes for realistic costs", UserWarning,
                          stacklevel=caller_stacklevel())
        for i, node in enumerate(graph.node):
            self._add_node(i, node)
        for value_info in graph.output:
            value = self.values.get(value_info.name)
            if value and value[0] == "tensor":
                self.assembler.mark_output(value[1])

    def _add_node(self, i: int, node) -> None:
        onnx = self.onnx
        key = node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}"
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if key == "Constant":
            tensor = attrs.get("value")
            if isinstance(tensor, onnx.TensorProto) and node.output:
                self._add_constant(node.output[0], tensor)
            elif node.output:  # value_float(s) / value_int(s) / value_string(s): tiny
                self.values[node.output[0]] = ("param", self.assembler.add_param(node.output[0], 8, 1, False))
            return
        inputs, params, ins, constant_inputs = [], [], [], []
        for name in node.input:
            if not name:
                ins.append(None)
                constant_inputs.append(False)
                continue
            value = self.values.get(name)
            ins.append(self.shapes.get(name))
            constant_inputs.append(bool(value and value[0] == "param"))
            if value is None:
                continue
            if value[0] == "param":
                params.append(value[1])
            else:
                inputs.append((value[1], value[2]))
        outputs = [name for name in node.output if name]
        unknown_shape = [name for name in outputs if self.shapes.get(name) is None]
        for name in unknown_shape:  # no inferred shape: assume the first input's (elementwise-like)
            self.shapes[name] = next((s for s in ins if s is not None), (1,))
            self.itemsize.setdefault(name, 4)
        n = _Node(key, [s if s is not None else () for s in ins], [self.shapes[name] for name in outputs], attrs,
                  constant_inputs)
        rule = _RULES.get(key)
        free = False
        shape_note = " (shape inference gave no output shape; taken as its first input's)" if unknown_shape else ""
        if rule is None:
            op_type, flops = "Other", unknown_op_flops(n.outs)
            self.assembler.warn_unknown(key, "1 FLOP per output element" + shape_note)
        elif unknown_shape:
            self.assembler.warn_once(key, f"goenv onnx importer: shape inference gave no output shape for op "
                                          f"'{key}'; its outputs are taken to have its first input's shape")
        if rule is not None:
            op_type_rule, flops_rule, free = rule
            try:
                op_type = op_type_rule(n) if callable(op_type_rule) else op_type_rule
                flops = float(flops_rule(n))
            except Exception:  # noqa: BLE001 - unusual attributes: estimate rather than fail
                op_type, flops, free = "Other", unknown_op_flops(n.outs), False
                self.assembler.warn_unknown(key, "1 FLOP per output element (its cost rule did not fit the node)")
        if op_type == "Constant":
            inputs, params = [], []
        if key in ("BatchNormalization", "InstanceNormalization"):  # running statistics are not trained
            for position, name in enumerate(node.input):
                value = self.values.get(name)
                if position >= 3 and value and value[0] == "param":
                    self.assembler.params[value[1]].trainable = False
        output_bytes = sum(self._nbytes(name) for name in outputs)
        op = self.assembler.add_op(sanitize_name(node.name or f"{node.op_type}_{i}"), op_type, flops, output_bytes,
                                   inputs, params, free=free)
        for name in outputs:
            self.values[name] = ("tensor", op, self._nbytes(name))
