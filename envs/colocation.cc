#include "envs/colocation.h"

namespace goenv {

ColocationRule::ColocationRule(const Graph& g, const Cluster& cluster) : num_devices_(cluster.num_devices()) {
  const int groups = g.num_colocation_groups(), n = g.num_nodes();
  first_.assign(groups + 1, 0);
  for (NodeId v = 0; v < n; ++v)
    if (g.colocation()[v] != kNone) ++first_[g.colocation()[v] + 1];
  for (int c = 0; c < groups; ++c) first_[c + 1] += first_[c];
  members_.resize(first_[groups]);
  std::vector<std::int32_t> next(first_.begin(), first_.end() - 1);
  for (NodeId v = 0; v < n; ++v)
    if (g.colocation()[v] != kNone) members_[next[g.colocation()[v]]++] = v;
  allowed_.assign(static_cast<std::size_t>(groups) * num_devices_, 1);
  for (int c = 0; c < groups; ++c)
    for (int d = 0; d < num_devices_; ++d)
      for (int k = first_[c]; k < first_[c + 1]; ++k)
        if (!g.allows(members_[k], cluster.device(d).kind)) allowed_[static_cast<std::size_t>(c) * num_devices_ + d] = 0;
  votes_.assign(num_devices_, 0);
}

template <class Voter>
int ColocationRule::settle(int c, std::int32_t* placement, Voter voter) {
  std::fill(votes_.begin(), votes_.end(), 0);
  for (int k = first_[c]; k < first_[c + 1]; ++k)
    if (voter(members_[k])) ++votes_[placement[members_[k]]];
  const std::uint8_t* allowed = &allowed_[static_cast<std::size_t>(c) * num_devices_];
  int target = -1;
  for (int d = 0; d < num_devices_; ++d)  // strictly more votes: ties keep the lowest id
    if (allowed[d] && (target < 0 || votes_[d] > votes_[target])) target = d;
  if (target < 0) return 0;  // no device suits every member: left for the simulator to report
  int moved = 0;
  for (int k = first_[c]; k < first_[c + 1]; ++k) {
    std::int32_t& device = placement[members_[k]];
    if (device != target) {
      device = target;
      ++moved;
    }
  }
  return moved;
}

int ColocationRule::follow(std::int32_t* placement) {
  int moved = 0;
  for (int c = 0; c < num_groups(); ++c) moved += settle(c, placement, [](NodeId) { return true; });
  return moved;
}

int ColocationRule::follow_node(std::int32_t* placement, int group, NodeId decided,
                                const std::int32_t* topo_position, int cursor) {
  return settle(group, placement, [&](NodeId m) { return m == decided || topo_position[m] < cursor; });
}

}  // namespace goenv
