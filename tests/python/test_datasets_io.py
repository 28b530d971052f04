"""Suites, importers (PyTorch, ONNX) and dataset files of goenv.datasets."""

from __future__ import annotations

import json
import os
import pickle
import sys
import types
import warnings

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

import goenv
from goenv import dataset_files, datasets
from helpers import cache_switching

SMALL = {"num_layers": 4, "width": 3}  # random-layered graphs of ~12 nodes


# ---------------------------------------------------------------------------
# Suites


def test_suites_are_listed_and_unknown_names_raise_not_found():
    assert datasets.suites() == ["go-placement", "transfer", "zoo", "zoo-diffusers"]
    with pytest.raises(goenv.NotFound, match="known suites: go-placement, transfer"):
        datasets.suite("placeto")
    with pytest.raises(KeyError):
        datasets.suite("placeto")


def test_go_placement_suite_has_the_papers_14_graph_device_pairs():
    entries = datasets.suite("go-placement")
    assert len(entries) == 14
    pairs = sorted((e.graph, e.num_devices) for e in entries)
    expected = sorted([(f"{family}-{n}", n) for family in ("rnnlm", "gnmt", "transformer-xl") for n in (2, 4, 8)]
                      + [("inception", 2), ("inception", 2), ("amoebanet", 4), ("wavenet-2", 2), ("wavenet-4", 4)])
    assert pairs == expected
    assert all(e.cluster == f"{e.num_devices}xgpu-nvlink" for e in entries)
    assert sorted(e.params["batch_size"] for e in entries if e.graph == "inception") == [32, 64]
    assert len(set(entries)) == 14  # the two inception cases differ by their params
    assert entries[0].env_id("placement") == "placement-rnnlm-2"
    assert entries[0].env_id("joint") == "joint-rnnlm-2"


def test_suite_entry_makes_its_env_on_its_cluster_with_its_params():
    small, large = [e for e in datasets.suite("go-placement") if e.graph == "inception"]
    env = small.make("placement", render_mode=None)
    assert env.cluster.num_devices == 2
    assert small.load().total_flops < large.load().total_flops
    assert env.graph.total_flops == pytest.approx(small.load().total_flops)


def test_suite_entry_is_frozen_hashable_and_picklable():
    entry = datasets.SuiteEntry("inception", {"batch_size": 32}, "2xgpu-nvlink")
    with pytest.raises(TypeError):
        entry.params["batch_size"] = 64
    with pytest.raises(AttributeError):
        entry.cluster = "4xgpu-nvlink"
    assert pickle.loads(pickle.dumps(entry)) == entry
    assert hash(entry) == hash(datasets.SuiteEntry("inception", {"batch_size": 32.0}, "2xgpu-nvlink"))


def test_transfer_suite_holds_out_whole_architectures():
    splits = datasets.suite("transfer")
    assert set(splits) == {"train", "validation", "test"}
    assert all(splits[name] for name in splits)
    lineages = {name: {datasets.lineage(e.graph) for e in entries} for name, entries in splits.items()}
    assert not lineages["train"] & lineages["test"]
    assert not lineages["train"] & lineages["validation"]
    assert not lineages["validation"] & lineages["test"]
    assert {"random-layered", "random-series-parallel"} <= lineages["train"]
    presets = set(goenv.clusters.list())
    assert all(e.cluster in presets for entries in splits.values() for e in entries)
    seeded = [e for e in splits["train"] if e.graph == "random-layered"]
    assert len({e.params["seed"] for e in seeded}) == len(seeded)


def test_suite_with_an_unregistered_family_raises_a_clear_error(monkeypatch):
    registered = [name for name in datasets.list() if not name.startswith("gnmt")]
    monkeypatch.setattr(datasets, "list", lambda: registered)
    with pytest.raises(goenv.NotFound, match="gnmt-2, gnmt-4, gnmt-8"):
        datasets.suite("go-placement")


# ---------------------------------------------------------------------------
# PyTorch importer


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn(self.conv(x))))
        return torch.softmax(self.fc(x.flatten(1)), dim=-1)


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def _is_dag(graph: goenv.Graph) -> bool:
    position = np.empty(graph.num_nodes, np.int64)
    position[np.asarray(graph.topological_order)] = np.arange(graph.num_nodes)
    src, dst = graph.edge_index
    return bool(np.all(position[src] < position[dst]))


def test_from_torch_mlp_has_one_node_per_op_and_exact_linear_flops():
    with warnings.catch_warnings():
        warnings.simplefilter("error", goenv.datasets.CostEstimateWarning)
        g = datasets.from_torch(_mlp(), (torch.randn(2, 8),), name="mlp", training=False)
    assert g.name == "mlp"
    assert g.op_type_names == ["Input", "MatMul", "Relu", "MatMul"]
    flops = dict(zip(g.names, g.flops))
    assert flops["0/linear"] == 2 * 2 * 8 * 16 + 2 * 16  # 2*M*K*N + bias
    assert flops["2/linear_1"] == 2 * 2 * 16 * 4 + 2 * 4
    assert flops["1/relu"] == 2 * 16
    assert list(g.param_bytes) == [0, (8 * 16 + 16) * 4, 0, (16 * 4 + 4) * 4]
    assert list(g.output_bytes) == [2 * 8 * 4, 2 * 16 * 4, 2 * 16 * 4, 2 * 4 * 4]
    assert g.edge_index.tolist() == [[0, 1, 2], [1, 2, 3]]
    assert list(g.group) == [-1, 0, 1, 2]  # one group per top-level submodule


def test_from_torch_cnn_maps_ops_and_costs_convolutions_from_shapes():
    g = datasets.from_torch(SmallCNN().eval(), torch.randn(2, 3, 8, 8), training=False)
    types = dict(zip(g.names, g.op_type_names))
    assert {"Conv2D", "BatchNorm", "Relu", "MaxPool", "Reshape", "MatMul", "Softmax"} <= set(types.values())
    flops = dict(zip(g.names, g.flops))
    assert flops["conv/conv2d"] == 2 * (2 * 8 * 8 * 8) * (3 * 3 * 3) + 2 * 8 * 8 * 8
    assert flops["pool/max_pool2d"] == 2 * 8 * 4 * 4 * 4
    assert flops["softmax"] == 5 * 2 * 10
    flatten = g.names.index("flatten")  # a view: free, allocates nothing, still passes its bytes on
    assert g.cost_us[flatten].tolist() == [0.0, 0.0, 0.0] and g.output_bytes[flatten] == 0
    out_edges = g.edge_index[0] == flatten
    assert np.all(g.edge_bytes[out_edges] == 2 * 128 * 4)
    assert np.isnan(g.cost_us[g.names.index("conv/conv2d")]).all()  # roofline
    # weights and running statistics; num_batches_tracked is not read in eval mode
    assert g.total_param_bytes == sum(t.numel() * 4 for t in SmallCNN().state_dict().values()
                                      if t.dtype == torch.float32)


def test_from_torch_costs_diff_as_subtractions():
    """aten.diff (Hugging Face GPT-2 builds position ids with it) has a cost rule: one
    subtraction per output element and order."""
    class Differences(nn.Module):
        def forward(self, x):
            return torch.diff(x, n=2, dim=-1) * 2

    with warnings.catch_warnings():
        warnings.simplefilter("error", goenv.datasets.CostEstimateWarning)
        g = datasets.from_torch(Differences(), torch.randn(3, 5), training=False)
    diff = g.names.index(next(n for n in g.names if "diff" in n))
    assert g.op_type_names[diff] == "Sub" and g.flops[diff] == 2 * 3 * 3  # n=2, output (3, 3)


class CachingDecoder(nn.Module):
    """A Hugging Face style block: `config.use_cache` makes forward also return the keys and
    values (as GPT-2's past_key_values), computed by ops of their own."""

    def __init__(self, use_cache: bool):
        super().__init__()
        self.config = types.SimpleNamespace(use_cache=use_cache)
        self.query, self.key, self.value = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        attention = torch.softmax(self.query(x) @ self.key(x).transpose(-1, -2), -1) @ self.value(x)
        if self.config.use_cache:
            return attention, (self.key(x).contiguous() * 1.0, self.value(x).contiguous() * 1.0)
        return attention


def test_from_torch_imports_a_training_step_without_the_kv_cache_whatever_the_setting():
    """A training step keeps no key/value cache: Hugging Face models give one graph whatever
    config.use_cache says (the setting is restored); a forward-only import keeps the cache's ops."""
    graphs = {}
    for training in (True, False):
        for cache in (False, True):
            torch.manual_seed(0)
            model, x = CachingDecoder(cache), torch.randn(2, 4, 8)
            graphs[training, cache] = datasets.from_torch(model, x, training=training)
            assert model.config.use_cache is cache
    assert graphs[True, True].names == graphs[True, False].names
    assert graphs[True, True].num_edges == graphs[True, False].num_edges
    assert graphs[False, True].num_nodes > graphs[False, False].num_nodes


def test_from_torch_op_without_cost_rule_warns_once_per_op_type():
    class Bessel(nn.Module):
        def forward(self, x):
            return torch.special.bessel_j0(torch.special.bessel_j0(x) + 1)

    with pytest.warns(goenv.datasets.CostEstimateWarning) as record:
        g = datasets.from_torch(Bessel(), torch.randn(3, 5), training=False)
    messages = [str(w.message) for w in record if issubclass(w.category, goenv.datasets.CostEstimateWarning)]
    assert len(messages) == 1 and "bessel_j0" in messages[0]
    others = [i for i, t in enumerate(g.op_type_names) if t == "Other"]
    assert len(others) == 2 and all(g.flops[i] == 15 for i in others)  # 1 FLOP per output element


def test_from_torch_training_adds_backward_and_colocated_updates_as_a_dag():
    model = SmallCNN()
    inference = datasets.from_torch(model, torch.randn(2, 3, 8, 8), training=False)
    g = datasets.from_torch(model, torch.randn(2, 3, 8, 8), training=True)
    assert _is_dag(g)
    names, types = g.names, g.op_type_names
    phases = {prefix: [i for i, n in enumerate(names) if n.startswith(prefix)]
              for prefix in ("fwd/", "bwd/", "var/", "update/")}
    assert len(phases["fwd/"]) == inference.num_nodes
    parameters = dict(model.named_parameters())
    assert sorted(names[i][len("update/"):] for i in phases["update/"]) == sorted(parameters)
    assert {types[i] for i in phases["update/"]} == {"ApplyGradient"}
    assert {"Conv2DBackpropFilter", "MaxPoolGrad", "ReluGrad", "BatchNormGrad", "SoftmaxGrad"} <= \
        {types[i] for i in phases["bwd/"]}
    colocation = np.asarray(g.colocation)
    for i in phases["update/"]:
        name = names[i][len("update/"):]
        variable = names.index("var/" + name)
        assert colocation[i] >= 0 and colocation[i] == colocation[variable]
        assert np.sum(colocation == colocation[i]) == 2
        assert g.flops[i] == 2 * parameters[name].numel()
        assert g.param_bytes[variable] == parameters[name].numel() * 4
    assert g.total_param_bytes == inference.total_param_bytes
    linear = names.index("fwd/fc/linear")
    assert g.flops[names.index("bwd/fc/linear")] == 2 * g.flops[linear]  # input and weight gradients
    first_conv = names.index("fwd/conv/conv2d")  # reads data only: weight gradient only
    assert g.flops[names.index("bwd/conv/conv2d")] == g.flops[first_conv]


def test_from_torch_falls_back_to_an_eager_recording_when_export_fails():
    class DataDependent(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        def forward(self, x):
            return self.linear(x) if x.sum() > 0 else x

    with pytest.warns(UserWarning, match="torch.export could not trace"):
        g = datasets.from_torch(DataDependent(), torch.ones(2, 4), training=True)
    assert "MatMul" in g.op_type_names and "ApplyGradient" in g.op_type_names
    assert g.flops[g.names.index("fwd/addmm")] == 2 * 2 * 4 * 4 + 2 * 4
    assert _is_dag(g)


def test_from_torch_example_inputs_that_do_not_fit_are_one_clear_error(capfd):
    # torch.export fails first (its fake-tensor traceback is not printed), then the eager run:
    # goenv.InvalidArgument naming the module and torch's reason, not torch's RuntimeError.
    with pytest.warns(UserWarning, match="torch.export could not trace"), \
            pytest.raises(goenv.InvalidArgument, match=r"from_torch: Linear fails on the example inputs "
                                                       r"\(RuntimeError: mat1 and mat2 shapes cannot be multiplied"):
        datasets.from_torch(nn.Linear(4, 4), torch.randn(2, 5))
    assert "Traceback" not in capfd.readouterr().err


# ---------------------------------------------------------------------------
# ONNX importer



def _onnx_mlp(path):
    """The MLP through torch.onnx.export when it works here, else the same graph from onnx.helper."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(_mlp().eval(), (torch.randn(2, 8),), str(path), dynamo=False)
        return str(path)
    except Exception:  # noqa: BLE001 - exporter unavailable: build the model directly
        initializers = [numpy_helper.from_array(np.zeros(shape, np.float32), name) for name, shape in
                        [("W0", (16, 8)), ("b0", (16,)), ("W1", (4, 16)), ("b1", (4,))]]
        nodes = [helper.make_node("Gemm", ["x", "W0", "b0"], ["h"], transB=1),
                 helper.make_node("Relu", ["h"], ["r"]),
                 helper.make_node("Gemm", ["r", "W1", "b1"], ["y"], transB=1)]
        graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], initializers)
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
        return str(path)


def test_from_onnx_mlp_matches_the_torch_costs(tmp_path):
    path = _onnx_mlp(tmp_path / "mlp.onnx")
    g = datasets.from_onnx(path, training=False)
    assert g.op_type_names == ["Input", "MatMul", "Relu", "MatMul"]
    assert list(g.flops) == [0, 2 * 2 * 8 * 16 + 2 * 16, 2 * 16, 2 * 2 * 16 * 4 + 2 * 4]
    assert list(g.param_bytes) == [0, (8 * 16 + 16) * 4, 0, (16 * 4 + 4) * 4]
    with open(path, "rb") as f:
        assert datasets.from_onnx(f.read(), name="bytes", training=False).name == "bytes"
    trained = datasets.from_onnx(onnx.load(path), training=True)
    assert _is_dag(trained)
    assert sum(t == "ApplyGradient" for t in trained.op_type_names) == 4


def test_from_onnx_cnn_built_with_onnx_helper(tmp_path):
    initializers = [numpy_helper.from_array(np.zeros(shape, np.float32), name) for name, shape in
                    [("W", (8, 3, 3, 3)), ("B", (8,)), ("FW", (10, 128)), ("FB", (10,))]]
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], axis=1, name="flatten"),
             helper.make_node("Gemm", ["f", "FW", "FB"], ["y"], transB=1, name="fc"),
             helper.make_node("Frobnicate", ["y"], ["z1"], domain="example.custom", name="custom1"),
             helper.make_node("Frobnicate", ["z1"], ["z2"], domain="example.custom", name="custom2")]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 8])],
                              [helper.make_tensor_value_info("z2", TensorProto.FLOAT, None)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("example.custom", 1)])
    with pytest.warns(goenv.datasets.CostEstimateWarning) as record:
        g = datasets.from_onnx(model, training=False)
    assert len([w for w in record if issubclass(w.category, goenv.datasets.CostEstimateWarning)]) == 1
    types = dict(zip(g.names, g.op_type_names))
    assert types == {"x": "Input", "conv": "Conv2D", "relu": "Relu", "pool": "MaxPool", "flatten": "Reshape",
                     "fc": "MatMul", "custom1": "Other", "custom2": "Other"}
    flops = dict(zip(g.names, g.flops))
    assert flops["conv"] == 2 * (2 * 8 * 8 * 8) * 27 + 2 * 8 * 8 * 8
    assert flops["pool"] == 2 * 8 * 4 * 4 * 4
    assert flops["fc"] == 2 * 2 * 128 * 10 + 2 * 10
    assert g.cost_us[g.names.index("flatten")].tolist() == [0.0, 0.0, 0.0]


def test_from_onnx_folds_shape_computations_before_costing():
    """x (2, 3, 4) reshaped to (x.shape[0], -1) through Shape/Gather/Unsqueeze/Concat, as exporters write it."""
    initializers = [numpy_helper.from_array(np.array(0, np.int64), "zero"),
                    numpy_helper.from_array(np.array([-1], np.int64), "minus_one"),
                    numpy_helper.from_array(np.zeros((12, 5), np.float32), "W")]
    nodes = [helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
             helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"]),
             helper.make_node("Constant", [], ["axes"], value=numpy_helper.from_array(np.array([0], np.int64))),
             helper.make_node("Concat", ["batch1", "minus_one"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["flat"], name="reshape"),
             helper.make_node("MatMul", ["flat", "W"], ["y"], name="matmul")]
    nodes.insert(2, nodes.pop(3))  # the Constant before its reader
    graph = helper.make_graph(nodes, "flatten", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = datasets.from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), training=False)
    assert g.names == ["x", "reshape", "matmul"]
    assert g.flops[2] == 2 * 2 * 12 * 5
    assert g.output_bytes[2] == 2 * 5 * 4


def test_from_onnx_rejects_what_is_not_a_model(tmp_path):
    with pytest.raises(goenv.InvalidGraph):
        datasets.from_onnx(b"not an onnx model")
    with pytest.raises(FileNotFoundError):
        datasets.from_onnx(tmp_path / "missing.onnx")


# ---------------------------------------------------------------------------
# Dataset files


def _shards(root):
    return sorted(name for name in os.listdir(root) if name.endswith(".goenv-shard"))


def _stats(root):
    return {name: (os.stat(os.path.join(root, name)).st_ino, os.stat(os.path.join(root, name)).st_mtime_ns)
            for name in _shards(root)}


def _generate(root, count=10, **kwargs):
    options = {"shard_size": 4, "params": SMALL, "seed": 3, "progress": False, **kwargs}
    return datasets.generate("random-layered", count, root, **options)


def test_generate_and_open_round_trip_exactly(tmp_path):
    ds = _generate(tmp_path / "a", workers=3)
    assert len(ds) == 10 and len(ds.shards) == 3 and _shards(tmp_path / "a") == [
        "shard-00000.goenv-shard", "shard-00001.goenv-shard", "shard-00002.goenv-shard"]
    expected = [datasets.load("random-layered", seed=3 + i, **SMALL).to_bytes() for i in range(10)]
    assert [g.to_bytes() for g in ds] == expected
    assert [ds[i].to_bytes() for i in (7, 0, 9, -1)] == [expected[7], expected[0], expected[9], expected[9]]
    assert [g.to_bytes() for g in ds[2:6]] == expected[2:6]
    with pytest.raises(IndexError):
        ds[10]
    reopened = datasets.open(tmp_path / "a")
    assert (reopened.family, reopened.params, reopened.seed) == ("random-layered", SMALL, 3)
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["complete"] and manifest["count"] == 10 and manifest["shard_size"] == 4
    assert [s["count"] for s in manifest["shards"]] == [4, 4, 2]
    assert manifest["goenv_version"] == goenv.__version__
    single = _generate(tmp_path / "b", workers=1)  # same files whatever the thread count
    assert [s["sha256"] for s in single.shards] == [s["sha256"] for s in ds.shards]


def test_resume_rewrites_only_missing_or_corrupt_shards(tmp_path, monkeypatch):
    root = tmp_path / "ds"
    original = {s["file"]: s["sha256"] for s in _generate(root, count=16).shards}
    before = _stats(root)
    os.unlink(root / "shard-00001.goenv-shard")
    data = bytearray((root / "shard-00002.goenv-shard").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (root / "shard-00002.goenv-shard").write_bytes(bytes(data))
    written = []
    store = dataset_files.DATASET_FOLDER.store
    monkeypatch.setattr(dataset_files.DATASET_FOLDER, "store", lambda root, name, *args: (written.append(name),
                                                                                          store(root, name, *args))[1])
    ds = _generate(root, count=16)
    assert sorted(name for name in written if name.endswith(".goenv-shard")) == [
        "shard-00001.goenv-shard", "shard-00002.goenv-shard"]
    after = _stats(root)
    for kept in ("shard-00000.goenv-shard", "shard-00003.goenv-shard"):
        assert after[kept] == before[kept]
    assert after["shard-00002.goenv-shard"][0] != before["shard-00002.goenv-shard"][0]
    assert {s["file"]: s["sha256"] for s in ds.shards} == original
    ds.verify()


def test_a_corrupt_or_truncated_shard_raises_invalid_graph(tmp_path):
    root = tmp_path / "ds"
    _generate(root)
    path = root / "shard-00001.goenv-shard"
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01  # same size: found when the shard is read
    path.write_bytes(bytes(data))
    ds = datasets.open(root)
    assert ds[0].num_nodes > 0  # shard 0 is fine
    with pytest.raises(goenv.InvalidGraph, match="SHA-256"):
        ds[5]
    with pytest.raises(goenv.InvalidGraph):
        list(ds)
    with pytest.raises(goenv.InvalidGraph):
        ds.verify()
    path.write_bytes(bytes(data[:-10]))  # truncated: found on open
    with pytest.raises(goenv.InvalidGraph, match="truncated"):
        datasets.open(root)
    with pytest.raises(goenv.InvalidGraph, match="truncated"):
        dataset_files.unpack_shard(bytes(data[:-10]))


def test_an_interrupted_run_is_harmless_and_resumes(tmp_path):
    root = tmp_path / "ds"
    _generate(root)
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["shards"], manifest["complete"] = manifest["shards"][:1], False  # killed after shard 0
    (root / "manifest.json").write_text(json.dumps(manifest))
    os.unlink(root / "shard-00002.goenv-shard")
    (root / "shard-00001.goenv-shard").write_bytes(b"GOENVSHD partial")
    (root / ".shard-00002.goenv-shard.tmp-12345-deadbeef").write_bytes(b"half a shard")
    with pytest.raises(goenv.InvalidGraph, match="incomplete"):
        datasets.open(root)
    ds = _generate(root)
    assert not [name for name in os.listdir(root) if ".tmp-" in name]
    expected = [datasets.load("random-layered", seed=3 + i, **SMALL).to_bytes() for i in range(10)]
    assert [g.to_bytes() for g in ds] == expected


def test_a_run_that_fails_before_its_first_shard_leaves_nothing_that_refuses_the_corrected_one(tmp_path):
    # The builder finds the bad parameter after the manifest is written; it records no graph,
    # so the same folder takes the corrected command (before: "holds 2 graphs generated with
    # other parameters"). A folder with graphs is still refused.
    root = tmp_path / "ds"
    with pytest.raises(goenv.InvalidArgument, match="num_layers"):
        datasets.generate("random-layered", 2, root, params={"num_layers": -3}, progress=False)
    assert sorted(os.listdir(root)) == ["manifest.json"]
    assert len(datasets.generate("random-layered", 2, root, params=SMALL, progress=False)) == 2
    with pytest.raises(goenv.InvalidArgument, match="other parameters"):
        datasets.generate("random-layered", 2, root, params={"num_layers": -3}, progress=False)


def test_generate_names_a_family_or_params_of_the_wrong_type(tmp_path):
    with pytest.raises(goenv.InvalidArgument, match="family must be a graph family's name"):
        datasets.generate(5, 2, tmp_path / "a", progress=False)
    with pytest.raises(goenv.InvalidArgument, match="params must be a mapping"):
        datasets.generate("random-layered", 2, tmp_path / "b", params=[1, 2], progress=False)
    assert not os.path.exists(tmp_path / "a") and not os.path.exists(tmp_path / "b")  # checked first


def test_generate_refuses_a_directory_made_with_other_parameters(tmp_path):
    root = tmp_path / "ds"
    _generate(root)
    with pytest.raises(goenv.InvalidArgument, match="seed=3 there, 4 here"):
        _generate(root, seed=4)
    with pytest.raises(goenv.InvalidArgument, match="params"):
        _generate(root, params={"num_layers": 5, "width": 3})
    with pytest.raises(goenv.InvalidArgument, match="shard_size"):
        _generate(root, shard_size=5)
    before = {name: (root / name).read_bytes() for name in os.listdir(root)}
    with pytest.raises(goenv.InvalidArgument, match="count=10 there, 6 here.*nothing was changed"):
        _generate(root, count=6)  # fewer graphs would delete some: refused
    assert {name: (root / name).read_bytes() for name in os.listdir(root)} == before
    assert len(_generate(root, count=6, overwrite=True)) == 6  # asked for: replaced
    assert _shards(root) == ["shard-00000.goenv-shard", "shard-00001.goenv-shard"]
    assert len(_generate(root, count=6)) == 6  # the same arguments resume


def test_generate_draws_sizes_from_ranges(tmp_path):
    ds = _generate(tmp_path / "ranges", count=6, params={"num_layers": (2, 6), "width": 3})
    layers = [datasets.graph_params(ds.params, ds.seed, i, True)["num_layers"] for i in range(6)]
    assert set(layers) <= {2.0, 3.0, 4.0, 5.0, 6.0} and len(set(layers)) > 1
    assert ds.params["num_layers"] == [2.0, 6.0]
    for i in range(6):  # each graph is the family's graph with its drawn parameters
        assert ds[i].to_bytes() == datasets.load("random-layered", seed=3 + i, num_layers=layers[i],
                                                 width=3).to_bytes()
    with pytest.raises(goenv.InvalidArgument, match="low 5 > high 2"):
        _generate(tmp_path / "bad", params={"num_layers": (5, 2)})
    # A range the builder refuses at an end is named before anything is written (shards were
    # written, then a drawn 0 or 9.27721 failed, naming a value the user never gave).
    for bad, end in (((0, 6), "low"), ((4.5, 12), "low"), ((4, 12.5), "high"), ((2, 10**6), "high")):
        with pytest.raises(goenv.InvalidArgument, match=rf"num_layers=\({bad[0]}, {bad[1]}\) is refused at its {end} end"):
            _generate(tmp_path / "refused", params={"num_layers": bad})
        assert not (tmp_path / "refused").exists()


def test_dataset_info_and_verify_commands(tmp_path, capsys):
    from goenv import cli

    root = tmp_path / "ds"
    assert cli.main(["dataset", "generate", "random-layered", "--count", "4", "--out", str(root), "--param",
                     "num_layers=2:4", "--no-progress"]) == 0
    assert cli.main(["dataset", "info", str(root)]) == 0
    assert "4 graphs of random-layered (num_layers=2:4)" in capsys.readouterr().out
    assert cli.main(["dataset", "verify", str(root)]) == 0
    assert "all checksums and graphs valid" in capsys.readouterr().out
    shard = root / "shard-00000.goenv-shard"
    shard.write_bytes(shard.read_bytes()[:-3] + b"xyz")
    assert cli.main(["dataset", "verify", str(root)]) == 2
    assert cli.main(["dataset", "generate", "random-layered", "--count", "3", "--out", str(root),
                     "--no-progress"]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_verify_refuses_a_manifest_that_does_not_say_how_its_graphs_were_made(tmp_path, capsys):
    """Checksums vouch for the bytes, not for the manifest's family and params: verify rebuilds
    graph 0 from them (an edited family, an unknown one, a non-finite or changed parameter)."""
    from goenv import cli

    root = tmp_path / "ds"
    datasets.generate("random-layered", 4, root, params={"num_layers": (2, 5)}, shard_size=2, progress=False)
    manifest = json.loads((root / "manifest.json").read_text())
    for edit, message in (({"family": "random-series-parallel"}, "series-parallel' has no parameter(s) num_layers"),
                          ({"family": "random-series-parallel", "params": {}}, "graph 0 is not what family"),
                          ({"family": "nope-family"}, "does not say how its graphs were made"),
                          ({"params": {"num_layers": float("nan")}}, "must be finite"),
                          ({"params": {"num_layers": 3}}, "graph 0 is not what family"),
                          ({"seed": 7}, "graph 0 is not what family")):
        (root / "manifest.json").write_text(json.dumps({**manifest, **edit}))
        assert cli.main(["dataset", "verify", str(root)]) == 2
        assert message in capsys.readouterr().err
    # A dataset whose manifest is lost is rebuilt from its shards, ranges of parameters too.
    (root / "manifest.json").unlink()
    shards = {p.name: p.read_bytes() for p in root.glob("shard-*")}
    ds = datasets.generate("random-layered", 4, root, params={"num_layers": (2, 5)}, shard_size=2, progress=False)
    assert {p.name: p.read_bytes() for p in root.glob("shard-*")} == shards
    ds.verify()


def test_generate_checks_its_arguments(tmp_path):
    with pytest.raises(goenv.NotFound):
        datasets.generate("no-such-family", 2, tmp_path / "a", progress=False)
    with pytest.raises(goenv.InvalidArgument, match="no parameter"):
        datasets.generate("random-layered", 2, tmp_path / "a", params={"depth": 3}, progress=False)
    with pytest.raises(goenv.InvalidArgument, match="seed="):
        datasets.generate("random-layered", 2, tmp_path / "a", params={"seed": 3}, progress=False)
    with pytest.raises(goenv.InvalidArgument, match="count"):
        datasets.generate("random-layered", 0, tmp_path / "a", progress=False)
    with pytest.warns(UserWarning, match="identical"):
        ds = datasets.generate("transformer-xl-2", 2, tmp_path / "b", progress=False)
    assert ds[0].to_bytes() == ds[1].to_bytes()


def test_generate_main_command_line(tmp_path, capsys):
    root = tmp_path / "cli"
    argv = ["random-layered", "--count", "5", "--out", str(root), "--shard-size", "2", "--seed", "7",
            "--param", "num_layers=3", "--param", "width=2", "--no-progress"]
    assert datasets.generate_main(argv) == 0
    assert "5 graphs of random-layered in 3 shards" in capsys.readouterr().out
    assert datasets.open(root)[4].to_bytes() == datasets.load("random-layered", seed=11, num_layers=3,
                                                              width=2).to_bytes()
    assert datasets.generate_main(argv[:-3] + ["--param", "layers=x", "--no-progress"]) == 2
    assert "goenv: error:" in capsys.readouterr().err


def test_to_pyg_without_torch_geometric_raises_a_clear_import_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch_geometric", None)
    monkeypatch.setitem(sys.modules, "torch_geometric.data", None)
    with pytest.raises(ImportError, match="pip install torch_geometric"):
        datasets.to_pyg(datasets.load("random-layered", **SMALL))


def test_to_pyg_fills_a_pyg_data_object(monkeypatch):
    class Data:  # the stand-in for torch_geometric.data.Data: keeps its keyword arguments
        def __init__(self, **fields):
            self.__dict__.update(fields)

    package, module = types.ModuleType("torch_geometric"), types.ModuleType("torch_geometric.data")
    module.Data, package.data = Data, module
    monkeypatch.setitem(sys.modules, "torch_geometric", package)
    monkeypatch.setitem(sys.modules, "torch_geometric.data", module)
    graph = datasets.load("random-layered", **SMALL)
    data = datasets.to_pyg(graph)
    env = goenv.GraphEnv.from_graph("placement", graph, "1xgpu")
    observation, _ = env.reset(seed=0)
    assert data.num_nodes == graph.num_nodes and data.name == graph.name
    assert data.x.dtype == torch.float32 and np.array_equal(data.x.numpy(), observation["node_features"])
    assert np.array_equal(data.edge_index.numpy(), graph.edge_index)
    assert np.array_equal(data.edge_attr.numpy(), observation["edge_features"])
    assert np.array_equal(data.flops.numpy(), graph.flops)
    assert np.array_equal(data.op_type.numpy(), graph.op_types)


@pytest.mark.parametrize("switch_after", [1, 2, 3])
def test_a_cached_shard_is_read_whole_whatever_another_thread_caches_meanwhile(tmp_path, switch_after):
    """The labeller reads one Dataset from two threads: a read that finds its shard cached
    must return that shard's graphs even if another thread caches another shard between two
    steps of the read (the cache was read three times: the check and the blobs returned could
    belong to two shards). Here the other thread caches shard 2 right after the
    `switch_after`-th look at the cache of a read."""
    ds = _generate(tmp_path / "a")
    expected = [g.to_bytes() for g in ds]
    blobs_of_2 = dataset_files.Dataset(tmp_path / "a")._shard_graph_bytes(2)
    Switching, looks = cache_switching(dataset_files.Dataset, (2, blobs_of_2), switch_after)

    switching = Switching(tmp_path / "a")
    assert switching[0].to_bytes() == expected[0]  # caches shard 0
    looks[0] = 0
    assert switching[1].to_bytes() == expected[1]  # shard 0 again, found cached
