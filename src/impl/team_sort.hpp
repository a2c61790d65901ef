#ifndef STATEXFER_IMPL_TEAM_SORT_HPP
#define STATEXFER_IMPL_TEAM_SORT_HPP

// The team sort of the sorted validation (validate_sorted_kernel.hpp): uint64
// keys sorted in place by one team, with Kokkos 4's sort_team, else Kokkos
// Kernels' TeamBitonicSort (Kokkos 3.x), else a bitonic network of our own.
//
// Kokkos Kernels 3.4.01 offers no team sort outside its Impl namespace: all of
// KokkosKernels_Sorting.hpp, the host-side bitonicSort included, is
// KokkosKernels::Impl. What this file relies on is that TeamBitonicSort,
// called by every thread of a team (its vector length 1), sorts `n` keys of any
// length, not only powers of two, in place in ascending order, duplicates and
// the all-ones "absent" key included. unit_tests/TestTeamSort.hpp pins exactly
// that against std::sort on every backend of the Kokkos 3.4.01 builds, so that
// a Kokkos Kernels release that changes it fails there.

#include <Kokkos_Core.hpp>

#if KOKKOS_VERSION >= 40000
#include <Kokkos_NestedSort.hpp>
#include <Kokkos_Sort.hpp>
#define STATEXFER_IMPL_TEAM_SORT_KOKKOS 1
#elif defined(STATEXFER_HAVE_KOKKOSKERNELS)
#include <KokkosKernels_Sorting.hpp>
#define STATEXFER_IMPL_TEAM_SORT_KOKKOSKERNELS 1
#endif

#include <cstdint>

namespace statexfer::impl {

/// One step of the bitonic network on `values` (n positions, the network over
/// the next power of two; positions >= n act as +infinity): every pair of level
/// `level`, step `step`, by the calling team, then a team barrier. The first
/// step of a level (step == level) compares mirrored positions of each block of
/// 2^(level+1), the later ones positions 2^step apart (the network of Kokkos
/// Kernels' and Kokkos' team sorts).
template <class Member>
KOKKOS_INLINE_FUNCTION void bitonic_step(const Member& team, std::uint64_t* values, int n, int npot, int level,
                                         int step) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, npot / 2), [&](const int t) {
    const int half = 1 << step;
    const int block = (t >> step) << (step + 1);
    const int offset = t & (half - 1);
    const int low = block + offset;
    const int high = step == level ? block + 2 * half - 1 - offset : low + half;
    if (high < n && values[high] < values[low]) {
      const std::uint64_t tmp = values[low];
      values[low] = values[high];
      values[high] = tmp;
    }
  });
  team.team_barrier();
}

/// The bitonic network of our own: `n` uint64 at `values` in ascending order,
/// by the calling team; ends with a team barrier. team_sort_keys' fallback
/// where neither Kokkos nor Kokkos Kernels has a team sort (Kokkos 3.x built
/// without Kokkos Kernels), compiled everywhere so that the unit tests check it
/// on every backend against the team sort the build uses.
template <class Member>
KOKKOS_INLINE_FUNCTION void bitonic_sort_keys(const Member& team, std::uint64_t* values, int n) {
  int npot = 1, levels = 0;
  while (npot < n) npot <<= 1, ++levels;
  for (int level = 0; level < levels; ++level)
    for (int step = level; step >= 0; --step) bitonic_step(team, values, n, npot, level, step);
  if (levels == 0) team.team_barrier();
}

/// Team sort of `n` uint64 at `values` (in MemorySpace) in ascending order, by
/// the calling team; ends with a team barrier.
template <class MemorySpace, class Member>
KOKKOS_INLINE_FUNCTION void team_sort_keys(const Member& team, std::uint64_t* values, int n) {
#if defined(STATEXFER_IMPL_TEAM_SORT_KOKKOS)
  Kokkos::Experimental::sort_team(
      team, Kokkos::View<std::uint64_t*, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(values, n));
  team.team_barrier();
#elif defined(STATEXFER_IMPL_TEAM_SORT_KOKKOSKERNELS)
  KokkosKernels::Impl::TeamBitonicSort<int, std::uint64_t, Member>(values, n, team);
  team.team_barrier();
#else
  bitonic_sort_keys(team, values, n);
#endif
}

}  // namespace statexfer::impl

#endif
