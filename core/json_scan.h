#pragma once
// A pass over JSON text before it is parsed: how deep it nests and how many values it holds,
// so a reader refuses text whose parse would cost far more memory than its bytes (a DOM value
// is 16 bytes: "[[[[" or "0,0,0," would cost 4-8x the text) without building anything.
// docs/limits.md lists the limits each reader applies.

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

namespace goenv {

struct JsonScan {
  bool too_deep = false;     // nested deeper than the scan's max_depth
  std::size_t at = 0;        // the byte where it first did
  std::size_t values = 0;    // separators (',' and ':') outside strings: about one per value
};

// Stops at the first array/object opened deeper than max_depth. Strings (with their escapes)
// are skipped; the text is not otherwise validated (the parser does that).
JsonScan scan_json(std::string_view json, int max_depth);

// The element count of every array that is a member of an object at nesting depth `depth`
// (the root is depth 1), by member name: {"graph": {"names": [...]}} at depth 2 gives
// {"names": n}. The text is otherwise unvalidated, and may nest to any depth: a reader checks
// the counts against each other and its limits before parsing builds anything.
std::map<std::string, std::size_t> json_array_lengths(std::string_view json, int depth);

}  // namespace goenv
