// Graph and Cluster files through cereal. Binary files are a checked envelope
// (magic, format version, payload size, checksum64) around a cereal
// portable-binary payload; ".json" paths use cereal's JSON archive with the same
// fields. Loading re-validates everything, so a corrupt or hand-edited file is
// rejected with InvalidGraph instead of producing a broken graph. Writes are
// atomic (temporary file + rename).
#pragma once

#include <cereal/cereal.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/cluster.h"
#include "core/error.h"
#include "core/graph.h"

namespace goenv {

// Documented limits of every goenv file (docs/limits.md): a file larger than
// kMaxFileBytes or not a regular file is refused before it is read, and JSON
// nested deeper than kMaxJsonDepth is refused before it is parsed (the JSON
// parser recurses once per level).
inline constexpr std::uint64_t kMaxFileBytes = std::uint64_t{1} << 31;  // 2 GiB
inline constexpr int kMaxJsonDepth = 64;

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
std::uint64_t checksum64(std::string_view bytes);
// Snapshots close with checksum64 of every byte before it (8 bytes, little-endian): a
// corrupted one is refused instead of restoring a decision nobody made.
std::string append_checksum(std::string bytes);
// `bytes` without its closing checksum; throws InvalidGraph naming `what` when they disagree.
std::string_view without_checksum(std::string_view bytes, const std::string& what);

// Throws InvalidGraph when `json` nests arrays/objects deeper than kMaxJsonDepth.
// An iterative scan (strings and escapes skipped), so it cannot overflow the stack.
void check_json_depth(std::string_view json, const std::string& what);

// Reads cereal's portable-binary layout (what PortableBinaryOutputArchive writes
// for flat records of numbers, strings and vectors of them) with every count
// checked against the bytes that remain *before* anything is allocated, so a
// corrupt or hostile count fails fast instead of allocating gigabytes. Records
// use it through their usual `serialize(ar)` (CEREAL_NVP names are ignored).
class BoundedBinaryInput {
 public:
  BoundedBinaryInput(std::string_view bytes, std::string what) : data_(bytes), what_(std::move(what)) {
    std::uint8_t little_endian = 0;
    read(little_endian);
    GOENV_CHECK(little_endian <= 1, InvalidGraph, what_ << ": corrupt endianness flag " << int(little_endian));
    swap_ = (little_endian == 1) != host_little_endian();
  }

  template <class... T>
  void operator()(T&&... values) {
    (read(values), ...);
  }
  // Throws unless every byte was consumed (trailing bytes mean a corrupt record).
  void finish() const {
    GOENV_CHECK(pos_ == data_.size(), InvalidGraph,
                what_ << ": " << data_.size() - pos_ << " unexpected bytes after the record");
  }

 private:
  static bool host_little_endian() {
    const std::uint16_t one = 1;
    std::uint8_t first;
    std::memcpy(&first, &one, 1);
    return first == 1;
  }
  std::size_t remaining() const { return data_.size() - pos_; }
  void take(void* out, std::size_t size) {
    GOENV_CHECK(size <= remaining(), InvalidGraph,
                what_ << ": truncated (needs " << size << " more bytes at offset " << pos_ << ", "
                      << remaining() << " left)");
    if (size == 0) return;  // an empty vector's data() may be null: memcpy(nullptr, ..., 0) is UB
    std::memcpy(out, data_.data() + pos_, size);
    pos_ += size;
  }
  template <class T>
  void fix_order(T& value) {
    if (!swap_ || sizeof(T) == 1) return;
    auto* p = reinterpret_cast<unsigned char*>(&value);
    for (std::size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(p[i], p[sizeof(T) - 1 - i]);
  }
  // A count of elements that each take at least `min_bytes` in the file.
  std::size_t count(std::size_t min_bytes) {
    std::uint64_t n = 0;
    read(n);
    GOENV_CHECK(n <= remaining() / min_bytes, InvalidGraph,
                what_ << ": corrupt size " << n << " at offset " << pos_ - 8 << " (only " << remaining()
                      << " bytes remain)");
    return static_cast<std::size_t>(n);
  }

  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  void read(T& value) {
    // A bool is one byte on disk; anything but 0/1 is corruption (and UB as a bool).
    if constexpr (std::is_same_v<T, bool>) {
      std::uint8_t byte;
      read(byte);
      GOENV_CHECK(byte <= 1, InvalidGraph, what_ << ": corrupt bool " << int(byte) << " at offset " << pos_ - 1);
      value = byte == 1;
    } else {
      take(&value, sizeof(T));
      fix_order(value);
    }
  }
  void read(std::string& value) {
    value.resize(count(1));
    take(value.data(), value.size());
  }
  template <class T>
  void read(std::vector<T>& values) {
    static_assert(!std::is_same_v<T, bool>, "vector<bool> has no binary layout");
    if constexpr (std::is_arithmetic_v<T>) {
      values.resize(count(sizeof(T)));
      take(values.data(), values.size() * sizeof(T));
      for (T& x : values) fix_order(x);
    } else {
      values.resize(count(8));  // each element starts with at least a size
      for (T& x : values) read(x);
    }
  }
  template <class T>
  void read(cereal::NameValuePair<T>& named) {
    read(named.value);
  }
  template <class T>
  void read(cereal::NameValuePair<T>&& named) {
    read(named.value);
  }
  template <class Record, std::enable_if_t<std::is_class_v<Record>, int> = 0,
            class = decltype(std::declval<Record&>().serialize(std::declval<BoundedBinaryInput&>()))>
  void read(Record& record) {
    record.serialize(*this);
  }

  std::string_view data_;
  std::size_t pos_ = 0;
  bool swap_ = false;
  std::string what_;
};

}  // namespace goenv
