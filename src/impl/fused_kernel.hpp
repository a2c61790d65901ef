#ifndef STATEXFER_IMPL_FUSED_KERNEL_HPP
#define STATEXFER_IMPL_FUSED_KERNEL_HPP

// validate_and_apply() on GPUs, capacities up to 64: validate() and apply() in
// one launch over apply's league (command row x work item). Each team decides
// its own row: every command row's keys go into team scratch (a thread per row,
// ValidateFunctor::load_row), the row's pair checks are reduced over the team
// (pair_conflicts), and row_check()/finish_row() give the code and plan that
// ValidateFunctor would. The team of the row's first work item writes them to
// `errors` and the plan; every team then does its work item as apply() would.
// Teams never wait for one another, so one launch replaces two dependent ones,
// which is most of the time of a small batch. Each team repeats the row loads
// (C rows, a few dependent loads each), so this is for single-rank use:
// tensor-parallel ranks combine errors between validate() and apply().

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "apply_kernel.hpp"
#include "bulk_copy.hpp"
#include "device_types.hpp"
#include "validate_kernel.hpp"

namespace statexfer::impl {

template <class ExecutionSpace>
struct FusedFunctor {
  using policy_type = typename ApplyFunctor<ExecutionSpace>::policy_type;
  using member_type = typename policy_type::member_type;
  using validate_type = ValidateFunctor<ExecutionSpace>;

  validate_type validate;
  ApplyFunctor<ExecutionSpace> apply;

  /// Team scratch: apply's bulk-copy ring (first, for its alignment), every
  /// row's keys and the team's own row.
  static std::size_t scratch_bytes(std::int64_t capacity, bool bulk) {
    return (bulk ? bulk_scratch_bytes : 0) + validate_type::peer_view::shmem_size(capacity) +
           validate_type::record_view::shmem_size(1);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    std::uint8_t* staging = apply.bulk ? static_cast<std::uint8_t*>(team.team_scratch(0).get_shmem(
                                             static_cast<std::ptrdiff_t>(bulk_scratch_bytes)))
                                       : nullptr;
    const std::int64_t c = validate.shape.capacity;
    typename validate_type::peer_view peers(team.team_scratch(0), c);
    typename validate_type::record_view own(team.team_scratch(0), 1);
    const std::int32_t w = team.league_rank();
    const std::int32_t r = w / apply.items_per_row;
    const std::int32_t item_index = w - r * apply.items_per_row;
    const WorkItem item = apply.items(item_index);
    const ValidateLimits lim = validate.limits();

    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c), [&](const std::int64_t o) {
      const RowRecord q = validate.load_row(o);
      peers(o) = peer_keys(q);
      if (o == r) own(0) = q;
    });
    team.team_barrier();

    const RowRecord q = own(0);
    const RowCheck k = row_check(q, r, lim);
    int bits = 0;
    if (k.check) {
      Kokkos::parallel_reduce(
          Kokkos::TeamThreadRange(team, lim.count),
          [&](const std::int64_t o, int& acc) {
            if (o != r) acc += pair_conflicts(q, k, peers(o));
          },
          bits);
    }
    const bool t_conflict[2] = {((bits >> 10) & 1023) != 0, ((bits >> 20) & 1023) != 0};
    std::int32_t code;
    RowPlan p;
    finish_row(q, k, (bits & 1023) != 0, t_conflict, lim.pages, code, p);
    if (item_index == 0 && team.team_rank() == 0) {
      validate.errors(r) = code;
      validate.plan(r) = p;
    }
    apply.run_plan(team, staging, p, code, item);
  }
};

}  // namespace statexfer::impl

#endif
