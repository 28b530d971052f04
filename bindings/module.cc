// goenv._core: the thin pybind11 layer over the C++ core. Each bind_*.cc file
// covers one concept; logic stays in C++, shapes and dtypes are checked here.
#include <pybind11/pybind11.h>

namespace goenv::bindings {
void bind_errors(pybind11::module_& m);
void bind_graph(pybind11::module_& m);
void bind_cluster(pybind11::module_& m);
void bind_simulator(pybind11::module_& m);
void bind_envs(pybind11::module_& m);
void bind_baselines(pybind11::module_& m);
void bind_vector_env(pybind11::module_& m);
}  // namespace goenv::bindings

PYBIND11_MODULE(_core, m) {
  m.doc() = "goenv C++ core: graphs, clusters, simulator, environments";
  using namespace goenv::bindings;
  bind_errors(m);
  bind_graph(m);
  bind_cluster(m);
  bind_simulator(m);
  bind_envs(m);
  bind_baselines(m);
  bind_vector_env(m);
}
