#ifndef STATEXFER_TEST_TEAM_SORT_HPP
#define STATEXFER_TEST_TEAM_SORT_HPP

// The team sorts of the large-batch validation (src/impl/team_sort.hpp): the
// one the build uses (Kokkos 4's sort_team or Kokkos Kernels' TeamBitonicSort)
// and the bitonic network of our own, which only a Kokkos 3.x build without
// Kokkos Kernels would use, each sort key arrays of every length a chunk can
// have (and odd ones: the network pads to a power of two) by one team; both
// must give what std::sort gives. On Kokkos 3.x builds this pins the behaviour
// the library takes from KokkosKernels::Impl::TeamBitonicSort, an internal of
// Kokkos Kernels (src/impl/team_sort.hpp says why it is used).

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "impl/team_sort.hpp"

namespace {

using SortExec = TEST_EXECSPACE;

// Row 0 of `keys` sorted by team_sort_keys, row 1 by bitonic_sort_keys, one team each.
struct SortBothFunctor {
  using memory_space = typename SortExec::memory_space;
  using member_type = typename Kokkos::TeamPolicy<SortExec>::member_type;
  Kokkos::View<std::uint64_t**, Kokkos::LayoutRight, memory_space> keys;
  int n;
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    std::uint64_t* values = &keys(team.league_rank(), 0);
    if (team.league_rank() == 0)
      statexfer::impl::team_sort_keys<memory_space>(team, values, n);
    else
      statexfer::impl::bitonic_sort_keys(team, values, n);
  }
};

// Keys as the validation makes them: few distinct values (rows that collide),
// wide ones, and the "absent" key (all ones) that sorts last.
std::vector<std::uint64_t> sort_input(int n, int pattern, std::mt19937_64& rng) {
  std::vector<std::uint64_t> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    switch (pattern) {
      case 0: v[i] = rng() % 7; break;
      case 1: v[i] = rng(); break;
      case 2: v[i] = rng() % 3 == 0 ? ~std::uint64_t(0) : rng() % 1000; break;
      case 3: v[i] = static_cast<std::uint64_t>(n - i); break;  // descending
      default: v[i] = static_cast<std::uint64_t>(i); break;     // already sorted
    }
  }
  return v;
}

TEST(TEST_CATEGORY, team_sort_bitonic_network_matches) {
  std::mt19937_64 rng(20261201);
  for (const int n : {1, 2, 3, 5, 17, 64, 100, 255, 1024, 1500, 4096}) {
    for (int pattern = 0; pattern < 5; ++pattern) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", pattern " + std::to_string(pattern));
      const auto input = sort_input(n, pattern, rng);
      Kokkos::View<std::uint64_t**, Kokkos::LayoutRight, typename SortExec::memory_space> keys("statexfer::test_keys",
                                                                                               2, n);
      auto h = Kokkos::create_mirror_view(keys);
      for (int r = 0; r < 2; ++r)
        for (int i = 0; i < n; ++i) h(r, i) = input[i];
      Kokkos::deep_copy(keys, h);
      Kokkos::parallel_for("statexfer::test_team_sort", Kokkos::TeamPolicy<SortExec>(2, Kokkos::AUTO),
                           SortBothFunctor{keys, n});
      Kokkos::deep_copy(h, keys);
      auto want = input;
      std::sort(want.begin(), want.end());
      const std::vector<std::uint64_t> library(&h(0, 0), &h(0, 0) + n), own(&h(1, 0), &h(1, 0) + n);
      EXPECT_EQ(library, want) << "the team sort of the build";
      EXPECT_EQ(own, want) << "the bitonic network of our own";
    }
  }
}

}  // namespace

#endif
