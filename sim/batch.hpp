#ifndef STATEXFER_SIM_BATCH_HPP
#define STATEXFER_SIM_BATCH_HPP

// One step's commands as the host builds them: statexfer::Command rows (the
// library's type, built with its named constructors), each with what the
// scheduler needs to take its code back.

#include <cstdint>
#include <vector>

#include <statexfer/commands.hpp>

namespace statexfer::sim {

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
  /// A restore from a device row that an onload in flight writes: the step's
  /// transfer waits for the onloads (tier stream).
  bool after_onload = false;
  /// A snapshot into a device row that an offload in flight reads, issued
  /// without waiting for it (--inject-fault offload-race): row claims refuse it
  /// (code 7) unless the offload has finished.
  bool race = false;
};
using Batch = std::vector<BatchEntry>;

}  // namespace statexfer::sim

#endif
