#ifndef STATEXFER_SIM_ENGINE_HPP
#define STATEXFER_SIM_ENGINE_HPP

// The simulated server. Each step: the scheduler plans one batch of snapshot /
// restore / reset commands and the commits of the last step's verifies, and
// the host tier's moves (in the batch, or with --tier-moves stream in batches
// of their own on the tier stream, whose codes come back a step later); the
// device state runs them through the prepared transfers (validate_and_apply()
// on one rank; validate, combine, apply across tensor-parallel ranks, each
// holding its shard of every row and page); the scheduler takes the codes; the
// model writes what the running requests compute (and the sampler its
// accepted counts). Faults (--inject-fault) and verification (--verify) hook in
// between; the recorder keeps the statistics, the limit's bytes and times.

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
#include "rate_probe.hpp"
#include "recorder.hpp"
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
        faults_(cfg_.faults, comm.rank, geometry_),
        rec_(geometry_, comm) {
    if (cfg_.verify) verifier_.emplace(cfg_, geometry_, comm, device_);
    stats().requests = static_cast<std::int64_t>(workload.requests.size());
  }

#ifdef STATEXFER_HAVE_NCCL
  void set_nccl(ncclComm_t step, ncclComm_t tier) { device_.set_nccl(step, tier); }
#endif
  /// Prepares the transfers and the combiners, captures the graphs on CUDA,
  /// and probes this device's move rates (the report's limit).
  void prepare() {
    device_.prepare();
    constexpr bool gpu = !Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible;
    const std::int64_t bytes =
        cfg_.probe_mib >= 0 ? cfg_.probe_mib << 20 : default_probe_bytes(gpu, geometry_.capacity, geometry_.row_bytes);
    stats().rates = probe_rates(device_.instance(), bytes);
  }

  /// Runs every request (or --max-steps steps), then the final checks.
  const Stats& run(const Progress& progress) {
    describe_run();
    const auto start = Clock::now();
    while (stats().completed < stats().requests && verify_ok()) {
      if (cfg_.max_steps > 0 && stats().steps >= cfg_.max_steps) break;
      step();
      if (progress) progress(stats());
    }
    take_tier(true);  // the last launch's moves
    if (verifier_ && verifier_->ok()) {
      const auto t = Clock::now();
      verifier_->check_final(stats().steps);
      stats().verify_s += seconds(Clock::now() - t);
      record_verification();
    }
    stats().wall_s = seconds(Clock::now() - start);
    finish_stats();
    return stats();
  }

  std::int64_t width() const { return geometry_.table_width; }
  /// The faults with the step and command each hit (after run()).
  const std::vector<Fault>& faults() const { return faults_.faults(); }

 private:
  Stats& stats() { return rec_.stats(); }
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
  bool verify_ok() const { return !verifier_ || verifier_->ok(); }

  void step() {
    const auto step_start = Clock::now();
    take_tier(false);
    Stats& st = stats();
    const Batch& batch = scheduler_.plan_batch(faults_.race_due(st.steps));
    auto t = Clock::now();
    st.schedule_s += seconds(t - step_start);
    device_.upload_tables(scheduler_.page_tables(), scheduler_.draft_tables(), scheduler_.take_changed_slots());
    rec_.issued(batch);
    st.faults_injected = faults_.injected();
    // Rank-local faults: this rank's view changed for this batch (faults.hpp);
    // an offload-race snapshot is in the batch already.
    const StepFaults faulted = batch.empty()
                                   ? StepFaults{}
                                   : faults_.inject(st.steps, batch, scheduler_.page_tables(), scheduler_.state_rows());
    st.upload_s += lap(t);
    launch_tier(faulted);
    st.tier_s += lap(t);
    // A step without commands launches nothing (every rank's batch is empty alike),
    // as an engine skips a step's state moves when there are none.
    double transfer_s = 0, critical_s = 0;
    std::vector<std::int32_t> codes, positions;
    if (!batch.empty()) {
      typename DeviceState<Exec>::Waits waits;
      for (const BatchEntry& b : batch) waits.onloads = waits.onloads || b.after_onload;
      for (const auto& h : faulted.hits) waits.validated_offloads = waits.validated_offloads || h.race;
      device_.upload_batch(batch);
      if (!faulted.patches.empty()) device_.wait({false, false, true});  // no tier move sees a changed row
      patch(faulted, false);
      st.upload_s += lap(t);
      const auto times = device_.run_transfer(waits);
      transfer_s = times.wall_s;
      critical_s = times.stream_s;
      t = Clock::now();
      codes = device_.errors(batch.size(), &positions);
      patch(faulted, true);
      st.readback_s += lap(t);
      st.transfer_s += transfer_s;
      st.transfer_steps++;
      if (waits.onloads) st.steps_after_onload++;
    } else {
      st.upload_s += lap(t);
    }

    double verify_s = 0;
    if (verifier_) {
      t = Clock::now();
      if (tier_) {  // the tier batches' codes now (the scheduler still takes them next step)
        if (!tier_result_) tier_result_ = device_.take_tier();
        verifier_->check_tier(st.steps, scheduler_.onload_batch(), scheduler_.offload_batch(),
                              tier_result_->onload_codes, tier_result_->offload_codes, scheduler_.page_tables(),
                              scheduler_.draft_tables());
      }
      verifier_->check_transfer(st.steps, batch, codes, positions, faulted, scheduler_.page_tables(),
                                scheduler_.draft_tables());
      verify_s = lap(t);
      st.verify_s += verify_s;
      record_verification();
      if (!verifier_->ok()) return;
    }

    const MovedBytes moved = rec_.results(batch, codes);
    st.step_moved += moved;
    faults_.record(faulted, codes);
    st.faults_refused = faults_.refused();
    t = Clock::now();
    scheduler_.take_results(codes);
    st.schedule_s += lap(t);
    if (verifier_) {
      verifier_->check_mirror(scheduler_.state_rows());
      if (!verifier_->ok()) {
        record_verification();
        return;
      }
    }
    verify_s += run_model();

    // A schedule that can no longer move is a bug: stop rather than spin.
    const bool idle = batch.empty() && !tier_ && model_.jobs().empty();
    idle_steps_ = idle ? idle_steps_ + 1 : 0;
    if (idle_steps_ > 1000) throw std::logic_error("statexfer-sim: the scheduler made no progress for 1000 steps");

    st.transfer_us.push_back(static_cast<float>(transfer_s * 1e6));
    st.critical_us.push_back(static_cast<float>(critical_s * 1e6));
    st.limit_us.push_back(static_cast<float>(st.rates.seconds(moved) * 1e6));
    st.step_us.push_back(static_cast<float>((seconds(Clock::now() - step_start) - verify_s) * 1e6));
    st.step_commands.push_back(static_cast<std::int32_t>(batch.size()));
    st.steps++;
    rec_.scheduler(scheduler_.counts(), scheduler_.now_ms());
  }

  // The step's tier batches on the tier stream (on hosts: run now, before the
  // step's batch; an offload-race holds the offloads' apply until after it).
  void launch_tier(const StepFaults& faulted) {
    const Batch& on = scheduler_.onload_batch();
    const Batch& off = scheduler_.offload_batch();
    tier_ = !on.empty() || !off.empty();
    if (!tier_) return;
    rec_.issued(on);
    rec_.issued(off);
    bool race = false;
    for (const auto& h : faulted.hits) race = race || h.race;
    device_.launch_tier(on, off, race);
    stats().tier_launches++;
  }

  // The last tier launch's codes to the scheduler, a step after it (or at the
  // end of the run): the moves' rows change hands.
  void take_tier(bool last) {
    if (!tier_) return;
    if (!tier_result_) tier_result_ = device_.take_tier();
    Stats& st = stats();
    const auto& r = *tier_result_;
    MovedBytes moved = rec_.results(scheduler_.onload_batch(), r.onload_codes);
    moved += rec_.results(scheduler_.offload_batch(), r.offload_codes);
    st.tier_moved += moved;
    st.tier_wait_s += r.wait_s;
    st.tier_us.push_back(static_cast<float>(r.stream_s * 1e6));
    st.tier_limit_us.push_back(static_cast<float>(st.rates.seconds(moved) * 1e6));
    scheduler_.take_tier_results(r.onload_codes, r.offload_codes);
    tier_result_.reset();
    tier_ = false;
    if (last) rec_.scheduler(scheduler_.counts(), scheduler_.now_ms());
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
    Stats& st = stats();
    const auto start = Clock::now();
    model_.begin_step(st.steps);
    const std::int64_t verifies = scheduler_.counts().verifies;
    scheduler_.advance_requests(model_);
    const bool verified = scheduler_.counts().verifies > verifies;
    auto t = Clock::now();
    const double advance_s = seconds(t - start);
    st.schedule_s += advance_s;
    device_.run_model(model_.jobs());
    if (verified) {  // the sampler's accepted counts, which the next batch's commits read
      device_.upload_accepted(model_.accepted());
      st.steps_verifying++;
    }
    double replica_s = 0;
    if (verifier_) {
      const auto v = Clock::now();
      verifier_->run_model(model_.jobs(), model_.accepted());
      replica_s = seconds(Clock::now() - v);
    }
    device_.fence();
    st.fill_s += seconds(Clock::now() - t) - replica_s;
    st.model_s += seconds(Clock::now() - start) - replica_s;
    st.verify_s += replica_s;
    return replica_s;
  }

  // Seconds since `t`, and `t` moved to now.
  static double lap(typename Clock::time_point& t) {
    const auto now = Clock::now();
    const double s = seconds(now - t);
    t = now;
    return s;
  }

  void describe_run() {
    Stats& st = stats();
    const Geometry& g = geometry_;
    st.rows = g.rows;
    st.row_bytes = g.row_bytes;
    st.pages = g.pages;
    st.width = g.table_width;
    st.ranks = comm_.size;
    st.backend = Exec::name();
    st.combiner = device_.combiner_name();
    st.step_launch = device_.step_launch();
    st.graphs = device_.graphs();
    st.memory_bytes = g.memory_bytes();
    st.host_memory_bytes = g.host_memory_bytes();
    st.clock = stream_clock_name<Exec>();
    st.tier_moves = g.host_rows == 0 ? "" : device_.tier_stream() ? "stream" : "step";
    st.tier_teams = device_.tier_teams();
  }

  void record_verification() {
    Stats& st = stats();
    st.verify_ok = verifier_->ok();
    st.verify_message = verifier_->message();
    st.verify_steps = verifier_->steps_checked();
    st.verify_full = verifier_->full_checks();
  }

  void finish_stats() {
    Stats& st = stats();
    rec_.scheduler(scheduler_.counts(), scheduler_.now_ms());
    rec_.cache(scheduler_.prefix_cache());
    rec_.finish();
    st.queue_ms = scheduler_.queue_delays_ms();
    st.model_state_bytes = model_.state_bytes_written();
    st.model_token_bytes = model_.token_bytes_written();
    st.faults_injected = faults_.injected();
    st.faults_refused = faults_.refused();
    st.faults_settled = faults_.settled();
    st.faults_missed = faults_.missed();
  }

  const SimConfig cfg_;
  Comm comm_;
  const Geometry geometry_;
  DeviceState<Exec> device_;
  Scheduler scheduler_;
  Model model_;
  FaultInjector faults_;
  Recorder rec_;
  std::optional<Verifier<Exec>> verifier_;
  bool tier_ = false;  // a tier launch whose codes the scheduler has not taken
  std::optional<typename DeviceState<Exec>::TierResult> tier_result_;
  std::int64_t idle_steps_ = 0;
};

}  // namespace statexfer::sim

#endif
