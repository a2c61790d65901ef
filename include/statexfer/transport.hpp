#ifndef STATEXFER_TRANSPORT_HPP
#define STATEXFER_TRANSPORT_HPP

// Transports of prefill/decode moves (docs/CONTRACT.md §17): what carries a
// batch's wire buffers from every prefill rank to every decode rank it sends
// something, between the export's apply() and the import's validate(). The
// library packs, checks and unpacks; a transport only moves bytes, never reads
// or writes outside the wire buffers, and checks nothing (the import does):
//
//   prefill rank                        decode rank
//   exporter.validate(exec);
//   prefill_combiner.combine(exec);
//   exporter.apply(exec);
//   transport.send(exec, count);   ->   transport.receive(exec, count);
//                                       importer.validate(exec);
//                                       decode_combiner.combine(exec);
//                                       importer.apply(exec);
//
// `count` is the batch's num_ops as the host knows it: a transport moves the
// record slots [0, count) of each wire buffer, so the bytes moved follow the
// batch, and exports write slots [0, count) (Command::export_row(row, k, ...)
// for command k). Both sides pass the same count.
//
// Transports:
//   - In-process (SharedWires): the prefill and decode pools live in one
//     process and share the wire Views (rank i's buffer for rank j is rank j's
//     buffer from rank i): nothing moves, there is nothing to call.
//   - MPI (WireTransport, built with STATEXFER_ENABLE_MPI): the prefill and
//     decode ranks are processes of one communicator. Wires in host memory
//     (Serial, OpenMP) go to MPI as they are; device wires are staged through
//     pinned host mirrors (device -> host -> MPI -> host -> device), or handed
//     to MPI directly where it is CUDA-aware (detected at construction:
//     mpi_cuda_aware()). path() says which. send() and receive() are host calls
//     that fence `exec`: not capturable, like the MPI error combiner. Capture
//     validate() + apply() of each side and call send()/receive() between the replays.
//   - NCCL (WireTransport, Kokkos::Cuda, built with STATEXFER_ENABLE_NCCL):
//     ncclSend/ncclRecv of every peer in one ncclGroupStart/End on `exec`'s
//     stream: no host synchronisation, so each side's step (export validate,
//     combine, apply, send; or receive, import validate, combine, apply) can be
//     captured into one CUDA graph. A captured graph has a fixed shape, so the
//     count given at capture is the count every replay moves: capture with
//     count = C to move whole C-slot buffers (any batch, at the cost of C
//     records a replay), or one graph per batch-size bucket with the bucket's
//     count (what engines already do for their decode graphs). The count is
//     the caller's choice because only the host knows it; a kernel cannot
//     size an NCCL call from num_ops on the device.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <statexfer/config.hpp>
#include <statexfer/exchange.hpp>
#include <statexfer/sharding.hpp>

#ifdef STATEXFER_HAVE_MPI
#include <mpi.h>
#endif
#ifdef STATEXFER_HAVE_NCCL
#include <nccl.h>
#endif

namespace statexfer {

/// The in-process transport: one wire buffer per (prefill rank i, decode rank
/// j) pair that sends something (record_bytes > 0; an empty View otherwise),
/// of C records each, that both sides' exports and imports are built on.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class SharedWires {
 public:
  SharedWires() = default;
  /// std::invalid_argument naming `source_tp`, `destination_tp` or `capacity` when the model does not split so or C
  /// < 1.
  SharedWires(const ModelLayout& model, int source_tp, int destination_tp, std::int64_t capacity)
      : source_tp_(source_tp), destination_tp_(destination_tp), capacity_(capacity) {
    const auto refuse = [](const std::string& why) { throw std::invalid_argument("statexfer::SharedWires: " + why); };
    if (source_tp < 1 || !model.splits(source_tp))
      refuse("source_tp " + std::to_string(source_tp) + " does not split the model");
    if (destination_tp < 1 || !model.splits(destination_tp))
      refuse("destination_tp " + std::to_string(destination_tp) + " does not split the model");
    if (capacity < 1) refuse("capacity must be at least 1, got " + std::to_string(capacity));
    wires_.resize(static_cast<std::size_t>(source_tp));
    for (int i = 0; i < source_tp; ++i)
      for (int j = 0; j < destination_tp; ++j) {
        const std::int64_t bytes = record_bytes(model, {source_tp, i}, {destination_tp, j});
        wires_[static_cast<std::size_t>(i)].push_back(
            bytes > 0 ? WireBuffer<ExecutionSpace>("statexfer::shared_wire", bytes * capacity)
                      : WireBuffer<ExecutionSpace>());
      }
  }

  /// The buffers PreparedExport of prefill rank `i` takes: one per decode rank.
  const std::vector<WireBuffer<ExecutionSpace>>& exporter(int i) const {
    return wires_.at(static_cast<std::size_t>(i));
  }
  /// The buffers PreparedImport of decode rank `j` takes: one per prefill rank.
  std::vector<WireBuffer<ExecutionSpace>> importer(int j) const {
    std::vector<WireBuffer<ExecutionSpace>> from;
    for (const auto& row : wires_) from.push_back(row.at(static_cast<std::size_t>(j)));
    return from;
  }
  /// Prefill rank i's buffer for decode rank j, which is decode rank j's from prefill rank i.
  const WireBuffer<ExecutionSpace>& wire(int i, int j) const {
    return wires_.at(static_cast<std::size_t>(i)).at(static_cast<std::size_t>(j));
  }
  int source_tp() const noexcept { return source_tp_; }
  int destination_tp() const noexcept { return destination_tp_; }
  std::int64_t capacity() const noexcept { return capacity_; }

 private:
  std::vector<std::vector<WireBuffer<ExecutionSpace>>> wires_;  // [i][j]
  int source_tp_ = 0, destination_tp_ = 0;
  std::int64_t capacity_ = 0;
};

/// What moves the bytes of a WireTransport.
enum class TransportBackend : std::uint8_t { mpi, nccl };
/// "mpi", "nccl".
const char* to_string(TransportBackend backend) noexcept;

/// The path the bytes take (for reports).
enum class TransportPath : std::uint8_t {
  host_memory,    ///< MPI on the wire buffers themselves: they are host memory (Serial, OpenMP)
  host_staged,    ///< device wire -> pinned host mirror -> MPI -> pinned host mirror -> device wire
  device_direct,  ///< a CUDA-aware MPI reads and writes the device wire buffers
  nccl,           ///< ncclSend/ncclRecv between the device wire buffers on the instance's stream
};
/// "host memory", "host-staged", "device-direct", "nccl".
const char* to_string(TransportPath path) noexcept;

/// Device wire buffers and MPI: handed to MPI where it is CUDA-aware (else
/// staged), or always staged through pinned host memory.
enum class DeviceBuffers : std::uint8_t { direct_where_aware, staged };

/// The group a process of a WireTransport belongs to.
enum class TransportRole : std::uint8_t { prefill, decode };
/// "prefill", "decode".
const char* to_string(TransportRole role) noexcept;

#ifdef STATEXFER_HAVE_MPI
/// Whether this process's MPI reads and writes CUDA device memory: Open MPI's
/// MPIX_Query_cuda_support() or MPICH's MPIX_GPU_query_support(), where the
/// MPI offers one; false where it cannot say. MPI must be initialized.
bool mpi_cuda_aware() noexcept;
#endif

namespace impl {
template <class ExecutionSpace>
struct TransportData;
}

/// Moves wire buffers between a prefill group and a decode group (see above).
/// Each process is one rank of one group and holds its side's buffers: a
/// prefill rank i the `wires` its PreparedExport writes (one per decode rank),
/// a decode rank j those its PreparedImport reads (one per prefill rank); a
/// pair with record_bytes(model, {p, i}, {d, j}) = 0 moves nothing and its
/// buffer may be empty.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class WireTransport {
 public:
  using execution_space = ExecutionSpace;

#ifdef STATEXFER_HAVE_MPI
  /// MPI: prefill rank i is rank `prefill_ranks[i]` of `comm`, decode rank j
  /// rank `decode_ranks[j]`; every process of both lists constructs it with the
  /// same lists (a collective over them: MPI_Comm_create_group, so the
  /// transport's messages never match the caller's; freed by the destructor
  /// unless MPI is finalized by then). std::invalid_argument naming the
  /// argument: MPI not initialized, a null `comm`, `capacity` < 1, an empty
  /// list, a rank outside `comm`, a rank listed twice or in both lists, a group
  /// size that does not split `model`, this process in neither list, `wires`
  /// not one per peer or a buffer smaller than capacity x record_bytes.
  WireTransport(const ModelLayout& model, std::int64_t capacity, MPI_Comm comm, std::vector<int> prefill_ranks,
                std::vector<int> decode_ranks, std::vector<WireBuffer<ExecutionSpace>> wires,
                DeviceBuffers device_buffers = DeviceBuffers::direct_where_aware);
#endif
#ifdef STATEXFER_HAVE_NCCL
  /// NCCL, Kokkos::Cuda only (std::invalid_argument for any other execution
  /// space): the ranks are ranks of `comm` (not owned); the same checks as MPI's.
  WireTransport(const ModelLayout& model, std::int64_t capacity, ncclComm_t comm, std::vector<int> prefill_ranks,
                std::vector<int> decode_ranks, std::vector<WireBuffer<ExecutionSpace>> wires);
#endif
  ~WireTransport();
  /// A moved-from transport holds nothing: its calls throw std::logic_error.
  WireTransport(WireTransport&&) noexcept;
  WireTransport& operator=(WireTransport&&) noexcept;
  WireTransport(const WireTransport&) = delete;
  WireTransport& operator=(const WireTransport&) = delete;

  /// Move one record (slot 0) once and fence `exec`, so that the peers'
  /// connections are set up before a capture: send() on a prefill rank,
  /// receive() on a decode rank. Every rank of both groups calls it.
  void prepare(const ExecutionSpace& exec = ExecutionSpace());
  /// Prefill ranks: the records at slots [0, count) of each wire buffer to its
  /// decode rank. MPI: fences `exec` (the export's records complete) and returns
  /// once the bytes are sent. NCCL: enqueued on `exec`'s stream.
  /// std::invalid_argument when count is not in [0, C]; std::logic_error on a decode rank.
  void send(const ExecutionSpace& exec, std::int64_t count) const;
  /// Decode ranks: the records at slots [0, count) of each wire buffer from its
  /// prefill rank (the count its senders passed). MPI: fences `exec` (earlier
  /// reads of the wires complete), receives, and leaves the copies of staged
  /// bytes into the wires enqueued on `exec`, ahead of the import's validate();
  /// std::runtime_error when a sender sent another count. NCCL: enqueued on
  /// `exec`'s stream. std::invalid_argument when count is not in [0, C];
  /// std::logic_error on a prefill rank.
  void receive(const ExecutionSpace& exec, std::int64_t count) const;

  TransportBackend backend() const noexcept;
  TransportPath path() const noexcept;
  /// Whether send() and receive() only enqueue device work (NCCL), so they can be captured.
  bool capturable() const noexcept;
  TransportRole role() const noexcept;
  /// This process's rank in its group and the group's size.
  GroupRank group_rank() const noexcept;
  int source_tp() const noexcept;
  int destination_tp() const noexcept;
  std::int64_t capacity() const noexcept;
  /// Bytes one send() or receive() of `count` records moves on this process
  /// (count x record_bytes, summed over its peers).
  std::int64_t bytes(std::int64_t count) const noexcept;

 private:
  std::unique_ptr<impl::TransportData<ExecutionSpace>> data_;
};

#ifdef KOKKOS_ENABLE_SERIAL
extern template class WireTransport<Kokkos::Serial>;
#endif
#ifdef KOKKOS_ENABLE_OPENMP
extern template class WireTransport<Kokkos::OpenMP>;
#endif
#ifdef KOKKOS_ENABLE_THREADS
extern template class WireTransport<Kokkos::Threads>;
#endif
#ifdef KOKKOS_ENABLE_CUDA
extern template class WireTransport<Kokkos::Cuda>;
#endif
#ifdef KOKKOS_ENABLE_HIP
extern template class WireTransport<Kokkos::HIP>;
#endif

}  // namespace statexfer

#endif
