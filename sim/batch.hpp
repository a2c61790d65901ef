#ifndef STATEXFER_SIM_BATCH_HPP
#define STATEXFER_SIM_BATCH_HPP

// One step's commands as the host builds them.

#include <cstdint>
#include <vector>

namespace statexfer::sim {

/// One command row: request slot, source and destination rows, operation (0
/// copy, 1 reset; with a host tier 2 offload, 3 onload, 4 restore from a host
/// row) and expected consumed tokens (the prefix endpoint).
struct Command {
  std::int64_t slot = -1, src = -1, dst = -1;
  std::int32_t op = 0;
  std::int64_t end = -1;
};

/// A restore from the host tier is a kind_restore with operation 4; offloads
/// and onloads move prefix-cache rows between the tiers (no request slot).
enum Kind { kind_snapshot = 0, kind_restore = 1, kind_reset = 2, kind_offload = 3, kind_onload = 4 };
inline constexpr int kind_count = 5;
inline const char* kind_name(int k) {
  return k == kind_snapshot  ? "snapshot"
         : k == kind_restore ? "restore"
         : k == kind_reset   ? "reset"
         : k == kind_offload ? "offload"
                             : "onload";
}

struct BatchEntry {
  Command cmd;
  int kind;
  std::int64_t slot;  ///< the request slot; for an offload or onload, its index in the step's moves
};
using Batch = std::vector<BatchEntry>;

}  // namespace statexfer::sim

#endif
