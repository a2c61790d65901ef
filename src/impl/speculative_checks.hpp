#ifndef STATEXFER_IMPL_SPECULATIVE_CHECKS_HPP
#define STATEXFER_IMPL_SPECULATIVE_CHECKS_HPP

// The constructor's checks of prefix keys and speculative positions
// (docs/CONTRACT.md §3 checks 16 and 17, §13, §14).

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <statexfer/commands.hpp>
#include <statexfer/layout.hpp>
#include <statexfer/speculative.hpp>
#include <statexfer/transfer.hpp>

#include "argument_checks.hpp"

namespace statexfer::impl {

/// Check 16: the prefix_key region, when the layout has one. Returns its
/// offset, or -1 without one.
template <class ExecutionSpace>
std::int64_t check_prefix_key(const StateLayout& layout, const std::vector<std::string>& excluded,
                              const StateCommands<ExecutionSpace>& commands) {
  if (!layout.contains("prefix_key")) return -1;
  const Region& key = layout.region("prefix_key");
  if (key.dtype != DType::int64 || key.nbytes != 8)
    reject("prefix_key must be one int64 (8 bytes), got " + std::to_string(key.nbytes) + " bytes of " +
           to_string(key.dtype));
  if (key.offset % 8 != 0)
    reject("prefix_key must be 8-byte aligned in every row, got offset " + std::to_string(key.offset));
  if (std::find(excluded.begin(), excluded.end(), "prefix_key") != excluded.end())
    reject("prefix_key cannot be excluded: snapshots write it and every row copy moves it");
  const auto c = static_cast<std::size_t>(commands.capacity());
  check_vector(commands.prefix_keys, c, "commands.prefix_keys", "int64");
  return key.offset;
}

/// Check 17: the speculative positions, when there are some.
template <class ExecutionSpace>
void check_speculative(const SpeculativeConfig<ExecutionSpace>& spec, const StateCommands<ExecutionSpace>& commands) {
  if (spec.positions == 0) return;
  if (spec.positions < 0 || spec.positions > max_speculative_positions)
    reject("speculative.positions must be 0 (no commits) or 1.." + std::to_string(max_speculative_positions) +
           " (columns 1.." + std::to_string(max_speculative_positions) +
           " of the state rows name the position rows), got " + std::to_string(spec.positions));
  const auto c = static_cast<std::size_t>(commands.capacity());
  check_vector(spec.accepted, c, "speculative.accepted", "int32");
  check_vector(commands.commit_positions, c, "commands.commit_positions", "int32");
}

using NamedRanges = std::vector<std::pair<std::string, ByteRange>>;

/// Check 13's part of checks 16 and 17: the inputs they add, and what
/// validate() writes besides `errors` (apart from every input, the pool, the
/// caches and errors); with the remap move the state rows, which apply()
/// writes, apart from every other input and from what validate() writes.
template <class ExecutionSpace>
void check_speculative_ranges(const TransferConfig<ExecutionSpace>& config,
                              const StateCommands<ExecutionSpace>& commands, bool keys, NamedRanges& inputs,
                              const NamedRanges& written) {
  if (keys) inputs.emplace_back("commands.prefix_keys", byte_range(commands.prefix_keys));
  const auto& spec = config.speculative;
  if (spec.positions == 0) return;
  inputs.emplace_back("speculative.accepted", byte_range(spec.accepted));
  const ByteRange positions = byte_range(commands.commit_positions);
  const ByteRange errors = byte_range(commands.errors);
  for (const auto& [name, range] : inputs)
    if (ranges_overlap(positions, range))
      reject(name + " overlaps commands.commit_positions: validation reads memory that it writes");
  for (const auto& [name, range] : written)
    if (ranges_overlap(positions, range))
      reject("commands.commit_positions overlaps " + name + " (validate() writes the one, apply() the other)");
  if (ranges_overlap(positions, errors)) reject("commands.commit_positions overlaps commands.errors");
  if (spec.move != CommitMove::remap) return;
  const ByteRange state_rows = byte_range(config.state_rows);
  for (const auto& [name, range] : inputs)
    if (name != "state_rows" && ranges_overlap(state_rows, range))
      reject("state_rows overlaps " + name + ": remapping commits write the state rows (speculative.move)");
  if (ranges_overlap(state_rows, positions))
    reject("state_rows overlaps commands.commit_positions: remapping commits write the state rows");
}

}  // namespace statexfer::impl

#endif
