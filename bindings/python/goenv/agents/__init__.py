"""Reference agents for goenv, written in LibTorch: PPO and the GO policy.

    import goenv.agents
    agent = goenv.agents.GO(hidden=64, segment_length=512, seed=0)
    agent.train(["placement-inception"], total_steps=20_000, log_dir="runs/go")
    action = agent.act(obs, deterministic=True)
    agent.evaluate(["placement-inception"])   # {"placement-inception": {"runtime": ..., "speedup": ...}}
    agent.save("go.agent"); goenv.agents.load("go.agent")

`PPO` is GraphSAGE with per-node MLP heads; `GO` follows "Transferable Graph
Optimizers for ML Compilers" (Zhou et al., NeurIPS 2020): GraphSAGE node
embeddings, segment-recurrent (Transformer-XL-style) attention over the nodes
in topological order, FiLM conditioned on a graph embedding, one output layer
per decision head. Both train with PPO in C++ (no Python in the loop).

Importing this package does not import torch; creating an agent does, and
raises ImportError with the fix when torch (or goenv's agents module) is missing.
"""

from goenv.agents.agent import GO, PPO, Agent, load, options

__all__ = ["GO", "PPO", "Agent", "load", "options"]
