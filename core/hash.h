// Small deterministic hashes, not cryptographic: splitmix64 (Steele, Lea and
// Flood, OOPSLA 2014) scrambles seeds, and hash_bytes folds byte ranges with it.
// Used for seed sequences (envs/vector_env) and content keys (agents).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace goenv {

inline constexpr std::uint64_t kSplitmixIncrement = 0x9e3779b97f4a7c15ULL;

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += kSplitmixIncrement;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Folds `size` bytes into `h`: whole 64-bit words through splitmix64, the tail FNV-style.
inline std::uint64_t hash_bytes(const void* data, std::size_t size, std::uint64_t h = 1469598103934665603ULL) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    std::uint64_t word;
    std::memcpy(&word, bytes + i, 8);
    h = splitmix64(h ^ word);
  }
  for (; i < size; ++i) h = (h ^ bytes[i]) * 1099511628211ULL;
  return splitmix64(h ^ size);
}

}  // namespace goenv
