#include "core/json_scan.h"

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

}  // namespace goenv
