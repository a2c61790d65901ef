#ifndef STATEXFER_SIM_STATS_HPP
#define STATEXFER_SIM_STATS_HPP

// Configuration, counters and timings of one simulation run.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace sim {

/// --inject-fault RANK:STEP[:KIND]: from step STEP on, the first command (of
/// KIND: snapshot or restore; any by default) with a partial page finds that
/// page unmapped in rank RANK's page table (rank-local).
struct Fault {
  int rank = 0;
  std::int64_t step = 0;
  int kind = -1;                    ///< kind_snapshot, kind_restore, or -1: any
  std::int64_t injected_step = -1;  ///< the step it hit (-1: not yet)
  std::int64_t command = -1;        ///< the command row it hit
};

struct SimConfig {
  // Pool and model geometry (whole model; each rank holds a shard).
  std::int64_t capacity = 64;          ///< request slots = command capacity C
  std::int64_t snapshot_rows = 256;    ///< rows of the prefix cache
  std::int64_t page_tokens = 16;
  std::int64_t row_bytes = 32768;      ///< recurrent (SSM + conv) state bytes per row
  std::int64_t kv_planes = 2;
  std::int64_t kv_token_bytes = 128;   ///< per token and attention plane
  std::int64_t draft_planes = 1;
  std::int64_t draft_token_bytes = 64;
  std::int64_t scratch_bytes = 64;     ///< excluded region (engine scratch, never copied)
  std::int64_t pages = 0;              ///< physical pages per cache; 0: capacity x page-table width
  // Scheduling.
  std::int64_t chunk = 512;            ///< prefill tokens per request and step
  std::int64_t step_tokens = 8192;     ///< tokens per step over all requests
  std::int64_t lookahead = 256;        ///< requests the admission scans for one whose parent is done
  bool completion_snapshots = true;
  // Run.
  bool verify = false;
  std::int64_t verify_full_every = 50;  ///< full cache comparison every N steps (and at the end)
  bool graphs = true;                   ///< CUDA: replay captured graphs
  bool combine = true;                  ///< tensor parallel: combine errors (off only to show why it is needed)
  std::vector<Fault> faults;
  int tp = 1;
  std::int64_t max_steps = 0;           ///< stop after N steps (0: run to completion)
};

enum Kind { kind_snapshot = 0, kind_restore = 1, kind_reset = 2 };
inline const char* kind_name(int k) { return k == kind_snapshot ? "snapshot" : k == kind_restore ? "restore" : "reset"; }

struct Stats {
  // Workload.
  std::int64_t requests = 0, admitted = 0, completed = 0, steps = 0;
  std::int64_t hits = 0, misses = 0, restored_tokens = 0, prompt_tokens = 0;
  std::int64_t prefill_tokens = 0, decode_tokens = 0;
  // Commands.
  std::array<std::int64_t, 3> issued{}, applied{}, failed{};
  std::int64_t checkpoint_snapshots = 0, completion_snapshots = 0, restore_fallbacks = 0;
  std::array<std::int64_t, 8> errors{};  ///< by combined code 0..6; 7: other
  std::int64_t row_bytes_moved = 0, page_bytes_moved = 0;  ///< this rank's shard
  std::int64_t total_bytes_moved = 0;                      ///< all ranks
  // Prefix cache.
  std::int64_t cache_published = 0, cache_evictions = 0, cache_reservations = 0, cache_refused = 0,
               cache_releases = 0;
  // Faults.
  std::int64_t faults_injected = 0, fault_commands_refused = 0, faults_missed = 0;
  // Verification.
  std::int64_t verify_steps = 0, verify_full = 0;
  bool verify_ok = true;
  std::string verify_message;
  bool cross_rank_ok = true;
  // Timing.
  double wall_s = 0, transfer_s = 0, model_s = 0, verify_s = 0;
  std::vector<float> transfer_us, step_us;
  std::vector<std::int32_t> step_commands;
  // Geometry, for the report.
  std::int64_t rows = 0, row_bytes = 0, pages = 0, width = 0, memory_bytes = 0;
  std::string backend, combiner;
  int ranks = 1;
  bool graphs = false;
};

}  // namespace sim

#endif
