#include "datasets/registry.h"

#include <iomanip>

#include <cmath>

#include "core/error.h"
#include "core/suggest.h"

namespace goenv {

namespace {

std::map<std::string, GraphFamily>& families() {
  static std::map<std::string, GraphFamily> table;
  return table;
}

}  // namespace

void register_graph_family(GraphFamily family) {
  auto& table = families();
  const std::string name = family.name;
  GOENV_CHECK(!table.count(name), InvalidArgument, "graph family '" << name << "' registered twice");
  table.emplace(name, std::move(family));
}

const GraphFamily& graph_family(const std::string& name) {
  const auto& table = families();
  auto it = table.find(name);
  if (it == table.end()) {
    std::string known;
    for (const auto& [k, _] : table) known += (known.empty() ? "" : ", ") + k;
    GOENV_FAIL(NotFound, "unknown graph '" << name << "'; known graphs: " << known
                                           << did_you_mean(name, graph_family_names()));
  }
  return it->second;
}

bool graph_family_known(const std::string& name) { return families().count(name) > 0; }

std::vector<std::string> graph_family_names() {
  std::vector<std::string> names;
  for (const auto& [k, _] : families()) names.push_back(k);
  return names;
}

GraphPtr build_graph(const std::string& name, const GraphParams& overrides) {
  const GraphFamily& family = graph_family(name);
  GraphParams params = family.defaults;
  for (const auto& [key, value] : overrides) {
    if (!params.count(key)) {
      std::string known;
      for (const auto& [k, _] : family.defaults) known += (known.empty() ? "" : ", ") + k;
      GOENV_FAIL(InvalidArgument, "graph '" << name << "' has no parameter '" << key
                                            << "'; its parameters: " << (known.empty() ? "none" : known));
    }
    GOENV_CHECK(std::isfinite(value), InvalidArgument,
                "graph '" << name << "': parameter '" << key << "' must be finite, got " << value);
    params[key] = value;
  }
  return family.build(params);
}

int int_param(const GraphParams& params, const std::string& key, int lo, int hi) {
  auto it = params.find(key);
  GOENV_CHECK(it != params.end(), InvalidArgument, "missing parameter '" << key << "'");
  const double x = it->second;
  GOENV_CHECK(x == std::floor(x) && x >= lo && x <= hi, InvalidArgument,
              "parameter '" << key << "' must be an integer in [" << lo << ", " << hi << "], got "
                            << std::setprecision(17) << x);  // 2147483648, not 2.14748e+09
  return static_cast<int>(x);
}

}  // namespace goenv
