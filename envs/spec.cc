#include "envs/spec.h"

#include "core/error.h"
#include "envs/observation.h"

namespace goenv {

const std::vector<OptionField>& option_fields() {
  using K = OptionKind;
  using C = EnvConfig;
  static const std::vector<OptionField> fields = {
      {"cluster", K::kCluster, {}, "a cluster preset's name (goenv.clusters) or a goenv.Cluster; empty = the graph "
                                   "family's default"},
      {"horizon", K::kInt, &C::horizon, "whole-graph decisions per episode"},
      {"decision_mode", K::kText, &C::decision_mode, "\"graph\" (one action decides every node) or \"node\" (one "
                                                    "node per step)"},
      {"invalid_penalty", K::kFloat, &C::invalid_penalty, "reward of an invalid decision"},
      {"priority_levels", K::kInt, &C::priority_levels, "choices of the priority head"},
      {"fusion_levels", K::kInt, &C::fusion_levels, "choices of the fusion head"},
      {"max_fusion_size", K::kInt, &C::max_fusion_size, "ops per fused kernel at most"},
      {"colocation", K::kText, &C::colocation,
       "\"follow\": a colocation group goes to the device most of its members chose, so every per-node "
       "placement is valid; \"strict\": a split group is an invalid decision"},
      {"placement", K::kPlacement, {},
       "initial placement: \"\" = the task's default, \"single\", \"expert\"; or an int array, one device per "
       "node (kept fixed when the task has no placement head)"},
      {"priority", K::kPriority, {}, "initial priorities: a float array, one per node (None = the default)"},
      {"observation_version", K::kInt, &C::observation_version,
       "the observation's version: 2 adds per-device arrays and slack"},
      {"start", K::kStart, {},
       "where every episode starts: \"default\" = the initial decisions above, or a baseline's name "
       "(\"best-heuristic\", \"heft\", ...)"},
  };
  return fields;
}

const OptionField* find_option(const std::string& name) {
  for (const OptionField& field : option_fields())
    if (name == field.name) return &field;
  return nullptr;
}

std::string option_names() {
  std::string names;
  for (const OptionField& field : option_fields()) names += (names.empty() ? "" : ", ") + std::string(field.name);
  return names;
}

const char* option_type(OptionKind kind) {
  switch (kind) {
    case OptionKind::kInt: return "int";
    case OptionKind::kFloat: return "float";
    case OptionKind::kText: return "str";
    case OptionKind::kCluster: return "str or Cluster";
    case OptionKind::kPlacement: return "str or int array";
    case OptionKind::kPriority: return "float array or None";
    case OptionKind::kStart: return "str";
  }
  return "";
}

const std::vector<InfoField>& info_fields() {
  using P = Presence;
  static const std::vector<InfoField> fields = {
      {InfoKey::kRuntime, "runtime", "float", P::kAlways,
       "simulated runtime of the decisions in force after the step, seconds", "(B,)", ""},
      {InfoKey::kInitialRuntime, "initial_runtime", "float", P::kAlways,
       "runtime of the episode's start (the compiler default unless `start` says otherwise)", "(B,)", ""},
      {InfoKey::kSpeedup, "speedup", "float", P::kAlways, "initial_runtime / runtime", "(B,)", ""},
      {InfoKey::kLowerBound, "lower_bound", "float", P::kAlways, "a runtime no decision of the task can beat",
       "(B,)", "read-only: fixed per env"},
      {InfoKey::kPeakMemory, "peak_memory", "ndarray", P::kAlways, "peak bytes per device of the decisions in force",
       "(B, devices)", ""},
      {InfoKey::kBytesMoved, "bytes_moved", "float", P::kAlways,
       "bytes sent between devices by the decisions in force", "(B,)", ""},
      {InfoKey::kOom, "oom", "bool", P::kAlways, "the step's decision ran out of device memory (and was rejected)",
       "(B,)", ""},
      {InfoKey::kInvalid, "invalid", "bool", P::kAlways, "the step's decision was rejected", "(B,)", ""},
      {InfoKey::kInvalidReason, "invalid_reason", "str", P::kAlways,
       "why the step's decision was rejected (\"\" when it was not)", "(B,) object", ""},
      {InfoKey::kColocationMoved, "colocation_moved", "int", P::kAlways,
       "nodes the \"follow\" colocation rule moved to keep their group on one device", "(B,)", ""},
      {InfoKey::kRejectedRuntime, "rejected_runtime", "float", P::kRejected,
       "the rejected decision's own simulated runtime", "(B,)", "its mask is `invalid`"},
      {InfoKey::kBestRuntime, "best_runtime", "float", P::kAlways, "runtime of the episode's best decisions",
       "(B,)", ""},
      {InfoKey::kBest, "best", "dict", P::kAlways, "the episode's best decisions, one array per head", nullptr,
       "copying every env's decisions each step would cost more than the step: `venv.best(i)` gives env i's"},
  };
  return fields;
}

const char* presence_name(Presence presence) {
  return presence == Presence::kAlways ? "always" : "only after a rejected decision";
}

const std::vector<ObservationField>& observation_fields() {
  using K = ObservationKey;
  using R = ValueRange;
  static const std::vector<ObservationField> fields = {
      {K::kNodeFeatures, "node_features", "float32", {"N", "node_feature_dim"}, false, true, R::kReal, 1,
       &node_feature_names, "per node: its op type (one-hot), log-scaled costs, depth and position, degrees, op "
                            "kind, colocation"},
      {K::kEdgeIndex, "edge_index", "int64", {"2", "E"}, false, true, R::kNodeIndex, 1, nullptr,
       "sources (row 0) and destinations (row 1) of the edges, PyG's layout"},
      {K::kEdgeFeatures, "edge_features", "float32", {"E", "edge_feature_dim"}, false, true, R::kReal, 1,
       &edge_feature_names, "per edge: log-scaled bytes, relative bytes, crossing a colocation group"},
      {K::kNodeState, "node_state", "float32", {"N", "node_state_dim"}, false, false, R::kReal, 1,
       []() -> const std::vector<std::string>& { return node_state_names(); },
       "per node: its current device (one-hot, num_devices columns), then the decisions and schedule in force"},
      {K::kActionMask, "action_mask", "int8", {"N", "action_mask_width"}, false, false, R::kBinary, 1, nullptr,
       "per node: 1 where a choice is allowed, each head's choices in turn"},
      {K::kGlobals, "globals", "float32", {"global_dim"}, true, false, R::kReal, 1, &global_names,
       "runtimes relative to the start, progress, the last reward and the decision's outcome"},
      {K::kDeviceFeatures, "device_features", "float32", {"num_devices", "device_feature_dim"}, true, true, R::kReal,
       2, &device_feature_names, "per device: its kind, log-scaled speed, bandwidth and memory, links"},
      {K::kDeviceState, "device_state", "float32", {"num_devices", "device_state_dim"}, true, false, R::kReal, 2,
       &device_state_names, "per device: busy and idle time, memory in use, nodes placed, over capacity"},
  };
  return fields;
}

const char* observation_name(ObservationKey key) {
  // The table lists the keys in their enum's order: a lookup on every step is an index.
  const auto index = static_cast<std::size_t>(key);
  const auto& fields = observation_fields();
  GOENV_CHECK(index < fields.size() && fields[index].key == key, Error,
              "observation key " << index << " is not in its place in the spec");
  return fields[index].name;
}

const char* range_name(ValueRange range) {
  switch (range) {
    case ValueRange::kReal: return "real";
    case ValueRange::kBinary: return "binary";
    case ValueRange::kNodeIndex: return "node index";
  }
  return "";
}

}  // namespace goenv
