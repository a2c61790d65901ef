#ifndef STATEXFER_IMPL_TRANSPORT_IMPL_HPP
#define STATEXFER_IMPL_TRANSPORT_IMPL_HPP

// WireTransport's definitions; included by one translation unit per execution
// space (explicit instantiation), like the combiner's.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <statexfer/host_tier.hpp>
#include <statexfer/transport.hpp>

namespace statexfer {
namespace impl {

template <class ExecutionSpace>
struct TransportData {
  using memory_space = typename ExecutionSpace::memory_space;
  static constexpr bool host_memory =
      Kokkos::SpaceAccessibility<Kokkos::DefaultHostExecutionSpace, memory_space>::accessible;
  // Pinned on CUDA and HIP (where copies to and from it are asynchronous); unused on hosts.
  using mirror_view = Kokkos::View<std::uint8_t*, host_tier_memory_space_t<ExecutionSpace>>;

  struct Peer {
    int comm_rank = 0;  // in the transport's communicator
    std::int64_t record_bytes = 0;
    WireBuffer<ExecutionSpace> wire;
    mirror_view mirror;  // host_staged only
  };

  TransportBackend backend = TransportBackend::mpi;
  TransportPath path = TransportPath::host_memory;
  TransportRole role = TransportRole::prefill;
  GroupRank local;
  int source_tp = 0, destination_tp = 0;
  std::int64_t capacity = 0;
  std::vector<Peer> peers;  // the other group's ranks this one sends or receives something, in rank order
#ifdef STATEXFER_HAVE_MPI
  MPI_Comm mpi_comm = MPI_COMM_NULL;
  // One request per message of a full batch, allocated once: send() and receive() allocate nothing.
  mutable std::vector<MPI_Request> requests;
  mutable std::vector<MPI_Status> statuses;
#endif
#ifdef STATEXFER_HAVE_NCCL
  ncclComm_t nccl_comm = nullptr;
#endif

  ~TransportData() {
#ifdef STATEXFER_HAVE_MPI
    if (mpi_comm != MPI_COMM_NULL) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized) MPI_Comm_free(&mpi_comm);
    }
#endif
  }
};

[[noreturn]] inline void transport_refuse(const std::string& why) {
  throw std::invalid_argument("statexfer::WireTransport: " + why);
}
[[noreturn]] inline void transport_failure(const std::string& what) {
  throw std::runtime_error("statexfer::WireTransport: " + what);
}

/// The checks both backends share, then the peers: `me` is this process's
/// rank in the communicator of `comm_size` ranks; the peers' ranks are
/// numbered as the transport's messages address them (`peer_rank`).
template <class ExecutionSpace, class PeerRank>
void set_groups(TransportData<ExecutionSpace>& d, const ModelLayout& model, std::int64_t capacity, int me,
                int comm_size, const std::vector<int>& prefill_ranks, const std::vector<int>& decode_ranks,
                std::vector<WireBuffer<ExecutionSpace>>& wires, const PeerRank& peer_rank) {
  if (capacity < 1) transport_refuse("capacity must be at least 1, got " + std::to_string(capacity));
  const auto check_list = [&](const std::vector<int>& list, const char* name) {
    if (list.empty()) transport_refuse(std::string(name) + " is empty");
    for (const int r : list)
      if (r < 0 || r >= comm_size)
        transport_refuse(std::string(name) + " holds rank " + std::to_string(r) + ", not a rank of comm (0.." +
                         std::to_string(comm_size - 1) + ")");
  };
  check_list(prefill_ranks, "prefill_ranks");
  check_list(decode_ranks, "decode_ranks");
  std::vector<int> all = prefill_ranks;
  all.insert(all.end(), decode_ranks.begin(), decode_ranks.end());
  std::sort(all.begin(), all.end());
  if (const auto twice = std::adjacent_find(all.begin(), all.end()); twice != all.end())
    transport_refuse("rank " + std::to_string(*twice) + " is listed twice in prefill_ranks and decode_ranks");
  for (const auto* list : {&prefill_ranks, &decode_ranks})
    if (!model.splits(static_cast<int>(list->size())))
      transport_refuse(std::string(list == &prefill_ranks ? "prefill_ranks" : "decode_ranks") + ": a group of " +
                       std::to_string(list->size()) + " ranks does not split the model");
  const int p = static_cast<int>(prefill_ranks.size()), n = static_cast<int>(decode_ranks.size());
  const auto at = [me](const std::vector<int>& list) {
    return static_cast<int>(std::find(list.begin(), list.end(), me) - list.begin());
  };
  const int i = at(prefill_ranks), j = at(decode_ranks);
  if (i == p && j == n)
    transport_refuse("this process (rank " + std::to_string(me) +
                     " of comm) is in neither prefill_ranks nor decode_ranks");
  d.role = i < p ? TransportRole::prefill : TransportRole::decode;
  d.local = i < p ? GroupRank{p, i} : GroupRank{n, j};
  d.source_tp = p;
  d.destination_tp = n;
  d.capacity = capacity;
  const int others = i < p ? n : p;
  const char* side = i < p ? "decode" : "prefill";
  if (static_cast<int>(wires.size()) != others)
    transport_refuse("wires must hold one buffer per " + std::string(side) + " rank (" + std::to_string(others) +
                     "), got " + std::to_string(wires.size()));
  for (int k = 0; k < others; ++k) {
    const std::int64_t rb = i < p ? record_bytes(model, {p, i}, {n, k}) : record_bytes(model, {p, k}, {n, j});
    if (rb == 0) continue;
    const auto& w = wires[static_cast<std::size_t>(k)];
    if (w.data() == nullptr || static_cast<std::int64_t>(w.extent(0)) < rb * capacity)
      transport_refuse("wires[" + std::to_string(k) + "] must hold " + std::to_string(rb * capacity) +
                       " bytes (capacity x record_bytes), got " + std::to_string(w.extent(0)));
    typename TransportData<ExecutionSpace>::Peer peer;
    peer.comm_rank = peer_rank(i < p ? TransportRole::decode : TransportRole::prefill, k);
    peer.record_bytes = rb;
    peer.wire = w;
    d.peers.push_back(peer);
  }
}

#ifdef STATEXFER_HAVE_MPI
// Messages of at most 1 GiB: MPI counts are int, and a batch of large rows passes 2 GiB.
inline constexpr std::int64_t max_message_bytes = std::int64_t(1) << 30;
inline constexpr int transport_tag = 0x5354;

/// The messages of `bytes` bytes: f(offset, length) for each; one of 0 bytes for an empty batch, so that
/// both sides post as many as the other.
template <class F>
void for_messages(std::int64_t bytes, const F& f) {
  std::int64_t at = 0;
  do {
    const std::int64_t n = std::min(max_message_bytes, bytes - at);
    f(at, static_cast<int>(n));
    at += n;
  } while (at < bytes);
}
inline std::int64_t messages(std::int64_t bytes) {
  std::int64_t n = 0;
  for_messages(bytes, [&](std::int64_t, int) { ++n; });
  return n;
}
#endif

template <class ExecutionSpace>
void check_count(const TransportData<ExecutionSpace>& d, const char* call, std::int64_t count) {
  if (count < 0 || count > d.capacity)
    throw std::invalid_argument(std::string("statexfer::WireTransport::") + call + ": count " + std::to_string(count) +
                                " is not in [0, " + std::to_string(d.capacity) + "]");
}

[[noreturn]] inline void transport_moved_from(const char* call) {
  throw std::logic_error(std::string("statexfer::WireTransport::") + call + ": the transport was moved from");
}

/// The host-staged path's copies of `count` records between each peer's wire
/// and its pinned mirror, on `exec`.
template <class ExecutionSpace>
void stage(const ExecutionSpace& exec, const TransportData<ExecutionSpace>& d, std::int64_t count, bool to_mirror) {
  for (const auto& peer : d.peers) {
    const auto range = std::make_pair(std::int64_t(0), count * peer.record_bytes);
    const auto wire = Kokkos::subview(peer.wire, range);
    const auto mirror = Kokkos::subview(peer.mirror, range);
    if (to_mirror)
      Kokkos::deep_copy(exec, mirror, wire);
    else
      Kokkos::deep_copy(exec, wire, mirror);
  }
}

#ifdef STATEXFER_HAVE_MPI
/// One nonblocking call, post(buffer, bytes, peer rank, request), per message
/// of each peer's `count` records (from its mirror when staged, else its wire),
/// then a wait for them all: throws naming `what` when a post failed, returns
/// whether the wait succeeded (a message longer than posted fails it).
template <class ExecutionSpace, class Post>
bool post_and_wait(const TransportData<ExecutionSpace>& d, std::int64_t count, const char* what, const Post& post) {
  const bool staged = d.path == TransportPath::host_staged;
  int posted = 0, rc = MPI_SUCCESS;
  for (const auto& peer : d.peers) {
    std::uint8_t* base = staged ? peer.mirror.data() : peer.wire.data();
    for_messages(count * peer.record_bytes, [&](std::int64_t at, int n) {
      if (rc == MPI_SUCCESS) rc = post(base + at, n, peer.comm_rank, &d.requests[static_cast<std::size_t>(posted++)]);
    });
  }
  const int waited = MPI_Waitall(posted, d.requests.data(), d.statuses.data());
  if (rc != MPI_SUCCESS) transport_failure(std::string(what) + " failed");
  return waited == MPI_SUCCESS;
}
#endif

#if defined(STATEXFER_HAVE_NCCL) && defined(KOKKOS_ENABLE_CUDA)
/// One NCCL group of call(buffer, bytes, peer rank) for each peer's `count` records.
template <class Call>
void nccl_group(const TransportData<Kokkos::Cuda>& d, std::int64_t count, const char* what, const Call& call) {
  ncclResult_t rc = ncclGroupStart();
  for (const auto& peer : d.peers)
    if (rc == ncclSuccess)
      rc = call(peer.wire.data(), static_cast<std::size_t>(count * peer.record_bytes), peer.comm_rank);
  const ncclResult_t end = ncclGroupEnd();
  if (rc != ncclSuccess || end != ncclSuccess)
    transport_failure(std::string(what) + " failed: " + ncclGetErrorString(rc != ncclSuccess ? rc : end));
}
#endif

}  // namespace impl

#ifdef STATEXFER_HAVE_MPI
template <class ExecutionSpace>
WireTransport<ExecutionSpace>::WireTransport(const ModelLayout& model, std::int64_t capacity, MPI_Comm comm,
                                             std::vector<int> prefill_ranks, std::vector<int> decode_ranks,
                                             std::vector<WireBuffer<ExecutionSpace>> wires,
                                             DeviceBuffers device_buffers)
    : data_(std::make_unique<impl::TransportData<ExecutionSpace>>()) {
  auto& d = *data_;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) impl::transport_refuse("MPI is not initialized");
  if (comm == MPI_COMM_NULL) impl::transport_refuse("comm is MPI_COMM_NULL");
  int me = 0, size = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &size);
  // The transport's communicator numbers prefill rank i as i and decode rank j as p + j.
  const int p = static_cast<int>(prefill_ranks.size());
  impl::set_groups(d, model, capacity, me, size, prefill_ranks, decode_ranks, wires,
                   [p](TransportRole role, int k) { return role == TransportRole::prefill ? k : p + k; });
  d.backend = TransportBackend::mpi;
  d.path = TransportPath::host_memory;
  if constexpr (!impl::TransportData<ExecutionSpace>::host_memory) {
#ifdef KOKKOS_ENABLE_CUDA
    constexpr bool cuda = std::is_same_v<ExecutionSpace, Kokkos::Cuda>;
#else
    constexpr bool cuda = false;
#endif
    d.path = cuda && device_buffers == DeviceBuffers::direct_where_aware && mpi_cuda_aware()
                 ? TransportPath::device_direct
                 : TransportPath::host_staged;
  }
  (void)device_buffers;
  std::int64_t most = 0;
  for (auto& peer : d.peers) {
    if (d.path == TransportPath::host_staged)
      peer.mirror = typename impl::TransportData<ExecutionSpace>::mirror_view(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "statexfer::wire_mirror"), peer.record_bytes * capacity);
    most += impl::messages(peer.record_bytes * capacity);
  }
  d.requests.assign(static_cast<std::size_t>(most), MPI_REQUEST_NULL);
  d.statuses.resize(static_cast<std::size_t>(most));
  // Every check passed: the collective over the two groups' processes only.
  MPI_Group world = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  std::vector<int> members = prefill_ranks;
  members.insert(members.end(), decode_ranks.begin(), decode_ranks.end());
  MPI_Comm_group(comm, &world);
  MPI_Group_incl(world, static_cast<int>(members.size()), members.data(), &group);
  const int rc = MPI_Comm_create_group(comm, group, impl::transport_tag, &d.mpi_comm);
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  if (rc != MPI_SUCCESS || d.mpi_comm == MPI_COMM_NULL) impl::transport_failure("MPI_Comm_create_group failed");
  // Errors come back as codes (a sender's other count is the caller's error, not a reason to abort).
  MPI_Comm_set_errhandler(d.mpi_comm, MPI_ERRORS_RETURN);
}
#endif

#ifdef STATEXFER_HAVE_NCCL
template <class ExecutionSpace>
WireTransport<ExecutionSpace>::WireTransport(const ModelLayout& model, std::int64_t capacity, ncclComm_t comm,
                                             std::vector<int> prefill_ranks, std::vector<int> decode_ranks,
                                             std::vector<WireBuffer<ExecutionSpace>> wires)
    : data_(std::make_unique<impl::TransportData<ExecutionSpace>>()) {
  auto& d = *data_;
#ifdef KOKKOS_ENABLE_CUDA
  constexpr bool cuda = std::is_same_v<ExecutionSpace, Kokkos::Cuda>;
#else
  constexpr bool cuda = false;
#endif
  if (!cuda) impl::transport_refuse("an NCCL communicator needs Kokkos::Cuda");
  if (comm == nullptr) impl::transport_refuse("the NCCL communicator is null");
  int me = 0, size = 0;
  if (ncclCommUserRank(comm, &me) != ncclSuccess || ncclCommCount(comm, &size) != ncclSuccess)
    impl::transport_failure("cannot query the NCCL communicator");
  impl::set_groups(d, model, capacity, me, size, prefill_ranks, decode_ranks, wires, [&](TransportRole role, int k) {
    return (role == TransportRole::prefill ? prefill_ranks : decode_ranks)[static_cast<std::size_t>(k)];
  });
  d.backend = TransportBackend::nccl;
  d.path = TransportPath::nccl;
  d.nccl_comm = comm;
}
#endif

template <class ExecutionSpace>
WireTransport<ExecutionSpace>::~WireTransport() = default;
template <class ExecutionSpace>
WireTransport<ExecutionSpace>::WireTransport(WireTransport&&) noexcept = default;
template <class ExecutionSpace>
WireTransport<ExecutionSpace>& WireTransport<ExecutionSpace>::operator=(WireTransport&&) noexcept = default;

template <class ExecutionSpace>
void WireTransport<ExecutionSpace>::prepare(const ExecutionSpace& exec) {
  if (!data_) impl::transport_moved_from("prepare");
  // One record: what sets up the peers' connections (NCCL's on first use) without moving a whole batch.
  if (data_->role == TransportRole::prefill)
    send(exec, 1);
  else
    receive(exec, 1);
  exec.fence();
}

template <class ExecutionSpace>
void WireTransport<ExecutionSpace>::send(const ExecutionSpace& exec, std::int64_t count) const {
  if (!data_) impl::transport_moved_from("send");
  const auto& d = *data_;
  if (d.role != TransportRole::prefill)
    throw std::logic_error("statexfer::WireTransport::send: this process is a decode rank (receive())");
  impl::check_count(d, "send", count);
#ifdef STATEXFER_HAVE_NCCL
  if (d.backend == TransportBackend::nccl) {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>)
      impl::nccl_group(d, count, "ncclSend", [&](std::uint8_t* buffer, std::size_t bytes, int peer) {
        return ncclSend(buffer, bytes, ncclUint8, peer, d.nccl_comm, exec.cuda_stream());
      });
#endif
    return;
  }
#endif
#ifdef STATEXFER_HAVE_MPI
  if (d.backend == TransportBackend::mpi) {
    exec.fence();  // the export's records are complete
    if (d.path == TransportPath::host_staged) {
      impl::stage(exec, d, count, true);
      exec.fence();
    }
    const bool sent =
        impl::post_and_wait(d, count, "MPI_Isend", [&](std::uint8_t* buffer, int bytes, int peer, MPI_Request* r) {
          return MPI_Isend(buffer, bytes, MPI_BYTE, peer, impl::transport_tag, d.mpi_comm, r);
        });
    if (!sent) impl::transport_failure("MPI_Isend failed");
    return;
  }
#endif
  (void)exec;
}

template <class ExecutionSpace>
void WireTransport<ExecutionSpace>::receive(const ExecutionSpace& exec, std::int64_t count) const {
  if (!data_) impl::transport_moved_from("receive");
  const auto& d = *data_;
  if (d.role != TransportRole::decode)
    throw std::logic_error("statexfer::WireTransport::receive: this process is a prefill rank (send())");
  impl::check_count(d, "receive", count);
#ifdef STATEXFER_HAVE_NCCL
  if (d.backend == TransportBackend::nccl) {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>)
      impl::nccl_group(d, count, "ncclRecv", [&](std::uint8_t* buffer, std::size_t bytes, int peer) {
        return ncclRecv(buffer, bytes, ncclUint8, peer, d.nccl_comm, exec.cuda_stream());
      });
#endif
    return;
  }
#endif
#ifdef STATEXFER_HAVE_MPI
  if (d.backend == TransportBackend::mpi) {
    // Earlier imports' reads of the wires and earlier staged copies out of the mirrors are complete.
    exec.fence();
    const bool waited =
        impl::post_and_wait(d, count, "MPI_Irecv", [&](std::uint8_t* buffer, int bytes, int peer, MPI_Request* r) {
          return MPI_Irecv(buffer, bytes, MPI_BYTE, peer, impl::transport_tag, d.mpi_comm, r);
        });
    // Each message must be exactly as long as posted: a sender of another count sends others.
    int k = 0;
    bool whole = waited;
    for (const auto& peer : d.peers)
      impl::for_messages(count * peer.record_bytes, [&](std::int64_t, int n) {
        int got = -1;
        MPI_Get_count(&d.statuses[static_cast<std::size_t>(k++)], MPI_BYTE, &got);
        whole = whole && got == n;
      });
    if (!whole)
      impl::transport_failure("receive(" + std::to_string(count) +
                              "): a prefill rank sent another count of records (both sides pass the batch's count)");
    if (d.path == TransportPath::host_staged) impl::stage(exec, d, count, false);
    return;
  }
#endif
  (void)exec;
}

template <class ExecutionSpace>
TransportBackend WireTransport<ExecutionSpace>::backend() const noexcept {
  return data_ ? data_->backend : TransportBackend::mpi;
}
template <class ExecutionSpace>
TransportPath WireTransport<ExecutionSpace>::path() const noexcept {
  return data_ ? data_->path : TransportPath::host_memory;
}
template <class ExecutionSpace>
bool WireTransport<ExecutionSpace>::capturable() const noexcept {
  return data_ && data_->backend == TransportBackend::nccl;
}
template <class ExecutionSpace>
TransportRole WireTransport<ExecutionSpace>::role() const noexcept {
  return data_ ? data_->role : TransportRole::prefill;
}
template <class ExecutionSpace>
GroupRank WireTransport<ExecutionSpace>::group_rank() const noexcept {
  return data_ ? data_->local : GroupRank{0, 0};
}
template <class ExecutionSpace>
int WireTransport<ExecutionSpace>::source_tp() const noexcept {
  return data_ ? data_->source_tp : 0;
}
template <class ExecutionSpace>
int WireTransport<ExecutionSpace>::destination_tp() const noexcept {
  return data_ ? data_->destination_tp : 0;
}
template <class ExecutionSpace>
std::int64_t WireTransport<ExecutionSpace>::capacity() const noexcept {
  return data_ ? data_->capacity : 0;
}
template <class ExecutionSpace>
std::int64_t WireTransport<ExecutionSpace>::bytes(std::int64_t count) const noexcept {
  std::int64_t total = 0;
  if (data_)
    for (const auto& peer : data_->peers) total += count * peer.record_bytes;
  return total;
}

}  // namespace statexfer

#endif
