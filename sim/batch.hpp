#ifndef STATEXFER_SIM_BATCH_HPP
#define STATEXFER_SIM_BATCH_HPP

// One step's commands as the host builds them.

#include <cstdint>
#include <vector>

namespace statexfer::sim {

/// One command row: request slot, source and destination rows, operation (0
/// copy, 1 reset) and expected consumed tokens (the prefix endpoint).
struct Command {
  std::int64_t slot = -1, src = -1, dst = -1;
  std::int32_t op = 0;
  std::int64_t end = -1;
};

enum Kind { kind_snapshot = 0, kind_restore = 1, kind_reset = 2 };
inline const char* kind_name(int k) {
  return k == kind_snapshot ? "snapshot" : k == kind_restore ? "restore" : "reset";
}

struct BatchEntry {
  Command cmd;
  int kind;
  std::int64_t slot;
};
using Batch = std::vector<BatchEntry>;

}  // namespace statexfer::sim

#endif
