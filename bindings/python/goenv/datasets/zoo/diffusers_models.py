"""The zoo's diffusers models: which classes it tries, their small configs and their inputs.

Diffusers has no config registry: a model class's defaults are its constructor's keyword
defaults (what `Model()` builds), so a model type here is the class name
("UNet2DConditionModel"), and every ModelMixin class that `diffusers.models` exports is tried.
The defaults are shrunk by the zoo's one rule for every library (configs.shrink) plus what only
diffusion models have: per-resolution channel lists, blocks per resolution, conditioning widths,
rotary axes that must add up to the head width. Inputs come from the forward signature: latents
(image, video, token or signal shaped, tried in that order), timesteps, text conditioning,
pooled conditioning, class labels, control images.
"""

from __future__ import annotations

import functools
import inspect
import types

from goenv.datasets.zoo.configs import SCALES, Scale, shrink
from goenv.datasets.zoo.inputs import SEED
from goenv.extras import import_extra

# Widths of the conditioning a model is given (text encoder states, pooled embeddings, ...).
CONDITION_KEYS = ("cross_attention_dim", "joint_attention_dim", "caption_channels", "text_embed_dim",
                  "caption_projection_dim", "text_dim", "context_dim", "encoder_hid_dim", "text_hidden_dim",
                  "cond_dim", "cross_attention_dim_t5", "text_emb_dim", "text_embed_dim_t5", "encoder_hidden_dim")
POOLED_KEYS = ("pooled_projection_dim", "projection_class_embeddings_input_dim", "pooled_text_dim")
ROPE_AXES_KEYS = ("axes_dims_rope", "rope_axes_dim", "axes_dim", "rope_dim_list")
BLOCKS_PER_LEVEL = {"tiny": 1, "small": 2, "large": SCALES["large"].stage_depth}
# Constructor arguments some defaults leave unset that the model then needs (a pipeline passes
# them); filled only where the class does not construct without them. None: the zoo's width.
UNSET_DEFAULTS = {"in_channels": 4, "patch_size": 2, "sample_size": 16, "caption_channels": None}
LATENT_SIZE = 16          # latent height and width (a VAE's images are AUTOENCODER_SIZE)
AUTOENCODER_SIZE = 32     # deep compression autoencoders halve an image five times
VIDEO_FRAMES = (5, 4)     # 1 + 4k frames for causal video autoencoders, even for 2-frame patches
TEXT_TOKENS = 8

_MODALITY_WORDS = (("audio", ("Audio", "Oobleck", "Music", "Vocoder", "AceStep")), ("other", ("Proteina",)))


def _diffusers():
    return import_extra("diffusers", extra="zoo", feature="goenv.datasets.zoo (diffusers)")


@functools.lru_cache(maxsize=None)
def model_types() -> tuple:
    """Every ModelMixin class `diffusers.models` exports, by name."""
    diffusers = _diffusers()
    models = diffusers.models
    found = []
    for name in sorted(getattr(models, "_import_structure", {}) and
                       {n for names in models._import_structure.values() for n in names}):
        cls = getattr(diffusers, name, None)
        if inspect.isclass(cls) and issubclass(cls, diffusers.ModelMixin) and cls is not diffusers.ModelMixin:
            found.append(name)
    return tuple(found)


def modality(model_type: str) -> str:
    """"audio" for audio generators and codecs, "other" for protein models, else "vision"
    (images and video)."""
    for kind, words in _MODALITY_WORDS:
        if any(word in model_type for word in words):
            return kind
    return "vision"


def module_of(model_type: str) -> str:
    """The class's module under diffusers.models ("unets.unet_2d_condition"): its lineage folder."""
    return getattr(_diffusers(), model_type).__module__.removeprefix("diffusers.models.")


def _defaults(cls) -> dict:
    parameters = inspect.signature(cls.__init__).parameters.items()
    return {name: p.default for name, p in parameters
            if name != "self" and p.default is not inspect.Parameter.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def make_config(model_type: str, size: str) -> dict:
    """The class's constructor defaults, shrunk for `size`, with "_class_name" naming the class."""
    cls = getattr(_diffusers(), model_type)
    scale = SCALES[size]
    shrunk = vars(shrink(types.SimpleNamespace(**_defaults(cls)), size, model_type))  # the rule every library shares
    _shrink_diffusion(shrunk, scale, size)
    if not _constructs(cls, shrunk):
        filled = {key: scale.hidden if value is None else value for key, value in UNSET_DEFAULTS.items()}
        shrunk.update({key: filled[key] for key, value in shrunk.items() if key in filled and value is None})
    return {"_class_name": model_type, **shrunk}


def _constructs(cls, kwargs: dict) -> bool:
    """Whether the class builds from `kwargs`, tried on the meta device (no memory for weights)."""
    import torch

    try:
        with torch.device("meta"):
            cls(**kwargs)
    except Exception:  # noqa: BLE001 - any refusal means: fill what the defaults left unset
        return False
    return True


def _shrink_diffusion(d: dict, scale: Scale, size: str) -> None:
    """What the shared rule does not know by name: conditioning widths, per-resolution channel
    lists, and the prefixed variants of layer, head and width keys ("num_single_layers",
    "text_num_attention_heads", "model_dim") that diffusion models name per stream."""
    hidden = scale.hidden
    for key, value in list(d.items()):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            if key.endswith("block_out_channels") and _ints(value):
                # 32 channels or more per level: blocks inside some models keep 32 norm groups;
                # levels of one width (a tiny autoencoder's) keep one width
                d[key] = type(value)([min(c, hidden // 2 if i == 0 or len(set(value)) == 1 else hidden)
                                      for i, c in enumerate(value)])
            continue
        if key.startswith("num") and key.endswith(("layers", "blocks")):
            d[key] = scale.layers if size == "large" else min(value, scale.layers)
        elif key.endswith("num_attention_heads"):
            d[key] = scale.heads
        elif key.endswith("num_key_value_heads") and value > 1:
            d[key] = scale.kv_heads
        elif key in CONDITION_KEYS + POOLED_KEYS or (key.endswith("_dim") and "head" not in key and value > 2 * hidden):
            d[key] = min(value, hidden)
    layers = d.get("num_layers")
    for key, value in list(d.items()):  # indices of the layers that get an extra (VACE's control layers)
        if isinstance(layers, int) and key.endswith("_layers") and _ints(value) and max(value) >= layers:
            d[key] = type(value)(sorted({min(i, layers - 1) for i in value}))
    if isinstance(d.get("layers_per_block"), int) and d["layers_per_block"] > 0:
        d["layers_per_block"] = BLOCKS_PER_LEVEL[size]
    if isinstance(d.get("groups"), int) and d["groups"] > 1:
        d["groups"] = 1
    for key in ("sample_size", "sample_height", "sample_width"):
        if isinstance(d.get(key), int) and d[key] > LATENT_SIZE:
            d[key] = LATENT_SIZE
    head_dim = d.get("attention_head_dim")
    for key in ROPE_AXES_KEYS:
        axes = d.get(key)
        if isinstance(head_dim, int) and isinstance(axes, (list, tuple)) and axes and all(
                isinstance(a, int) for a in axes) and sum(axes) != head_dim:
            d[key] = type(axes)(_split_even(head_dim, len(axes)))


def _ints(value) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(
        isinstance(x, int) and not isinstance(x, bool) for x in value)


def _split_even(total: int, parts: int) -> list[int]:
    """`parts` even numbers adding up to `total` (rotary axes rotate pairs of channels)."""
    base = (total // parts) // 2 * 2
    out = [base] * parts
    out[0] += total - base * parts
    return out


def make_model(config: dict):
    """The model of a make_config config, with random weights."""
    kwargs = {k: v for k, v in config.items() if k != "_class_name"}
    return getattr(_diffusers(), config["_class_name"])(**kwargs)


def _first_int(config, keys, default: int) -> int:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default


class InputMaker:
    """Inputs for a diffusers model's forward, named as builder._working_inputs expects:
    candidates() lists keyword sets best first, make(names) builds one (KeyError: an input the
    zoo cannot make). A name "sample@video5" is the input "sample" in the "video5" layout."""

    # "video": (batch, channels, frames, height, width); "frames": (batch, frames, channels, ...).
    LAYOUTS = ("image",) + tuple(f"{kind}{f}" for kind in ("video", "frames") for f in VIDEO_FRAMES) + (
        "tokens", "signal")
    # Optional inputs passed only when the required and the other optional ones are not enough.
    SECONDARY = ("guidance", "class_labels", "encoder_attention_mask", "added_time_ids", "fps")
    LATENT_NAMES = ("sample", "hidden_states", "x", "latents", "z")
    TIMESTEP_NAMES = ("timestep", "t", "timestep_r", "r_timestep")

    def __init__(self, torch, model, config: dict, scale: Scale):
        self.torch, self.model, self.scale = torch, model, scale
        self.config = dict(getattr(model, "config", {}) or config)
        self.generator = torch.Generator().manual_seed(SEED)
        self.parameters = inspect.signature(model.forward).parameters

    def _random(self, *shape):
        return self.torch.randn(*shape, generator=self.generator)

    def latent(self, layout: str):
        c = self.config
        channels = _first_int(c, ("in_channels", "latent_channels", "num_channels"), 4)
        autoencoder = "latent_channels" in c or "Autoencoder" in str(c.get("_class_name", ""))
        side = AUTOENCODER_SIZE if autoencoder else min(_first_int(c, ("sample_size",), LATENT_SIZE), LATENT_SIZE)
        batch = self.scale.batch
        if layout == "image":
            return self._random(batch, channels, side, side)
        if layout.startswith("video"):
            return self._random(batch, channels, int(layout[5:]), side, side)
        if layout.startswith("frames"):
            return self._random(batch, int(layout[6:]), channels, side, side)
        if layout == "tokens":  # packed patches (Flux-style transformers take (batch, tokens, channels))
            return self._random(batch, side * side // 4, channels)
        channels = _first_int(c, ("audio_channels", "in_channels", "latent_channels"), 1)
        return self._random(batch, channels, self.scale.audio_samples)

    def condition(self):
        width = _first_int(self.config, CONDITION_KEYS, self.scale.hidden)
        return self._random(self.scale.batch, TEXT_TOKENS, width)

    def _known(self, layout: str) -> dict:
        torch, batch = self.torch, self.scale.batch
        pooled = _first_int(self.config, POOLED_KEYS, self.scale.hidden)
        tokens = LATENT_SIZE * LATENT_SIZE // 4
        conditioning = _first_int(self.config, ("conditioning_channels",), 0)
        control = (lambda: self._random(batch, conditioning, 8 * LATENT_SIZE, 8 * LATENT_SIZE)) if conditioning \
            else (lambda: self.latent(layout))
        return {
            **{name: (lambda: self.latent(layout)) for name in self.LATENT_NAMES},
            **{name: (lambda: torch.linspace(10.0, 500.0, batch)) for name in self.TIMESTEP_NAMES},
            "timestep_ratio": lambda: torch.full((batch,), 0.5),
            "input_ids": lambda: torch.randint(0, min(_first_int(self.config, ("vocab_size", "codebook_size"),
                                                                 self.scale.vocab), self.scale.vocab),
                                               (batch, tokens), generator=self.generator),
            "mel": lambda: self._random(batch, _first_int(self.config, ("num_mels", "n_mels", "mel_channels"), 80),
                                        self.scale.audio_frames),
            "proj_embedding": lambda: self._random(batch, _first_int(self.config, ("embedding_dim",), 64)),
            "encoder_hidden_states": self.condition,
            "encoder_attention_mask": lambda: torch.ones(batch, TEXT_TOKENS, dtype=torch.long),
            "pooled_projections": lambda: self._random(batch, pooled),
            "class_labels": lambda: torch.zeros(batch, dtype=torch.long),
            "controlnet_cond": control,
            "img_ids": lambda: torch.zeros(tokens, 3), "txt_ids": lambda: torch.zeros(TEXT_TOKENS, 3),
            "guidance": lambda: torch.full((batch,), 3.5),
            "added_time_ids": lambda: self._random(batch, 3),
            "original_size": lambda: torch.full((batch, 2), 64.0), "target_size": lambda: torch.full((batch, 2), 64.0),
            "crop_coords": lambda: torch.zeros(batch, 2),
            "fps": lambda: torch.full((batch,), 8), "image_latents": lambda: self.latent(layout),
        }

    def _required(self) -> list[str]:
        return [name for name, p in self.parameters.items()
                if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and name != "self"]

    def candidates(self) -> list[list[str]]:
        """Every input the zoo knows (optional ones included, a pipeline passes them), then the
        required ones only; each in every latent layout."""
        known = self._known("image")
        required = self._required()
        optional = [n for n in self.parameters if n in known and n not in required]
        primary = [n for n in optional if n not in self.SECONDARY]
        out = []
        for layout in self.LAYOUTS:
            for names in (required + primary, required + optional, required):
                chosen = [f"{n}@{layout}" for n in names]
                if chosen not in out:
                    out.append(chosen)
        return out

    def make(self, names: list[str]) -> dict:
        kwargs = {}
        for name in names:
            base, _, layout = name.partition("@")
            makers = self._known(layout or "image")
            if base not in makers:
                raise KeyError(base)
            kwargs[base] = makers[base]()
        return kwargs
