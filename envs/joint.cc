// Placement, scheduling and fusion decided together (GO's multi-task setting):
// ops on different devices never fuse, transfers delay consumers and reorder
// the schedule, fusion changes memory and launch overheads.
#include "envs/registry.h"

GOENV_REGISTER_TASK(kJointRegistered,
                    {/*name=*/"joint",
                     /*description=*/"choose device, priority and fusion priority for every op",
                     /*heads=*/{goenv::Head::kPlacement, goenv::Head::kPriority, goenv::Head::kFusion}})
