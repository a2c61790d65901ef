#ifndef STATEXFER_SIM_ENGINE_HPP
#define STATEXFER_SIM_ENGINE_HPP

// The simulated server. Each step: the scheduler plans one batch of snapshot /
// restore / reset / tier-move commands and the commits of the last step's
// verifies; the device state runs it through the one prepared transfer
// (validate_and_apply() on one rank; validate, combine, apply across
// tensor-parallel ranks, each holding its shard of every row and page); the
// scheduler takes the codes; the model writes what the running requests
// compute (and the sampler its accepted counts). Faults (--inject-fault) and
// verification (--verify) hook in between; the engine alone keeps the statistics.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>

#include "batch.hpp"
#include "comm.hpp"
#include "device_state.hpp"
#include "faults.hpp"
#include "geometry.hpp"
#include "model.hpp"
#include "scheduler.hpp"
#include "sim_config.hpp"
#include "stats.hpp"
#include "verifier.hpp"
#include "workload.hpp"

namespace statexfer::sim {

template <class Exec>
class Engine {
 public:
  using Clock = std::chrono::steady_clock;
  using Progress = std::function<void(const Stats&)>;

  Engine(const SimConfig& cfg, const Workload& workload, const Comm& comm)
      : cfg_(cfg),
        comm_(comm),
        geometry_(make_geometry(cfg_, workload.max_total, comm)),
        device_(cfg_, geometry_, comm),
        scheduler_(cfg_, workload, geometry_),
        model_(geometry_),
        faults_(cfg_.faults, comm.rank, geometry_) {
    if (cfg_.verify) verifier_.emplace(cfg_, geometry_, comm, device_);
    stats_.requests = static_cast<std::int64_t>(workload.requests.size());
  }

#ifdef STATEXFER_HAVE_NCCL
  void set_nccl(ncclComm_t comm) { device_.set_nccl(comm); }
#endif
  /// Prepares the transfer and the combiner, captures the graphs on CUDA.
  void prepare() { device_.prepare(); }

  /// Runs every request (or --max-steps steps), then the final checks.
  const Stats& run(const Progress& progress) {
    describe_run();
    const auto start = Clock::now();
    while (stats_.completed < stats_.requests && verify_ok()) {
      if (cfg_.max_steps > 0 && stats_.steps >= cfg_.max_steps) break;
      step();
      if (progress) progress(stats_);
    }
    if (verifier_ && verifier_->ok()) {
      const auto t = Clock::now();
      verifier_->check_final(stats_.steps);
      stats_.verify_s += seconds(Clock::now() - t);
      record_verification();
    }
    stats_.wall_s = seconds(Clock::now() - start);
    finish_stats();
    return stats_;
  }

  std::int64_t width() const { return geometry_.table_width; }
  /// The faults with the step and command each hit (after run()).
  const std::vector<Fault>& faults() const { return faults_.faults(); }

 private:
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
  bool verify_ok() const { return !verifier_ || verifier_->ok(); }

  void step() {
    const auto step_start = Clock::now();
    const Batch& batch = scheduler_.plan_batch();
    auto t = Clock::now();
    stats_.schedule_s += seconds(t - step_start);
    device_.upload_tables(scheduler_.page_tables(), scheduler_.draft_tables(), scheduler_.take_changed_slots());
    record_batch(batch);
    // A step without commands launches nothing (every rank's batch is empty alike),
    // as an engine skips a step's state moves when there are none.
    StepFaults faulted;
    double transfer_s = 0;
    std::vector<std::int32_t> codes, positions;
    if (!batch.empty()) {
      device_.upload_batch(batch);
      // Rank-local faults: this rank's view changed for this batch (faults.hpp).
      faulted = faults_.inject(stats_.steps, batch, scheduler_.page_tables(), scheduler_.state_rows());
      patch(faulted, false);
      stats_.upload_s += lap(t);
      transfer_s = device_.run_transfer();
      t = Clock::now();
      codes = device_.errors(batch.size(), &positions);
      patch(faulted, true);
      stats_.readback_s += lap(t);
      stats_.transfer_s += transfer_s;
      stats_.transfer_steps++;
    } else {
      stats_.upload_s += lap(t);
    }

    double verify_s = 0;
    if (verifier_) {
      t = Clock::now();
      verifier_->check_transfer(stats_.steps, batch, codes, positions, faulted, scheduler_.page_tables(),
                                scheduler_.draft_tables());
      verify_s = lap(t);
      stats_.verify_s += verify_s;
      record_verification();
      if (!verifier_->ok()) return;
    }

    record_results(batch, codes);
    faults_.record(faulted, codes);
    stats_.faults_refused = faults_.refused();
    t = Clock::now();
    scheduler_.take_results(codes);
    stats_.schedule_s += lap(t);
    if (verifier_) {
      verifier_->check_mirror(scheduler_.state_rows());
      if (!verifier_->ok()) {
        record_verification();
        return;
      }
    }
    verify_s += run_model();

    // A schedule that can no longer move is a bug: stop rather than spin.
    idle_steps_ = (batch.empty() && model_.jobs().empty()) ? idle_steps_ + 1 : 0;
    if (idle_steps_ > 1000) throw std::logic_error("statexfer-sim: the scheduler made no progress for 1000 steps");

    stats_.transfer_us.push_back(static_cast<float>(transfer_s * 1e6));
    stats_.step_us.push_back(static_cast<float>((seconds(Clock::now() - step_start) - verify_s) * 1e6));
    stats_.step_commands.push_back(static_cast<std::int32_t>(batch.size()));
    stats_.steps++;
    record_scheduler();
  }

  // This rank's faulted view for the batch (`undo`: back as it was).
  void patch(const StepFaults& faulted, bool undo) {
    for (const FaultPatch& p : faulted.patches) {
      if (p.rank != comm_.rank) continue;
      const std::int64_t v = undo ? p.original : p.value;
      switch (p.target) {
        case FaultPatch::page: device_.set_page(p.index, p.at, static_cast<std::int32_t>(v)); break;
        case FaultPatch::accepted: device_.set_accepted(p.index, static_cast<std::int32_t>(v)); break;
        case FaultPatch::pool_word: device_.set_word(false, p.index, p.at, v); break;
        case FaultPatch::host_word: device_.set_word(true, p.index, p.at, v); break;
      }
    }
  }

  // The model step on the device (and on the verifier's replica); returns the
  // seconds the replica took.
  double run_model() {
    const auto start = Clock::now();
    model_.begin_step(stats_.steps);
    const std::int64_t verifies = scheduler_.counts().verifies;
    scheduler_.advance_requests(model_);
    const bool verified = scheduler_.counts().verifies > verifies;
    auto t = Clock::now();
    const double advance_s = seconds(t - start);
    stats_.schedule_s += advance_s;
    device_.run_model(model_.jobs());
    if (verified) {  // the sampler's accepted counts, which the next batch's commits read
      device_.upload_accepted(model_.accepted());
      stats_.steps_verifying++;
    }
    double replica_s = 0;
    if (verifier_) {
      const auto v = Clock::now();
      verifier_->run_model(model_.jobs(), model_.accepted());
      replica_s = seconds(Clock::now() - v);
    }
    device_.fence();
    stats_.fill_s += seconds(Clock::now() - t) - replica_s;
    stats_.model_s += seconds(Clock::now() - start) - replica_s;
    stats_.verify_s += replica_s;
    return replica_s;
  }

  // Seconds since `t`, and `t` moved to now.
  static double lap(typename Clock::time_point& t) {
    const auto now = Clock::now();
    const double s = seconds(now - t);
    t = now;
    return s;
  }

  // --- statistics: the only writers of stats_ -------------------------------------

  void describe_run() {
    const Geometry& g = geometry_;
    stats_.rows = g.rows;
    stats_.row_bytes = g.row_bytes;
    stats_.pages = g.pages;
    stats_.width = g.table_width;
    stats_.ranks = comm_.size;
    stats_.backend = Exec::name();
    stats_.combiner = device_.combiner_name();
    stats_.graphs = device_.graphs();
    stats_.memory_bytes = g.memory_bytes();
    stats_.host_memory_bytes = g.host_memory_bytes();
  }

  void record_batch(const Batch& batch) {
    for (const BatchEntry& b : batch) stats_.issued[b.kind]++;
    stats_.faults_injected = faults_.injected();
  }

  void record_results(const Batch& batch, const std::vector<std::int32_t>& codes) {
    bool commits = false;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const BatchEntry& b = batch[i];
      const std::int32_t code = codes[i];
      const int c = code >= 0 && code <= 6 ? code : 7;
      stats_.errors[c]++;
      const bool ok = code == 0;
      (ok ? stats_.applied : stats_.failed)[b.kind]++;
      if (b.kind == kind_commit) {
        commits = true;
        stats_.commit_errors[c]++;
        // A copying commit moves the accepted row (all but the excluded scratch);
        // a remap, or accepting nothing, moves no byte (docs/CONTRACT.md §13).
        if (ok && geometry_.commit_copy && b.accepted > 0) {
          stats_.row_bytes_moved += geometry_.row_copy_bytes;
          stats_.commit_bytes += geometry_.row_copy_bytes;
        }
        continue;
      }
      if (ok) record_bytes(b.cmd, b.kind);
      if (ok && b.cmd.operation == statexfer::op_restore_from_host) stats_.host_restores++;
    }
    if (commits) stats_.commit_steps++;
  }

  // This rank's bytes of one applied command: the row, its partial page in every
  // KV plane, its trailing pages in every draft plane.
  // An offload's bytes go to the host, an onload's and a restore from the host's
  // (its row and the pages it restores from that row) come from it.
  void record_bytes(const Command& c, int kind) {
    const Geometry& g = geometry_;
    stats_.row_bytes_moved += g.row_copy_bytes;
    std::int64_t pages = 0;
    if (c.operation == statexfer::op_copy || c.operation == statexfer::op_restore_from_host) {
      if (c.expected_consumed % g.page_tokens != 0) pages += g.kv_planes * g.kv_page_bytes;
      for (int part = 0; part < 2 && g.draft_planes > 0; ++part) {
        const std::int64_t t_logical = c.expected_consumed / g.page_tokens + part - 1;
        if (c.expected_consumed > 1 && t_logical >= 0 && (part == 0 || c.expected_consumed % g.page_tokens >= 2))
          pages += g.draft_planes * g.draft_page_bytes;
      }
    }
    stats_.page_bytes_moved += pages;
    if (kind == kind_snapshot) stats_.snapshot_bytes += g.row_copy_bytes + pages;
    if (c.operation == statexfer::op_offload) stats_.bytes_to_host += g.row_copy_bytes;
    if (c.operation == statexfer::op_onload || c.operation == statexfer::op_restore_from_host)
      stats_.bytes_from_host += g.row_copy_bytes + pages;
  }

  void record_scheduler() {
    const SchedulerCounts& s = scheduler_.counts();
    stats_.admitted = s.admitted;
    stats_.completed = s.completed;
    stats_.hits = s.hits;
    stats_.device_hits = s.device_hits;
    stats_.host_hits = s.host_hits;
    stats_.misses = s.misses;
    stats_.prompt_tokens = s.prompt_tokens;
    stats_.restored_tokens = s.restored_tokens;
    stats_.prefill_tokens = s.prefill_tokens;
    stats_.decode_tokens = s.decode_tokens;
    stats_.checkpoint_snapshots = s.checkpoint_snapshots;
    stats_.completion_snapshots = s.completion_snapshots;
    stats_.restore_fallbacks = s.restore_fallbacks;
    stats_.queued = s.queued;
    stats_.verifies = s.verifies;
    stats_.drafted_tokens = s.drafted_tokens;
    stats_.verified_tokens = s.verified_tokens;
    stats_.committed_tokens = s.committed_tokens;
    stats_.accepted_drafts = s.accepted_drafts;
    stats_.commit_fallbacks = s.commit_fallbacks;
    stats_.verify_pauses = s.verify_pauses;
    stats_.accepted_histogram = s.accepted_histogram;
    stats_.sim_ms = scheduler_.now_ms();
  }

  void record_verification() {
    stats_.verify_ok = verifier_->ok();
    stats_.verify_message = verifier_->message();
    stats_.verify_steps = verifier_->steps_checked();
    stats_.verify_full = verifier_->full_checks();
  }

  void finish_stats() {
    record_scheduler();
    const PrefixCache& cache = scheduler_.prefix_cache();
    stats_.cache_published = cache.published();
    stats_.cache_evictions = cache.evictions();
    stats_.cache_reservations = cache.reservations();
    stats_.cache_refused = cache.reservations_refused();
    stats_.cache_releases = cache.releases();
    stats_.demotions = cache.demotions();
    stats_.promotions = cache.promotions();
    stats_.host_evictions = cache.host_evictions();
    stats_.host_published = cache.host_published();
    stats_.total_bytes_moved = comm_.sum(stats_.row_bytes_moved + stats_.page_bytes_moved);
    stats_.total_snapshot_bytes = comm_.sum(stats_.snapshot_bytes);
    stats_.total_commit_bytes = comm_.sum(stats_.commit_bytes);
    stats_.queue_ms = scheduler_.queue_delays_ms();
    stats_.model_state_bytes = model_.state_bytes_written();
    stats_.model_token_bytes = model_.token_bytes_written();
    if (comm_.distributed()) {
      // Every rank ran the same schedule with the same combined codes.
      for (std::int64_t v : {stats_.steps, stats_.applied[0], stats_.applied[1], stats_.applied[2], stats_.failed[0],
                             stats_.failed[1], stats_.failed[2], stats_.applied[kind_commit],
                             stats_.failed[kind_commit], stats_.accepted_drafts, stats_.hits, stats_.completed})
        if (comm_.min(v) != comm_.max(v)) stats_.cross_rank_ok = false;
    }
    stats_.faults_injected = faults_.injected();
    stats_.faults_refused = faults_.refused();
    stats_.faults_missed = faults_.missed();
  }

  const SimConfig cfg_;
  Comm comm_;
  const Geometry geometry_;
  DeviceState<Exec> device_;
  Scheduler scheduler_;
  Model model_;
  FaultInjector faults_;
  std::optional<Verifier<Exec>> verifier_;
  Stats stats_;
  std::int64_t idle_steps_ = 0;
};

}  // namespace statexfer::sim

#endif
