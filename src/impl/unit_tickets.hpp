#ifndef STATEXFER_IMPL_UNIT_TICKETS_HPP
#define STATEXFER_IMPL_UNIT_TICKETS_HPP

// A fixed league's units [0, total) handed out as its teams ask for them:
// team i takes ticket i, then the next free ticket from a counter, asked for
// while it moves what it holds. Teams striding statically (unit i, i +
// league, ...) copied 9-13% below the copy kernel's rate on the H200 at every
// chunk size and league tried; handed out, 16 KiB units at 5 teams an SM came
// within 2% of it (tools/gpu/read_floor, perf_tests/RESULTS.md). A batch of at
// most `league` tickets asks nothing: each team has its one ticket.
//
// A ticket is `Group` units while more than league x Group units are left,
// then one unit: few asks for small units, and a last round no longer than a
// unit (the compact grid's 4 KiB units, perf_tests/DESIGN-NOTES.md).
//
// The counter needs no reset launch: every team that took a ticket asks once
// more than it gets, so a launch asks exactly as many times as it has
// tickets, and the team that draws the last of them sets the counter back to
// 0; every other ask of the launch came before it.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace statexfer::impl {

template <class Index, int Group = 1>
struct UnitTickets {
  static_assert(Group >= 1, "a ticket holds at least one unit");

  /// Units [begin, end) a team moves in turn.
  struct Range {
    Index begin, end;
  };

  Index* counter;  // 0 between launches
  Index total;     // units

  /// Tickets of Group units before the last league x Group units (0 with Group 1).
  KOKKOS_INLINE_FUNCTION Index grouped(Index league) const {
    if constexpr (Group == 1) return 0;
    const Index tail = league * Group;
    return total > tail ? (total - tail) / Group : 0;
  }
  KOKKOS_INLINE_FUNCTION Index tickets(Index league) const {
    const Index g = grouped(league);
    return g + (total - g * Group);
  }
  /// Ticket j's units (an empty range past the last).
  KOKKOS_INLINE_FUNCTION Range units(Index j, Index league) const {
    // Group 1 (here and in first()): the general expressions' values, written as the exchange's kernels were
    // measured with them (the general ones change their compiled code).
    if constexpr (Group == 1) {
      return {j < total ? j : total, j < total ? j + 1 : total};
    } else {
      const Index g = grouped(league);
      const Index begin = j < g ? j * Group : g * Group + (j - g);
      const Index end = j < g ? begin + Group : begin + 1;
      return {begin < total ? begin : total, end < total ? end : total};
    }
  }

  /// The calling team's first units (an empty range: none).
  template <class Member>
  KOKKOS_INLINE_FUNCTION Range first(const Member& team) const {
    if constexpr (Group == 1) {
      const Index u = team.league_rank() < total ? Index(team.league_rank()) : total;
      return {u, u < total ? u + 1 : u};
    } else {
      return units(Index(team.league_rank()), Index(team.league_size()));
    }
  }
  /// The team's ask for what it moves next, on its thread 0; pass it to next() once it moved what it holds.
  template <class Member>
  KOKKOS_INLINE_FUNCTION Index ask(const Member& team) const {
    const Index league = team.league_size();
    return team.team_rank() == 0 && tickets(league) > league ? Kokkos::atomic_fetch_add(counter, Index(1)) : Index(0);
  }
  /// The units the ask drew, on every thread of the team (an empty range: none left).
  template <class Member>
  KOKKOS_INLINE_FUNCTION Range next(const Member& team, Index drawn) const {
    const Index league = team.league_size(), count = tickets(league);
    if (count <= league) return {total, total};
    team.team_broadcast(drawn, 0);
    // count - league tickets past the first, and every team asks once more than it gets: count asks in all.
    if (drawn == count - 1 && team.team_rank() == 0) Kokkos::atomic_exchange(counter, Index(0));
    return units(league + drawn, league);
  }
};

}  // namespace statexfer::impl

#endif
