// Priorities for the fixed placement: FIFO (TensorFlow's executor), critical
// path first (bottom level, the classic list-scheduling priority; Kwok & Ahmad,
// "Static Scheduling Algorithms for Allocating Directed Task Graphs to
// Multiprocessors", ACM Computing Surveys 1999), and HEFT's upward rank
// (Topcuoglu et al., IEEE TPDS 2002). Ranks are scaled onto [0, levels - 1].
#include "envs/baselines/baseline.h"

namespace goenv {

std::vector<double> critical_path_ranks(Problem& p, const std::vector<std::int32_t>& placement) {
  const Graph& g = p.graph();
  const CostTable& costs = p.costs();
  std::vector<double> compute(g.num_nodes()), communicate(g.num_edges());
  for (NodeId v = 0; v < g.num_nodes(); ++v) compute[v] = costs.cost(v, placement[v]);
  for (int e = 0; e < g.num_edges(); ++e)
    communicate[e] = costs.transfer(placement[g.edge_src()[e]], placement[g.edge_dst()[e]],
                                    static_cast<double>(g.edge_bytes()[e]));
  return bottom_levels(g, compute, communicate);
}

namespace {

Solution with_ranks(Problem& p, const std::vector<double>& ranks) {
  Solution s = p.start();
  s.priority = scale_priorities(ranks, p.levels(Head::kPriority));
  return s;
}

}  // namespace
}  // namespace goenv

GOENV_REGISTER_BASELINE(kFifoRegistered,
                        {/*name=*/"fifo",
                         /*heads=*/{goenv::Head::kPriority},
                         /*description=*/"all priorities equal: ready order (TensorFlow's executor)",
                         /*solve=*/[](goenv::Problem& p) {
                           goenv::Solution s = p.start();
                           s.priority.assign(s.priority.size(), 0.0);
                           return s;
                         }})
GOENV_REGISTER_BASELINE(kCriticalPathRegistered,
                        {/*name=*/"critical-path",
                         /*heads=*/{goenv::Head::kPriority},
                         /*description=*/"longest path to a sink first, on the assigned devices with transfers",
                         /*solve=*/[](goenv::Problem& p) {
                           return goenv::with_ranks(p, goenv::critical_path_ranks(p, p.start().placement));
                         }})
GOENV_REGISTER_BASELINE(kHeftRankRegistered,
                        {/*name=*/"heft-rank",
                         /*heads=*/{goenv::Head::kPriority},
                         /*description=*/"HEFT's upward rank (mean costs over the cluster) first",
                         /*solve=*/[](goenv::Problem& p) {
                           return goenv::with_ranks(p, goenv::upward_rank(p.graph(), p.costs()));
                         }})
