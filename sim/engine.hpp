#ifndef STATEXFER_SIM_ENGINE_HPP
#define STATEXFER_SIM_ENGINE_HPP

// The simulated server: a pool (null row, a live row per request slot, snapshot
// rows), paged KV caches for several attention planes and draft planes, page
// tables per slot, a prefix cache, and per step one batch of snapshot / restore
// / reset commands through one prepared transfer (prepared once; validated and
// applied every step; captured into CUDA graphs on Kokkos::Cuda), then the
// model's writes. One rank calls validate_and_apply() (one kernel on GPUs). Each
// tensor-parallel rank runs the same scheduler on its shard of every row and page
// and combines the validation errors of all ranks between validate() and apply().

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <random>
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

#include "comm.hpp"
#include "content.hpp"
#include "prefix_cache.hpp"
#include "shadow.hpp"
#include "stats.hpp"
#include "workload.hpp"

namespace sim {

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
class Engine {
 public:
  using Mem = typename Exec::memory_space;
  using CacheView = typename statexfer::PageBinding<Exec>::cache_view;
  using Clock = std::chrono::steady_clock;
  using Progress = std::function<void(const Stats&)>;

  Engine(const SimConfig& cfg, const Workload& workload, const Comm& comm)
      : cfg_(cfg), w_(workload), comm_(comm), faults_(cfg.faults) {
    C_ = cfg.capacity;
    S_ = cfg.snapshot_rows;
    PT_ = cfg.page_tokens;
    A_ = cfg.kv_planes;
    D_ = cfg.draft_planes;
    require(C_ >= 1 && (C_ & (C_ - 1)) == 0, "--capacity must be a power of two");
    require(S_ >= 1, "--snapshot-rows must be >= 1");
    require(PT_ >= 1, "--page-tokens must be >= 1");
    require(A_ >= 1, "--kv-planes must be >= 1 (the transfer needs a page binding)");
    require(D_ >= 0, "--draft-planes must be >= 0");
    const int n = comm.size, r = comm.rank;
    require(cfg.row_bytes >= 16 * n, "--row-bytes must be at least 16 per rank");
    require(cfg.kv_token_bytes >= n && (D_ == 0 || cfg.draft_token_bytes >= n),
            "--kv-token-bytes and --draft-token-bytes must be at least 1 per rank");
    require(cfg.scratch_bytes >= 0, "--scratch-bytes must be >= 0");
    const std::int64_t conv_global = cfg.row_bytes / 16;
    ssm_ = shard_of(cfg.row_bytes - conv_global, r, n);
    conv_ = shard_of(conv_global, r, n);
    kv_ = shard_of(cfg.kv_token_bytes, r, n);
    draft_ = shard_of(std::max<std::int64_t>(cfg.draft_token_bytes, 1), r, n);
    W_ = std::max<std::int64_t>(1, (std::max<std::int64_t>(w_.max_total, 1) + PT_ - 1) / PT_);
    rows_ = 1 + C_ + S_;
    P_ = cfg.pages > 0 ? cfg.pages : C_ * W_;
    kv_pb_ = PT_ * kv_.size();
    draft_pb_ = PT_ * draft_.size();

    // Row layout of this rank: consumed_tokens and the scratch are whole on every
    // rank; the recurrent state and the saved pages are this rank's shard.
    std::vector<statexfer::StateLayout::Field> fields{{"consumed_tokens", 8, statexfer::DType::int64}};
    if (cfg.scratch_bytes > 0) fields.push_back({"scratch", cfg.scratch_bytes, statexfer::DType::uint8});
    fields.push_back({"ssm", ssm_.size(), statexfer::DType::uint8});
    fields.push_back({"conv", conv_.size(), statexfer::DType::uint8});
    for (std::int64_t i = 0; i < A_; ++i) fields.push_back({"kv" + std::to_string(i), kv_pb_, statexfer::DType::uint8});
    for (std::int64_t i = 0; i < D_; ++i)
      fields.push_back({"draft" + std::to_string(i), 2 * draft_pb_, statexfer::DType::uint8});
    layout_ = statexfer::StateLayout::pack(fields);
    consumed_off_ = layout_.region("consumed_tokens").offset;
    scratch_off_ = cfg.scratch_bytes > 0 ? layout_.region("scratch").offset : 0;
    ssm_off_ = layout_.region("ssm").offset;
    conv_off_ = layout_.region("conv").offset;
    RB_ = layout_.row_bytes();
    row_copy_bytes_ = RB_ - cfg.scratch_bytes;

    // Device state.
    pool_ = statexfer::StatePool<Exec>(layout_, rows_, P_);
    statexfer::TransferConfig<Exec> config;
    for (std::int64_t i = 0; i < A_; ++i) {
      kv_caches_.emplace_back("sim::kv" + std::to_string(i), P_, kv_pb_);
      config.pages.push_back({"kv" + std::to_string(i), kv_caches_.back()});
    }
    for (std::int64_t i = 0; i < D_; ++i) {
      draft_caches_.emplace_back("sim::draft" + std::to_string(i), P_, draft_pb_);
      config.trailing_pages.push_back({"draft" + std::to_string(i), draft_caches_.back()});
    }
    tables_ = statexfer::PageTable<Exec>("sim::page_tables", C_, W_);
    dtables_ = statexfer::PageTable<Exec>("sim::draft_tables", C_, W_);
    host_tables_.assign(static_cast<std::size_t>(C_ * W_), -1);
    host_dtables_.assign(static_cast<std::size_t>(C_ * W_), -1);
    upload_tables();
    state_rows_ = statexfer::StateRows<Exec>("sim::state_rows", C_, 8);
    {
      auto h = Kokkos::create_mirror_view(state_rows_);
      Kokkos::deep_copy(h, 0);
      for (std::int64_t s = 0; s < C_; ++s) h(s, 0) = live_row(s);
      Kokkos::deep_copy(state_rows_, h);
    }
    requests_ = statexfer::RequestState<Exec>::allocate(C_);
    commands_ = statexfer::StateCommands<Exec>::allocate(C_);
    config.page_tokens = PT_;
    config.state_rows = state_rows_;
    config.requests = requests_;
    if (D_ > 0) config.trailing_tables = dtables_;
    if (cfg.scratch_bytes > 0) config.excluded_regions = {"scratch"};
    transfer_.emplace(pool_, commands_, tables_, config);

    h_slots_ = Kokkos::create_mirror_view(commands_.request_slots);
    h_src_ = Kokkos::create_mirror_view(commands_.source_slots);
    h_dst_ = Kokkos::create_mirror_view(commands_.destination_slots);
    h_op_ = Kokkos::create_mirror_view(commands_.operation);
    h_end_ = Kokkos::create_mirror_view(commands_.expected_consumed);
    h_count_ = Kokkos::create_mirror_view(commands_.num_ops);
    h_errors_ = Kokkos::create_mirror_view(commands_.errors);

    // Fill-job targets: pool, KV caches, draft caches, request consumed.
    bases_ = Kokkos::View<std::uint64_t*, Mem>("sim::fill_bases", 2 + A_ + D_);
    {
      auto h = Kokkos::create_mirror_view(bases_);
      h(0) = reinterpret_cast<std::uint64_t>(pool_.backing().data());
      for (std::int64_t i = 0; i < A_; ++i) h(1 + i) = reinterpret_cast<std::uint64_t>(kv_caches_[i].data());
      for (std::int64_t i = 0; i < D_; ++i) h(1 + A_ + i) = reinterpret_cast<std::uint64_t>(draft_caches_[i].data());
      h(1 + A_ + D_) = reinterpret_cast<std::uint64_t>(requests_.consumed_tokens.data());
      Kokkos::deep_copy(bases_, h);
    }
    request_target_ = static_cast<std::int32_t>(1 + A_ + D_);

    if (cfg.verify) {
      ShadowGeometry g;
      g.capacity = C_;
      g.rows = rows_;
      g.row_bytes = RB_;
      g.page_tokens = PT_;
      g.width = W_;
      g.slots = rows_;
      g.pages = P_;
      g.cache_pages = P_;
      g.consumed_offset = consumed_off_;
      if (cfg.scratch_bytes > 0) g.excluded.emplace_back(scratch_off_, scratch_off_ + cfg.scratch_bytes);
      for (std::int64_t i = 0; i < A_; ++i) g.pages_bound.push_back({layout_.region("kv" + std::to_string(i)).offset, kv_pb_});
      for (std::int64_t i = 0; i < D_; ++i)
        g.trailing_bound.push_back({layout_.region("draft" + std::to_string(i)).offset, 2 * draft_pb_});
      shadow_.emplace(std::move(g));
      for (std::int64_t s = 0; s < C_; ++s) shadow_->state_rows()[s] = live_row(s);
    }

    // Scheduler.
    slots_.resize(static_cast<std::size_t>(C_));
    cache_ = PrefixCache(1 + C_, S_);
    for (std::int64_t p = P_ - 1; p >= 0; --p) free_pages_.push_back(static_cast<std::int32_t>(p));
    free_dpages_ = free_pages_;  // draft pages in another (fixed) order than the KV pages
    std::shuffle(free_dpages_.begin(), free_dpages_.end(), std::mt19937_64(0x5EEDULL));
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(w_.requests.size()); ++i) {
      queue_.push_back(i);
      require(pages_needed(i) <= P_, "request " + std::to_string(i) + " needs more pages than --pages");
    }
    done_.assign(w_.requests.size(), 0);
  }

  ~Engine() {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      for (auto g : graphs_) cudaGraphExecDestroy(g);
      graphs_.clear();
    }
#endif
  }

  /// Prepare the transfer and the combiner (host work), capture the graphs on CUDA.
  void prepare() {
    exec_ = make_instance();
#ifdef STATEXFER_HAVE_NCCL
    // NCCL on CUDA: the capturable combiner (the caller provides the communicator).
    if (nccl_comm_ != nullptr && cfg_.combine)
      combiner_.emplace(commands_, nccl_comm_);
#endif
#ifdef STATEXFER_HAVE_MPI
    if (!combiner_ && comm_.distributed() && cfg_.combine) combiner_.emplace(commands_, comm_.comm);
#endif
    if (!combiner_) combiner_.emplace(commands_);
    transfer_->prepare(exec_);
    combiner_->prepare(exec_);
    capture();
  }

#ifdef STATEXFER_HAVE_NCCL
  void set_nccl(ncclComm_t comm) { nccl_comm_ = comm; }
#endif

  void run(Stats& st, const Progress& progress) {
    st.requests = static_cast<std::int64_t>(w_.requests.size());
    st.rows = rows_;
    st.row_bytes = RB_;
    st.pages = P_;
    st.width = W_;
    st.ranks = comm_.size;
    st.backend = Exec::name();
    st.combiner = statexfer::to_string(combiner_->backend());
    st.graphs = !graphs_.empty();
    st.memory_bytes = rows_ * RB_ + P_ * (A_ * kv_pb_ + D_ * draft_pb_);
    const auto start = Clock::now();
    while (st.completed < st.requests && st.verify_ok) {
      if (cfg_.max_steps > 0 && st.steps >= cfg_.max_steps) break;
      step(st);
      if (progress) progress(st);
    }
    if (st.verify_ok && shadow_) {
      const auto t = Clock::now();
      compare_pool(st);
      if (st.verify_ok) verify_caches_full(st);
      st.verify_s += seconds(Clock::now() - t);
      if (comm_.distributed() && comm_.min(st.verify_ok ? 1 : 0) == 0 && st.verify_ok) {
        st.verify_ok = false;
        st.verify_message = "another rank's final comparison failed";
      }
    }
    st.wall_s = seconds(Clock::now() - start);
    finish_stats(st);
  }

  std::int64_t width() const { return W_; }
  /// The faults with the step and command each hit (after run()).
  const std::vector<Fault>& faults() const { return faults_out_; }

 private:
  struct Pending {
    PrefixKey key;
    std::int64_t row = -1;
    bool completion = false;
  };
  struct Slot {
    enum Phase { free, restore, reset, running, drain, needs_reset };
    Phase phase = free;
    std::int64_t request = -1;
    std::int64_t consumed = 0;
    TokenStream stream;       // at `consumed`
    std::uint64_t last_seed = 0;  // KV seed of position consumed - 1
    TokenStream restore_stream;
    std::int64_t restore_end = 0;
    std::optional<Pending> snapshot;
    std::vector<std::int32_t> pages, dpages;
  };
  struct BatchEntry {
    Command cmd;
    int kind;
    std::int64_t slot;
  };

  static void require(bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
  }
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
  std::int64_t live_row(std::int64_t slot) const { return 1 + slot; }
  std::int64_t pages_needed(std::int64_t request) const {
    return (w_.requests[static_cast<std::size_t>(request)].total_len + PT_ - 1) / PT_;
  }
  static std::uint64_t kv_seed(const PrefixKey& k) { return mix64(k.h1 + 0x51EDULL) ^ k.h2; }

  Exec make_instance() {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess)
        throw std::runtime_error("cudaStreamCreateWithFlags failed");
      return Exec(stream_);
    }
#endif
    return Exec();
  }

  // One rank has nothing to combine: validate_and_apply(), one kernel on GPUs.
  bool one_call() const { return comm_.size == 1; }

  // CUDA: validate [+ combine] + apply captured once; replayed every step. The
  // MPI combiner is a host call: then validate and apply are two graphs with
  // combine() between them.
  void capture() {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      if (!cfg_.graphs) return;
      auto record = [&](auto&& body) {
        cudaGraph_t graph;
        cudaGraphExec_t instance;
        if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal) != cudaSuccess)
          throw std::runtime_error("cudaStreamBeginCapture failed");
        body();
        if (cudaStreamEndCapture(stream_, &graph) != cudaSuccess) throw std::runtime_error("cudaStreamEndCapture failed");
        if (cudaGraphInstantiateWithFlags(&instance, graph, 0) != cudaSuccess)
          throw std::runtime_error("cudaGraphInstantiate failed");
        cudaGraphDestroy(graph);
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

  void run_transfer() {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      if (!graphs_.empty()) {
        if (graphs_.size() == 1) {
          cudaGraphLaunch(graphs_[0], stream_);
        } else {
          cudaGraphLaunch(graphs_[0], stream_);
          combiner_->combine(exec_);  // MPI: fences, reduces on the host
          cudaGraphLaunch(graphs_[1], stream_);
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

  void upload_tables() {
    using HostTable = Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, Kokkos::HostSpace,
                                   Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    Kokkos::deep_copy(tables_, HostTable(host_tables_.data(), C_, W_));
    Kokkos::deep_copy(dtables_, HostTable(host_dtables_.data(), C_, W_));
    tables_dirty_ = false;
  }

  // --- one step ----------------------------------------------------------------

  void step(Stats& st) {
    const auto step_start = Clock::now();
    batch_.clear();
    // Snapshots planned by the last model step (checkpoints, completions).
    for (std::int64_t s = 0; s < C_; ++s) {
      Slot& sl = slots_[s];
      if (sl.snapshot) {
        batch_.push_back({{s, live_row(s), sl.snapshot->row, 0, sl.consumed}, kind_snapshot, s});
        (sl.snapshot->completion ? st.completion_snapshots : st.checkpoint_snapshots)++;
      }
    }
    // Resets of requests whose restore failed, then admissions.
    for (std::int64_t s = 0; s < C_; ++s)
      if (slots_[s].phase == Slot::needs_reset) {
        batch_.push_back({{s, -1, live_row(s), 1, 0}, kind_reset, s});
        slots_[s].phase = Slot::reset;
      }
    for (std::int64_t s = 0; s < C_; ++s)
      if (slots_[s].phase == Slot::free && !admit(s, st)) break;
    if (tables_dirty_) upload_tables();

    // Upload the batch: the command arrays, then the count.
    const auto count = static_cast<std::int32_t>(batch_.size());
    for (std::int32_t i = 0; i < count; ++i) {
      const Command& c = batch_[i].cmd;
      h_slots_(i) = c.slot;
      h_src_(i) = c.src;
      h_dst_(i) = c.dst;
      h_op_(i) = c.op;
      h_end_(i) = c.end;
      st.issued[batch_[i].kind]++;
    }
    h_count_(0) = count;
    Kokkos::deep_copy(exec_, commands_.request_slots, h_slots_);
    Kokkos::deep_copy(exec_, commands_.source_slots, h_src_);
    Kokkos::deep_copy(exec_, commands_.destination_slots, h_dst_);
    Kokkos::deep_copy(exec_, commands_.operation, h_op_);
    Kokkos::deep_copy(exec_, commands_.expected_consumed, h_end_);
    Kokkos::deep_copy(exec_, commands_.num_ops, h_count_);

    // Rank-local faults: unmap a partial page in this rank's table for this batch.
    std::vector<std::pair<int, std::int64_t>> faulted;  // (rank, command) of this step, every rank knows
    std::vector<std::pair<std::int64_t, std::int64_t>> unmapped;  // (slot, logical) unmapped here
    for (Fault& f : faults_) {
      if (f.injected_step >= 0 || st.steps < f.step) continue;
      for (std::int32_t i = 0; i < count; ++i) {
        const Command& c = batch_[i].cmd;
        const bool taken = std::any_of(faulted.begin(), faulted.end(), [&](auto& p) { return p.second == i; });
        if (c.op != 0 || c.end % PT_ == 0 || taken || (f.kind >= 0 && batch_[i].kind != f.kind)) continue;
        f.injected_step = st.steps;
        f.command = i;
        faulted.emplace_back(f.rank, i);
        st.faults_injected++;
        if (f.rank == comm_.rank) {
          unmapped.emplace_back(c.slot, c.end / PT_);
          Kokkos::deep_copy(exec_, Kokkos::subview(tables_, c.slot, c.end / PT_), -1);
        }
        break;
      }
    }

    // validate, combine, apply.
    exec_.fence();
    const auto t0 = Clock::now();
    run_transfer();
    exec_.fence();
    const auto t1 = Clock::now();
    Kokkos::deep_copy(exec_, h_errors_, commands_.errors);
    exec_.fence();
    for (const auto& [slot, logical] : unmapped)
      Kokkos::deep_copy(exec_, Kokkos::subview(tables_, slot, logical), host_tables_[slot * W_ + logical]);
    const double transfer_s = seconds(t1 - t0);
    st.transfer_s += transfer_s;

    std::vector<std::int32_t> codes(static_cast<std::size_t>(count));
    for (std::int32_t i = 0; i < count; ++i) codes[i] = h_errors_(i);

    double verify_s = 0;
    if (shadow_) {
      const auto tv = Clock::now();
      verify_transfer(st, codes, faulted);
      verify_s = seconds(Clock::now() - tv);
      st.verify_s += verify_s;
      if (!st.verify_ok) return;
    }

    handle_results(st, codes, faulted);

    const auto tm = Clock::now();
    const double shadow_s = plan_and_run_model(st);
    st.model_s += seconds(Clock::now() - tm) - shadow_s;
    st.verify_s += shadow_s;
    verify_s += shadow_s;

    // A schedule that can no longer move is a bug: stop rather than spin.
    idle_steps_ = (count == 0 && jobs_.empty()) ? idle_steps_ + 1 : 0;
    if (idle_steps_ > 1000) throw std::logic_error("statexfer-sim: the scheduler made no progress for 1000 steps");

    st.transfer_us.push_back(static_cast<float>(transfer_s * 1e6));
    st.step_us.push_back(static_cast<float>((seconds(Clock::now() - step_start) - verify_s) * 1e6));
    st.step_commands.push_back(count);
    st.steps++;
  }

  // Pick the next request whose parent is done, lay out its pages, look its
  // prefix up: a restore on a hit, a reset on a miss. False: nothing admissible.
  bool admit(std::int64_t s, Stats& st) {
    std::int64_t scanned = 0;
    for (auto it = queue_.begin(); it != queue_.end() && scanned < cfg_.lookahead; ++it, ++scanned) {
      const std::int64_t req = *it;
      const RequestSpec& spec = w_.requests[static_cast<std::size_t>(req)];
      if (spec.parent >= 0 && !done_[static_cast<std::size_t>(spec.parent)]) continue;
      const std::int64_t need = pages_needed(req);
      if (need > static_cast<std::int64_t>(free_pages_.size()) || need > static_cast<std::int64_t>(free_dpages_.size()))
        return false;  // first come, first served: wait for pages
      queue_.erase(it);
      Slot& sl = slots_[s];
      sl = Slot{};
      sl.request = req;
      for (std::int64_t l = 0; l < need; ++l) {
        sl.pages.push_back(free_pages_.back());
        free_pages_.pop_back();
        sl.dpages.push_back(free_dpages_.back());
        free_dpages_.pop_back();
        host_tables_[s * W_ + l] = sl.pages.back();
        host_dtables_[s * W_ + l] = sl.dpages.back();
      }
      tables_dirty_ = true;
      st.admitted++;
      st.prompt_tokens += spec.prompt_len;

      // Longest cached prefix endpoint (exact match of length and hashes).
      TokenStream walker(w_, req);
      sl.stream = walker;
      std::vector<TokenStream> at;
      for (std::int64_t b : walker.boundaries()) {
        if (b >= spec.prompt_len) break;
        while (walker.pos() < b) walker.advance();
        at.push_back(walker);
      }
      for (auto i = at.rbegin(); i != at.rend(); ++i) {
        if (auto row = cache_.lookup(i->key())) {
          sl.phase = Slot::restore;
          sl.restore_stream = *i;
          sl.restore_end = i->pos();
          batch_.push_back({{s, *row, live_row(s), 0, i->pos()}, kind_restore, s});
          st.hits++;
          return true;
        }
      }
      sl.phase = Slot::reset;
      batch_.push_back({{s, -1, live_row(s), 1, 0}, kind_reset, s});
      st.misses++;
      return true;
    }
    return false;
  }

  void finish_request(std::int64_t s, Stats& st) {
    Slot& sl = slots_[s];
    for (auto p : sl.pages) free_pages_.push_back(p);
    for (auto p : sl.dpages) free_dpages_.push_back(p);
    for (std::int64_t l = 0; l < W_; ++l) host_tables_[s * W_ + l] = host_dtables_[s * W_ + l] = -1;
    tables_dirty_ = true;
    done_[static_cast<std::size_t>(sl.request)] = 1;
    sl = Slot{};
    st.completed++;
  }

  void handle_results(Stats& st, const std::vector<std::int32_t>& codes,
                      const std::vector<std::pair<int, std::int64_t>>& faulted) {
    for (std::size_t i = 0; i < batch_.size(); ++i) {
      const BatchEntry& b = batch_[i];
      const std::int32_t code = codes[i];
      st.errors[code >= 0 && code <= 6 ? code : 7]++;
      const bool ok = code == 0;
      (ok ? st.applied : st.failed)[b.kind]++;
      if (ok) account_bytes(st, b.cmd);
      for (const auto& f : faulted)
        if (f.second == static_cast<std::int64_t>(i) && !ok) st.fault_commands_refused++;
      Slot& sl = slots_[b.slot];
      switch (b.kind) {
        case kind_snapshot: {
          const Pending p = *sl.snapshot;
          sl.snapshot.reset();
          if (ok)
            cache_.publish(p.key);
          else
            cache_.release(p.key);
          if (p.completion) finish_request(b.slot, st);
          break;
        }
        case kind_restore:
          if (ok) {
            sl.phase = Slot::running;
            sl.consumed = sl.restore_end;
            sl.stream = sl.restore_stream;
            sl.last_seed = kv_seed(sl.stream.key());
            st.restored_tokens += sl.restore_end;
          } else {
            sl.phase = Slot::needs_reset;  // recompute from the start
            st.restore_fallbacks++;
          }
          break;
        case kind_reset:
          if (ok) {
            sl.phase = Slot::running;
            sl.consumed = 0;
            sl.stream = TokenStream(w_, sl.request);
          } else {
            sl.phase = Slot::needs_reset;
          }
          break;
      }
    }
  }

  void account_bytes(Stats& st, const Command& c) {
    st.row_bytes_moved += row_copy_bytes_;
    if (c.op != 0) return;
    if (c.end % PT_ != 0) st.page_bytes_moved += A_ * kv_pb_;
    for (int part = 0; part < 2 && D_ > 0; ++part) {
      const std::int64_t t_logical = c.end / PT_ + part - 1;
      if (c.end > 1 && t_logical >= 0 && (part == 0 || c.end % PT_ >= 2)) st.page_bytes_moved += D_ * draft_pb_;
    }
  }

  // --- the model ------------------------------------------------------------------

  void add_row_jobs(std::int64_t s, const Slot& sl) {
    const std::int64_t row = live_row(s);
    const std::uint64_t seed = sl.stream.state_seed();
    jobs_.push_back({0, 0, row * RB_ + ssm_off_, mix64(seed + salt_ssm), ssm_.lo, ssm_.hi});
    jobs_.push_back({0, 0, row * RB_ + conv_off_, mix64(seed + salt_conv), conv_.lo, conv_.hi});
    if (cfg_.scratch_bytes > 0)
      jobs_.push_back({0, 0, row * RB_ + scratch_off_, mix64(step_seed_ + salt_scratch + static_cast<std::uint64_t>(s)), 0,
                       cfg_.scratch_bytes});
    jobs_.push_back({0, 1, row * RB_ + consumed_off_, static_cast<std::uint64_t>(sl.consumed), 0, 0});
    jobs_.push_back({request_target_, 1, s * 8, static_cast<std::uint64_t>(sl.consumed), 0, 0});
  }

  // Consume `n` tokens of slot s (stopping early at a checkpoint that gets a
  // snapshot row); returns the tokens consumed.
  std::int64_t advance(std::int64_t s, std::int64_t n, Stats& st) {
    Slot& sl = slots_[s];
    const RequestSpec& spec = w_.requests[static_cast<std::size_t>(sl.request)];
    const auto& bounds = sl.stream.boundaries();
    std::int64_t done = 0;
    while (done < n) {
      const std::int64_t p = sl.consumed;  // the position consumed now
      sl.stream.advance();
      const std::uint64_t seed = kv_seed(sl.stream.key());
      const std::int64_t page = sl.pages[static_cast<std::size_t>(p / PT_)];
      for (std::int64_t i = 0; i < A_; ++i)
        jobs_.push_back({static_cast<std::int32_t>(1 + i), 0, page * kv_pb_ + (p % PT_) * kv_.size(),
                         mix64(seed + salt_kv + static_cast<std::uint64_t>(i)), kv_.lo, kv_.hi});
      if (p >= 1) {  // the draft model lags one token
        const std::int64_t q = p - 1;
        const std::int64_t dpage = sl.dpages[static_cast<std::size_t>(q / PT_)];
        for (std::int64_t i = 0; i < D_; ++i)
          jobs_.push_back({static_cast<std::int32_t>(1 + A_ + i), 0, dpage * draft_pb_ + (q % PT_) * draft_.size(),
                           mix64(sl.last_seed + salt_draft + static_cast<std::uint64_t>(i)), draft_.lo, draft_.hi});
      }
      sl.last_seed = seed;
      sl.consumed++;
      done++;
      // A prefix endpoint that is not cached yet: snapshot it next step.
      if (sl.consumed < spec.total_len &&
          std::binary_search(bounds.begin(), bounds.end(), sl.consumed) && !cache_.contains(sl.stream.key())) {
        if (auto row = cache_.reserve(sl.stream.key())) {
          sl.snapshot = Pending{sl.stream.key(), *row, false};
          break;
        }
      }
    }
    (sl.consumed <= spec.prompt_len ? st.prefill_tokens : st.decode_tokens) += done;
    return done;
  }

  // Returns the seconds the shadow took.
  double plan_and_run_model(Stats& st) {
    double shadow_s = 0;
    jobs_.clear();
    step_seed_ = mix64(static_cast<std::uint64_t>(st.steps) * 0x9E37ULL);
    std::int64_t budget = cfg_.step_tokens;
    // Decode first (one token each), then prefill chunks, rotating who goes first.
    for (int pass = 0; pass < 2; ++pass) {
      for (std::int64_t k = 0; k < C_ && budget > 0; ++k) {
        const std::int64_t s = (k + rotate_) % C_;
        Slot& sl = slots_[s];
        if (sl.phase != Slot::running || sl.snapshot) continue;
        const RequestSpec& spec = w_.requests[static_cast<std::size_t>(sl.request)];
        const bool decoding = sl.consumed >= spec.prompt_len;
        if (decoding != (pass == 0)) continue;
        const std::int64_t want = decoding ? 1 : std::min({cfg_.chunk, budget, spec.prompt_len - sl.consumed});
        budget -= advance(s, want, st);
        add_row_jobs(s, sl);
        if (sl.consumed == spec.total_len) {
          // Finished: snapshot the whole sequence for follow-ups, then free the slot.
          std::optional<std::int64_t> row;
          if (cfg_.completion_snapshots && !cache_.contains(sl.stream.key())) row = cache_.reserve(sl.stream.key());
          if (row) {
            sl.snapshot = Pending{sl.stream.key(), *row, true};
            sl.phase = Slot::drain;
          } else {
            finish_after_model_.push_back(s);
          }
        }
      }
    }
    rotate_ = (rotate_ + 1) % C_;

    // Device: the fill jobs; shadow: the same.
    const auto n = static_cast<std::int64_t>(jobs_.size());
    if (n > 0) {
      using HostJobs = Kokkos::View<const FillJob*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
      const HostJobs host_jobs(jobs_.data(), static_cast<std::size_t>(n));
      FillKernel<Exec> kernel{{}, bases_};
      if constexpr (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible) {
        kernel.jobs = host_jobs;  // host backends read the host list in place
      } else {
        if (static_cast<std::int64_t>(jobs_d_.extent(0)) < n)
          jobs_d_ = Kokkos::View<FillJob*, Mem>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sim::fill_jobs"), n + n / 2);
        auto dst = Kokkos::subview(jobs_d_, std::make_pair(std::int64_t(0), n));
        Kokkos::deep_copy(exec_, dst, host_jobs);
        kernel.jobs = dst;
      }
      // Host backends: one thread per job (no team rendezvous); devices: a team per job.
      using Policy = typename FillKernel<Exec>::policy;
      if constexpr (Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible)
        Kokkos::parallel_for("sim::model_step", Policy(exec_, n, 1), kernel);
      else
        Kokkos::parallel_for("sim::model_step", Policy(exec_, n, Kokkos::AUTO), kernel);
      if (shadow_) {
        const auto t = Clock::now();
        shadow_->run_jobs(jobs_.data(), jobs_.size());
        for (const FillJob& j : jobs_)
          if (j.target >= 1 && j.target <= A_ + D_)
            dirty_.emplace_back(j.target - 1, j.offset / (j.target <= A_ ? kv_pb_ : draft_pb_));
        shadow_s = seconds(Clock::now() - t);
      }
    }
    for (std::int64_t s : finish_after_model_) finish_request(s, st);
    finish_after_model_.clear();
    exec_.fence();
    return shadow_s;
  }

  // --- verification ---------------------------------------------------------------

  void fail(Stats& st, const std::string& what) {
    if (!st.verify_ok) return;
    st.verify_ok = false;
    st.verify_message = "rank " + std::to_string(comm_.rank) + ", step " + std::to_string(st.steps) + ": " + what;
  }

  // Expected codes (the combination over the ranks' views of the page tables),
  // the device's combined codes, then SPEC §5 on the shadow and the comparison.
  void verify_transfer(Stats& st, const std::vector<std::int32_t>& codes,
                       const std::vector<std::pair<int, std::int64_t>>& faulted) {
    const auto count = static_cast<std::int32_t>(batch_.size());
    std::vector<Command> cmds;
    for (const auto& b : batch_) cmds.push_back(b.cmd);
    const std::int32_t* dt = D_ > 0 ? host_dtables_.data() : nullptr;
    std::vector<int> ranks_faulted;
    for (const auto& f : faulted)
      if (std::find(ranks_faulted.begin(), ranks_faulted.end(), f.first) == ranks_faulted.end())
        ranks_faulted.push_back(f.first);
    std::vector<std::int32_t> expected(static_cast<std::size_t>(count), 0);
    bool first = true;
    auto fold = [&](const std::vector<std::int32_t>& v) {
      for (std::int32_t i = 0; i < count; ++i)
        expected[i] = first ? v[i] : statexfer::combine_error_codes(expected[i], v[i]);
      first = false;
    };
    if (static_cast<int>(ranks_faulted.size()) < comm_.size) fold(shadow_->validate(cmds, count, host_tables_.data(), dt));
    for (int r : ranks_faulted) {
      std::vector<std::int32_t> t = host_tables_;
      for (const auto& f : faulted)
        if (f.first == r) t[cmds[f.second].slot * W_ + cmds[f.second].end / PT_] = -1;
      fold(shadow_->validate(cmds, count, t.data(), dt));
    }
    for (std::int32_t i = 0; i < count && st.verify_ok; ++i)
      if (codes[i] != expected[i])
        fail(st, "command " + std::to_string(i) + " (" + kind_name(batch_[i].kind) + ", slot " +
                     std::to_string(cmds[i].slot) + ", end " + std::to_string(cmds[i].end) + "): device code " +
                     std::to_string(codes[i]) + " (" + statexfer::command_error_name(codes[i]) +
                     "), the shadow expects " + std::to_string(expected[i]) + " (" +
                     statexfer::command_error_name(expected[i]) + ")");
    for (std::int32_t i = 0; i < count; ++i)
      if (expected[i] != 0 && !std::any_of(faulted.begin(), faulted.end(), [&](auto& f) { return f.second == i; }))
        fail(st, "command " + std::to_string(i) + " was refused with code " + std::to_string(expected[i]) +
                     " although the scheduler built it valid");
    // Every rank must hold the same codes.
    if (comm_.distributed()) {
      std::uint64_t u = 0;  // unsigned: the hash wraps by design
      for (std::int32_t i = 0; i < count; ++i) u = u * 31 + static_cast<std::uint64_t>(codes[i] + 1);
      const auto h = static_cast<std::int64_t>(u);
      if (comm_.min(h) != comm_.max(h)) fail(st, "the ranks hold different error codes for the batch");
    }

    std::vector<std::pair<std::int32_t, std::int64_t>> touched;
    shadow_->apply(cmds, count, expected, host_tables_.data(), dt, &touched);
    for (const auto& t : touched) dirty_.push_back(t);
    compare_pool(st);
    compare_pages(st, dirty_);
    dirty_.clear();
    if (cfg_.verify_full_every > 0 && (st.steps + 1) % cfg_.verify_full_every == 0) verify_caches_full(st);
    st.verify_steps++;
    if (comm_.distributed() && comm_.min(st.verify_ok ? 1 : 0) == 0 && st.verify_ok)
      fail(st, "stopped: another rank's comparison failed");
  }

  template <class V>
  auto host_view(const V& v) {
    auto h = Kokkos::create_mirror_view(v);
    Kokkos::deep_copy(h, v);
    return h;
  }

  void compare_pool(Stats& st) {
    auto pool = host_view(pool_.backing());
    const std::uint8_t* dev = pool.data();
    const std::uint8_t* want = shadow_->pool().data();
    for (std::int64_t row = 0; row < rows_; ++row) {
      if (std::memcmp(dev + row * RB_, want + row * RB_, static_cast<std::size_t>(RB_)) == 0) continue;
      std::int64_t b = 0;
      while (dev[row * RB_ + b] == want[row * RB_ + b]) ++b;
      fail(st, "pool row " + std::to_string(row) + " byte " + std::to_string(b) + " (region " + region_at(b) +
                   "): device " + std::to_string(dev[row * RB_ + b]) + ", shadow " + std::to_string(want[row * RB_ + b]));
      return;
    }
    auto consumed = host_view(requests_.consumed_tokens);
    for (std::int64_t slot = 0; slot < C_; ++slot)
      if (consumed(slot, 0) != shadow_->request_consumed()[slot]) {
        fail(st, "request consumed of slot " + std::to_string(slot) + ": device " + std::to_string(consumed(slot, 0)) +
                     ", shadow " + std::to_string(shadow_->request_consumed()[slot]));
        return;
      }
  }

  std::string region_at(std::int64_t b) const {
    for (const auto& r : layout_.regions())
      if (b >= r.offset && b < r.offset + r.nbytes) return r.name;
    return "padding";
  }

  CacheView cache_view(std::int32_t i) const { return i < A_ ? kv_caches_[i] : draft_caches_[i - A_]; }

  void compare_pages(Stats& st, std::vector<std::pair<std::int32_t, std::int64_t>>& pages) {
    std::sort(pages.begin(), pages.end());
    pages.erase(std::unique(pages.begin(), pages.end()), pages.end());
    constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Mem>::accessible;
    std::vector<std::uint8_t> buffer;
    for (const auto& [cache, page] : pages) {
      const std::int64_t pb = shadow_->cache_page_bytes(static_cast<std::size_t>(cache));
      const CacheView v = cache_view(cache);
      const std::uint8_t* dev;
      if constexpr (host) {
        dev = v.data() + page * pb;
      } else {
        buffer.resize(static_cast<std::size_t>(pb));
        Kokkos::deep_copy(Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                              buffer.data(), static_cast<std::size_t>(pb)),
                          Kokkos::subview(v, page, Kokkos::ALL()));
        dev = buffer.data();
      }
      if (!compare_page(st, cache, page, dev, shadow_->cache(static_cast<std::size_t>(cache)).data() + page * pb, pb))
        return;
    }
  }

  bool compare_page(Stats& st, std::int32_t cache, std::int64_t page, const std::uint8_t* dev, const std::uint8_t* want,
                    std::int64_t pb) {
    if (std::memcmp(dev, want, static_cast<std::size_t>(pb)) == 0) return true;
    std::int64_t b = 0;
    while (dev[b] == want[b]) ++b;
    fail(st, std::string(cache < A_ ? "kv" : "draft") + std::to_string(cache < A_ ? cache : cache - A_) + " page " +
                 std::to_string(page) + " byte " + std::to_string(b) + ": device " + std::to_string(dev[b]) +
                 ", shadow " + std::to_string(want[b]));
    return false;
  }

  void verify_caches_full(Stats& st) {
    for (std::int32_t c = 0; c < A_ + D_ && st.verify_ok; ++c) {
      auto h = host_view(cache_view(c));
      const std::int64_t pb = shadow_->cache_page_bytes(static_cast<std::size_t>(c));
      const std::uint8_t* want = shadow_->cache(static_cast<std::size_t>(c)).data();
      for (std::int64_t p = 0; p < P_; ++p)
        if (!compare_page(st, c, p, h.data() + p * pb, want + p * pb, pb)) break;
    }
    st.verify_full++;
  }

  void finish_stats(Stats& st) {
    st.cache_published = cache_.published();
    st.cache_evictions = cache_.evictions();
    st.cache_reservations = cache_.reservations();
    st.cache_refused = cache_.reservations_refused();
    st.cache_releases = cache_.releases();
    st.total_bytes_moved = comm_.sum(st.row_bytes_moved + st.page_bytes_moved);
    if (comm_.distributed()) {
      // Every rank ran the same schedule with the same combined codes.
      for (std::int64_t v : {st.steps, st.applied[0], st.applied[1], st.applied[2], st.failed[0], st.failed[1],
                             st.failed[2], st.hits, st.completed})
        if (comm_.min(v) != comm_.max(v)) st.cross_rank_ok = false;
    }
    for (const Fault& f : faults_)
      if (f.injected_step < 0) st.faults_missed++;
    faults_out_ = faults_;
  }

  // Configuration.
  SimConfig cfg_;
  const Workload& w_;
  Comm comm_;
  std::vector<Fault> faults_, faults_out_;
  std::int64_t C_ = 0, S_ = 0, PT_ = 0, A_ = 0, D_ = 0, W_ = 0, rows_ = 0, P_ = 0, RB_ = 0;
  Shard ssm_, conv_, kv_, draft_;
  std::int64_t kv_pb_ = 0, draft_pb_ = 0, row_copy_bytes_ = 0;
  std::int64_t consumed_off_ = 0, scratch_off_ = 0, ssm_off_ = 0, conv_off_ = 0;
  statexfer::StateLayout layout_;
  std::int32_t request_target_ = 0;

  // Device.
  Exec exec_;
  statexfer::StatePool<Exec> pool_;
  std::vector<CacheView> kv_caches_, draft_caches_;
  statexfer::PageTable<Exec> tables_, dtables_;
  std::vector<std::int32_t> host_tables_, host_dtables_;
  bool tables_dirty_ = false;
  statexfer::StateRows<Exec> state_rows_;
  statexfer::RequestState<Exec> requests_;
  statexfer::StateCommands<Exec> commands_;
  std::optional<statexfer::PreparedStateTransfer<Exec>> transfer_;
  std::optional<statexfer::ErrorCombiner<Exec>> combiner_;
  typename statexfer::StateCommands<Exec>::int64_view::HostMirror h_slots_, h_src_, h_dst_, h_end_;
  typename statexfer::StateCommands<Exec>::int32_view::HostMirror h_op_, h_count_, h_errors_;
  Kokkos::View<std::uint64_t*, Mem> bases_;
  Kokkos::View<FillJob*, Mem> jobs_d_;
  std::vector<FillJob> jobs_;
  std::uint64_t step_seed_ = 0;
#ifdef KOKKOS_ENABLE_CUDA
  cudaStream_t stream_ = nullptr;
  std::vector<cudaGraphExec_t> graphs_;
#else
  std::vector<int> graphs_;
#endif
#ifdef STATEXFER_HAVE_NCCL
  ncclComm_t nccl_comm_ = nullptr;
#endif

  // Scheduler.
  std::vector<Slot> slots_;
  std::vector<BatchEntry> batch_;
  std::deque<std::int64_t> queue_;
  std::vector<char> done_;
  PrefixCache cache_;
  std::vector<std::int32_t> free_pages_, free_dpages_;
  std::vector<std::int64_t> finish_after_model_;
  std::int64_t rotate_ = 0;
  std::int64_t idle_steps_ = 0;

  // Verification.
  std::optional<Shadow> shadow_;
  std::vector<std::pair<std::int32_t, std::int64_t>> dirty_;  // (cache, page) written since the last comparison
};

}  // namespace sim

#endif
