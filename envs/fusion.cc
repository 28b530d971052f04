// Operation fusion (GO, Zhou et al. 2020; XLA's greedy producer-consumer fusion
// as the default): choose a fusion priority per op (0 = keep it alone); a greedy
// pass merges ops into their producers' kernels by descending priority when legal.
// Everything runs on one device by default (config "placement" picks another).
#include "envs/registry.h"

GOENV_REGISTER_TASK(kFusionRegistered,
                    {/*name=*/"fusion",
                     /*description=*/"choose a fusion priority for every op on one device",
                     /*heads=*/{goenv::Head::kFusion},
                     /*default_placement=*/"single"})
