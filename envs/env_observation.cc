// Env's observation writer: the dynamic arrays (node_state, action_mask, globals, device_state)
// of the decisions in force; the layout is envs/observation.h's.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/slack.h"
#include "envs/env.h"

namespace goenv {

// Per device: how busy the decisions in force keep it, when it finishes, its memory.
void Env::observe_devices(float* device_state) const {
  const int n = graph_->num_nodes(), num_devices = cluster().num_devices(), sd = device_state_dim();
  const double runtime = last_.runtime > 0 ? last_.runtime : 1.0;
  std::vector<double> finish(num_devices, 0.0);
  std::vector<int> nodes(num_devices, 0);
  for (NodeId v = 0; v < n; ++v) {
    const int d = placement_[v];
    ++nodes[d];
    if (!last_.finish.empty()) finish[d] = std::max(finish[d], last_.finish[v]);
  }
  for (int d = 0; d < num_devices; ++d) {
    const double busy = last_.device_busy.empty() ? 0.0 : std::min(1.0, last_.device_busy[d] / runtime);
    const double capacity = cluster().device(d).memory_bytes, peak = last_.peak_memory[d];
    const float values[] = {static_cast<float>(busy),
                            static_cast<float>(1.0 - busy),
                            static_cast<float>(finish[d] / runtime),
                            static_cast<float>(std::log1p(std::max(0.0, peak)) / 35.0),
                            static_cast<float>(peak / capacity),
                            static_cast<float>(nodes[d]) / static_cast<float>(n),
                            peak > capacity ? 1.f : 0.f};
    static_assert(sizeof(values) / sizeof(values[0]) == 7, "keep in step with device_state_names()");
    std::copy(std::begin(values), std::end(values), device_state + static_cast<std::size_t>(d) * sd);
  }
}

DynamicObservation Env::observe() const {
  const int n = graph_->num_nodes();
  DynamicObservation obs;
  obs.node_state.resize(static_cast<std::size_t>(n) * node_state_dim());
  obs.action_mask.resize(static_cast<std::size_t>(n) * action_mask_width());
  obs.globals.resize(global_names().size());
  obs.device_state.resize(static_cast<std::size_t>(cluster().num_devices()) * device_state_dim());
  observe_into(obs.node_state.data(), obs.action_mask.data(), obs.globals.data(), obs.device_state.data());
  return obs;
}

void Env::observe_into(float* node_state, std::int8_t* action_mask, float* globals, float* device_state) const {
  const Graph& g = *graph_;
  const int n = g.num_nodes(), num_devices = cluster().num_devices();
  const int s = node_state_dim(), a = action_mask_width();
  const bool v2 = observation_version() >= 2;
  // After advance() without observation(): the slack of the schedule in force, derived here.
  std::vector<double> derived;
  if (v2 && slack_stale_) derived = schedule_slack(g, cluster(), last_);
  const std::vector<double>& slack = v2 && slack_stale_ ? derived : slack_;
  std::fill(node_state, node_state + static_cast<std::size_t>(n) * s, 0.f);
  std::fill(action_mask, action_mask + static_cast<std::size_t>(n) * a, std::int8_t{1});
  const double runtime = last_.runtime > 0 ? last_.runtime : 1.0;
  const NodeId current = node_mode_ ? g.topological_order()[cursor_] : kNone;
  // Node mode: the nodes before the cursor in topological order are decided in this pass.
  auto decided = [&](NodeId v) { return node_mode_ && topo_position_[v] < cursor_; };
  for (NodeId v = 0; v < n; ++v) {
    float* row = &node_state[static_cast<std::size_t>(v) * s];
    row[placement_[v]] = 1.f;
    float* x = row + num_devices;
    x[0] = static_cast<float>(priority_[v] / (config_.priority_levels - 1));
    x[1] = static_cast<float>(fusion_[v]) / static_cast<float>(config_.fusion_levels - 1);
    x[2] = static_cast<float>(last_.start[v] / runtime);
    x[3] = static_cast<float>(last_.finish[v] / runtime);
    x[4] = last_.critical[v];
    x[5] = decided(v) ? 1.f : 0.f;
    x[6] = v == current ? 1.f : 0.f;
    if (v2) x[7] = slack.empty() ? 0.f : static_cast<float>(slack[v] / runtime);
  }
  if (v2 && device_state) observe_devices(device_state);
  // Placement choices: allowed device kinds; in node mode also a colocation
  // group's device once one of its members was decided in this pass.
  int offset = 0;
  for (Head h : heads_) {
    if (h == Head::kPlacement) {
      group_device_.assign(node_mode_ ? g.num_colocation_groups() : 0, -1);
      if (node_mode_)
        for (NodeId v = 0; v < n; ++v)
          if (decided(v) && g.colocation()[v] != kNone) group_device_[g.colocation()[v]] = placement_[v];
      for (NodeId v = 0; v < n; ++v) {
        std::int8_t* mask = &action_mask[static_cast<std::size_t>(v) * a + offset];
        const auto c = node_mode_ ? g.colocation()[v] : kNone;
        for (int d = 0; d < num_devices; ++d)
          mask[d] = g.allows(v, cluster().device(d).kind) &&
                    (c == kNone || group_device_[c] == -1 || group_device_[c] == d);
      }
    }
    offset += choices(h);
  }
  const double capacity_fraction = [&] {
    double worst = 0;
    for (int d = 0; d < num_devices; ++d)
      worst = std::max(worst, last_.peak_memory[d] / cluster().device(d).memory_bytes);
    return worst;
  }();
  const double simulated = std::isnan(info_.rejected_runtime) ? info_.runtime : info_.rejected_runtime;
  const float values[] = {static_cast<float>(simulated / runtime_scale()),
                          static_cast<float>(runtime_ / runtime_scale()),
                          static_cast<float>(static_cast<double>(steps_) / static_cast<double>(total_steps())),
                          static_cast<float>(last_reward_),
                          info_.oom ? 1.f : 0.f,
                          info_.invalid ? 1.f : 0.f,
                          static_cast<float>(capacity_fraction),
                          static_cast<float>(std::log10(std::max(initial_runtime_, 1e-9)) / 10.0)};
  static_assert(sizeof(values) / sizeof(values[0]) == 8, "keep in step with global_names()");
  std::copy(std::begin(values), std::end(values), globals);
}

}  // namespace goenv
