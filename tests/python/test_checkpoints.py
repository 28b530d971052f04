"""Agent checkpoints are data, never code (docs/architecture.md): the safetensors layout, read
by a bounded reader that checks everything before it copies anything; old formats
(a TorchScript archive) are refused, and converted without running them."""

from __future__ import annotations

import hashlib

import io
import json
import os
import pickle
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

import goenv
from helpers import require_agents

agents = require_agents()
from goenv.agents import convert  # noqa: E402
from test_agents import placement_env, small, torch  # noqa: E402

LEGACY = Path(__file__).resolve().parent / "data" / "legacy" / "go-placement-2dev-format2.agent"
SHIPPED = Path(agents.__file__).resolve().parent / "shipped" / "go-placement.agent"
# The 2-device placer shipped by 0.4.0 was the conversion of LEGACY; its SHA-256 (the file retired in 0.5.0).
CONVERTED_SHA256 = "15d309c81d1fda39cc350ddb408a6845abb8a25b72e8d479ffa073af59cda2d8"


def split(data: bytes) -> tuple[dict, bytes]:
    size = struct.unpack_from("<Q", data)[0]
    return json.loads(data[8:8 + size]), data[8 + size:]


def join(header: dict, body: bytes) -> bytes:
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + body


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    env = placement_env()
    agent = small(agents.GO, env=env, segment_length=8)
    agent.imitate(env, steps=2, progress=False)
    agent.train(env, total_steps=16, progress=False)
    path = tmp_path_factory.mktemp("checkpoints") / "go.agent"
    agent.save(path)
    return env, agent, path.read_bytes()


def test_a_checkpoint_is_a_safetensors_file_readable_without_goenv(saved, tmp_path):
    from safetensors import safe_open

    env, agent, data = saved
    (tmp_path / "go.safetensors").write_bytes(data)
    with safe_open(str(tmp_path / "go.safetensors"), framework="numpy") as f:
        metadata = f.metadata()
        names = list(f.keys())
        policy = {name: f.get_tensor(name) for name in names if name.startswith("policy.")}
    assert metadata["format"] == "goenv-agent" and metadata["format_version"] == "3"
    assert metadata["goenv_version"] == goenv.__version__  # which goenv saved it
    assert metadata["config.algorithm"] == "go" and metadata["spec.heads"] == "placement:2"
    assert any(name.startswith("adam.") for name in names) and "generator.sampling" in names
    assert any(name.startswith("teacher.") for name in names)
    header, _ = split(data)
    in_file_order = sorted(policy, key=lambda name: header[name]["data_offsets"][0])
    flat = np.concatenate([policy[name].ravel() for name in in_file_order])
    np.testing.assert_array_equal(flat, agent.weights)  # the parameters, bit for bit, in weights() order
    assert agents.load(tmp_path / "go.safetensors").act(env.reset(seed=0)[0], deterministic=True).tolist() == \
        agent.act(env.reset(seed=0)[0], deterministic=True).tolist()


def test_old_formats_are_refused_with_how_to_convert_and_change_nothing(saved, tmp_path):
    env, agent, _ = saved
    before = np.array(agent.weights)
    with pytest.raises(goenv.InvalidArgument, match=r"format 2 .*TorchScript.*python -m goenv.agents.convert"):
        agent.load(LEGACY)
    with pytest.raises(goenv.InvalidArgument, match="goenv.agents.convert"):
        agents.load(LEGACY)
    np.testing.assert_array_equal(agent.weights, before)


def test_importing_goenv_agents_pretrained_leaves_it_a_function():
    # The shipped checkpoints' folder is not named after the function: `import
    # goenv.agents.pretrained` (a folder of that name would import as a namespace package)
    # must not replace the function with a module.
    import importlib

    try:
        importlib.import_module("goenv.agents.pretrained")
    except ModuleNotFoundError:
        pass
    assert callable(agents.pretrained) and SHIPPED.is_file()


def test_the_converter_reproduces_the_shipped_placer_from_its_old_file(tmp_path, capsys):
    target = tmp_path / "converted.agent"
    assert convert.main([str(LEGACY), str(target)]) == 0
    # Deterministic, and what 0.4.0 shipped was this conversion.
    assert hashlib.sha256(target.read_bytes()).hexdigest() == CONVERTED_SHA256
    assert convert.main([str(SHIPPED), str(tmp_path / "again.agent")]) == 2  # already current: not a legacy file
    assert "already a current (format 3, safetensors) goenv agent checkpoint" in capsys.readouterr().err
    assert not (tmp_path / "again.agent").exists()
    assert convert.main([]) == 2
    assert convert.main(["--help"]) == 0 and "format 1 or 2 checkpoint" in capsys.readouterr().out


def legacy_file(pickled: bytes, header: str = "config.algorithm=go\nhas_policy=1\n") -> bytes:
    payload = io.BytesIO()
    with zipfile.ZipFile(payload, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", pickled)
    payload = payload.getvalue()
    head = header.encode()
    return b"GOENVAGT" + struct.pack("<QQ", 2, len(head)) + head + struct.pack("<QQ", len(payload), 0) + payload


def test_the_converter_never_runs_what_the_archive_names(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    for pickled in (pickle.dumps(Payload(), protocol=2),
                    b"\x80\x02cbuiltins\neval\nq\x00X\x06\x00\x00\x00print()q\x01\x85q\x02Rq\x03."):
        with pytest.raises(goenv.InvalidArgument, match="cannot convert: refused (posix|os|builtins)"):
            convert.convert_bytes(legacy_file(pickled))
    assert not marker.exists()
    with pytest.raises(goenv.InvalidArgument, match="cannot convert"):
        convert.convert_bytes(b"GOENVAGT" + b"\x00" * 40)


def crafted(data: bytes, change) -> bytes:
    header, body = split(data)
    result = change(header, body)
    return result if isinstance(result, bytes) else join(header, body)


def first(header: dict, prefix: str) -> str:
    return next(name for name in header if name.startswith(prefix))


CASES = {
    "header size past the end": lambda h, b: struct.pack("<Q", 1 << 40) + b"{}",
    "header not JSON": lambda h, b: struct.pack("<Q", 8) + b"not json" + b,
    "deeply nested JSON": lambda h, b: struct.pack("<Q", 200_000) + b"[" * 200_000,
    "unknown tensor": lambda h, b: h.__setitem__("evil", h.pop(first(h, "policy."))),
    "wrong shape": lambda h, b: h[first(h, "policy.")].__setitem__("shape", [1, 1, 1]),
    "transposed shape": lambda h, b: h[first(h, "policy.")].__setitem__("shape", h[first(h, "policy.")]["shape"][::-1]),
    "dtype F16": lambda h, b: h[first(h, "policy.")].__setitem__("dtype", "F16"),
    "overlapping offsets": lambda h, b: h[first(h, "adam.")].__setitem__("data_offsets", [0, 8]),
    "data past the tensors": lambda h, b: join(h, b + b"\0" * 8),
    "checksum": lambda h, b: join(h, b[:-1] + bytes([b[-1] ^ 1])),
    "not goenv's": lambda h, b: h["__metadata__"].__setitem__("format", "other"),
    "future format": lambda h, b: h["__metadata__"].__setitem__("format_version", "9"),
    "huge policy in a small file": lambda h, b: h["__metadata__"].__setitem__("config.hidden", "4096"),
    "wide spec, no layers": lambda h, b: h["__metadata__"].update(  # 512 MB of input layer, no layer counts
        {"spec.node_feature_dim": "65536", "config.hidden": "2048", "config.sage_layers": "0",
         "config.attention_layers": "0"}),
    "huge spec": lambda h, b: h["__metadata__"].__setitem__("spec.node_feature_dim", str(1 << 40)),
    "non-finite teacher runtime": lambda h, b: h["__metadata__"].__setitem__(
        first(h["__metadata__"], "teacher."), "best-heuristic;nan;0;1"),
    "missing counter": lambda h, b: h["__metadata__"].pop("steps_trained"),
    "non-UTF-8 metadata": lambda h, b: join(h, b).replace(b'"config.algorithm": "go"', b'"config.algorithm": "g\xf1"'),
    "non-string metadata": lambda h, b: h["__metadata__"].__setitem__("next_slot", 3),
}


@pytest.mark.parametrize("header", [
    b"[" * (8 << 20),                                               # 8 MiB of nesting: 16 bytes of DOM each
    b'{"__metadata__": {}, "a": {"shape": [' + b"0," * (2 << 20) + b'0]}}',  # millions of values, 3 deep
    b'{"a": {"b": {"c": {}}}}',                                     # deeper than the format ever nests
])
def test_a_header_is_refused_before_parsing_when_its_parse_would_cost_more_than_its_bytes(header, tmp_path):
    path = tmp_path / "crafted.agent"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    with pytest.raises(goenv.InvalidArgument, match="header nests deeper than 3 levels or holds more than 1048576"):
        agents.load(path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_crafted_checkpoints_raise_a_clear_error_and_change_nothing(saved, tmp_path, case):
    env, agent, data = saved
    path = tmp_path / "crafted.agent"
    path.write_bytes(crafted(data, CASES[case]))
    before = np.array(agent.weights)
    with pytest.raises(goenv.InvalidArgument, match="checkpoint"):
        agent.load(path)
    with pytest.raises(goenv.InvalidArgument, match="checkpoint"):
        agents.load(path)
    np.testing.assert_array_equal(agent.weights, before)


def test_a_loaded_teacher_is_simulated_again_not_taken_from_the_file(saved, tmp_path):
    env, agent, data = saved
    true_runtime = agent.teacher(env)["runtime"]

    def flatter(header, body):
        key = first(header["__metadata__"], "teacher.")
        method, _, reward, calls = header["__metadata__"][key].split(";")
        header["__metadata__"][key] = f"{method};1e-12;{reward};{calls}"

    path = tmp_path / "flattering.agent"
    path.write_bytes(crafted(data, flatter))
    loaded = agents.load(path)
    assert loaded.teacher(env)["runtime"] == true_runtime
    assert loaded.optimize(env, budget=1)["runtime"] >= true_runtime * 0.999999


def test_checkpoints_are_read_only_from_regular_files_and_written_only_over_them(saved, tmp_path):
    env, agent, _ = saved
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(goenv.InvalidArgument, match="not a regular file"):
        agent.save(tmp_path / "fifo")
    with pytest.raises(goenv.InvalidArgument, match="not a regular file"):
        agent.save(tmp_path)
    assert (tmp_path / "fifo").exists() and not (tmp_path / "fifo").is_file()
    with pytest.raises(goenv.InvalidArgument, match="not a regular file"):
        agents.load("/dev/zero")


def test_an_agent_saved_on_a_gpu_loads_on_the_cpu_with_device_cpu(saved, tmp_path):
    """Trained on a GPU, used on a CPU: load(path, device="cpu") puts it there; without a GPU
    and without device=, the error names that fix; a bad device changes nothing."""
    env, agent, data = saved
    header, _ = split(data)
    assert header["__metadata__"]["config.device"] in ("auto", "cpu")
    path = tmp_path / "cuda.agent"
    path.write_bytes(crafted(data, lambda h, b: h["__metadata__"].__setitem__("config.device", "cuda")))
    obs = env.reset(seed=0)[0]
    loaded = agents.load(path, device="cpu")
    assert loaded.device == "cpu" and loaded.config["device"] == "cpu"
    assert loaded.act(obs, deterministic=True).tolist() == agent.act(obs, deterministic=True).tolist()
    assert agents.GO().load(path, device="auto").device in ("cpu", "cuda")
    if not torch.cuda.is_available():
        with pytest.raises(goenv.InvalidArgument, match=r"saved with device='cuda'.*device='cpu'"):
            agents.load(path)
    before = np.array(agent.weights)
    with pytest.raises(goenv.InvalidArgument, match="device must be"):
        agent.load(path, device="tpu")
    with pytest.raises(goenv.InvalidArgument, match="device must be"):
        agents.load(path, device=0)
    np.testing.assert_array_equal(agent.weights, before)


@pytest.mark.parametrize("option, value", [("minibatches", 2**31 - 1), ("epochs", 10**9), ("learning_rate", 1e308),
                                           ("max_grad_norm", 1e308)])
def test_options_a_checkpoint_carries_are_bounded_above(saved, tmp_path, option, value):
    """Outside-probe finding: the header's options (outside the data's checksum) had no upper
    bound, so a file could make train() loop for ever or overflow its update."""
    env, agent, data = saved
    path = tmp_path / "options.agent"
    path.write_bytes(crafted(data, lambda h, b: h["__metadata__"].__setitem__(f"config.{option}", repr(value))))
    with pytest.raises(goenv.InvalidArgument, match=option):
        agents.load(path)
    with pytest.raises(goenv.InvalidArgument, match=option):
        agents.GO(**{option: value})


def test_a_policy_less_checkpoint_cannot_ask_for_a_policy_the_machine_cannot_hold(tmp_path):
    """Outside-probe finding: a 1.3 KB checkpoint without a policy, whose options describe a huge
    one, loaded, and the first evaluate() tried to allocate it."""
    path = tmp_path / "huge.agent"
    agents.GO(hidden=4096, sage_layers=64, attention_layers=64, attention_heads=4).save(path)
    assert path.stat().st_size < 64 << 10
    loaded = agents.load(path)
    with pytest.raises(goenv.InvalidArgument, match="describe a policy of .* this machine has"):
        loaded.evaluate(placement_env())


def hash_bytes(data: bytes) -> int:
    """core/hash.h's hash_bytes (splitmix64 over 64-bit words, FNV over the tail): the checksum a
    checkpoint's metadata holds of its tensor data."""
    mask = 2**64 - 1

    def mix(x: int) -> int:
        x = (x + 0x9E3779B97F4A7C15) & mask
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
        return x ^ (x >> 31)

    h, words = 1469598103934665603, len(data) // 8
    for word in np.frombuffer(data, "<u8", count=words).tolist():
        h = mix(h ^ word)
    for byte in data[words * 8:]:
        h = ((h ^ byte) * 1099511628211) & mask
    return mix(h ^ len(data))


@pytest.mark.parametrize("step", [-1, 2**63 - 1])
def test_an_adam_step_count_out_of_range_is_refused_even_resealed(saved, tmp_path, step):
    """Outside-probe finding: a resealed step count of -1 or INT64_MAX loaded, and one imitate()
    step then made every weight NaN."""
    env, agent, data = saved

    def change(header, body):
        name = first(header, "adam.")
        name = name[:name.rindex(".")] + ".step"
        start, _ = header[name]["data_offsets"]
        body = body[:start] + struct.pack("<q", step) + body[start + 8:]
        header["__metadata__"]["checksum"] = format(hash_bytes(body), "x")
        return join(header, body)

    path = tmp_path / "adam.agent"
    path.write_bytes(crafted(data, change))
    with pytest.raises(goenv.InvalidArgument, match="Adam's step count"):
        agents.load(path)


def test_training_that_diverges_raises_and_keeps_the_weights(saved):
    """Outside-probe finding: weights within the load bound (1e6) made one imitate() step write NaN
    into every weight; now the step is not taken and training says why."""
    env, agent, data = saved
    diverging = agents.load_bytes(data)
    weights = np.full_like(np.array(diverging.weights), 1e6)
    diverging.set_weights(weights, diverging.weights_version)
    with pytest.raises(goenv.InvalidArgument, match="training diverged"):
        diverging.imitate(env, steps=1, progress=False)
    np.testing.assert_array_equal(diverging.weights, weights)


@pytest.mark.parametrize("value", [1e30, -2e6])  # finite: set_weights refuses NaN and inf itself
def test_weights_that_would_overflow_a_forward_pass_are_refused_on_load(saved, tmp_path, value):
    env, agent, data = saved
    crafted = agents.load_bytes(data)
    weights = np.array(crafted.weights)
    weights[len(weights) // 2] = value
    crafted.set_weights(weights, crafted.weights_version)
    path = tmp_path / "overflowing.agent"
    crafted.save(path)  # a well-formed file: only its values are wrong
    with pytest.raises(goenv.InvalidArgument, match="not finite or beyond 1e.06 in magnitude"):
        agents.load(path)
    before = np.array(agent.weights)
    with pytest.raises(goenv.InvalidArgument, match="not finite or beyond"):
        agent.load(path)
    np.testing.assert_array_equal(agent.weights, before)
