// Graph families register themselves here (OpenSpiel-style): a static descriptor
// plus GOENV_REGISTER_GRAPH_FAMILY in the family's own .cc file. Env ids, the
// Python `goenv.datasets.list()` and the per-family tests all derive from this
// registry; nothing keeps a second list by hand.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/graph.h"

namespace goenv {

// Builder parameters by name (batch_size, seq_len, layers, seed, ...).
using GraphParams = std::map<std::string, double>;

struct GraphFamily {
  std::string name;             // "inception"; also the <graph> part of env ids
  std::string description;      // one line for tables
  std::string default_cluster;  // cluster preset used when an env does not name one
  GraphParams defaults;         // every accepted parameter with its default
  // Builds the graph from a complete parameter set (defaults already merged in).
  std::function<GraphPtr(const GraphParams&)> build;
};

void register_graph_family(GraphFamily family);
const GraphFamily& graph_family(const std::string& name);  // NotFound lists the known names
std::vector<std::string> graph_family_names();             // sorted
bool graph_family_known(const std::string& name);
// Merges `overrides` into the family's defaults (unknown keys raise
// InvalidArgument naming the accepted ones) and builds the graph.
GraphPtr build_graph(const std::string& name, const GraphParams& overrides = {});
// Reads an integer parameter, checking it is integral and within [lo, hi].
int int_param(const GraphParams& params, const std::string& key, int lo, int hi);

}  // namespace goenv

#define GOENV_REGISTER_GRAPH_FAMILY(variable, ...)                       \
  namespace {                                                            \
  const bool variable = (::goenv::register_graph_family(__VA_ARGS__), true); \
  }
