#ifndef STATEXFER_SIM_FAULTS_HPP
#define STATEXFER_SIM_FAULTS_HPP

// Rank-local faults (--inject-fault): a command's partial page unmapped in one
// rank's page table for one step, so that it fails on that rank only and the
// error combiner must make it fail on every rank.

#include <cstdint>
#include <utility>
#include <vector>

#include "batch.hpp"
#include "sim_config.hpp"

namespace statexfer::sim {

/// The faults of one step; every rank knows all of them.
struct StepFaults {
  std::vector<std::pair<int, std::int64_t>> commands;           ///< (rank, command row) faulted
  std::vector<std::pair<std::int64_t, std::int64_t>> unmapped;  ///< (slot, logical page) to unmap on this rank

  bool hits(std::int64_t command) const {
    for (const auto& f : commands)
      if (f.second == command) return true;
    return false;
  }
};

class FaultInjector {
 public:
  FaultInjector(std::vector<Fault> faults, int rank, std::int64_t page_tokens)
      : faults_(std::move(faults)), rank_(rank), page_tokens_(page_tokens) {}

  /// Each fault due at `step` and not injected yet takes the first command of
  /// its kind with a partial page that no other fault took.
  StepFaults inject(std::int64_t step, const Batch& batch);

  std::int64_t injected() const { return injected_; }
  /// Faults that found no command.
  std::int64_t missed() const;
  /// The faults with the step and command each hit.
  const std::vector<Fault>& faults() const { return faults_; }

 private:
  std::vector<Fault> faults_;
  int rank_;
  std::int64_t page_tokens_;
  std::int64_t injected_ = 0;
};

}  // namespace statexfer::sim

#endif
