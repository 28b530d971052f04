#include "agents/model.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include <unistd.h>

#include "core/error.h"
#include "core/hash.h"

namespace goenv::agents {

namespace {

torch::Device choose_device(const std::string& name) {
  if (name == "cpu") return torch::kCPU;
  const bool cuda = torch::cuda::is_available();
  GOENV_CHECK(cuda || name != "cuda", InvalidArgument, "device='cuda' but torch sees no CUDA device");
  return cuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
}

}  // namespace

ObservationView view_of(const DynamicObservation& o, const ObservationDims& dims, int num_nodes) {
  const std::int64_t n = num_nodes;
  GOENV_CHECK(static_cast<std::int64_t>(o.node_state.size()) == n * dims.node_state &&
                  static_cast<std::int64_t>(o.action_mask.size()) == n * dims.action_mask &&
                  static_cast<std::int64_t>(o.globals.size()) == dims.globals,
              InvalidArgument, "observation does not match the policy: node_state " << dims.node_state
                                   << ", action_mask " << dims.action_mask << ", globals " << dims.globals
                                   << " columns expected");
  return {o.node_state.data(), o.action_mask.data(), o.globals.data()};
}

bool same_observation(const ObservationView& a, const ObservationView& b, const ObservationDims& dims, int num_nodes) {
  const std::size_t state = static_cast<std::size_t>(num_nodes) * dims.node_state,
                    mask = static_cast<std::size_t>(num_nodes) * dims.action_mask;
  return std::equal(a.node_state, a.node_state + state, b.node_state) &&
         std::equal(a.action_mask, a.action_mask + mask, b.action_mask) &&
         std::equal(a.globals, a.globals + dims.globals, b.globals);
}

Batch stack(const std::vector<ObservationView>& observations, const ObservationDims& dims, int num_nodes,
            const torch::Device& device) {
  const auto b = static_cast<std::int64_t>(observations.size());
  const std::int64_t n = num_nodes, s = dims.node_state, a = dims.action_mask, g = dims.globals;
  torch::Tensor state = torch::empty({b, n, s}, torch::kFloat32);
  torch::Tensor mask = torch::empty({b, n, a}, torch::kInt8);
  torch::Tensor globals = torch::empty({b, g}, torch::kFloat32);
  for (std::int64_t i = 0; i < b; ++i) {
    const ObservationView& o = observations[i];
    std::memcpy(state[i].data_ptr<float>(), o.node_state, n * s * sizeof(float));
    std::memcpy(mask[i].data_ptr<std::int8_t>(), o.action_mask, n * a);
    std::memcpy(globals[i].data_ptr<float>(), o.globals, g * sizeof(float));
  }
  return {state.to(device), mask.to(device).to(torch::kBool), globals.to(device)};
}

Batch batch_of(std::int64_t b, std::int64_t n, const float* node_state, std::int64_t state_dim,
               const std::int8_t* action_mask, std::int64_t mask_width, const float* globals, std::int64_t global_dim,
               const torch::Device& device) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  return {torch::from_blob(const_cast<float*>(node_state), {b, n, state_dim}, f32).to(device),
          torch::from_blob(const_cast<std::int8_t*>(action_mask), {b, n, mask_width}, torch::kInt8)
              .to(device)
              .to(torch::kBool),
          torch::from_blob(const_cast<float*>(globals), {b, global_dim}, f32).to(device)};
}

ThreadScope::ThreadScope(int threads) {
  if (threads <= 0) return;
  threads = std::min(threads, static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  const int current = torch::get_num_threads();
  if (current == threads) return;
  previous_ = current;
  torch::set_num_threads(threads);
}

ThreadScope::~ThreadScope() {
  if (previous_ > 0) torch::set_num_threads(previous_);
}

std::uint64_t env_key(const Env& env) {
  const StaticObservation& so = env.static_observation();
  std::uint64_t key = hash_bytes(env.id().data(), env.id().size());
  for (Head h : env.heads()) key = splitmix64(key ^ (static_cast<std::uint64_t>(h) + 1) * 0x100 ^ env.choices(h));
  key = hash_bytes(so.node_features.data(), sizeof(float) * so.node_features.size(), key);
  key = hash_bytes(so.edge_index.data(), sizeof(std::int64_t) * so.edge_index.size(), key);
  const auto& groups = env.graph().colocation();
  return hash_bytes(groups.data(), sizeof(groups[0]) * groups.size(), key);
}

Model::Model(AgentConfig c) : config(std::move(c)) {
  validate(config);
  device = choose_device(config.device);
  sampling = at::detail::createCPUGenerator(static_cast<std::uint64_t>(config.seed));
  shuffling = at::detail::createCPUGenerator(splitmix64(static_cast<std::uint64_t>(config.seed) ^ 0x5348554646ULL));
}

void Model::build(const PolicySpec& s) {
  // Options are settings a checkpoint may carry: the policy they describe is capped by the
  // machine (its parameters, gradients and Adam's two moments, 16 bytes a parameter), so a
  // small file cannot make the first act() or train() allocate more than the memory there is.
  const std::uint64_t parameters = policy_parameters(config, s);
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const double machine = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0;
  GOENV_CHECK(machine == 0 || 16.0 * static_cast<double>(parameters) <= machine, InvalidArgument,
              "the options describe a policy of " << parameters << " parameters ("
                  << 16.0 * static_cast<double>(parameters) / 1e9 << " GB with its gradients and Adam's moments); "
                  << "this machine has " << machine / 1e9 << " GB: lower hidden or the layer counts");
  Policy p = make_policy(config, s);
  p->to(device);
  policy = std::move(p);
  spec = s;
  ready = true;
  weights.gather(*policy, device);
  optimizer = std::make_unique<torch::optim::Adam>(policy->parameters(), torch::optim::AdamOptions(config.learning_rate));
}

std::int64_t Model::num_parameters() const {
  if (!ready) return 0;
  std::int64_t total = 0;
  for (const auto& p : policy->parameters()) total += p.numel();
  return total;
}

const TeacherEntry* Model::teacher_of(std::uint64_t key) const {
  const auto it = teachers.find(key);
  return it == teachers.end() || it->second.targets.empty() ? nullptr : &it->second;
}

void Model::check_spec(const PolicySpec& seen, const std::string& what) const {
  GOENV_CHECK(seen == spec, InvalidArgument,
              what << " does not fit the policy: it has " << seen.describe() << ", the policy was built for "
                   << spec.describe() << " (one policy serves envs with the same features, devices and heads)");
}

void Model::check_env(const Env& env) {
  const PolicySpec seen = PolicySpec::of(env, config);
  if (!ready) build(seen);
  check_spec(seen, "env " + env.id());
}

GraphTensors Model::tensors_of(const Env& env) const {
  const StaticObservation& so = env.static_observation();
  GraphTensors g = graph_tensors(so.num_nodes, so.node_feature_dim, so.node_features.data(), so.num_edges,
                                 so.edge_index.data(), device, env.graph().colocation().data());
  const std::vector<float> features = goenv::device_features(env.cluster());
  set_devices(g, env.cluster().num_devices(), features.data(), static_cast<int>(device_feature_names().size()), device);
  return g;
}

std::pair<std::vector<torch::Tensor>, torch::Tensor> Model::run(const GraphTensors& graph, const Batch& batch) {
  PolicyOutput out = policy->forward(graph, batch.node_state, batch.globals);
  return {masked(graph, std::move(out.logits), batch), std::move(out.value)};
}

std::vector<torch::Tensor> Model::uniform_logits(const GraphTensors& graph, const Batch& batch) const {
  const ObservationDims dims = dims_of(graph);
  std::vector<torch::Tensor> logits;
  for (std::size_t h = 0; h < spec.heads.size(); ++h)
    logits.push_back(batch.node_state.new_zeros({batch.node_state.size(0), graph.num_nodes, dims.choices[h]}));
  return masked(graph, std::move(logits), batch);
}

std::vector<torch::Tensor> Model::masked(const GraphTensors& graph, std::vector<torch::Tensor> logits,
                                         const Batch& batch) const {
  const ObservationDims dims = dims_of(graph);
  std::int64_t offset = 0;
  for (std::size_t h = 0; h < logits.size(); ++h) {
    const torch::Tensor mask = batch.mask.narrow(-1, offset, dims.choices[h]);
    logits[h] = spec.heads[h] == Head::kPlacement ? unit_logits(graph, logits[h], mask) : mask_logits(logits[h], mask);
    offset += dims.choices[h];
  }
  return logits;
}

torch::Tensor Model::env_actions(const GraphTensors& graph, std::size_t head, const torch::Tensor& actions) const {
  const torch::Tensor a = spec.heads[head] == Head::kPlacement ? node_actions(graph, actions) : actions;
  return a.to(torch::kCPU).contiguous();
}

void Model::env_actions_into(const GraphTensors& graph, std::size_t head, const torch::Tensor& actions,
                             std::vector<std::int64_t>& out) const {
  const torch::Tensor a = actions.to(torch::kCPU).contiguous();
  const std::int64_t* value = a.data_ptr<std::int64_t>();
  const std::int64_t n = graph.num_nodes;
  out.resize(static_cast<std::size_t>(n));
  if (spec.heads[head] == Head::kPlacement && graph.unit.defined()) {
    const torch::Tensor unit = graph.unit.to(torch::kCPU).contiguous();
    GOENV_CHECK(a.numel() == graph.num_units, InvalidArgument,
                "placement actions: " << a.numel() << " values for " << graph.num_units << " units");
    const std::int64_t* unit_of = unit.data_ptr<std::int64_t>();
    for (std::int64_t v = 0; v < n; ++v) out[static_cast<std::size_t>(v)] = value[unit_of[v]];
  } else {
    GOENV_CHECK(a.numel() == n, InvalidArgument, "actions: " << a.numel() << " values for " << n << " nodes");
    std::copy(value, value + n, out.begin());
  }
}

std::vector<std::vector<std::int64_t>> Model::decide(const GraphTensors& graph,
                                                     const std::vector<torch::Tensor>& logits, bool deterministic) {
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t h = 0; h < logits.size(); ++h) {
    const torch::Tensor a = env_actions(graph, h, sample_actions(logits[h], deterministic, sampling));
    out.emplace_back(a.data_ptr<std::int64_t>(), a.data_ptr<std::int64_t>() + a.numel());
  }
  return out;
}

}  // namespace goenv::agents
