#ifndef STATEXFER_IMPL_MOVE_LIST_HPP
#define STATEXFER_IMPL_MOVE_LIST_HPP

// The compact plan (MoveListEntry, device_types.hpp): validate()'s deciding
// launch lists the live rows that move bytes and the remapping commits, so
// that apply() costs what the batch moves rather than its capacity. Where one
// team decides every row, a thread each (LaunchPlan::listed_plans), each
// listed row's plan beside it too, from the thread's registers, so that
// apply() reaches a unit's bytes with one round of loads (list, listed plan,
// work item), as the flat grid does; read back by another team it cost more
// than apply() gains (perf_tests/DESIGN-NOTES.md). The
// launch's teams decide rows independently; the last team to finish (an
// atomic count, after a fence that publishes its rows) reads every live row's
// code and plan and writes the list, in row order (list_rows()), or team 0
// alone after its barrier when its rows hold every live row
// (ValidateFunctor::list_moves).

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "device_types.hpp"

namespace statexfer::impl {

/// What apply() does with a row whose code is `code` and plan flags `flags`:
/// 0 nothing, 1 move bytes, 2 swap state-row entries (a remapping commit).
KOKKOS_INLINE_FUNCTION int move_kind(std::int32_t code, std::int32_t flags) {
  if (code != 0 || !(flags & plan_active)) return 0;
  return (flags & plan_remap) ? 2 : 1;
}

/// Called by every thread of each of `teams` teams of a launch once its writes
/// are done: true, on every thread of it, for the last team to get here
/// (`done` counts the teams; the caller sets it back to 0). One team needs no
/// atomic: its barrier publishes its writes to itself.
template <class Member>
KOKKOS_INLINE_FUNCTION bool last_team_of(const Member& team, std::int32_t* done, int teams) {
  if (teams == 1) {
    team.team_barrier();
    return true;
  }
  Kokkos::memory_fence();  // every thread's writes before the team's count
  team.team_barrier();
  int last = 0;
  Kokkos::single(
      Kokkos::PerTeam(team),
      [&](int& is_last) {
        is_last = Kokkos::atomic_fetch_add(done, 1) == teams - 1 ? 1 : 0;
        if (is_last) Kokkos::memory_fence();  // every other team's writes, before the reads that follow
      },
      last);
  return last != 0;
}

/// last_team_of() the whole league.
template <class Member>
KOKKOS_INLINE_FUNCTION bool last_team(const Member& team, std::int32_t* done) {
  return last_team_of(team, done, team.league_size());
}

/// Team scratch list_rows() takes after its caller's: a count per thread and
/// the slack of its alignment. Launches of the functors that list rows add it.
KOKKOS_INLINE_FUNCTION constexpr std::size_t list_scratch_bytes(int team_size) {
  return static_cast<std::size_t>(team_size) * sizeof(std::int32_t) + sizeof(std::int64_t);
}

/// The list of rows [0, live) by `kind(r)` (0 none, 1 moves bytes, 2 remaps:
/// move_kind()), in row order, by the calling team; `moves`' counts and
/// live_count with it, and teams_done back to 0 for the next validate().
/// `emit(r, k)` is called for each row that moves bytes, at its index k in the
/// list, by the thread that lists it (the listed plans).
/// Each thread takes a contiguous run of rows: it counts them, the runs'
/// counts are scanned in team scratch (list_scratch_bytes()), and it writes
/// its run's entries. Not Kokkos' team scan: Kokkos 3.4's on CUDA keeps an
/// abort (a printf, a stack frame) in every kernel that calls it, and it
/// scans once per team_size rows where this scans once. Every lane of a
/// thread runs this alike: each writes the same values.
template <class Member, class Kind, class Moves, class Emit>
KOKKOS_INLINE_FUNCTION void list_rows(const Member& team, const Kind& kind, const Moves& moves, std::int32_t live,
                                      std::int32_t capacity, const Emit& emit) {
  const int threads = team.team_size(), t = team.team_rank();
  auto* counts = static_cast<std::int32_t*>(team.team_scratch(0).get_shmem_aligned(
      static_cast<std::ptrdiff_t>(threads * sizeof(std::int32_t)), static_cast<std::ptrdiff_t>(sizeof(std::int64_t))));
  // Moves count in the low 16 bits, remaps in the high ones (C <= 4096).
  const auto weight = [](const int k) -> std::int32_t { return k == 1 ? 1 : k == 2 ? (1 << 16) : 0; };
  const int per = (live + threads - 1) / threads;  // rows per thread
  const int owners = per > 0 ? (live + per - 1) / per : 0;
  const int begin = t * per, end = begin + per < live ? begin + per : live;
  std::int32_t mine = 0;
  for (int r = begin; r < end; ++r) mine += weight(kind(r));
  if (t < owners) counts[t] = mine;
  // Inclusive scan of the owners' counts; both reads before the barrier that precedes the write.
  for (int d = 1; d < owners; d *= 2) {
    team.team_barrier();
    const std::int32_t sum = t < owners ? counts[t] + (t >= d ? counts[t - d] : 0) : 0;
    team.team_barrier();
    if (t < owners) counts[t] = sum;
  }
  team.team_barrier();
  if (t < owners) {
    std::int32_t at = counts[t] - mine;
    for (int r = begin; r < end; ++r) {
      const int k = kind(r);
      if (k == 1) {
        moves(move_rows + (at & 0xffff)) = r;
        emit(r, at & 0xffff);
      }
      if (k == 2) moves(move_rows + capacity - 1 - (at >> 16)) = r;
      at += weight(k);
    }
    if (t == owners - 1) {
      moves(move_count) = at & 0xffff;
      moves(remap_count) = at >> 16;
    }
  }
  Kokkos::single(Kokkos::PerTeam(team), [&] {
    if (live == 0) moves(move_count) = moves(remap_count) = 0;
    moves(live_count) = live;
    moves(teams_done) = 0;
  });
}

/// The last team of validate(): the list from the rows' codes and plans (read
/// past the cache: other teams wrote them in this launch), without the listed
/// plans (apply() then reads each listed row's plan).
template <class Member, class Plans, class Codes, class Moves>
KOKKOS_INLINE_FUNCTION void build_move_list(const Member& team, const Plans& plan, const Codes& errors,
                                            const Moves& moves, std::int32_t live, std::int32_t capacity) {
  const auto kind = [&](const int r) {
    return move_kind(*static_cast<volatile const std::int32_t*>(&errors(r)),
                     *static_cast<volatile const std::int32_t*>(&plan(r).flags));
  };
  list_rows(team, kind, moves, live, capacity, [](int, int) {});
}

}  // namespace statexfer::impl

#endif
