// PPO (Schulman et al., 2017) on the sampler's rollouts, read top to bottom
// like CleanRL's ppo.py: advantages (GAE(lambda) per env copy, normalized per
// graph) -> the clipped surrogate, value and entropy losses (plus the
// teacher's cross-entropy on imitated graphs) -> Adam steps over minibatches
// -> metrics. train() is set_envs, then collect and update in turn.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "agents/agent.h"
#include "agents/model.h"
#include "agents/sampler.h"

namespace goenv::agents::ppo {

// One PPO update (config.epochs passes) on rollouts of the sampler's graphs;
// advances the weight version. metrics.step and metrics.update count over the agent's life.
UpdateMetrics update(Model& model, const std::vector<GraphEntry>& graphs, const std::vector<Rollout>& rollouts);
// PPO on copies of `prototypes` for about `total_steps` env steps (whole updates).
void train(Model& model, Sampler& sampler, const std::vector<const Env*>& prototypes, std::int64_t total_steps,
           const std::function<bool(const UpdateMetrics&)>& callback);

}  // namespace goenv::agents::ppo
