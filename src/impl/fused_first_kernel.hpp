#ifndef STATEXFER_IMPL_FUSED_FIRST_KERNEL_HPP
#define STATEXFER_IMPL_FUSED_FIRST_KERNEL_HPP

// validate_and_apply() on GPUs where validate() sorts and one launch does not
// hold a full batch (launch_plan.hpp: LaunchPlan::fused_first_units): the
// three launches of validate() and apply(), the first of them this one, a
// fixed league of apply()'s teams (a wave). It reads the count and takes one
// of three ways:
//  - up to `first_units` live work items (live rows x a row's): the batch's
//    whole step. A team a work item decides its row and moves the item as
//    FusedFunctor does, every team gives its share of the rows past the count
//    code 0, and the move list is left empty, so that the look-up launch and
//    apply() that follow return at once;
//  - else up to `pairs_live` live rows (a team each, rows of many work items):
//    a team a row decides it, the last of them lists the moves, the look-up
//    launch returns at once and apply() moves the rows;
//  - else the live rows' records and keys (write_live_keys()), as launch 1 of
//    validate() leaves them.
// A step of a few rows so costs one launch's chain of loads, whatever the
// capacity.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "fused_kernel.hpp"
#include "move_list.hpp"
#include "validate_sorted_kernel.hpp"

namespace statexfer::impl {

template <class ExecutionSpace, int Features = feature_every>
struct FusedFirstFunctor {
  using fused_type = FusedFunctor<ExecutionSpace, Features>;
  using policy_type = typename fused_type::policy_type;
  using member_type = typename policy_type::member_type;

  fused_type fused;                                        // its `planned` empty: launch 2 sets the mark
  SortedWork<typename ExecutionSpace::memory_space> work;  // first_units > 0; pairs_live: a team a row

  /// Team scratch: FusedFunctor's, and the compact plan's list where the teams decide rows for apply().
  static std::size_t scratch_bytes(bool bulk, int team_size) {
    return fused_type::scratch_bytes(bulk) + list_scratch_bytes(team_size);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const auto& base = fused.validate;
    const int c = static_cast<int>(base.shape.capacity), g = team.league_rank();
    const auto in = base.limit_inputs();
    const int planned = work.planned();
    const int live = base.live_rows(in);
    if (work.first_moves(live)) {
      // The whole step: a team a live work item.
      if (g < std::int64_t(live) * work.first_items) fused.unit(team, g);
      clear_past_live(team, base, live, c, base.limits(in).bad_count, planned);
      if (g == 0 && team.team_rank() == 0) {
        base.moves(move_count) = 0;
        base.moves(remap_count) = 0;
        base.moves(live_count) = live;
        base.moves(teams_done) = 0;
      }
      return;
    }
    if (live > work.pairs_live) return write_live_keys(team, base, work, live, c, planned);
    // Up to a team a live row (work.pairs_live): each decides its row, the last of them lists the moves,
    // and apply() moves them (rows of many work items).
    if (g < live) {
      std::int32_t code;
      RowPlan p;
      std::int64_t rows;  // the live count again
      fused.decide(team, g, true, code, p, rows);
    }
    clear_past_live(team, base, live, c, false, planned);
    if (g < live && last_team_of(team, &base.moves(teams_done), live))
      build_move_list(team, base.plan, base.errors, base.moves, live, c);
  }
};

}  // namespace statexfer::impl

#endif
