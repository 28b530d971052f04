"""Imported once by the zoo's forkserver, so every forked build child starts with torch,
transformers, diffusers (when installed) and goenv loaded and offline, and with torch.export's first-use imports done (a
warm-up export of a one-layer module): a child then starts in well under a second."""

import os

from goenv.datasets.zoo.builder import OFFLINE

os.environ.update(OFFLINE)

import torch  # noqa: E402
import transformers  # noqa: E402,F401
from transformers import AutoConfig, AutoModel, PreTrainedModel  # noqa: E402,F401

import goenv.importers.torch_fx  # noqa: E402

try:
    import diffusers  # noqa: E402,F401
except ImportError:  # a diffusers build reports the missing extra itself
    pass


def _warm_up() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        goenv.importers.torch_fx.from_torch(torch.nn.Linear(2, 2), example_kwargs={"input": torch.ones(1, 2)},
                                            training=True)


_warm_up()
