#ifndef STATEXFER_IMPL_COMPACT_APPLY_KERNEL_HPP
#define STATEXFER_IMPL_COMPACT_APPLY_KERNEL_HPP

// apply() over the compact plan validate() left (move_list.hpp): a fixed
// league of teams, about one wave on GPUs, strides over the units of the rows
// that move bytes (a unit: what a team moves at once, 8 KiB on GPUs, a work
// item on hosts), and team 0 swaps the remapping commits' state-row entries.
// A row past num_ops, refused, a remap or an empty slot adds no unit, so a
// partly filled batch costs what it moves; a team reads the list, the row's
// plan and code and the work item per unit (cached after the first), and
// copies with the flat grid's moves (few registers: the teams of a wave keep
// as many bytes in flight as the flat grid's blocks).

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "apply_kernel.hpp"
#include "device_types.hpp"
#include "flat_apply_kernel.hpp"
#include "move_list.hpp"
#include "row_claims.hpp"

namespace statexfer::impl {

template <class ExecutionSpace>
struct CompactApplyFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  static constexpr bool host = std::is_same_v<memory_space, Kokkos::HostSpace>;
  // 128 threads moving four 16-byte words each a round: 8 KiB units.
  static constexpr int team_threads = 128;
  static constexpr int words_per_thread = 4;
  static constexpr std::int64_t unit_bytes = team_threads * words_per_thread * 16;
  // Twelve teams an SM fit 40 registers a thread, which four words in flight need (as the flat grid's).
  static constexpr int teams_per_sm = 12;
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<team_threads, teams_per_sm>>;
  using member_type = typename policy_type::member_type;

  Kokkos::View<const std::int32_t*, memory_space> errors;
  Kokkos::View<const RowPlan*, memory_space> plan;
  Kokkos::View<const WorkItem*, memory_space> items;
  Kokkos::View<std::int32_t*, memory_space> moves;                             // the compact plan
  Kokkos::View<std::int32_t*, memory_space> claims;                            // row claims (§15); empty: none
  Kokkos::View<const std::int64_t*, memory_space> claimed;                     // what validate() claimed
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, memory_space> state_rows;  // written by remapping commits
  std::int32_t capacity = 1;
  std::int32_t items_per_row = 1;
  std::int32_t units_per_item = 1;  // units covering the longest work item (1 on hosts: a unit is an item)

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int t = team.team_rank(), threads = team.team_size();
    const std::int32_t n_move = moves(move_count), n_remap = moves(remap_count);
    // The remaps, by team 0: `errors` still vetoes (combined across ranks since validate()).
    if (team.league_rank() == 0)
      for (int j = t; j < n_remap; j += threads) {
        const std::int32_t r = moves(move_rows + capacity - 1 - j);
        if (errors(r) == 0) remap_state_rows(state_rows, plan(r));
      }
    // Units fit int32: prepare() takes another design where C x items x units would not.
    const std::int32_t per_row = items_per_row * units_per_item;
    const std::int32_t total = n_move * per_row;
    for (std::int32_t v = team.league_rank(); v < total; v += team.league_size()) {
      const std::int32_t k = v / per_row, rest = v - k * per_row;
      const std::int32_t item_index = rest / units_per_item, unit = rest - item_index * units_per_item;
      const std::int32_t r = moves(move_rows + k);
      const ItemMove m = item_move(plan(r), errors(r), items(item_index));
      const std::int64_t at = host ? 0 : std::int64_t(unit) * unit_bytes;
      if (at >= m.length) continue;
      if (m.stamp) {
        if (t == 0) stamp_key(m.dst, plan(r).key);
        continue;
      }
      const std::int64_t left = m.length - at;
      std::uint8_t* dst = m.dst + at;
      const std::uint8_t* src = m.src == nullptr ? nullptr : m.src + at;
      if constexpr (host) {
        // Hosts: a unit is a whole work item, moved by the C library (teams of one).
        if (t == 0)
          src == nullptr ? (void)std::memset(dst, 0, static_cast<std::size_t>(left))
                         : (void)std::memcpy(dst, src, static_cast<std::size_t>(left));
      } else {
        const int n = static_cast<int>(left < unit_bytes ? left : unit_bytes);
        flat_move_widest<words_per_thread>(dst, src, n, t, threads);
      }
    }
    // With row claims, the last team releases them once every team's bytes are written.
    if (claims.extent(0) > 0 && last_team(team, &moves(apply_done))) {
      release_claims(team, claims, claimed, moves(live_count));
      Kokkos::single(Kokkos::PerTeam(team), [&] { moves(apply_done) = 0; });
    }
  }
};

}  // namespace statexfer::impl

#endif
