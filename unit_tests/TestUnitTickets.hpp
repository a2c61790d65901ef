#ifndef STATEXFER_TEST_UNIT_TICKETS_HPP
#define STATEXFER_TEST_UNIT_TICKETS_HPP

// The units the exchange's and the compact grid's teams draw
// (src/impl/unit_tickets.hpp): every unit of [0, total) moved by exactly one
// team, whether each team has its one ticket or asks for more, with tickets of
// one unit (the exchange) or of several before a tail of single units (the
// compact grid), and the counter back at 0 after each launch, so that the next
// launch (a graph's replay) starts from the first unit again.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

#include "impl/unit_tickets.hpp"

namespace {

using TicketExec = TEST_EXECSPACE;

// Each team walks its units as the kernels do and counts each one it holds.
template <class Tickets>
struct TicketWalkFunctor {
  using member_type = typename Kokkos::TeamPolicy<TicketExec>::member_type;
  Kokkos::View<std::int32_t*, typename TicketExec::memory_space> moved;
  Tickets tickets;
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    for (auto units = tickets.first(team); units.begin < units.end;) {
      const auto drawn = tickets.ask(team);
      if (team.team_rank() == 0)
        for (auto u = units.begin; u < units.end; ++u) Kokkos::atomic_add(&moved(u), std::int32_t(1));
      units = tickets.next(team, drawn);
    }
  }
};

template <class Index, int Group>
void walk_every_unit_once() {
  using Tickets = statexfer::impl::UnitTickets<Index, Group>;
  constexpr Index league = 5;
  const int team = Kokkos::TeamPolicy<TicketExec>(1, Kokkos::AUTO)
                       .team_size_recommended(TicketWalkFunctor<Tickets>{}, Kokkos::ParallelForTag());
  Kokkos::View<Index*, typename TicketExec::memory_space> counter("statexfer::test_ticket_counter", 1);
  // Group > 1: all single units (up to league x Group), one grouped ticket and a partial one before the tail.
  for (const Index total : {Index(0), Index(1), league - 1, league, league + 1, league * Group, league * Group + 1,
                            league * Group + Group + 1, 7 * league + 3, 1000 * league + 17}) {
    for (int launch = 0; launch < 2; ++launch) {
      const std::string shape =
          "group " + std::to_string(Group) + ", total " + std::to_string(total) + ", launch " + std::to_string(launch);
      Kokkos::View<std::int32_t*, typename TicketExec::memory_space> moved("statexfer::test_ticket_moved",
                                                                           static_cast<std::size_t>(total));
      Kokkos::parallel_for("statexfer::test_ticket_walk", Kokkos::TeamPolicy<TicketExec>(int(league), team),
                           TicketWalkFunctor<Tickets>{moved, Tickets{counter.data(), total}});
      const auto host_moved = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), moved);
      const auto host_counter = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), counter);
      for (Index u = 0; u < total; ++u) ASSERT_EQ(host_moved(u), 1) << shape << ": unit " << u;
      ASSERT_EQ(host_counter(0), 0) << shape << ": the counter was not reset";
    }
  }
}

TEST(TEST_CATEGORY, unit_tickets_move_every_unit_once) {
  walk_every_unit_once<std::int64_t, 1>();  // the exchange's
  walk_every_unit_once<std::int32_t, 2>();  // the compact grid's, 8 KiB units
  walk_every_unit_once<std::int32_t, 4>();  // and 4 KiB units
}

}  // namespace

#endif
