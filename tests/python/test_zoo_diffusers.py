"""The zoo's diffusers models (goenv.datasets.zoo.diffusers_models): the classes tried, configs
shrunk so the class still builds, inputs from the forward signature, builds in a child, the
lineage split and the published report's own files."""

from __future__ import annotations

import pytest

import goenv

diffusers = pytest.importorskip("diffusers")
from goenv.datasets import zoo  # noqa: E402
from goenv.datasets.zoo import diffusers_models, lineages, publish  # noqa: E402


def test_the_catalog_lists_every_model_class_with_a_modality():
    types = zoo.model_types("diffusers")
    assert types == sorted(types) and len(types) > 100
    assert {"UNet2DConditionModel", "AutoencoderKL", "FluxTransformer2DModel", "DiTTransformer2DModel"} <= set(types)
    assert "ModelMixin" not in types and "AutoModel" not in types
    assert zoo.LIBRARIES["diffusers"] == diffusers.__version__
    assert zoo.modality("UNet2DConditionModel", library="diffusers") == "vision"
    assert zoo.modality("AutoencoderOobleck", library="diffusers") == "audio"
    with pytest.raises(goenv.NotFound, match=r"diffusers==0\.42\.1 has no model type 'UNet2DModle'.*nearest: UNet2DModel"):
        zoo.build("UNet2DModle", library="diffusers")


@pytest.mark.parametrize("size", zoo.SIZES)
def test_shrunk_configs_keep_the_class_buildable(size):
    unet = diffusers_models.make_config("UNet2DConditionModel", size)
    assert unet["_class_name"] == "UNet2DConditionModel"
    assert max(unet["block_out_channels"]) <= 128 and len(unet["block_out_channels"]) == 4
    assert unet["layers_per_block"] == diffusers_models.BLOCKS_PER_LEVEL[size]
    assert unet["cross_attention_dim"] <= 128
    flux = diffusers_models.make_config("FluxTransformer2DModel", size)
    assert sum(flux["axes_dims_rope"]) == flux["attention_head_dim"]  # rotary axes cover a head exactly
    assert all(axis % 2 == 0 for axis in flux["axes_dims_rope"])
    assert flux["num_single_layers"] == (128 if size == "large" else min(38, 2 if size == "tiny" else 6))
    assert flux["joint_attention_dim"] <= 128
    for config in (unet, flux):
        assert diffusers_models._constructs(getattr(diffusers, config["_class_name"]),
                                            {k: v for k, v in config.items() if k != "_class_name"})


def test_unset_defaults_are_filled_only_where_the_class_needs_them():
    hunyuan = diffusers_models.make_config("HunyuanDiT2DModel", "tiny")  # in_channels=None by default
    assert hunyuan["in_channels"] == 4 and hunyuan["patch_size"] == 2
    wan = diffusers_models.make_config("AutoencoderKLWan", "tiny")  # patch_size=None is meaningful there
    assert wan["patch_size"] is None


def test_inputs_come_from_the_forward_signature_in_each_layout():
    import torch

    config = diffusers_models.make_config("FluxTransformer2DModel", "tiny")
    model = diffusers_models.make_model(config)
    maker = diffusers_models.InputMaker(torch, model, config, zoo.configs.SCALES["tiny"])
    candidates = maker.candidates()
    assert candidates[0][0] == "hidden_states@image"
    assert any(names[0] == "hidden_states@tokens" for names in candidates)
    tokens = maker.make(next(names for names in candidates if names[0] == "hidden_states@tokens"))
    assert tokens["hidden_states"].shape == (2, 64, 64)  # (batch, packed patches, in_channels)
    assert tokens["encoder_hidden_states"].shape[-1] == config["joint_attention_dim"]
    with pytest.raises(KeyError, match="not_an_input"):
        maker.make(["not_an_input@image"])


def test_a_diffusers_build_imports_a_training_graph_with_provenance():
    unet, flux = zoo.build_many([("UNet2DConditionModel", "tiny", "diffusers"),
                                 ("FluxTransformer2DModel", "tiny", "diffusers")], processes=2)
    for result in (unet, flux):
        assert result.ok, result.reason
        assert result.provenance["library"] == "diffusers"
        assert result.provenance["library_version"] == diffusers.__version__
        assert any(name.startswith("bwd/") for name in result.graph().names)  # a training step
    assert unet.num_nodes > 500
    again = zoo.build("UNet2DConditionModel", library="diffusers")
    assert again.graph_bytes == unet.graph_bytes and again.provenance["config_hash"] == unet.provenance["config_hash"]


def test_a_class_the_zoo_cannot_give_inputs_fails_with_its_reason():
    result = zoo.build("FluxMultiControlNetModel", library="diffusers")  # a list of ControlNets, not a model
    assert not result.ok and result.stage == "build" and "controlnets" in result.reason


def test_the_diffusers_split_covers_every_class_once_by_lineage():
    split = goenv.datasets.suite("zoo-diffusers")
    entries = [entry for side in split.values() for entry in side]
    assert sorted(e.model_type for e in entries) == zoo.model_types("diffusers")
    assert all(e.library == "diffusers" and e.graph == f"diffusers/{e.model_type}" for e in entries)
    sides: dict = {}
    for entry in entries:
        sides.setdefault(entry.lineage, set()).add(entry.split)
    assert all(len(s) == 1 for s in sides.values())
    assert lineages.lineage("FluxControlNetModel", "diffusers") == lineages.lineage("ControlNetModel", "diffusers")
    with pytest.raises(goenv.NotFound, match="lineage list"):
        lineages.lineage("NoSuchModel", "diffusers")


def test_the_committed_diffusers_list_is_what_the_installed_release_derives():
    derived = lineages._derive_installed(zoo, "diffusers")
    committed = lineages._load(lineages.LINEAGES_FILES["diffusers"])
    assert derived["types"] == committed["types"] and derived["splits"] == committed["splits"]


def test_module_evidence_counts_imports_and_copies_of_model_modules(tmp_path):
    (tmp_path / "transformers").mkdir()
    (tmp_path / "controlnets").mkdir()
    (tmp_path / "transformers" / "transformer_a.py").write_text("")
    (tmp_path / "controlnets" / "controlnet_a.py").write_text(
        "from ..transformers.transformer_a import (\n    BlockA,\n    EmbedA,\n)\n"
        "from ..attention import Attention\n"  # a shared building block, not a model module
        "# Copied from diffusers.models.transformers.transformer_a.TransformerA.forward\n")
    modules = {"transformers.transformer_a", "controlnets.controlnet_a"}
    points = lineages.module_points(str(tmp_path), modules, "controlnets.controlnet_a")
    assert points == {"transformers.transformer_a": 2 * lineages.MODULAR_POINTS + lineages.COPIED_POINTS}
    assert lineages.module_points(str(tmp_path), modules, "transformers.missing") == {}


def test_each_library_publishes_to_its_own_files_and_markers(tmp_path):
    begin, end = publish.markers("diffusers")
    assert begin == "<!-- zoo-coverage-diffusers:begin -->" and publish.markers() == (publish.BEGIN, publish.END)
    text = f"{publish.BEGIN}\nA\n{publish.END}\n{begin}\nB\n{end}\n"
    replaced = publish.replace_between_markers(text, "new", library="diffusers")
    assert "\nA\n" in replaced and "\nB\n" not in replaced and f"{begin}\nnew\n{end}" in replaced
    with pytest.raises(goenv.InvalidArgument, match="zoo-coverage-diffusers:begin"):
        publish.replace_between_markers(f"{publish.BEGIN}\n{publish.END}", "x", library="diffusers")


def test_the_docs_show_the_committed_diffusers_split():
    import pathlib

    data = lineages._load(lineages.LINEAGES_FILES["diffusers"])
    members = lineages.lineages("diffusers")
    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "zoo.md").read_text()
    for split_name in lineages.SPLITS:
        names = [n for n, s in data["splits"].items() if s == split_name]
        types = [t for n in names for t in members[n]]
        counts = [sum(data["types"][t]["modality"] == m for t in types) for m in ("vision", "audio", "other")]
        share = f"{len(types) / len(data['types']):.0%}"
        assert f"| {split_name} | {len(types)} ({share}) | {len(names)} | " + " | ".join(map(str, counts)) + " |" in page
