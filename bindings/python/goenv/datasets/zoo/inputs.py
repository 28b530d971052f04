"""Example inputs from a model's own forward signature: token ids for text models, images of
the config's size and channels for vision models, waveforms or spectrograms for audio
models, decoder tokens for encoder-decoders. Deterministic: a fixed seed.

`candidates` gives the input sets to try in order (a multimodal model is first given text
and images together, then each alone); the first one the model runs on is imported."""

from __future__ import annotations

import inspect

from goenv.datasets.zoo.configs import Scale

SEED = 0
_BIN_KEYS = ("num_mel_bins", "feature_size", "input_feat_per_channel", "n_mels", "num_mel_filters")
_SUBS = ("text_config", "vision_config", "audio_config", "encoder", "decoder", "speech_config")


def _find(config, *keys, default=None):
    """The first of `keys` set on the config or, failing that, on its sub-configs."""
    for key in keys:
        value = getattr(config, key, None)
        if value is not None and not callable(value):
            return value
    for sub in _SUBS:
        child = getattr(config, sub, None)
        if child is not None and hasattr(child, "to_dict"):
            found = _find(child, *keys, default=None)
            if found is not None:
                return found
    return default


def _vision_config(config):
    return getattr(config, "vision_config", None) or config


def _int(value, default: int) -> int:
    if isinstance(value, (list, tuple)) and value:
        value = value[0]
    return int(value) if isinstance(value, int) and value > 0 else default


def _special_ids(config) -> set:
    ids = set()
    for cfg in [config] + [getattr(config, s, None) for s in _SUBS]:
        if cfg is None or not hasattr(cfg, "to_dict"):
            continue
        for key, value in cfg.__dict__.items():
            if key.endswith(("_token_id", "_token_index")) and isinstance(value, int):
                ids.add(value)
    return ids


class InputMaker:
    def __init__(self, torch, model, config, scale: Scale):
        self.torch, self.model, self.config, self.scale = torch, model, config, scale
        self.generator = torch.Generator().manual_seed(SEED)
        self.parameters = inspect.signature(model.forward).parameters

    def tokens(self, length: int | None = None):
        torch, scale = self.torch, self.scale
        vocab = _int(_find(self.config, "vocab_size"), scale.vocab)
        high = max(2, min(vocab, scale.vocab))
        special = _special_ids(self.config)
        ids = torch.randint(0, high, (scale.batch, length or scale.sequence), generator=self.generator)
        if special:  # ordinary tokens only: no image placeholders or end-of-text by chance
            for token in special:
                ids[ids == token] = next((i for i in range(high) if i not in special), 0)
        return ids

    def pixels(self):
        vision = _vision_config(self.config)
        size = _int(getattr(vision, "image_size", None), self.scale.image_size)
        channels = _int(getattr(vision, "num_channels", None) or getattr(vision, "in_channels", None), 3)
        return self.torch.randn(self.scale.batch, channels, size, size, generator=self.generator)

    def waveform(self):
        frames, bins = getattr(self.config, "max_length", None), getattr(self.config, "num_mel_bins", None)
        if isinstance(frames, int) and isinstance(bins, int):  # spectrogram transformers name their input values
            return self.torch.randn(self.scale.batch, frames, bins, generator=self.generator)
        return self.torch.randn(self.scale.batch, self.scale.audio_samples, generator=self.generator)

    def bin_counts(self) -> list:
        """Every spectrogram height the config or any of its sub-configs names, most likely first."""
        found = []

        def visit(cfg, depth):
            for key in _BIN_KEYS:
                value = cfg.__dict__.get(key)
                if isinstance(value, int) and value > 0 and value not in found:
                    found.append(value)
            if depth < 2:
                for value in list(cfg.__dict__.values()):
                    if hasattr(value, "to_dict") and hasattr(value, "model_type"):
                        visit(value, depth + 1)

        visit(self.config, 0)
        return found

    def spectrogram(self, bins: int | None = None):
        config, scale = self.config, self.scale
        bins = bins or _int(_find(config, *_BIN_KEYS), 80)
        sources = _find(config, "max_source_positions")
        if isinstance(sources, int) and "whisper" in str(getattr(config, "model_type", "")):
            return self.torch.randn(scale.batch, bins, 2 * sources, generator=self.generator)
        channels = _int(_find(config, "input_channels"), 1)
        return self.torch.randn(scale.batch, scale.audio_frames, bins * channels, generator=self.generator)

    def known(self, name: str):
        """An input for a forward argument the zoo knows by name, or None."""
        torch, scale = self.torch, self.scale
        makers = {
            "input_ids": self.tokens, "decoder_input_ids": self.tokens,
            "attention_mask": lambda: torch.ones(scale.batch, scale.sequence, dtype=torch.long),
            "decoder_attention_mask": lambda: torch.ones(scale.batch, scale.sequence, dtype=torch.long),
            "token_type_ids": lambda: torch.zeros(scale.batch, scale.sequence, dtype=torch.long),
            "pixel_values": self.pixels, "input_values": self.waveform, "input_features": self.spectrogram,
            "bbox": lambda: torch.zeros(scale.batch, scale.sequence, 4, dtype=torch.long),
        }
        maker = makers.get(name)
        return maker() if maker is not None else None

    def required(self) -> list:
        return [name for name, p in self.parameters.items()
                if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and name != "self"]

    def candidates(self) -> list:
        """Keyword-input sets to try, best first."""
        params = self.parameters
        main = getattr(self.model, "main_input_name", "input_ids")
        encoder_decoder = bool(getattr(self.config, "is_encoder_decoder", False))
        sets = []
        primary = [main] if main in params else []
        if main != "input_ids" and "input_ids" in params:
            sets.append(primary + ["input_ids"])  # text and image/audio together (CLIP-like, captioning)
        if primary:
            sets.append(primary)
        if main == "input_values":
            sets.append(["input_values@mono"])  # codecs take (batch, channels, samples)
        if main == "input_features":  # the encoder's own sub-config may name another height
            sets.extend([f"input_features@{bins}"] for bins in self.bin_counts()[1:3])
        if "input_ids" in params and main != "input_ids":
            sets.append(["input_ids"])
        for extra in ("pixel_values", "input_values", "input_features"):
            if extra in params and extra != main:
                sets.append(["input_ids", extra] if "input_ids" in params else [extra])
        if not sets:
            sets.append([])
        out = []
        for names in sets:
            bases = {name.partition("@")[0] for name in names}
            chosen = list(dict.fromkeys(names + [r for r in self.required() if r not in bases]))
            if encoder_decoder and "decoder_input_ids" in params:
                chosen.append("decoder_input_ids")
            if "input_ids" in chosen and "attention_mask" in params:
                chosen.append("attention_mask")
            key = tuple(chosen)
            if key not in [tuple(c) for c in out]:
                out.append(chosen)
        return out

    def make(self, names: list) -> dict:
        """The inputs for `names`; raises KeyError naming an argument the zoo cannot make."""
        kwargs = {}
        for name in dict.fromkeys(names):
            name, _, variant = name.partition("@")
            value = self.known(name)
            if value is None:
                raise KeyError(name)
            if variant.isdigit():
                value = self.spectrogram(int(variant))
            kwargs[name] = value.unsqueeze(1) if variant == "mono" else value
        return kwargs
