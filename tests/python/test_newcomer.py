"""What a newcomer meets first: the README's first steps, an env on their own graph (an
object or a file, from Python and the CLI), env.spec, errors that name the problem
and suggest the closest name, and the CLI's --version and bench flags."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import goenv
from goenv import cli
from helpers import require_agents

README = Path(__file__).resolve().parents[2] / "README.md"
ENVIRONMENTS_PAGE = README.parent / "docs" / "environments.md"


def own_graph() -> goenv.Graph:
    edges = np.array([[0, 0, 1, 2], [1, 2, 3, 3]])
    return goenv.Graph.from_arrays(edges, flops=[1e9, 2e9, 3e9, 1e9], output_bytes=[1 << 20] * 4,
                                   param_bytes=[0, 1 << 20, 1 << 20, 0], op_type=["Input", "MatMul", "MatMul", "Add"],
                                   colocation=[-1, 0, 0, -1], name="mine")


def test_readme_first_steps_run_as_written(tmp_path, monkeypatch):
    """The README's "Quickstart" block, executed as it stands."""
    text = README.read_text()
    section = text[text.index("## Quickstart"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md (Quickstart)", "exec"), {})


@pytest.mark.parametrize("task", goenv._core.task_names())
def test_any_task_on_your_own_graph_in_one_line(task, tmp_path):
    graph = own_graph()
    env = goenv.make(task, graph=graph, cluster="4xgpu-nvlink")
    assert env.cluster.name == "4xgpu-nvlink" and env.graph.num_nodes == 4
    obs, info = env.reset(seed=0)
    env.step(env.action_space.sample())
    for path in (tmp_path / "mine.goenv", tmp_path / "mine.json"):
        graph.save(str(path))
        from_file = goenv.make(task, graph=path)  # a path (str or Path) works too
        assert from_file.cluster.name == goenv.envs.DEFAULT_CLUSTER
        assert from_file.reset(seed=0)[0]["edge_index"].tolist() == obs["edge_index"].tolist()


def test_own_graph_bad_input(tmp_path):
    with pytest.raises(goenv.NotFound, match="is a task"):
        goenv.make("placement")
    with pytest.raises(goenv.NotFound, match="first argument is a task"):
        goenv.make("placement-inception", graph=own_graph())
    with pytest.raises(TypeError, match="graph must be"):
        goenv.make("placement", graph=[[0, 1]])
    broken = tmp_path / "broken.json"
    broken.write_text('{"not": "a graph"}')
    before = broken.read_bytes()
    with pytest.raises(goenv.InvalidGraph):
        goenv.make("placement", graph=broken)
    assert broken.read_bytes() == before  # nothing changed on disk
    with pytest.raises(goenv.InvalidArgument, match="cannot open .*missing.goenv"):
        goenv.make("placement", graph=tmp_path / "missing.goenv")
    for not_an_id in (5, ["placement-inception"], None):
        with pytest.raises(goenv.InvalidArgument, match="env_id must be a string such as 'placement-inception'"):
            goenv.make(not_an_id)


def test_agent_counts_out_of_range_are_invalid_arguments():
    # goenv.InvalidArgument, as the README's bad-input rules say (a ValueError too, as before).
    agents = require_agents()
    env = goenv.make("placement", graph=own_graph())
    agent = agents.PPO(seed=0)
    for call in (lambda: agent.train([env], total_steps=0), lambda: agent.optimize(env, budget=0),
                 lambda: agent.imitate([env], steps=-1)):
        with pytest.raises(goenv.InvalidArgument, match=r"must be an integer in \[1, 2\*\*(63|31)\)"):
            call()
    assert issubclass(goenv.InvalidArgument, ValueError)
    for episodes in (1.5, "2", True, 2**40):
        with pytest.raises(goenv.InvalidArgument, match=r"episodes must be an integer in \[1, 2\*\*31\)"):
            agent.evaluate([env], episodes=episodes)
    with pytest.raises(goenv.InvalidArgument, match=r"seed must be an integer in \[0, 2\*\*63\)"):
        agent.optimize(env, budget=2, seed=2**70)
    with pytest.raises(goenv.InvalidArgument, match=r"budget must be an integer in \[1, 2\*\*31\)"):
        agent.optimize(env, budget=2**31)  # what a search counts, said in Python's words
    with pytest.raises(goenv.InvalidArgument, match="samples= is the old name of budget="):
        agent.optimize(env, budget=3, samples=5)  # samples silently overrode budget
    with pytest.raises(goenv.InvalidArgument, match=r"give one of them, not both \(budget=16, samples=8\)"):
        agent.optimize(env, budget=16, samples=8)  # the default's value, given: a conflict too
    # Options by their type: a bool is no number, numpy scalars are numbers.
    for options in ({"epochs": True}, {"learning_rate": True}, {"hidden": [16]}):
        with pytest.raises(goenv.InvalidArgument, match="must be (a number|an integer), got"):
            agents.GO(**options)
    assert agents.GO(hidden=np.int64(16), learning_rate=np.float32(1e-3)).config["hidden"] == 16
    with pytest.raises(goenv.InvalidArgument, match="seed must be >= 0, got -1"):
        agents.GO(seed=-1)
    for stream in ("3", 2.5, True, -1):  # a sampler's random stream: an integer >= 0, not coerced
        with pytest.raises(goenv.InvalidArgument, match=r"stream must be an integer in \[0, 2\*\*63\)"):
            agent.set_envs([env], stream=stream)
    agent = agents.PPO(env, seed=0)  # built for the env
    with pytest.raises(goenv.InvalidArgument, match="weights must be finite"):
        agent.set_weights(np.full(agent.num_parameters, np.nan, np.float32), 1)
    assert np.isfinite(agent.weights).all()  # unchanged


def test_checkpoint_and_state_bytes_in_any_bytes_like_container_and_nothing_else(tmp_path):
    agents = require_agents()
    env = goenv.make("placement", graph=own_graph())
    agent = agents.PPO(env, seed=0)
    agent.save(tmp_path / "a.agent")
    data = bytearray((tmp_path / "a.agent").read_bytes())
    assert agents.load_bytes(memoryview(data)).num_parameters == agent.num_parameters
    with pytest.raises(goenv.InvalidArgument, match="load_bytes takes a checkpoint's bytes, got str"):
        agents.load_bytes("not bytes")
    with pytest.raises(goenv.InvalidArgument, match="set_state takes the bytes"):
        env.set_state("x")


def test_make_sets_the_gymnasium_spec():
    env = goenv.make("placement-transformer-xl-2", horizon=2)
    assert env.spec.id == "goenv/placement-transformer-xl-2-v2"
    assert env.spec.kwargs["horizon"] == 2 and env.spec.kwargs["env_id"] == "placement-transformer-xl-2"
    import gymnasium

    again = gymnasium.make(env.spec)  # the spec rebuilds the same env
    assert again.unwrapped.core.config["horizon"] == 2


@pytest.mark.parametrize("call, suggestion", [
    (lambda: goenv.make("placement-inceptoin"), "placement-inception"),
    (lambda: goenv.make("placement-inception", cluster="4xgpu-nvlnk"), "4xgpu-nvlink"),
    (lambda: goenv.datasets.load("resnet-50"), "resnet50"),
    (lambda: goenv.baselines.solve(goenv.make("placement-transformer-xl-2"), "hefts"), "heft"),
])
def test_unknown_names_suggest_the_closest(call, suggestion):
    with pytest.raises(goenv.NotFound, match=f"did you mean '{suggestion}'"):
        call()


def test_errors_carry_no_cpp_source_paths():
    for call in (lambda: goenv.make("placement-inception", horizon=0),
                 lambda: goenv.make("placement-nope"),
                 lambda: goenv.make("placement-transformer-xl-2").step(np.zeros(3))):
        with pytest.raises(goenv.Error) as caught:
            call()
        assert not re.search(r"\.(cc|h):\d+", str(caught.value)), str(caught.value)


def test_float_actions_with_integral_values_are_accepted_as_documented():
    """docs/environments.md: an action may be any numeric array whose values are integers (1.0 is 1)."""
    assert "integral values" in ENVIRONMENTS_PAGE.read_text()
    env = goenv.make("placement-transformer-xl-2")
    env.reset(seed=0)
    n = env.graph.num_nodes
    assert not env.step(np.zeros(n, dtype=np.float32))[4]["invalid"]
    env.reset(seed=0)
    with pytest.raises(goenv.InvalidAction, match="not an integer|integer"):
        env.step(np.full(n, 0.5))


def test_cli_version_and_bench_flags(capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"goenv {goenv.__version__}"
    args = cli._parser().parse_args(["bench", "--quick", "--json", "out.json"])
    assert args.quick and args.json == "out.json"


def test_cli_takes_a_graph_file_wherever_it_takes_an_id(tmp_path, capsys):
    path = tmp_path / "mine.goenv"
    own_graph().save(str(path))
    assert cli.main(["info", str(path), "--cluster", "4xgpu-nvlink"]) == 0
    out = capsys.readouterr().out
    assert "graph file" in out and "4xgpu-nvlink" in out
    assert cli.main(["baselines", str(path), "--task", "scheduling", "--methods", "fifo,critical-path"]) == 0
    assert "critical-path" in capsys.readouterr().out
    assert cli.main(["info", str(tmp_path / "missing.goenv")]) == 2
    assert "missing.goenv" in capsys.readouterr().err


def test_gymnasium_finds_goenv_ids_without_importing_goenv_first(tmp_path):
    import subprocess
    import sys

    code = ("import sys, gymnasium\n"
            "assert 'goenv' not in sys.modules\n"
            "env = gymnasium.make('goenv:goenv/placement-inception-v1')\n"
            "print(type(env.unwrapped).__name__, env.unwrapped.spec_id)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["GraphEnv", "placement-inception"]


def test_careless_values_are_refused_before_anything_changes(tmp_path):
    """A stranger's audit: values of the wrong type were taken (overwrite="no" replaced a dataset,
    "32" built a graph, seed="7" made an agent) or crashed the process (simulate(None))."""
    with pytest.raises(goenv.InvalidArgument, match="simulate needs a goenv.Graph, got NoneType"):
        goenv.simulate(None, "2xgpu-nvlink")  # was a segmentation fault
    with pytest.raises(goenv.InvalidArgument, match="lower_bound needs a goenv.Graph, got int"):
        goenv._core.lower_bound(3, goenv.clusters.get("2xgpu-nvlink"))
    for value in ("32", True, None):
        with pytest.raises(goenv.InvalidArgument, match="batch_size' must be a number"):
            goenv.datasets.load("inception", batch_size=value)
    with pytest.raises(goenv.InvalidArgument, match="option 'batch_size' must be a number"):
        goenv.make("placement-transformer-xl-2", batch_size=True)
    assert goenv.datasets.load("transformer-xl-2", batch_size=np.int64(8)).num_nodes > 0  # numpy numbers are numbers
    folder = tmp_path / "ds"
    goenv.datasets.generate("random-layered", 3, folder, params={"num_layers": 4}, progress=False)
    before = sorted(p.read_bytes() for p in folder.iterdir())
    for options in ({"overwrite": "no"}, {"progress": "no"}, {"params": {"num_layers": "5"}},
                    {"params": {"num_layers": True}}):
        with pytest.raises(goenv.InvalidArgument, match="overwrite must be|progress must be|num_layers"):
            goenv.datasets.generate("random-layered", 2, folder, **{"progress": False, **options})
    assert sorted(p.read_bytes() for p in folder.iterdir()) == before  # nothing replaced
    with pytest.raises(goenv.InvalidArgument, match="overwrite must be True or False, got 'no'"):
        goenv.datasets.label(folder, tmp_path / "labels", decisions_per_graph=2, progress=False, overwrite="no")
    assert not (tmp_path / "labels").exists()


def test_careless_agent_and_importer_values_are_refused():
    agents = require_agents()
    for options, message in (({"seed": "7"}, "seed' must be a number, got str"),
                             ({"normalize_advantages": "no"}, "must be a bool, got str")):
        with pytest.raises(goenv.InvalidArgument, match=message):
            agents.GO(**options)
    env = goenv.make("placement", graph=own_graph())
    obs, _ = env.reset(seed=0)
    agent = agents.GO(env, seed=0, hidden=16)
    for call in (lambda: agent.act(obs, deterministic="no"), lambda: agent.evaluate([env], deterministic=1)):
        with pytest.raises(goenv.InvalidArgument, match="deterministic must be True or False"):
            call()
    greedy = agent.act(obs, deterministic=True)  # node ids: integral floats are ids, fractions refused
    np.testing.assert_array_equal(agent.act({**obs, "edge_index": obs["edge_index"] * 1.0}, deterministic=True), greedy)
    with pytest.raises(goenv.InvalidArgument, match=r"edge_index'\]\[0\] is 0.9, not an integer"):
        agent.act({**obs, "edge_index": obs["edge_index"] + 0.9}, deterministic=True)
    import torch

    with pytest.raises(goenv.InvalidArgument, match="training must be True or False, got 'no'"):
        goenv.datasets.from_torch(torch.nn.Linear(4, 3), torch.randn(2, 4), training="no")
    with pytest.raises(goenv.InvalidArgument, match="name must be a string or None, got int"):
        goenv.datasets.from_torch(torch.nn.Linear(4, 3), torch.randn(2, 4), name=5)


def test_distributed_and_integrations_after_a_plain_import_goenv():
    """goenv.distributed.train after `import goenv` (an AttributeError before): imported on first
    use, so `import goenv` alone still imports no Ray."""
    import subprocess
    import sys

    code = ("import sys, goenv; assert 'ray' not in sys.modules; "
            "assert callable(goenv.integrations.sb3.policy_kwargs) and goenv.distributed.train.__name__ == 'train'")
    pytest.importorskip("ray")
    pytest.importorskip("stable_baselines3")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
