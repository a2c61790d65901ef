#ifndef STATEXFER_IMPL_COMBINE_IMPL_HPP
#define STATEXFER_IMPL_COMBINE_IMPL_HPP

// ErrorCombiner's definitions; included by one translation unit per execution
// space (explicit instantiation), like the transfer's.

#include <Kokkos_Core.hpp>

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <statexfer/combine.hpp>

namespace statexfer {
namespace impl {

template <class ExecutionSpace>
struct CombinerData {
  using memory_space = typename ExecutionSpace::memory_space;
  static constexpr bool host_accessible =
      Kokkos::SpaceAccessibility<Kokkos::DefaultHostExecutionSpace, memory_space>::accessible;

  Kokkos::View<std::int32_t*, memory_space> errors;
  // Commits' accepted counts (docs/CONTRACT.md §13); empty for hand-made commands without them.
  Kokkos::View<const std::int32_t*, memory_space> commit_positions;
  // The reduced buffer: [C] priorities, then (with commit positions) [C] of
  // them and [C] of their negations, so that one MAX gives each row's largest
  // and smallest count.
  Kokkos::View<std::int32_t*, memory_space> priorities;
  Kokkos::View<std::int32_t*, Kokkos::HostSpace> staging;  // MPI on device memory
  CombineBackend backend = CombineBackend::none;
  int rank = 0;
  int ranks = 1;
#ifdef STATEXFER_HAVE_MPI
  MPI_Comm mpi_comm = MPI_COMM_NULL;
#endif
#ifdef STATEXFER_HAVE_NCCL
  ncclComm_t nccl_comm = nullptr;
#endif

  // allocate()'s arrays are views of one allocation: held here for as long as errors is.
  Kokkos::View<std::uint8_t*, memory_space> block;

  explicit CombinerData(const StateCommands<ExecutionSpace>& commands)
      : errors(commands.errors), block(commands.block) {
    if (errors.data() == nullptr && errors.extent(0) > 0)
      throw std::invalid_argument("statexfer::ErrorCombiner: commands.errors is an empty View");
    if (commands.commit_positions.extent(0) == errors.extent(0)) commit_positions = commands.commit_positions;
    priorities = Kokkos::View<std::int32_t*, memory_space>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "statexfer::error_priorities"), reduced());
    if (!host_accessible)
      staging = Kokkos::View<std::int32_t*, Kokkos::HostSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "statexfer::error_priorities_host"), reduced());
  }

  /// Elements of the reduced buffer.
  std::size_t reduced() const { return errors.extent(0) * (commit_positions.extent(0) > 0 ? 3 : 1); }

  ~CombinerData() {
#ifdef STATEXFER_HAVE_MPI
    if (mpi_comm != MPI_COMM_NULL) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Comm_free(&mpi_comm);
    }
#endif
  }
};

/// Row i of the buffer to reduce (`n` rows, `positions`: commits' counts, maybe empty).
template <class Errors, class Positions, class Buffer>
KOKKOS_INLINE_FUNCTION void to_reduced(std::int64_t i, std::int64_t n, const Errors& errors, const Positions& positions,
                                       const Buffer& buffer) {
  buffer(i) = error_priority(errors(i));
  if (positions.extent(0) > 0) {
    buffer(n + i) = positions(i);
    buffer(2 * n + i) = -positions(i);
  }
}

/// Row i's combined code from the reduced buffer: a commit whose ranks read
/// different accepted counts gets code 3 in the combined order (docs/CONTRACT.md §9, §13).
template <class Buffer>
KOKKOS_INLINE_FUNCTION std::int32_t from_reduced(std::int64_t i, std::int64_t n, bool positions, const Buffer& buffer) {
  std::int32_t priority = buffer(i);
  if (positions && buffer(n + i) != -buffer(2 * n + i) && priority < error_priority(3)) priority = error_priority(3);
  return error_from_priority(priority);
}

// errors -> the buffer to reduce, or the reduced buffer -> errors.
template <class ExecutionSpace, bool ToPriority>
struct MapCodes {
  using memory_space = typename ExecutionSpace::memory_space;
  Kokkos::View<std::int32_t*, memory_space> errors;
  Kokkos::View<const std::int32_t*, memory_space> positions;
  Kokkos::View<std::int32_t*, memory_space> buffer;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i) const {
    const auto n = static_cast<std::int64_t>(errors.extent(0));
    if (ToPriority)
      to_reduced(i, n, errors, positions, buffer);
    else
      errors(i) = from_reduced(i, n, positions.extent(0) > 0, buffer);
  }
};

template <class ExecutionSpace, bool ToPriority>
void map_codes(const ExecutionSpace& exec, const CombinerData<ExecutionSpace>& d, const char* label) {
  // Light-weight launches take the plain kernel-argument path on CUDA: nothing
  // but a kernel node is recorded when captured.
  const auto policy =
      Kokkos::Experimental::require(Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(
                                        exec, 0, static_cast<std::int64_t>(d.errors.extent(0))),
                                    Kokkos::Experimental::WorkItemProperty::HintLightWeight);
  Kokkos::parallel_for(label, policy, MapCodes<ExecutionSpace, ToPriority>{d.errors, d.commit_positions, d.priorities});
}

[[noreturn]] inline void combine_failure(const std::string& what) {
  throw std::runtime_error("statexfer::ErrorCombiner: " + what);
}

[[noreturn]] inline void combiner_moved_from(const char* call) {
  throw std::logic_error(std::string("statexfer::ErrorCombiner::") + call + ": the combiner was moved from");
}

}  // namespace impl

template <class ExecutionSpace>
ErrorCombiner<ExecutionSpace>::ErrorCombiner(const StateCommands<ExecutionSpace>& commands)
    : data_(std::make_unique<impl::CombinerData<ExecutionSpace>>(commands)) {}

#ifdef STATEXFER_HAVE_MPI
template <class ExecutionSpace>
ErrorCombiner<ExecutionSpace>::ErrorCombiner(const StateCommands<ExecutionSpace>& commands, MPI_Comm comm)
    : data_(std::make_unique<impl::CombinerData<ExecutionSpace>>(commands)) {
  auto& d = *data_;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw std::invalid_argument("statexfer::ErrorCombiner: MPI is not initialized");
  if (comm == MPI_COMM_NULL) throw std::invalid_argument("statexfer::ErrorCombiner: comm is MPI_COMM_NULL");
  if (MPI_Comm_dup(comm, &d.mpi_comm) != MPI_SUCCESS) impl::combine_failure("MPI_Comm_dup failed");
  MPI_Comm_rank(d.mpi_comm, &d.rank);
  MPI_Comm_size(d.mpi_comm, &d.ranks);
  d.backend = CombineBackend::mpi;
}
#endif

#ifdef STATEXFER_HAVE_NCCL
template <class ExecutionSpace>
ErrorCombiner<ExecutionSpace>::ErrorCombiner(const StateCommands<ExecutionSpace>& commands, ncclComm_t comm)
    : data_(std::make_unique<impl::CombinerData<ExecutionSpace>>(commands)) {
  auto& d = *data_;
#ifdef KOKKOS_ENABLE_CUDA
  constexpr bool cuda = std::is_same_v<ExecutionSpace, Kokkos::Cuda>;
#else
  constexpr bool cuda = false;
#endif
  if (!cuda) throw std::invalid_argument("statexfer::ErrorCombiner: an NCCL communicator needs Kokkos::Cuda");
  if (comm == nullptr) throw std::invalid_argument("statexfer::ErrorCombiner: the NCCL communicator is null");
  d.nccl_comm = comm;
  if (ncclCommUserRank(comm, &d.rank) != ncclSuccess || ncclCommCount(comm, &d.ranks) != ncclSuccess)
    impl::combine_failure("cannot query the NCCL communicator");
  d.backend = CombineBackend::nccl;
}
#endif

template <class ExecutionSpace>
ErrorCombiner<ExecutionSpace>::~ErrorCombiner() = default;
template <class ExecutionSpace>
ErrorCombiner<ExecutionSpace>::ErrorCombiner(ErrorCombiner&&) noexcept = default;
template <class ExecutionSpace>
ErrorCombiner<ExecutionSpace>& ErrorCombiner<ExecutionSpace>::operator=(ErrorCombiner&&) noexcept = default;

template <class ExecutionSpace>
void ErrorCombiner<ExecutionSpace>::prepare(const ExecutionSpace& exec) {
  if (!data_) impl::combiner_moved_from("prepare");
  combine(exec);
  exec.fence();
}

template <class ExecutionSpace>
void ErrorCombiner<ExecutionSpace>::combine(const ExecutionSpace& exec) const {
  if (!data_) impl::combiner_moved_from("combine");
  const auto& d = *data_;
  if (d.backend == CombineBackend::none) return;
  const auto n = static_cast<int>(d.errors.extent(0));
  const auto reduced = static_cast<int>(d.reduced());

#ifdef STATEXFER_HAVE_MPI
  if (d.backend == CombineBackend::mpi) {
    // A host call on host memory: the errors must be complete first.
    if constexpr (impl::CombinerData<ExecutionSpace>::host_accessible) {
      // Host memory: map on the host around the reduction (no extra launches).
      exec.fence();
      const bool positions = d.commit_positions.extent(0) > 0;
      for (int i = 0; i < n; ++i) impl::to_reduced(i, n, d.errors, d.commit_positions, d.priorities);
      if (n > 0 &&
          MPI_Allreduce(MPI_IN_PLACE, d.priorities.data(), reduced, MPI_INT32_T, MPI_MAX, d.mpi_comm) != MPI_SUCCESS)
        impl::combine_failure("MPI_Allreduce failed");
      for (int i = 0; i < n; ++i) d.errors(i) = impl::from_reduced(i, n, positions, d.priorities);
    } else {
      // Device memory: map on the device, reduce a host copy, map back.
      impl::map_codes<ExecutionSpace, true>(exec, d, "statexfer::combine_to_priority");
      Kokkos::deep_copy(exec, d.staging, d.priorities);
      exec.fence();
      if (n > 0 &&
          MPI_Allreduce(MPI_IN_PLACE, d.staging.data(), reduced, MPI_INT32_T, MPI_MAX, d.mpi_comm) != MPI_SUCCESS)
        impl::combine_failure("MPI_Allreduce failed");
      Kokkos::deep_copy(exec, d.priorities, d.staging);
      impl::map_codes<ExecutionSpace, false>(exec, d, "statexfer::combine_from_priority");
    }
    return;
  }
#endif

#ifdef STATEXFER_HAVE_NCCL
  if (d.backend == CombineBackend::nccl) {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>) {
      // Enqueued on exec's stream, kernels and the reduction: capturable.
      impl::map_codes<ExecutionSpace, true>(exec, d, "statexfer::combine_to_priority");
      const ncclResult_t rc = ncclAllReduce(d.priorities.data(), d.priorities.data(), static_cast<std::size_t>(reduced),
                                            ncclInt32, ncclMax, d.nccl_comm, exec.cuda_stream());
      if (rc != ncclSuccess) impl::combine_failure(std::string("ncclAllReduce failed: ") + ncclGetErrorString(rc));
      impl::map_codes<ExecutionSpace, false>(exec, d, "statexfer::combine_from_priority");
    }
#endif
  }
#endif
  (void)n;
  (void)reduced;
  (void)exec;  // a build with neither MPI nor NCCL has nothing to enqueue
}

template <class ExecutionSpace>
CombineBackend ErrorCombiner<ExecutionSpace>::backend() const noexcept {
  return data_ ? data_->backend : CombineBackend::none;
}

template <class ExecutionSpace>
bool ErrorCombiner<ExecutionSpace>::capturable() const noexcept {
  return data_ && data_->backend != CombineBackend::mpi;
}

template <class ExecutionSpace>
int ErrorCombiner<ExecutionSpace>::rank() const noexcept {
  return data_ ? data_->rank : 0;
}

template <class ExecutionSpace>
int ErrorCombiner<ExecutionSpace>::ranks() const noexcept {
  return data_ ? data_->ranks : 0;
}

}  // namespace statexfer

#endif
