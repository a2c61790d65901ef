#ifndef STATEXFER_SIM_SIM_CONFIG_HPP
#define STATEXFER_SIM_SIM_CONFIG_HPP

// The simulator's configuration: what the command line sets.

#include <cstdint>
#include <vector>

#include "batch.hpp"
#include "policy.hpp"

namespace statexfer::sim {

/// What an injected fault does on its rank (faults.hpp says which command each takes).
enum class FaultType {
  page,               ///< a command's partial page unmapped in the page table (code 6)
  stale_position,     ///< a commit's accepted position row left at another endpoint (code 3)
  accepted_range,     ///< the sampler writes K + 1 as a commit's accepted count (code 2)
  accepted_disagree,  ///< the sampler writes another valid count (code 3 through the combiner)
  recycled_key,       ///< a restore's source row holds another prefix's key (code 3)
  offload_race,       ///< a snapshot into a row being offloaded, without waiting (code 7, or 0 after the offload)
};

/// --inject-fault RANK:STEP[:KIND]: from step STEP on, the first command of
/// its kind that the fault can take finds, on rank RANK only, its partial page
/// unmapped (KIND snapshot, restore, host-restore (a restore from the host
/// tier), any: the default), or (speculative decoding, prefix keys) a stale
/// position row, a bad accepted count, or a recycled source row; or, on every
/// rank (a schedule, not a view), a snapshot that does not wait for the
/// offload of its row (offload-race).
struct Fault {
  int rank = 0;
  std::int64_t step = 0;
  int kind = -1;      ///< page faults: kind_snapshot, kind_restore, or -1: any
  bool host = false;  ///< page faults: only restores from the host tier (operation 4), else operation 0
  FaultType type = FaultType::page;
  std::int64_t injected_step = -1;  ///< the step it hit (-1: not yet)
  std::int64_t command = -1;        ///< the (first) command row it hit
  int hit_kind = -1;                ///< its Kind (batch.hpp)
  std::int32_t op = -1;             ///< its operation
  std::int64_t slot = -1;           ///< its request slot (-1: a tier move)
  std::int64_t commands = 0;        ///< command rows it hit (a recycled row: every reader of it)
  std::int32_t code = -1;           ///< the combined code of the command it hit
  bool refused = false;             ///< every command it hit was refused (on every rank)
};

struct SimConfig {
  // Pool and model geometry (whole model; each rank holds a shard).
  std::int64_t capacity = 64;           ///< request slots = command capacity C
  std::int64_t snapshot_rows = 256;     ///< rows of the prefix cache
  std::int64_t host_snapshot_rows = 0;  ///< host-tier rows of the prefix cache (0: no host tier)
  bool tier_stream = true;              ///< host-tier moves in batches of their own on a stream of their own
  std::int64_t tier_teams = 0;          ///< their apply()'s league (0: 1/12 of the SMs on GPUs, the default on hosts)
  int staged_units = 0;      ///< the step's apply(): options.expert.compact_staged (0 the default, 1 on, -1 off)
  int handed_out_units = 0;  ///< the step's apply(): options.expert.compact_handout (0 the default, 1 on, -1 off)
  std::int64_t page_tokens = 16;
  std::int64_t row_bytes = 32768;  ///< recurrent (SSM + conv) state bytes per row
  std::int64_t kv_planes = 2;
  std::int64_t kv_token_bytes = 128;  ///< per token and attention plane
  std::int64_t draft_planes = 1;
  std::int64_t draft_token_bytes = 64;
  std::int64_t scratch_bytes = 64;  ///< excluded region (engine scratch, never copied)
  std::int64_t pages = 0;           ///< physical pages per cache; 0: capacity x page-table width
  // Speculative decoding (--spec-tokens K > 0, sim/README.md "Speculative decoding").
  std::int64_t spec_tokens = 0;   ///< K: drafts a decode step verifies (0: plain decoding, 1..7)
  double accept_rate = 0.7;       ///< each draft accepted with this probability until the first rejection
  std::uint64_t accept_seed = 1;  ///< the acceptance model's seed (--seed)
  bool commit_copy = false;       ///< --commit-move copy (default remap)
  bool prefix_keys = false;       ///< a prefix_key region without speculative decoding (always with it)
  // Scheduling.
  std::int64_t chunk = 512;         ///< prefill tokens per request and step
  std::int64_t step_tokens = 8192;  ///< tokens per step over all requests
  std::int64_t lookahead = 256;     ///< requests the admission scans for one whose parent is done
  bool completion_snapshots = true;
  SnapshotPolicy policy;            ///< where prefixes are snapshotted (policy.hpp)
  std::int64_t block_tokens = 512;  ///< the block policies' blocks (a hashed trace's blocks)
  bool model_writes_all = false;    ///< write every advanced row and token, not only what commands read
  // Simulated time: a step lasts step_ms + its computed tokens / tokens_per_ms;
  // a trace's arrivals are its timestamps x time_scale.
  double tokens_per_ms = 40;
  double step_ms = 5;
  double time_scale = 1;
  // Run.
  bool verify = false;
  std::int64_t verify_full_every = 50;  ///< full cache comparison every N steps (and at the end)
  bool graphs = true;                   ///< CUDA: replay captured graphs
  bool combine = true;                  ///< tensor parallel: combine errors (off only to show why it is needed)
  std::vector<Fault> faults;
  int tp = 1;
  std::int64_t max_steps = 0;   ///< stop after N steps (0: run to completion)
  std::int64_t probe_mib = -1;  ///< the start-up rate probe's MiB (-1: default_probe_bytes(); 0: none)
};

}  // namespace statexfer::sim

#endif
