"""Smoke test of an installed goenv: the wheel in a fresh virtual environment.

Run by `make smoke` (and so by CI) after `pip install 'dist/goenv-*.whl[agents,onnx]'`
into a venv that holds nothing else, from outside the source tree: it checks what a
user of the package touches first. Plain Python (the venv has no pytest); it prints
one line per check and a closing "smoke: N passed, N failed" line, and exits 1 on any failure.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import traceback

import numpy as np

CHECKS = []


def check(function):
    CHECKS.append(function)
    return function


@check
def installed_not_source_tree():
    import goenv

    # The wheel's files, not a checkout's bindings/python (that would test nothing installed).
    assert "site-packages" in goenv.__file__, goenv.__file__
    import goenv._core  # noqa: F401  (the compiled core is in the wheel)


@check
def make_env_and_step():
    import goenv

    env = goenv.make("placement-inception")
    obs, info = env.reset(seed=0)
    assert set(obs) >= {"node_features", "edge_index", "action_mask"}, sorted(obs)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert info["runtime"] > 0 and np.isfinite(reward), info


@check
def baseline_at_or_above_the_lower_bound():
    import goenv

    env = goenv.make("placement-inception")
    env.reset(seed=0)
    result = goenv.baselines.solve(env, "heft")
    assert result["runtime"] >= goenv.baselines.lower_bound(env) > 0, result["runtime"]


@check
def go_agent_acts():
    import goenv
    import goenv.agents._torch_build as built
    import torch

    # The ABI the wheel's goenv._agents was linked against is the torch installed beside it.
    assert built.TORCH_VERSION == torch.__version__, (built.TORCH_VERSION, torch.__version__)
    env = goenv.make("placement-inception")
    obs, _ = env.reset(seed=0)
    agent = goenv.agents.GO(env, hidden=16, seed=0)
    action = agent.act(obs, deterministic=True)
    _, _, _, _, info = env.step(action)
    assert info["runtime"] > 0, info


@check
def pretrained_placer_ships_in_the_wheel():
    import goenv
    import goenv.agents

    for name in goenv.agents.PRETRAINED:  # each a checkpoint file inside the installed package
        agent = goenv.agents.pretrained(name)
        result = agent.optimize(goenv.make("placement-transformer-xl-2"), budget=2, start="best-heuristic")
        assert result["simulator_calls"] == 2 + result["start_calls"], (name, result)
        assert result["decisions"]["placement"].shape == (213,), (name, result)
        assert result["runtime"] <= result["start_runtime"], (name, result)


@check
def onnx_extra_imports_a_model():
    import goenv
    from onnx import TensorProto, helper, numpy_helper

    weights = [numpy_helper.from_array(np.zeros((4, 8), np.float32), "W")]
    nodes = [helper.make_node("Gemm", ["x", "W"], ["h"], transB=1, name="fc"),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], weights)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "mlp.onnx")
        with open(path, "wb") as file:
            file.write(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
        forward = goenv.datasets.from_onnx(path, training=False)
        step = goenv.datasets.from_onnx(path)  # the default: a training step (backward and update too)
    assert forward.op_type_names == ["Input", "MatMul", "Relu"], forward.op_type_names
    assert {"ReluGrad", "ApplyGradient"} <= set(step.op_type_names), step.op_type_names


@check
def console_script():
    # The `goenv` command the wheel installs beside this interpreter.
    command = os.path.join(os.path.dirname(sys.executable), "goenv")
    listed = subprocess.run([command, "list"], check=True, capture_output=True, text=True).stdout
    assert "placement-inception" in listed, listed[:500]


def main() -> int:
    failed = 0
    for function in CHECKS:
        try:
            function()
            print(f"ok   {function.__name__}")
        except Exception:  # noqa: BLE001 - report every check, then fail once
            failed += 1
            print(f"FAIL {function.__name__}")
            traceback.print_exc()
    print(f"smoke: {len(CHECKS) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
