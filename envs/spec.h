// The env's options and info keys, declared once: the options of goenv.make (what each sets
// in EnvConfig), and what `reset` and `step` report, when, and how a vector env reports each.
// The bindings parse and write exactly these, Python derives its lists from them, and the
// docs' reference tables are printed from them (docs/environments.md, "Options" and "Info").
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

}  // namespace goenv
