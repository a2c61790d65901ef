#ifndef STATEXFER_IMPL_FUSED_KERNEL_HPP
#define STATEXFER_IMPL_FUSED_KERNEL_HPP

// validate_and_apply() on GPUs, by default up to 512 commands while a wave
// holds apply's league (command row x work item), at any capacity when asked
// for (launch_plan.hpp): validate() and apply() in one launch over that
// league. Each team decides
// its own row: every thread loads the team's row (ValidateFunctor::load_row),
// each thread checks its share of the live rows against it (pair_conflicts)
// and ORs what it found into one word of team scratch, and after a barrier
// row_check()/finish_row() give the code and plan that ValidateFunctor would.
// The team of the row's first work item writes them to `errors` and the plan;
// every team then does its work item as apply() would. Teams never wait for
// one another, so one launch replaces two dependent ones, which is most of the
// time of a small batch. Each team repeats the row loads (C rows, a few
// dependent loads each), so this is for single-rank use: tensor-parallel ranks
// combine errors between validate() and apply().

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "apply_kernel.hpp"
#include "bulk_copy.hpp"
#include "device_types.hpp"
#include "validate_kernel.hpp"

namespace statexfer::impl {

/// `Features`: the optional checks the transfer has, as for ValidateFunctor.
template <class ExecutionSpace, int Features = feature_every>
struct FusedFunctor {
  using policy_type = typename ApplyFunctor<ExecutionSpace>::policy_type;
  using member_type = typename policy_type::member_type;
  using validate_type = ValidateFunctor<ExecutionSpace, Features>;

  validate_type validate;
  ApplyFunctor<ExecutionSpace> apply;
  /// Where validate() sorts: its mark of the rows that can hold a plan (SortedWork::planned), else empty.
  /// This launch writes every row's plan, so the mark becomes its live count.
  Kokkos::View<std::int32_t, typename ExecutionSpace::memory_space> planned;

  /// Team scratch: apply's bulk-copy ring (first, for its alignment) and the
  /// word of the team row's conflict bits (with room for its alignment).
  static std::size_t scratch_bytes(bool bulk) { return (bulk ? bulk_scratch_bytes : 0) + 64; }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const { unit(team, team.league_rank()); }

  /// Work item `w` of the batch (row w / items_per_row), by every thread of the team: decided, then moved.
  KOKKOS_INLINE_FUNCTION void unit(const member_type& team, const std::int32_t w) const {
    std::uint8_t* staging = apply.bulk ? static_cast<std::uint8_t*>(team.team_scratch(0).get_shmem(
                                             static_cast<std::ptrdiff_t>(bulk_scratch_bytes)))
                                       : nullptr;
    const std::int32_t r = w / apply.items_per_row;
    const std::int32_t item_index = w - r * apply.items_per_row;
    // One round of independent loads: the work item here, then decide()'s.
    const WorkItem item = apply.items(item_index);
    std::int32_t code;
    RowPlan p;
    std::int64_t live;
    decide(team, r, item_index == 0, code, p, live);
    if (w == 0 && team.team_rank() == 0 && planned.data() != nullptr) planned() = static_cast<std::int32_t>(live);
    // A remapping commit's swap is this team's (item 0) and touches the state
    // rows other teams read: docs/CONTRACT.md §13 says why their codes stay.
    apply.run_plan(team, staging, p, code, item, item_index);
  }

  /// Row r decided by the team: every thread gets its code, plan and the live
  /// count; when `write`, thread 0 writes the code, the plan and the row's
  /// commit position. One word of team scratch.
  KOKKOS_INLINE_FUNCTION void decide(const member_type& team, const std::int32_t r, const bool write,
                                     std::int32_t& code, RowPlan& p, std::int64_t& live) const {
    int* found = static_cast<int*>(team.team_scratch(0).get_shmem(static_cast<std::ptrdiff_t>(sizeof(int))));
    if (team.team_rank() == 0) *found = 0;
    const std::int64_t c = validate.shape.capacity;
    // One round of independent loads: the limits, the team's row (every
    // thread, the same addresses) and a thread's other row.
    const auto in = validate.limit_inputs();
    const RowRecord q = validate.load_row(r);
    team.team_barrier();  // *found's zero before any thread's OR; the loads above stay in flight
    const ValidateLimits lim = validate.limits(in);  // used after the row's loads are out
    const RowCheck k = row_check<Features>(q, r, lim);
    const OwnKeys own = own_keys(q, k);
    // The live rows only: a partly filled batch's teams scan what it holds, not the capacity.
    live = lim.count < 0 ? 0 : lim.count < c ? lim.count : c;
    // A thread's conflicts in a register, ORed into `found` only when there are
    // any (rarely): a scan of C words of scratch by every thread after the
    // barrier, or a team reduction, was slower (perf_tests/RESULTS.md).
    if (k.check) {
      constexpr bool trailing = Features & feature_trailing, commits = Features & feature_commit;
      const std::int64_t threads = team.team_size();
      int mine = 0;
      for (std::int64_t o = team.team_rank(); o < live; o += threads)
        mine |= pair_conflicts<trailing, false, commits>(own, peer_keys<Features>(validate.load_row(o))) &
                -static_cast<int>(o != r);
      if (mine != 0) Kokkos::atomic_or(found, mine);
    }
    team.team_barrier();
    validate.finish(q, k, *found, lim, code, p);
    if (write && team.team_rank() == 0) {
      validate.errors(r) = code;
      validate.plan(r) = p;
      validate.record_commit(r, q, lim);
    }
  }
};

}  // namespace statexfer::impl

#endif
