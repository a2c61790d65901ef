#ifndef STATEXFER_IMPL_TRANSFER_LAUNCH_IMPL_HPP
#define STATEXFER_IMPL_TRANSFER_LAUNCH_IMPL_HPP

// PreparedStateTransfer's kernel launches (validate(), apply(),
// validate_and_apply()) and their summary: what a captured step enqueues, with
// the shapes prepare() chose. No allocation, copy or fence here (docs/CONTRACT.md §6).

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>
#include <type_traits>

#include <statexfer/transfer.hpp>

#include "transfer_data.hpp"

namespace statexfer {

namespace impl {

// apply()'s designs that read the plan of every slot: the persistent grid, the flat grid, the teams.
template <class ExecutionSpace>
void launch_apply_plan(const TransferData<ExecutionSpace>& d, const ExecutionSpace& exec) {
  using memory_space = typename ExecutionSpace::memory_space;
  if (d.launches.apply == ApplyDesign::persistent) {
    d.with_features([&](auto features) {
      using functor = PersistentFunctor<ExecutionSpace, decltype(features)::value>;
      const int team = std::is_same_v<memory_space, Kokkos::HostSpace> ? 1 : functor::team_threads;
      auto policy = Kokkos::Experimental::require(
          typename functor::policy_type(exec, d.launches.persistent_teams, team)
              .set_scratch_size(0, Kokkos::PerTeam(functor::scratch_bytes(d.shape.capacity))),
          Kokkos::Experimental::WorkItemProperty::HintLightWeight);
      Kokkos::parallel_for("statexfer::apply", policy, d.template persistent_functor<decltype(features)::value>(false));
    });
    return;
  }
  if (d.launches.apply == ApplyDesign::flat_grid) {
    const std::int64_t threads = d.launches.work_items * d.launches.apply_item_threads;
    auto launch = [&](auto f) {
      auto policy = Kokkos::Experimental::require(typename decltype(f)::policy_type(exec, 0, threads),
                                                  Kokkos::Experimental::WorkItemProperty::HintLightWeight);
      Kokkos::parallel_for("statexfer::apply", policy, f);
    };
    if (d.launches.apply_words == 1)
      launch(d.template flat_functor<1>());
    else if (d.launches.apply_words == 2)
      launch(d.template flat_functor<2>());
    else
      launch(d.template flat_functor<4>());
    return;
  }
  using functor = ApplyFunctor<ExecutionSpace>;
  auto policy = Kokkos::Experimental::require(
      typename functor::policy_type(exec, d.launches.work_items, d.launches.apply_team_size)
          .set_scratch_size(0, Kokkos::PerTeam(d.launches.bulk_copies ? bulk_scratch_bytes : 0)),
      Kokkos::Experimental::WorkItemProperty::HintLightWeight);
  Kokkos::parallel_for("statexfer::apply", policy, d.apply_functor());
}

}  // namespace impl

template <class ExecutionSpace>
void PreparedStateTransfer<ExecutionSpace>::validate() const {
  validate(ready("validate", nullptr).exec);
}

template <class ExecutionSpace>
void PreparedStateTransfer<ExecutionSpace>::validate(const ExecutionSpace& exec) const {
  const auto& d = ready("validate", &exec);
  d.moves_current = true;
  if (d.launches.sorted_validation) return d.sorted.launch(exec, d.validate_functor(), d.launches);
  // The instantiation with only the optional checks this transfer has (validate_kernel.hpp).
  auto launch = [&](auto f) {
    using functor = decltype(f);
    auto policy = Kokkos::Experimental::require(
        typename functor::policy_type(exec, d.launches.validate_league, d.launches.validate_team_size,
                                      d.launches.validate_vector_length)
            .set_scratch_size(0, Kokkos::PerTeam(functor::scratch_bytes(d.shape.capacity) +
                                                 impl::list_scratch_bytes(d.launches.validate_team_size))),
        Kokkos::Experimental::WorkItemProperty::HintLightWeight);
    Kokkos::parallel_for("statexfer::validate", policy, f);
  };
  d.with_features([&](auto features) { launch(d.template validate_functor<decltype(features)::value>()); });
}

template <class ExecutionSpace>
void PreparedStateTransfer<ExecutionSpace>::apply() const {
  apply(ready("apply", nullptr).exec);
}

template <class ExecutionSpace>
void PreparedStateTransfer<ExecutionSpace>::apply(const ExecutionSpace& exec) const {
  const auto& d = ready("apply", &exec);
  if (d.launches.apply == ApplyDesign::compact && d.moves_current) {
    // Its last team releases the row claims (docs/CONTRACT.md §15).
    const auto launch = [&](auto f) {
      using functor = decltype(f);
      const int team = functor::host ? 1 : functor::team_threads;
      auto policy = Kokkos::Experimental::require(typename functor::policy_type(exec, d.launches.compact_teams, team),
                                                  Kokkos::Experimental::WorkItemProperty::HintLightWeight);
      if constexpr (functor::team_scratch_bytes > 0)
        policy.set_scratch_size(0, Kokkos::PerTeam(functor::team_scratch_bytes));
      Kokkos::parallel_for("statexfer::apply", policy, f);
    };
    // Listed plans: read by striding teams (handed out, a unit reads its row's plan).
    const bool listed = d.launches.listed_plans && !d.launches.compact_handed_out;
    if constexpr (std::is_same_v<memory_space, Kokkos::HostSpace>) {
      // Hosts: a work item a unit, whatever the GPUs' variant.
      listed ? launch(d.template compact_functor<4, false, true>()) : launch(d.compact_functor());
    } else if (d.launches.compact_staged) {
      launch(d.template compact_functor<impl::compact_staged_words, true, false, true>());
    } else if (d.launches.compact_handed_out) {
      d.launches.compact_words == 4 ? launch(d.template compact_functor<4, true>())
                                    : launch(d.template compact_functor<2, true>());
    } else if (d.launches.compact_words == 4) {
      listed ? launch(d.template compact_functor<4, false, true>()) : launch(d.template compact_functor<4>());
    } else {
      listed ? launch(d.template compact_functor<2, false, true>()) : launch(d.template compact_functor<2>());
    }
    return;
  }
  impl::launch_apply_plan(d, exec);
  if (!d.claims.empty()) {
    // The other designs: one team after them releases the row claims.
    using functor = impl::ReleaseClaimsFunctor<ExecutionSpace>;
    const int team = std::is_same_v<memory_space, Kokkos::HostSpace> ? 1 : 128;
    auto policy = Kokkos::Experimental::require(typename functor::policy_type(exec, 1, team),
                                                Kokkos::Experimental::WorkItemProperty::HintLightWeight);
    Kokkos::parallel_for("statexfer::release_claims", policy, functor{d.claims.claims(), d.claimed, d.moves});
  }
}

template <class ExecutionSpace>
void PreparedStateTransfer<ExecutionSpace>::validate_and_apply() const {
  validate_and_apply(ready("validate_and_apply", nullptr).exec);
}

template <class ExecutionSpace>
void PreparedStateTransfer<ExecutionSpace>::validate_and_apply(const ExecutionSpace& exec) const {
  const auto& d = ready("validate_and_apply", &exec);
  if (d.launches.validate_and_apply == FusedDesign::two_launches && d.launches.fused_first_units > 0) {
    // validate()'s launches, the first of them moving a batch of few live work items itself, then apply().
    d.moves_current = true;
    d.with_features([&](auto features) {
      using functor = impl::FusedFirstFunctor<ExecutionSpace, decltype(features)::value>;
      auto policy = Kokkos::Experimental::require(
          typename functor::policy_type(exec, d.launches.fused_first_units, d.launches.fused_team_size)
              .set_scratch_size(
                  0, Kokkos::PerTeam(functor::scratch_bytes(d.launches.bulk_copies, d.launches.fused_team_size))),
          Kokkos::Experimental::WorkItemProperty::HintLightWeight);
      const functor first = d.template fused_first_functor<decltype(features)::value>();
      Kokkos::parallel_for("statexfer::validate_and_apply_first", policy, first);
      d.sorted.second(exec, d.validate_functor(), d.launches, first.work);
    });
    apply(exec);
    // The compact plan lists nothing where the first launch moved the batch: an apply() after this call
    // takes the teams, which read the plan alone (as after a one-launch design).
    d.moves_current = false;
    return;
  }
  if (d.launches.validate_and_apply == FusedDesign::two_launches) {
    validate(exec);
    apply(exec);
    return;
  }
  // One launch: blocks of the flat grid, or apply's teams, each deciding its row. No compact plan.
  d.moves_current = false;
  auto launch = [&](auto f, std::int64_t league, int team, std::size_t scratch) {
    auto policy = Kokkos::Experimental::require(
        typename decltype(f)::policy_type(exec, league, team).set_scratch_size(0, Kokkos::PerTeam(scratch)),
        Kokkos::Experimental::WorkItemProperty::HintLightWeight);
    Kokkos::parallel_for("statexfer::validate_and_apply", policy, f);
  };
  d.with_features([&](auto features) {
    constexpr int features_v = decltype(features)::value;
    if (d.launches.validate_and_apply == FusedDesign::persistent) {
      using functor = impl::PersistentFunctor<ExecutionSpace, features_v>;
      const int team = std::is_same_v<memory_space, Kokkos::HostSpace> ? 1 : functor::team_threads;
      launch(d.template persistent_functor<features_v>(true), d.launches.persistent_teams, team,
             functor::scratch_bytes(d.shape.capacity));
    } else if (d.launches.validate_and_apply == FusedDesign::flat_grid) {
      using functor = impl::FusedFlatFunctor<ExecutionSpace, features_v>;
      launch(d.template fused_flat_functor<features_v>(), d.launches.fused_blocks, d.launches.fused_block,
             functor::scratch_bytes(d.shape.capacity));
    } else {
      using functor = impl::FusedFunctor<ExecutionSpace, features_v>;
      launch(d.template fused_functor<features_v>(), d.launches.work_items, d.launches.fused_team_size,
             functor::scratch_bytes(d.launches.bulk_copies));
    }
  });
}

template <class ExecutionSpace>
LaunchPlan PreparedStateTransfer<ExecutionSpace>::launch_plan() const {
  return ready("launch_plan", nullptr).launches;
}

template <class ExecutionSpace>
std::string PreparedStateTransfer<ExecutionSpace>::launch_summary() const {
  if (!data_) return "moved-from";
  const auto& d = *data_;
  if (!d.prepared) return "not prepared";
  const LaunchPlan& p = d.launches;
  const auto units_an_item = [](std::int64_t n) {
    return std::to_string(n) + (n == 1 ? " unit" : " units") + " an item";
  };
  // validate: teams x threads x lanes of the pair compares, or (sorted) those of its
  // first launch and up to how many live rows it compares pairs, a sort team per chunk
  // of each key array (or counting teams of the rows), decide; apply: a flat grid of threads per work item
  // of every row (GPUs) or a team per work item (hosts).
  const std::string validate =
      p.sorted_validation
          ? "validate (sorted) " + std::to_string(p.validate_league) + "x" + std::to_string(p.validate_team_size) +
                "x" + std::to_string(p.validate_vector_length) + " pairs up to " +
                std::to_string(d.sorted.work.pairs_live) + " live, " + std::to_string(p.sort_teams) + "x" +
                std::to_string(p.sort_team_size) + (d.sorted.is_counted() ? " counting teams, " : " sort teams, ") +
                std::to_string(d.shape.capacity) + " rows"
          : "validate " + std::to_string(p.validate_league) + "x" + std::to_string(p.validate_team_size) + "x" +
                std::to_string(p.validate_vector_length);
  const std::string items = std::to_string(p.work_items);
  const std::string persistent = std::to_string(p.persistent_teams) + "x" +
                                 std::to_string(std::is_same_v<memory_space, Kokkos::HostSpace> ? 1 : 128) +
                                 " persistent (" + units_an_item(p.persistent_units) + ")";
  const std::string compact =
      std::to_string(p.compact_teams) + "x" +
      std::to_string(std::is_same_v<memory_space, Kokkos::HostSpace> ? 1 : 128) + " compact (" +
      units_an_item(p.compact_units) +
      (std::is_same_v<memory_space, Kokkos::HostSpace> ? ")"
                                                       : ", " + std::to_string(p.compact_words) + " words a thread" +
                                                             (p.compact_staged       ? ", handed out, staged)"
                                                              : p.compact_handed_out ? ", handed out)"
                                                                                     : ")"));
  const std::string apply =
      p.apply == ApplyDesign::compact      ? compact
      : p.apply == ApplyDesign::persistent ? persistent
      : p.apply == ApplyDesign::flat_grid
          ? items + "x" + std::to_string(p.apply_item_threads) + " flat (" + std::to_string(p.apply_words) +
                " words a thread)"
          : items + "x" + std::to_string(p.apply_team_size) + (p.bulk_copies ? " (bulk copies)" : "");
  // validate_and_apply in one launch: blocks x threads of the flat grid, or teams x threads.
  std::string fused;
  if (p.validate_and_apply == FusedDesign::flat_grid)
    fused = ", validate_and_apply " + std::to_string(p.fused_blocks) + "x" + std::to_string(p.fused_block) + " flat (" +
            std::to_string(p.fused_words) + " words a thread" +
            (p.fused_rounds > 1 ? ", " + std::to_string(p.fused_rounds) + " rounds a block)" : ")");
  else if (p.validate_and_apply == FusedDesign::teams)
    fused = ", validate_and_apply " + items + "x" + std::to_string(p.fused_team_size);
  else if (p.validate_and_apply == FusedDesign::persistent)
    fused = ", validate_and_apply " + persistent;
  else if (p.fused_first_units > 0)
    fused = ", validate_and_apply's first launch " + std::to_string(p.fused_first_units) + "x" +
            std::to_string(p.fused_team_size) + " moving up to " + std::to_string(p.fused_first_units) +
            " live work items";
  return validate + ", apply " + apply + fused;
}

}  // namespace statexfer

#endif
