#ifndef STATEXFER_SIM_POLICY_HPP
#define STATEXFER_SIM_POLICY_HPP

// Snapshot policies (--snapshot-policy): where a request's prefix state is
// snapshotted, and which prefix endpoints its admission looks up.
//
//   ends     the workload's exact endpoints: the request's end (the whole
//            sequence, unless --no-completion-snapshots) and the ends of the
//            spans its structure names: the prefix document's end and every
//            earlier turn's end (synthetic, own-format traces), or the prompt's
//            end (block-hashed traces, where a later prompt may extend it).
//   all      every block boundary a prefill chunk reaches (vLLM
//            mamba_cache_mode "all").
//   last     the prompt's last block boundary (vLLM "align").
//   every:N  every N-th block boundary of the prompt.
//
// Block boundaries are the multiples of the block size (--trace-block-tokens)
// up to and with the prompt's end. Admission looks up, longest first, the
// policy's lookup points below the prompt's end: for the block policies every
// block boundary (a prefix another request snapshotted under any block policy),
// for `ends` the endpoints that another request's snapshots can have.

#include <cstdint>
#include <string>
#include <vector>

#include "workload.hpp"

namespace statexfer::sim {

struct SnapshotPolicy {
  enum Kind { ends, all, last, every };
  Kind kind = ends;
  std::int64_t every_blocks = 1;  ///< every:N

  /// "ends", "all", "last" or "every:N" (N >= 1); std::invalid_argument naming --snapshot-policy.
  static SnapshotPolicy parse(const std::string& text);
  std::string name() const;
};

/// One request's points, each list ascending.
struct RequestPoints {
  /// Endpoints whose state is snapshotted when the request reaches them (once a
  /// row is reserved): below the request's end a checkpoint, at it a completion.
  std::vector<std::int64_t> snapshots;
  /// Endpoints below the prompt's end that admission looks up.
  std::vector<std::int64_t> lookups;
};

/// The points of `request` under `policy`, with blocks of `block_tokens`;
/// `completion`: snapshot the request's end (policy `ends` only).
RequestPoints request_points(const SnapshotPolicy& policy, const Workload& w, std::int64_t request,
                             std::int64_t block_tokens, bool completion);

}  // namespace statexfer::sim

#endif
