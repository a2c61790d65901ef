#ifndef STATEXFER_TEST_TEAM_SORT_HPP
#define STATEXFER_TEST_TEAM_SORT_HPP

// The team sorts of the large-batch validation (src/impl/team_sort.hpp): the
// one the build uses (Kokkos 4's sort_team or Kokkos Kernels' TeamBitonicSort)
// and the bitonic network of our own, which only a Kokkos 3.x build without
// Kokkos Kernels would use, each sort key arrays of every length a chunk can
// have (and odd ones: the network pads to a power of two) by one team; both
// must give what std::sort gives. On Kokkos 3.x builds this pins the behaviour
// the library takes from KokkosKernels::Impl::TeamBitonicSort, an internal of
// Kokkos Kernels (src/impl/team_sort.hpp says why it is used). The look-ups
// into the sorted keys (count_keys: a binary search, then at most `most`
// reads; a GPU's and a CPU's search differ) must count what a scan counts.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "impl/team_sort.hpp"
#include "impl/validate_sorted_kernel.hpp"

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

struct LookupQuery {
  std::uint64_t lo, hi;
  int most;
};

// counts(i): count_keys() of query i in the n sorted keys.
struct LookupFunctor {
  using memory_space = typename SortExec::memory_space;
  Kokkos::View<const std::uint64_t*, memory_space> keys;
  Kokkos::View<const LookupQuery*, memory_space> queries;
  Kokkos::View<int*, memory_space> counts;
  int n;
  KOKKOS_INLINE_FUNCTION void operator()(const int i) const {
    const LookupQuery q = queries(i);
    counts(i) = statexfer::impl::count_keys(keys.data(), n, q.lo, q.hi, q.most);
  }
};

// count_keys() on the backend against a scan: key arrays of every size (0, 1,
// odd, a chunk's, a host's whole array) with runs of equal keys and the absent
// key, queries of keys present, absent, below and above every key, ranges and
// single keys, each counted no further than its `most` (1 to 3).
TEST(TEST_CATEGORY, team_sort_lookup_counts_match_a_scan) {
  using memory_space = typename SortExec::memory_space;
  using Query = LookupQuery;
  std::mt19937_64 rng(20261205);
  for (const int n : {0, 1, 2, 3, 17, 100, 1023, 1024, 4096}) {
    for (int pattern = 0; pattern < 5; ++pattern) {
      SCOPED_TRACE("n = " + std::to_string(n) + ", pattern " + std::to_string(pattern));
      auto keys = sort_input(n, pattern, rng);
      std::sort(keys.begin(), keys.end());
      std::vector<Query> queries;
      const auto some_key = [&] { return n > 0 ? keys[rng() % static_cast<std::uint64_t>(n)] : rng() % 8; };
      for (int q = 0; q < 200; ++q) {
        const int most = 1 + static_cast<int>(rng() % 3);
        std::uint64_t lo = q % 4 == 0 ? rng() % 1100 : some_key(), hi = lo;
        if (q % 3 == 0 && lo < ~std::uint64_t(0)) hi = lo + 1 + rng() % 4;  // a range, as (key << 1) | bit
        queries.push_back({lo, hi, most});
      }
      queries.push_back({0, 0, 3});
      queries.push_back({~std::uint64_t(0), ~std::uint64_t(0), 3});
      const int nq = static_cast<int>(queries.size());
      Kokkos::View<std::uint64_t*, memory_space> d_keys("statexfer::test_lookup_keys", static_cast<std::size_t>(n));
      Kokkos::View<Query*, memory_space> d_queries("statexfer::test_lookup_queries", static_cast<std::size_t>(nq));
      Kokkos::View<int*, memory_space> counts("statexfer::test_lookup_counts", static_cast<std::size_t>(nq));
      Kokkos::deep_copy(d_keys,
                        Kokkos::View<const std::uint64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                            keys.data(), keys.size()));
      Kokkos::deep_copy(d_queries,
                        Kokkos::View<const Query*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                            queries.data(), queries.size()));
      Kokkos::parallel_for("statexfer::test_lookup_counts", Kokkos::RangePolicy<SortExec>(0, nq),
                           LookupFunctor{d_keys, d_queries, counts, n});
      const auto got = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), counts);
      for (int i = 0; i < nq; ++i) {
        const Query& q = queries[static_cast<std::size_t>(i)];
        const auto in_range =
            std::count_if(keys.begin(), keys.end(), [&](std::uint64_t k) { return q.lo <= k && k <= q.hi; });
        ASSERT_EQ(got(i), std::min<std::int64_t>(q.most, in_range))
            << "query " << i << ": [" << q.lo << ", " << q.hi << "], most " << q.most;
      }
    }
  }
}

}  // namespace

#endif
