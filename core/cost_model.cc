#include "core/cost_model.h"

namespace goenv {

std::vector<double> bytes_touched(const Graph& graph) {
  std::vector<double> touched(graph.num_nodes());
  for (NodeId v = 0; v < graph.num_nodes(); ++v)
    touched[v] = static_cast<double>(graph.output_bytes()[v]) + static_cast<double>(graph.param_bytes()[v]);
  for (int e = 0; e < graph.num_edges(); ++e)
    touched[graph.edge_dst()[e]] += static_cast<double>(graph.edge_bytes()[e]);
  return touched;
}

}  // namespace goenv
