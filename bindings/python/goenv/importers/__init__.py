"""Graphs from other frameworks: PyTorch modules (torch.export) and ONNX models.

    g = goenv.datasets.from_torch(model, (x,), training=True)
    g = goenv.datasets.from_onnx("model.onnx")

Both importers walk the framework's op graph with shapes known, and hand each op
to the shared pieces of goenv.importers.assembly: cost rules and the GraphAssembler.
"""

from __future__ import annotations

from goenv._core import Graph, InvalidArgument
from goenv.arguments import checked_flag
from goenv.importers.assembly import (  # noqa: F401 (the shared pieces, named here too)
    CostEstimateWarning,
    GraphAssembler,
    attention_flops,
    conv_flops,
    einsum_flops,
    elementwise_flops,
    matmul_flops,
    norm_flops,
    pool_flops,
    reduction_flops,
    rnn_flops,
    softmax_flops,
)

__all__ = [
    "CostEstimateWarning", "GraphAssembler", "from_onnx", "from_torch", "attention_flops", "conv_flops",
    "einsum_flops", "elementwise_flops", "matmul_flops", "norm_flops", "pool_flops", "reduction_flops",
    "rnn_flops", "softmax_flops",
]


def from_torch(module, example_inputs=(), *, example_kwargs=None, training: bool = True,
               name: str | None = None) -> Graph:
    """A goenv graph of one training step of `module` run on `example_inputs` (see
    goenv.importers.torch_fx): forward, backward and optimizer updates, with each
    parameter colocated with its update, like every built-in graph (they are all
    training steps, and GO optimizes training graphs). training=False: the forward pass only.

    example_inputs: the positional arguments of forward (a tensor or a tuple);
    example_kwargs: its keyword arguments, a dict of name -> value (most Hugging Face
    models take `input_ids=`, `pixel_values=`, ... by name), as in torch.export.export."""
    from goenv.importers.torch_fx import from_torch as convert  # torch: imported on first use (seconds)

    return convert(module, example_inputs, example_kwargs=_checked_kwargs(example_kwargs),
                   training=checked_flag("training", training), name=_checked_name(name))


def from_onnx(path_or_model, *, training: bool = True, name: str | None = None) -> Graph:
    """A goenv graph of an ONNX model: a path, serialized bytes or an onnx.ModelProto."""
    from goenv.importers.onnx import from_onnx as convert  # onnx: an optional extra

    return convert(path_or_model, training=checked_flag("training", training), name=_checked_name(name))


def _checked_kwargs(kwargs) -> dict:
    if kwargs is None:
        return {}
    if not isinstance(kwargs, dict):
        raise InvalidArgument(f"example_kwargs must be a dict of argument name -> value, got {type(kwargs).__name__}")
    bad = [key for key in kwargs if not isinstance(key, str) or not key.isidentifier()]
    if bad:
        raise InvalidArgument(f"example_kwargs keys must be argument names, got {bad[0]!r}")
    return dict(kwargs)


def _checked_name(name):
    if name is not None and not isinstance(name, str):
        raise InvalidArgument(f"name must be a string or None, got {type(name).__name__}")
    return name
