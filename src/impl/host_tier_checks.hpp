#ifndef STATEXFER_IMPL_HOST_TIER_CHECKS_HPP
#define STATEXFER_IMPL_HOST_TIER_CHECKS_HPP

// The constructor's checks of a host tier (docs/CONTRACT.md §3 check 15, §12).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <statexfer/host_tier.hpp>
#include <statexfer/pool.hpp>

#include "argument_checks.hpp"

namespace statexfer::impl {

/// Checks `tier` (non-empty) against the pool and the caches, and adds its Views
/// to check 13's lists: the backing to what apply() writes, the capacity to
/// what validation reads.
template <class ExecutionSpace, class Caches>
void check_host_tier(const StatePool<ExecutionSpace>& pool, const HostTier<ExecutionSpace>& tier, const Caches& caches,
                     std::vector<std::pair<std::string, ByteRange>>& inputs,
                     std::vector<std::pair<std::string, ByteRange>>& written) {
  if (tier.row_bytes() != pool.row_bytes())
    reject("host_tier has row_bytes " + std::to_string(tier.row_bytes()) + " but the pool " +
           std::to_string(pool.row_bytes()) + " (tier moves copy whole rows)");
  if (static_cast<std::int64_t>(tier.backing().extent(1)) != pool.row_bytes())
    reject("host_tier backing must have " + std::to_string(pool.row_bytes()) + " bytes per row, got " +
           shape_string(tier.backing().extent(0), tier.backing().extent(1)));
  if (tier.rows() < 2)
    reject("host_tier must have at least 2 rows (its null row and one usable row), got " + std::to_string(tier.rows()));
  if (tier.capacity().extent(0) != 1)
    reject("host_tier capacity must be int64 [1], got " + shape_string(tier.capacity().extent(0)));
  check_memory(tier.backing(), "host_tier backing");
  check_memory(tier.capacity(), "host_tier capacity");
  // consumed_tokens of a host row is read as one int64, at the pool layout's offset.
  if (reinterpret_cast<std::uintptr_t>(tier.backing().data()) % 8 != 0)
    reject("host_tier backing must be 8-byte aligned (consumed_tokens is read as an int64)");
  // apply() writes the host rows, the pool and the caches in one launch.
  if (views_overlap(tier.backing(), pool.backing())) reject("host_tier backing overlaps the pool backing");
  for (const auto& [region, cache] : caches)
    if (views_overlap(tier.backing(), cache))
      reject("host_tier backing overlaps the cache of binding '" + region + "'");
  inputs.emplace_back("host_tier capacity", byte_range(tier.capacity()));
  written.emplace_back("the host_tier backing", byte_range(tier.backing()));
}

}  // namespace statexfer::impl

#endif
