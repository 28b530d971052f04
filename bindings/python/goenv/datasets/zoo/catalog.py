"""Which model types the zoo tries, and their modality. For transformers, read from its own
auto mappings: every type with a base model (MODEL_MAPPING_NAMES) is tried; its modality is the
kind of task heads the library registers for it. For diffusers, every model class it exports
(zoo/diffusers_models.py)."""

from __future__ import annotations

import functools

from goenv._core import NotFound
from goenv.extras import import_extra

LIBRARIES = {"transformers": "5.23.0", "diffusers": "0.42.1"}
MODALITIES = ("text", "vision", "audio", "multimodal", "other")

# Task mappings that name a modality, checked in this order: a type with image-and-text heads is
# multimodal even though it also has a causal-LM head.
_TASKS_BY_MODALITY = {
    "multimodal": ("IMAGE_TEXT_TO_TEXT", "MULTIMODAL_LM", "VISUAL_QUESTION_ANSWERING", "ZERO_SHOT_IMAGE_CLASSIFICATION",
                   "ZERO_SHOT_OBJECT_DETECTION", "DOCUMENT_QUESTION_ANSWERING", "RETRIEVAL"),
    "audio": ("AUDIO_CLASSIFICATION", "AUDIO_FRAME_CLASSIFICATION", "AUDIO_XVECTOR", "CTC", "SPEECH_SEQ_2_SEQ",
              "TEXT_TO_SPECTROGRAM", "TEXT_TO_WAVEFORM", "RNNT", "TDT"),
    "vision": ("IMAGE_CLASSIFICATION", "IMAGE", "BACKBONE", "IMAGE_SEGMENTATION", "SEMANTIC_SEGMENTATION",
               "INSTANCE_SEGMENTATION", "UNIVERSAL_SEGMENTATION", "OBJECT_DETECTION", "DEPTH_ESTIMATION",
               "VIDEO_CLASSIFICATION", "KEYPOINT_DETECTION", "KEYPOINT_MATCHING", "MASKED_IMAGE_MODELING",
               "IMAGE_TO_IMAGE", "MASK_GENERATION", "CAUSAL_IMAGE_MODELING", "IMAGE_MATTING", "NORMAL_ESTIMATION",
               "POINTMAP_ESTIMATION", "POSE_ESTIMATION"),
    "text": ("CAUSAL_LM", "MASKED_LM", "SEQ_TO_SEQ_CAUSAL_LM", "SEQUENCE_CLASSIFICATION", "TOKEN_CLASSIFICATION",
             "QUESTION_ANSWERING", "MULTIPLE_CHOICE", "NEXT_SENTENCE_PREDICTION", "TEXT_ENCODING"),
}


def checked_library(library: str) -> str:
    if library not in LIBRARIES:
        choices = ", ".join(f"{name}=={version}" for name, version in LIBRARIES.items())
        raise NotFound(f"zoo library {library!r} is not known; choices: {choices}")
    return library


@functools.lru_cache(maxsize=None)
def _types(library: str) -> tuple:
    if library == "diffusers":
        from goenv.datasets.zoo import diffusers_models

        return diffusers_models.model_types()
    # The zoo's first use of transformers: a missing one names the extra that installs it.
    auto = import_extra("transformers.models.auto.modeling_auto", extra="zoo", feature="goenv.datasets.zoo")
    return tuple(sorted(auto.MODEL_MAPPING_NAMES))


def model_types(library: str = "transformers") -> list:
    """Every model type the zoo tries for `library`, sorted."""
    return list(_types(checked_library(library)))


def checked_model_type(model_type: str, library: str = "transformers") -> str:
    types = _types(checked_library(library))
    if model_type not in types:
        import difflib

        near = difflib.get_close_matches(str(model_type), types, n=5)
        hint = f"; nearest: {', '.join(near)}" if near else ""
        raise NotFound(f"{library}=={LIBRARIES[library]} has no model type {model_type!r}{hint}; "
                       f"choices ({len(types)}): {', '.join(types)}")
    return model_type


@functools.lru_cache(maxsize=None)
def _modalities(library: str) -> dict:
    from transformers.models.auto import modeling_auto

    found: dict = {}
    for kind, tasks in _TASKS_BY_MODALITY.items():
        for task in tasks:
            names = getattr(modeling_auto, f"MODEL_FOR_{task}_MAPPING_NAMES", {})
            for model_type in names:
                found.setdefault(model_type, kind)
    return found


# Types with no task head of their own are mostly the parts of a larger model ("gemma4_vision",
# "parakeet_encoder"): their name says which part. Words checked in this order.
_NAME_WORDS = (
    ("vision", ("vision", "vqmodel", "image")),
    ("audio", ("audio", "asr", "speech", "codec", "encodec", "mimi", "dac", "transcribe", "diarization", "clvp",
               "parakeet", "lasr")),
    ("multimodal", ("clip", "clap", "flava", "bridgetower", "groupvit", "blip", "aimv2", "video")),
    ("text", ("text", "dpr", "embedding", "assistant")),
)


def modality(model_type: str, library: str = "transformers") -> str:
    """"text", "vision", "audio", "multimodal" or "other" (time series, decision models, ...)."""
    checked_model_type(model_type, library)
    if library == "diffusers":
        from goenv.datasets.zoo import diffusers_models

        return diffusers_models.modality(model_type)
    known = _modalities(library).get(model_type)
    if known is not None:
        return known
    words = model_type.replace("-", "_").split("_")
    for kind, markers in _NAME_WORDS:
        if any(word.startswith(marker) for word in words for marker in markers):
            return kind
    return "other"
