"""ZooResult: what one zoo build gives back, imported or not."""

from __future__ import annotations

from dataclasses import dataclass, field

STAGES = ("unknown", "config", "build", "inputs", "trace", "cost", "limits")


@dataclass
class ZooResult:
    """One model type at one size. ok: the training graph was imported (graph_bytes holds it);
    else `stage` says where the build stopped ("unknown", "config", "build", "inputs", "trace",
    "cost" or "limits") and `reason` why."""

    model_type: str
    size: str
    library: str
    ok: bool = False
    stage: str = ""
    reason: str = ""
    graph_bytes: bytes | None = None
    provenance: dict = field(default_factory=dict)
    num_nodes: int = 0
    seconds: float = 0.0
    peak_memory_bytes: int = 0
    # ATen ops of this graph that had no cost rule and were costed at 1 FLOP per output element.
    uncosted_ops: tuple = ()

    def graph(self):
        """The imported goenv.Graph (goenv.InvalidArgument when the build failed)."""
        from goenv._core import Graph, InvalidArgument

        if self.graph_bytes is None:
            raise InvalidArgument(f"zoo build of {self.model_type} ({self.size}) failed at {self.stage}: {self.reason}")
        return Graph.from_bytes(self.graph_bytes)
