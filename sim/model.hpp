#ifndef STATEXFER_SIM_MODEL_HPP
#define STATEXFER_SIM_MODEL_HPP

// The simulated model's writes of one step, as fill jobs (content.hpp): the KV
// entries of every token a request consumes (the draft model one token behind)
// and, once per request and step, its recurrent state and consumed tokens (with
// speculative decoding, the states after each verified position, and the
// sampler's accepted counts). The bytes depend only on the token prefix, so a
// restored state equals a recomputed one. The device runs the jobs, and the
// verifier's host replica too.

#include <cstdint>
#include <vector>

#include "content.hpp"
#include "geometry.hpp"
#include "workload.hpp"

namespace statexfer::sim {

/// The seed of the KV entries of the token that ends the prefix `key`.
inline std::uint64_t kv_seed(const PrefixKey& key) { return mix64(key.h1 + 0x51EDULL) ^ key.h2; }

class Model {
 public:
  explicit Model(const Geometry& geometry) : g_(geometry), accepted_(static_cast<std::size_t>(geometry.capacity), 0) {}

  /// Starts the jobs of step `step`.
  void begin_step(std::int64_t step);
  /// Token `position` of a request with pages `pages` and draft pages
  /// `draft_pages`: its KV entries from `seed` (if `kv`), and the draft entries
  /// of the token before it from `previous_seed` (if `draft`).
  void write_token(std::int64_t position, std::uint64_t seed, std::uint64_t previous_seed,
                   const std::vector<std::int32_t>& pages, const std::vector<std::int32_t>& draft_pages, bool kv = true,
                   bool draft = true);
  /// The live row `row` of `slot` after the step: recurrent state from
  /// `state_seed`, fresh scratch, and `consumed` in the row and in the request state.
  void write_row(std::int64_t slot, std::int64_t row, std::uint64_t state_seed, std::int64_t consumed);
  /// Pool row `row`'s recurrent state from `state_seed` and fresh scratch (`salt`: the scratch's).
  void write_state(std::int64_t row, std::uint64_t state_seed, std::int64_t salt);
  /// Pool row `row`'s consumed_tokens.
  void stamp_consumed(std::int64_t row, std::int64_t consumed);
  /// The request state's consumed tokens of `slot`.
  void set_request_consumed(std::int64_t slot, std::int64_t consumed);
  /// The sampler's accepted count of `slot` (uploaded with the step's jobs).
  void set_accepted(std::int64_t slot, std::int32_t accepted);
  /// Every slot's accepted count as the sampler left it, [capacity].
  const std::vector<std::int32_t>& accepted() const { return accepted_; }
  /// Bytes of the recurrent state written so far (and of KV and draft entries).
  std::int64_t state_bytes_written() const { return state_bytes_; }
  std::int64_t token_bytes_written() const { return token_bytes_; }

  const std::vector<FillJob>& jobs() const { return jobs_; }

  // Fill-job targets: 0 the pool, then the KV caches, the draft caches, the request state.
  std::int32_t kv_target(std::int64_t plane) const { return static_cast<std::int32_t>(1 + plane); }
  std::int32_t draft_target(std::int64_t plane) const { return static_cast<std::int32_t>(1 + g_.kv_planes + plane); }
  std::int32_t request_target() const { return static_cast<std::int32_t>(1 + g_.kv_planes + g_.draft_planes); }
  std::int32_t targets() const { return request_target() + 1; }

 private:
  /// One fill, in pieces of at most fill_piece_bytes (many teams on a GPU).
  void fill(std::int64_t offset, std::uint64_t seed, std::int64_t lo, std::int64_t hi);

  const Geometry& g_;
  std::vector<FillJob> jobs_;
  std::vector<std::int32_t> accepted_;
  std::uint64_t step_seed_ = 0;
  std::int64_t state_bytes_ = 0, token_bytes_ = 0;
};

}  // namespace statexfer::sim

#endif
