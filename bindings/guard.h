// Calls on an env, vector env or agent that one Python object may receive from two
// threads at once (docs/architecture.md): each runs with the object's guard held, so they
// serialize instead of corrupting the episode or the policy.
#pragma once

#include <pybind11/pybind11.h>

#include <mutex>

namespace goenv::bindings {

// Runs `body` with the GIL released and `mutex` held. The GIL goes first: a thread
// waiting for the env then never holds the GIL the env's holder needs to return.
// `body` is plain C++: it must not touch Python objects.
template <typename Mutex, typename F>
auto guarded(Mutex& mutex, F&& body) -> decltype(body()) {
  pybind11::gil_scoped_release release;
  std::lock_guard<Mutex> lock(mutex);
  return body();
}

}  // namespace goenv::bindings
