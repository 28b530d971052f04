"""The zoo's lineage split: every model type of the pinned library belongs to a lineage (the
architecture it derives from: llama-like decoders, bert-like encoders, vit-like vision
encoders, ...) and each lineage to one split, train, validation or test. A lineage is wholly
on one side, so a method tested on the test split has never trained on a relative.

    goenv.datasets.suite("zoo")          # {"train": [ZooEntry, ...], "validation": [...], "test": [...]}
    lineage("mistral"), split("mistral") # "llama", "train"
    python -m goenv.datasets.zoo.lineages --write   # derive the list again from the installed transformers

The list is data (lineages.json beside this file), derived from transformers' own evidence and
reviewed: a model folder's modular_*.py imports the classes it reuses from the model it derives
from (`from ..llama.modeling_llama import LlamaAttention`), and its modeling_*.py marks copied
code (`# Copied from transformers.models.bert.modeling_bert.BertSelfOutput`). Each folder's
parent is the folder it takes the most from (3 points per name a modular file imports, 1 per
"Copied from" line; at least 6 points) among the folders of its own modality, or of any
modality when either is multimodal (a multimodal model contains its text decoder or vision
encoder, a text model cut from a multimodal one is that model's part, while a speech encoder
that borrows llama's rotary embedding is not llama-like); without one it is a root. A
lineage is the root its parents lead to, named after it; REVIEWED sets a folder's parent where
the evidence misleads (each with its reason). Splits are then drawn deterministically: lineages
of more than 5% of the types go to train, one lineage of each modality to test and to
validation, and the rest, in the order of their names' SHA-256, to whichever split is furthest
below 70 / 15 / 15% of the types.

A model type the list does not hold (one new in a later transformers release) raises
goenv.NotFound: it never lands in a split silently.
"""

from __future__ import annotations

import argparse
import builtins
import collections
import functools
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from goenv._core import InvalidArgument, InvalidGraph, NotFound

__all__ = ["SPLITS", "ZooEntry", "derive", "lineage", "lineages", "representatives", "split", "splits", "suite"]

SPLITS = ("train", "validation", "test")
TARGET_SHARES = {"train": 0.70, "validation": 0.15, "test": 0.15}
BIG_LINEAGE_SHARE = 0.05  # lineages larger than this share of the types always train
MODULAR_POINTS, COPIED_POINTS, PARENT_MIN_POINTS = 3, 1, 6
LINEAGES_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lineages.json")
# One committed list per library; transformers' keeps its first name.
LINEAGES_FILES = {"transformers": LINEAGES_FILE,
                  "diffusers": os.path.join(os.path.dirname(LINEAGES_FILE), "lineages_diffusers.json")}
ZOO_CLUSTER = "2xgpu-nvlink"  # where a zoo graph runs unless told otherwise (as for imported graph files)

# Where transformers' evidence misleads: model folder -> (its parent folder, why). Applied by
# derive() before lineages are followed, so a folder's descendants move with it.
REVIEWED: dict[str, tuple[str, str]] = {
    "paligemma": ("gemma", "a siglip tower before a gemma decoder built through AutoModel, so no import names gemma"),
    "aya_vision": ("llava", "llava's layout (vision tower, projector, AutoModel language model), no copied code"),
    "internlm3": ("llama", "a llama decoder: 3 blocks copied from llama, under the 6-point bar"),
    "higgs_audio_v2": ("llama", "a llama decoder over audio tokens (6 llama classes imported), though audio"),
    "siglip": ("clip", "clip's dual encoder with a sigmoid loss: 5 blocks copied from clip, under the 6-point bar"),
}


# ---------------------------------------------------------------------------
# The committed list.

@functools.lru_cache(maxsize=None)
def _load(path: str = LINEAGES_FILE) -> dict:
    with open(path, encoding="utf-8") as file:
        data = json.load(file)
    if not isinstance(data, dict) or not isinstance(data.get("types"), dict) or not isinstance(data.get("splits"),
                                                                                               dict):
        raise InvalidGraph(f"{path}: not a lineage list (types, splits)")
    for model_type, entry in data["types"].items():
        if data["splits"].get(entry.get("lineage")) not in SPLITS:
            raise InvalidGraph(f"{path}: model type {model_type!r} has lineage {entry.get('lineage')!r}, which has "
                               f"no split")
    return data


def _committed(library: str) -> dict:
    if library not in LINEAGES_FILES:
        raise NotFound(f"the zoo has no lineage split for {library!r}; libraries: {', '.join(LINEAGES_FILES)}")
    data = _load(LINEAGES_FILES[library])
    if library != data["library"]:
        raise NotFound(f"the zoo's lineage split covers {data['library']} {data['library_version']}, not "
                       f"{library!r}")
    return data


def _entry(model_type: str, library: str) -> dict:
    data = _committed(library)
    entry = data["types"].get(model_type)
    if entry is None:
        raise NotFound(f"{library} model type {model_type!r} is not in the zoo's lineage list (made from "
                       f"{library} {data['library_version']}): a type new to another release gets a lineage and "
                       f"a split only when the list is derived again and reviewed (python -m "
                       f"goenv.datasets.zoo.lineages --library {library} --write)")
    return entry


def lineage(model_type: str, library: str = "transformers") -> str:
    """The lineage of a model type (the root model it derives from, e.g. "mistral" -> "llama")."""
    return _entry(model_type, library)["lineage"]


def split(model_type: str, library: str = "transformers") -> str:
    """"train", "validation" or "test": the split of the model type's lineage."""
    data = _committed(library)
    return data["splits"][_entry(model_type, library)["lineage"]]


def lineages(library: str = "transformers") -> dict[str, list[str]]:
    """{lineage: its model types (sorted)}."""
    members: dict[str, list[str]] = collections.defaultdict(list)
    for model_type, entry in sorted(_committed(library)["types"].items()):
        members[entry["lineage"]].append(model_type)
    return dict(sorted(members.items()))


def representatives(library: str = "transformers") -> list[str]:
    """One model type per lineage (sorted): the first, by name, of the types of the lineage's
    root folder (llama's "llama", parakeet's "parakeet_ctc"), or of its members when none is."""
    types = _committed(library)["types"]
    return sorted(min(members, key=lambda t: (types[t]["folder"] != name, t))
                  for name, members in lineages(library).items())


def splits(library: str = "transformers") -> dict[str, list[str]]:
    """{"train": model types, "validation": ..., "test": ...}, each sorted."""
    data = _committed(library)
    chosen: dict[str, list[str]] = {name: [] for name in SPLITS}
    for model_type, entry in sorted(data["types"].items()):
        chosen[data["splits"][entry["lineage"]]].append(model_type)
    return chosen


# ---------------------------------------------------------------------------
# The suite.

@dataclass(frozen=True)
class ZooEntry:
    """One model type of the zoo at one size: builds its training graph on demand (offline, in a
    limited child process; see goenv.datasets.zoo.build).

    entry.build() -> ZooResult (never raises for a model that fails to import), entry.load() ->
    the goenv.Graph (InvalidGraph naming the failed stage), entry.make("placement") -> an env on
    the graph. `graph`, `params` and `cluster` are what a suite entry gives for labelling:
    "transformers/bert", no builder parameters, the cluster the graph runs on.
    dataclasses.replace(entry, size="small") is the same model type at another size."""

    model_type: str
    lineage: str
    split: str
    size: str = "tiny"
    library: str = "transformers"
    cluster: str = ZOO_CLUSTER

    @property
    def graph(self) -> str:
        return f"{self.library}/{self.model_type}"

    @property
    def params(self) -> dict:
        return {}

    @property
    def label(self) -> str:
        return f"{self.graph}[{self.size}] on {self.cluster}"

    def build(self, **limits: Any):
        """goenv.datasets.zoo.build(model_type, size, library=..., **limits)."""
        from goenv.datasets import zoo

        return zoo.build(self.model_type, self.size, library=self.library, **limits)

    def load(self, **limits: Any):
        """The imported graph; InvalidGraph naming the stage and reason when the build fails."""
        result = self.build(**limits)
        if not result.ok:
            raise InvalidGraph(f"zoo model {self.graph} ({self.size}) did not import: {result.stage}: {result.reason}")
        return result.graph()

    def make(self, task: str = "placement", **options: Any):
        """goenv.make(task, graph=self.load(), cluster=self.cluster, **options)."""
        from goenv.envs import make

        return make(task, graph=self.load(), **{"cluster": self.cluster, **options})


def suite(library: str = "transformers", builder=None) -> dict[str, builtins.list[ZooEntry]]:
    """{"train", "validation", "test"}: one ZooEntry (size "tiny") per model type of the pinned
    library, split by lineage. NotFound when the installed library has model types the committed
    list lacks (another release), naming them."""
    if builder is None:
        from goenv.datasets import zoo as builder
    data = _committed(library)
    installed = str(builder.LIBRARIES.get(library))
    missing = sorted(set(builder.model_types(library)) - set(data["types"]))
    if missing:
        raise NotFound(f"{len(missing)} {library} model types are not in the zoo's lineage list (made from {library} "
                       f"{data['library_version']}; {installed} is pinned): {', '.join(missing[:20])}"
                       f"{', ...' if len(missing) > 20 else ''}. Derive it again and review it: python -m "
                       f"goenv.datasets.zoo.lineages --library {library} --write")
    return {name: [ZooEntry(t, lineage(t, library), name, library=library) for t in types]
            for name, types in splits(library).items()}


# ---------------------------------------------------------------------------
# Deriving the list from transformers' source.

_MODULAR_IMPORT = re.compile(r"^from (?:\.\.|transformers\.models\.)(\w+)\.(\w+) import (\(([^)]*)\)|([^\n]+))",
                             re.MULTILINE)
_COPIED = re.compile(r"Copied from transformers\.models\.(\w+)\.")


def _folder_points(models_root: str, folder: str) -> dict:
    """transformers' evidence of `folder` ("xlm_roberta"): points per other model folder."""
    path = os.path.join(models_root, *folder.split("."))
    points = _folder_evidence(path) if os.path.isdir(path) else collections.Counter()
    return {name: n for name, n in points.items() if os.path.isdir(os.path.join(models_root, name))}


_RELATIVE_IMPORT = re.compile(r"^from (\.+)([\w.]*) import (\(([^)]*)\)|([^\n]+))", re.MULTILINE)
_DIFFUSERS_COPIED = re.compile(r"Copied from diffusers\.models\.([\w.]+)")


def module_points(models_root: str, modules: set[str], module: str) -> dict:
    """diffusers' evidence of `module` ("controlnets.controlnet_flux"): 3 points per name its
    file imports from another model module, 1 per "Copied from" line naming one."""
    path = os.path.join(models_root, *module.split(".")) + ".py"
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as file:
        text = file.read()
    package = module.split(".")[:-1]
    points: collections.Counter = collections.Counter()
    for match in _RELATIVE_IMPORT.finditer(text):
        up = len(match.group(1)) - 1
        base = package[:len(package) - up] if up <= len(package) else None
        source = ".".join((base or []) + [p for p in match.group(2).split(".") if p])
        if base is not None and source in modules:
            names = [n for n in re.split(r"[\s,]+", match.group(4) or match.group(5) or "") if n and not n.startswith("#")]
            points[source] += MODULAR_POINTS * len(names)
    for match in _DIFFUSERS_COPIED.finditer(text):
        parts = match.group(1).split(".")
        source = next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in modules), None)
        if source is not None:
            points[source] += COPIED_POINTS
    points.pop(module, None)
    return dict(points)


def _folder_evidence(folder: str) -> collections.Counter:
    """Points per other model folder: what the folder's modular and modeling files take from it."""
    points: collections.Counter = collections.Counter()
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8") as file:
            text = file.read()
        if name.startswith("modular_"):
            for match in _MODULAR_IMPORT.finditer(text):
                names = [n for n in re.split(r"[\s,]+", match.group(4) or match.group(5) or "") if
                         n and not n.startswith("#")]
                points[match.group(1)] += MODULAR_POINTS * len(names)
        elif name.startswith("modeling_"):
            for match in _COPIED.finditer(text):
                points[match.group(1)] += COPIED_POINTS
    points.pop(os.path.basename(folder), None)
    points.pop("auto", None)
    return points


def _stable_order(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def _assign_splits(members: dict[str, list[str]], modality_of: dict[str, str]) -> dict[str, str]:
    """Each lineage's split (the rule in the module's docstring)."""
    total = sum(len(types) for types in members.values())
    chosen: dict[str, str] = {}
    for name, types in members.items():
        if len(types) > BIG_LINEAGE_SHARE * total:
            chosen[name] = "train"
    modalities = sorted({modality_of[t] for types in members.values() for t in types})
    for split_name in ("test", "validation"):
        for modality in modalities:
            if any(modality_of[t] == modality for name, s in chosen.items() if s == split_name for t in members[name]):
                continue
            candidates = sorted((name for name in members if name not in chosen
                                 and any(modality_of[t] == modality for t in members[name])), key=_stable_order)
            if candidates:
                chosen[candidates[0]] = split_name
    counts = collections.Counter()
    for name, split_name in chosen.items():
        counts[split_name] += len(members[name])
    for name in sorted((n for n in members if n not in chosen), key=_stable_order):
        split_name = max(SPLITS, key=lambda s: (TARGET_SHARES[s] * total - counts[s], -SPLITS.index(s)))
        chosen[name] = split_name
        counts[split_name] += len(members[name])
    return dict(sorted(chosen.items()))


def derive(model_types: Sequence[str], modality: Callable[[str], str], folder_of: Callable[[str], str],
           models_root: str, reviewed: dict[str, tuple[str, str]] | None = None,
           points_of: Callable[[str], dict] | None = None) -> dict:
    """The lineage list of `model_types`: each type's folder (folder_of, e.g. "xlm_roberta"),
    its parent folder by the evidence under `models_root` (transformers/models; `points_of`
    gives a folder's points per other folder, transformers' rule by default), its lineage and
    each lineage's split. A `reviewed` parent (default REVIEWED) wins over the evidence."""
    reviewed = REVIEWED if reviewed is None else reviewed
    points_of = points_of or functools.partial(_folder_points, models_root)
    folders = {t: folder_of(t) for t in model_types}
    stale = sorted((set(reviewed) | {parent for parent, _ in reviewed.values()}) - set(folders.values()))
    if stale:
        raise InvalidArgument(f"REVIEWED names model folders this release lacks: {', '.join(stale)}")
    modality_of = {t: modality(t) for t in model_types}
    folder_modality = {}
    for model_type in sorted(model_types, key=lambda t: (t.replace("-", "_") != folders[t].split(".")[-1], t)):
        folder_modality.setdefault(folders[model_type].split(".")[-1], modality_of[model_type])
    parents: dict[str, str | None] = {}
    evidence: dict[str, dict] = {}
    for folder in sorted(set(folders.values())):
        known = points_of(folder)
        mine = folder_modality[folder.split(".")[-1]]
        related = {name: n for name, n in known.items()
                   if folder_modality.get(name.split(".")[-1]) == mine
                   or "multimodal" in (mine, folder_modality.get(name.split(".")[-1]))}
        best = max(sorted(related), key=lambda name: related[name], default=None)
        parents[folder] = best if best is not None and related[best] >= PARENT_MIN_POINTS else None
        evidence[folder] = dict(collections.Counter(known).most_common(3))
    for folder, (parent, _) in reviewed.items():
        parents[folder] = parent

    def root_of(folder: str) -> str:
        path = [folder]
        while parents.get(path[-1]) is not None and parents[path[-1]] not in path:
            path.append(parents[path[-1]])
        nxt = parents.get(path[-1])
        if nxt is not None and nxt in path:  # a cycle: its alphabetically first member is the root
            return min(path[path.index(nxt):])
        return path[-1]

    types = {}
    for model_type in sorted(model_types):
        folder = folders[model_type]
        entry = {"lineage": root_of(folder).split(".")[-1], "folder": folder,
                 "derived_from": parents[folder], "evidence": evidence[folder]}
        if folder in reviewed:
            entry["reviewed"] = reviewed[folder][1]
        types[model_type] = entry
    members: dict[str, list[str]] = collections.defaultdict(list)
    for model_type, entry in types.items():
        members[entry["lineage"]].append(model_type)
    for model_type, entry in types.items():
        entry["modality"] = modality_of[model_type]
    return {"types": types, "splits": _assign_splits(dict(members), modality_of)}


def _derive_installed(builder, library: str = "transformers") -> dict:
    """derive() over the zoo's model types of `library`, from its installed release."""
    import importlib

    module = importlib.import_module(library)
    if module.__version__ != builder.LIBRARIES[library]:
        raise InvalidArgument(f"{library} {module.__version__} is installed, the zoo pins "
                              f"{builder.LIBRARIES[library]}: derive the list from the pinned release")
    types = builder.model_types(library)
    models_root = os.path.join(os.path.dirname(module.__file__), "models")
    if library == "diffusers":
        from goenv.datasets.zoo.diffusers_models import module_of

        modules = {module_of(t) for t in types}
        derived = derive(types, lambda t: builder.modality(t, library=library), module_of, models_root, reviewed={},
                         points_of=functools.partial(module_points, models_root, modules))
    else:
        from transformers.models.auto.configuration_auto import model_type_to_module_name

        derived = derive(types, lambda t: builder.modality(t, library=library), model_type_to_module_name,
                         models_root)
    return {"library": library, "library_version": module.__version__,
            "made_by": f"python -m goenv.datasets.zoo.lineages --library {library} --write", **derived}


def describe(data: dict) -> str:
    """Type and lineage counts per split, and per modality in each split."""
    totals = collections.Counter()
    lines = []
    members: dict[str, list[str]] = collections.defaultdict(list)
    for model_type, entry in data["types"].items():
        members[entry["lineage"]].append(model_type)
    for split_name in SPLITS:
        names = [n for n, s in data["splits"].items() if s == split_name]
        types = [t for n in names for t in members[n]]
        totals[split_name] = len(types)
        by_modality = collections.Counter(data["types"][t]["modality"] for t in types)
        lines.append(f"{split_name}: {len(types)} types ({len(types) / max(1, len(data['types'])):.0%}) in "
                     f"{len(names)} lineages; " + ", ".join(f"{m} {n}" for m, n in sorted(by_modality.items())))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m goenv.datasets.zoo.lineages",
                                     description="Derive the zoo's lineage split from the installed library.")
    parser.add_argument("--library", default="transformers", choices=sorted(LINEAGES_FILES),
                        help="model library (default: %(default)s)")
    parser.add_argument("--write", action="store_true", help="write the library's committed list (default: only print)")
    args = parser.parse_args(argv)
    from goenv.datasets import zoo

    data = _derive_installed(zoo, args.library)
    print(describe(data))
    if args.write:
        from goenv.files import write_atomic

        path = LINEAGES_FILES[args.library]
        write_atomic(path, (json.dumps(data, indent=1, sort_keys=False) + "\n").encode(), "lineage list")
        _load.cache_clear()
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
