#ifndef STATEXFER_IMPL_VALIDATE_KERNEL_HPP
#define STATEXFER_IMPL_VALIDATE_KERNEL_HPP

// validate(): one team computes the code of every command row (SPEC §4), main
// and trailing checks in one launch, and the plan apply() follows.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "device_types.hpp"

namespace statexfer::impl {

/// Everything validation needs of one command row, read from global memory in
/// one pass (two levels of dependent loads), so that the code of each row is
/// then decided from team scratch alone.
struct RowRecord {
  std::int64_t src;
  std::int64_t dst;
  std::int64_t end;
  std::int64_t state;          // state_rows[slot][0] for a valid slot, else 0
  std::int64_t request_consumed;  // request_consumed[slot][0] for a valid slot, else -1
  std::int64_t pool_consumed;  // consumed_tokens of row src when it is a pool row, else -1
  std::int64_t table_entry;    // tables[slot][end / PT] when slot, endpoint and page are in range, else -1
  std::int64_t tpage[2];       // trailing_tables entry of each part when the part is used, else trailing_unused
  std::int32_t op;
  std::int32_t valid_slot;     // 0 <= slot < C
};

inline constexpr std::int64_t trailing_unused = INT64_MIN;

template <class ExecutionSpace>
struct ValidateFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace>;
  using member_type = typename policy_type::member_type;
  using record_view =
      Kokkos::View<RowRecord*, typename ExecutionSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

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

  static std::size_t scratch_bytes(std::int64_t capacity) { return record_view::shmem_size(capacity); }

  KOKKOS_INLINE_FUNCTION RowRecord load_row(std::int64_t r) const {
    const std::int64_t pt = shape.page_tokens, w = shape.width;
    RowRecord q;
    const std::int64_t slot = request_slots(r);
    q.src = source_slots(r);
    q.dst = destination_slots(r);
    q.end = expected_consumed(r);
    q.op = operation(r);
    q.valid_slot = slot >= 0 && slot < shape.capacity;
    q.state = q.valid_slot ? state_rows(slot, 0) : 0;
    q.request_consumed = q.valid_slot ? request_consumed(slot, 0) : -1;
    q.pool_consumed = (q.src > 0 && q.src < shape.rows)
                          ? *reinterpret_cast<const std::int64_t*>(&backing(q.src, shape.consumed_offset))
                          : -1;
    const std::int64_t logical = q.end > 0 ? q.end / pt : -1;
    q.table_entry = (q.valid_slot && logical >= 0 && logical < w) ? std::int64_t(tables(slot, logical)) : -1;
    for (int part = 0; part < 2; ++part) {
      q.tpage[part] = trailing_unused;
      if (!shape.has_trailing || !q.valid_slot || q.end <= 1) continue;
      const std::int64_t t_logical = q.end / pt - 1 + part;  // end > 1: cannot overflow
      if (t_logical < 0 || t_logical >= w || (part == 1 && q.end % pt < 2)) continue;
      q.tpage[part] = trailing_tables(slot, t_logical);
    }
    return q;
  }

  // The partial page another row's conflict check sees (o_page), or -1.
  KOKKOS_INLINE_FUNCTION std::int64_t peer_page(const RowRecord& o) const {
    const bool copy = o.op == 0;
    const bool tail = copy && (o.src == o.state || o.dst == o.state) && o.end > 0 && o.end % shape.page_tokens != 0;
    return tail ? o.table_entry : -1;
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
    record_view rows(team.team_scratch(0), c);

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c), [&](const std::int64_t r) { rows(r) = load_row(r); });
    team.team_barrier();

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c), [&](const std::int64_t r) {
      const RowRecord q = rows(r);
      const bool live = r < count;
      const bool valid_row = q.valid_slot && q.state > 0 && q.state < slots;
      const bool snapshot = valid_row && q.src == q.state && q.dst > 0 && q.dst < slots && q.src != q.dst;
      const bool restore = valid_row && q.dst == q.state && q.src > 0 && q.src < slots && q.src != q.dst;
      const bool reset = valid_row && q.op == 1 && q.src == -1 && q.dst == q.state;
      const bool copying = q.op == 0;
      const bool valid_slots = (copying && (snapshot || restore)) || reset;
      std::int64_t consumed = -1;
      if (snapshot)
        consumed = q.request_consumed;
      else if (copying && q.src > 0 && q.src < slots)
        consumed = q.pool_consumed;
      const bool valid_endpoint = copying ? (q.end > 0 && q.end == consumed && q.end <= w * pt) : q.end == 0;
      const bool tail = copying && q.end > 0 && q.end % pt != 0;
      const std::int64_t page = (live && tail && valid_slots) ? q.table_entry : -1;

      std::int32_t code = 0;
      if (bad_count) {
        code = 5;
      } else if (live) {
        if (q.op != 0 && q.op != 1) {
          code = 1;
        } else if (!valid_slots) {
          code = 2;
        } else if (!valid_endpoint) {
          code = 3;
        } else {
          bool conflict = false;
          for (std::int64_t o = 0; o < count && !conflict; ++o) {
            if (o == r) continue;
            const RowRecord& p = rows(o);
            const bool p_copy = p.op == 0;
            conflict = q.dst == p.dst || (copying && q.src == p.dst) || (p_copy && q.dst == p.src) ||
                       (page >= 0 && page == peer_page(p) && (restore || (p_copy && p.dst == p.state)));
          }
          if (conflict)
            code = 4;
          else if (tail && (page < 0 || page >= pages))
            code = 6;
        }
      }

      RowPlan plan_row{q.src, q.dst, 0, static_cast<std::int32_t>(page), {-1, -1}};
      // Trailing pages: rows still at 0, copies only; part 1 overrides part 0.
      if (shape.has_trailing && code == 0 && live && copying) {
        const bool row_snapshot = q.src == q.state;
        for (int part = 0; part < 2; ++part) {
          const std::int64_t t_logical = q.end / pt - 1 + part;  // end > 1: cannot overflow
          const bool t_tail = q.end > 1 && t_logical >= 0 && (part == 0 || q.end % pt >= 2);
          if (!t_tail) continue;
          const std::int64_t t_page = q.tpage[part] != trailing_unused ? q.tpage[part] : -1;
          bool conflict = false;
          for (std::int64_t o = 0; o < count && !conflict; ++o) {
            const RowRecord& p = rows(o);
            if (o == r || p.op != 0 || !p.valid_slot || (row_snapshot && p.src == p.state)) continue;
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
          if (q.src == q.state) plan_row.flags |= plan_snapshot;
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
