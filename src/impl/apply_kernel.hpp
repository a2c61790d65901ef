#ifndef STATEXFER_IMPL_APPLY_KERNEL_HPP
#define STATEXFER_IMPL_APPLY_KERNEL_HPP

// apply(): one launch over (command row, work item). Row tiles copy or zero the
// row's bytes outside the excluded regions; page tiles move partial and trailing
// pages between the caches and the rows. A row tile skips bytes that a page tile
// of the same snapshot writes, and a restore's trailing part 0 skips a cache page
// that its part 1 writes too, so the sequential result needs no second launch.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "bulk_copy.hpp"
#include "device_types.hpp"
#include "wide_copy.hpp"

namespace statexfer::impl {

/// What one work item of a row does: copy `length` bytes from src to dst, zero
/// them (src null), or nothing (length 0); or, `stamp`, write the 8 bytes of
/// `key` at dst (a snapshot's prefix key, docs/CONTRACT.md §14).
struct ItemMove {
  std::uint8_t* dst;
  const std::uint8_t* src;
  std::int64_t length;
  std::int32_t stamp;  // the key tile of a snapshot: the caller writes the plan's key (no key here: registers)
};

/// The key tile of a snapshot with prefix keys, by one thread (dst is 8-byte
/// aligned: the region's offset, row_bytes and the backings are).
KOKKOS_INLINE_FUNCTION void stamp_key(std::uint8_t* dst, std::int64_t key) {
  *reinterpret_cast<std::int64_t*>(dst) = key;
}

/// A remapping commit (docs/CONTRACT.md §13), by one thread: the accepted
/// position's row becomes the slot's live row and the live row takes its column.
template <class StateRows>
KOKKOS_INLINE_FUNCTION void remap_state_rows(const StateRows& state_rows, const RowPlan& p) {
  state_rows(p.slot, 0) = p.position_row;
  state_rows(p.slot, p.accepted) = p.live_row;
}

// Whether page `part` of binding `b` is written in this row's plan.
KOKKOS_INLINE_FUNCTION bool page_written(const RowPlan& p, const BindingEntry& b, std::int32_t part) {
  if (!b.trailing) return (p.flags & plan_page) != 0;
  return (p.flags & (part == 0 ? plan_trailing0 : plan_trailing1)) != 0;
}

/// Whether a copy's plan `p` moves page `part` of binding `b`: written, and not a restore's trailing part 0
/// whose part 1 writes the same cache page after it.
KOKKOS_INLINE_FUNCTION bool page_moves(const RowPlan& p, const BindingEntry& b, std::int32_t part) {
  if (!page_written(p, b, part)) return false;
  return !(b.trailing && part == 0 && !(p.flags & plan_snapshot) && (p.flags & plan_trailing0_shadowed));
}

/// Bytes at `offset` of the cache page that page `part` of binding `b` is in plan `p`.
KOKKOS_INLINE_FUNCTION std::uint8_t* cache_page(const RowPlan& p, const BindingEntry& b, std::int32_t part,
                                                std::int64_t offset) {
  // A select, not an index: indexing the plan with a run-time value puts it in local memory.
  const std::int64_t page = !b.trailing ? p.page : part == 0 ? p.tpage[0] : p.tpage[1];
  return b.cache + page * b.page_bytes + offset;
}

/// Work item `item` of a row whose plan is `p` and error `error`.
KOKKOS_INLINE_FUNCTION ItemMove item_move(const RowPlan& p, std::int32_t error, const WorkItem& item) {
  ItemMove m{nullptr, nullptr, 0, 0};
  if (!(p.flags & plan_active) || error != 0 || (p.flags & plan_remap)) return m;
  const bool copy = (p.flags & plan_copy) != 0;
  const bool snapshot = (p.flags & plan_snapshot) != 0;
  if (item.kind != work_page) {  // a row tile, or the key tile
    if (copy && snapshot && item.binding >= 0 && page_written(p, item.page, item.part)) return m;
    m.dst = p.dst_row + item.offset;
    if (item.kind == work_key && (p.flags & plan_stamp)) {
      m.stamp = 1;
      m.length = 8;
      return m;
    }
    m.src = copy ? p.src_row + item.offset : nullptr;
    m.length = item.length;
    return m;
  }
  // Page tile.
  const BindingEntry& b = item.page;
  if (!copy || !page_written(p, b, item.part)) return m;
  std::int64_t page;
  if (!b.trailing) {
    page = p.page;
  } else {
    if (!snapshot && item.part == 0 && (p.flags & plan_trailing0_shadowed)) return m;
    // A select, not an index: indexing the plan with a run-time value puts it in local memory.
    page = item.part == 0 ? p.tpage[0] : p.tpage[1];
  }
  std::uint8_t* cache = b.cache + page * b.page_bytes + item.offset;
  const std::int64_t in_row = b.region_offset + item.part * b.page_bytes + item.offset;
  if (snapshot) {
    m.dst = p.dst_row + in_row;
    m.src = cache;
  } else {
    m.dst = cache;
    m.src = p.src_row + in_row;
  }
  m.length = item.length;
  return m;
}

/// A team per (command row, work item): league = capacity x items per row.
template <class ExecutionSpace>
struct ApplyFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace>;
  using member_type = typename policy_type::member_type;

  Kokkos::View<const std::int32_t*, memory_space> errors;
  Kokkos::View<const RowPlan*, memory_space> plan;
  Kokkos::View<const WorkItem*, memory_space> items;
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, memory_space> state_rows;  // written by remapping commits
  std::int32_t items_per_row;  // capacity * items_per_row < 2^31: the constructor checks
  std::int32_t bulk;           // stage copies through team scratch with bulk copies (CUDA, sm_90+)

  // Host teams of one thread copy with the C library, which knows the CPU. On
  // Hopper, one thread of the team moves the 16-byte-aligned body with bulk
  // copies (`staging`: its team scratch) while the others copy the edge bytes.
  KOKKOS_INLINE_FUNCTION static void copy_range(const member_type& team, std::uint8_t* staging, std::uint8_t* dst,
                                                const std::uint8_t* src, std::int64_t n) {
    if constexpr (std::is_same_v<memory_space, Kokkos::HostSpace>) {
      if (team.team_size() == 1) {
        std::memcpy(dst, src, static_cast<std::size_t>(n));
        return;
      }
    }
#if defined(STATEXFER_IMPL_BULK_COPY_DEVICE)
    const auto d = reinterpret_cast<std::uintptr_t>(dst), s = reinterpret_cast<std::uintptr_t>(src);
    if (staging != nullptr && n >= bulk_min_bytes && ((d ^ s) & 15) == 0) {
      const int len = static_cast<int>(n);
      const int head = static_cast<int>((16 - (d & 15)) & 15);
      const int body = (len - head) & ~15;
      copy_edge_bytes(team, dst, src, head, head + body, len);
      if (team.team_rank() == 0) bulk_copy_thread(dst + head, src + head, body, staging);
      return;
    }
#else
    (void)staging;
#endif
    team_copy_bytes(team, dst, src, static_cast<int>(n));
  }

  KOKKOS_INLINE_FUNCTION static void zero_range(const member_type& team, std::uint8_t* dst, std::int64_t n) {
    if constexpr (std::is_same_v<memory_space, Kokkos::HostSpace>) {
      if (team.team_size() == 1) {
        std::memset(dst, 0, static_cast<std::size_t>(n));
        return;
      }
    }
    team_zero_bytes(team, dst, static_cast<int>(n));
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    std::uint8_t* staging = bulk ? static_cast<std::uint8_t*>(
                                       team.team_scratch(0).get_shmem(static_cast<std::ptrdiff_t>(bulk_scratch_bytes)))
                                 : nullptr;
    run_item(team, staging, team.league_rank());
  }

  // 32-bit indices: a 64-bit division alone costs a GPU thread a long chain.
  KOKKOS_INLINE_FUNCTION void run_item(const member_type& team, std::uint8_t* staging, std::int32_t w) const {
    const std::int32_t r = w / items_per_row;
    // Three independent loads before any branch: one round trip, not three.
    const RowPlan p = plan(r);
    const std::int32_t error = errors(r);
    const std::int32_t item_index = w - r * items_per_row;
    const WorkItem item = items(item_index);
    run_plan(team, staging, p, error, item, item_index);
  }

  /// Work item `item` (number `item_index`) of a row whose plan is `p` and error `error`.
  KOKKOS_INLINE_FUNCTION void run_plan(const member_type& team, std::uint8_t* staging, const RowPlan& p,
                                       std::int32_t error, const WorkItem& item, std::int32_t item_index) const {
    if ((p.flags & plan_remap) && (p.flags & plan_active) && error == 0) {
      if (item_index == 0 && team.team_rank() == 0) remap_state_rows(state_rows, p);
      return;
    }
    const ItemMove m = item_move(p, error, item);
    if (m.length == 0) return;
    if (m.stamp) {
      if (team.team_rank() == 0) stamp_key(m.dst, p.key);
      return;
    }
    // Host tier rows are reached through mapped (UVA) addresses: the team's loads and stores, not bulk copies.
    if (p.flags & plan_host) staging = nullptr;
    if (m.src == nullptr)
      zero_range(team, m.dst, m.length);
    else
      copy_range(team, staging, m.dst, m.src, m.length);
  }
};

/// Writes 1 when the device code that runs has bulk copies, else 0.
template <class MemorySpace>
struct BulkCopyProbe {
  Kokkos::View<int, MemorySpace> flag;
  KOKKOS_INLINE_FUNCTION void operator()(int) const {
#if defined(STATEXFER_IMPL_BULK_COPY_DEVICE)
    flag() = 1;
#else
    flag() = 0;
#endif
  }
};

/// Whether the code that runs on `exec`'s device has bulk copies: an sm_80 build
/// runs on a Hopper device too, compiled from its PTX and without them. One
/// small kernel and a fence: for prepare() only.
template <class ExecutionSpace>
bool device_has_bulk_copy(const ExecutionSpace& exec) {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<int, memory_space> flag(Kokkos::view_alloc(exec, "statexfer::bulk_copy_probe"));
  Kokkos::parallel_for("statexfer::bulk_copy_probe", Kokkos::RangePolicy<ExecutionSpace>(exec, 0, 1),
                       BulkCopyProbe<memory_space>{flag});
  int has = 0;
  Kokkos::deep_copy(exec, Kokkos::View<int, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&has), flag);
  exec.fence();
  return has == 1;
}

}  // namespace statexfer::impl

#endif
