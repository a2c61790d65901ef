#ifndef STATEXFER_SIM_PD_HPP
#define STATEXFER_SIM_PD_HPP

// statexfer-sim --pd: prefill/decode disaggregation (issue 31, sim/README.md
// "Prefill/decode"). MPI ranks [0, P) are the prefill instance (TP P), ranks
// [P, P + D) the decode instance (TP D); each shards the model's row as the
// model description says (statexfer::ModelLayout of test_common/models.hpp).
// Every step the decode instance pulls up to C requests it does not hold in
// its own prefix cache; the prefill instance prefills them (restoring and
// snapshotting its prefix cache), exports their rows, the WireTransport (MPI,
// or NCCL with --pd-transport nccl) moves the records, the decode instance
// imports them, combines the codes across its ranks, decodes, and snapshots
// completions into its prefix cache.

#include <cstdint>
#include <string>
#include <vector>

#include <statexfer/sharding.hpp>

namespace statexfer::sim {

/// What --inject-fault does under --pd, on decode rank RANK, from step STEP on,
/// to the first request that step pulls: each must be refused on every decode
/// rank (the combined code), write nothing, and the request be recomputed.
enum class PdFaultType {
  flipped_byte,   ///< a payload byte of a record flipped in flight (code 10)
  other_layout,   ///< a record stamped with another model's fingerprint (code 8)
  stale_key,      ///< the import names a stale prefix key (code 9)
  missing_slice,  ///< a record's slice table leaves a range out (code 11)
};
const char* to_string(PdFaultType type);

struct PdFault {
  int rank = 0;  ///< decode rank (0-based in the decode group)
  std::int64_t step = 0;
  PdFaultType type = PdFaultType::flipped_byte;
  // Outcome (filled on every rank).
  std::int64_t injected_step = -1, request = -1;
  std::int32_t code = -1;        ///< the combined code every decode rank read
  bool refused = false;          ///< refused on every decode rank
  bool untouched = false;        ///< its row unchanged, or landed unpublished, on every decode rank
  std::int64_t recomputed = -1;  ///< the step its request was moved again and imported
};

/// "RANK:STEP:KIND" with KIND flipped-byte, other-layout, stale-key or missing-slice.
PdFault parse_pd_fault(const std::string& text);

/// What moves the records between the instances (--pd-transport).
enum class PdTransport {
  mpi,   ///< statexfer's MPI WireTransport (host-staged on GPUs unless MPI is CUDA-aware)
  nccl,  ///< its NCCL WireTransport (CUDA builds with NCCL; one GPU a rank): ncclSend/ncclRecv on the stream
};

struct PdConfig {
  bool enabled = false;
  PdTransport transport = PdTransport::mpi;
  int prefill_tp = 1, decode_tp = 1;
  std::int64_t layers = 0;       ///< stand-in: recurrent layers kept (0: the model's own)
  std::int64_t capacity = 8;     ///< requests moved per step (C of the transfers and wires)
  std::int64_t cache_rows = 32;  ///< prefix-cache rows on each side
  std::int64_t plain_reps = 5;   ///< repetitions of the plain send/recv measured at the end
  std::vector<PdFault> faults;
};

/// What a --pd run counts, summed (or, for times, the slowest) over the ranks.
struct PdStats {
  std::int64_t requests = 0, steps = 0, transfers = 0;  ///< transfers: steps that moved records
  std::int64_t moved = 0;                               ///< requests imported (code 0)
  std::int64_t refused = 0;                             ///< imports refused (each recomputed and moved again)
  std::int64_t unexpected = 0;                          ///< refusals and export or cache codes no fault explains
  std::int64_t decode_hits = 0;                         ///< requests the decode instance restored from its own cache
  std::int64_t prefill_hits = 0, restored_tokens = 0, computed_tokens = 0, prompt_tokens = 0;
  std::int64_t prefill_snapshots = 0, decode_snapshots = 0, prefill_evictions = 0, decode_evictions = 0;
  std::int64_t bytes = 0;         ///< moved by the transport (every prefill rank's sends)
  std::int64_t record_bytes = 0;  ///< one request's records, all pairs
  std::int64_t rows_verified = 0, mismatches = 0;
  double transfer_s = 0;                      ///< from a barrier to the last record received, every transfer
  double plain_gbps = 0, transport_gbps = 0;  ///< C records both ways, measured at the end of the run
  std::int64_t probe_bytes = 0;               ///< bytes of one such measurement (all pairs)
  double wall_s = 0;
};

/// The model's description at `page_tokens` with a prefix key; `layers` > 0
/// keeps that many recurrent layers and the same share of attention layers
/// (at least one where the model has any): a stand-in that says it is one.
statexfer::ModelLayout pd_model(const std::string& name, std::int64_t layers, std::int64_t page_tokens,
                                std::string* description);

}  // namespace statexfer::sim

#endif
