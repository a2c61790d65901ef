#ifndef STATEXFER_SIM_LANE_HPP
#define STATEXFER_SIM_LANE_HPP

// One prepared transfer with its own command arrays, its host batch (pinned on
// GPUs), its error combiner and, on Kokkos::Cuda, its captured graphs: the
// step's transfer on the model's stream, and each host-tier transfer on the
// tier stream. `whole` lanes replay validate [+ combine] + apply as one graph
// (validate_and_apply() on one rank); split lanes replay validate [+ combine]
// and apply as two, so that another stream can wait for the point between them.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <statexfer/combine.hpp>
#include <statexfer/statexfer.hpp>

#include "batch.hpp"
#include "comm.hpp"
#include "stream_events.hpp"

namespace statexfer::sim {

template <class Exec>
class Lane {
 public:
  explicit Lane(std::int64_t capacity)
      : commands_(statexfer::StateCommands<Exec>::allocate(capacity)),
        host_batch_(capacity),
        outputs_("sim::outputs", commands_.outputs().extent(0)) {}
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;
  ~Lane() { release(); }

  const statexfer::StateCommands<Exec>& commands() const { return commands_; }
  template <class... Args>
  void build(Args&&... args) {
    transfer_.emplace(std::forward<Args>(args)...);
  }

#ifdef STATEXFER_HAVE_NCCL
  /// The communicator of the capturable combiner (a lane of its own: lanes on
  /// different streams must not share one).
  void set_nccl(ncclComm_t comm) { nccl_ = comm; }
#endif

  /// Host work before the run: prepares the transfer on `exec`, makes the
  /// combiner (NCCL when set_nccl() gave one, MPI across ranks, else none) and,
  /// with `graphs` on Kokkos::Cuda, captures the graphs on `exec`'s stream.
  void prepare(const Exec& exec, const Comm& comm, bool combine, bool split, bool graphs) {
    split_ = split;
    one_rank_ = comm.size == 1;
    (void)combine;  // read only where MPI or NCCL is compiled in
#ifdef STATEXFER_HAVE_NCCL
    if (nccl_ != nullptr && combine) combiner_.emplace(commands_, nccl_);
#endif
#ifdef STATEXFER_HAVE_MPI
    if (!combiner_ && comm.distributed() && combine) combiner_.emplace(commands_, comm.comm);
#endif
    if (!combiner_) combiner_.emplace(commands_);
    transfer_->prepare(exec);
    combiner_->prepare(exec);
    if (graphs) capture(exec);
  }

  /// The command arrays and the count, in one copy on `exec` (the caller fences
  /// `exec` before the next upload rewrites the host batch).
  void upload(const Exec& exec, const Batch& batch) {
    host_batch_.clear();
    for (const BatchEntry& b : batch) host_batch_.push_back(b.cmd);
    commands_.upload(exec, host_batch_);
  }

  /// The whole transfer (a whole lane).
  void enqueue(const Exec& exec) {
    if (one_rank_ && !split_) {
      if (!launch(exec, 0, "cudaGraphLaunch (the transfer)")) transfer_->validate_and_apply(exec);
      return;
    }
    enqueue_validate(exec);
    enqueue_apply(exec);
  }
  /// validate [+ combine] (the MPI combiner, a host call, fences `exec`).
  void enqueue_validate(const Exec& exec) {
    if (!launch(exec, 0, "cudaGraphLaunch (validate)")) {
      transfer_->validate(exec);
      if (!one_rank_) combiner_->combine(exec);
      return;
    }
    if (!one_rank_ && !combiner_->capturable()) combiner_->combine(exec);
  }
  void enqueue_apply(const Exec& exec) {
    if (!launch(exec, 1, "cudaGraphLaunch (apply)")) transfer_->apply(exec);
  }

  /// The codes of the first `count` command rows, and (`positions`, when given)
  /// the commit_positions validate() read: one copy of the outputs, fenced.
  std::vector<std::int32_t> errors(const Exec& exec, std::size_t count,
                                   std::vector<std::int32_t>* positions = nullptr) {
    Kokkos::deep_copy(exec, outputs_, commands_.outputs());
    exec.fence();
    const std::int32_t* codes = outputs_.data();
    if (positions != nullptr) positions->assign(codes + commands_.capacity(), codes + commands_.capacity() + count);
    return std::vector<std::int32_t>(codes, codes + count);
  }

  std::string combiner_name() const { return statexfer::to_string(combiner_->backend()); }
  std::string launch_summary() const { return transfer_->launch_summary(); }
  bool graphs() const { return !graphs_.empty(); }

  /// The graphs, then the transfer and the combiner, which hold the instance
  /// (the caller fenced it). Errors are reported, not thrown (destructors).
  void release() noexcept {
#ifdef KOKKOS_ENABLE_CUDA
    for (cudaGraphExec_t g : graphs_)
      if (g != nullptr) cuda_report(cudaGraphExecDestroy(g), "cudaGraphExecDestroy");
#endif
    graphs_.clear();
    transfer_.reset();
    combiner_.reset();
  }

 private:
#ifdef KOKKOS_ENABLE_CUDA
  using Graph = cudaGraphExec_t;
#else
  using Graph = void*;
#endif

  // Replays graph `which` (0: the first, 1: the apply graph of a lane of two);
  // false without graphs.
  bool launch(const Exec& exec, std::size_t which, const char* what) {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      if (graphs_.empty()) return false;
      if (which >= graphs_.size()) return true;  // one graph holds both
      cuda_check(cudaGraphLaunch(graphs_[which], exec.cuda_stream()), what);
      return true;
    }
#endif
    (void)exec, (void)which, (void)what;
    return false;
  }

  // One graph for a whole lane on one rank or with a capturable combiner;
  // else validate [+ combine] and apply (the MPI combiner runs between them).
  void capture(const Exec& exec) {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      const cudaStream_t stream = exec.cuda_stream();
      auto record = [&](auto&& body) {
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t instance = nullptr;
        cuda_check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
        try {
          body();
        } catch (...) {  // leave the stream out of capture mode, then report what failed
          cuda_report(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture (after a failed capture)");
          if (graph != nullptr) cuda_report(cudaGraphDestroy(graph), "cudaGraphDestroy");
          throw;
        }
        cuda_check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
        const cudaError_t made = cudaGraphInstantiateWithFlags(&instance, graph, 0);
        cuda_report(cudaGraphDestroy(graph), "cudaGraphDestroy");
        cuda_check(made, "cudaGraphInstantiateWithFlags");
        graphs_.push_back(instance);
      };
      const bool capturable = combiner_->capturable();
      if (!split_ && one_rank_) {
        record([&] { transfer_->validate_and_apply(exec); });
      } else if (!split_ && capturable) {
        record([&] {
          transfer_->validate(exec);
          combiner_->combine(exec);
          transfer_->apply(exec);
        });
      } else {
        record([&] {
          transfer_->validate(exec);
          if (!one_rank_ && capturable) combiner_->combine(exec);
        });
        record([&] { transfer_->apply(exec); });
      }
    }
#endif
    (void)exec;
  }

  statexfer::StateCommands<Exec> commands_;
  statexfer::CommandBatch<Exec> host_batch_;
  Kokkos::View<std::int32_t*, Kokkos::HostSpace> outputs_;  // errors, then commit_positions
  std::optional<statexfer::PreparedStateTransfer<Exec>> transfer_;
  std::optional<statexfer::ErrorCombiner<Exec>> combiner_;
  std::vector<Graph> graphs_;
  bool split_ = false, one_rank_ = true;
#ifdef STATEXFER_HAVE_NCCL
  ncclComm_t nccl_ = nullptr;
#endif
};

}  // namespace statexfer::sim

#endif
