"""One zoo build, in the current process: config -> shrunk config -> model with random
weights -> example inputs -> from_torch training step -> ZooResult. child.py runs it in a
child process with memory and time limits; call it directly only where a crash or a huge
allocation does not matter."""

from __future__ import annotations

import os
import re
import time
import warnings

from goenv.datasets.zoo.catalog import LIBRARIES
from goenv.datasets.zoo.configs import SCALES, config_hash, shrink
from goenv.datasets.zoo.inputs import SEED, InputMaker
from goenv.datasets.zoo.result import ZooResult

OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}


# Messages of an allocation refused under the child's memory limit (Python's and torch's).
_OUT_OF_MEMORY = ("MemoryError", "can't allocate memory", "not enough memory", "std::bad_alloc",
                  "Cannot allocate memory", "failed to map segment")


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first}"[:300]


def make_config(model_type: str, size: str, library: str = "transformers"):
    """The shrunk config: a transformers config object, or a diffusers class's constructor
    arguments (a dict)."""
    if library == "diffusers":
        from goenv.datasets.zoo import diffusers_models

        return diffusers_models.make_config(model_type, size)
    from transformers import AutoConfig

    config = AutoConfig.for_model(model_type)
    return shrink(config, size, model_type)


def _make_model(config, library: str):
    if library == "diffusers":
        from goenv.datasets.zoo import diffusers_models

        return diffusers_models.make_model(config)
    from transformers import AutoModel

    return AutoModel.from_config(config)


def _input_maker(torch, model, config, scale, library: str):
    if library == "diffusers":
        from goenv.datasets.zoo import diffusers_models

        return diffusers_models.InputMaker(torch, model, config, scale)
    return InputMaker(torch, model, config, scale)


def _working_inputs(torch, model, maker: InputMaker) -> tuple[dict | None, list[str]]:
    """The first input set of the model's candidates that one forward pass accepts, and why the
    others failed. Training mode first (dropout is part of a training step); a model that in
    training mode insists on labels (FastSpeech2's durations) is imported in evaluation mode
    (the model is left in the mode that worked)."""
    problems = []
    for training, names in [(training, names) for training in (True, False) for names in maker.candidates()]:
        model.train(training)
        try:
            trial = maker.make(names)
        except KeyError as missing:
            problem = f"forward needs {missing.args[0]!r}, which the zoo cannot make"
            if training and problem not in problems:
                problems.append(problem)
            continue
        try:
            torch.manual_seed(SEED)
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model(**trial)
        except Exception as error:  # noqa: BLE001 - the model refuses these inputs: try the next set
            if training:
                problems.append(f"{'+'.join(names) or 'no inputs'}: {_short(error)}")
            continue
        return trial, problems
    return None, problems


def build_here(model_type: str, size: str = "tiny", library: str = "transformers") -> ZooResult:
    """Builds in this process (no limits). The caller has checked the names."""
    os.environ.update(OFFLINE)
    import torch

    import goenv
    from goenv.importers import CostEstimateWarning

    start = time.perf_counter()
    result = ZooResult(model_type, size, library)

    def failed(stage: str, reason: str) -> ZooResult:
        if any(marker in reason for marker in _OUT_OF_MEMORY):
            raise MemoryError(reason)  # the memory limit, not the model: the child reports stage "limits"
        result.stage, result.reason, result.seconds = stage, reason, time.perf_counter() - start
        return result

    scale = SCALES[size]
    try:
        config = make_config(model_type, size, library)
    except Exception as error:  # noqa: BLE001 - any library error is this type's failure
        return failed("config", _short(error))
    result.provenance = {"library": library, "library_version": LIBRARIES[library], "model_type": model_type,
                         "size": size, "config_hash": config_hash(config), "goenv_version": goenv.__version__,
                         "torch_version": torch.__version__.split("+")[0]}
    try:
        torch.manual_seed(SEED)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = _make_model(config, library)
        model.train()
    except Exception as error:  # noqa: BLE001
        return failed("build", _short(error))

    kwargs, problems = _working_inputs(torch, model, _input_maker(torch, model, config, scale, library))
    if kwargs is None:
        return failed("inputs", "; ".join(problems)[:600] or "no input set fits")

    uncosted = []
    try:
        torch.manual_seed(SEED)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            graph = goenv.datasets.from_torch(model, (), example_kwargs=kwargs, training=True,
                                              name=f"{model_type}-{size}")
        for warning in caught:
            if issubclass(warning.category, CostEstimateWarning):
                match = re.search(r"op '([^']+)'", str(warning.message))
                uncosted.append(match.group(1) if match else str(warning.message)[:80])
    except ValueError as error:  # the assembler refused an op (type or cost)
        return failed("cost", _short(error))
    except Exception as error:  # noqa: BLE001
        return failed("trace", _short(error))
    result.ok = True
    result.graph_bytes = graph.to_bytes()
    result.num_nodes = int(graph.num_nodes)
    result.uncosted_ops = tuple(sorted(set(uncosted)))
    result.seconds = time.perf_counter() - start
    return result
