#ifndef STATEXFER_IMPL_PERSISTENT_KERNEL_HPP
#define STATEXFER_IMPL_PERSISTENT_KERNEL_HPP

// apply() and validate_and_apply() as a persistent grid (capacities up to 64):
// a fixed league of about one wave of teams, each of which first learns every
// row's plan (apply: the plan and `errors`, as apply() reads them;
// validate_and_apply: by deciding every row itself, as one team of
// ValidateFunctor does), lists the rows that move bytes, and then moves its
// share of those rows' units (8 KiB of a work item each, every league-th unit).
// A launch so costs about what the batch moves: rows past num_ops, refused
// rows, resets of nothing and remapping commits (docs/CONTRACT.md §13) add no
// blocks, where the flat grids launch C times the rows' work items whatever the
// batch holds.
//
// In validate_and_apply every team decides every row from the inputs with the
// functions validate() uses; team 0 writes the codes, the plan, the commit
// positions and a remapping commit's state-row entries. Teams never wait for
// one another: one team's copies and remaps run while others still decide,
// which docs/CONTRACT.md §10 and §13 show cannot change any row's code.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "apply_kernel.hpp"
#include "device_types.hpp"
#include "flat_apply_kernel.hpp"
#include "launch_plan.hpp"
#include "validate_kernel.hpp"
#include "validate_pairs.hpp"
#include "validate_rows.hpp"

namespace statexfer::impl {

template <class ExecutionSpace, int Features = feature_every>
struct PersistentFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  // 128 threads, 4 teams an SM: 128 registers hold a row's decision beside the copy loop without a stack frame.
  static constexpr int team_threads = 128;
  static constexpr int words_per_thread = 4;
  static constexpr int unit_bytes = team_threads * words_per_thread * 16;
  static_assert(unit_bytes == persistent_unit_bytes, "launch_plan.hpp counts units of this size");
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<team_threads, 4>>;
  using member_type = typename policy_type::member_type;

  ValidateFunctor<ExecutionSpace, Features> validate;  // inputs, errors, plan, commit positions
  Kokkos::View<const WorkItem*, memory_space> items;
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, memory_space> state_rows;  // remapping commits
  std::int32_t items_per_row = 1;
  std::int32_t units_per_item = 1;  // units of unit_bytes covering the longest work item
  std::int32_t decide = 0;          // 1: validate_and_apply (decide every row), 0: apply

  /// Team scratch: every row's PeerKeys (deciding), its plan, the list of rows that move bytes.
  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes(std::int64_t capacity) {
    return static_cast<std::size_t>(capacity) * (sizeof(PeerKeys) + sizeof(RowPlan) + sizeof(std::int32_t)) +
           sizeof(std::int32_t) + 2 * alignof(PeerKeys);
  }

  // Row r's plan from the team's own decision; team 0 writes what validate() would.
  KOKKOS_INLINE_FUNCTION void decide_row(const member_type& team, int r, const RowRecord& q, const ValidateLimits& lim,
                                         const PeerKeys* peers, RowPlan* plans) const {
    constexpr bool commits = (Features & feature_commit) != 0;
    const RowCheck k = row_check<Features>(q, r, lim);
    const OwnKeys own = own_keys(q, k);
    const bool narrow = validate.shape.rows + validate.shape.host_rows <= INT32_MAX;
    const int bits = k.check ? conflict_bits<commits, 2>(own, peers, r, static_cast<int>(lim.count), 0, 1, narrow) : 0;
    std::int32_t code;
    RowPlan p;
    validate.finish(q, k, bits, lim, code, p);
    if (team.league_rank() == 0) {
      validate.errors(r) = code;
      validate.plan(r) = p;
      validate.record_commit(r, q, lim);
      if (code == 0 && (p.flags & plan_remap)) remap_state_rows(state_rows, p);
    }
    if (code != 0) p.flags = 0;
    plans[r] = p;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int c = static_cast<int>(validate.shape.capacity);
    if (c == 0) return;
    const int t = team.team_rank(), threads = team.team_size();
    auto* peers = static_cast<PeerKeys*>(
        team.team_scratch(0).get_shmem_aligned(c * sizeof(PeerKeys), static_cast<std::ptrdiff_t>(alignof(PeerKeys))));
    auto* plans = static_cast<RowPlan*>(
        team.team_scratch(0).get_shmem_aligned(c * sizeof(RowPlan), static_cast<std::ptrdiff_t>(alignof(RowPlan))));
    auto* moving = static_cast<std::int32_t*>(team.team_scratch(0).get_shmem((c + 1) * sizeof(std::int32_t)));

    if (decide) {
      // ValidateFunctor's one team: a thread a row (rows loaded again where a team has fewer threads).
      const auto in = validate.limit_inputs();
      const int own = t < c ? t : c - 1;
      const RowRecord q = validate.load_row(own);
      for (int r = t; r < c; r += threads) peers[r] = peer_keys<Features>(r == own ? q : validate.load_row(r));
      team.team_barrier();
      const ValidateLimits lim = validate.limits(in);
      if (t < c) decide_row(team, t, q, lim, peers, plans);
      for (int r = t + threads; r < c; r += threads) decide_row(team, r, validate.load_row(r), lim, peers, plans);
    } else {
      // apply(): the plan validate() stored, vetoed by `errors` as it is now (docs/CONTRACT.md §5).
      for (int r = t; r < c; r += threads) {
        RowPlan p = validate.plan(r);
        const std::int32_t error = validate.errors(r);
        if (error != 0 || !(p.flags & plan_active)) p.flags = 0;
        if (team.league_rank() == 0 && (p.flags & plan_remap)) remap_state_rows(state_rows, p);
        plans[r] = p;
      }
    }
    team.team_barrier();
    // The rows that move bytes, in row order (at most 64: one thread lists them).
    if (t == 0) {
      int n = 0;
      for (int r = 0; r < c; ++r)
        if ((plans[r].flags & plan_active) && !(plans[r].flags & plan_remap)) moving[n++] = r;
      moving[c] = n;
    }
    team.team_barrier();
    const std::int64_t per_row = std::int64_t(items_per_row) * units_per_item;
    const std::int64_t total = moving[c] * per_row;
    for (std::int64_t v = team.league_rank(); v < total; v += team.league_size()) {
      const std::int64_t k = v / per_row, rest = v - k * per_row;
      const auto item_index = static_cast<std::int32_t>(rest / units_per_item);
      const auto unit = static_cast<std::int32_t>(rest - std::int64_t(item_index) * units_per_item);
      const WorkItem item = items(item_index);
      const ItemMove m = item_move(plans[moving[k]], 0, item);
      const std::int64_t at = std::int64_t(unit) * unit_bytes;
      if (at >= m.length) continue;
      if (m.stamp) {
        if (t == 0) stamp_key(m.dst, plans[moving[k]].key);
        continue;
      }
      const int n = static_cast<int>(m.length - at < unit_bytes ? m.length - at : unit_bytes);
      std::uint8_t* dst = m.dst + at;
      const std::uint8_t* src = m.src == nullptr ? nullptr : m.src + at;
      if constexpr (std::is_same_v<memory_space, Kokkos::HostSpace>) {
        if (threads < 32) {  // hosts' teams: the C library (a GPU team has a thread per edge byte)
          if (t == 0)
            src == nullptr ? (void)std::memset(dst, 0, static_cast<std::size_t>(n))
                           : (void)std::memcpy(dst, src, static_cast<std::size_t>(n));
          continue;
        }
      }
      flat_move_widest<words_per_thread>(dst, src, n, t, threads);
    }
  }
};

}  // namespace statexfer::impl

#endif
