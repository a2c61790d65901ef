#ifndef STATEXFER_SIM_FAULTS_HPP
#define STATEXFER_SIM_FAULTS_HPP

// Rank-local faults (--inject-fault): for one batch, one rank sees a command's
// partial page unmapped, a commit's accepted position row at a stale endpoint,
// an accepted count out of range or other than the other ranks', or a
// restore's source row holding another prefix's key; so that the command fails
// on that rank (or, for a disagreeing count, in the combiner) and the error
// combiner must make it fail on every rank. Each change is undone after the
// batch: the commands it touches are refused, so nothing it changed is written.
// offload-race is no view but a schedule (the scheduler issues a snapshot into
// a row its offload still reads, on every rank): row claims refuse it.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "batch.hpp"
#include "geometry.hpp"
#include "sim_config.hpp"
#include "state_rows.hpp"

namespace statexfer::sim {

/// One rank-local change of a fault, made before the transfer and undone after it.
struct FaultPatch {
  enum Target { page, accepted, pool_word, host_word };
  int rank = 0;
  Target target = page;
  std::int64_t index = 0;     ///< page, accepted: the request slot; a word: the pool (host-tier) row
  std::int64_t at = 0;        ///< page: the logical page; a word: its byte offset in the row
  std::int64_t value = 0;     ///< what the faulted rank sees
  std::int64_t original = 0;  ///< what it holds otherwise
};

/// The faults of one step; every rank knows all of them.
struct StepFaults {
  struct Hit {
    std::size_t fault;     ///< index in FaultInjector::faults()
    int rank;              ///< the rank it changes
    std::int64_t command;  ///< the command row it makes fail
    bool race = false;     ///< offload-race: code 7, or 0 where the offload finished first
  };
  std::vector<Hit> hits;
  std::vector<FaultPatch> patches;  ///< of every rank

  bool hit(std::int64_t command) const {
    for (const auto& h : hits)
      if (h.command == command) return true;
    return false;
  }
  bool raced(std::int64_t command) const {
    for (const auto& h : hits)
      if (h.command == command && h.race) return true;
    return false;
  }
};

/// --inject-fault's RANK:STEP[:KIND]; std::invalid_argument saying what it expected.
Fault parse_fault(const std::string& text);
/// "any", "snapshot", "restore", "host-restore", "stale-position", "accepted-range",
/// "accepted-disagree", "recycled-key", "offload-race": the KIND of --inject-fault.
std::string fault_kind_name(const Fault& f);
/// The kind of command a fault hit: "snapshot", "restore", "restore from host", "commit", ...
std::string hit_name(const Fault& f);

class FaultInjector {
 public:
  FaultInjector(std::vector<Fault> faults, int rank, const Geometry& geometry)
      : faults_(std::move(faults)), rank_(rank), g_(geometry) {}

  /// Each fault due at `step` and not injected yet takes the first command it
  /// can change that no other fault took: a page fault a copy of its kind with
  /// a partial page; a commit fault a commit (accepted-disagree: one with a
  /// draft, so that another valid count exists); recycled-key a restore (and
  /// every other command of the batch that reads the same row). `tables` are
  /// the host page tables, `state_rows` the scheduler's mirror.
  StepFaults inject(std::int64_t step, const Batch& batch, const std::vector<std::int32_t>& tables,
                    const HostStateRows& state_rows);
  /// Whether the scheduler is to issue an offload-race snapshot at `step`: one
  /// is due and no other fault is (so no rank's view is changed beside it).
  bool race_due(std::int64_t step) const;
  /// The combined codes of the step's batch: each fault's code and whether
  /// every command it hit was refused.
  void record(const StepFaults& step, const std::vector<std::int32_t>& codes);
  /// Whether an injected fault ended as the contract says: refused on every
  /// rank; an offload-race refused with code 7, or applied (code 0) where the
  /// offload had finished before the snapshot's validation.
  static bool settled(const Fault& f);
  /// Injected faults that settled so.
  std::int64_t settled() const;

  std::int64_t injected() const { return injected_; }
  /// Faults that found no command.
  std::int64_t missed() const;
  /// Injected faults whose every command was refused.
  std::int64_t refused() const;
  /// The faults with the step and command each hit.
  const std::vector<Fault>& faults() const { return faults_; }

 private:
  std::vector<Fault> faults_;
  int rank_;
  const Geometry& g_;
  std::int64_t injected_ = 0;
};

}  // namespace statexfer::sim

#endif
