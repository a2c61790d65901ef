#ifndef STATEXFER_SIM_GEOMETRY_HPP
#define STATEXFER_SIM_GEOMETRY_HPP

// The sizes and places of one rank's state: the pool's rows and their layout,
// the caches' pages and the page tables, derived once from the configuration.

#include <cstdint>
#include <string>

#include <statexfer/layout.hpp>

#include "comm.hpp"
#include "content.hpp"
#include "sim_config.hpp"
#include "state_rows.hpp"

namespace statexfer::sim {

struct Geometry {
  std::int64_t capacity = 0;       ///< request slots = command capacity
  std::int64_t snapshot_rows = 0;  ///< prefix-cache rows
  std::int64_t page_tokens = 0;
  std::int64_t kv_planes = 0;     ///< attention planes: page bindings
  std::int64_t draft_planes = 0;  ///< draft planes: trailing bindings
  std::int64_t table_width = 0;   ///< logical pages per slot (columns of the page tables)
  std::int64_t rows = 0;  ///< pool rows: the null row, a live row per slot, K position rows per slot, the snapshot rows
  std::int64_t positions = 0;  ///< K: speculative position rows per slot (0: no speculative decoding)
  bool commit_copy = false;    ///< commits copy the accepted row into the live row (else remap)
  std::int64_t pages = 0;      ///< physical pages per cache
  std::int64_t host_rows = 0;  ///< host-tier rows: its null row and the host snapshot rows (0: no host tier)

  // This rank's shard of each generated region (global byte ranges).
  Shard ssm, conv, kv, draft;
  std::int64_t kv_page_bytes = 0;     ///< one KV page of this rank
  std::int64_t draft_page_bytes = 0;  ///< one draft page of this rank

  // The row layout of this rank.
  statexfer::StateLayout layout;
  std::int64_t row_bytes = 0;
  std::int64_t row_copy_bytes = 0;  ///< bytes a row copy moves (all but the scratch)
  std::int64_t scratch_bytes = 0;
  std::int64_t consumed_offset = 0, scratch_offset = 0, ssm_offset = 0, conv_offset = 0;
  std::int64_t key_offset = -1;  ///< the prefix_key region (docs/CONTRACT.md §14); -1: none

  /// The slot's live row before any remapping commit: the scheduler's mirror of
  /// the state rows names it afterwards (a remap swaps it with a position row).
  std::int64_t home_row(std::int64_t slot) const { return 1 + slot; }
  /// The slot's position row j (1..K) before any remapping commit.
  std::int64_t position_row(std::int64_t slot, std::int64_t j) const {
    return 1 + capacity + slot * positions + (j - 1);
  }
  std::int64_t first_snapshot_row() const { return 1 + capacity * (1 + positions); }
  /// The state rows the run starts with: column 0 the home row, columns 1..K
  /// the position rows, the rest 0.
  HostStateRows initial_state_rows() const {
    HostStateRows initial(capacity);
    for (std::int64_t s = 0; s < capacity; ++s) {
      initial(s, 0) = home_row(s);
      for (std::int64_t j = 1; j <= positions; ++j) initial(s, j) = position_row(s, j);
    }
    return initial;
  }
  /// Host memory of the host tier (pinned on CUDA).
  std::int64_t host_memory_bytes() const { return host_rows * row_bytes; }
  /// Device memory of the pool and the caches.
  std::int64_t memory_bytes() const {
    return rows * row_bytes + pages * (kv_planes * kv_page_bytes + draft_planes * draft_page_bytes);
  }
};

/// "--spec-tokens must be 0 (off) to 7 (...)": the message of an out-of-range K.
std::string spec_tokens_range();

/// Checks the configuration (std::invalid_argument naming the option) and lays
/// out rank `comm.rank`'s state for requests of at most `max_tokens` tokens.
Geometry make_geometry(const SimConfig& cfg, std::int64_t max_tokens, const Comm& comm);

}  // namespace statexfer::sim

#endif
