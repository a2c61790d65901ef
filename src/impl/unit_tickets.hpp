#ifndef STATEXFER_IMPL_UNIT_TICKETS_HPP
#define STATEXFER_IMPL_UNIT_TICKETS_HPP

// A fixed league's units [0, total) handed out as its teams ask for them:
// team i takes unit i, then the next free unit from a counter, asked for
// while it moves what it holds. Teams striding statically (unit i, i +
// league, ...) copied 9-13% below the copy kernel's rate on the H200 at every
// chunk size and league tried; handed out, 16 KiB units at 5 teams an SM came
// within 2% of it (tools/gpu/read_floor, perf_tests/RESULTS.md). A batch of at
// most `league` units asks nothing: each team has its one unit.
//
// The counter needs no reset launch: every team that took a unit asks once
// more than it gets, so a launch asks exactly total asks (below), and the team
// that draws the last of them sets the counter back to 0; every other ask of
// the launch came before it.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace statexfer::impl {

/// Units [begin, end) a team moves in turn.
struct UnitRange {
  std::int64_t begin, end;
};

struct UnitTickets {
  std::int64_t* counter;  // 0 between launches
  std::int64_t total;

  /// The calling team's first unit (an empty range: none).
  template <class Member>
  KOKKOS_INLINE_FUNCTION UnitRange first(const Member& team) const {
    const std::int64_t u = team.league_rank() < total ? team.league_rank() : total;
    return {u, u < total ? u + 1 : u};
  }
  /// The team's ask for what it moves next, on its thread 0; pass it to next() once it moved what it holds.
  template <class Member>
  KOKKOS_INLINE_FUNCTION std::int64_t ask(const Member& team) const {
    return team.team_rank() == 0 && total > team.league_size() ? Kokkos::atomic_fetch_add(counter, std::int64_t(1)) : 0;
  }
  /// The unit the ask drew, on every thread of the team (an empty range: none left).
  template <class Member>
  KOKKOS_INLINE_FUNCTION UnitRange next(const Member& team, std::int64_t drawn) const {
    const std::int64_t league = team.league_size();
    if (total <= league) return {total, total};
    team.team_broadcast(drawn, 0);
    // total - league units past the first, and every team asks once more than it gets: total asks in all.
    if (drawn == total - 1 && team.team_rank() == 0) Kokkos::atomic_exchange(counter, std::int64_t(0));
    const std::int64_t u = league + drawn;
    return {u < total ? u : total, u < total ? u + 1 : total};
  }
};

}  // namespace statexfer::impl

#endif
