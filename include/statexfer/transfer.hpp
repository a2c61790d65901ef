#ifndef STATEXFER_TRANSFER_HPP
#define STATEXFER_TRANSFER_HPP

// PreparedStateTransfer: validate and apply a batch of state commands on the device.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <statexfer/claims.hpp>
#include <statexfer/commands.hpp>
#include <statexfer/host_tier.hpp>
#include <statexfer/layout.hpp>
#include <statexfer/launch_plan.hpp>
#include <statexfer/options.hpp>
#include <statexfer/pool.hpp>
#include <statexfer/speculative.hpp>

namespace statexfer {

/// A KV-cache plane whose partially filled page at a prefix end is saved in the
/// row region `region`. `cache` is `[pages, page_bytes]` in the execution space's
/// memory, the caller's (wrap it in an unmanaged View); it must stay alive until
/// every captured graph that uses the transfer has drained.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
struct PageBinding {
  using cache_view = Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>;
  std::string region;
  cache_view cache;
};

template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
using PageTable = Kokkos::View<std::int32_t**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>;

template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
using StateRows = Kokkos::View<std::int64_t**, Kokkos::LayoutRight, typename ExecutionSpace::memory_space>;

/// Everything a transfer binds besides the pool, the commands and the page tables.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
struct TransferConfig {
  /// Page bindings, one per attention plane whose partial page is saved.
  std::vector<PageBinding<ExecutionSpace>> pages;
  /// Tokens per physical KV page (> 0).
  std::int64_t page_tokens = 0;
  /// int64 [C, state_row_columns] (8); column 0 is the live pool row of each request slot.
  StateRows<ExecutionSpace> state_rows;
  /// Consumed tokens of each live request.
  RequestState<ExecutionSpace> requests;
  /// Draft-model planes: the region holds two pages, cache pages are half the region.
  std::vector<PageBinding<ExecutionSpace>> trailing_pages;
  /// int32 [C, W] (the page tables' shape); required when trailing bindings remain.
  PageTable<ExecutionSpace> trailing_tables;
  /// Regions that row copies leave alone; bindings on them are dropped.
  std::vector<std::string> excluded_regions;
  /// Host rows for operations 2..4 (docs/CONTRACT.md §12); empty: no host tier.
  HostTier<ExecutionSpace> host_tier;
  /// Commits of speculative decoding, operation 5 (docs/CONTRACT.md §13); positions 0: none.
  SpeculativeConfig<ExecutionSpace> speculative;
  /// Row claims shared with the transfers that run beside this one on other instances (docs/CONTRACT.md §15);
  /// empty: none.
  RowClaims<ExecutionSpace> claims;
  /// Design choices and tuning of the kernels; the defaults are the measured best.
  TransferOptions options;
};

namespace impl {
template <class ExecutionSpace>
struct TransferData;
}

/// Validates then applies a batch of commands (docs/CONTRACT.md §4-§5); see
/// examples/captured_step.cpp for the calls in order, captured in a CUDA graph. The
/// constructor performs every host check (std::invalid_argument naming the
/// argument; docs/CONTRACT.md §3), including that no input validation reads
/// overlaps the pool or a cache, which apply() writes;
/// prepare() runs each kernel once with an empty batch so that nothing is left
/// to set up; validate() and apply() then only enqueue work on the instance they
/// are given, so both can be captured into a CUDA graph and replayed with new
/// command contents. Tensor-parallel callers combine the errors of all ranks
/// between validate() and apply(): apply() reads `errors` afresh.
///
/// apply() acts on the plan the last validate() stored (docs/CONTRACT.md §5):
/// which rows are live, their rows, partial and trailing pages. num_ops, the
/// command arrays, the page and trailing tables, state rows and request state
/// rewritten between validate() and apply() change nothing that apply() does;
/// upload a batch before validate(). Only `errors` is read again, and it can
/// only veto: a row validate() rejected stays unapplied whatever `errors` says.
///
/// A moved-from transfer holds no state: capacity() and
/// work_items_per_command() return 0, the region lists are empty,
/// launch_summary() says "moved-from", prepared() is false, and prepare(),
/// validate(), apply(), validate_and_apply() and execution_space_instance()
/// throw std::logic_error.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class PreparedStateTransfer {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;

  PreparedStateTransfer(const StatePool<ExecutionSpace>& pool, const StateCommands<ExecutionSpace>& commands,
                        const PageTable<ExecutionSpace>& tables, const TransferConfig<ExecutionSpace>& config);
  ~PreparedStateTransfer();
  PreparedStateTransfer(PreparedStateTransfer&&) noexcept;
  PreparedStateTransfer& operator=(PreparedStateTransfer&&) noexcept;
  PreparedStateTransfer(const PreparedStateTransfer&) = delete;
  PreparedStateTransfer& operator=(const PreparedStateTransfer&) = delete;

  /// Host work before capture: requires num_ops == 0 (std::invalid_argument
  /// otherwise), chooses the launch shapes (on GPUs also asking a one-thread
  /// kernel whether the device code has bulk copies), launches validate, apply
  /// and validate_and_apply once on `exec` and fences it. Whatever Kokkos sets
  /// up on an instance's first launches (team scratch, launch buffers) is set
  /// up here, for `exec`.
  ///
  /// The transfer is bound to `exec` from then on: validate(), apply() and
  /// validate_and_apply() without an argument enqueue on it, and refuse any
  /// other instance (std::invalid_argument), because the plan and the work
  /// Views are the transfer's own, so work of one transfer on two streams would
  /// race, and because on Kokkos 4 another instance would allocate on its first
  /// launch, inside a capture. Calling prepare() again (num_ops == 0) rebinds.
  void prepare(const ExecutionSpace& exec = ExecutionSpace());
  bool prepared() const noexcept;

  /// Enqueue validation: writes `errors` (and the plan apply() reads). One
  /// kernel; two where it sorts (docs/CONTRACT.md §8), of which hosts leave
  /// out the second when the first decided every row.
  void validate() const;
  void validate(const ExecutionSpace& exec) const;
  /// Enqueue the writes of every command the last validate() found live with
  /// code 0 and whose `errors` entry is still 0 (combined across ranks since),
  /// from the rows and pages that validate() planned. One kernel.
  void apply() const;
  void apply(const ExecutionSpace& exec) const;
  /// validate() then apply() for a single rank, with the same `errors`, plan,
  /// pool and cache bytes (docs/CONTRACT.md §10). On GPUs it is one kernel
  /// where the batch allows it (up to 64 commands; §10 gives the rule and
  /// launch_plan() says which design runs), which saves a dependent launch:
  /// most of the time of a small batch. Elsewhere it enqueues the two.
  /// Tensor-parallel ranks, which combine errors in between, call validate()
  /// and apply() separately.
  void validate_and_apply() const;
  void validate_and_apply(const ExecutionSpace& exec) const;
  /// The instance prepare() bound the transfer to (std::logic_error before prepare()).
  const ExecutionSpace& execution_space_instance() const;

  std::int64_t capacity() const noexcept;
  /// Names of the page and trailing bindings left after exclusions, in binding order.
  std::vector<std::string> page_regions() const;
  std::vector<std::string> trailing_regions() const;
  /// Work items of one command row in apply()'s launch (row tiles, page tiles).
  std::int64_t work_items_per_command() const noexcept;
  /// The launch shapes prepare() chose, for logs and benchmark records, e.g.
  /// "validate 8x8x16 (teams x threads x lanes), apply 1584x128 compact (8 units
  /// an item)" on GPUs (teams x threads), "apply 8768x2048 flat (2 words a
  /// thread)" (work items x threads), "apply 8768x1 (teams x threads)" with
  /// " (bulk copies)" when apply() runs as teams that use them, and
  /// ", validate_and_apply 8768x128" when that is one launch as teams, or
  /// ", validate_and_apply 6360x128 flat (4 words a thread)" as the flat grid
  /// (blocks x threads; ", 2 rounds a block" when each block moves two chunks).
  std::string launch_summary() const;
  /// What prepare() chose from the shape, the device's limits and the options
  /// (std::logic_error before prepare()); a read-out, unstable (launch_plan.hpp).
  LaunchPlan launch_plan() const;

 private:
  // The prepared data for `call`; throws unless prepared and, with `exec`, bound to it.
  const impl::TransferData<ExecutionSpace>& ready(const char* call, const ExecutionSpace* exec) const;

  std::unique_ptr<impl::TransferData<ExecutionSpace>> data_;
};

// Compiled in the library for every execution space Kokkos was built with.
#ifdef KOKKOS_ENABLE_SERIAL
extern template class PreparedStateTransfer<Kokkos::Serial>;
#endif
#ifdef KOKKOS_ENABLE_OPENMP
extern template class PreparedStateTransfer<Kokkos::OpenMP>;
#endif
#ifdef KOKKOS_ENABLE_THREADS
extern template class PreparedStateTransfer<Kokkos::Threads>;
#endif
#ifdef KOKKOS_ENABLE_CUDA
extern template class PreparedStateTransfer<Kokkos::Cuda>;
#endif
#ifdef KOKKOS_ENABLE_HIP
extern template class PreparedStateTransfer<Kokkos::HIP>;
#endif

}  // namespace statexfer

#endif
