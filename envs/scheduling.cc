// Operation scheduling (GO, Zhou et al. 2020; cf. Paliwal et al. 2020): choose a
// priority per op; each device runs its ready ops highest priority first. The
// placement is fixed (the expert split by default; config "placement" picks another).
#include "envs/registry.h"

GOENV_REGISTER_TASK(kSchedulingRegistered,
                    {/*name=*/"scheduling",
                     /*description=*/"choose a priority for every op under a fixed placement",
                     /*heads=*/{goenv::Head::kPriority},
                     /*default_placement=*/"expert"})
