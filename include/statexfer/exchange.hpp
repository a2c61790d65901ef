#ifndef STATEXFER_EXCHANGE_HPP
#define STATEXFER_EXCHANGE_HPP

// Prefill/decode moves (docs/CONTRACT.md §17): a prefill group's ranks export
// validated records of their rows into one wire buffer per decode rank; any
// transport carries the bytes; each decode rank imports them, checking every
// record (fingerprint, key, endpoint, the groups' geometry, the slices it
// carries, its checksum) before its row is published (or, as asked, before a
// byte of it lands). Both are capturable:
// validate() and apply() only enqueue kernels.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include <statexfer/commands.hpp>
#include <statexfer/pool.hpp>
#include <statexfer/sharding.hpp>

namespace statexfer {

/// Rank `rank` of a tensor-parallel group of `size` ranks.
struct GroupRank {
  int size = 1;
  int rank = 0;
};

/// Bytes of one record that `source` sends `destination` (header and payload,
/// rounded up to 16; 0 when it sends nothing): a wire buffer holds C of them.
std::int64_t record_bytes(const ModelLayout& model, GroupRank source, GroupRank destination);
/// The header's size for `model` (docs/CONTRACT.md §17: 80 + 16 x segments).
std::int64_t record_header_bytes(const ModelLayout& model);

/// When an import's payload lands in its row (docs/CONTRACT.md §17).
enum class ImportLanding {
  /// validate() checks every record but its checksum, then lands the payload
  /// of each command that passed, summing it as it is read, and leaves those
  /// rows unpublished (`consumed_tokens` -1, refused by every command that
  /// reads a row through its endpoint); a failed checksum is code 10 there.
  /// apply() publishes (writes the endpoint and key of) each row whose code
  /// is still 0. The payload is read once and written once. The default.
  publish_after_check,
  /// validate() checks every record, its checksum included, before a byte
  /// lands; apply() writes the rows whose code is still 0, and a refused row
  /// keeps every byte. The payload is read twice and written once.
  check_before_write,
};

template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
using WireBuffer = Kokkos::View<std::uint8_t*, typename ExecutionSpace::memory_space>;

namespace impl {
template <class ExecutionSpace>
struct ExportData;
template <class ExecutionSpace>
struct ImportData;
}  // namespace impl

/// The export side (operation 6): rank `source` of the prefill group packs
/// pool rows into record slots of `wires[j]`, one wire buffer per rank j of
/// the decode group of `destination_tp` (empty where `source` sends j
/// nothing; else at least C x record_bytes). The pool's layout must be
/// `model.local(source.size, source.rank)`. The constructor refuses what
/// does not fit (std::invalid_argument naming the argument); prepare() runs
/// both steps once on an empty batch.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class PreparedExport {
 public:
  PreparedExport(const StatePool<ExecutionSpace>& pool, const StateCommands<ExecutionSpace>& commands,
                 const ModelLayout& model, GroupRank source, int destination_tp,
                 std::vector<WireBuffer<ExecutionSpace>> wires);
  ~PreparedExport();
  PreparedExport(PreparedExport&&) noexcept;
  PreparedExport& operator=(PreparedExport&&) noexcept;

  void prepare(const ExecutionSpace& exec = ExecutionSpace());
  /// Each live command's code (docs/CONTRACT.md §17) into `errors`.
  void validate(const ExecutionSpace& exec) const;
  /// The records of every live command: headers with its code (as `errors`
  /// holds it now) and, where that is 0, payload and checksum.
  void apply(const ExecutionSpace& exec) const;
  std::int64_t capacity() const noexcept;

 private:
  std::unique_ptr<impl::ExportData<ExecutionSpace>> data_;
};

/// The import side (operation 7): rank `destination` of the decode group
/// reads record slots of `wires[i]`, one per rank i of the prefill group of
/// `source_tp` (empty where i sends it nothing), into pool rows. The pool's
/// layout must be `model.local(destination.size, destination.rank)`;
/// `landing` says when the payload lands (ImportLanding).
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class PreparedImport {
 public:
  PreparedImport(const StatePool<ExecutionSpace>& pool, const StateCommands<ExecutionSpace>& commands,
                 const ModelLayout& model, int source_tp, GroupRank destination,
                 std::vector<WireBuffer<ExecutionSpace>> wires,
                 ImportLanding landing = ImportLanding::publish_after_check);
  ~PreparedImport();
  PreparedImport(PreparedImport&&) noexcept;
  PreparedImport& operator=(PreparedImport&&) noexcept;

  void prepare(const ExecutionSpace& exec = ExecutionSpace());
  /// Each live command's code (docs/CONTRACT.md §17), every record checked
  /// (publish_after_check: the payload landed, its rows unpublished): two launches.
  void validate(const ExecutionSpace& exec) const;
  /// Every live command whose code is 0 and whose `errors` entry is still 0:
  /// its row published (publish_after_check) or its payload written into it.
  void apply(const ExecutionSpace& exec) const;
  std::int64_t capacity() const noexcept;
  ImportLanding landing() const noexcept;

 private:
  std::unique_ptr<impl::ImportData<ExecutionSpace>> data_;
};

#ifdef KOKKOS_ENABLE_SERIAL
extern template class PreparedExport<Kokkos::Serial>;
extern template class PreparedImport<Kokkos::Serial>;
#endif
#ifdef KOKKOS_ENABLE_OPENMP
extern template class PreparedExport<Kokkos::OpenMP>;
extern template class PreparedImport<Kokkos::OpenMP>;
#endif
#ifdef KOKKOS_ENABLE_THREADS
extern template class PreparedExport<Kokkos::Threads>;
extern template class PreparedImport<Kokkos::Threads>;
#endif
#ifdef KOKKOS_ENABLE_CUDA
extern template class PreparedExport<Kokkos::Cuda>;
extern template class PreparedImport<Kokkos::Cuda>;
#endif
#ifdef KOKKOS_ENABLE_HIP
extern template class PreparedExport<Kokkos::HIP>;
extern template class PreparedImport<Kokkos::HIP>;
#endif

}  // namespace statexfer

#endif
