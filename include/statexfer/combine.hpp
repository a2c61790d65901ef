#ifndef STATEXFER_COMBINE_HPP
#define STATEXFER_COMBINE_HPP

// ErrorCombiner: combine the validation errors of all tensor-parallel ranks
// between validate() and apply() (docs/CONTRACT.md §9), so that a command applies on every
// rank or on none.
//
// Each rank holds a shard of the state and validates the same batch against its
// own page tables and capacities, so codes can differ between ranks (a page
// unmapped on one rank only). combine() replaces every rank's `errors` with the
// same combined code per command: the one that comes first in docs/CONTRACT.md §4's order
// 5, 1, 2, 3, 4, 6 among the ranks' codes, 0 only where every rank has 0. It
// maps codes to priorities (error_priority), reduces them with MAX across the
// ranks and maps them back (error_from_priority). apply() reads `errors`
// afresh, so a command that failed on any rank writes nothing on any rank.
//
//   transfer.validate(exec);
//   combiner.combine(exec);   // every rank, same order (a collective)
//   transfer.apply(exec);
//
// Backends:
//   - none: one rank (the constructor without a communicator); combine() does nothing.
//   - MPI (built with STATEXFER_ENABLE_MPI, so statexfer/config.hpp defines
//     STATEXFER_HAVE_MPI): an MPI_Allreduce on host memory. It is a host call,
//     so combine() fences `exec` before it. On host backends (Serial, OpenMP) the codes are mapped
//     in place on the host around the reduction; on device memory they are
//     mapped by kernels on `exec` and staged through a host buffer. The MPI
//     path is therefore NOT capturable into a CUDA graph: capture validate()
//     and apply() apart and call combine() between the two replays.
//   - NCCL (Kokkos::Cuda only, built with STATEXFER_ENABLE_NCCL, so
//     STATEXFER_HAVE_NCCL is defined): ncclAllReduce(ncclMax) on the priority
//     buffer, enqueued on the Kokkos::Cuda instance's stream: no host
//     synchronisation, so validate(), combine() and apply() can be captured
//     into one graph.
//
// combine() is a collective: every rank of the communicator calls it for every
// batch, in the same order. prepare() runs it once (a collective too) so that
// the first launches and the communicator's connections are set up before a
// capture; combine() allocates nothing.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>

#include <statexfer/commands.hpp>
#include <statexfer/config.hpp>

#ifdef STATEXFER_HAVE_MPI
#include <mpi.h>
#endif
#ifdef STATEXFER_HAVE_NCCL
#include <nccl.h>
#endif

namespace statexfer {

/// Priority of an error code in the combined order (docs/CONTRACT.md §9, §15,
/// §17): 5, 1, 2, 3, 8, 9, 11, 10, 4, 6, 7 from the highest; 0 is 0. Codes
/// outside 0..11 rank above all (12).
KOKKOS_INLINE_FUNCTION constexpr std::int32_t error_priority(std::int32_t code) noexcept {
  switch (code) {
    case 0: return 0;
    case 7: return 1;
    case 6: return 2;
    case 4: return 3;
    case 10: return 4;
    case 11: return 5;
    case 9: return 6;
    case 8: return 7;
    case 3: return 8;
    case 2: return 9;
    case 1: return 10;
    case 5: return 11;
    default: return 12;
  }
}

/// Inverse of error_priority; priority 12 (a code outside 0..11) comes back as -1.
KOKKOS_INLINE_FUNCTION constexpr std::int32_t error_from_priority(std::int32_t priority) noexcept {
  switch (priority) {
    case 0: return 0;
    case 1: return 7;
    case 2: return 6;
    case 3: return 4;
    case 4: return 10;
    case 5: return 11;
    case 6: return 9;
    case 7: return 8;
    case 8: return 3;
    case 9: return 2;
    case 10: return 1;
    case 11: return 5;
    default: return -1;
  }
}

/// The combined code of two ranks' codes (what combine() computes, per command).
KOKKOS_INLINE_FUNCTION constexpr std::int32_t combine_error_codes(std::int32_t a, std::int32_t b) noexcept {
  const std::int32_t pa = error_priority(a), pb = error_priority(b);
  return error_from_priority(pa > pb ? pa : pb);
}

/// How an ErrorCombiner reduces across ranks.
enum class CombineBackend : std::uint8_t { none, mpi, nccl };
/// "none", "mpi", "nccl".
const char* to_string(CombineBackend backend) noexcept;

namespace impl {
template <class ExecutionSpace>
struct CombinerData;
}

/// Combines `commands.errors` across the ranks of a communicator (see above).
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class ErrorCombiner {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;

  /// One rank: combine() leaves the errors as they are.
  explicit ErrorCombiner(const StateCommands<ExecutionSpace>& commands);
#ifdef STATEXFER_HAVE_MPI
  /// The ranks of `comm` (duplicated, so the combiner's messages never match
  /// the caller's; freed by the destructor unless MPI is finalized by then).
  /// A collective over `comm`.
  ErrorCombiner(const StateCommands<ExecutionSpace>& commands, MPI_Comm comm);
#endif
#ifdef STATEXFER_HAVE_NCCL
  /// The ranks of `comm` (not owned), for Kokkos::Cuda only: std::invalid_argument
  /// for any other execution space.
  ErrorCombiner(const StateCommands<ExecutionSpace>& commands, ncclComm_t comm);
#endif
  ~ErrorCombiner();
  /// A moved-from combiner holds nothing: backend() is none, capturable() is
  /// false, rank() and ranks() are 0, and prepare() and combine() throw
  /// std::logic_error saying it was moved from. Assigning one to it makes it
  /// whole again (docs/CONTRACT.md §9).
  ErrorCombiner(ErrorCombiner&&) noexcept;
  ErrorCombiner& operator=(ErrorCombiner&&) noexcept;
  ErrorCombiner(const ErrorCombiner&) = delete;
  ErrorCombiner& operator=(const ErrorCombiner&) = delete;

  /// Run combine() once and fence `exec` (host work before a capture). A collective.
  void prepare(const ExecutionSpace& exec = ExecutionSpace());

  /// Replace every rank's errors with the combined codes. A collective. MPI:
  /// fences `exec` and calls MPI_Allreduce on the host (not capturable); NCCL:
  /// enqueued on `exec`'s stream (capturable); none: nothing.
  void combine(const ExecutionSpace& exec = ExecutionSpace()) const;

  CombineBackend backend() const noexcept;
  /// Whether combine() only enqueues device work (none, NCCL), so it can be
  /// recorded into a CUDA graph between validate() and apply().
  bool capturable() const noexcept;
  int rank() const noexcept;
  int ranks() const noexcept;

 private:
  std::unique_ptr<impl::CombinerData<ExecutionSpace>> data_;
};

// Compiled in the library for every execution space Kokkos was built with.
#ifdef KOKKOS_ENABLE_SERIAL
extern template class ErrorCombiner<Kokkos::Serial>;
#endif
#ifdef KOKKOS_ENABLE_OPENMP
extern template class ErrorCombiner<Kokkos::OpenMP>;
#endif
#ifdef KOKKOS_ENABLE_THREADS
extern template class ErrorCombiner<Kokkos::Threads>;
#endif
#ifdef KOKKOS_ENABLE_CUDA
extern template class ErrorCombiner<Kokkos::Cuda>;
#endif
#ifdef KOKKOS_ENABLE_HIP
extern template class ErrorCombiner<Kokkos::HIP>;
#endif

}  // namespace statexfer

#endif
