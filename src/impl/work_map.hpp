#ifndef STATEXFER_IMPL_WORK_MAP_HPP
#define STATEXFER_IMPL_WORK_MAP_HPP

// The tiles of apply(), built once on the host.

#include <cstdint>
#include <utility>
#include <vector>

#include "device_types.hpp"

namespace statexfer::impl {

/// Bytes one team moves per work item: large enough to amortise the team's
/// start, small enough that a batch of large rows fills the device.
inline constexpr std::int64_t tile_bytes = 64 * 1024;
static_assert(tile_bytes < (std::int64_t(1) << 31), "apply() indexes a tile with 32-bit offsets");

/// A binding's pages inside a row: `parts` consecutive pages of `page_bytes`
/// from `offset` (1 for page bindings, 2 for trailing bindings). `joint`: its
/// pages' row bytes and cache pages move as work_joint tiles (the compact grid).
struct BindingSpan {
  std::int32_t binding;
  std::int64_t offset;
  std::int64_t page_bytes;
  std::int32_t parts;
  bool joint;
};

/// Row tiles over [0, row_bytes) minus `excluded` (split where a binding's page
/// lies, so a tile lies wholly inside one page or outside all; the 8 bytes of
/// the prefix key at `key_offset`, when >= 0, are a tile of their own, kind
/// work_key), then page tiles for every binding and part. A joint binding has
/// no row tiles, and work_joint tiles for its page tiles, which move both.
std::vector<WorkItem> build_work_map(std::int64_t row_bytes,
                                     const std::vector<std::pair<std::int64_t, std::int64_t>>& excluded,
                                     const std::vector<BindingSpan>& bindings, std::int64_t tile = tile_bytes,
                                     std::int64_t key_offset = -1);

}  // namespace statexfer::impl

#endif
