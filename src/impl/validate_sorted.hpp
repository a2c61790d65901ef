#ifndef STATEXFER_IMPL_VALIDATE_SORTED_HPP
#define STATEXFER_IMPL_VALIDATE_SORTED_HPP

// The sorted validation's host side (docs/CONTRACT.md §8): its work Views, its
// launches' teams and the two launches, of validate_sorted_kernel.hpp (launch 2
// sorting) or validate_counted_kernel.hpp (launch 2 counting).

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <statexfer/launch_plan.hpp>

#include "validate_counted_kernel.hpp"
#include "validate_sorted_kernel.hpp"

namespace statexfer::impl {

/// The sorted validation of one transfer: its work Views (allocate() in the
/// constructor), its sort team (prepare()) and its two launches (validate()),
/// launch 2 sorting the keys or, counted, probing their table.
template <class ExecutionSpace>
struct SortedValidation {
  using memory_space = typename ExecutionSpace::memory_space;
  using lookup_functor = SortedLookupFunctor<ExecutionSpace>;
  using counted_functor = CountedLookupFunctor<ExecutionSpace>;

  SortedWork<memory_space> work;

  /// `pairs_live`: live rows up to which launch 1 compares every pair (below
  /// the capacity); `chunk_limit`: keys per chunk at most (a power of two);
  /// `groups`: teams per chunk, each looking up its slice of the rows
  /// (perf_tests/RESULTS.md); `counted`: the keys counted in a table instead
  /// (chunks and groups unused).
  void allocate(const TransferShape& shape, int pairs_live, std::int64_t chunk_limit, int groups, bool counted) {
    const std::int64_t c = shape.capacity;
    work.pairs_live = pairs_live;
    work.arrays = shape.has_trailing ? 5 : 3;
    using Kokkos::view_alloc;
    using Kokkos::WithoutInitializing;
    work.records = decltype(work.records)(view_alloc(WithoutInitializing, "statexfer::validate_records"), c);
    work.keys =
        decltype(work.keys)(view_alloc(WithoutInitializing, "statexfer::validate_keys"), counted ? 0 : work.arrays * c);
    if (counted) {
      work.table.allocate(work.arrays, static_cast<int>(c));
      chunk_limit = c, groups = 1;  // the team size then follows rows_per_team (team_size_max())
    }
    work.chunk = static_cast<int>(std::min<std::int64_t>(c, chunk_limit));
    work.chunks = static_cast<int>(c / work.chunk);
    work.groups = std::max(1, groups);
    // Each byte that a decision reads is written by a look-up of the same validate();
    // zeros keep the others defined.
    work.lookups = decltype(work.lookups)("statexfer::validate_lookups", counted ? 0 : c * work.chunks * lookup_bytes);
    // Sorted in team scratch when a chunk fits (8 KiB; Kokkos 3.4 on CUDA offers 40 KiB).
    work.in_scratch = !counted && work.chunk * std::int64_t(sizeof(std::uint64_t)) <=
                                      lookup_functor::policy_type::scratch_size_max(0);
    work.done = decltype(work.done)("statexfer::validate_slices_done", work.groups);
    work.planned = decltype(work.planned)("statexfer::validate_planned_rows");
  }

  lookup_functor lookup(const ValidateFunctor<ExecutionSpace>& base) const { return lookup_functor{base, work}; }
  counted_functor counted(const ValidateFunctor<ExecutionSpace>& base) const { return counted_functor{base, work}; }
  /// The work as validate_and_apply()'s first launch leaves it (FusedFirstFunctor, a league of `units`
  /// teams): up to `units` live work items (`items` a row) it moved the batch, else up to the pair compares'
  /// live rows or a team each it decided them, else it wrote every live row's keys.
  SortedWork<memory_space> first_moving(std::int64_t units, int items) const {
    SortedWork<memory_space> w = work;
    w.pairs_live = static_cast<int>(std::min<std::int64_t>(work.pairs_live, units));
    w.first_units = units;
    w.first_items = items;
    return w;
  }
  bool is_counted() const noexcept { return work.table.bits > 0; }

  /// Launch 2's team scratch: its chunk's keys (where they fit) and the list of the moves.
  std::size_t scratch_bytes(int team_size) const {
    return (work.in_scratch ? static_cast<std::size_t>(work.chunk) * sizeof(std::uint64_t) : 0) +
           list_scratch_bytes(team_size);
  }

  int teams() const noexcept {
    const int rows = static_cast<int>(work.records.extent(0));
    return is_counted() ? std::max(1, rows / counted_functor::rows_per_team) : work.arrays * work.chunks * work.groups;
  }

  /// The largest team the sort and look-up launch allows. Its team is a thread
  /// per compare-exchange of a network step (half a chunk) up to that, one
  /// thread on hosts, where the chunks are sorted side by side by different
  /// threads (launch_plan.hpp). Counted: a thread a row, rows_per_team at most.
  int team_size_max(const ExecutionSpace& exec, const ValidateFunctor<ExecutionSpace>& base) const {
    if (is_counted()) {
      const auto probe = typename counted_functor::policy_type(exec, teams(), 1)
                             .set_scratch_size(0, Kokkos::PerTeam(scratch_bytes(counted_functor::rows_per_team)));
      return std::min(counted_functor::rows_per_team, probe.team_size_max(counted(base), Kokkos::ParallelForTag()));
    }
    const auto probe = typename lookup_functor::policy_type(exec, teams(), 1)
                           .set_scratch_size(0, Kokkos::PerTeam(scratch_bytes(lookup_functor::max_threads)));
    return probe.team_size_max(lookup(base), Kokkos::ParallelForTag());
  }

  /// Enqueue the two launches on `exec`: no allocation, no fence (level-0
  /// scratch is shared memory on CUDA and sized by prepare()'s first launch on
  /// hosts). `base`: the pair compares' teams of launch 1 (the plan's
  /// validate_league, validate_team_size and validate_vector_length at capacity
  /// pairs_live); `sort_team_size`: launch 2's.
  void launch(const ExecutionSpace& exec, const ValidateFunctor<ExecutionSpace>& base, const LaunchPlan& plan) const {
    using Kokkos::Experimental::require;
    const SortedFirstFunctor<ExecutionSpace> first{base, work};
    Kokkos::parallel_for(
        "statexfer::validate_pairs_or_keys",
        require(typename SortedFirstFunctor<ExecutionSpace>::policy_type(
                    exec, plan.validate_league, plan.validate_team_size, plan.validate_vector_length)
                    .set_scratch_size(0, Kokkos::PerTeam(first.scratch_bytes(plan.validate_team_size))),
                Kokkos::Experimental::WorkItemProperty::HintLightWeight),
        first);
    second(exec, base, plan, work);
  }

  /// Launch 2 after a launch 1 that left `w` (`work`, or first_moving()'s).
  void second(const ExecutionSpace& exec, const ValidateFunctor<ExecutionSpace>& base, const LaunchPlan& plan,
              const SortedWork<memory_space>& w) const {
    using Kokkos::Experimental::require;
    const auto light = Kokkos::Experimental::WorkItemProperty::HintLightWeight;
    // Hosts (Serial, OpenMP, Threads) run a launch before returning from it, so
    // the count is known here: where launch 1 decided every row, the second's
    // parallel region (most of a few live rows' time) is not entered, and the
    // mark it would set is set here. GPUs launch both: the count is read on the
    // device, at every replay of a graph.
    if constexpr (std::is_same_v<memory_space, Kokkos::HostSpace>) {
      const int live = base.live_rows(base.limit_inputs());
      if (w.first_decides(live)) {
        w.planned() = live;
        return;
      }
    }
    if (is_counted()) {
      Kokkos::parallel_for("statexfer::validate_counted_lookup",
                           require(typename counted_functor::policy_type(exec, teams(), plan.sort_team_size)
                                       .set_scratch_size(0, Kokkos::PerTeam(scratch_bytes(plan.sort_team_size))),
                                   light),
                           counted_functor{base, w});
      return;
    }
    Kokkos::parallel_for("statexfer::validate_lookup",
                         require(typename lookup_functor::policy_type(exec, teams(), plan.sort_team_size)
                                     .set_scratch_size(0, Kokkos::PerTeam(scratch_bytes(plan.sort_team_size))),
                                 light),
                         lookup_functor{base, w});
  }
};

}  // namespace statexfer::impl

#endif
