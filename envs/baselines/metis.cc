// Graph-partitioning placement (Karypis & Kumar, "A Fast and High Quality
// Multilevel Scheme for Partitioning Irregular Graphs", SIAM J. Sci. Comput.
// 1998; the METIS baseline of Mirhoseini et al. 2017 and Placeto): one part per
// device, parts sized by device speed, cutting as few bytes as possible.
// Colocation groups are contracted into one vertex first, so they are never split.
#include <metis.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "envs/baselines/baseline.h"

namespace goenv {
namespace {

// METIS works in 32-bit integers: scale weights so each total stays near `total`.
idx_t scaled(double x, double sum, double total) {
  return static_cast<idx_t>(std::max(1.0, std::round(sum > 0 ? x / sum * total : 1.0)));
}

Solution metis(Problem& p) {
  const Graph& g = p.graph();
  const CostTable& costs = p.costs();
  const Units& units = p.units();
  const int num_units = units.size(), num_devices = p.cluster().num_devices();
  std::vector<idx_t> part(num_units, 0);
  if (num_units <= num_devices) {
    for (int u = 0; u < num_units; ++u) part[u] = u;
  } else if (num_devices > 1) {
    std::vector<double> work(num_units, 0.0);
    for (NodeId v = 0; v < g.num_nodes(); ++v) work[units.unit[v]] += costs.mean_cost(v);
    double total_work = 0;
    for (double w : work) total_work += w;
    std::vector<idx_t> vertex_weight(num_units);
    for (int u = 0; u < num_units; ++u) vertex_weight[u] = scaled(work[u], total_work, 1e7);

    // Undirected unit graph: both directions of every edge between units, merged.
    struct Arc {
      idx_t a, b;
      double bytes;
    };
    std::vector<Arc> arcs;
    for (int e = 0; e < g.num_edges(); ++e) {
      const idx_t a = units.unit[g.edge_src()[e]], b = units.unit[g.edge_dst()[e]];
      const auto bytes = static_cast<double>(g.edge_bytes()[e]);
      if (a != b) arcs.push_back({a, b, bytes}), arcs.push_back({b, a, bytes});
    }
    std::sort(arcs.begin(), arcs.end(), [](const Arc& x, const Arc& y) { return x.a != y.a ? x.a < y.a : x.b < y.b; });
    std::vector<idx_t> offsets(num_units + 1, 0), neighbors, edge_weight;
    std::vector<double> bytes;
    for (std::size_t i = 0; i < arcs.size(); ++i) {
      if (i > 0 && arcs[i].a == arcs[i - 1].a && arcs[i].b == arcs[i - 1].b) {
        bytes.back() += arcs[i].bytes;
        continue;
      }
      ++offsets[arcs[i].a + 1];
      neighbors.push_back(arcs[i].b);
      bytes.push_back(arcs[i].bytes);
    }
    for (int u = 0; u < num_units; ++u) offsets[u + 1] += offsets[u];
    double total_bytes = 0;
    for (double b : bytes) total_bytes += b;
    for (double b : bytes) edge_weight.push_back(scaled(b, total_bytes, 1e8));
    if (neighbors.empty()) neighbors.push_back(0), edge_weight.push_back(1);  // METIS wants non-null arrays

    const std::vector<double> shares = device_shares(g, costs);
    std::vector<real_t> target(shares.begin(), shares.end());
    idx_t num_vertices = num_units, constraints = 1, parts = num_devices, cut = 0;
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = static_cast<idx_t>(p.budget().seed % 2147483647u);
    // Recursive bisection is METIS's choice for few parts; k-way beyond.
    const auto partition = num_devices == 2 ? METIS_PartGraphRecursive : METIS_PartGraphKway;
    const int status = partition(&num_vertices, &constraints, offsets.data(), neighbors.data(), vertex_weight.data(),
                                 nullptr, edge_weight.data(), &parts, target.data(),
                                 nullptr, options, &cut, part.data());
    GOENV_CHECK(status == METIS_OK, Error, "METIS failed (status " << status << ") on graph '" << g.name() << "'");
  }
  std::vector<std::int32_t> placement(g.num_nodes());
  for (NodeId v = 0; v < g.num_nodes(); ++v) placement[v] = static_cast<std::int32_t>(part[units.unit[v]]);
  return with_placement(p, std::move(placement));
}

}  // namespace
}  // namespace goenv

GOENV_REGISTER_BASELINE(kMetisRegistered,
                        {/*name=*/"metis",
                         /*heads=*/{goenv::Head::kPlacement},
                         /*description=*/"METIS min-cut partition, parts sized by device speed",
                         /*solve=*/goenv::metis})
