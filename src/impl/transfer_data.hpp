#ifndef STATEXFER_IMPL_TRANSFER_DATA_HPP
#define STATEXFER_IMPL_TRANSFER_DATA_HPP

// What a prepared transfer holds: its Views, the launch shapes prepare() chose,
// the instance it is bound to, and the functors built from them.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <statexfer/commands.hpp>
#include <statexfer/host_tier.hpp>
#include <statexfer/pool.hpp>
#include <statexfer/transfer.hpp>

#include "apply_kernel.hpp"
#include "compact_apply_kernel.hpp"
#include "device_types.hpp"
#include "flat_apply_kernel.hpp"
#include "fused_first_kernel.hpp"
#include "fused_flat_kernel.hpp"
#include "fused_kernel.hpp"
#include "launch_plan.hpp"
#include "persistent_kernel.hpp"
#include "validate_kernel.hpp"
#include "validate_sorted.hpp"

namespace statexfer::impl {

template <class ExecutionSpace>
struct TransferData {
  using memory_space = typename ExecutionSpace::memory_space;

  StatePool<ExecutionSpace> pool;
  StateCommands<ExecutionSpace> commands;
  PageTable<ExecutionSpace> tables;
  PageTable<ExecutionSpace> trailing_tables;
  StateRows<ExecutionSpace> state_rows;
  RequestState<ExecutionSpace> requests;
  HostTier<ExecutionSpace> host_tier;             // empty: no host tier
  SpeculativeConfig<ExecutionSpace> speculative;  // positions 0: no commits
  std::vector<PageBinding<ExecutionSpace>> pages;
  std::vector<PageBinding<ExecutionSpace>> trailing_pages;

  TransferShape shape{};
  Kokkos::View<WorkItem*, memory_space> items;
  // The compact grid's work map: work_joint tiles (options.expert.compact_joint_pages), else `items`.
  Kokkos::View<WorkItem*, memory_space> compact_items;
  std::int32_t compact_work_items = 0;  // per command row
  std::int64_t compact_longest_item = 0;
  Kokkos::View<RowPlan*, memory_space> plan;
  Kokkos::View<std::int32_t*, memory_space> moves;    // the compact plan (move_list.hpp): move_rows + C entries
  Kokkos::View<RowPlan*, memory_space> listed;        // its listed rows' plans, in list order
  RowClaims<ExecutionSpace> claims;                   // empty: none (docs/CONTRACT.md §15)
  Kokkos::View<std::int64_t*, memory_space> claimed;  // with claims: what each live row holds, [2 C]
  SortedValidation<ExecutionSpace> sorted;            // capacities above max_capacity (the extension)
  TransferOptions options;
  std::int64_t longest_item = 0;
  LaunchPlan launches;  // prepare()
  bool prepared = false;
  // Whether the compact plan is the last validation's, in the order the
  // instance runs what was enqueued: validate() writes it, a one-launch
  // validate_and_apply() does not (its blocks decide rows independently), so
  // an apply() enqueued after one takes the teams, which read the plan alone.
  mutable bool moves_current = true;
  ExecutionSpace exec;  // the instance prepare() bound the transfer to

  /// The optional checks this transfer has (ValidateFeature): which
  /// instantiation validate() and validate_and_apply() launch. With commits,
  /// every part (the others are tested at run time).
  int validate_features() const {
    if (shape.positions > 0) return feature_every;
    return (shape.host_rows > 0 ? feature_host_tier : 0) | (shape.has_trailing ? feature_trailing : 0);
  }

  /// Calls `launch(std::integral_constant<int, F>())` with F = validate_features(), a
  /// compile-time value: validate() and validate_and_apply() pick their instantiation.
  template <class Launch>
  void with_features(Launch&& launch) const {
    switch (validate_features()) {
      case feature_every: return launch(std::integral_constant<int, feature_every>());
      case feature_all: return launch(std::integral_constant<int, feature_all>());
      case feature_host_tier: return launch(std::integral_constant<int, feature_host_tier>());
      case feature_trailing: return launch(std::integral_constant<int, feature_trailing>());
      default: return launch(std::integral_constant<int, 0>());
    }
  }

  /// `Features`: ValidateFunctor's instantiation (validate() passes the parts the transfer has).
  template <int Features = feature_every>
  ValidateFunctor<ExecutionSpace, Features> validate_functor() const {
    ValidateFunctor<ExecutionSpace, Features> f;
    f.request_slots = commands.request_slots;
    f.source_slots = commands.source_slots;
    f.destination_slots = commands.destination_slots;
    f.expected_consumed = commands.expected_consumed;
    f.operation = commands.operation;
    f.num_ops = commands.num_ops;
    f.errors = commands.errors;
    f.plan = plan;
    f.memory_capacity = pool.memory_capacity();
    f.backing = pool.backing();
    f.tables = tables;
    f.trailing_tables = shape.has_trailing ? trailing_tables : tables;
    f.state_rows = state_rows;
    f.request_consumed = requests.consumed_tokens;
    f.host_backing = host_tier.backing();
    f.host_capacity = host_tier.capacity();
    f.prefix_keys = commands.prefix_keys;
    f.accepted = speculative.accepted;
    f.commit_positions = commands.commit_positions;
    f.moves = moves;
    f.listed = listed;
    f.claims = claims.claims();
    f.claimed = claimed;
    f.row_bases = RowBases{pool.backing().data(), host_tier.backing().data(), shape.row_bytes};
    f.shape = shape;
    f.lanes = std::max(1, launches.validate_vector_length);
    f.rows_per_team = launches.validate_rows_per_team > 0 ? launches.validate_rows_per_team : INT32_MAX;
    f.listed_plans = launches.listed_plans ? 1 : 0;
    return f;
  }

  template <int Features = feature_every>
  FusedFunctor<ExecutionSpace, Features> fused_functor() const {
    return FusedFunctor<ExecutionSpace, Features>{validate_functor<Features>(), apply_functor(), sorted.work.planned};
  }

  /// validate_and_apply()'s first launch where validate() sorts (LaunchPlan::fused_first_units): the teams
  /// without the mark (launch 2 sets it), and the work it leaves.
  template <int Features>
  FusedFirstFunctor<ExecutionSpace, Features> fused_first_functor() const {
    return FusedFirstFunctor<ExecutionSpace, Features>{
        FusedFunctor<ExecutionSpace, Features>{validate_functor<Features>(), apply_functor(), {}},
        sorted.first_moving(launches.fused_first_units, static_cast<int>(shape.work_items))};
  }

  template <int Features>
  FusedFlatFunctor<ExecutionSpace, Features> fused_flat_functor() const {
    FusedFlatFunctor<ExecutionSpace, Features> f;
    f.validate = validate_functor<Features>();
    f.items = items;
    f.state_rows = state_rows;
    f.items_per_row = shape.work_items;
    f.chunk_shift = launches.fused_chunk_shift;
    f.chunk_bytes = launches.fused_chunk_bytes;
    f.rounds = launches.fused_rounds;
    // The guessed words' tail bytes need a thread each (16 and more: GPUs).
    f.guess =
        launches.fused_block >= 16 && launches.fused_chunk_bytes <= launches.fused_block * f.words_per_thread * 16;
    return f;
  }

  /// The persistent grid; `decide`: validate_and_apply (every team decides every row), else apply.
  template <int Features>
  PersistentFunctor<ExecutionSpace, Features> persistent_functor(bool decide) const {
    PersistentFunctor<ExecutionSpace, Features> f;
    f.validate = validate_functor<Features>();
    f.items = items;
    f.state_rows = state_rows;
    f.items_per_row = shape.work_items;
    f.units_per_item = std::max(1, launches.persistent_units);
    f.decide = decide ? 1 : 0;
    return f;
  }

  // hosts: any Words (a unit is a work item)
  template <int Words = 4, bool HandedOut = false, bool Listed = false, bool Staged = false>
  CompactApplyFunctor<ExecutionSpace, Words, HandedOut, Listed, Staged> compact_functor() const {
    CompactApplyFunctor<ExecutionSpace, Words, HandedOut, Listed, Staged> f;
    f.errors = commands.errors;
    f.plan = plan;
    f.items = compact_items;
    f.moves = moves;
    f.listed = listed;
    f.claims = claims.claims();
    f.claimed = claimed;
    f.state_rows = state_rows;
    f.capacity = static_cast<std::int32_t>(shape.capacity);
    f.items_per_row = compact_work_items;
    f.units_per_item = std::max(1, launches.compact_units);
    return f;
  }

  template <int Words>
  FlatApplyFunctor<ExecutionSpace, Words> flat_functor() const {
    return FlatApplyFunctor<ExecutionSpace, Words>{
        commands.errors, plan, items, state_rows, shape.work_items, log2_exact(launches.apply_item_threads)};
  }

  ApplyFunctor<ExecutionSpace> apply_functor() const {
    ApplyFunctor<ExecutionSpace> f;
    f.errors = commands.errors;
    f.plan = plan;
    f.items = items;
    f.state_rows = state_rows;
    f.items_per_row = shape.work_items;
    f.bulk = launches.bulk_copies ? 1 : 0;
    return f;
  }
};

}  // namespace statexfer::impl

#endif
