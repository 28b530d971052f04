"""How each kind of method spends a case's budget (docs/benchmark.md#what-evaluate-accepts).
A runner gets a case, a budget and a seed, and returns its decision and the simulator calls it
made; the harness measures the decision itself. Calls are counted by the harness's own env
where the method acts through one (policies), and by goenv's own counters where a goenv search
runs natively (baselines, agents)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from goenv import baselines
from goenv._core import InvalidArgument
from goenv.agents.agent import Agent
from goenv.benchmark import decisions
from goenv.benchmark.catalog import Case
from goenv.envs import make

SEARCHES = ("best-heuristic", "random-search", "local-search", "genetic")


@dataclass
class Found:
    heads: dict | None          # the best decision found ({head: (N,) ints}); None: nothing feasible
    simulator_calls: int
    policy_seconds: float       # time spent in the method's own code (0 where it cannot be told apart)
    invalid_steps: int = 0


class PolicyRunner:
    """A callable obs -> action, stepped `budget` times through an improvement episode (the
    harness's env counts each step as one call); the best feasible decision is the result."""

    def __init__(self, policy: Callable[[dict], Any], name: str, wrap: Callable | None = None):
        self.policy, self.name, self.wrap = policy, name, wrap

    def __call__(self, case: Case, budget: int, seed: int) -> Found:
        env = case.make(horizon=budget)
        stepped = self.wrap(env) if self.wrap is not None else env
        obs, _ = stepped.reset(seed=seed)
        best, heads, calls, invalid, thinking = np.inf, None, 0, 0, 0.0
        while calls < budget:
            started = time.perf_counter()
            action = self.policy(obs)
            thinking += time.perf_counter() - started
            obs, _, terminated, truncated, info = stepped.step(action)
            calls += 1
            if info["invalid"] or info["oom"]:
                invalid += 1
            elif info["runtime"] < best:
                best = info["runtime"]
                heads = decisions.in_force(env.unwrapped.core, case.task)
            if terminated or truncated:
                break
        return Found(heads, calls, thinking, invalid)


class Search:
    """Marks a function (env, seed) -> anything as a search that steps the env itself (an RL
    algorithm trained on the case, say): the harness hands it the case's env, counts its steps,
    keeps the best feasible decision among them and stops it at the budget."""

    def __init__(self, function: Callable[[Any, int], Any], name: str | None = None):
        if not callable(function):
            raise InvalidArgument(f"Search takes a function (env, seed), not {type(function).__name__}")
        self.function, self.name = function, name or getattr(function, "__name__", "search")


class BudgetSpent(Exception):
    """Raised into a search that asks for a step beyond the budget: the harness's way to stop it."""


class _Charged:
    """Wraps the case's env for a Search: counts steps, keeps the best, refuses the one too many."""

    def __init__(self, env, task: str, budget: int):
        import gymnasium

        outer = self

        class Charged(gymnasium.Wrapper):
            def step(self, action):
                if outer.calls >= budget:
                    raise BudgetSpent(f"the budget of {budget} simulator calls is spent")
                result = self.env.step(action)
                outer.calls += 1
                info = result[4]
                if info["invalid"] or info["oom"]:
                    outer.invalid += 1
                elif info["runtime"] < outer.best:
                    outer.best, outer.heads = info["runtime"], decisions.in_force(self.env.unwrapped.core, task)
                return result

        self.calls, self.invalid, self.best, self.heads = 0, 0, np.inf, None
        self.env = Charged(env)


class SearchRunner:
    def __init__(self, search: Search):
        self.search, self.name = search, search.name

    def __call__(self, case: Case, budget: int, seed: int) -> Found:
        charged = _Charged(case.make(), case.task, budget)
        started = time.perf_counter()
        try:
            self.search.function(charged.env, seed)
        except BudgetSpent:
            pass  # stopped at the budget, as promised
        return Found(charged.heads, charged.calls, time.perf_counter() - started, charged.invalid)


class BaselineRunner:
    """A baseline by name: a heuristic (one call: its decision is simulated to be known) or a
    search given the budget; its own count of calls is charged."""

    def __init__(self, name: str):
        if name not in baselines.list():
            raise InvalidArgument(f"unknown baseline {name!r}; known: {', '.join(baselines.list())}")
        self.name = name

    def __call__(self, case: Case, budget: int, seed: int) -> Found:
        env = case.make()
        env.reset(seed=seed)
        options = {"budget": budget, "seed": seed} if self.name in SEARCHES else {}
        result = baselines.solve(env, self.name, **options)
        feasible = not (result["invalid"] or result["oom"])
        heads = decisions.as_heads(result["action"], case.task) if feasible else None
        return Found(heads, max(int(result["simulator_calls"]), 1), float(result["seconds"]))


class AgentRunner:
    """A goenv agent: its greedy decision at a budget of 1 (one-shot), else its policy-guided
    search, started where goenv's own searches start (the best heuristic) when the budget pays
    for finding it and still leaves proposals, else from the default."""

    def __init__(self, agent, name: str):
        self.agent, self.name = agent, name
        self.start_costs: dict[str, int] = {}

    def start_cost(self, task: str) -> int:
        """Calls of a search started at "best-heuristic": one per heuristic of the task, plus the
        agent's two measurements; counted once per task on a graph of no benchmark."""
        if task not in self.start_costs:
            probe = make(f"{task}-random-layered", num_layers=3, width=2)
            self.start_costs[task] = int(baselines.solve(probe, "best-heuristic")["simulator_calls"]) + 2
        return self.start_costs[task]

    def __call__(self, case: Case, budget: int, seed: int) -> Found:
        env = case.make()
        obs, _ = env.reset(seed=seed)
        started = time.perf_counter()
        if budget == 1:
            action = self.agent.act(obs, deterministic=True, colocation=env.unwrapped.graph.colocation)
            return Found(decisions.as_heads(action, case.task), 1, time.perf_counter() - started)
        cost = self.start_cost(case.task)
        start, proposals = ("best-heuristic", budget - cost) if budget > 2 * cost else ("default", budget - 1)
        result = self.agent.optimize(env, budget=proposals, start=start, seed=seed)
        return Found(decisions.as_heads(result["decisions"], case.task), int(result["simulator_calls"]),
                     time.perf_counter() - started)


def sb3_policy(model) -> Callable[[dict], Any]:
    """A Stable-Baselines3 model as obs -> greedy action. The model's policy is called directly,
    since predict() checks observations against the spaces of the graph it was trained on."""
    import torch
    from stable_baselines3.common.utils import obs_as_tensor

    policy = model.policy
    masked = "action_masks" in policy._predict.__code__.co_varnames
    decided = int(np.prod(np.shape(model.action_space.nvec))) if hasattr(model.action_space, "nvec") else None

    def act(obs: dict):
        nodes = np.shape(obs["node_features"])[0]
        if decided is not None and decided != nodes:  # SB3 sizes its action distribution at creation
            raise InvalidArgument(f"the Stable-Baselines3 model decides {decided} values per step (its training "
                                  f"env's action space); this graph has {nodes} nodes")
        tensors = obs_as_tensor({key: np.asarray(value)[None] for key, value in obs.items()}, policy.device)
        with torch.no_grad():
            options = {"action_masks": np.asarray(obs["action_mask"])[None]} if masked else {}
            action = policy._predict(tensors, deterministic=True, **options)
        return action.cpu().numpy()[0]

    return act


def rllib_policy(module) -> Callable[[dict], Any]:
    """An RLlib RLModule (or an Algorithm's default module) as obs -> greedy action: its inference
    forward, its action distribution's mode."""
    import torch

    if hasattr(module, "get_module"):  # an Algorithm
        module = module.get_module()
    distribution = module.get_inference_action_dist_cls()

    def act(obs: dict):
        tensors = {key: torch.as_tensor(np.array(value)[None]) for key, value in obs.items()}
        with torch.no_grad():
            out = module.forward_inference({"obs": tensors})
            action = distribution.from_logits(out["action_dist_inputs"]).to_deterministic().sample()
        return action.cpu().numpy()[0]

    return act


def _is_rllib(method) -> bool:
    """An RLlib Algorithm or RLModule (checked only where RLlib is imported already)."""
    import sys

    modules = sys.modules.get("ray.rllib.core.rl_module.rl_module"), sys.modules.get("ray.rllib.algorithms.algorithm")
    return (modules[0] is not None and isinstance(method, modules[0].RLModule)) or \
        (modules[1] is not None and isinstance(method, modules[1].Algorithm))


def runner_for(method, name: str | None, wrap: Callable | None):
    """(runner, name) for what evaluate() was given."""
    if isinstance(method, str):
        if wrap is not None:
            raise InvalidArgument("wrap= applies to policies, not to a baseline given by name")
        return BaselineRunner(method), name or method
    if isinstance(method, Search):
        if wrap is not None:
            raise InvalidArgument("wrap= applies to policies; a Search wraps the env it is given itself")
        return SearchRunner(method), name or method.name
    if isinstance(method, Agent):
        return AgentRunner(method, name), name or f"{method.algorithm}-agent"
    module = type(method).__module__
    if _is_rllib(method):
        return PolicyRunner(rllib_policy(method), name, wrap), name or type(method).__name__
    if module.startswith(("stable_baselines3", "sb3_contrib")):
        return PolicyRunner(sb3_policy(method), name, wrap), name or type(method).__name__
    if callable(method):
        return PolicyRunner(method, name, wrap), name or getattr(method, "__name__", "policy")
    raise InvalidArgument(f"evaluate() takes a callable obs -> action, a goenv.benchmark.Search, a goenv agent, a "
                          f"Stable-Baselines3 model, an RLlib Algorithm or RLModule, or a baseline's name, not "
                          f"{type(method).__name__}")
