#ifndef STATEXFER_SIM_DEVICE_STATE_HPP
#define STATEXFER_SIM_DEVICE_STATE_HPP

// The device side of one rank: the pool, the caches, the page tables, the
// state rows, the request state and (speculative decoding) the sampler's
// accepted counts; the step's transfer (lane.hpp: its commands, combiner and
// graphs) on the simulator's stream; with a host tier whose moves run apart
// (--tier-moves stream), two more transfers on a tier stream, onloads then
// offloads, sharing row claims with the step's (docs/CONTRACT.md §15); the
// events between the streams; and the kernel that runs the model's fill jobs.
//
// Kokkos' host spaces have one instance each: there the tier batches run in
// the host's order before the step's batch, and the step's transfer waits for
// nothing. On Kokkos::Cuda the step's stream waits only for what its batch
// reads: the onloads when it restores from a row they write (or everything
// in flight when a fault changes a row or table on this rank).

#include <Kokkos_Core.hpp>

#include <algorithm>
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

#include "batch.hpp"
#include "comm.hpp"
#include "content.hpp"
#include "geometry.hpp"
#include "lane.hpp"
#include "sim_config.hpp"
#include "state_rows.hpp"
#include "stream_events.hpp"

namespace statexfer::sim {

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

  /// What the step's transfer waits for on the tier stream (nothing on hosts).
  struct Waits {
    bool onloads = false;             ///< its batch restores from a row the onloads write
    bool validated_offloads = false;  ///< offload-race: only for the offloads' validation (their claims)
    bool tier = false;                ///< everything in flight (a fault changes this rank's rows or tables)
  };
  /// The step's transfer: the host's fenced time, and its stream's (the critical path).
  struct Times {
    double wall_s = 0, stream_s = 0;
  };
  /// The tier batches of the last launch.
  struct TierResult {
    bool launched = false;
    std::vector<std::int32_t> onload_codes, offload_codes;
    double stream_s = 0;  ///< the tier stream's time from the launch to its end
    double wait_s = 0;    ///< the host's wait for it (CUDA), when it took the codes
  };

  DeviceState(const SimConfig& cfg, const Geometry& geometry, const Comm& comm)
      : cfg_(cfg), g_(geometry), comm_(comm), step_(geometry.capacity) {
    allocate();
    if (tier_stream()) {
      onloads_.emplace(g_.capacity);
      offloads_.emplace(g_.capacity);
      claims_ = statexfer::RowClaims<Exec>(pool_, host_tier_);
    }
    build_transfers();
    fill_targets();
  }
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;

  ~DeviceState() { release(); }

  /// Whether the host tier's moves run in batches of their own on the tier stream.
  bool tier_stream() const { return g_.host_rows > 0 && cfg_.tier_stream; }

#ifdef STATEXFER_HAVE_NCCL
  /// The communicators of the step's combiner and the tier batches' (streams
  /// that run concurrently must not share one).
  void set_nccl(ncclComm_t step, ncclComm_t tier) {
    step_.set_nccl(step);
    if (tier_stream()) onloads_->set_nccl(tier), offloads_->set_nccl(tier);
  }
#endif

  /// Prepares the transfers and the combiners (host work), captures the graphs on CUDA.
  void prepare() {
    exec_ = make_instance(stream_);
    step_.prepare(exec_, comm_, cfg_.combine, false, cfg_.graphs);
    if (tier_stream()) {
      tier_exec_ = make_instance(tier_stream_);
      onloads_->prepare(tier_exec_, comm_, cfg_.combine, true, cfg_.graphs);
      offloads_->prepare(tier_exec_, comm_, cfg_.combine, true, cfg_.graphs);
    }
  }
  /// The instance of the step's transfers (the rate probe's too).
  const Exec& instance() const { return exec_; }
  /// The tier batches' apply() league (0: the library's default).
  int tier_teams() const { return tier_teams_; }

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

  /// The step's command arrays and count, in one copy (pinned host memory on
  /// GPUs; run_transfer() fences before the next batch rewrites it).
  void upload_batch(const Batch& batch) { step_.upload(exec_, batch); }

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

  /// Launches a step's tier batches on the tier stream: the onloads
  /// (validate, apply), then the offloads (validate; `hold_offloads`: on hosts
  /// their apply waits for the step's transfer, so that it validates while
  /// their claims are held). The last launch's codes were taken (take_tier()).
  void launch_tier(const Batch& onloads, const Batch& offloads, bool hold_offloads) {
    tier_sizes_ = {onloads.size(), offloads.size()};
    if (onloads.empty() && offloads.empty()) return;
    tier_launched_ = true;
    const auto t = std::chrono::steady_clock::now();
    tier_start_.record(tier_exec_);
    if (!onloads.empty()) {
      onloads_->upload(tier_exec_, onloads);
      onloads_->enqueue(tier_exec_);
    }
    onloads_done_.record(tier_exec_);
    if (!offloads.empty()) {
      offloads_->upload(tier_exec_, offloads);
      offloads_->enqueue_validate(tier_exec_);
    }
    offloads_validated_.record(tier_exec_);
    held_ = hold_offloads && !StreamEvent<Exec>::cuda && !offloads.empty();
    if (!held_) finish_offloads();
    tier_host_s_ = seconds_since(t);
  }

  /// Waits on the step's stream for the tier stream's points in `w` (CUDA).
  void wait(const Waits& w) {
    if (w.tier) {
      tier_done_.wait(exec_);
      return;
    }
    if (w.onloads) onloads_done_.wait(exec_);
    if (w.validated_offloads) offloads_validated_.wait(exec_);
  }

  /// The step's transfer, after the waits `w`, fenced; on hosts, a held
  /// offloads' apply after it.
  Times run_transfer(const Waits& w) {
    exec_.fence();
    step_start_.record(exec_);
    const auto start = std::chrono::steady_clock::now();
    wait(w);
    step_.enqueue(exec_);
    step_end_.record(exec_);
    exec_.fence();
    Times out;
    out.wall_s = seconds_since(start);
    out.stream_s = StreamEvent<Exec>::elapsed(step_start_, step_end_);
    if (held_) {
      const auto t = std::chrono::steady_clock::now();
      finish_offloads();
      tier_host_s_ += seconds_since(t);
    }
    return out;
  }

  /// The step's codes of the first `count` command rows, and (`positions`,
  /// when given) the accepted counts validate() read for them.
  std::vector<std::int32_t> errors(std::size_t count, std::vector<std::int32_t>* positions = nullptr) {
    return step_.errors(exec_, count, positions);
  }

  /// The last tier launch's codes and times, once (the host waits for it here).
  TierResult take_tier() {
    TierResult r;
    if (!tier_launched_) return r;
    if (held_) finish_offloads();
    tier_launched_ = false;
    r.launched = true;
    const auto t = std::chrono::steady_clock::now();
    tier_done_.synchronize();
    r.wait_s = StreamEvent<Exec>::cuda ? seconds_since(t) : 0.0;
    r.stream_s = StreamEvent<Exec>::cuda ? StreamEvent<Exec>::elapsed(tier_start_, tier_done_) : tier_host_s_;
    r.onload_codes = onloads_->errors(tier_exec_, tier_sizes_.first);
    r.offload_codes = offloads_->errors(tier_exec_, tier_sizes_.second);
    return r;
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

  std::string combiner_name() const { return step_.combiner_name(); }
  std::string step_launch() const { return step_.launch_summary(); }
  bool graphs() const { return step_.graphs(); }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }

  void finish_offloads() {
    held_ = false;
    if (tier_sizes_.second > 0) offloads_->enqueue_apply(tier_exec_);
    tier_done_.record(tier_exec_);
  }

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
    state_rows_ = initial_state_rows("sim::state_rows");
    if (g_.positions > 0) accepted_ = Kokkos::View<std::int32_t*, Mem>("sim::accepted", C);
    requests_ = statexfer::RequestState<Exec>::allocate(C);
    if (g_.host_rows > 0) host_tier_ = statexfer::HostTier<Exec>(g_.layout, g_.host_rows);
  }

  statexfer::StateRows<Exec> initial_state_rows(const char* label) const {
    statexfer::StateRows<Exec> rows(std::string(label), g_.capacity, HostStateRows::columns);
    auto h = Kokkos::create_mirror_view(rows);
    const HostStateRows initial = g_.initial_state_rows();
    for (std::int64_t s = 0; s < g_.capacity; ++s)
      for (std::int64_t j = 0; j < HostStateRows::columns; ++j) h(s, j) = initial(s, j);
    Kokkos::deep_copy(rows, h);
    return rows;
  }

  // The step's transfer over everything; the tier transfers over the same pool,
  // caches and host tier with tables, state rows and request state of their own
  // (moves read none of them: nothing the step's stream writes), their apply()
  // on a league of tier_teams_, all three sharing the row claims.
  void build_transfers() {
    statexfer::TransferConfig<Exec> config;
    for (std::int64_t i = 0; i < g_.kv_planes; ++i)
      config.pages.push_back({"kv" + std::to_string(i), kv_caches_[static_cast<std::size_t>(i)]});
    for (std::int64_t i = 0; i < g_.draft_planes; ++i)
      config.trailing_pages.push_back({"draft" + std::to_string(i), draft_caches_[static_cast<std::size_t>(i)]});
    config.page_tokens = g_.page_tokens;
    if (g_.scratch_bytes > 0) config.excluded_regions = {"scratch"};
    config.host_tier = host_tier_;
    config.claims = claims_;
    statexfer::TransferConfig<Exec> tier = config;
    config.state_rows = state_rows_;
    config.requests = requests_;
    if (g_.draft_planes > 0) config.trailing_tables = draft_tables_;
    if (g_.positions > 0) {
      config.speculative.positions = static_cast<int>(g_.positions);
      config.speculative.accepted = accepted_;
      config.speculative.move = cfg_.commit_copy ? statexfer::CommitMove::copy : statexfer::CommitMove::remap;
    }
    config.options.expert.compact_staged = cfg_.staged_units;
    config.options.expert.compact_handout = cfg_.handed_out_units;
    step_.build(pool_, step_.commands(), tables_, config);
    if (!tier_stream()) return;
    const std::int64_t C = g_.capacity;
    tier_tables_ = statexfer::PageTable<Exec>("sim::tier_tables", C, 1);
    Kokkos::deep_copy(tier_tables_, -1);
    tier.state_rows = initial_state_rows("sim::tier_state_rows");
    tier.requests = statexfer::RequestState<Exec>::allocate(C);
    if (g_.draft_planes > 0) tier.trailing_tables = tier_tables_;
    tier_teams_ = static_cast<int>(cfg_.tier_teams > 0 ? cfg_.tier_teams : default_tier_teams());
    tier.options.expert.apply_teams = tier_teams_;
    onloads_->build(pool_, onloads_->commands(), tier_tables_, tier);
    offloads_->build(pool_, offloads_->commands(), tier_tables_, tier);
  }

  // A twelfth of the SMs on CUDA (11 teams on the H200): the fewest measured whose
  // offload reaches 90% of pinned memcpy there, and with it a device batch beside
  // stays within 4% of its time alone (an eighth: 1.06x; perf_tests/RESULTS.md);
  // the library's default elsewhere (the host runs them in order).
  static std::int64_t default_tier_teams() {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      int device = 0, sms = 0;
      cuda_check(cudaGetDevice(&device), "cudaGetDevice");
      cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
      return std::max(1, sms / 12);
    }
#endif
    return 0;
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

#ifdef KOKKOS_ENABLE_CUDA
  using Stream = cudaStream_t;
#else
  using Stream = void*;
#endif

  static Exec make_instance(Stream& stream) {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
      return Exec(stream);
    }
#endif
    (void)stream;
    return Exec();
  }

  // The lanes (their graphs, transfers and combiners hold the instances), then
  // the streams. Errors are reported, not thrown (a destructor).
  void release() noexcept {
    try {
      exec_.fence();
      tier_exec_.fence();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "statexfer-sim: fence before the release: %s\n", e.what());
    }
    step_.release();
    if (onloads_) onloads_->release();
    if (offloads_) offloads_->release();
    exec_ = Exec();
    tier_exec_ = Exec();
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      for (Stream* s : {&stream_, &tier_stream_})
        if (*s != nullptr) cuda_report(cudaStreamDestroy(*s), "cudaStreamDestroy");
      stream_ = tier_stream_ = nullptr;
    }
#endif
  }

  const SimConfig& cfg_;
  const Geometry& g_;
  Comm comm_;

  Stream stream_ = nullptr, tier_stream_ = nullptr;
  Exec exec_, tier_exec_;
  statexfer::StatePool<Exec> pool_;
  std::vector<CacheView> kv_caches_, draft_caches_;
  statexfer::PageTable<Exec> tables_, draft_tables_, tier_tables_;
  statexfer::StateRows<Exec> state_rows_;
  statexfer::RequestState<Exec> requests_;
  statexfer::HostTier<Exec> host_tier_;
  statexfer::RowClaims<Exec> claims_;
  Kokkos::View<std::int32_t*, Mem> accepted_;  // the sampler's accepted counts, [C] (speculative decoding)
  Kokkos::View<std::uint64_t*, Mem> bases_;
  Kokkos::View<FillJob*, Mem> jobs_d_;
  Lane<Exec> step_;
  std::optional<Lane<Exec>> onloads_, offloads_;
  int tier_teams_ = 0;
  // The tier launch in flight: its sizes, whether its offloads' apply is held
  // (hosts, offload-race), its host time (hosts), and the streams' points.
  bool tier_launched_ = false, held_ = false;
  std::pair<std::size_t, std::size_t> tier_sizes_{0, 0};
  double tier_host_s_ = 0;
  StreamEvent<Exec> step_start_, step_end_, tier_start_, onloads_done_, offloads_validated_, tier_done_;
};

}  // namespace statexfer::sim

#endif
