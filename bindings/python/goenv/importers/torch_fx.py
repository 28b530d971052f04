"""PyTorch modules to goenv graphs, one node per ATen op.

    g = goenv.datasets.from_torch(model, (x,))                 # the forward pass
    g = goenv.datasets.from_torch(model, (x,), training=True)  # + backward pass and updates

The module is traced with `torch.export.export` (non-strict), which keeps
high-level ATen ops (linear, conv2d, layer_norm, scaled_dot_product_attention)
and records every tensor's shape. Modules export cannot trace (data-dependent
control flow, unsupported Python) fall back, with a warning, to recording the
ATen ops of one eager run on the example inputs (a TorchDispatchMode): the same
ops, costed by the same rules, along the path that run took.

Parameters are not nodes: each becomes `param_bytes` on the op that reads it, or
a `Variable` node when several ops read it or when training=True (the
ApplyGradient of a parameter is colocated with its Variable). Buffers and lifted
constants are resident bytes too, never updated. User inputs are `Input` nodes.
The module's mode (train/eval) is used as given.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import operator
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Callable

from goenv._core import Graph, InvalidArgument
from goenv.importers.assembly import (
    CostRules,
    elementwise_op_flops,
    no_flops,
    reduction_op_flops,
    GraphAssembler,
    attention_flops,
    caller_stacklevel,
    conv_flops,
    einsum_flops,
    elementwise_flops,
    matmul_flops,
    norm_flops,
    numel,
    pool_flops,
    reduction_flops,
    rnn_flops,
    sanitize_name,
    softmax_flops,
    unknown_op_flops,
)


# References are plain objects, not tuples, so torch's pytree treats them as leaves.
@dataclass(frozen=True)
class _TensorRef:
    op: int       # producing op in the assembler
    nbytes: int


@dataclass(frozen=True)
class _ParamRef:
    index: int    # parameter in the assembler


_NO_REF = "no tensor"  # stands for a non-tensor output (None would vanish from pytree leaves)


@dataclass
class _Call:
    """What a cost rule sees: ATen op name, arguments (tensors replaced by their shapes), shapes."""

    packet: str
    args: tuple
    kwargs: dict
    ins: list      # shapes of the tensor arguments, in argument order
    outs: list     # shapes of the tensor outputs

    def arg(self, index: int, name: str | None = None, default: Any = None) -> Any:
        if index < len(self.args):
            return self.args[index]
        return self.kwargs.get(name, default) if name else default


# ---------------------------------------------------------------------------
# Cost rules keyed by ATen op name (the overload packet; in-place variants
# "add_" use the rule of "add").

_RULES = CostRules()
_rule = _RULES.add
_zero = no_flops
_elementwise = elementwise_op_flops

_reduction = reduction_op_flops


def _matmul_type(c: _Call) -> str:
    return "BatchMatMul" if len(c.ins) > 1 and len(c.ins[0]) > 2 and len(c.ins[-1]) > 2 else "MatMul"


def _contracted(shape) -> int:
    return shape[-1] if shape else 1


def _is_transposed(c: _Call) -> bool:
    if c.packet.startswith("conv_transpose"):
        return True
    return c.packet in ("convolution", "_convolution", "convolution_overrideable") and bool(c.arg(6, "transposed"))


def _conv_type(c: _Call) -> str:
    weight, data = c.ins[1], c.ins[0]
    if _is_transposed(c):
        return "Conv2DBackpropInput"  # a transposed conv is the input gradient of a conv (TF's name)
    if len(weight) == 3:
        return "Conv1D"
    channels = data[-(len(weight) - 1)] if len(data) >= len(weight) - 1 else 1
    return "DepthwiseConv2D" if weight[1] == 1 and channels > 1 else "Conv2D"


def _conv(c: _Call) -> float:
    return conv_flops(c.outs[0], c.ins[1], bias=len(c.ins) > 2, transposed=_is_transposed(c), input_shape=c.ins[0])


def _pool(c: _Call) -> float:
    kernel = c.arg(1, "kernel_size")
    spatial = len(kernel) if isinstance(kernel, (list, tuple)) else int(c.packet.split("pool")[1][0])
    return pool_flops(c.outs[0], kernel, spatial)


def _minmax_type(c: _Call) -> str:
    return "Relu" if len(c.ins) >= 2 else "Sum"  # max(a, b) is elementwise; max(a) / max(a, dim) reduce


def _minmax(c: _Call) -> float:
    return _elementwise(c) if len(c.ins) >= 2 else _reduction(c)


def _rnn(hidden_states: int, per_gate_element: float) -> Callable[[_Call], float]:
    """aten.lstm / gru / rnn_*: (input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first)."""

    def flops(c: _Call) -> float:
        data = c.ins[0]
        batch_first = bool(c.arg(8, "batch_first", False))
        steps, batch = (data[0], 1) if len(data) == 2 else ((data[1], data[0]) if batch_first else data[:2])
        hidden = c.ins[1][-1]
        cells = int(c.arg(4, "num_layers", 1)) * (2 if c.arg(7, "bidirectional", False) else 1)
        return rnn_flops(steps, batch, c.ins[1 + hidden_states:], hidden, cells, per_gate_element)

    return flops


def _rnn_cell(hidden_states: int, per_gate_element: float) -> Callable[[_Call], float]:
    """aten.lstm_cell / gru_cell / rnn_tanh_cell: (input, hx, w_ih, w_hh, b_ih, b_hh)."""

    def flops(c: _Call) -> float:
        batch = c.ins[0][0] if len(c.ins[0]) == 2 else 1
        return rnn_flops(1, batch, c.ins[1 + hidden_states:], c.ins[1][-1], 1, per_gate_element)

    return flops


# Dense compute.
_rule("mm bmm matmul mv dot vdot inner", _matmul_type, lambda c: matmul_flops(c.outs[0], _contracted(c.ins[0])))
_rule("addmm addmv addbmm baddbmm", _matmul_type,
      lambda c: matmul_flops(c.outs[0], _contracted(c.ins[1]), bias=True))
# Pairwise distances of (..., P, M) and (..., R, M): a difference, a square and a sum per pair and
# feature (p=2; other norms cost about the same), like a product contracting M.
_rule("cdist _cdist_forward", "MatMul", lambda c: 1.5 * matmul_flops(c.outs[0], _contracted(c.ins[0])))
_rule("linear", "MatMul", lambda c: matmul_flops(c.outs[0], _contracted(c.ins[1]), bias=len(c.ins) > 2))
_rule("outer ger", "Mul", _elementwise)
_rule("einsum", lambda c: "BatchMatMul" if any(len(s) > 2 for s in c.ins) else "MatMul",
      lambda c: einsum_flops(c.arg(0, "equation"), c.ins))
_rule("scaled_dot_product_attention _scaled_dot_product_flash_attention _scaled_dot_product_efficient_attention "
      "_scaled_dot_product_flash_attention_for_cpu _scaled_dot_product_attention_math "
      "_scaled_dot_product_cudnn_attention", "BatchMatMul", lambda c: attention_flops(*c.ins[:3]))
_rule("conv1d conv2d conv3d convolution _convolution convolution_overrideable conv_transpose1d conv_transpose2d "
      "conv_transpose3d cudnn_convolution mkldnn_convolution _conv_depthwise2d", _conv_type, _conv)
_rule("lstm", "LSTMCell", _rnn(2, 8.0))
_rule("gru", "LSTMCell", _rnn(1, 6.0))
_rule("rnn_tanh rnn_relu", "LSTMCell", _rnn(1, 2.0))
_rule("lstm_cell", "LSTMCell", _rnn_cell(2, 8.0))
_rule("gru_cell", "LSTMCell", _rnn_cell(1, 6.0))
_rule("rnn_tanh_cell rnn_relu_cell", "LSTMCell", _rnn_cell(1, 2.0))
_rule("embedding embedding_bag _embedding_bag", "Embedding", _zero)

# Normalization, softmax, pooling, losses.
_rule("batch_norm native_batch_norm _native_batch_norm_legit _native_batch_norm_legit_no_training "
      "_native_batch_norm_legit_functional cudnn_batch_norm miopen_batch_norm instance_norm", "BatchNorm",
      lambda c: norm_flops(c.ins[0]))
_rule("layer_norm native_layer_norm group_norm native_group_norm rms_norm _fused_rms_norm", "LayerNorm",
      lambda c: norm_flops(c.ins[0]))
_rule("softmax _softmax log_softmax _log_softmax _safe_softmax", "Softmax", lambda c: softmax_flops(c.outs[0]))
_rule("max_pool1d max_pool2d max_pool3d max_pool1d_with_indices max_pool2d_with_indices max_pool3d_with_indices",
      "MaxPool", _pool)
_rule("avg_pool1d avg_pool2d avg_pool3d", "AvgPool", _pool)
_rule("adaptive_avg_pool1d adaptive_avg_pool2d adaptive_avg_pool3d _adaptive_avg_pool2d _adaptive_avg_pool3d",
      "AvgPool", _reduction)
_rule("adaptive_max_pool1d adaptive_max_pool2d adaptive_max_pool3d", "MaxPool", _reduction)
_rule("cross_entropy_loss nll_loss nll_loss_forward nll_loss2d_forward nll_loss_nd mse_loss l1_loss "
      "smooth_l1_loss huber_loss binary_cross_entropy binary_cross_entropy_with_logits kl_div "
      "soft_margin_loss", "CrossEntropy", lambda c: 5.0 * reduction_flops(c.ins[0]))

# Reductions.
_rule("sum nansum prod all any count_nonzero argmax argmin amax amin aminmax logsumexp cumsum cumprod "
      "logcumsumexp cummax cummin median nanmedian", "Sum", _reduction)
_rule("mean nanmean", "Mean", _reduction)
_rule("var std var_mean std_mean", "Mean", lambda c: reduction_flops(c.ins[0], 3.0))
_rule("norm linalg_vector_norm frobenius_norm", "Sum", lambda c: reduction_flops(c.ins[0], 2.0))
_rule("max min", _minmax_type, _minmax)

# Elementwise: 1 FLOP per output element.
_rule("add lerp", "Add", _elementwise)
_rule("sub rsub", "Sub", _elementwise)
_rule("diff", "Sub", lambda c: (c.arg(1, "n") or 1) * _elementwise(c))  # n-th differences (GPT-2's position ids)
_rule("mul multiply square pow exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan atan2 sinh cosh "
      "asinh acosh atanh erf erfc erfinv neg abs sign sgn floor ceil round trunc frac where masked_fill eq ne lt "
      "le gt ge logical_and logical_or logical_not logical_xor bitwise_and bitwise_or bitwise_not bitwise_xor "
      "isnan isinf isfinite nan_to_num fill zero tril triu addcmul xlogy hypot copysign heaviside positive logit "
      "__and__ __or__ __xor__ __lshift__ __rshift__", "Mul", _elementwise)
_rule("div true_divide floor_divide remainder fmod reciprocal addcdiv", "Div", _elementwise)
_rule("relu relu6 leaky_relu hardtanh clamp clamp_min clamp_max clip maximum minimum fmax fmin threshold prelu "
      "_prelu_kernel rrelu elu selu celu hardswish hardsigmoid hardshrink softshrink", "Relu", _elementwise)
_rule("gelu silu mish", "Gelu", _elementwise)
_rule("sigmoid log_sigmoid log_sigmoid_forward softplus", "Sigmoid", _elementwise)
_rule("tanh softsign", "Tanh", _elementwise)
_rule("dropout native_dropout feature_dropout alpha_dropout feature_alpha_dropout bernoulli", "Dropout",
      _elementwise)
_rule("upsample_bilinear2d upsample_linear1d upsample_bicubic2d upsample_trilinear3d grid_sampler_2d "
      "_upsample_bilinear2d_aa _upsample_bicubic2d_aa", "Mul", lambda c: elementwise_flops(c.outs[:1], 4.0))

# Ordering and counting. A comparison sort of n keys along a dim: n*log2(n) comparisons per row;
# top-k by a heap over the dim: log2(k) per input element; a histogram: one bin update per element.
def _sort_flops(c: _Call) -> float:
    shape = c.ins[0] if c.ins else ()
    dim = c.arg(1, "dim", -1)
    n = shape[dim] if shape and isinstance(dim, int) and -len(shape) <= dim < len(shape) else 1
    return reduction_flops(shape, max(1.0, math.log2(max(n, 2))))


def _topk_flops(c: _Call) -> float:
    k = c.arg(1, "k", 1)
    return reduction_flops(c.ins[0], max(1.0, math.log2(max(int(k) if isinstance(k, int) else 2, 2))))


_rule("sort argsort msort", "Other", _sort_flops)
# FFTs: 5 n log2 n per transform of length n (the radix-2 count), n the output elements.
_rule("fft_fft fft_ifft fft_rfft fft_irfft fft_fftn fft_ifftn fft_rfftn fft_irfftn fft_fft2 fft_ifft2 fft_rfft2 "
      "fft_irfft2 fft_hfft fft_ihfft _fft_r2c _fft_c2r _fft_c2c stft istft", "Other",
      lambda c: 5.0 * numel(c.outs[0]) * max(1.0, math.log2(max(numel(c.outs[0]), 2))))
# Weight normalization (g * v / ||v||): a norm and a scale over the weight, 3 FLOPs per element.
_rule("_weight_norm _weight_norm_interface", "LayerNorm", lambda c: reduction_flops(c.ins[0], 3.0))
_rule("_is_all_true _is_any_true", "Sum", _reduction)
# Gated linear unit a * sigmoid(b): the sigmoid and the product, 2 FLOPs per output element.
_rule("glu", "Sigmoid", lambda c: elementwise_flops(c.outs[:1], 2.0))
_rule("polar", "Mul", lambda c: elementwise_flops(c.outs[:1], 3.0))  # r*cos(t), r*sin(t)
_rule("linalg_norm", "Sum", lambda c: reduction_flops(c.ins[0], 2.0))
# vmap's batch-dimension markers (functorch) move no data.
_rule("torch._functorch.predispatch._add_batch_dim torch._functorch.predispatch._remove_batch_dim", "Reshape",
      _zero, free=True)
_rule("topk kthvalue", "Other", _topk_flops)
_rule("histc bincount histogram bucketize searchsorted unique unique_consecutive _unique2", "Sum", _reduction)
# Grouped (per-expert) products, torch's and transformers' fallback: tokens (M, K) against
# per-group weights (G, K, N) give (M, N), each token through its group's weight: 2*K per output.
_rule("_grouped_mm transformers.grouped_mm_fallback transformers.grouped_mm", "MatMul",
      lambda c: matmul_flops(c.outs[0], c.ins[0][-1]))

# Data movement: no FLOPs; the bytes are the cost.
_rule("_to_copy to type_as clone contiguous copy _copy_from lift_fresh_copy detach_copy view_copy", "Cast", _zero)
_rule("cat concat concatenate stack hstack vstack dstack repeat tile repeat_interleave expand_copy", "Concat", _zero)
_rule("constant_pad_nd pad reflection_pad1d reflection_pad2d reflection_pad3d replication_pad1d replication_pad2d "
      "replication_pad3d zero_pad2d", "Pad", _zero)
_rule("flip roll rot90 pixel_shuffle pixel_unshuffle channel_shuffle native_channel_shuffle", "Transpose", _zero)
_rule("index_select gather index take take_along_dim masked_select nonzero one_hot scatter scatter_add "
      "scatter_reduce index_add index_put index_copy index_fill masked_scatter select_scatter slice_scatter "
      "diagonal_scatter im2col col2im upsample_nearest1d upsample_nearest2d upsample_nearest3d _upsample_nearest_exact2d",
      "Gather", _zero)

# Views: free.
_rule("meshgrid broadcast_tensors view _unsafe_view reshape reshape_as flatten unflatten squeeze unsqueeze expand expand_as view_as alias detach "
      "lift_fresh as_strided _reshape_alias unfold view_as_real view_as_complex real imag broadcast_to atleast_1d "
      "atleast_2d atleast_3d conj _conj resolve_conj resolve_neg", "Reshape", _zero, free=True)
_rule("t transpose permute swapaxes swapdims movedim moveaxis numpy_T mT mH adjoint", "Transpose", _zero, free=True)
_rule("select slice narrow diagonal unbind", "Slice", _zero, free=True)
_rule("split split_with_sizes chunk tensor_split unsafe_split unsafe_chunk unsafe_split_with_sizes", "Split", _zero,
      free=True)

# Tensor factories: no data read from their tensor arguments (only shapes).
_rule("zeros ones full empty empty_like zeros_like ones_like full_like rand randn randint rand_like randn_like "
      "randint_like randperm arange linspace logspace eye scalar_tensor new_zeros new_ones new_full new_empty "
      "new_empty_strided empty_strided empty_permuted normal uniform", "Constant", _zero)


def _packet_name(target) -> tuple[str, str]:
    """(rule key, display name) of a call target: ("linear", "aten.linear")."""
    packet = getattr(target, "overloadpacket", None)
    if packet is not None:
        namespace = getattr(target, "namespace", "aten")
        base = packet.__name__
        key = base[:-1] if base.endswith("_") and not base.endswith("__") else base
        return (key if namespace == "aten" else f"{namespace}.{base}"), f"{namespace}.{base}"
    name = getattr(target, "__name__", None) or str(target)
    module = getattr(target, "__module__", None) or ""
    qualified = f"{module}.{name}" if module else name
    return qualified, qualified


# ---------------------------------------------------------------------------


def from_torch(module, example_inputs=(), *, example_kwargs: dict | None = None, training: bool = True,
               name: str | None = None) -> Graph:
    """A goenv graph of `module` called on `example_inputs` (a tensor or a tuple of positional
    arguments) and `example_kwargs` (keyword arguments)."""
    try:
        import torch
    except ImportError as error:  # pragma: no cover - torch is a dependency of the test environment
        raise ImportError("goenv.datasets.from_torch needs PyTorch: pip install torch") from error
    if not isinstance(module, torch.nn.Module):
        raise InvalidArgument(f"from_torch needs a torch.nn.Module, got {type(module).__name__}")
    args = tuple(example_inputs) if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
    kwargs = dict(example_kwargs or {})
    graph_name = name or type(module).__name__
    assembler = GraphAssembler(graph_name, "torch")
    with _no_kv_cache(module, training):
        try:
            program = _export_quietly(torch, module, args, kwargs)
        except Exception as error:  # noqa: BLE001 - any tracing failure falls back to an eager recording
            message = str(error).strip().splitlines()[0] if str(error).strip() else ""
            warnings.warn(f"goenv torch importer: torch.export could not trace {graph_name} ({type(error).__name__}: "
                          f"{message[:200]}); recording the ATen ops of one eager run instead", UserWarning,
                          stacklevel=caller_stacklevel())
            assembler = GraphAssembler(graph_name, "torch")
            try:
                _record_eager(assembler, module, args, kwargs)
            except (RuntimeError, TypeError, ValueError, IndexError) as eager_error:  # the inputs do not fit
                first = str(eager_error).strip().splitlines()[0] if str(eager_error).strip() else ""
                raise InvalidArgument(f"from_torch: {graph_name} fails on the example inputs "
                                      f"({type(eager_error).__name__}: {first[:300]})") from eager_error
        else:
            _walk_exported(assembler, program, module)
    if not any(not op.is_input for op in assembler.ops):
        raise InvalidArgument(f"from_torch: {graph_name} runs no ATen ops on the example inputs")
    if training and not any(p.trainable and p.consumers for p in assembler.params):
        warnings.warn(f"goenv torch importer: {graph_name} has no trainable parameters; training=True adds no "
                      f"backward pass", UserWarning, stacklevel=caller_stacklevel())
    return assembler.build(training=training)


@contextlib.contextmanager
def _no_kv_cache(module, training: bool):
    """A training step keeps no key/value cache (the cache serves generation), so a Hugging Face
    style model (`module.config.use_cache`) is imported with it off whatever its setting: one
    graph per model. On for a forward-only import (training=False) it stays: inference with a
    cache is a different graph. The setting is restored afterwards."""
    config = getattr(module, "config", None)
    if not training or not getattr(config, "use_cache", False):
        yield
        return
    config.use_cache = False
    try:
        yield
    finally:
        config.use_cache = True


def _export_quietly(torch, module, args: tuple, kwargs: dict):
    """torch.export.export; a failed export's partial graph dump (torch prints it to stderr), its
    symbolic-shape log lines and the fake-tensor traceback it logs (an op that fails on the example
    inputs: twenty lines before the real error) are dropped, since the failure becomes a single
    warning. Nodes get no stack traces: the importer never reads them, and recording one per node
    is about a seventh of a large model's export."""
    captured = io.StringIO()
    quieted = {"torch.fx.experimental.symbolic_shapes": logging.ERROR, "torch._subclasses.fake_tensor": logging.CRITICAL}
    logs = {name: logging.getLogger(name) for name in quieted}
    levels = {name: log.level for name, log in logs.items()}
    for name, log in logs.items():
        log.setLevel(quieted[name])
    fx_config = torch.fx.config
    traces = fx_config.do_not_emit_stack_traces
    fx_config.do_not_emit_stack_traces = True
    try:
        with contextlib.redirect_stderr(captured):
            program = torch.export.export(module, args, kwargs or None, strict=False)
    finally:
        fx_config.do_not_emit_stack_traces = traces
        for name, log in logs.items():
            log.setLevel(levels[name])
    if captured.getvalue():
        sys.stderr.write(captured.getvalue())
    return program


def _nbytes(tensor) -> int:
    return int(tensor.numel()) * int(tensor.element_size())


def _shape(tensor) -> tuple:
    return tuple(int(d) for d in tensor.shape)


def _add_call(assembler: GraphAssembler, name: str, target, args, kwargs, out_value, tensor_of: Callable,
              ref_of: Callable, group: int):
    """Adds one ATen call; returns the references of its outputs (same structure as out_value)."""
    import torch
    from torch.utils._pytree import tree_flatten, tree_map

    out_tensors = [t for t in tree_flatten(out_value)[0] if isinstance(t, torch.Tensor)]
    if not out_tensors:
        return None  # shape arithmetic, asserts, .item(): no tensor, no node
    key, display = _packet_name(target)
    inputs, params, in_shapes = [], [], []
    for leaf in tree_flatten((args, kwargs))[0]:
        tensor = tensor_of(leaf)
        if tensor is None:
            continue
        in_shapes.append(_shape(tensor))
        ref = ref_of(leaf)
        if isinstance(ref, _ParamRef):
            params.append(ref.index)
        elif isinstance(ref, _TensorRef):
            inputs.append((ref.op, ref.nbytes))

    def shapes_only(leaf):
        tensor = tensor_of(leaf)
        return _shape(tensor) if tensor is not None else leaf

    call = _Call(key, tuple(tree_map(shapes_only, tuple(args))), dict(tree_map(shapes_only, dict(kwargs))),
                 in_shapes, [_shape(t) for t in out_tensors])
    rule = _RULES.get(key)
    free = False
    if rule is None:
        op_type, flops = "Other", unknown_op_flops(call.outs)
        assembler.warn_unknown(display)
    else:
        op_type_rule, flops_rule, free = rule
        try:
            op_type = op_type_rule(call) if callable(op_type_rule) else op_type_rule
            flops = float(flops_rule(call))
        except Exception:  # noqa: BLE001 - unusual arguments: estimate rather than fail
            op_type, flops, free = "Other", unknown_op_flops(call.outs), False
            assembler.warn_unknown(display, "1 FLOP per output element (its cost rule did not fit the arguments)")
    if op_type == "Constant":
        inputs, params = [], []  # factories read shapes, not data
    op = assembler.add_op(sanitize_name(name), op_type, flops, sum(_nbytes(t) for t in out_tensors), inputs, params,
                          free=free, group=group)
    return tree_map(lambda t: _TensorRef(op, _nbytes(t)) if isinstance(t, torch.Tensor) else _NO_REF, out_value)


def _walk_exported(assembler: GraphAssembler, program, module) -> None:
    import torch
    from torch.export.graph_signature import InputKind, OutputKind
    from torch.utils._pytree import tree_flatten

    specs = {spec.arg.name: spec for spec in program.graph_signature.input_specs if hasattr(spec.arg, "name")}
    parameters = dict(module.named_parameters(remove_duplicate=False))
    values: dict = {}
    groups: dict[str, int] = {}

    def tensor_of(leaf):
        if isinstance(leaf, torch.fx.Node):
            value = leaf.meta.get("val")
            return value if isinstance(value, torch.Tensor) else None
        return None

    def ref_of(leaf):
        return values.get(leaf) if isinstance(leaf, torch.fx.Node) else None

    def group_of(node) -> int:
        stack = node.meta.get("nn_module_stack") or {}
        for path, _ in stack.values():
            if path:
                top = path.split(".")[0]
                return groups.setdefault(top, len(groups))
        return -1

    def module_path(node) -> str:
        stack = node.meta.get("nn_module_stack") or {}
        paths = [path for path, _ in stack.values() if path]
        return paths[-1].replace(".", "/") + "/" if paths else ""

    for node in program.graph.nodes:
        if node.op == "placeholder":
            tensor = tensor_of(node)
            spec = specs.get(node.name)
            if tensor is None or spec is None:
                values[node] = None
            elif spec.kind == InputKind.PARAMETER:
                parameter = parameters.get(spec.target)
                trainable = parameter.requires_grad if parameter is not None else True
                values[node] = _ParamRef(assembler.add_param(spec.target, _nbytes(tensor), tensor.numel(), trainable))
            elif spec.kind in (InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
                values[node] = _ParamRef(assembler.add_param(str(spec.target), _nbytes(tensor), tensor.numel(), False))
            else:  # a user input
                values[node] = _TensorRef(assembler.add_input(node.name, _nbytes(tensor)), _nbytes(tensor))
        elif node.op == "get_attr":
            attribute = getattr(program.graph_module, str(node.target), None)
            values[node] = (_ParamRef(assembler.add_param(str(node.target), _nbytes(attribute), attribute.numel(),
                                                          False)) if isinstance(attribute, torch.Tensor) else None)
        elif node.op == "call_function":
            if node.target is operator.getitem:
                source = values.get(node.args[0])
                values[node] = source[node.args[1]] if isinstance(source, (tuple, list)) else None
                continue
            body = _wrapped_body(program.graph_module, node)
            if body is not None:
                values[node] = _inline_body(body, node, values, add_inner=lambda inner, prefix: _add_call(
                    assembler, prefix + inner.name, inner.target, inner.args, inner.kwargs, inner.meta.get("val"),
                    tensor_of, ref_of, group_of(node)), prefix=module_path(node), root=program.graph_module)
                continue
            values[node] = _add_call(assembler, module_path(node) + node.name, node.target, node.args, node.kwargs,
                                     node.meta.get("val"), tensor_of, ref_of, group_of(node))
        elif node.op == "output":
            leaves = tree_flatten(node.args)[0]
            kinds = [spec.kind for spec in program.graph_signature.output_specs]
            for i, leaf in enumerate(leaves):
                if i < len(kinds) and kinds[i] not in (OutputKind.USER_OUTPUT, OutputKind.LOSS_OUTPUT):
                    continue
                for ref in tree_flatten(values.get(leaf) if isinstance(leaf, torch.fx.Node) else None)[0]:
                    if isinstance(ref, _TensorRef):
                        assembler.mark_output(ref.op)


def _wrapped_body(root, node):
    """The subgraph of a higher-order op that only wraps ops in a mode (torch.no_grad, autocast:
    `wrap_with_set_grad_enabled`, `wrap_with_autocast`), or None. Its ops are imported one by one
    as if they stood in the outer graph: the wrapper itself costs nothing."""
    import torch

    if "wrap_with" not in str(getattr(node.target, "__name__", node.target)):
        return None
    for index, arg in enumerate(node.args):
        if isinstance(arg, torch.fx.Node) and arg.op == "get_attr":
            module = getattr(root, str(arg.target), None)
            if isinstance(module, torch.fx.GraphModule):
                return module, index
    return None


def _inline_body(body, node, values: dict, add_inner: Callable, prefix: str, root):
    """Walks a wrapped subgraph: its placeholders are the wrapper's operands, its output the
    wrapper's result (a tuple of references)."""
    import torch

    module, index = body
    operands = list(node.args[index + 1:])
    inner_values: dict = {}

    def value_of(arg):
        return values.get(arg) if isinstance(arg, torch.fx.Node) else None

    placeholders = [n for n in module.graph.nodes if n.op == "placeholder"]
    for placeholder, operand in zip(placeholders, operands):
        inner_values[placeholder] = value_of(operand)
    # The inner ops read inner nodes: make them visible to ref_of through the shared table.
    values.update(inner_values)
    result = None
    for inner in module.graph.nodes:
        if inner.op == "call_function":
            if inner.target is operator.getitem:
                source = values.get(inner.args[0])
                values[inner] = source[inner.args[1]] if isinstance(source, (tuple, list)) else None
                continue
            nested = _wrapped_body(module, inner)
            if nested is not None:
                values[inner] = _inline_body(nested, inner, values, add_inner, prefix, module)
                continue
            values[inner] = add_inner(inner, prefix)
        elif inner.op == "get_attr":
            values[inner] = None
        elif inner.op == "output":
            outputs = inner.args[0]
            result = (tuple(values.get(o) if isinstance(o, torch.fx.Node) else None for o in outputs)
                      if isinstance(outputs, (tuple, list)) else values.get(outputs))
    return result


def _record_eager(assembler: GraphAssembler, module, args: tuple, kwargs: dict) -> None:
    """Records the ATen ops of one eager call (no autograd) with a TorchDispatchMode."""
    import torch
    from torch.utils._pytree import tree_flatten
    from torch.utils._python_dispatch import TorchDispatchMode

    refs: dict[int, Any] = {}
    alive: list = []  # keeps every seen tensor alive, so ids are never reused during the run
    for name, parameter in module.named_parameters():
        refs[id(parameter)] = _ParamRef(assembler.add_param(name, _nbytes(parameter), parameter.numel(),
                                                            parameter.requires_grad))
    for name, buffer in module.named_buffers():
        refs[id(buffer)] = _ParamRef(assembler.add_param(name, _nbytes(buffer), buffer.numel(), False))
    for i, leaf in enumerate(tree_flatten(args)[0]):
        if isinstance(leaf, torch.Tensor):
            refs[id(leaf)] = _TensorRef(assembler.add_input(f"input_{i}", _nbytes(leaf)), _nbytes(leaf))
            alive.append(leaf)
    for key, value in kwargs.items():
        for i, leaf in enumerate(tree_flatten(value)[0]):
            if isinstance(leaf, torch.Tensor) and id(leaf) not in refs:
                label = sanitize_name(key if i == 0 else f"{key}_{i}")
                refs[id(leaf)] = _TensorRef(assembler.add_input(label, _nbytes(leaf)), _nbytes(leaf))
                alive.append(leaf)

    def tensor_of(leaf):
        return leaf if isinstance(leaf, torch.Tensor) else None

    def ref_of(leaf):
        if not isinstance(leaf, torch.Tensor):
            return None
        if id(leaf) not in refs:  # a tensor from outside the module's state: resident, constant
            refs[id(leaf)] = _ParamRef(assembler.add_param(f"constant_{len(alive)}", _nbytes(leaf), leaf.numel(),
                                                           False))
            alive.append(leaf)
        return refs[id(leaf)]

    class Recorder(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            key, _ = _packet_name(func)
            result = _add_call(assembler, key, func, args, kwargs, out, tensor_of, ref_of, -1)
            if result is not None:
                for tensor, ref in zip(tree_flatten(out)[0], tree_flatten(result)[0]):
                    if isinstance(tensor, torch.Tensor) and isinstance(ref, _TensorRef):
                        refs[id(tensor)] = ref
                        alive.append(tensor)
            return out

    with torch.no_grad(), Recorder():
        outputs = module(*args, **kwargs)
    for leaf in tree_flatten(outputs)[0]:
        ref = refs.get(id(leaf)) if isinstance(leaf, torch.Tensor) else None
        if isinstance(ref, _TensorRef):
            assembler.mark_output(ref.op)
