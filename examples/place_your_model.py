"""Place your own PyTorch model with the shipped GO placer, next to HEFT.

    python examples/place_your_model.py [--layers 6] [--devices 2] [--finetune 256]

A GPT-2-style decoder (token + position embeddings, pre-LayerNorm blocks of causal
self-attention and a GELU MLP, a tied-size LM head) is built in code and imported
as one training step with goenv.datasets.from_torch. The placer pretrained on
goenv's transfer suite (goenv.agents.pretrained("go-placement")) has never seen
it: it places it zero-shot (its greedy decision, then the best of 16 samples), and
then fine-tuned for --finetune simulator calls (imitation of the best heuristic +
PPO). Every line says how many simulator calls it cost.
"""

from __future__ import annotations

import argparse
import math

import torch

import goenv
import goenv.agents


class Block(torch.nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = torch.nn.LayerNorm(width), torch.nn.LayerNorm(width)
        self.qkv, self.proj = torch.nn.Linear(width, 3 * width), torch.nn.Linear(width, width)
        self.up, self.down = torch.nn.Linear(width, 4 * width), torch.nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=-1)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(c // self.heads)
        scores = scores.masked_fill(torch.ones(t, t, dtype=torch.bool).triu(1), float("-inf"))
        attended = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(attended)
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab: int = 8192, width: int = 512, layers: int = 6, heads: int = 8, context: int = 256):
        super().__init__()
        self.tokens, self.positions = torch.nn.Embedding(vocab, width), torch.nn.Embedding(context, width)
        self.blocks = torch.nn.Sequential(*[Block(width, heads) for _ in range(layers)])
        self.norm, self.head = torch.nn.LayerNorm(width), torch.nn.Linear(width, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        return self.head(self.norm(self.blocks(x)))


def make_parser(description: str = __doc__) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--devices", type=int, default=2, choices=[2, 4, 8])
    parser.add_argument("--samples", type=int, default=16)
    parser.add_argument("--finetune", type=int, default=256, help="fine-tuning simulator calls (0: skip)")
    return parser


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    for flag, value, low in (("--layers", args.layers, 1), ("--batch", args.batch, 1), ("--samples", args.samples, 1),
                             ("--finetune", args.finetune, 0)):
        if value < low:
            parser.error(f"{flag} must be >= {low}, got {value}")


def print_line(line: str) -> None:
    print(line, flush=True)


def place(args: argparse.Namespace, say=print_line) -> dict:
    """Imports the model, places it with HEFT, the best heuristic and the shipped placer (zero-shot,
    then fine-tuned); every line of output goes to `say`. Returns each method's runtime, seconds."""
    model = TinyGPT(layers=args.layers)
    graph = goenv.datasets.from_torch(model, torch.randint(0, 8192, (args.batch, 256)))
    env = goenv.make("placement", graph=graph, cluster=f"{args.devices}xgpu-nvlink")
    env.reset(seed=0)
    say(f"TinyGPT ({args.layers} layers), one training step: {graph.num_nodes} ops on "
        f"{args.devices}xgpu-nvlink; default placement {env.unwrapped.core.initial_runtime * 1e3:.2f} ms")
    results = {"default": env.unwrapped.core.initial_runtime}
    for method in ("heft", "best-heuristic"):
        r = goenv.baselines.solve(env, method)
        results[method] = r["runtime"]
        say(f"  {method:<34} {r['runtime'] * 1e3:8.2f} ms  ({r['simulator_calls']} simulator calls)")
    placer = goenv.agents.pretrained("go-placement", num_devices=args.devices)
    # Zero-shot: the greedy decision alone, then policy-guided search from the best heuristic
    # (its calls included: every simulation is charged).
    for budget, start, name in ((1, "default", "GO zero-shot (greedy)"),
                                (args.samples, "best-heuristic", f"GO zero-shot ({args.samples}-call search)")):
        r = placer.optimize(env, budget=budget, start=start)
        value = r["greedy_runtime"] if budget == 1 else r["runtime"]
        results[name] = value
        say(f"  {name:<34} {value * 1e3:8.2f} ms  ({r['simulator_calls']} simulator calls)")
    if args.finetune:
        placer.imitate(env, steps=50, progress=False)
        spent = placer.teacher(env)["simulator_calls"]
        placer.train(env, max(16, args.finetune - spent), progress=False)
        r = placer.optimize(env, budget=1)
        name = f"GO fine-tuned ({args.finetune} calls)"
        results[name] = r["runtime"]
        say(f"  {name:<34} {r['runtime'] * 1e3:8.2f} ms  (best found; source: {r['source']})")
    return results


def main(argv: list[str] | None = None) -> dict:
    parser = make_parser()
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    return place(args)


if __name__ == "__main__":
    main()
