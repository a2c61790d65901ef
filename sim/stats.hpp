#ifndef STATEXFER_SIM_STATS_HPP
#define STATEXFER_SIM_STATS_HPP

// Counters and timings of one simulation run (kept by the Engine alone).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace statexfer::sim {

struct Stats {
  // Workload.
  std::int64_t requests = 0, admitted = 0, completed = 0, steps = 0;
  std::int64_t transfer_steps = 0;  ///< steps with commands (the others launch no transfer)
  std::int64_t hits = 0, misses = 0, restored_tokens = 0, prompt_tokens = 0;
  std::int64_t prefill_tokens = 0, decode_tokens = 0;
  // Commands.
  std::array<std::int64_t, 6> issued{}, applied{}, failed{};  ///< by Kind (batch.hpp)
  std::int64_t checkpoint_snapshots = 0, completion_snapshots = 0, restore_fallbacks = 0;
  std::array<std::int64_t, 8> errors{};                    ///< by combined code 0..6; 7: other
  std::int64_t row_bytes_moved = 0, page_bytes_moved = 0;  ///< this rank's shard
  std::int64_t total_bytes_moved = 0;                      ///< all ranks
  std::int64_t snapshot_bytes = 0,
               total_snapshot_bytes = 0;  ///< applied snapshots' rows and pages: this rank, all ranks
  // Prefix cache.
  std::int64_t cache_published = 0, cache_evictions = 0, cache_reservations = 0, cache_refused = 0, cache_releases = 0;
  // Host tier (--host-snapshot-rows): hits by the tier that served them, restores
  // from host rows that applied, moves, and this rank's bytes across the tiers.
  std::int64_t device_hits = 0, host_hits = 0, host_restores = 0;
  std::int64_t demotions = 0, promotions = 0, host_evictions = 0, host_published = 0;
  std::int64_t bytes_to_host = 0, bytes_from_host = 0;
  // Speculative decoding (--spec-tokens): commits by combined code, the steps
  // whose batch held commits, the scheduler's verify counts (scheduler.hpp),
  // and the bytes applied commits moved (this rank, all ranks: 0 with the remap).
  std::array<std::int64_t, 8> commit_errors{};
  std::int64_t commit_steps = 0, steps_verifying = 0;  ///< steps with commits in their batch, steps that verified
  std::int64_t verifies = 0, drafted_tokens = 0, verified_tokens = 0, committed_tokens = 0, accepted_drafts = 0;
  std::int64_t commit_fallbacks = 0, verify_pauses = 0;
  std::array<std::int64_t, 8> accepted_histogram{};
  std::int64_t commit_bytes = 0, total_commit_bytes = 0;
  // Faults (faults_refused: injected faults whose every command was refused on every rank).
  std::int64_t faults_injected = 0, faults_refused = 0, faults_missed = 0;
  // Verification.
  std::int64_t verify_steps = 0, verify_full = 0;
  bool verify_ok = true;
  std::string verify_message;
  bool cross_rank_ok = true;
  // Simulated time: the clock at the end, each admission's wait since its arrival.
  double sim_ms = 0;
  std::int64_t queued = 0;  ///< admissions that waited
  std::vector<float> queue_ms;
  // The model's writes (this rank): recurrent state, KV and draft entries.
  std::int64_t model_state_bytes = 0, model_token_bytes = 0;
  // Timing. The host's share of a step: scheduling (planning, taking the codes,
  // advancing the requests), uploads (tables, batch), the transfer, reading the
  // codes back, the model's fills on the device.
  double wall_s = 0, transfer_s = 0, model_s = 0, verify_s = 0;
  double schedule_s = 0, upload_s = 0, readback_s = 0, fill_s = 0;
  std::vector<float> transfer_us, step_us;
  std::vector<std::int32_t> step_commands;
  // Geometry, for the report.
  std::int64_t rows = 0, row_bytes = 0, pages = 0, width = 0, memory_bytes = 0, host_memory_bytes = 0;
  std::string backend, combiner;
  int ranks = 1;
  bool graphs = false;
};

}  // namespace statexfer::sim

#endif
