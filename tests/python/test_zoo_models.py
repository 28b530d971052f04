"""The zoo's model builder (goenv.datasets.zoo): keyword inputs in from_torch, shrunk configs
that stay consistent, builds in limited child processes, determinism, unknown names."""

from __future__ import annotations

import os

import pytest
import torch
from torch import nn

import goenv
from goenv import datasets

transformers = pytest.importorskip("transformers")
from goenv.datasets import zoo  # noqa: E402
from goenv.datasets.zoo import configs  # noqa: E402


# ---------------------------------------------------------------------------
# from_torch: keyword inputs


class KeywordOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, *, x, scale=None):
        y = self.linear(x)
        return y * scale if scale is not None else y


class Mixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x, mask=None):
        y = self.linear(x)
        return y.masked_fill(mask, 0.0) if mask is not None else y


def _op_types(graph):
    names = goenv.Graph.op_type_names() if hasattr(goenv.Graph, "op_type_names") else None
    return [names[t] for t in graph.op_types] if names else list(graph.op_types)


def test_from_torch_takes_keyword_only_inputs():
    x, scale = torch.randn(2, 8), torch.ones(2, 4)
    g = datasets.from_torch(KeywordOnly(), example_kwargs={"x": x, "scale": scale}, training=False)
    inputs = [name for name in g.names if "x" == name.split("/")[-1] or "scale" == name.split("/")[-1]]
    assert sorted(inputs) == ["scale", "x"]
    without_scale = datasets.from_torch(KeywordOnly(), example_kwargs={"x": x}, training=False)
    assert without_scale.num_nodes < g.num_nodes  # no Input and no Mul for the missing scale


def test_from_torch_mixes_positional_and_keyword_inputs():
    x = torch.randn(2, 8)
    mask = torch.zeros(2, 8, dtype=torch.bool)
    both = datasets.from_torch(Mixed(), (x,), example_kwargs={"mask": mask}, training=True)
    positional = datasets.from_torch(Mixed(), (x,), training=True)
    assert both.num_nodes > positional.num_nodes
    assert any(name.endswith("mask") for name in both.names)
    old_style = datasets.from_torch(Mixed(), x, training=True)  # a lone tensor still works
    assert old_style.num_nodes == positional.num_nodes


@pytest.mark.parametrize("bad", [[torch.randn(2, 8)], {"not an identifier": 1}, {3: torch.randn(2, 8)}])
def test_from_torch_refuses_bad_keyword_inputs(bad):
    with pytest.raises(goenv.InvalidArgument, match="example_kwargs"):
        datasets.from_torch(KeywordOnly(), example_kwargs=bad)


# ---------------------------------------------------------------------------
# catalog


def test_catalog_lists_every_type_with_a_modality():
    types = zoo.model_types()
    assert types == sorted(types) and len(types) > 500
    assert zoo.LIBRARIES["transformers"] == transformers.__version__
    assert {zoo.modality(t) for t in ("bert", "vit", "wav2vec2", "clip")} == {"text", "vision", "audio",
                                                                            "multimodal"}
    assert zoo.SIZES[0] == "tiny" and "large" in zoo.SIZES


def test_unknown_names_raise_not_found_naming_the_choices():
    with pytest.raises(goenv.NotFound, match=r"transformers==5\.23\.0 has no model type 'bertt'.*nearest: bert"):
        zoo.build("bertt")
    with pytest.raises(goenv.NotFound, match="choices.*llama"):
        zoo.modality("no-such-model")
    with pytest.raises(goenv.NotFound, match="choices: transformers==5.23.0, diffusers==0.42.1"):
        zoo.model_types("timm-but-misspelt")
    with pytest.raises(goenv.NotFound, match="choices: tiny, small, large"):
        zoo.build("bert", "huge")


# ---------------------------------------------------------------------------
# configs


def _widths(config):
    d = config.__dict__
    hidden = d.get("hidden_size") or d.get("d_model") or d.get("n_embd")
    heads = d.get("num_attention_heads") or d.get("n_head") or d.get("encoder_attention_heads")
    return hidden, heads


@pytest.mark.parametrize("model_type", ["llama", "mistral", "gpt2", "t5", "bart", "qwen2_vl", "vit", "deepseek_v3"])
@pytest.mark.parametrize("size", zoo.SIZES)
def test_shrunk_configs_stay_consistent(model_type, size):
    config = configs.make_config(model_type, size) if hasattr(configs, "make_config") else None
    if config is None:
        from goenv.datasets.zoo.builder import make_config

        config = make_config(model_type, size)
    scale = configs.SCALES[size]
    for part in [config] + [getattr(config, key) for key in ("text_config", "vision_config")
                            if hasattr(getattr(config, key, None), "to_dict")]:
        hidden, heads = _widths(part)
        if hidden and heads:
            assert hidden % heads == 0, (model_type, hidden, heads)
        kv = part.__dict__.get("num_key_value_heads")
        if kv and heads:
            assert heads % kv == 0
        vocab = part.__dict__.get("vocab_size")
        if vocab:
            assert vocab <= scale.vocab
            for key, value in part.__dict__.items():
                if key.endswith("_token_id") and isinstance(value, int):
                    assert 0 <= value < vocab, (key, value)
        types = part.__dict__.get("layer_types")
        layers = part.__dict__.get("num_hidden_layers")
        if isinstance(types, list) and layers:
            assert len(types) == layers
    assert len(configs.config_hash(config)) == 64


# ---------------------------------------------------------------------------
# builds in a child


def test_build_imports_a_training_graph_with_provenance():
    result = zoo.build("gpt2")
    assert result.ok, result.reason
    assert result.stage == "" and result.reason == ""
    graph = result.graph()
    assert graph.num_nodes == result.num_nodes > 100
    assert any(name.startswith("bwd/") for name in graph.names)  # a training step
    assert result.provenance["library"] == "transformers"
    assert result.provenance["library_version"] == "5.23.0"
    assert result.provenance["model_type"] == "gpt2" and result.provenance["size"] == "tiny"
    assert result.provenance["goenv_version"] == goenv.__version__
    assert result.provenance["torch_version"] == torch.__version__.split("+")[0]
    assert result.peak_memory_bytes > 0


def test_builds_are_deterministic():
    first, second = zoo.build_many(["bert", "bert"], processes=2)
    assert first.ok and second.ok
    assert first.graph_bytes == second.graph_bytes
    assert first.provenance["config_hash"] == second.provenance["config_hash"]


def test_build_many_keeps_request_order_and_modalities_get_their_inputs():
    requests = ["vit", ("wav2vec2", "tiny"), ("clip", "tiny", "transformers")]
    results = list(zoo.build_many(requests, processes=2))
    assert [r.model_type for r in results] == ["vit", "wav2vec2", "clip"]
    assert all(r.ok for r in results), [(r.model_type, r.reason) for r in results]


def test_a_build_past_its_memory_limit_ends_as_limits_and_the_parent_lives():
    result = zoo.build("llama", "large", memory_limit=16 << 20)  # 48 layers: far more than 16 MiB
    assert not result.ok and result.stage == "limits", result.reason
    assert result.graph_bytes is None
    with pytest.raises(goenv.InvalidArgument, match="failed at limits"):
        result.graph()
    assert zoo.build("gpt2").ok  # the parent goes on building


def test_a_build_past_its_time_limit_is_killed():
    result = zoo.build("t5", time_limit=1e-3)
    assert not result.ok and result.stage == "limits"
    assert "time limit" in result.reason


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_limits_must_be_positive(bad):
    with pytest.raises(goenv.InvalidArgument, match="memory_limit"):
        zoo.build("gpt2", memory_limit=bad)
    if not isinstance(bad, float):
        with pytest.raises(goenv.InvalidArgument, match="time_limit"):
            zoo.build("gpt2", time_limit=bad if bad != 1.5 else float("inf"))


@pytest.mark.parametrize("op, module", [
    ("pixel_shuffle", lambda: nn.PixelShuffle(2)), ("pixel_unshuffle", lambda: nn.PixelUnshuffle(2)),
    ("upsample_bicubic2d_aa", lambda: nn.Upsample(scale_factor=2, mode="bicubic")),
    ("cdist", lambda: (lambda y: torch.cdist(y.flatten(2), y.flatten(2))))])
def test_ops_the_zoo_met_without_a_cost_rule_have_one(op, module):
    import warnings

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.op = nn.Conv2d(4, 4, 1), module()

        def forward(self, x):
            if op == "upsample_bicubic2d_aa":
                return torch.nn.functional.interpolate(self.conv(x), scale_factor=2, mode="bicubic", antialias=True)
            return self.op(self.conv(x))

    with warnings.catch_warnings():
        warnings.simplefilter("error", goenv.importers.CostEstimateWarning)  # the default rule would warn
        graph = datasets.from_torch(Model(), (torch.randn(1, 4, 8, 8),), training=True)
    assert graph.num_nodes > 2
