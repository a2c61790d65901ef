#ifndef STATEXFER_TEST_UNIT_TICKETS_HPP
#define STATEXFER_TEST_UNIT_TICKETS_HPP

// The units the exchange's grids hand out (src/impl/unit_tickets.hpp): every
// unit of [0, total) moved by exactly one team, whether each team has its one
// unit or asks for more, and the counter back at 0 after each launch, so that
// the next launch (a graph's replay) starts from the first unit again.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

#include "impl/unit_tickets.hpp"

namespace {

using TicketExec = TEST_EXECSPACE;

// Each team walks its units as the kernels do and counts each one it holds.
struct TicketWalkFunctor {
  using member_type = typename Kokkos::TeamPolicy<TicketExec>::member_type;
  Kokkos::View<std::int32_t*, typename TicketExec::memory_space> moved;
  statexfer::impl::UnitTickets tickets;
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    for (statexfer::impl::UnitRange units = tickets.first(team); units.begin < units.end;) {
      const std::int64_t drawn = tickets.ask(team);
      if (team.team_rank() == 0)
        for (std::int64_t u = units.begin; u < units.end; ++u) Kokkos::atomic_add(&moved(u), std::int32_t(1));
      units = tickets.next(team, drawn);
    }
  }
};

TEST(TEST_CATEGORY, unit_tickets_move_every_unit_once) {
  constexpr int league = 5;
  const int team = Kokkos::TeamPolicy<TicketExec>(1, Kokkos::AUTO)
                       .team_size_recommended(TicketWalkFunctor{}, Kokkos::ParallelForTag());
  Kokkos::View<std::int64_t*, typename TicketExec::memory_space> counter("statexfer::test_ticket_counter", 1);
  for (const std::int64_t total : {0, 1, league - 1, league, league + 1, 7 * league + 3, 1000 * league + 17}) {
    for (int launch = 0; launch < 2; ++launch) {
      const std::string shape = "total " + std::to_string(total) + ", launch " + std::to_string(launch);
      Kokkos::View<std::int32_t*, typename TicketExec::memory_space> moved("statexfer::test_ticket_moved",
                                                                           static_cast<std::size_t>(total));
      Kokkos::parallel_for("statexfer::test_ticket_walk", Kokkos::TeamPolicy<TicketExec>(league, team),
                           TicketWalkFunctor{moved, statexfer::impl::UnitTickets{counter.data(), total}});
      const auto host_moved = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), moved);
      const auto host_counter = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), counter);
      for (std::int64_t u = 0; u < total; ++u) ASSERT_EQ(host_moved(u), 1) << shape << ": unit " << u;
      ASSERT_EQ(host_counter(0), 0) << shape << ": the counter was not reset";
    }
  }
}

}  // namespace

#endif
