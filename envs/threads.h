// Threads: the one limit on worker threads (envs, vector envs and agents check
// the same constant) and the guard that serializes calls on one env (docs/architecture.md:
// one env used from two threads at once serializes, never crashes).
#pragma once

#include <cstdint>
#include <mutex>

#include "core/error.h"

namespace goenv {

// Worker threads a vector env or an agent may ask for. OpenMP (libgomp) sizes its
// team before anything runs: 2e9 threads ended the process in "libgomp: Out of
// memory", no exception. 1024 is above the cores of any machine goenv targets
// (the largest single hosts have 512 hardware threads) and cheap to check.
inline constexpr int kMaxThreads = 1024;

// Throws InvalidArgument naming `what` and the limit unless 1 <= count <= kMaxThreads.
inline int checked_num_threads(std::int64_t count, const char* what = "num_threads") {
  GOENV_CHECK(count >= 1 && count <= kMaxThreads, InvalidArgument,
              what << " must be in [1, " << kMaxThreads << "], got " << count);
  return static_cast<int>(count);
}

// A mutex that belongs to one object: copying the object gives the copy a new,
// unlocked guard (a std::mutex member would make Env non-copyable).
class Guard {
 public:
  Guard() = default;
  Guard(const Guard&) {}
  Guard& operator=(const Guard&) { return *this; }
  std::mutex& mutex() const { return mutex_; }

 private:
  mutable std::mutex mutex_;
};

}  // namespace goenv
