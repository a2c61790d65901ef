#ifndef STATEXFER_SIM_STATS_HPP
#define STATEXFER_SIM_STATS_HPP

// Counters and timings of one simulation run (kept by the Engine alone).

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "limit.hpp"

namespace statexfer::sim {

/// Codes are counted by value 0..7 (statexfer::CommandError up to row_in_use;
/// the simulator issues no imports, whose codes 8..11 would be "other"), then
/// any other value in one slot.
inline constexpr int code_slots = 9;
inline constexpr int code_slot(std::int32_t code) { return code >= 0 && code < code_slots - 1 ? code : code_slots - 1; }

struct Stats {
  // Workload.
  std::int64_t requests = 0, admitted = 0, completed = 0, steps = 0;
  std::int64_t transfer_steps = 0;  ///< steps with commands (the others launch no transfer)
  std::int64_t hits = 0, misses = 0, restored_tokens = 0, prompt_tokens = 0;
  std::int64_t prefill_tokens = 0, decode_tokens = 0;
  // Commands.
  std::array<std::int64_t, 6> issued{}, applied{}, failed{};  ///< by Kind (batch.hpp)
  std::int64_t checkpoint_snapshots = 0, completion_snapshots = 0, restore_fallbacks = 0;
  std::array<std::int64_t, code_slots> errors{};           ///< by combined code 0..7; 8: other
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
  std::array<std::int64_t, code_slots> commit_errors{};
  std::int64_t commit_steps = 0, steps_verifying = 0;  ///< steps with commits in their batch, steps that verified
  std::int64_t verifies = 0, drafted_tokens = 0, verified_tokens = 0, committed_tokens = 0, accepted_drafts = 0;
  std::int64_t commit_fallbacks = 0, verify_pauses = 0;
  std::array<std::int64_t, 8> accepted_histogram{};
  std::int64_t commit_bytes = 0, total_commit_bytes = 0;
  // Faults (faults_refused: injected faults whose every command was refused on
  // every rank; faults_settled: those that ended as the contract says, faults.hpp).
  std::int64_t faults_injected = 0, faults_refused = 0, faults_missed = 0, faults_settled = 0;
  // The limit (limit.hpp): this device's rates, probed at start-up, and the
  // bytes of the applied commands of the step's batches (on the step's stream:
  // the critical path) and of the tier stream's batches, this rank's.
  CopyRates rates;
  MovedBytes step_moved, tier_moved;
  std::string clock;  ///< how critical_us and tier_us are measured (stream_events.hpp)
  // The host tier's moves: "stream" (batches of their own on their own stream),
  // "step" (in the step's batch) or "" (no tier); the tier batches' league; the
  // launches of tier batches (a step's onloads and offloads); restores that read
  // a row an onload in flight writes, and the steps whose transfer waited for
  // onloads; the host's waits for the tier batches, a step after their launch.
  std::string tier_moves;
  std::int64_t tier_teams = 0, tier_launches = 0, restores_after_onload = 0, steps_after_onload = 0;
  double tier_wait_s = 0;
  std::vector<float> tier_us, tier_limit_us;  ///< per tier launch: its stream's time, its limit
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
  // advancing the requests), uploads (tables, batch), the tier batches' launch,
  // the transfer, reading the codes back, the model's fills on the device.
  double wall_s = 0, transfer_s = 0, model_s = 0, verify_s = 0;
  double schedule_s = 0, upload_s = 0, readback_s = 0, fill_s = 0;
  double tier_s = 0;  ///< launching the tier batches (hosts: running them)
  std::vector<float> transfer_us, step_us;
  /// Per step: the time the step's stream spent in its transfer (the critical
  /// path: waits for tier batches included) and the limit of its bytes; 0
  /// without commands.
  std::vector<float> critical_us, limit_us;
  std::vector<std::int32_t> step_commands;
  // Geometry, for the report.
  std::int64_t rows = 0, row_bytes = 0, pages = 0, width = 0, memory_bytes = 0, host_memory_bytes = 0;
  std::string backend, combiner, step_launch;  ///< step_launch: the step transfer's launch_summary()
  int ranks = 1;
  bool graphs = false;
};

}  // namespace statexfer::sim

#endif
