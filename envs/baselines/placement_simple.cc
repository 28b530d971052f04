// Placements without search: TensorFlow's single-device default, round-robin
// over devices in topological order, and the human expert's layer split
// (Mirhoseini et al., "Device Placement Optimization with Reinforcement
// Learning", ICML 2017, use all three as their baselines).
#include "envs/baselines/baseline.h"
#include "envs/placement_heuristics.h"

namespace goenv {
namespace {

Solution round_robin(Problem& p) {
  std::vector<std::int32_t> placement(p.graph().num_nodes());
  int i = 0;
  for (NodeId v : p.graph().topological_order()) placement[v] = i++ % p.cluster().num_devices();
  return with_placement(p, std::move(placement));
}

}  // namespace
}  // namespace goenv

GOENV_REGISTER_BASELINE(kSingleRegistered,
                        {/*name=*/"single",
                         /*heads=*/{goenv::Head::kPlacement},
                         /*description=*/"everything on device 0 (TensorFlow's default)",
                         /*solve=*/[](goenv::Problem& p) {
                           return goenv::with_placement(p, goenv::single_device_placement(p.graph(), 0));
                         }})
GOENV_REGISTER_BASELINE(kRoundRobinRegistered,
                        {/*name=*/"round-robin",
                         /*heads=*/{goenv::Head::kPlacement},
                         /*description=*/"i-th op in topological order on device i mod D",
                         /*solve=*/goenv::round_robin})
GOENV_REGISTER_BASELINE(kExpertRegistered,
                        {/*name=*/"expert",
                         /*heads=*/{goenv::Head::kPlacement},
                         /*description=*/"layer groups cut into contiguous runs of balanced compute",
                         /*solve=*/[](goenv::Problem& p) {
                           return goenv::with_placement(p, goenv::expert_placement(p.graph(), p.cluster()));
                         }})
