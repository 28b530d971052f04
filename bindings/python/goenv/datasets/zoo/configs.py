"""Small, consistent configs: one generic shrinking rule for every model type.

A library's default config describes the published model (billions of parameters). The
zoo shrinks every width, depth and size of it *together*, so the model still builds:
heads divide the hidden width, key/value heads divide the heads, head_dim is width/heads,
special token ids stay inside the shrunk vocabulary, per-layer lists keep one entry per
layer, and sub-configs (text_config, vision_config, ...) shrink by the same rule. The few
types the rule cannot serve have an override below, each with why."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

SIZES = ("tiny", "small", "large")


@dataclass(frozen=True)
class Scale:
    """The numbers one size sets. large keeps widths small and stacks many layers: the point
    of "large" is a big graph (many ops), not a big model."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    vocab: int
    experts: int
    stage_depth: int      # blocks per stage of staged (hierarchical) vision models
    image_size: int
    patch_size: int
    sequence: int         # tokens per example
    batch: int
    audio_samples: int    # raw waveform length
    audio_frames: int     # spectrogram frames


SCALES = {
    "tiny": Scale(layers=2, hidden=64, heads=4, kv_heads=2, vocab=512, experts=4, stage_depth=1, image_size=64,
                  patch_size=8, sequence=16, batch=2, audio_samples=4000, audio_frames=64),
    "small": Scale(layers=6, hidden=128, heads=4, kv_heads=2, vocab=1024, experts=4, stage_depth=2, image_size=64,
                   patch_size=8, sequence=32, batch=2, audio_samples=8000, audio_frames=128),
    "large": Scale(layers=128, hidden=128, heads=4, kv_heads=2, vocab=1024, experts=4, stage_depth=8,
                   image_size=64, patch_size=8, sequence=32, batch=2, audio_samples=8000, audio_frames=128),
}

_LAYER_KEYS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "decoder_layers",
               "num_encoder_layers", "num_decoder_layers", "depth", "encoder_depth", "decoder_depth",
               "num_decoder_hidden_layers", "decoder_num_hidden_layers", "text_layers", "vision_layers",
               "num_text_layers", "num_vision_layers", "cross_attention_layers_count", "n_layers_text")
_WIDTH_KEYS = ("hidden_size", "d_model", "n_embd", "embed_dim", "dim", "embedding_size", "word_embed_proj_dim",
               "decoder_hidden_size", "encoder_hidden_size", "text_hidden_size", "vision_hidden_size",
               "projection_dim", "d_embed", "hidden_channels", "encoder_embed_dim",
               "decoder_embed_dim", "proj_dim", "output_hidden_size", "embed_size", "n_embed", "emb_dim")
_HEAD_KEYS = ("num_attention_heads", "n_head", "n_heads", "encoder_attention_heads", "decoder_attention_heads",
              "num_heads", "decoder_num_attention_heads", "encoder_num_attention_heads", "num_attention_head")
_KV_HEAD_KEYS = ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num",
                 "decoder_num_key_value_heads", "num_kv_head")
_HEAD_DIM_KEYS = ("head_dim", "attention_head_size", "kv_channels", "attention_head_dim", "d_kv", "d_head",
                  "head_size", "global_head_dim", "rotary_dim", "rotary_emb_dim")
_FFN_KEYS = ("intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff", "n_inner",
             "ffn_hidden_size", "decoder_intermediate_size", "encoder_intermediate_size", "mlp_dim",
             "intermediate_dim", "d_inner", "ffn_size", "dim_feedforward", "inner_dim", "encoder_ffn_embed_dim",
             "decoder_ffn_embed_dim", "linear_units", "text_intermediate_size", "vision_intermediate_size")
_MOE_FFN_KEYS = ("moe_intermediate_size", "shared_expert_intermediate_size", "expert_intermediate_size",
                 "moe_ffn_hidden_size", "expert_hidden_size")
_EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", "num_routed_experts",
                "n_experts")
_TOP_K_KEYS = ("num_experts_per_tok", "top_k", "moe_topk", "num_experts_per_token", "moe_k", "router_top_k",
               "num_selected_experts")
_ONE_KEYS = ("n_group", "topk_group", "num_expert_groups", "num_shared_experts", "n_shared_experts",
             "num_groups", "norm_num_groups", "num_norm_groups")  # one norm group divides any shrunk width
_VOCAB_KEYS = ("vocab_size", "text_vocab_size", "decoder_vocab_size", "target_vocab_size")
_ZERO_KEYS = ("layerdrop", "encoder_layerdrop", "decoder_layerdrop", "drop_path_rate", "stochastic_depth_rate",
              "drop_path", "layer_drop_rate")  # random layer skipping would make the graph depend on luck
_DEEPSEEK_MLA = {"kv_lora_rank": 32, "q_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8,
                 "v_head_dim": 16, "qk_head_dim": 16}

# Types the generic rule does not serve, with why.
OVERRIDES: dict = {
    # whisper-style encoders take exactly 2 * max_source_positions spectrogram frames
    "whisper": {"max_source_positions": 32, "max_target_positions": 64},
    # the audio spectrogram transformer patches a max_length x num_mel_bins spectrogram (1024 x 128 by default)
    "audio-spectrogram-transformer": {"max_length": 64, "num_mel_bins": 32},
}


def _is_config(value) -> bool:
    return hasattr(value, "to_dict") and hasattr(value, "model_type")


def _largest_divisor_at_most(n: int, cap: int) -> int:
    for d in range(max(1, min(n, cap)), 0, -1):
        if n % d == 0:
            return d
    return 1


def shrink(config, size: str, model_type: str | None = None):
    """Shrinks `config` in place for `size` (one of SIZES) and returns it."""
    scale = SCALES[size]
    _shrink_one(config, scale, size)
    for key, value in OVERRIDES.get(model_type or getattr(config, "model_type", ""), {}).items():
        setattr(config, key, value)
    return config


def _get(config, key):
    return config.__dict__.get(key, None)


def _ints(config, keys):
    return [k for k in keys if isinstance(_get(config, k), int) and not isinstance(_get(config, k), bool)]


def _shrink_one(config, scale: Scale, size: str) -> None:
    d = config.__dict__
    old_layers = next((d[k] for k in _ints(config, _LAYER_KEYS) if d[k] > 0), None)
    new_layers = None
    for key in _ints(config, _LAYER_KEYS):
        if d[key] > 0:
            d[key] = scale.layers if size == "large" else min(d[key], scale.layers)
            new_layers = new_layers or d[key]
    hidden = scale.hidden
    for key in _ints(config, _WIDTH_KEYS):
        if d[key] > 0:
            d[key] = hidden
    heads = scale.heads
    old_heads = next((d[k] for k in _ints(config, _HEAD_KEYS)), None)
    for key in _ints(config, _HEAD_KEYS):
        if d[key] > 0:
            d[key] = heads
    for key in _ints(config, _KV_HEAD_KEYS):
        if d[key] > 1:  # multi-query (one kv head) stays multi-query; full multi-head stays full
            d[key] = heads if old_heads is not None and d[key] >= old_heads else scale.kv_heads
    if "head_dim" in d and d["head_dim"] is None and "num_attention_heads" in d:
        d["head_dim"] = hidden // heads  # some defaults leave it unset and fail to derive it (Hunyuan)
    for key in _ints(config, _HEAD_DIM_KEYS):
        if d[key] > 0:
            d[key] = hidden // heads
    for key in _ints(config, _FFN_KEYS):
        if d[key] > 0:
            d[key] = 2 * hidden
    for key in _ints(config, _MOE_FFN_KEYS):
        if d[key] > 0:
            d[key] = hidden
    for key in _ints(config, _EXPERT_KEYS):
        if d[key] > 0:
            d[key] = min(d[key], scale.experts)
    for key in _ints(config, _TOP_K_KEYS):
        if d[key] > 0:
            d[key] = min(d[key], 2, scale.experts)
    for key in _ints(config, _ONE_KEYS):
        if d[key] > 1:
            d[key] = 1
    for key, value in _DEEPSEEK_MLA.items():
        if isinstance(d.get(key), int):
            d[key] = value
    if isinstance(d.get("qk_rope_head_dim"), int) and isinstance(d.get("head_dim"), int):
        d["head_dim"] = d["qk_rope_head_dim"]  # latent attention rotates only the rope part of each head
    for key in _ZERO_KEYS:
        if isinstance(d.get(key), (int, float)) and not isinstance(d.get(key), bool):
            d[key] = 0.0 if isinstance(d[key], float) else 0
    if d.get("use_cache") is True:
        d["use_cache"] = False  # a training step keeps no key/value cache (and hybrid caches refuse one here)
    _shrink_vocabulary(config, scale)
    _shrink_images(config, scale)
    _shrink_stages(config, scale, hidden, heads)
    _shrink_audio(config, scale, hidden)
    if old_layers and new_layers:
        _fit_per_layer_lists(config, old_layers, new_layers)
    _fit_rope(config, hidden // heads)
    for key, value in list(d.items()):
        if _is_config(value):
            _shrink_one(value, scale, size)
        elif isinstance(value, dict) and "model_type" in value and key.endswith("config"):
            pass  # plain dict sub-configs are rebuilt by the library from the shrunk parent


def _shrink_vocabulary(config, scale: Scale) -> None:
    d = config.__dict__
    vocab = None
    if "vocab_size" in d and d["vocab_size"] is None:
        d["vocab_size"] = scale.vocab  # defaults that leave it to a tokenizer (ESM) get one
    for key in _ints(config, _VOCAB_KEYS):
        if d[key] > scale.vocab:
            d[key] = scale.vocab
        vocab = vocab or d[key]
    if vocab is None:
        return
    # Special token ids beyond the vocabulary move to its top, distinct ones kept distinct.
    ids = sorted({v for k, v in d.items() if _is_token_key(k) and isinstance(v, int) and v >= vocab})
    for k, v in d.items():
        if _is_token_key(k) and isinstance(v, list):
            ids = sorted(set(ids) | {x for x in v if isinstance(x, int) and x >= vocab})
    remap = {old: vocab - 1 - i for i, old in enumerate(reversed(ids))}
    for k, v in list(d.items()):
        if not _is_token_key(k):
            continue
        if isinstance(v, int) and not isinstance(v, bool) and v in remap:
            d[k] = remap[v]
        elif isinstance(v, list):
            d[k] = [remap.get(x, x) if isinstance(x, int) else x for x in v]


def _is_token_key(key: str) -> bool:
    return key.endswith(("_token_id", "_token_index", "_token_ids", "_id")) and "layer" not in key


def _shrink_images(config, scale: Scale) -> None:
    d = config.__dict__
    image = d.get("image_size")
    if isinstance(image, int) and image > scale.image_size:
        d["image_size"] = scale.image_size
    elif isinstance(image, (list, tuple)) and len(image) == 2 and max(image) > scale.image_size:
        d["image_size"] = type(image)([scale.image_size, scale.image_size])
    patch = d.get("patch_size")
    if isinstance(patch, int) and patch > scale.patch_size and "image_size" in d:
        d["patch_size"] = scale.patch_size
    elif isinstance(patch, (list, tuple)) and len(patch) == 2 and max(patch) > scale.patch_size and "image_size" in d:
        d["patch_size"] = type(patch)([scale.patch_size, scale.patch_size])


def _shrink_stages(config, scale: Scale, hidden: int, heads: int) -> None:
    """Hierarchical models (Swin, ConvNeXt, ResNet, PVT): one entry per stage. Stages stay;
    each keeps few blocks and a narrow width that doubles per stage and is divisible by its heads."""
    d = config.__dict__
    depths = d.get("depths")
    if isinstance(depths, (list, tuple)) and depths and all(isinstance(x, int) for x in depths):
        d["depths"] = type(depths)([min(x, scale.stage_depth) if x > 0 else x for x in depths])
    for key in ("hidden_sizes", "embed_dims", "dims", "channels", "encoder_hidden_sizes", "stage_dims"):
        widths = d.get(key)
        if isinstance(widths, (list, tuple)) and widths and all(isinstance(x, int) for x in widths):
            base = hidden // 4
            d[key] = type(widths)([min(x, base * 2 ** min(i, 3)) for i, x in enumerate(widths)])
            for head_key in ("num_attention_heads", "num_heads", "heads"):
                per_stage = d.get(head_key)
                if isinstance(per_stage, (list, tuple)) and len(per_stage) == len(widths):
                    d[head_key] = type(per_stage)([_largest_divisor_at_most(w, min(h, 8))
                                                   for w, h in zip(d[key], per_stage)])
    # Stages whose width doubles from one embed_dim (Swin): heads per stage become powers of two.
    for head_key in ("num_heads", "num_attention_heads"):
        per_stage = d.get(head_key)
        if isinstance(per_stage, (list, tuple)) and per_stage and all(isinstance(h, int) for h in per_stage):
            d[head_key] = type(per_stage)([min(1 << max(0, h.bit_length() - 1), 8) for h in per_stage])


def _shrink_audio(config, scale: Scale, hidden: int) -> None:
    d = config.__dict__
    conv = d.get("conv_dim")
    if isinstance(conv, (list, tuple)) and conv:
        d["conv_dim"] = type(conv)([min(x, hidden) for x in conv])
    for key in ("max_source_positions",):
        if isinstance(d.get(key), int) and d[key] > scale.audio_frames:
            d[key] = scale.audio_frames // 2


def _fit_per_layer_lists(config, old_layers: int, new_layers: int) -> None:
    """Lists with one entry per layer ("layer_types", ...) keep one entry per layer, cycling
    the original pattern when the model grows."""
    d = config.__dict__
    for key, value in list(d.items()):
        if isinstance(value, (list, tuple)) and len(value) == old_layers and old_layers != new_layers and (
                "layer" in key or "types" in key or "block" in key):
            d[key] = type(value)([value[i % len(value)] for i in range(new_layers)])


def _fit_rope(config, head_dim: int) -> None:
    """Multimodal rotary sections (mrope_section) cover half the head dim."""
    for key in ("rope_scaling", "rope_parameters"):
        params = config.__dict__.get(key)
        if isinstance(params, dict) and isinstance(params.get("mrope_section"), list):
            section = params["mrope_section"]
            total, target = sum(section), head_dim // 2
            scaled = [max(1, x * target // total) for x in section]
            scaled[0] += target - sum(scaled)
            params["mrope_section"] = scaled


def config_hash(config) -> str:
    """sha256 of the config's canonical JSON (sorted keys): a library config or a plain dict."""
    data = config if isinstance(config, dict) else config.to_dict()
    text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()
