#include "core/json_scan.h"

#include <cstdint>

namespace goenv {

JsonScan scan_json(std::string_view json, int max_depth) {
  JsonScan scan;
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;  // skip the escaped character
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        scan.too_deep = true;
        scan.at = i;
        return scan;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' || c == ':') {
      ++scan.values;
    }
  }
  return scan;
}

std::map<std::string, std::size_t> json_array_lengths(std::string_view json, int depth) {
  std::map<std::string, std::size_t> lengths;
  std::int64_t level = 0;  // arrays and objects open around the cursor (any depth: the text is not checked for it)
  bool in_string = false;
  std::size_t string_start = 0;
  std::string_view last_string;  // the last string closed at the counted object's level: a member name
  std::string_view counting;     // the member whose array is open at depth + 1
  std::size_t elements = 0;
  bool empty = true;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') {
        in_string = false;
        if (level == depth) last_string = json.substr(string_start, i - string_start);
      }
      if (level == depth + 1 && !counting.empty()) empty = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      string_start = i + 1;
    } else if (c == '[' || c == '{') {
      if (level == depth + 1 && !counting.empty()) empty = false;
      ++level;
      if (c == '[' && level == depth + 1) {
        counting = last_string;
        elements = 0;
        empty = true;
      }
    } else if (c == ']' || c == '}') {
      if (level == depth + 1 && c == ']' && !counting.empty()) {
        lengths[std::string(counting)] = empty ? 0 : elements + 1;
        counting = {};
      }
      --level;
    } else if (level == depth + 1 && !counting.empty()) {
      if (c == ',') ++elements;
      else if (c != ' ' && c != '\n' && c != '\r' && c != '\t') empty = false;
    }
  }
  return lengths;
}

}  // namespace goenv
