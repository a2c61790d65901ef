#ifndef STATEXFER_SIM_CONTENT_HPP
#define STATEXFER_SIM_CONTENT_HPP

// What the simulated model writes: deterministic bytes that depend only on the
// token prefix (so a restored state equals a recomputed one), generated in
// global coordinates (so a tensor-parallel shard is a literal slice of the
// whole), and the fill jobs that carry them to the pool and the caches. The
// device kernel and the verifier's host replica run the very same jobs.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

namespace statexfer::sim {

KOKKOS_INLINE_FUNCTION std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// Salts of the generated regions (per plane: + plane index).
enum Salt : std::uint64_t { salt_ssm = 1, salt_conv = 2, salt_scratch = 3, salt_kv = 0x100, salt_draft = 0x200 };

/// One model-step write, applied by the device kernel and the host replica alike.
struct FillJob {
  std::int32_t target;  ///< 0: pool backing, 1..A: KV caches, A+1..A+D: draft caches, A+D+1: request consumed
  std::int32_t set64;   ///< 1: store `seed` as one int64 at `offset`; 0: fill [lo, hi)
  std::int64_t offset;  ///< byte offset in the target of global byte `lo`
  std::uint64_t seed;
  std::int64_t lo, hi;  ///< global byte range (of the whole, unsharded region or token)
};

/// 8-byte words that cover global bytes [lo, hi).
KOKKOS_INLINE_FUNCTION std::int64_t fill_words(const FillJob& j) {
  return j.hi > j.lo ? ((j.hi - 1) >> 3) - (j.lo >> 3) + 1 : 0;
}

/// Word k of job j: the bytes of global word (lo >> 3) + k that fall in [lo, hi),
/// written at base + offset + (g - lo).
KOKKOS_INLINE_FUNCTION void fill_word(std::uint8_t* base, const FillJob& j, std::int64_t k) {
  const std::int64_t w = (j.lo >> 3) + k;
  const std::uint64_t v = mix64(j.seed + static_cast<std::uint64_t>(w) * 0xD1B54A32D192ED03ULL);
  std::uint8_t* dst = base + j.offset - j.lo;
  if (w * 8 >= j.lo && w * 8 + 8 <= j.hi) {  // a whole word (little-endian, as the bytes below)
    memcpy(dst + w * 8, &v, 8);
    return;
  }
  for (int b = 0; b < 8; ++b) {
    const std::int64_t g = w * 8 + b;
    if (g >= j.lo && g < j.hi) dst[g] = static_cast<std::uint8_t>(v >> (8 * b));
  }
}

KOKKOS_INLINE_FUNCTION void set_int64(std::uint8_t* base, const FillJob& j) {
  const auto v = static_cast<std::int64_t>(j.seed);
  std::uint8_t* dst = base + j.offset;
  for (int b = 0; b < 8; ++b) dst[b] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(v) >> (8 * b));
}

/// Bytes [lo, hi) of `global` bytes that rank `rank` of `ranks` holds.
struct Shard {
  std::int64_t lo = 0, hi = 0;
  std::int64_t size() const { return hi - lo; }
};
inline Shard shard_of(std::int64_t global, int rank, int ranks) {
  return {global * rank / ranks, global * (rank + 1) / ranks};
}

}  // namespace statexfer::sim

#endif
