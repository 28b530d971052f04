// Messages for unknown names (env ids, graphs, presets, baselines): the known
// names as a list, and "did you mean ...?" with the known name closest by edit
// distance, when it is close enough to be a typo.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace goenv {

// "a, b, c".
inline std::string joined_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Levenshtein distance, case-insensitive (names are short: O(|a| |b|) is fine).
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  auto lower = [](char c) { return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c); };
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// "; did you mean 'x'?" for the closest known name within a third of its length
// (at least 2 edits), or "" when none is that close.
inline std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
  const std::string* best = nullptr;
  std::size_t best_distance = 0;
  for (const auto& k : known) {
    const std::size_t d = edit_distance(name, k);
    if (best == nullptr || d < best_distance) {
      best = &k;
      best_distance = d;
    }
  }
  if (best == nullptr || best_distance > std::max<std::size_t>(2, best->size() / 3)) return "";
  return "; did you mean '" + *best + "'?";
}

}  // namespace goenv
