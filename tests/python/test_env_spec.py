"""The env's options and info keys are declared once (envs/spec.h: goenv.option_fields(),
goenv.info_fields()): an env and a vector env report exactly those info keys, of the declared
types; every StepInfo field is an info key and every EnvConfig field is set by an option."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import goenv

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIELDS = {field["name"]: field for field in goenv.info_fields()}
PYTHON_TYPES = {"float": float, "int": int, "bool": bool, "str": str, "ndarray": np.ndarray, "dict": dict}
REJECTED = "only after a rejected decision"


def _steps(task: str, options: dict):
    """(info of a reset, info of a random step) of an env of `task`."""
    env = goenv.make(f"{task}-transformer-xl-2", **options)
    _, reset_info = env.reset(seed=0)
    env.action_space.seed(0)
    return reset_info, env.step(env.action_space.sample())[4]


def test_the_spec_names_each_key_once_with_a_known_type_and_presence():
    names = [field["name"] for field in goenv.info_fields()]
    assert len(names) == len(set(names))
    for field in goenv.info_fields():
        assert field["type"] in PYTHON_TYPES and field["doc"]
        assert field["present"] in ("always", REJECTED)
        assert field["vector"] is not None or field["vector_note"], f"{field['name']}: say why a vector env lacks it"


@pytest.mark.parametrize("task", goenv._core.task_names())
@pytest.mark.parametrize("options", [{}, {"colocation": "strict"}], ids=["follow", "strict"])
def test_an_env_reports_exactly_the_spec_keys_of_their_types(task, options):
    for info in _steps(task, options):
        expected = {name for name, field in FIELDS.items() if field["present"] == "always" or info["invalid"]}
        assert set(info) == expected
        for name, value in info.items():
            assert isinstance(value, PYTHON_TYPES[FIELDS[name]["type"]]), (name, type(value))


def test_a_rejected_decision_shows_the_rejected_keys():
    # A strict env with a random placement splits a colocation group: the step is rejected.
    _, info = _steps("placement", {"colocation": "strict"})
    assert info["invalid"] and info["invalid_reason"]
    assert {name for name, field in FIELDS.items() if field["present"] == REJECTED} <= set(info)


def _struct_fields(name: str) -> set[str]:
    """The field names of `struct name` in envs/env.h."""
    header = (ROOT / "envs" / "env.h").read_text()
    body = header[header.index(f"struct {name} {{"):]
    body = body[:body.index("\n};")]
    declared = set()
    for line in body.splitlines()[1:]:
        code = line.split("//")[0]
        if not code.strip():
            continue
        names = re.sub(r"^\s*[\w:<>]+\s+", "", code)  # drop the type
        declared |= {re.sub(r"\s*=.*", "", name).strip() for name in names.rstrip("; ").split(",")}
    return declared


def test_every_step_info_field_is_an_info_key():
    declared = _struct_fields("StepInfo")
    assert declared and declared <= set(FIELDS), declared - set(FIELDS)


def test_every_env_config_field_is_set_by_an_option():
    options = {field["name"] for field in goenv.option_fields()}
    # Set by options of other names: any other keyword, and "placement" or "priority" given as values.
    by_other_options = {"graph_params", "initial_placement", "initial_priority"}
    declared = _struct_fields("EnvConfig")
    assert declared - by_other_options <= options, (declared - by_other_options) - options
    assert options - declared == {"priority"}  # the one option whose field has another name


def test_the_options_are_the_ones_make_takes_and_names():
    names = [field["name"] for field in goenv.option_fields()]
    assert len(names) == len(set(names)) and all(field["doc"] for field in goenv.option_fields())
    assert goenv.GraphEnv.OPTIONS == tuple(name for name in names if name != "cluster")
    config = goenv.make("placement-transformer-xl-2").unwrapped.core.config
    assert set(names) <= set(config)
    with pytest.raises(goenv.InvalidArgument, match=", ".join(names)):
        goenv.make("placement-transformer-xl-2", horizon_steps="3")


@pytest.mark.parametrize("options", [{}, {"colocation": "strict"}], ids=["follow", "strict"])
def test_a_vector_env_reports_the_spec_vector_keys_each_env_as_its_own_env(options):
    num_envs = 3
    venv = goenv.make_vec("placement-transformer-xl-2", num_envs=num_envs, **options)
    singles = [goenv.make("placement-transformer-xl-2", **options) for _ in range(num_envs)]
    _, reset_info = venv.reset(seed=0)
    for i, env in enumerate(singles):
        env.reset(seed=i)
    venv.action_space.seed(0)
    actions = venv.action_space.sample()
    step_info = venv.step(actions)[4]
    single_infos = [env.step(actions[i])[4] for i, env in enumerate(singles)]
    vector_keys = {name for name, field in FIELDS.items() if field["vector"] is not None}
    for info in (reset_info, step_info):
        assert set(info) == vector_keys | {f"_{name}" for name in vector_keys}
        for name in vector_keys:
            assert len(info[name]) == num_envs and info[f"_{name}"].dtype == bool
    for i, single in enumerate(single_infos):
        for name in ("runtime", "bytes_moved", "invalid", "invalid_reason", "colocation_moved"):
            assert step_info[name][i] == single[name], (name, i)
        assert step_info["_rejected_runtime"][i] == single["invalid"]
        if single["invalid"]:
            assert step_info["rejected_runtime"][i] == single["rejected_runtime"]


@pytest.mark.parametrize("make", ["env", "vector env"])
def test_env_and_vector_env_split_an_action_into_heads_alike(make):
    """One helper splits an action into its heads for both (bindings/actions.h): the same dict
    rules and the same words, `what` naming the env's action or the batch's actions."""
    if make == "env":
        env = goenv.make("joint-transformer-xl-2")
        what = f"{env.core.id} action"
    else:
        env = goenv.make_vec("joint-transformer-xl-2", num_envs=2)
        what = "actions"
    env.reset(seed=0)
    heads = "placement, priority, fusion"
    action = env.action_space.sample()
    with pytest.raises(goenv.InvalidAction, match=re.escape(f"{what} must be a dict with one entry per head: {heads}")):
        env.step(action["placement"])
    with pytest.raises(goenv.InvalidAction, match=re.escape(f"{what} has no 'fusion' entry; heads: {heads}")):
        env.step({k: v for k, v in action.items() if k != "fusion"})
    with pytest.raises(goenv.InvalidAction, match=re.escape(f"{what} has key(s) 'fuse' that are not heads")):
        env.step({**action, "fuse": action["fusion"]})
    with pytest.raises(goenv.InvalidAction, match=re.escape(f"{what}['priority']")):
        env.step({**action, "priority": "not numbers"})


OBSERVATION = {field["name"]: field for field in goenv.observation_fields()}
LAYOUT_ARRAYS = {"batch", "num_nodes", "num_edges"}  # a vector layout's own arrays, not the env's


def _spec_names(version: int) -> list:
    return [name for name, field in OBSERVATION.items() if field["since_version"] <= version]


@pytest.mark.parametrize("version", [1, 2])
def test_an_env_observes_exactly_the_spec_arrays_of_their_dtypes_and_columns(version):
    env = goenv.make("placement-transformer-xl-2", observation_version=version)
    obs, _ = env.reset(seed=0)
    assert set(obs) == set(env.observation_space.spaces) == set(_spec_names(version))
    for name, array in obs.items():
        field = OBSERVATION[name]
        assert array.dtype == np.dtype(field["dtype"]), name
        assert array.ndim == len(field["dims"]), name
        if name == "node_state":  # the current device (one-hot), then the version's columns (v1: no slack)
            assert array.shape[-1] == env.core.num_devices + len(goenv._core.node_state_names(version))
            assert goenv._core.node_state_names(version) == field["columns"][:array.shape[-1] - env.core.num_devices]
        elif field["columns"] is not None:
            assert array.shape[-1] == len(field["columns"]), name
        assert (not array.flags.writeable) == field["static"], name  # static arrays are shared read-only views


@pytest.mark.parametrize("layout", ["stacked", "concatenated", "padded"])
def test_a_vector_env_observes_the_spec_arrays_in_every_layout(layout):
    if layout == "concatenated":
        venv = goenv.make_vec(["placement-transformer-xl-2", "placement-gnmt-2"])
    else:
        venv = goenv.make_vec("placement-transformer-xl-2", num_envs=2,
                              **({"pad_to": (256, 512)} if layout == "padded" else {}))
    assert venv.layout == layout
    obs, _ = venv.reset(seed=0)
    assert set(obs) - LAYOUT_ARRAYS == set(_spec_names(2))
    assert set(venv.observation_space.spaces) - LAYOUT_ARRAYS == set(_spec_names(2))
    for name in _spec_names(2):
        assert obs[name].dtype == np.dtype(OBSERVATION[name]["dtype"]), name


def test_the_spec_columns_are_the_cores():
    assert OBSERVATION["node_features"]["columns"] == list(goenv._core.node_feature_names())
    assert OBSERVATION["node_state"]["columns"] == list(goenv._core.node_state_names())
    assert OBSERVATION["globals"]["columns"] == list(goenv._core.global_names())
    assert all(field["doc"] and field["range"] in ("real", "binary", "node index") for field in OBSERVATION.values())
