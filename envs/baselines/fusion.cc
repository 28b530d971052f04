// Fusion decisions without search: no fusion at all, and XLA's greedy
// producer-consumer pass (XLA instruction fusion: every elementwise and
// reduction op fuses into its producer when legal; core/fusion.h).
#include "core/fusion.h"
#include "envs/baselines/baseline.h"

GOENV_REGISTER_BASELINE(kNoFusionRegistered,
                        {/*name=*/"none",
                         /*heads=*/{goenv::Head::kFusion},
                         /*description=*/"no fusion: one kernel per op",
                         /*solve=*/[](goenv::Problem& p) {
                           goenv::Solution s = p.start();
                           s.fusion.assign(s.fusion.size(), 0);
                           return s;
                         }})
GOENV_REGISTER_BASELINE(kXlaFusionRegistered,
                        {/*name=*/"xla",
                         /*heads=*/{goenv::Head::kFusion},
                         /*description=*/"XLA-style greedy fusion of elementwise and reduction ops",
                         /*solve=*/[](goenv::Problem& p) {
                           goenv::Solution s = p.start();
                           s.fusion = goenv::xla_fusion_priorities(p.graph());
                           return s;
                         }})
