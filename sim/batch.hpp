#ifndef STATEXFER_SIM_BATCH_HPP
#define STATEXFER_SIM_BATCH_HPP

// One step's commands as the host builds them.

#include <cstdint>
#include <vector>

namespace statexfer::sim {

/// One command row: request slot, source and destination rows, operation (0
/// copy, 1 reset; with a host tier 2 offload, 3 onload, 4 restore from a host
/// row; with speculative decoding 5 commit), expected consumed tokens (the
/// prefix endpoint; a commit: the live row's after the verify) and the prefix
/// key (read with a prefix_key region: stamped by a snapshot, proved by reads).
struct Command {
  std::int64_t slot = -1, src = -1, dst = -1;
  std::int32_t op = 0;
  std::int64_t end = -1;
  std::int64_t key = 0;
};

/// A restore from the host tier is a kind_restore with operation 4; offloads
/// and onloads move prefix-cache rows between the tiers (no request slot); a
/// commit makes a verify step's accepted position live (docs/CONTRACT.md §13).
enum Kind { kind_snapshot = 0, kind_restore = 1, kind_reset = 2, kind_offload = 3, kind_onload = 4, kind_commit = 5 };
inline constexpr int kind_count = 6;
inline const char* kind_name(int k) {
  return k == kind_snapshot  ? "snapshot"
         : k == kind_restore ? "restore"
         : k == kind_reset   ? "reset"
         : k == kind_offload ? "offload"
         : k == kind_onload  ? "onload"
                             : "commit";
}

struct BatchEntry {
  Command cmd;
  int kind;
  std::int64_t slot;  ///< the request slot; for an offload or onload, its index in the step's moves
  /// A commit: the drafts its verify ran (K') and how many the sampler accepted
  /// (what the host knows of the device's accepted count).
  std::int32_t drafts = 0, accepted = -1;
};
using Batch = std::vector<BatchEntry>;

}  // namespace statexfer::sim

#endif
