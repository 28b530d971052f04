// The env's options, info keys and observation arrays, declared once: the options of goenv.make
// (what each sets in EnvConfig), what `reset` and `step` report, when, and how a vector env
// reports each, and the arrays of the observation with their shapes and columns. The bindings
// parse and write exactly these, Python derives its lists and spaces from them, and the docs'
// reference tables are printed from them (docs/environments.md, "Observation", "Options", "Info").
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "envs/env.h"

namespace goenv {

// How an option is read and written back: a plain EnvConfig field, or one that names a preset,
// a start, or takes a rule's name or explicit values.
enum class OptionKind { kInt, kFloat, kText, kCluster, kPlacement, kPriority, kStart };

struct OptionField {
  const char* name;  // the keyword of goenv.make
  OptionKind kind;
  // The EnvConfig field a plain option sets (kInt, kFloat, kText; monostate otherwise).
  std::variant<std::monostate, int EnvConfig::*, double EnvConfig::*, std::string EnvConfig::*> member;
  const char* doc;
};

const std::vector<OptionField>& option_fields();
const OptionField* find_option(const std::string& name);  // nullptr: not an option (a graph parameter)
std::string option_names();                                // "cluster, horizon, ...", for messages
const char* option_type(OptionKind kind);                  // the Python value it takes, for the docs

enum class InfoKey {
  kRuntime, kInitialRuntime, kSpeedup, kLowerBound, kPeakMemory, kBytesMoved, kOom, kInvalid, kInvalidReason,
  kColocationMoved, kRejectedRuntime, kBestRuntime, kBest,
};

// When a key is in an env's info.
enum class Presence { kAlways, kRejected };

struct InfoField {
  InfoKey key;
  const char* name;
  const char* type;    // the Python value of one env: "float", "int", "bool", "str", "ndarray", "dict"
  Presence presence;
  const char* doc;
  // A vector env's value for its B envs, with Gymnasium's "_name" mask of the envs that report
  // it; nullptr where a vector env does not report the key, and `vector_note` says why.
  const char* vector_shape;
  const char* vector_note;
};

const std::vector<InfoField>& info_fields();
const char* presence_name(Presence presence);

// In the order observation_fields() lists them (observation_name indexes the table by it).
enum class ObservationKey {
  kNodeFeatures, kEdgeIndex, kEdgeFeatures, kNodeState, kActionMask, kGlobals, kDeviceFeatures, kDeviceState,
};

// The values an array holds: any float, 0 or 1, or a node's index (edges' endpoints).
enum class ValueRange { kReal, kBinary, kNodeIndex };

struct ObservationField {
  ObservationKey key;
  const char* name;
  const char* dtype;  // numpy's name of its element type
  // One env's shape: "N" nodes, "E" edges, a number, or the name of a width every env reports
  // (node_feature_dim, num_devices, ...).
  std::vector<const char*> dims;
  bool per_env;    // one block per env in a batch of concatenated graphs (not one row per node or edge)
  bool is_static;  // fixed by the graph and cluster: built once, read-only
  ValueRange range;
  int since_version;                               // the first observation version that has it
  const std::vector<std::string>& (*columns)();   // the names of its last axis, or nullptr
  const char* doc;
};

const std::vector<ObservationField>& observation_fields();
const char* observation_name(ObservationKey key);
const char* range_name(ValueRange range);

}  // namespace goenv
