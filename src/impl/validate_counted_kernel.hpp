#ifndef STATEXFER_IMPL_VALIDATE_COUNTED_KERNEL_HPP
#define STATEXFER_IMPL_VALIDATE_COUNTED_KERNEL_HPP

// Launch 2 of the sorted validation's counted variant
// (options.expert.validate_counted_keys): launch 1 has written each live row's
// record and counted its keys in a table (key_table.hpp) instead of leaving
// them to be sorted. Teams over the live rows, a thread a row: its queries are
// probes of the table, and it is decided by decide_row() as the sorted launch
// decides, with the same counts (uncapped). Each team first empties its share
// of the table the batch before filled; the last team lists the moves and
// names that table for the next batch. No sort, no chunks: the work follows the
// live rows' keys, whatever the capacity.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "key_table.hpp"
#include "move_list.hpp"
#include "validate_sorted_kernel.hpp"

namespace statexfer::impl {

template <class ExecutionSpace>
struct CountedLookupFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  static constexpr int rows_per_team = 128;
  // A thread a row; the bounds of the sorted look-up launch, whose decisions fit them without a stack frame.
  using policy_type = typename SortedLookupFunctor<ExecutionSpace>::policy_type;
  using member_type = typename policy_type::member_type;

  ValidateFunctor<ExecutionSpace> base;
  SortedWork<memory_space> work;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int c = static_cast<int>(base.shape.capacity);
    const int g = team.league_rank(), teams = team.league_size();
    const auto in = base.limit_inputs();
    const int live = base.live_rows(in);
    // Launch 1 has read the mark; plans written by this validate() are the live rows' only.
    if (g == 0 && team.team_rank() == 0) work.planned() = live;
    if (work.first_decides(live)) return;  // launch 1 decided a few live rows
    const KeyTable<memory_space>& t = work.table;
    const int turn = t.state(0), other = 1 - turn;
    // The other table's keys, those of the last batch that filled it, emptied for the next.
    const int filled = t.state(1 + other);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, slice(filled, g, teams), slice(filled, g + 1, teams)),
                         [&](const int r) { t.clear_row(other, r); });
    const ValidateLimits lim = base.limits(in);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, slice(live, g, teams), slice(live, g + 1, teams)),
                         [&](const int r) { decide(turn, r, lim); });
    if (!last_team_of(team, &base.moves(teams_done), teams)) return;
    Kokkos::single(Kokkos::PerTeam(team), [&] { t.state(0) = other; });
    build_move_list(team, base.plan, base.errors, base.moves, live, c);
  }

  KOKKOS_INLINE_FUNCTION static int slice(int n, int g, int teams) {
    return static_cast<int>(std::int64_t(n) * g / teams);
  }

  /// Live row r, its queries answered by turn `turn`'s table.
  KOKKOS_INLINE_FUNCTION void decide(const int turn, const int r, const ValidateLimits& lim) const {
    const KeyTable<memory_space>& t = work.table;
    const RowRecord q = work.records(r);
    const RowCheck k = row_check(q, r, lim);
    int in[lookup_bytes] = {};
    if (k.check) {
      if (q.dst_key > 0) {
        in[lookup_dst_in_dst] = t.count(turn, sorted_dst, static_cast<std::uint64_t>(q.dst_key));
        in[lookup_dst_in_src] = t.count(turn, sorted_src, source_key(q.dst_key, false)) +
                                t.count(turn, sorted_src, source_key(q.dst_key, true));
      }
      if (q.src_key > 0) {
        in[lookup_src_in_dst] = t.count(turn, sorted_dst, static_cast<std::uint64_t>(q.src_key));
        if (base.shape.positions > 0) {
          const int written = t.count(turn, sorted_src, source_key(q.src_key, true));
          if (q.kind & row_commit)
            in[lookup_src_in_src] = t.count(turn, sorted_src, source_key(q.src_key, false)) + written;
          in[lookup_src_in_written] = written;
        }
      }
      const std::int64_t page = peer_page(q);
      if (page >= 0) {
        const bool restore = (q.kind & row_pages) && q.dst == q.state;
        const int restores = t.count(turn, sorted_page, page_key(page, true));
        in[lookup_page] = restore ? t.count(turn, sorted_page, page_key(page, false)) + restores : restores;
      }
      if (work.arrays > sorted_trailing0) {
        const bool snapshot = is_snapshot_row(q);
        for (int part = 0; part < 2; ++part) {
          const std::int64_t entry = q.tpage[part] != trailing_unused ? q.tpage[part] : -1;
          for (int a = 0; a < 2; ++a)
            in[lookup_trailing + 2 * a + part] =
                t.count(turn, sorted_trailing0 + a, trailing_key(entry, false)) +
                (snapshot ? 0 : t.count(turn, sorted_trailing0 + a, trailing_key(entry, true)));
        }
      }
    }
    decide_row(base, q, r, k, lim, in);
  }
};

}  // namespace statexfer::impl

#endif
