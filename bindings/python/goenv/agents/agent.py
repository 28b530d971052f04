"""PPO and GO agents: thin Python over goenv._agents (LibTorch, C++ training loop)."""

from __future__ import annotations

import os
from typing import Any, Callable, Iterable

import numpy as np

import goenv._core as _core
from goenv._core import InvalidArgument
from goenv.agents import registry
from goenv.agents.documented import DocumentedOptions
from goenv.agents.env_arguments import env_argument, env_arguments, listed, title
from goenv.agents.native import native, options
from goenv.agents.training_log import TrainingLog, reference_runtimes
from goenv.arguments import checked_bytes, checked_flag, checked_int
from goenv.files import new_output_path, read_regular_file, write_atomic
from goenv.progress import progress_bar


def _check_count(name: str, value: Any, low: int = 1, high: int = 2**63 - 1) -> int:
    """`value` as an int in [low, high] (by default what the native calls take: int64), or
    goenv.InvalidArgument naming it."""
    return checked_int(name, value, low, high)


class Agent(metaclass=DocumentedOptions):
    """A policy over goenv envs trained with PPO; `PPO` and `GO` pick the network.

    The policy is built for the features and decision heads of the first env it
    sees (`env=` here, train(), or a loaded checkpoint); one agent serves every env
    with the same task and device count.
    """

    algorithm: str | None = None

    def __init__(self, env: Any = None, **options: Any):
        module = native()
        if self.algorithm is not None:
            if "algorithm" in options and options["algorithm"] != self.algorithm:
                raise InvalidArgument(f"{type(self).__name__} is algorithm {self.algorithm!r}")
            options["algorithm"] = self.algorithm
        self._agent = module.Agent(options)
        if env is not None:
            self._agent.setup(env_argument(env))

    # -- training ----------------------------------------------------------
    def train(self, envs: Any, total_steps: int, callback: Callable[[dict], Any] | None = None,
              log_dir: str | os.PathLike | None = None, progress: bool = True) -> list[dict]:
        """PPO on `envs` (ids, GraphEnvs, or a list: trained round-robin) for about
        `total_steps` env steps (whole updates). After each update `callback(metrics)`
        is called; returning False stops training. With `log_dir`, writes
        metrics.csv as training goes and training_curve.png at the end.
        Returns the metrics of every update (step, mean_reward, mean_runtime,
        best_runtime, mean_speedup, best_speedup, losses, ...)."""
        _check_count("total_steps", total_steps)
        described = env_arguments(envs)
        log = None
        if log_dir is not None:  # a single graph's curve is drawn against its default and heuristics
            given = listed(envs)
            one = given[0] if len(given) == 1 else None
            log = TrainingLog(log_dir, title=f"{type(self).__name__} on {title(described)}",
                              references=reference_runtimes(one) if one is not None else None)
        history: list[dict] = []
        bar = progress_bar(progress, total=int(total_steps), unit="step", desc=type(self).__name__)

        def on_update(metrics: dict) -> bool:
            history.append(metrics)
            bar.update(min(metrics["step"], bar.total) - bar.n)
            bar.set_postfix(reward=f"{metrics['mean_reward']:.3f}", best_speedup=f"{metrics['best_speedup']:.3f}",
                            refresh=False)
            if log is not None:
                log.append(metrics)
            if callback is not None:
                return callback(metrics) is not False
            return True

        try:
            self._agent.train(described, int(total_steps), on_update)
        finally:
            bar.close()
            if log is not None:
                log.close()
        return history

    def imitate(self, envs: Any, steps: int = 200, teacher: str | None = None,
                callback: Callable[[dict], Any] | None = None, progress: bool = True) -> list[dict]:
        """Imitation warm start: `steps` Adam steps of cross-entropy toward a teacher's
        decisions on `envs` (one term per decision unit; a colocation group is one), on
        the states the policy itself reaches (DAgger, for envs longer than one step).

        `teacher`: a baseline name (goenv.baselines.list()) or "best" (default: the
        agent's `teacher` option, "best"): the best by simulated runtime of expert,
        METIS, m-ETF and HEFT placements (critical-path priorities and XLA fusion where
        the env decides those). The agent keeps each graph's teacher: train() on those
        graphs then adds `teacher_coef` x the same cross-entropy, decaying to 0 over
        `teacher_decay_steps` env steps, and measures advantages against the teacher's
        reward (`teacher_baseline`). An unknown teacher, or one that is infeasible on a
        graph, raises goenv.InvalidArgument naming the choices; the agent is unchanged.

        Returns the metrics of every step: loss, accuracy (share of decision units whose
        greedy choice is the teacher's), simulator_calls (teachers and DAgger rollouts)."""
        _check_count("steps", steps)
        if teacher is not None and not isinstance(teacher, str):
            raise TypeError(f"teacher must be a baseline name or 'best', got {type(teacher).__name__}")
        return self._supervised("imitation", steps, callback, progress,
                                lambda on_step: self._agent.imitate(env_arguments(envs), int(steps), teacher or "",
                                                                    on_step))

    def learn_moves(self, envs: Any, steps: int = 200, states: int = 4, temperature: float = 0.002,
                    callback: Callable[[dict], Any] | None = None, progress: bool = True) -> list[dict]:
        """Move-gain supervision: trains the reading that `optimize()` follows. On each
        env, the best heuristic's placement and `states` - 1 perturbations of it are
        labelled with the runtime gained by moving each decision unit alone to each other
        allowed device (one simulation per move, all before the first step); then `steps`
        Adam steps of cross-entropy toward, per unit, the softmax over its devices of
        (gain - temperature) / temperature, a move's gain being the share of the runtime it
        saves and staying scoring 0: a move is as likely as staying where it saves
        `temperature` of the runtime. The search draws the units it moves by
        1 - p(their current device) and sends them where p points, so a trained reading
        proposes the moves that shorten the runtime.

        Needs a placement head; keeps no teacher. Returns the metrics of every step: loss,
        accuracy (share of units whose most likely device is the best single move's),
        simulator_calls (the labelling's), seconds."""
        _check_count("steps", steps)
        _check_count("states", states, 1, 50)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
            raise TypeError(f"temperature must be a number, got {type(temperature).__name__}")
        return self._supervised("move gains", steps, callback, progress,
                                lambda on_step: self._agent.learn_moves(env_arguments(envs), int(steps), int(states),
                                                                        float(temperature), on_step))

    def _supervised(self, what: str, steps: int, callback: Callable[[dict], Any] | None, progress: bool,
                    run: Callable[[Callable[[dict], bool]], Any]) -> list[dict]:
        """Runs a supervised native call with a progress bar; returns every step's metrics."""
        history: list[dict] = []
        bar = progress_bar(progress, total=int(steps), unit="step", desc=f"{type(self).__name__} {what}")

        def on_step(metrics: dict) -> bool:
            history.append(metrics)
            bar.update(1)
            bar.set_postfix(loss=f"{metrics['loss']:.3f}", accuracy=f"{metrics['accuracy']:.3f}", refresh=False)
            return callback(metrics) is not False if callback is not None else True

        try:
            run(on_step)
        finally:
            bar.close()
        return history

    def teacher(self, env: Any) -> dict | None:
        """The teacher kept for `env`'s graph by imitate() (None if there is none):
        {method, runtime (s), reward, simulator_calls, decisions: {head: (N,) int64}}."""
        return self._agent.teacher(env_argument(env))

    def optimize(self, env: Any, budget: int | None = None, start: Any = None, local_search_budget: int = 0, *,
                 seed: int | None = None, samples: int | None = None, start_budget: int | None = None,
                 proposals: str = "learned") -> dict:
        """Policy-guided search on a copy of `env`: an improvement episode of exactly
        `budget` simulator calls from `start` ("default", "best-heuristic", any baseline's
        name, or given decisions as reset's options take them: {head: (N,) values}, an array
        being a placement; None: the env's own start (a named one or decisions set with
        set_start), or the best decision training found on the graph when that is better),
        the policy proposing its greedy decision, moves of the units it
        most wants to change on the best schedule's critical path (1-16 at a time, to choices
        it samples; several at once are a segment of that path, to one choice) and whole sampled
        decisions. Its first min(budget, 32) proposals open with big changes: four smoothings of
        the critical path (runs of at most 1, 2, 4, 8 units between two runs on one device go to
        that device), then joins (the drawn unit's run on the path to its neighbours' device)
        alternating with segments of at least 16 x (1 - k / 32) units. A proposal equal to the
        best costs no call;
        the best is kept, so the result is never worse than the start.
        Then local search from the best with `local_search_budget` calls when > 0.
        A start named by a search baseline ("local-search", "random-search", "genetic", ...) is
        found with up to `start_budget` calls of its own (default 1,000; heuristics make none,
        "best-heuristic" one per heuristic), outside `budget`; start_budget needs `start` to be
        a name (the env's own start was found when it was made).
        Returns {decisions: {head: (N,) int64}, runtime (s), start, start_runtime,
        greedy_runtime, initial_runtime, source ("start" | "greedy" | "policy" | "training" |
        "local-search"), start_calls (finding and measuring the start: a named baseline's own
        calls + 2, else 1; + 1 or 2 when training's best is measured too), simulator_calls
        (all it made: start_calls + budget + local search's calls and measurements),
        policy_reads (forwards of the policy: after a new best: after each up to 16 calls, else
        at most 4 more times), curve (best runtime after each of the budget's calls)}.
        ``env.step(result["decisions"])`` (one head: the array itself) replays it. `seed`:
        proposals from their own generator (the agent's seed and this one): the same seed
        gives the same run, and the agent's own generator is left as it is;
        None draws from the agent's generator. `budget` defaults to 16; `samples` is its old
        name (one of the two, not both).
        `proposals`: the policy the proposals follow: "learned" (this agent's weights),
        "untrained" (the same network as training started it: the same config, freshly
        initialised) or "uniform" (every allowed choice equally likely, no network). The two
        ablations make the same calls with the same moves and the same generator, and do not
        start from the decisions training kept: what training adds is the difference
        (result["proposals"] names the reading)."""
        # None, not 16, marks "not given": budget=16 with samples= is a conflict too.
        if samples is not None:  # the old name: one of the two, not both
            if budget is not None:
                raise InvalidArgument(f"samples= is the old name of budget=; give one of them, not both "
                                      f"(budget={budget!r}, samples={samples!r})")
            budget = samples
        if budget is None:
            budget = 16
        _check_count("budget", budget, high=2**31 - 1)  # a search's calls are counted in int32
        _check_count("local_search_budget", local_search_budget, low=0)
        if start_budget is not None:  # only a named start is solved here: refused where it would go unused
            _check_count("start_budget", start_budget, low=0)
            if not (isinstance(start, str) and start):
                shown = repr(start) if start is None or isinstance(start, str) else "decisions"
                raise InvalidArgument(f"start_budget applies to a start given by name (start='local-search', ...), "
                                      f"got start={shown} with start_budget={start_budget!r}")
        described = env_argument(env)
        if start is not None and not isinstance(start, str):  # given decisions: the copy's own start
            if isinstance(described, str):
                raise InvalidArgument("a start of given decisions needs the env itself, not its id")
            if not isinstance(start, dict):
                start = {"placement": start}
            options = {**described["options"], "start": "default"}  # decisions, not the env's named start
            described, start = {**described, "options": options, "start": start}, None
        if seed is not None:
            _check_count("seed", seed, low=0)
        given = {} if start_budget is None else {"start_budget": int(start_budget)}  # else the native default
        reading = proposals if isinstance(proposals, str) else repr(proposals)  # refused, named, natively
        return self._agent.optimize(described, int(budget), start or "", int(local_search_budget),
                                    -1 if seed is None else int(seed), proposals=reading, **given)

    # -- the trainer's two halves (docs/distributed.md) ---------------------------------
    def set_envs(self, envs: Any, sampled: Iterable[int] | None = None, stream: int = 0) -> None:
        """The graphs collect() samples and update() learns on. `sampled`: indices of the
        envs this agent steps (envs_per_graph copies each; default all), the others only
        lend their graph to update() (a learner passes []). `stream` != 0 gives this
        sampler its own random stream (rollout workers that share a graph)."""
        described = env_arguments(envs)
        sampled = list(range(len(described))) if sampled is None else [int(i) for i in sampled]
        self._agent.set_envs(described, sampled, _check_count("stream", stream, low=0))

    def collect(self) -> list[dict]:
        """One rollout per graph (graphs_per_update of the sampled ones, round robin) with
        the current policy: dicts of numpy arrays (distinct observations, per-sample
        observation index, actions per head, log_prob, value, reward, done, ...) tagged
        with `policy_version` and the env's index `graph`."""
        return self._agent.collect()

    def update(self, rollouts: list[dict]) -> dict:
        """One PPO update on rollouts from collect() (of this agent or of another with the
        same set_envs); advances weights_version. Returns the update's metrics."""
        return self._agent.update(list(rollouts))

    @property
    def weights(self) -> np.ndarray:
        """Every parameter as one read-only float32 array. On CPU it is a live view of the
        policy (no copy; np.array(...) to keep a snapshot), on CUDA a host copy."""
        return self._agent.weights

    @property
    def weights_version(self) -> int:
        """Updates the weights went through (set by set_weights on a rollout worker)."""
        return self._agent.weights_version

    def set_weights(self, weights: np.ndarray, version: int) -> None:
        """Copies a weights() buffer (of an agent with the same options and spec) into the policy."""
        self._agent.set_weights(weights, int(version))

    # -- acting ------------------------------------------------------------
    def act(self, obs: dict, deterministic: bool = False, colocation=None):
        """The action for an observation of a goenv env: an int64 array (N,) for a
        single-head task, a dict {head: array} for joint. Also takes a batch from
        goenv.make_vec: stacked (B, N, ...) gives (B, N); padded gives (B, max_nodes)
        (padding 0); concatenated gives (sum N,). Masked choices are never chosen.

        `colocation`: the graph's colocation group ids (``env.unwrapped.graph.colocation``;
        a list of them, one per env, for padded or concatenated batches). With it each
        group is placed as one decision, as in training and evaluate(); without it
        every node is decided alone and a split group makes the placement invalid."""
        deterministic = checked_flag("deterministic", deterministic)
        if not isinstance(obs, dict):
            raise TypeError(f"obs must be an observation dict, got {type(obs).__name__}")
        split = _split_concatenated if "batch" in obs else \
            _split_padded if "num_nodes" in obs and np.ndim(obs["node_state"]) == 3 else None
        if split is None:
            out = self._act_one(obs, deterministic, colocation)
        else:
            observations = list(split(obs))
            groups = [None] * len(observations) if colocation is None else list(colocation)
            if len(groups) != len(observations):
                raise InvalidArgument(f"colocation must be a list of {len(observations)} arrays (one per env), "
                                      f"got {len(groups)}")
            parts = [self._act_one(o, deterministic, c) for o, c in zip(observations, groups)]
            if split is _split_concatenated:
                out = {head: np.concatenate([p[head] for p in parts]) for head in parts[0]}
            else:
                rows = np.asarray(obs["node_state"]).shape[1]
                out = {head: np.stack([np.pad(p[head], (0, rows - p[head].shape[0])) for p in parts])
                       for head in parts[0]}
        return next(iter(out.values())) if len(out) == 1 else out

    def _act_one(self, obs: dict, deterministic: bool, colocation) -> dict:
        obs = _policy_columns(obs, self._agent.spec)
        if np.ndim(obs.get("node_state")) == 3:
            obs = dict(obs)
            for key in ("node_features", "edge_index"):
                value = np.asarray(obs[key])
                if value.ndim == 3 and value.strides[0] == 0:  # broadcast static part: one copy
                    obs[key] = value[0]
        return self._agent.act(obs, deterministic, colocation)

    # -- evaluation --------------------------------------------------------
    def evaluate(self, envs: Any, episodes: int = 1, deterministic: bool = True) -> dict[str, dict]:
        """Runs `episodes` episodes per env (greedy actions unless deterministic=False):
        {env_id: {"runtime", "initial_runtime", "speedup", "best_runtime", "lower_bound",
        "invalid_fraction", "episodes"}}; runtimes in seconds (means over episodes)."""
        results: dict[str, dict] = {}
        _check_count("episodes", episodes, high=2**31 - 1)
        deterministic = checked_flag("deterministic", deterministic)
        for env in env_arguments(envs):
            result = self._agent.evaluate(env, int(episodes), deterministic)
            result.pop("env_id")
            name, k = (env if isinstance(env, str) else env["id"]), 2
            key = name
            while key in results:
                key, k = f"{name}#{k}", k + 1
            results[key] = result
        return results

    # -- checkpoints -------------------------------------------------------
    def save(self, path: str | os.PathLike, overwrite: bool = False) -> None:
        """Writes a checkpoint (safetensors layout: plain tensors, no code) atomically: a
        temporary file, then os.replace; only over a regular file or a new path. A file
        already at `path` is refused (goenv.InvalidArgument) unless overwrite=True."""
        new_output_path(path, "checkpoint", overwrite, folder_must_exist=True)  # a missing folder: said, as the CLI does
        write_atomic(path, self._agent.to_bytes(), what="checkpoint")

    def load(self, path: str | os.PathLike, device: str | None = None) -> "Agent":
        """Replaces config and parameters with a checkpoint's; goenv.InvalidArgument on a
        file that is not a valid checkpoint of this algorithm (the agent is then unchanged).
        `device` ('cpu', 'cuda', 'auto'; None: the checkpoint's) says where it loads."""
        data = read_regular_file(path, what="checkpoint")
        algorithm = native().checkpoint_algorithm(data)
        if self.algorithm is not None and algorithm != self.algorithm:
            raise InvalidArgument(f"{os.fspath(path)} holds a {algorithm!r} agent, not {self.algorithm!r}; "
                                  "use goenv.agents.load(path)")
        self._agent.from_bytes(data, _device_option(device))
        return self

    # -- introspection -----------------------------------------------------
    @property
    def config(self) -> dict:
        return self._agent.config

    @property
    def spec(self) -> dict | None:
        """The features and heads the policy was built for (None before it is built)."""
        return self._agent.spec

    @property
    def num_parameters(self) -> int:
        return self._agent.num_parameters

    @property
    def steps_trained(self) -> int:
        return self._agent.steps_trained

    @property
    def device(self) -> str:
        return self._agent.device

    def __repr__(self) -> str:
        c = self.config
        return (f"<{type(self).__name__} {c['algorithm']}: hidden={c['hidden']}, {self.num_parameters} parameters, "
                f"{self.steps_trained} steps trained, {self.device}>")


class PPO(Agent):
    """GraphSAGE encoder + per-node MLP heads, trained with PPO."""

    algorithm = "ppo"


class GO(Agent):
    """The GO policy (Zhou et al., NeurIPS 2020): GraphSAGE, segment-recurrent attention
    with Transformer-XL memory (segment_length nodes per segment), FiLM, per-head outputs."""

    algorithm = "go"


registry.register("ppo", PPO, "GraphSAGE encoder + per-node MLP heads, trained with PPO")
registry.register("go", GO, "the GO policy (GraphSAGE, segment-recurrent attention, FiLM), trained with PPO")


def _device_option(device: str | None) -> str:
    """A load's device for the native call: '' keeps the checkpoint's."""
    if device is not None and not isinstance(device, str):
        raise InvalidArgument(f"device must be 'cpu', 'cuda', 'auto' or None, got {device!r}")
    return device or ""


def load(path: str | os.PathLike, device: str | None = None) -> Agent:
    """The agent saved at `path`, as a PPO or GO object, on `device` ('cpu', 'cuda', 'auto';
    None: where it was configured; device='cpu' loads one trained on a GPU on a machine without)."""
    return load_bytes(read_regular_file(path, what="checkpoint"), device)


def load_bytes(data: bytes, device: str | None = None) -> Agent:
    """The agent a checkpoint's bytes hold (bytes, bytearray or memoryview); goenv.InvalidArgument
    names what is wrong with bad ones."""
    data = bytes(checked_bytes(data, "load_bytes takes a checkpoint's bytes"))
    agent = registry.make_agent(native().checkpoint_algorithm(data))
    agent._agent.from_bytes(data, _device_option(device))
    return agent


# The most devices a goenv.Cluster has (core/cluster.h's kMaxDevices).
MAX_DEVICES = 256

# Checkpoints shipped in goenv/agents/shipped/: name -> (what it is, the script that makes it).
PRETRAINED = {
    "go-placement": ("GO placer: imitation of the best heuristic, then PPO, on the transfer suite's training graphs; "
                     "one checkpoint for every device count", "experiments/pretrain_placer.py"),
    "go-moves": ("GO placer trained by move-gain supervision (learn_moves) on the zoo's train split: the reading "
                 "policy-guided search follows, and a one-shot decision that places", "experiments/train_move_reading.py"),
}


def pretrained(name: str = "go-placement", num_devices: int | None = None) -> Agent:
    """A pretrained agent shipped with goenv: one policy for any cluster (device_head="pairs":
    2, 4, 8 devices, mixed kinds). ``agent.optimize(env, budget=16, start="best-heuristic")``
    places a graph it has never seen (zero-shot, never worse than the best heuristic), and
    ``agent.imitate(env); agent.train(env, 256)`` fine-tunes it. `num_devices` is still
    accepted (a cluster's device count, 1 to 256: the same agent). goenv.InvalidArgument names
    the choices for an unknown name, and refuses a device count no cluster has."""
    from pathlib import Path

    if name not in PRETRAINED:
        raise InvalidArgument(f"unknown pretrained agent {name!r}; the choices are {', '.join(sorted(PRETRAINED))}")
    if num_devices is not None:
        checked_int("num_devices (a cluster's device count)", num_devices, 1, MAX_DEVICES)
    path = Path(__file__).resolve().parent / "shipped" / f"{name}.agent"
    if not path.is_file():
        raise InvalidArgument(f"{name} is not in this installation ({PRETRAINED[name][1]} makes it)")
    return load(path)


def _split_concatenated(obs: dict) -> Iterable[dict]:
    """Per-env observations of a concatenated (PyG-style) vector observation."""
    num_nodes = np.asarray(obs["num_nodes"], dtype=np.int64)
    num_edges = np.asarray(obs["num_edges"], dtype=np.int64)
    node_start = np.concatenate([[0], np.cumsum(num_nodes)])
    edge_start = np.concatenate([[0], np.cumsum(num_edges)])
    globals_ = np.asarray(obs["globals"])
    for i in range(len(num_nodes)):
        nodes = slice(node_start[i], node_start[i + 1])
        edges = slice(edge_start[i], edge_start[i + 1])
        yield {
            "node_features": np.asarray(obs["node_features"])[nodes],
            "edge_index": np.asarray(obs["edge_index"])[:, edges] - node_start[i],
            "node_state": np.asarray(obs["node_state"])[nodes],
            "action_mask": np.asarray(obs["action_mask"])[nodes],
            "globals": globals_[i],
            **({"device_features": np.asarray(obs["device_features"])[i]} if "device_features" in obs else {}),
        }


# The node_state columns a later observation version adds (envs/observation.h: appended).
_LATER_COLUMNS = len(_core.node_state_names(_core.OBSERVATION_VERSION)) - len(_core.node_state_names(1))


def _policy_columns(obs: dict, spec: dict | None) -> dict:
    """The observation as the policy reads it: a version-1 policy sees the version-1 prefix of
    a later observation's node_state (the columns a version adds are appended)."""
    state = obs.get("node_state")
    if spec is None or state is None or _LATER_COLUMNS == 0:
        return obs
    expected = spec["node_state_dim"]
    if spec.get("any_devices"):  # plus the graph's one-hot device columns
        if "device_features" not in obs:
            return obs  # act() names what is missing
        expected += np.shape(obs["device_features"])[-2]
    if np.shape(state)[-1] != expected + _LATER_COLUMNS:
        return obs
    obs = dict(obs)
    obs["node_state"] = np.ascontiguousarray(np.asarray(state)[..., :expected])
    return obs


def _split_padded(obs: dict) -> Iterable[dict]:
    """Per-env observations of a padded vector observation (B, max_nodes, ...)."""
    num_nodes = np.asarray(obs["num_nodes"], dtype=np.int64).reshape(-1)
    num_edges = np.asarray(obs["num_edges"], dtype=np.int64).reshape(-1)
    for i in range(len(num_nodes)):
        n, e = int(num_nodes[i]), int(num_edges[i])
        yield {
            "node_features": np.asarray(obs["node_features"])[i, :n],
            "edge_index": np.asarray(obs["edge_index"])[i, :, :e],
            "node_state": np.asarray(obs["node_state"])[i, :n],
            "action_mask": np.asarray(obs["action_mask"])[i, :n],
            "globals": np.asarray(obs["globals"])[i],
            **({"device_features": np.asarray(obs["device_features"])[i]} if "device_features" in obs else {}),
        }
