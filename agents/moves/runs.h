// A head's decisions along the critical path as runs of one choice: what the moves that
// work on the path (smooth, join, segment, shift) read and change.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace goenv::agents::moves {

struct Runs {
  torch::TensorAccessor<std::int64_t, 1> path, values;  // path: units in topological order
  torch::TensorAccessor<double, 2> allowed;             // (U, C): > 0 where a choice is allowed
  std::vector<std::int64_t> starts;                     // each run's first position, then the path's length

  Runs(const torch::Tensor& path_units, torch::Tensor& choices, const torch::Tensor& p)
      : path(path_units.accessor<std::int64_t, 1>()),
        values(choices.accessor<std::int64_t, 1>()),
        allowed(p.accessor<double, 2>()) {
    for (std::int64_t i = 0; i < path.size(0); ++i)
      if (i == 0 || values[path[i]] != values[path[i - 1]]) starts.push_back(i);
    starts.push_back(path.size(0));
  }
  std::int64_t count() const { return static_cast<std::int64_t>(starts.size()) - 1; }
  std::int64_t length(std::int64_t r) const { return starts[r + 1] - starts[r]; }
  std::int64_t choice(std::int64_t r) const { return values[path[starts[r]]]; }
  std::int64_t of(std::int64_t position) const {  // the run holding a position on the path
    return std::upper_bound(starts.begin(), starts.end(), position) - starts.begin() - 1;
  }
  void assign(std::int64_t r, std::int64_t c) {
    for (std::int64_t i = starts[r]; i < starts[r + 1]; ++i)
      if (allowed[path[i]][c] > 0) values[path[i]] = c;
  }
};

// The position of unit u on the path, or -1.
inline std::int64_t position_of(const torch::Tensor& path, std::int64_t u) {
  const auto along = path.accessor<std::int64_t, 1>();
  for (std::int64_t i = 0; i < along.size(0); ++i)
    if (along[i] == u) return i;
  return -1;
}

}  // namespace goenv::agents::moves
