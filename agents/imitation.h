// Imitation (DOPPLER-style warm start, ICLR 2026; GDP/GO pretraining): the
// teachers an agent copies, the cross-entropy toward their decisions (one term
// per decision unit, label-smoothed), DAgger for multi-step episodes, and
// self-imitation (Oh et al., ICML 2018) during PPO. See Agent's contract.
//
// Teachers:
//  * `method` is a baseline name or "best" ("best-heuristic"); an unknown name
//    raises InvalidArgument listing the choices.
//  * The decisions are stepped once on a fresh copy of the env; a teacher
//    that is infeasible there (OOM, split group, forbidden device) raises
//    InvalidArgument naming the graph, the reason and the other choices.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "agents/model.h"
#include "agents/sampler.h"
#include "envs/baselines/baseline.h"

namespace goenv::agents {

// Baseline names a teacher may be, sorted ("best" first).
std::vector<std::string> teacher_names(const Env& env);
// The baseline a teacher name runs: "best" is "best-heuristic", any other name itself.
std::string teacher_method(const std::string& name);
Teacher solve_teacher(const Env& env, const std::string& method, std::uint64_t seed);
// A baseline's solution as the env's actions (per head, (N,) values; priorities quantized to the env's levels).
std::vector<std::vector<std::int64_t>> solution_actions(const Env& env, const Solution& solution);

namespace imitation {

// Per head (1, D) targets on the device: the teacher's decisions per decision unit.
std::vector<torch::Tensor> targets(const GraphTensors& graph, const PolicySpec& spec, const Teacher& teacher,
                                   const torch::Device& device);
// Mean over decision units, observations and heads of the cross-entropy toward
// the teacher's choice; `smoothing` of the target mass is spread over the
// unit's other allowed choices. Masked logits (B, D, C) per head.
torch::Tensor cross_entropy(const std::vector<torch::Tensor>& logits, const std::vector<torch::Tensor>& targets,
                            double smoothing);
// The label smoothing that leaves about `flips` decision units of a sampled decision off the teacher's.
double smoothing_for(const std::vector<torch::Tensor>& targets, double flips);

// Refuses a null env and envs the model's spec does not fit (building the policy on first use).
void check_envs(Model& model, const std::vector<const Env*>& prototypes);
// How many graphs a supervised step learns on: config.graphs_per_update of `count` (0: all).
std::size_t graphs_per_step(const Model& model, std::size_t count);
// The end of a supervised step whose graphs' losses were backpropagated: clips and applies the
// gradient, advances the weight version, and reports the step's means over its `graphs`.
void finish_step(Model& model, std::int64_t step, double loss_sum, double accuracy_sum, std::size_t graphs,
                 std::chrono::steady_clock::time_point start, ImitationMetrics& metrics);

// A kept teacher read from a checkpoint, met with its graph: its decisions must
// fit the env (InvalidArgument otherwise), and its runtime and reward become the
// simulator's. One that is infeasible there is dropped.
void verify_teacher(Model& model, const Env& env, std::uint64_t key);
// Verifies the kept teachers of these envs (graphs[i] is prototypes[i]'s) and
// builds the targets of those that have none yet (loaded from a checkpoint).
void restore_teachers(Model& model, const std::vector<const Env*>& prototypes, const std::vector<GraphEntry>& graphs);
// Imitation warm start (Agent::imitate): solves every teacher first, then `steps` Adam steps.
ImitationMetrics imitate(Model& model, const std::vector<const Env*>& prototypes, std::int64_t steps,
                         const std::string& teacher, std::uint64_t stream,
                         const std::function<bool(const ImitationMetrics&)>& callback);
// Self-imitation: the rollout's best sampled decision replaces the graph's teacher when it beats it.
void adopt_better_sample(Model& model, const GraphEntry& graph, const Rollout& rollout);

}  // namespace imitation
}  // namespace goenv::agents
