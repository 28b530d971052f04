// The Agent facade: owns the model, the sampler and the actor's graph cache,
// and hands each call to its room (see agent.h). Torch's errors leave as goenv's.
#include "agents/agent.h"

#include "agents/checkpoint.h"
#include "agents/imitation.h"
#include "agents/model.h"
#include "agents/move_gains.h"
#include "agents/ppo.h"
#include "agents/sampler.h"
#include "agents/search.h"
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace goenv::agents {

namespace {

// Torch reports errors as c10::Error; callers of the agent see goenv's types.
template <typename F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    throw Error(std::string("torch: ") + e.what_without_backtrace());
  }
}

}  // namespace

struct Agent::Impl {
  explicit Impl(Model m) : model(std::move(m)) {}
  Model model;
  Sampler sampler;
  search::Actor actor;
};

std::recursive_mutex& Agent::guard() const { return guard_; }

template <typename F>
auto Agent::unbuilt_on_error(F&& f) -> decltype(f()) {
  if (impl_->model.ready) return guarded(std::forward<F>(f));
  try {
    return guarded(std::forward<F>(f));
  } catch (...) {
    // The call built the policy for its first env, then failed before any update (a later env,
    // an unknown teacher): the agent is left as it was, without a policy, so its next call may
    // serve other envs. Once an update was made (an interrupted training), the work is kept.
    const Model& m = impl_->model;
    if (m.ready && m.weights.version == 0 && m.steps_trained == 0) impl_ = std::make_unique<Impl>(Model(m.config));
    throw;
  }
}

void Agent::refuse_while_running(const char* call) const {
  GOENV_CHECK(running_ == nullptr, InvalidArgument,
              call << "() from a " << running_ << "() callback would replace the model or the envs " << running_
                   << "() is using; call it after " << running_ << "() returns (a callback returning False stops it)");
}

template <typename F>
auto Agent::running(const char* call, F&& f) -> decltype(f()) {
  refuse_while_running(call);
  running_ = call;
  struct Done {
    const char*& running;
    ~Done() { running = nullptr; }
  } done{running_};
  return unbuilt_on_error(std::forward<F>(f));
}

Agent::Agent(AgentConfig config)
    : impl_(guarded([&] { return std::make_unique<Impl>(Model(std::move(config))); })) {}
Agent::~Agent() = default;
Agent::Agent(Agent&& other) noexcept : impl_(std::move(other.impl_)) {}
Agent& Agent::operator=(Agent&& other) noexcept {
  impl_ = std::move(other.impl_);
  return *this;
}

const AgentConfig& Agent::config() const { return impl_->model.config; }
bool Agent::has_policy() const { return impl_->model.ready; }
const PolicySpec& Agent::spec() const {
  GOENV_CHECK(impl_->model.ready, InvalidArgument,
              "the agent has no policy yet: train it, load a checkpoint, or pass env= when creating it");
  return impl_->model.spec;
}
void Agent::setup(const PolicySpec& spec) {
  guarded([&] {
    if (!impl_->model.ready) impl_->model.build(spec);
    impl_->model.check_spec(spec, "the spec");
  });
}
std::int64_t Agent::num_parameters() const { return impl_->model.num_parameters(); }
std::int64_t Agent::steps_trained() const { return impl_->model.steps_trained; }
std::string Agent::device() const { return impl_->model.device.is_cuda() ? "cuda" : "cpu"; }

void Agent::train(const std::vector<const Env*>& envs, std::int64_t total_steps, const Callback& callback) {
  running("train", [&] { ppo::train(impl_->model, impl_->sampler, envs, total_steps, callback); });
}
void Agent::set_envs(const std::vector<const Env*>& envs, const std::vector<int>& sampled, std::uint64_t stream) {
  refuse_while_running("set_envs");
  unbuilt_on_error([&] {
    impl_->sampler.set_envs(impl_->model, envs, sampled, stream);
    imitation::restore_teachers(impl_->model, envs, impl_->sampler.graphs());
  });
}
std::vector<Rollout> Agent::collect() {
  refuse_while_running("collect");
  return guarded([&] { return impl_->sampler.collect(impl_->model); });
}
UpdateMetrics Agent::update(const std::vector<Rollout>& rollouts) {
  refuse_while_running("update");
  return guarded([&] { return ppo::update(impl_->model, impl_->sampler.graphs(), rollouts); });
}

std::shared_ptr<const float> Agent::weights() {
  return guarded([&] {
    GOENV_CHECK(impl_->model.ready, InvalidArgument, "the agent has no policy yet, so no weights");
    return impl_->model.weights.shared_data();
  });
}
std::int64_t Agent::weights_version() const { return impl_->model.weights.version; }
void Agent::set_weights(const float* data, std::int64_t size, std::int64_t version) {
  guarded([&] {
    Model& m = impl_->model;
    GOENV_CHECK(m.ready, InvalidArgument, "the agent has no policy yet: set_envs (or setup) before set_weights");
    GOENV_CHECK(size == m.weights.size(), InvalidArgument,
                "weights have " << size << " values, the policy has " << m.weights.size() << " parameters ("
                                << m.spec.describe() << ", hidden " << m.config.hidden << ")");
    GOENV_CHECK(std::all_of(data, data + size, [](float w) { return std::isfinite(w); }), InvalidArgument,
                "weights must be finite: a NaN or infinite parameter would make every action the same");
    m.weights.assign(data);
    m.weights.version = version;
  });
}

std::vector<std::vector<std::int64_t>> Agent::act(const ObservationBatch& observation, bool deterministic) {
  return guarded([&] { return impl_->actor.act(impl_->model, observation, deterministic); });
}
EvaluationResult Agent::evaluate(const Env& env, int episodes, bool deterministic) {
  return unbuilt_on_error([&] { return search::evaluate(impl_->model, env, episodes, deterministic); });
}
OptimizeResult Agent::optimize(const Env& env, std::int64_t budget, const std::string& start,
                               std::int64_t local_search_budget, std::int64_t seed, std::int64_t start_budget,
                               Proposals proposals) {
  return unbuilt_on_error([&] {
    return search::optimize(impl_->model, env, budget, start, local_search_budget, seed, start_budget, proposals);
  });
}

ImitationMetrics Agent::imitate(const std::vector<const Env*>& envs, std::int64_t steps, const std::string& teacher,
                                const ImitationCallback& callback) {
  return running("imitate", [&] {
    return imitation::imitate(impl_->model, envs, steps, teacher, impl_->sampler.stream(), callback);
  });
}
ImitationMetrics Agent::learn_moves(const std::vector<const Env*>& envs, std::int64_t steps, std::int64_t states,
                                    double temperature, const ImitationCallback& callback) {
  return running("learn_moves", [&] {
    return move_gains::learn(impl_->model, envs, steps, states, temperature, impl_->sampler.stream(), callback);
  });
}
const Teacher* Agent::teacher(const Env& env) const {
  return guarded([&]() -> const Teacher* {
    const std::uint64_t key = env_key(env);
    imitation::verify_teacher(impl_->model, env, key);
    const auto it = impl_->model.teachers.find(key);
    return it == impl_->model.teachers.end() ? nullptr : &it->second.teacher;
  });
}

std::string Agent::to_bytes() const {
  return guarded([&] { return checkpoint::write(impl_->model, impl_->sampler.next_slot()); });
}
void Agent::from_bytes(const std::string& bytes, const std::string& device) {
  refuse_while_running("load");
  guarded([&] {
    checkpoint::Checkpoint c = checkpoint::parse(bytes);
    GOENV_CHECK(!device.empty() || c.config.device != "cuda" || torch::cuda::is_available(), InvalidArgument,
                "the checkpoint was saved with device='cuda' and torch sees no CUDA device here; load it on "
                "the CPU with device='cpu' (goenv.agents.load(path, device='cpu'))");
    if (!device.empty()) {
      c.config.device = device;
      validate(c.config);
    }
    auto fresh = std::make_unique<Impl>(checkpoint::read(c, bytes));
    GOENV_CHECK(fresh->model.weights.all_finite(), InvalidArgument,
                "corrupt agent checkpoint: a policy weight is NaN or infinite (every action would be the same)");
    fresh->sampler.set_next_slot(static_cast<std::size_t>(std::max<std::int64_t>(0, c.next_slot)));
    impl_ = std::move(fresh);
  });
}

std::string checkpoint_algorithm(const std::string& bytes) {
  return guarded([&] { return checkpoint::parse(bytes).config.algorithm; });
}

std::string checkpoint_from_arrays(const std::map<std::string, std::string>& metadata,
                                   const std::vector<NamedArray>& arrays) {
  return guarded([&] {
    std::vector<safetensors::Named> tensors;
    for (const NamedArray& a : arrays) {
      const torch::ScalarType type = a.dtype == "F32" ? torch::kFloat32
                                     : a.dtype == "I64" ? torch::kInt64
                                     : a.dtype == "U8" ? torch::kUInt8
                                                       : throw InvalidArgument("array '" + a.name + "' has dtype " +
                                                                               a.dtype + "; checkpoints hold F32, I64, U8");
      torch::Tensor t = torch::empty(a.shape, torch::TensorOptions().dtype(type));
      GOENV_CHECK(static_cast<std::size_t>(t.nbytes()) == a.bytes, InvalidArgument,
                  "array '" << a.name << "' has " << a.bytes << " bytes, its shape needs " << t.nbytes());
      std::memcpy(t.data_ptr(), a.data, a.bytes);
      tensors.push_back({a.name, t});
    }
    std::string bytes = checkpoint::write_file(metadata, tensors);
    Agent check;
    check.from_bytes(bytes);
    return bytes;
  });
}

}  // namespace goenv::agents
