#ifndef STATEXFER_IMPL_VALIDATE_KERNEL_HPP
#define STATEXFER_IMPL_VALIDATE_KERNEL_HPP

// validate(): one team computes the code of every command row (SPEC §4), main
// and trailing checks in one launch, and the plan apply() follows.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "device_types.hpp"

namespace statexfer::impl {

/// What other rows need to know about a row when checking for conflicts.
struct PeerRecord {
  std::int64_t src;
  std::int64_t dst;
  std::int64_t main_page;   // its partial page when it has one (o_page), else -1
  std::int64_t tpage[2];    // trailing pages of its used parts, else trailing_unused
  std::int32_t copy;        // operation == 0
  std::int32_t restore;     // copy && dst == state
  std::int32_t snapshot;    // src == state (the trailing checks' reading)
  std::int32_t trailing_peer;  // operation == 0 and a valid request slot
};

inline constexpr std::int64_t trailing_unused = INT64_MIN;

template <class ExecutionSpace>
struct ValidateFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace>;
  using member_type = typename policy_type::member_type;
  using peer_view =
      Kokkos::View<PeerRecord*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

  Kokkos::View<const std::int64_t*, memory_space> request_slots, source_slots, destination_slots, expected_consumed;
  Kokkos::View<const std::int32_t*, memory_space> operation, num_ops;
  Kokkos::View<std::int32_t*, memory_space> errors;
  Kokkos::View<RowPlan*, memory_space> plan;
  Kokkos::View<const std::int64_t*, memory_space> memory_capacity;
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, memory_space> backing;
  Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, memory_space> tables, trailing_tables;
  Kokkos::View<const std::int64_t**, Kokkos::LayoutRight, memory_space> state_rows;
  Kokkos::View<const std::int64_t**, Kokkos::LayoutStride, memory_space> request_consumed;
  TransferShape shape;

  static std::size_t scratch_bytes(std::int64_t capacity) { return peer_view::shmem_size(capacity); }

  KOKKOS_INLINE_FUNCTION std::int64_t state_of(std::int64_t slot) const {
    return (slot >= 0 && slot < shape.capacity) ? state_rows(slot, 0) : 0;
  }

  KOKKOS_INLINE_FUNCTION std::int64_t pool_consumed(std::int64_t row) const {
    return *reinterpret_cast<const std::int64_t*>(&backing(row, shape.consumed_offset));
  }

  // The trailing page of `slot` for `part` when that part is used (SPEC §4), else trailing_unused.
  KOKKOS_INLINE_FUNCTION std::int64_t used_trailing_page(std::int64_t slot, std::int64_t end, int part) const {
    const std::int64_t pt = shape.page_tokens;
    if (end <= 1) return trailing_unused;
    const std::int64_t logical = end / pt + part - 1;
    if (logical < 0 || logical >= shape.width) return trailing_unused;
    if (part == 1 && end % pt < 2) return trailing_unused;
    return trailing_tables(slot, logical);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const std::int64_t c = shape.capacity;
    const std::int64_t pt = shape.page_tokens;
    const std::int64_t w = shape.width;
    const std::int64_t count = num_ops(0);
    // Usable rows and pages, never past what the Views hold.
    const std::int64_t slots = memory_capacity(0) < shape.rows ? memory_capacity(0) : shape.rows;
    const std::int64_t pages = memory_capacity(1) < shape.cache_pages ? memory_capacity(1) : shape.cache_pages;
    const bool bad_count = count < 0 || count > c;
    peer_view peers(team.team_scratch(0), c);

    // Phase 1: what every row shows the others.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c), [&](const std::int64_t o) {
      PeerRecord p;
      const std::int64_t slot = request_slots(o);
      const bool valid_slot = slot >= 0 && slot < c;
      const std::int64_t state = state_of(slot);
      const std::int64_t end = expected_consumed(o);
      p.src = source_slots(o);
      p.dst = destination_slots(o);
      p.copy = operation(o) == 0;
      p.snapshot = p.src == state;
      p.restore = p.copy && p.dst == state;
      const bool tail = (p.copy && p.snapshot || p.restore) && end > 0 && end % pt != 0;
      const std::int64_t logical = end > 0 ? end / pt : -1;
      p.main_page = (tail && valid_slot && logical >= 0 && logical < w) ? tables(slot, logical) : -1;
      p.trailing_peer = p.copy && valid_slot;
      for (int part = 0; part < 2; ++part)
        p.tpage[part] = (shape.has_trailing && p.trailing_peer) ? used_trailing_page(slot, end, part) : trailing_unused;
      peers(o) = p;
    });
    team.team_barrier();

    // Phase 2: the code of every row, then its plan.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c), [&](const std::int64_t r) {
      const bool live = r < count;
      const std::int64_t slot = request_slots(r);
      const std::int64_t src = source_slots(r);
      const std::int64_t dst = destination_slots(r);
      const std::int32_t op = operation(r);
      const std::int64_t end = expected_consumed(r);
      const bool valid_slot = slot >= 0 && slot < c;
      const std::int64_t state = state_of(slot);
      const bool valid_row = valid_slot && state > 0 && state < slots;
      const bool snapshot = valid_row && src == state && dst > 0 && dst < slots && src != dst;
      const bool restore = valid_row && dst == state && src > 0 && src < slots && src != dst;
      const bool reset = valid_row && op == 1 && src == -1 && dst == state;
      const bool copying = op == 0;
      const bool valid_slots = (copying && (snapshot || restore)) || reset;
      std::int64_t consumed = -1;
      if (snapshot)
        consumed = request_consumed(slot, 0);
      else if (live && copying && src > 0 && src < slots)
        consumed = pool_consumed(src);
      const bool valid_endpoint = copying ? (end > 0 && end == consumed && end <= w * pt) : end == 0;
      const bool tail = copying && end > 0 && end % pt != 0;
      const std::int64_t logical = end > 0 ? end / pt : -1;
      const std::int64_t page =
          (live && tail && valid_slots && logical >= 0 && logical < w) ? std::int64_t(tables(slot, logical)) : -1;

      std::int32_t code = 0;
      if (bad_count) {
        code = 5;
      } else if (live) {
        if (op != 0 && op != 1) {
          code = 1;
        } else if (!valid_slots) {
          code = 2;
        } else if (!valid_endpoint) {
          code = 3;
        } else {
          bool conflict = false;
          for (std::int64_t o = 0; o < count && !conflict; ++o) {
            if (o == r) continue;
            const PeerRecord& p = peers(o);
            conflict = dst == p.dst || (copying && src == p.dst) || (p.copy && dst == p.src) ||
                       (page >= 0 && page == p.main_page && (restore || p.restore));
          }
          if (conflict)
            code = 4;
          else if (tail && (page < 0 || page >= pages))
            code = 6;
        }
      }

      RowPlan plan_row{src, dst, 0, static_cast<std::int32_t>(page), {-1, -1}};
      // Trailing pages: rows still at 0, copies only; part 1 overrides part 0.
      if (shape.has_trailing && code == 0 && live && copying) {
        const bool row_snapshot = src == state;
        for (int part = 0; part < 2; ++part) {
          const std::int64_t t_logical = end / pt + part - 1;
          const bool t_tail = end > 1 && t_logical >= 0 && (part == 0 || end % pt >= 2);
          if (!t_tail) continue;
          const std::int64_t t_page = t_logical < w ? std::int64_t(trailing_tables(slot, t_logical)) : -1;
          bool conflict = false;
          for (std::int64_t o = 0; o < count && !conflict; ++o) {
            const PeerRecord& p = peers(o);
            if (o == r || !p.trailing_peer || (row_snapshot && p.snapshot)) continue;
            conflict = p.tpage[0] == t_page || p.tpage[1] == t_page;
          }
          if (t_page < 0 || t_page >= pages) code = 6;
          if (conflict) code = 4;
          plan_row.tpage[part] = static_cast<std::int32_t>(t_page);
          plan_row.flags |= part == 0 ? plan_trailing0 : plan_trailing1;
        }
        if (!row_snapshot && (plan_row.flags & plan_trailing0) && (plan_row.flags & plan_trailing1) &&
            plan_row.tpage[0] == plan_row.tpage[1])
          plan_row.flags |= plan_trailing0_shadowed;
      }
      if (code == 0 && live) {
        plan_row.flags |= plan_active;
        if (copying) {
          plan_row.flags |= plan_copy;
          if (src == state) plan_row.flags |= plan_snapshot;
          if (tail) plan_row.flags |= plan_page;
        }
      } else {
        plan_row.flags = 0;
      }
      errors(r) = code;
      plan(r) = plan_row;
    });
  }
};

}  // namespace statexfer::impl

#endif
