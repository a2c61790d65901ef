#ifndef STATEXFER_IMPL_MOVE_LIST_HPP
#define STATEXFER_IMPL_MOVE_LIST_HPP

// The compact plan (MoveListEntry, device_types.hpp): validate()'s deciding
// launch lists the live rows that move bytes and the remapping commits, so
// that apply() costs what the batch moves rather than its capacity. The
// launch's teams decide rows independently; the last team to finish (an
// atomic count, after a fence that publishes its rows) reads every live row's
// code and plan and writes the list with a team scan, in row order.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "device_types.hpp"

namespace statexfer::impl {

/// What apply() does with a row whose code is `code` and plan flags `flags`:
/// 0 nothing, 1 move bytes, 2 swap state-row entries (a remapping commit).
KOKKOS_INLINE_FUNCTION int move_kind(std::int32_t code, std::int32_t flags) {
  if (code != 0 || !(flags & plan_active)) return 0;
  return (flags & plan_remap) ? 2 : 1;
}

/// Called by every thread of every team of a launch once its writes are done:
/// true, on every thread of it, for the last team to get here (`done` counts
/// the teams; the caller sets it back to 0). One team needs no atomic: its
/// barrier publishes its writes to itself.
template <class Member>
KOKKOS_INLINE_FUNCTION bool last_team(const Member& team, std::int32_t* done) {
  if (team.league_size() == 1) {
    team.team_barrier();
    return true;
  }
  Kokkos::memory_fence();  // every thread's writes before the team's count
  team.team_barrier();
  int last = 0;
  Kokkos::single(
      Kokkos::PerTeam(team),
      [&](int& is_last) {
        is_last = Kokkos::atomic_fetch_add(done, 1) == team.league_size() - 1 ? 1 : 0;
        if (is_last) Kokkos::memory_fence();  // every other team's writes, before the reads that follow
      },
      last);
  return last != 0;
}

/// The list of rows [0, live) by `kind(r)` (0 none, 1 moves bytes, 2 remaps:
/// move_kind()), in row order, by the calling team; `moves`' counts and
/// live_count with it, and teams_done back to 0 for the next validate().
template <class Member, class Kind, class Moves>
KOKKOS_INLINE_FUNCTION void list_rows(const Member& team, const Kind& kind, const Moves& moves, std::int32_t live,
                                      std::int32_t capacity) {
  Kokkos::parallel_scan(Kokkos::TeamThreadRange(team, live), [&](const int r, std::int32_t& at, const bool final) {
    const int k = kind(r);
    // Moves count in the low 16 bits, remaps in the high ones (C <= 4096).
    const std::int32_t one = k == 1 ? 1 : k == 2 ? (1 << 16) : 0;
    if (final) {
      if (k == 1) moves(move_rows + (at & 0xffff)) = r;
      if (k == 2) moves(move_rows + capacity - 1 - (at >> 16)) = r;
      if (r == live - 1) {
        moves(move_count) = (at + one) & 0xffff;
        moves(remap_count) = (at + one) >> 16;
      }
    }
    at += one;
  });
  Kokkos::single(Kokkos::PerTeam(team), [&] {
    if (live == 0) moves(move_count) = moves(remap_count) = 0;
    moves(live_count) = live;
    moves(teams_done) = 0;
  });
}

/// The last team of validate(): the list from the rows' codes and plans (read
/// past the cache: other teams wrote them in this launch).
template <class Member, class Plans, class Codes, class Moves>
KOKKOS_INLINE_FUNCTION void build_move_list(const Member& team, const Plans& plan, const Codes& errors,
                                            const Moves& moves, std::int32_t live, std::int32_t capacity) {
  const auto kind = [&](const int r) {
    return move_kind(*static_cast<volatile const std::int32_t*>(&errors(r)),
                     *static_cast<volatile const std::int32_t*>(&plan(r).flags));
  };
  list_rows(team, kind, moves, live, capacity);
}

}  // namespace statexfer::impl

#endif
