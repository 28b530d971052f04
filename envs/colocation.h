// Colocation "follow" (docs/environments.md): turns any per-node placement into a valid
// one by moving each colocation group to the device most of its members chose
// (ties: the lowest device id), among the devices every member allows — what
// TensorFlow's placer does with colocation constraints. Without it, almost
// every uniformly random placement of a real training graph splits a group
// (each variable is colocated with its update op), and an RL library that does
// not know about groups sees nothing but the invalid-decision penalty.
#pragma once

#include <cstdint>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"

namespace goenv {

class ColocationRule {
 public:
  ColocationRule(const Graph& graph, const Cluster& cluster);

  // Graph mode: every member of every group voted with its placement. Moves the
  // groups in `placement` and returns the number of nodes moved. A group that
  // no device suits (members allow disjoint device kinds) is left as it is: the
  // simulator reports it as invalid.
  int follow(std::int32_t* placement);

  // Node mode: only node `decided`, a member of `group`, was just placed. The
  // voters are the members already decided in this pass (topo_position[m] <
  // cursor) and `decided` itself; the whole group, undecided members included,
  // moves to their majority device. Returns the number of nodes moved.
  int follow_node(std::int32_t* placement, int group, NodeId decided, const std::int32_t* topo_position,
                  int cursor);

  int num_groups() const { return static_cast<int>(first_.size()) - 1; }

 private:
  // Moves group c to its voters' majority device; voter(m) says whether member m voted.
  template <class Voter>
  int settle(int c, std::int32_t* placement, Voter voter);

  int num_devices_;
  std::vector<std::int32_t> first_, members_;  // CSR: members of group c are members_[first_[c] .. first_[c+1])
  std::vector<std::uint8_t> allowed_;          // (groups, devices): every member of c may run on d
  std::vector<int> votes_;                     // scratch, one per device
};

}  // namespace goenv
