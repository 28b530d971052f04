// Operation fusion (GO, Zhou et al. 2020; XLA's greedy producer-consumer fusion
// as the default): choose a fusion priority per op (0 = keep it alone); a greedy
// pass merges ops into their producers' kernels by descending priority when legal.
// Everything runs on device 0 when it fits there, else on the expert placement (the
// compiler's default placement, docs/environments.md; config "placement" picks another).
#include "envs/registry.h"

GOENV_REGISTER_TASK(kFusionRegistered,
                    {/*name=*/"fusion",
                     /*description=*/"choose a fusion priority for every op (placement fixed: the default)",
                     /*heads=*/{goenv::Head::kFusion},
                     /*default_placement=*/"default"})
