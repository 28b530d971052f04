// One error path for all of goenv: checked macros throw typed exceptions that
// name the values involved (and the file and line on request); the bindings map each type once
// to the Python hierarchy (goenv.Error, InvalidArgument, InvalidAction, ...).
#pragma once

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>

namespace goenv {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A bad value from the caller (shape, dtype, range, option). Python: ValueError.
struct InvalidArgument : Error {
  using Error::Error;
};
// A malformed graph or file (cycle, dangling edge, negative cost, corrupt bytes). Python: ValueError.
struct InvalidGraph : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};
// An action outside the action space (out of range, wrong length, NaN). Python: ValueError.
struct InvalidAction : InvalidArgument {
  using InvalidArgument::InvalidArgument;
};
// step() before reset() or after the episode ended. Python: RuntimeError.
struct ResetNeeded : Error {
  using Error::Error;
};
// Unknown env id, graph, preset or baseline name. Python: KeyError.
struct NotFound : Error {
  using Error::Error;
};

namespace detail {
// Users read the message; the C++ location is for goenv's developers, who get it
// with GOENV_ERROR_LOCATIONS=1 in the environment.
template <typename E>
[[noreturn]] void raise(const char* file, int line, const std::string& message) {
  const char* wanted = std::getenv("GOENV_ERROR_LOCATIONS");
  if (wanted == nullptr || *wanted == '\0' || *wanted == '0') throw E(message);
  std::ostringstream os;
  os << message << " [" << file << ":" << line << "]";
  throw E(os.str());
}
}  // namespace detail

}  // namespace goenv

// GOENV_CHECK(cond, Type, "text " << value) throws goenv::Type with the message.
#define GOENV_CHECK(condition, Type, message)                                \
  do {                                                                       \
    if (!(condition)) {                                                      \
      std::ostringstream goenv_check_os_;                                    \
      goenv_check_os_ << message;                                            \
      ::goenv::detail::raise<::goenv::Type>(__FILE__, __LINE__,              \
                                            goenv_check_os_.str());          \
    }                                                                        \
  } while (false)

#define GOENV_FAIL(Type, message) GOENV_CHECK(false, Type, message)
