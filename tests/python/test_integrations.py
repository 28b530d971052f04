"""goenv.integrations: the graph encoder, its SB3 policies and its RLlib module; the three
library examples learn (short budgets, fixed seeds: the last quarter of episodes is faster
than the first)."""

import importlib.util
import json
import statistics
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import goenv
import goenv.wrappers
from goenv.integrations.encoder import MASKED_LOGIT, GraphActorCritic, GraphEncoder, NodeCategorical, graph_inputs
from goenv.wrappers import GroupedPlacement
from helpers import with_allowed_kinds

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
SMALL = "placement-transformer-xl-2"


def gpu_only_graph() -> goenv.Graph:
    """transformer-xl-2 with every third op allowed on GPUs only (bit 1 of the kinds mask)."""
    graph = goenv.datasets.load("transformer-xl-2")
    return with_allowed_kinds(graph, [2 if v % 3 == 0 else 0 for v in range(graph.num_nodes)])


def masked_env(**options):
    """A placement env on cpu+2xgpu where some nodes may not take device 0 (the CPU)."""
    return goenv.make("placement", graph=gpu_only_graph(), cluster="cpu+2xgpu", **options)


def observations(env_id=SMALL, count=3, **options):
    """`count` observations of one env, after different random placements (stacked, batched)."""
    env = masked_env(horizon=count) if env_id == "masked" else goenv.make(env_id, horizon=count, **options)
    obs, _ = env.reset(seed=0)
    batch = [obs]
    for _ in range(count - 1):
        obs, *_ = env.step(env.action_space.sample())
        batch.append(obs)
    return env, {key: np.stack([o[key] for o in batch]) for key in obs}


def test_goenv_import_does_not_import_the_libraries():
    code = ("import sys, goenv, goenv.integrations, goenv.integrations.encoder\n"
            "print(sorted(m for m in ('stable_baselines3', 'sb3_contrib', 'ray') if m in sys.modules))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["[]"]


def test_encoder_shapes_batched_equals_one_by_one():
    env, batch = observations(count=3)
    torch.manual_seed(0)
    net = GraphActorCritic.from_space(env.observation_space, num_choices=2, hidden=16, layers=2)
    logits, value = net(batch)
    nodes = env.unwrapped.core.num_nodes
    assert logits.shape == (3, nodes, 2) and value.shape == (3,)
    for i in range(3):
        one_logits, one_value = net({key: array[i] for key, array in batch.items()})  # unbatched input
        assert torch.allclose(one_logits[0], logits[i], atol=1e-5) and torch.allclose(one_value[0], value[i], atol=1e-5)
    # SB3 hands edge_index over as float32, RLlib as int64, both batched; a shared (2, E) works too
    as_float = {**batch, "edge_index": torch.as_tensor(batch["edge_index"], dtype=torch.float32)}
    shared = {**batch, "edge_index": batch["edge_index"][0]}
    for variant in (as_float, shared):
        assert torch.allclose(net(variant)[0], logits, atol=1e-5)


def test_encoder_passes_messages_along_edges_and_ignores_padding():
    """A node's embedding changes when a neighbour's input changes, not when a node more than
    `layers` hops away does; negative (padding) edges change nothing."""
    edge_index = np.array([[0, 1, 2], [1, 2, 3]])  # a chain 0 -> 1 -> 2 -> 3
    torch.manual_seed(0)
    encoder = GraphEncoder(input_dim=4, hidden=8, layers=1)
    x = torch.randn(1, 4, 4)
    h = encoder(x, torch.as_tensor(edge_index)[None])
    x2 = x.clone()
    x2[0, 0] += 1.0
    h2 = encoder(x2, torch.as_tensor(edge_index)[None])
    assert not torch.allclose(h[0, 1], h2[0, 1])  # neighbour of 0
    assert torch.allclose(h[0, 3], h2[0, 3])  # 3 hops away, one round
    padded = np.concatenate([edge_index, -np.ones((2, 2), dtype=np.int64)], axis=1)
    assert torch.allclose(encoder(x, torch.as_tensor(padded)[None]), h)
    with pytest.raises(goenv.InvalidArgument, match="node >="):
        encoder(x, torch.as_tensor([[0], [7]])[None])


def test_masked_choices_get_zero_probability():
    """Ops allowed on GPUs only may not go to device 0 (the CPU); its probability is exactly 0,
    batched and per unit (GroupedPlacement: a unit may take a device only if all members may)."""
    env, batch = observations("masked", count=4)
    mask = batch["action_mask"][..., :3].astype(bool)
    assert (~mask).sum() == 4 * len(range(0, env.unwrapped.core.num_nodes, 3))
    torch.manual_seed(0)
    net = GraphActorCritic.from_space(env.observation_space, num_choices=3, hidden=16)
    logits, _ = net(batch)
    probs = torch.softmax(logits, dim=-1).detach().numpy()
    assert (probs[~mask] == 0).all() and (probs[mask] > 0).all()
    samples = NodeCategorical(logits).sample().numpy()
    assert mask[np.arange(4)[:, None], np.arange(mask.shape[1]), samples].all()

    grouped = GroupedPlacement(masked_env())
    grouped.reset(seed=0)
    unit_net = GraphActorCritic.from_space(env.observation_space, num_choices=3, hidden=16, units=grouped.units)
    unit_logits, _ = unit_net(batch)
    assert unit_logits.shape == (4, grouped.num_units, 3)
    unit_mask = grouped.action_masks().reshape(grouped.num_units, 3)
    assert ((unit_logits[0] > MASKED_LOGIT / 2).numpy() == unit_mask).all()


def test_node_categorical_is_the_joint_of_the_nodes():
    logits = torch.randn(5, 7, 3)
    dist = NodeCategorical(logits)
    actions = dist.sample()
    expected = torch.distributions.Categorical(logits=logits).log_prob(actions).sum(dim=1)
    assert torch.allclose(dist.log_prob(actions.float()), expected)  # SB3 stores actions as floats
    assert dist.entropy().shape == (5,) and (dist.mode() == logits.argmax(-1)).all()


def test_bad_input_is_a_clear_error():
    env, batch = observations(count=1)
    net = GraphActorCritic.from_space(env.observation_space, num_choices=2)
    with pytest.raises(goenv.InvalidArgument, match="Dict observation"):
        net(batch["node_features"])
    with pytest.raises(goenv.InvalidArgument, match="Dict observation"):
        GraphActorCritic.from_space(env.action_space, num_choices=2)
    with pytest.raises(goenv.InvalidArgument, match="edge_index"):
        net({**batch, "edge_index": batch["edge_index"][0, 0]})


# --- Stable-Baselines3 ------------------------------------------------------------------------

def test_sb3_graph_policy_on_checked_envs(tmp_path):
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_checker import check_env

    import goenv.integrations.sb3 as sb3

    for env in (goenv.make(SMALL), GroupedPlacement(goenv.make(SMALL)), goenv.make("scheduling-transformer-xl-2")):
        check_env(env, warn=False)
        model = PPO(sb3.GraphPolicy, env, policy_kwargs=sb3.policy_kwargs(env, hidden=16), n_steps=8, batch_size=8,
                    n_epochs=1, device="cpu", seed=0)
        model.learn(16)
        obs, _ = env.reset(seed=1)
        action, _ = model.predict(obs, deterministic=False)
        assert env.action_space.contains(action)
        env.step(action)
        values, log_prob, entropy = model.policy.evaluate_actions(
            model.policy.obs_to_tensor(obs)[0], torch.as_tensor(action[None]))
        assert values.shape == (1, 1) and log_prob.shape == (1,) and torch.isfinite(log_prob).all()
    model.save(tmp_path / "model.zip")  # the last one: a scheduling env, 16 priority levels
    loaded = PPO.load(tmp_path / "model.zip", device="cpu")
    obs, _ = env.reset(seed=2)
    assert (loaded.predict(obs, deterministic=True)[0] == model.predict(obs, deterministic=True)[0]).all()


def test_sb3_maskable_policy_never_samples_forbidden_devices():
    pytest.importorskip("sb3_contrib")
    from sb3_contrib import MaskablePPO

    import goenv.integrations.sb3 as sb3

    env = GroupedPlacement(masked_env())
    model = MaskablePPO(sb3.MaskableGraphPolicy, env, policy_kwargs=sb3.policy_kwargs(env, hidden=16), n_steps=8,
                        batch_size=8, n_epochs=1, device="cpu", seed=0)
    model.learn(16)
    obs, _ = env.reset(seed=0)
    mask = env.action_masks().reshape(env.num_units, -1)
    for _ in range(5):
        action, _ = model.predict(obs, action_masks=env.action_masks())
        assert mask[np.arange(env.num_units), action].all()


def test_sb3_node_mode_features_extractor():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    import goenv.integrations.sb3 as sb3

    env = goenv.make(SMALL, decision_mode="node")
    kwargs = sb3.policy_kwargs(env, hidden=16)
    assert kwargs["features_extractor_class"] is sb3.GraphFeaturesExtractor
    model = PPO("MultiInputPolicy", env, policy_kwargs=kwargs, n_steps=16, batch_size=16, n_epochs=1,
                device="cpu", seed=0)
    model.learn(32)
    obs, _ = env.reset(seed=0)
    extractor = model.policy.features_extractor
    features = extractor(model.policy.obs_to_tensor(obs)[0])
    assert features.shape == (1, 3 * 16)


def test_sb3_policy_rejects_what_it_cannot_decide():
    pytest.importorskip("stable_baselines3")
    from stable_baselines3 import PPO

    import goenv.integrations.sb3 as sb3
    from goenv.wrappers import CurrentNodeObservation

    with pytest.raises(goenv.InvalidArgument, match="MultiDiscrete"):
        PPO(sb3.GraphPolicy, goenv.make(SMALL, decision_mode="node"), device="cpu")
    with pytest.raises(goenv.InvalidArgument, match="Dict observation"):
        PPO(sb3.GraphPolicy, CurrentNodeObservation(goenv.make(SMALL, decision_mode="node")), device="cpu")
    with pytest.raises(goenv.InvalidArgument, match="decision units"):
        PPO(sb3.GraphPolicy, GroupedPlacement(goenv.make(SMALL)), device="cpu")  # no policy_kwargs(env)
    with pytest.raises(goenv.InvalidArgument, match="goenv envs"):
        sb3.policy_kwargs(__import__("gymnasium").make("CartPole-v1"))


# --- RLlib ------------------------------------------------------------------------------------

def test_rllib_module_forward_and_masking():
    pytest.importorskip("ray.rllib")
    from ray.rllib.core.columns import Columns

    from goenv.integrations.rllib import GraphModule

    env, batch = observations("masked", count=4)
    module = GraphModule(observation_space=env.observation_space, action_space=env.action_space,
                         model_config={"hidden": 16})
    tensors = {Columns.OBS: {key: torch.as_tensor(value) for key, value in batch.items()}}
    nodes = env.unwrapped.core.num_nodes
    for forward in (module.forward_inference, module.forward_exploration, module.forward_train):
        out = forward(tensors)
        assert out[Columns.ACTION_DIST_INPUTS].shape == (4, nodes * 3)
    dist = module.get_exploration_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS])
    actions = dist.sample()
    assert actions.shape == (4, nodes) and dist.logp(actions).shape == (4,)
    mask = batch["action_mask"][..., :3].astype(bool)
    assert mask[np.arange(4)[:, None], np.arange(nodes), actions.numpy()].all()
    # Straight-through samples: one-hot forward on an allowed choice, the probabilities' gradient.
    hot = dist.rsample()
    assert hot.shape == (4, nodes, 3) and torch.equal(hot.detach().sum(-1), torch.ones(4, nodes))
    assert mask[np.arange(4)[:, None], np.arange(nodes), hot.detach().argmax(-1).numpy()].all()
    logits = out[Columns.ACTION_DIST_INPUTS].detach().requires_grad_()
    (dist.from_logits(logits).rsample() * torch.arange(3.0)).sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0
    assert dist.rsample(sample_shape=(2,)).shape == (2, 4, nodes, 3)
    greedy = module.get_inference_action_dist_cls().from_logits(out[Columns.ACTION_DIST_INPUTS]).to_deterministic()
    assert env.action_space.contains(greedy.sample()[0].numpy())
    values = module.compute_values(tensors)
    assert values.shape == (4,) and torch.allclose(values, out[Columns.EMBEDDINGS])
    with pytest.raises(goenv.InvalidArgument, match="MultiDiscrete"):
        GraphModule(observation_space=env.observation_space, action_space=__import__("gymnasium").spaces.Discrete(3))


def test_rllib_learner_standardizes_advantages_over_real_steps_only():
    pytest.importorskip("ray.rllib")
    from ray.rllib.core.columns import Columns
    from ray.rllib.evaluation.postprocessing import Postprocessing

    from goenv.integrations.rllib import RealStepAdvantages

    advantages = torch.tensor([1.0, 5.0, 3.0, -7.0, 2.0, 0.0])  # odd rows: RLlib's artificial steps
    mask = torch.tensor([True, False, True, False, True, False])
    batch = {"default_policy": {Postprocessing.ADVANTAGES: advantages, Columns.LOSS_MASK: mask}}
    out = RealStepAdvantages()(rl_module=None, batch=batch, episodes=[])["default_policy"][Postprocessing.ADVANTAGES]
    assert torch.allclose(out[mask], torch.tensor([-1.0, 1.0, 0.0]))  # (1, 3, 2): mean 2, std 1


# --- the examples learn (their default budgets and results: README, library-results) ----------

LIBRARY_EXAMPLES = {
    "sb3_ppo": (["--episodes", "384", "--num-envs", "8"], "stable_baselines3"),
    "sb3_maskable_ppo": (["--episodes", "384", "--num-envs", "8"], "sb3_contrib"),
    "rllib_ppo": (["--updates", "20"], "ray.rllib"),
    "cleanrl_gnn_ppo": (["--num-envs", "8", "--updates", "24"], "torch"),  # (4 rollouts, the default)
}


def readme_tables():
    """experiments/readme_tables.py, the script that writes the docs' tables from docs/results."""
    spec = importlib.util.spec_from_file_location("readme_tables", EXPERIMENTS / "readme_tables.py")
    tables = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tables)
    return tables


def test_readme_gpu_table_is_the_gpu_results():
    """The docs' GPU table is what readme_tables.py writes from docs/results/gpu, where
    tests/benchmarks/gpu_run.sh ran GO on CUDA and agents_bench.py on CPU, each at a named commit."""
    tables = readme_tables()
    assert tables.gpu_table() in tables.section_file("gpu").read_text()
    for name, device in (("h100", "cuda"), ("h100_host_cpu", "cpu"), ("this_cpu", "cpu")):
        run = json.loads((tables.RESULTS / "gpu" / f"agents_bench_{name}.json").read_text())
        assert run["device"] == device and len(run["commit"]) == 40 and run["rows"], name
        assert all(row["train_steps_per_second"] > 0 and row["act"] > 0 for row in run["rows"]), name


def test_readme_library_results_are_the_examples_json_and_beat_default_and_heft():
    """The docs' library table is what readme_tables.py writes from docs/results/library_*.json;
    those runs (the examples at their default budgets) beat the compiler default over their
    last quarter on every env they ran on, and HEFT with their best on the README's env
    (the median over seeds, where several ran)."""
    tables = readme_tables()
    assert tables.library_results_table() in tables.section_file("library-results").read_text()
    for (example, env, flags), runs in tables.library_runs().items():
        median = {key: statistics.median(run[key] for run in runs) for key in ("last_quarter_ms", "best_ms")}
        assert median["last_quarter_ms"] < runs[0]["default_ms"], (example, env, flags)
        if env == SMALL:
            assert median["best_ms"] < runs[0]["heft_ms"], (example, env, flags)
        assert len({run.get("seed", 0) for run in runs}) == len(runs), (example, env, flags)  # no seed twice


@pytest.mark.parametrize("name", list(LIBRARY_EXAMPLES))
def test_library_example_learns(name, tmp_path):
    arguments, library = LIBRARY_EXAMPLES[name]
    if importlib.util.find_spec(library.split(".")[0]) is None:
        pytest.skip(f"{library} is not installed")
    path = tmp_path / f"{name}.json"
    done = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), "--env", SMALL, *arguments, "--json",
                           str(path)], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(path.read_text())
    assert set(result) == {"env", "default_ms", "heft_ms", "first_quarter_ms", "last_quarter_ms", "best_ms",
                           "episodes", "seconds", "seed", "flags", "commit", "dirty"}
    assert result["env"] == SMALL and result["episodes"] >= 384
    assert result["seed"] == 0 and result["flags"] == " ".join(arguments)  # what the run changed: grouped by it
    # Learned: at least 10% faster (a policy that does not learn stays near its start, ~75 ms)
    assert result["last_quarter_ms"] < 0.9 * result["first_quarter_ms"], result
    assert result["best_ms"] <= result["last_quarter_ms"]


@pytest.mark.parametrize("name, arguments, message", [
    ("sb3_ppo", ["--episodes", "0"], "--episodes must be >= 1, got 0"),
    ("sb3_ppo", ["--num-envs", "0"], "--num-envs must be >= 1"),
    ("sb3_ppo", ["--env", "placement-bogus"], "unknown env id 'placement-bogus'"),
    ("sb3_ppo", ["--learning-rate", "-1"], "--learning-rate must be > 0"),
    ("sb3_ppo", ["--mode", "node", "--steps", "8"], "train for 0 episode(s); the report needs at least 8"),
    ("sb3_maskable_ppo", ["--cluster", "bogus"], "unknown cluster preset 'bogus'"),
    ("rllib_ppo", ["--env-runners", "-1"], "--env-runners must be >= 0"),
    ("rllib_ppo", ["--updates", "1", "--num-envs", "1", "--rollouts", "2"], "train for 2 episode(s)"),
])
def test_library_examples_refuse_bad_options_before_training(name, arguments, message):
    """One line from argparse, before any training (they used to train, then fail in a traceback)."""
    library = LIBRARY_EXAMPLES[name][1]
    if importlib.util.find_spec(library.split(".")[0]) is None:
        pytest.skip(f"{library} is not installed")
    done = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py"), *arguments], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr[-2000:]


def test_grouped_placement_misuse_is_refused_clearly():
    env = GroupedPlacement(goenv.make(SMALL))
    with pytest.raises(goenv.ResetNeeded, match=r"action_masks\(\) called before reset\(\)"):
        env.action_masks()  # as the env's own
    with pytest.raises(goenv.InvalidArgument, match="already a GroupedPlacement"):
        GroupedPlacement(env)
    with pytest.raises(goenv.InvalidArgument, match="node_placement takes one device per decision unit"):
        env.node_placement(np.zeros(env.num_units + 1, dtype=np.int64))
    env.reset(seed=0)
    assert env.action_masks().shape == (env.num_units * env.num_devices,)
    # As the env itself: a bool array is no devices, and inf is refused without a numpy warning.
    with pytest.raises(goenv.InvalidAction, match="takes integer devices, got dtype bool"):
        env.step(np.ones(env.num_units, bool))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(goenv.InvalidAction, match="fractional, infinite or NaN"):
            env.step(np.full(env.num_units, np.inf))
    with pytest.raises(goenv.InvalidArgument, match="CurrentNodeObservation wraps a goenv env, got str"):
        goenv.wrappers.CurrentNodeObservation("x")
