#ifndef STATEXFER_SIM_DEVICE_STATE_HPP
#define STATEXFER_SIM_DEVICE_STATE_HPP

// The device side of one rank: the pool, the caches, the page tables, the
// state rows, the request state, the command arrays and (speculative decoding)
// the sampler's accepted counts; the prepared transfer and the error combiner;
// on Kokkos::Cuda the graphs that replay validate [+ combine] + apply every
// step; and the kernel that runs the model's fill jobs.

#include <Kokkos_Core.hpp>

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <statexfer/combine.hpp>
#include <statexfer/statexfer.hpp>

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime.h>
#endif

#include "batch.hpp"
#include "comm.hpp"
#include "content.hpp"
#include "geometry.hpp"
#include "sim_config.hpp"
#include "state_rows.hpp"

namespace statexfer::sim {

#ifdef KOKKOS_ENABLE_CUDA
/// std::runtime_error naming the call and CUDA's message unless `status` is cudaSuccess.
inline void cuda_check(cudaError_t status, const char* call) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorName(status) + ": " +
                             cudaGetErrorString(status));
}
/// The same on stderr, for the calls of a destructor.
inline void cuda_report(cudaError_t status, const char* call) noexcept {
  if (status != cudaSuccess)
    std::fprintf(stderr, "statexfer-sim: %s failed: %s: %s\n", call, cudaGetErrorName(status),
                 cudaGetErrorString(status));
}
#endif

/// The model's writes of one step, on the device.
template <class Exec>
struct FillKernel {
  using policy = Kokkos::TeamPolicy<Exec, Kokkos::Schedule<Kokkos::Dynamic>>;
  Kokkos::View<const FillJob*, typename Exec::memory_space> jobs;
  Kokkos::View<const std::uint64_t*, typename Exec::memory_space> bases;

  KOKKOS_INLINE_FUNCTION void operator()(const typename policy::member_type& team) const {
    const FillJob j = jobs(team.league_rank());
    auto* base = reinterpret_cast<std::uint8_t*>(bases(j.target));
    if (j.set64) {
      Kokkos::single(Kokkos::PerTeam(team), [&]() { set_int64(base, j); });
      return;
    }
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, fill_words(j)), [&](std::int64_t k) { fill_word(base, j, k); });
  }
};

template <class Exec>
class DeviceState {
 public:
  using Mem = typename Exec::memory_space;
  using CacheView = typename statexfer::PageBinding<Exec>::cache_view;

  DeviceState(const SimConfig& cfg, const Geometry& geometry, const Comm& comm) : cfg_(cfg), g_(geometry), comm_(comm) {
    allocate();
    build_transfer();
    fill_targets();
  }
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  ~DeviceState() { release(); }

#ifdef STATEXFER_HAVE_NCCL
  void set_nccl(ncclComm_t comm) { nccl_comm_ = comm; }
#endif

  /// Prepares the transfer and the combiner (host work), captures the graphs on CUDA.
  void prepare() {
    exec_ = make_instance();
#ifdef STATEXFER_HAVE_NCCL
    // NCCL on CUDA: the capturable combiner (the caller provides the communicator).
    if (nccl_comm_ != nullptr && cfg_.combine) combiner_.emplace(commands_, nccl_comm_);
#endif
#ifdef STATEXFER_HAVE_MPI
    if (!combiner_ && comm_.distributed() && cfg_.combine) combiner_.emplace(commands_, comm_.comm);
#endif
    if (!combiner_) combiner_.emplace(commands_);
    transfer_->prepare(exec_);
    combiner_->prepare(exec_);
    capture();
  }

  /// The rows of `slots` of the host page tables ([C, W] each): only what changed
  /// (a table of a long trace's width is megabytes).
  void upload_tables(const std::vector<std::int32_t>& tables, const std::vector<std::int32_t>& draft_tables,
                     const std::vector<std::int64_t>& slots) {
    using HostRow = Kokkos::View<const std::int32_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    const auto W = static_cast<std::size_t>(g_.table_width);
    for (const std::int64_t s : slots) {
      const auto at = static_cast<std::size_t>(s) * W;
      Kokkos::deep_copy(exec_, Kokkos::subview(tables_, s, Kokkos::ALL()), HostRow(tables.data() + at, W));
      Kokkos::deep_copy(exec_, Kokkos::subview(draft_tables_, s, Kokkos::ALL()), HostRow(draft_tables.data() + at, W));
    }
  }

  /// One page-table entry of this rank, until the next upload_tables() or set_page().
  void set_page(std::int64_t slot, std::int64_t logical, std::int32_t page) {
    Kokkos::deep_copy(exec_, Kokkos::subview(tables_, slot, logical), page);
  }

  /// The command arrays and the count, in one copy (pinned host memory on GPUs;
  /// run_transfer() fences before the next batch rewrites it).
  void upload_batch(const Batch& batch) {
    host_batch_.clear();
    for (const BatchEntry& b : batch) host_batch_.push_back(b.cmd);
    commands_.upload(exec_, host_batch_);
  }

  /// The sampler's accepted counts of every slot ([capacity]), as the model step
  /// leaves them on the device (the commits of the next batch read them).
  void upload_accepted(const std::vector<std::int32_t>& accepted) {
    if (g_.positions == 0) return;
    using HostCounts = Kokkos::View<const std::int32_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    Kokkos::deep_copy(exec_, accepted_, HostCounts(accepted.data(), accepted.size()));
  }
  /// One slot's accepted count (a fault), until the next upload_accepted().
  void set_accepted(std::int64_t slot, std::int32_t value) {
    Kokkos::deep_copy(exec_, Kokkos::subview(accepted_, slot), value);
  }
  /// One int64 of a row (`host`: of the host tier) at byte `offset`: a fault's
  /// stale consumed_tokens or prefix key, and putting it back.
  void set_word(bool host, std::int64_t row, std::int64_t offset, std::int64_t value) {
    std::int64_t v = value;
    const auto span = std::make_pair(offset, offset + 8);
    const Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> bytes(
        reinterpret_cast<std::uint8_t*>(&v), 8);
    if (host)
      Kokkos::deep_copy(exec_, Kokkos::subview(host_tier_.backing(), row, span), bytes);
    else
      Kokkos::deep_copy(exec_, Kokkos::subview(pool_.backing(), row, span), bytes);
    exec_.fence();  // `v` lives on this stack
  }

  /// validate [+ combine] + apply, fenced; returns its seconds.
  double run_transfer() {
    exec_.fence();
    const auto start = std::chrono::steady_clock::now();
    enqueue_transfer();
    exec_.fence();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  /// The codes of the first `count` command rows, and (`positions`, when
  /// given) the accepted counts validate() read for them (commit_positions,
  /// -1 but for commits): one copy of StateCommands::outputs().
  std::vector<std::int32_t> errors(std::size_t count, std::vector<std::int32_t>* positions = nullptr) {
    Kokkos::deep_copy(exec_, h_outputs_, commands_.outputs());
    exec_.fence();
    const std::int32_t* codes = h_outputs_.data();
    const std::int32_t* read = codes + commands_.capacity();  // commit_positions
    if (positions != nullptr) positions->assign(read, read + count);
    return std::vector<std::int32_t>(codes, codes + count);
  }

  /// Enqueues the model's fill jobs (fence() waits for them).
  void run_model(const std::vector<FillJob>& jobs) {
    const auto n = static_cast<std::int64_t>(jobs.size());
    if (n == 0) return;
    using HostJobs = Kokkos::View<const FillJob*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    const HostJobs host_jobs(jobs.data(), static_cast<std::size_t>(n));
    FillKernel<Exec> kernel{{}, bases_};
    using Policy = typename FillKernel<Exec>::policy;
    if constexpr (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) {
      // Host backends read the host list in place, one thread per job (no team rendezvous).
      kernel.jobs = host_jobs;
      Kokkos::parallel_for("sim::model_step", Policy(exec_, n, 1), kernel);
    } else {
      if (static_cast<std::int64_t>(jobs_d_.extent(0)) < n)
        jobs_d_ =
            Kokkos::View<FillJob*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sim::fill_jobs"), n + n / 2);
      auto dst = Kokkos::subview(jobs_d_, std::make_pair(std::int64_t(0), n));
      Kokkos::deep_copy(exec_, dst, host_jobs);
      kernel.jobs = dst;
      Kokkos::parallel_for("sim::model_step", Policy(exec_, n, Kokkos::AUTO), kernel);
    }
  }

  void fence() { exec_.fence(); }

  // What the verifier reads.
  const statexfer::StatePool<Exec>& pool() const { return pool_; }
  /// Cache `i`: the KV caches, then the draft caches.
  const CacheView& cache(std::int64_t i) const {
    return i < g_.kv_planes ? kv_caches_[static_cast<std::size_t>(i)]
                            : draft_caches_[static_cast<std::size_t>(i - g_.kv_planes)];
  }
  const statexfer::RequestState<Exec>& requests() const { return requests_; }
  const statexfer::StateRows<Exec>& state_rows() const { return state_rows_; }
  /// The host tier (empty without --host-snapshot-rows).
  const statexfer::HostTier<Exec>& host_tier() const { return host_tier_; }

  std::string combiner_name() const { return statexfer::to_string(combiner_->backend()); }
  bool graphs() const { return !graphs_.empty(); }

 private:
  // One rank has nothing to combine: validate_and_apply(), one kernel on GPUs.
  bool one_call() const { return comm_.size == 1; }

  void allocate() {
    const std::int64_t C = g_.capacity, W = g_.table_width, P = g_.pages;
    pool_ = statexfer::StatePool<Exec>(g_.layout, g_.rows, P);
    for (std::int64_t i = 0; i < g_.kv_planes; ++i)
      kv_caches_.emplace_back("sim::kv" + std::to_string(i), P, g_.kv_page_bytes);
    for (std::int64_t i = 0; i < g_.draft_planes; ++i)
      draft_caches_.emplace_back("sim::draft" + std::to_string(i), P, g_.draft_page_bytes);
    tables_ = statexfer::PageTable<Exec>("sim::page_tables", C, W);
    draft_tables_ = statexfer::PageTable<Exec>("sim::draft_tables", C, W);
    Kokkos::deep_copy(tables_, -1);
    Kokkos::deep_copy(draft_tables_, -1);
    state_rows_ = statexfer::StateRows<Exec>("sim::state_rows", C, HostStateRows::columns);
    auto h = Kokkos::create_mirror_view(state_rows_);
    const HostStateRows initial = g_.initial_state_rows();
    for (std::int64_t s = 0; s < C; ++s)
      for (std::int64_t j = 0; j < HostStateRows::columns; ++j) h(s, j) = initial(s, j);
    Kokkos::deep_copy(state_rows_, h);
    if (g_.positions > 0) accepted_ = Kokkos::View<std::int32_t*, Mem>("sim::accepted", C);
    requests_ = statexfer::RequestState<Exec>::allocate(C);
    if (g_.host_rows > 0) host_tier_ = statexfer::HostTier<Exec>(g_.layout, g_.host_rows);
    commands_ = statexfer::StateCommands<Exec>::allocate(C);
    host_batch_ = statexfer::CommandBatch<Exec>(C);
    h_outputs_ = Kokkos::View<std::int32_t*, Kokkos::HostSpace>("sim::outputs", commands_.outputs().extent(0));
  }

  void build_transfer() {
    statexfer::TransferConfig<Exec> config;
    for (std::int64_t i = 0; i < g_.kv_planes; ++i)
      config.pages.push_back({"kv" + std::to_string(i), kv_caches_[static_cast<std::size_t>(i)]});
    for (std::int64_t i = 0; i < g_.draft_planes; ++i)
      config.trailing_pages.push_back({"draft" + std::to_string(i), draft_caches_[static_cast<std::size_t>(i)]});
    config.page_tokens = g_.page_tokens;
    config.state_rows = state_rows_;
    config.requests = requests_;
    if (g_.draft_planes > 0) config.trailing_tables = draft_tables_;
    if (g_.scratch_bytes > 0) config.excluded_regions = {"scratch"};
    config.host_tier = host_tier_;
    if (g_.positions > 0) {
      config.speculative.positions = static_cast<int>(g_.positions);
      config.speculative.accepted = accepted_;
      config.speculative.move = cfg_.commit_copy ? statexfer::CommitMove::copy : statexfer::CommitMove::remap;
    }
    transfer_.emplace(pool_, commands_, tables_, config);
  }

  // Fill-job targets (Model's numbering): pool, KV caches, draft caches, request consumed.
  void fill_targets() {
    const std::int64_t A = g_.kv_planes, D = g_.draft_planes;
    bases_ = Kokkos::View<std::uint64_t*, Mem>("sim::fill_bases", 2 + A + D);
    auto h = Kokkos::create_mirror_view(bases_);
    h(0) = reinterpret_cast<std::uint64_t>(pool_.backing().data());
    for (std::int64_t i = 0; i < A; ++i) h(1 + i) = reinterpret_cast<std::uint64_t>(kv_caches_[i].data());
    for (std::int64_t i = 0; i < D; ++i) h(1 + A + i) = reinterpret_cast<std::uint64_t>(draft_caches_[i].data());
    h(1 + A + D) = reinterpret_cast<std::uint64_t>(requests_.consumed_tokens.data());
    Kokkos::deep_copy(bases_, h);
  }

  Exec make_instance() {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      return Exec(stream_);
    }
#endif
    return Exec();
  }

  // The graphs, then the stream: what holds an instance on the stream (the
  // transfer, the combiner, exec_) lets go of it first. Errors are reported,
  // not thrown (a destructor).
  void release() noexcept {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      if (stream_ == nullptr && graphs_.empty()) return;
      try {
        exec_.fence();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "statexfer-sim: fence before the release: %s\n", e.what());
      }
      for (cudaGraphExec_t g : graphs_) cuda_report(cudaGraphExecDestroy(g), "cudaGraphExecDestroy");
      graphs_.clear();
      transfer_.reset();
      combiner_.reset();
      exec_ = Exec();
      if (stream_ != nullptr) cuda_report(cudaStreamDestroy(stream_), "cudaStreamDestroy");
      stream_ = nullptr;
    }
#endif
  }

  // CUDA: validate [+ combine] + apply captured once, replayed every step. The
  // MPI combiner is a host call: then validate and apply are two graphs with
  // combine() between them.
  void capture() {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      if (!cfg_.graphs) return;
      auto record = [&](auto&& body) {
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t instance = nullptr;
        cuda_check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
        try {
          body();
        } catch (...) {  // leave the stream out of capture mode, then report what failed
          cuda_report(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture (after a failed capture)");
          if (graph != nullptr) cuda_report(cudaGraphDestroy(graph), "cudaGraphDestroy");
          throw;
        }
        cuda_check(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
        const cudaError_t made = cudaGraphInstantiateWithFlags(&instance, graph, 0);
        cuda_report(cudaGraphDestroy(graph), "cudaGraphDestroy");
        cuda_check(made, "cudaGraphInstantiateWithFlags");
        graphs_.push_back(instance);
      };
      if (one_call()) {
        record([&] { transfer_->validate_and_apply(exec_); });
      } else if (combiner_->capturable()) {
        record([&] {
          transfer_->validate(exec_);
          combiner_->combine(exec_);
          transfer_->apply(exec_);
        });
      } else {
        record([&] { transfer_->validate(exec_); });
        record([&] { transfer_->apply(exec_); });
      }
    }
#endif
  }

  void enqueue_transfer() {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      if (!graphs_.empty()) {
        cuda_check(cudaGraphLaunch(graphs_[0], stream_),
                   graphs_.size() == 2 ? "cudaGraphLaunch (validate)" : "cudaGraphLaunch (the transfer)");
        if (graphs_.size() == 2) {
          combiner_->combine(exec_);  // MPI: fences, reduces on the host
          cuda_check(cudaGraphLaunch(graphs_[1], stream_), "cudaGraphLaunch (apply)");
        }
        return;
      }
    }
#endif
    if (one_call()) {
      transfer_->validate_and_apply(exec_);
      return;
    }
    transfer_->validate(exec_);
    combiner_->combine(exec_);
    transfer_->apply(exec_);
  }

  const SimConfig& cfg_;
  const Geometry& g_;
  Comm comm_;

  Exec exec_;
  statexfer::StatePool<Exec> pool_;
  std::vector<CacheView> kv_caches_, draft_caches_;
  statexfer::PageTable<Exec> tables_, draft_tables_;
  statexfer::StateRows<Exec> state_rows_;
  statexfer::RequestState<Exec> requests_;
  statexfer::HostTier<Exec> host_tier_;
  statexfer::StateCommands<Exec> commands_;
  std::optional<statexfer::PreparedStateTransfer<Exec>> transfer_;
  std::optional<statexfer::ErrorCombiner<Exec>> combiner_;
  statexfer::CommandBatch<Exec> host_batch_{1};
  Kokkos::View<std::int32_t*, Kokkos::HostSpace> h_outputs_;  // errors, then commit_positions
  Kokkos::View<std::int32_t*, Mem> accepted_;  // the sampler's accepted counts, [C] (speculative decoding)
  Kokkos::View<std::uint64_t*, Mem> bases_;
  Kokkos::View<FillJob*, Mem> jobs_d_;
#ifdef KOKKOS_ENABLE_CUDA
  cudaStream_t stream_ = nullptr;
  std::vector<cudaGraphExec_t> graphs_;
#else
  std::vector<int> graphs_;
#endif
#ifdef STATEXFER_HAVE_NCCL
  ncclComm_t nccl_comm_ = nullptr;
#endif
};

}  // namespace statexfer::sim

#endif
