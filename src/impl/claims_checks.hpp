#ifndef STATEXFER_IMPL_CLAIMS_CHECKS_HPP
#define STATEXFER_IMPL_CLAIMS_CHECKS_HPP

// The constructor's checks of row claims (docs/CONTRACT.md §3 check 18, §15).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <statexfer/claims.hpp>
#include <statexfer/host_tier.hpp>
#include <statexfer/pool.hpp>

#include "argument_checks.hpp"

namespace statexfer::impl {

/// `claims` (non-empty) were made for this pool and host tier, and lie apart
/// from every input validation reads, from what apply() writes and from
/// `errors`: validate() and apply() both write them.
template <class ExecutionSpace>
void check_claims(const StatePool<ExecutionSpace>& pool, const HostTier<ExecutionSpace>& tier,
                  const RowClaims<ExecutionSpace>& claims, const std::vector<std::pair<std::string, ByteRange>>& inputs,
                  const std::vector<std::pair<std::string, ByteRange>>& written, const ByteRange& errors) {
  if (claims.pool_data() != static_cast<const void*>(pool.backing().data()) || claims.rows() != pool.rows())
    reject("claims were made for another pool (" + std::to_string(claims.rows()) + " rows), not this one (" +
           std::to_string(pool.rows()) + " rows): transfers share the claims of the pool they share");
  const std::int64_t host_rows = tier.empty() ? 0 : tier.rows();
  const void* host = tier.empty() ? nullptr : static_cast<const void*>(tier.backing().data());
  if (claims.host_data() != host || claims.host_rows() != host_rows)
    reject("claims were made for another host tier (" + std::to_string(claims.host_rows()) + " rows), not this one (" +
           std::to_string(host_rows) + " rows)");
  check_memory(claims.claims(), "claims");
  const ByteRange range = byte_range(claims.claims());
  for (const auto& [name, r] : inputs)
    if (ranges_overlap(range, r)) reject("claims overlaps " + name + ": validation reads memory that it writes");
  for (const auto& [name, r] : written)
    if (ranges_overlap(range, r)) reject("claims overlaps " + name + " (apply() writes both)");
  if (ranges_overlap(range, errors)) reject("claims overlaps commands.errors");
}

}  // namespace statexfer::impl

#endif
