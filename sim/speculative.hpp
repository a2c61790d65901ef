#ifndef STATEXFER_SIM_SPECULATIVE_HPP
#define STATEXFER_SIM_SPECULATIVE_HPP

// Speculative decoding's host-side model (--spec-tokens): the seeded sampler
// that decides how many drafts a verify step accepts, the seeds of the
// rejected drafts' tokens and states (another stream than the request's), and
// the prefix keys the commands carry (docs/CONTRACT.md §14).

#include <cstdint>

#include "content.hpp"
#include "workload.hpp"

namespace statexfer::sim {

/// The drafts the sampler accepts when request `request` verifies `drafts`
/// drafts from endpoint `endpoint`: each accepted with probability `rate`
/// until the first rejection. A function of its arguments alone, so every rank
/// and the verifier agree, and a request's acceptance does not depend on how
/// the scheduler interleaves it with others.
inline std::int32_t accepted_drafts(std::uint64_t seed, double rate, std::int64_t request, std::int64_t endpoint,
                                    std::int64_t drafts) {
  const std::uint64_t base =
      mix64(mix64(seed ^ 0xACCE9700ULL) + static_cast<std::uint64_t>(request) * 0x9E3779B97F4A7C15ULL) ^
      mix64(static_cast<std::uint64_t>(endpoint) + 0x5BEC0000ULL);
  std::int32_t a = 0;
  for (; a < drafts; ++a) {
    const double u = static_cast<double>(mix64(base + static_cast<std::uint64_t>(a)) >> 11) * 0x1.0p-53;  // [0, 1)
    if (!(u < rate)) break;
  }
  return a;
}

/// Seeds of a verify step's rejected drafts: a stream that leaves the
/// request's own after its accepted prefix (`own` is the state seed there).
inline std::uint64_t wrong_kv_seed(std::uint64_t own, std::int64_t position) {
  return mix64(own ^ (0xBAD0000000000000ULL + static_cast<std::uint64_t>(position)));
}
inline std::uint64_t wrong_state_seed(std::uint64_t own, std::int64_t position) {
  return mix64(own + 0x0BAD5EEDULL * (static_cast<std::uint64_t>(position) + 1));
}

/// The prefix key (§14) of a prefix: what a snapshot stamps and a read of the
/// row must match. Never 0, the key of a row no snapshot wrote (a reset zeroes it).
inline std::int64_t command_key(const PrefixKey& k) {
  const std::uint64_t h = mix64(k.h1 ^ mix64(k.h2 + static_cast<std::uint64_t>(k.len)));
  return h == 0 ? 1 : static_cast<std::int64_t>(h);
}

}  // namespace statexfer::sim

#endif
