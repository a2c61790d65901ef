#ifndef STATEXFER_IMPL_APPLY_KERNEL_HPP
#define STATEXFER_IMPL_APPLY_KERNEL_HPP

// apply(): one launch over (command row, work item). Row tiles copy or zero the
// row's bytes outside the excluded regions; page tiles move partial and trailing
// pages between the caches and the rows. A row tile skips bytes that a page tile
// of the same snapshot writes, and a restore's trailing part 0 skips a cache page
// that its part 1 writes too, so the sequential result needs no second launch.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "device_types.hpp"
#include "wide_copy.hpp"

namespace statexfer::impl {

template <class ExecutionSpace>
struct ApplyFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace>;
  using member_type = typename policy_type::member_type;

  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, memory_space> backing;
  Kokkos::View<const std::int32_t*, memory_space> errors;
  Kokkos::View<const RowPlan*, memory_space> plan;
  Kokkos::View<const WorkItem*, memory_space> items;
  Kokkos::View<const BindingEntry*, memory_space> bindings;
  std::int32_t items_per_row;
  std::int32_t unroll;     // loads in flight per thread (tuning)
  std::int32_t streaming;  // evict-first loads and stores on CUDA (tuning)

  template <class Member>
  KOKKOS_INLINE_FUNCTION void copy_bytes(const Member& team, std::uint8_t* dst, const std::uint8_t* src,
                                   std::int64_t n) const {
    if (streaming)
      team_copy_bytes<4, true>(team, dst, src, n);
    else if (unroll >= 8)
      team_copy_bytes<8>(team, dst, src, n);
    else if (unroll <= 2)
      team_copy_bytes<2>(team, dst, src, n);
    else
      team_copy_bytes<4>(team, dst, src, n);
  }

  // Whether page `part` of binding `b` is written in this row's plan.
  KOKKOS_INLINE_FUNCTION static bool page_written(const RowPlan& p, const BindingEntry& b, std::int32_t part) {
    if (!b.trailing) return (p.flags & plan_page) != 0;
    return (p.flags & (part == 0 ? plan_trailing0 : plan_trailing1)) != 0;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const std::int64_t r = team.league_rank() / items_per_row;
    const RowPlan p = plan(r);
    if (!(p.flags & plan_active) || errors(r) != 0) return;
    const WorkItem item = items(team.league_rank() % items_per_row);
    const bool copy = (p.flags & plan_copy) != 0;
    const bool snapshot = (p.flags & plan_snapshot) != 0;

    if (item.kind == work_row) {
      std::uint8_t* dst = &backing(p.dst, 0) + item.offset;
      if (!copy) {
        team_zero_bytes(team, dst, item.length);
        return;
      }
      if (snapshot && item.binding >= 0 && page_written(p, bindings(item.binding), item.part)) return;
      copy_bytes(team, dst, &backing(p.src, 0) + item.offset, item.length);
      return;
    }

    // Page tile.
    const BindingEntry b = bindings(item.binding);
    if (!copy || !page_written(p, b, item.part)) return;
    std::int64_t page;
    if (!b.trailing) {
      page = p.page;
    } else {
      if (!snapshot && item.part == 0 && (p.flags & plan_trailing0_shadowed)) return;
      page = p.tpage[item.part];
    }
    std::uint8_t* cache = b.cache + page * b.page_bytes + item.offset;
    const std::int64_t in_row = b.region_offset + item.part * b.page_bytes + item.offset;
    if (snapshot)
      copy_bytes(team, &backing(p.dst, 0) + in_row, cache, item.length);
    else
      copy_bytes(team, cache, &backing(p.src, 0) + in_row, item.length);
  }
};

}  // namespace statexfer::impl

#endif
