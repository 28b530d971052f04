// Graph and Cluster files through cereal. Binary files are a checked envelope
// (magic, format version, payload size, checksum64) around a cereal
// portable-binary payload; ".json" paths use cereal's JSON archive with the same
// fields. Loading re-validates everything, so a corrupt or hand-edited file is
// rejected with InvalidGraph instead of producing a broken graph. Writes are
// atomic (temporary file + rename).
#pragma once

#include <string>

#include "core/cluster.h"
#include "core/graph.h"

namespace goenv {

// 2: the envelope checksum is checksum64 (word-wise FNV-1a) instead of byte-wise FNV-1a.
inline constexpr std::uint32_t kGraphFormatVersion = 2;

std::string graph_to_bytes(const Graph& graph);
GraphPtr graph_from_bytes(const std::string& bytes, const std::string& what = "graph bytes");
std::string graph_to_json(const Graph& graph);
GraphPtr graph_from_json(const std::string& json, const std::string& what = "graph JSON");
void save_graph(const Graph& graph, const std::string& path);  // JSON if path ends in .json
GraphPtr load_graph(const std::string& path);

std::string cluster_to_bytes(const Cluster& cluster);
Cluster cluster_from_bytes(const std::string& bytes);
std::string cluster_to_json(const Cluster& cluster);
Cluster cluster_from_json(const std::string& json);

// Shared helpers for every goenv file.
std::string read_file(const std::string& path);
void write_file_atomic(const std::string& path, const std::string& contents);
std::uint64_t fnv1a64(const std::string& bytes);
// FNV-1a's mixing over 64-bit little-endian words, then the tail bytes: 8x fewer
// steps than fnv1a64, for the file envelope (14 MB graphs load in milliseconds).
std::uint64_t checksum64(const std::string& bytes);

}  // namespace goenv
