// Device placement (Mirhoseini et al. 2017; Placeto, Addanki et al. 2019; GO,
// Zhou et al. 2020): choose a device for every op to minimize the step time.
#include "envs/registry.h"

GOENV_REGISTER_TASK(kPlacementRegistered,
                    {/*name=*/"placement",
                     /*description=*/"choose a device for every op",
                     /*heads=*/{goenv::Head::kPlacement}})
