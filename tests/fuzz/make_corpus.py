"""Regenerates the small seed corpus in tests/fuzz/corpus/<target>/ (checked in;
rerun after a file-format or env-state change): `python tests/fuzz/make_corpus.py`."""

from __future__ import annotations

import io
import os

import numpy as np

from fuzz_common import GRAPH_MAGIC, HEADER, goenv, rich_graph

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target: str, name: str, data: bytes) -> None:
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def main() -> None:
    graph = rich_graph()
    tiny = goenv.Graph.from_arrays(np.zeros((2, 0), dtype=np.int64), flops=np.array([1.0]), name="t")
    for name, g in (("rich", graph), ("tiny", tiny)):
        data = g.to_bytes()
        assert data[:8] == GRAPH_MAGIC
        write("graph_load", f"{name}-bytes", b"\x00" + data)
        write("graph_load", f"{name}-payload", b"\x01" + data[HEADER:])
        write("graph_load", f"{name}-json", b"\x02" + g.to_json().encode())
        write("graph_load", f"{name}-file", b"\x03" + data)
    for preset in ("cpu+2xgpu", "placeto-k80-2"):
        cluster = goenv.Cluster.preset(preset)
        write("cluster_json", f"{preset}-json", b"\x00" + cluster.to_json().encode())
        write("cluster_json", f"{preset}-bytes", b"\x01" + cluster.__getstate__()[HEADER:])
    from fuzz_env_state import ENVS

    for i, env in enumerate(ENVS):
        write("env_state", f"env{i}-fresh-v4", bytes([0x80 | i]) + env.get_state())
        env.reset(seed=0)
        env.action_space.seed(i)
        env.step(env.action_space.sample())
        write("env_state", f"env{i}-stepped-v4", bytes([0x80 | i]) + env.get_state())
    rng = np.random.default_rng(0)
    for i in range(4):
        write("env_actions", f"random-{i}", rng.bytes(64 * (i + 1)))
    from fuzz_dataset import TEMPLATE
    from goenv import dataset_files

    with open(os.path.join(TEMPLATE, dataset_files.MANIFEST), "rb") as f:
        manifest = f.read()
    with open(os.path.join(TEMPLATE, dataset_files.shard_file(1)), "rb") as f:
        shard = f.read()
    write("dataset", "manifest", b"\x00" + manifest)
    write("dataset", "shard", b"\x01" + shard)
    write("dataset", "manifest-resume", b"\x02" + manifest[: len(manifest) // 2])
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("ConstantOfShape", ["s"], ["z"], name="zeros"),
             helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Relu", ["h"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "seed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [helper.make_tensor("w", TensorProto.FLOAT, [3, 4], [0.5] * 12)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    write("onnx_import", "model", b"\x00" + model.SerializeToString())
    nodes.reverse()  # a file whose nodes are not in topological order
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    write("onnx_import", "model-unsorted", b"\x00" + model.SerializeToString())
    for i in range(3):
        write("onnx_import", f"structured-{i}", bytes([2 * i + 1]) + rng.bytes(48 * (i + 1)))
    labels()
    checkpoints()
    converter()


def labels() -> None:
    """The labels target's template: its manifest, and shard 1's labels and graphs files."""
    import json

    from fuzz_labels import TEMPLATE
    from goenv.labels.folder import MANIFEST

    with open(os.path.join(TEMPLATE, MANIFEST), "rb") as f:
        manifest = f.read()
    write("labels", "manifest", b"\x00" + manifest)
    files = json.loads(manifest)["shards"][1]["files"]
    for mode, kind in ((1, "labels"), (2, "graphs")):
        with open(os.path.join(TEMPLATE, files[kind]["file"]), "rb") as f:
            write("labels", f"shard-{kind}", bytes([mode]) + f.read())


def checkpoints() -> None:
    """Small real checkpoints: GO with a teacher, PPO after one update, an agent without a policy."""
    import goenv.agents

    from fuzz_checkpoint import ENV

    small = dict(hidden=8, sage_layers=1, attention_layers=1, attention_heads=2, segment_length=4, seed=0,
                 num_threads=1, envs_per_graph=2, epochs=1)
    go = goenv.agents.GO(env=ENV, **small)
    go.imitate(ENV, steps=1, progress=False)
    write("checkpoint", "go-teacher", go._agent.to_bytes())
    ppo = goenv.agents.PPO(env=ENV, **small)
    ppo.train(ENV, total_steps=2, progress=False)
    write("checkpoint", "ppo-trained", ppo._agent.to_bytes())
    write("checkpoint", "no-policy", goenv.agents.PPO(hidden=8)._agent.to_bytes())



def converter() -> None:
    """Legacy checkpoints: a small module of two tensors (whole file, and as data.pkl for formats 1
    and 2, stored and deflated), and the data.pkl of the real format-2 file in tests/python/data."""
    import sys
    import zipfile

    from fuzz_convert import STORAGES

    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    from legacy_pickles import legacy_file, module, storage, tensor, whole

    small = whole(module([("weight", tensor(storage("1", 16) + b"q\x00", 0, [4, 4], [4, 1])),
                          ("bias", tensor(b"h\x00", 4, [1, 4], [0, 1]))]))
    write("convert", "small-file", b"\x00" + legacy_file(small, STORAGES))
    for flags in (1, 3, 7):
        write("convert", f"small-pickle-{flags}", bytes([flags]) + small)
    real = os.path.join(HERE, "..", "python", "data", "legacy", "go-placement-2dev-format2.agent")
    with open(real, "rb") as f:
        data = f.read()
    header = int.from_bytes(data[16:24], "little")
    with zipfile.ZipFile(io.BytesIO(data[24 + header + 16:])) as archive:
        write("convert", "real-pickle", b"\x03" + archive.read("archive/data.pkl"))


if __name__ == "__main__":
    main()
