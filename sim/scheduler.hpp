#ifndef STATEXFER_SIM_SCHEDULER_HPP
#define STATEXFER_SIM_SCHEDULER_HPP

// Scheduling and page allocation: request slots, admission (first come, first
// served once arrived, a request after its parent), KV and draft pages
// allocated for a request's whole length, the prefix cache and the snapshot
// policy, each step's batch of snapshots, restores, resets and (speculative
// decoding) commits, what their codes mean for the requests, which requests the
// model advances within the step's token budget, the host's mirror of the
// state rows, and the simulated clock.

#include <array>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "batch.hpp"
#include "geometry.hpp"
#include "model.hpp"
#include "prefix_cache.hpp"
#include "sim_config.hpp"
#include "state_rows.hpp"
#include "workload.hpp"

namespace statexfer::sim {

/// What the scheduler did so far.
struct SchedulerCounts {
  std::int64_t admitted = 0, completed = 0, hits = 0, misses = 0, queued = 0;
  std::int64_t device_hits = 0, host_hits = 0;  ///< hits by the tier that served them
  std::int64_t prompt_tokens = 0, restored_tokens = 0, prefill_tokens = 0, decode_tokens = 0;
  std::int64_t checkpoint_snapshots = 0, completion_snapshots = 0, restore_fallbacks = 0;
  // Speculative decoding: verify steps of requests, the drafts they ran, the
  // tokens they verified (1 + drafts each) and committed (1 + accepted, or 1
  // when the commit was refused), the drafts accepted by applied commits,
  // refused commits, and verifies paused for a snapshot at a committed endpoint.
  std::int64_t verifies = 0, drafted_tokens = 0, verified_tokens = 0, committed_tokens = 0, accepted_drafts = 0;
  std::int64_t commit_fallbacks = 0, verify_pauses = 0;
  std::array<std::int64_t, 8> accepted_histogram{};  ///< applied commits by accepted count 0..7
};

class Scheduler {
 public:
  Scheduler(const SimConfig& cfg, const Workload& workload, const Geometry& geometry);

  /// This step's commands: the snapshots the last model step planned (once
  /// their row is ready), resets of requests whose restore failed, the commits
  /// of the last step's verifies, the prefix cache's moves between tiers, then
  /// admissions while slots and pages last. With the tier stream the moves go
  /// to onload_batch() and offload_batch() instead (taken first: a step's
  /// admissions read what its onloads write, after them); `race`: one snapshot
  /// into a row this step offloads is issued without waiting for the offload
  /// (--inject-fault offload-race).
  const Batch& plan_batch(bool race = false);
  /// The tier stream's batches of this step (empty without it).
  const Batch& onload_batch() const { return onloads_; }
  const Batch& offload_batch() const { return offloads_; }
  /// Whether the host-tier moves run in batches of their own.
  bool tier_stream() const { return tier_stream_; }
  /// The codes of the last tier batches (combined over the ranks), a step
  /// after they were issued: the moves' rows change hands.
  void take_tier_results(const std::vector<std::int32_t>& onload_codes, const std::vector<std::int32_t>& offload_codes);
  /// The batch's codes (combined over the ranks): publish or release snapshot
  /// rows, start restored or reset requests, retry failed ones from the start,
  /// advance committed requests (and follow remapping commits in the mirror).
  void take_results(const std::vector<std::int32_t>& codes);
  /// Advances the running requests (decode first, then prefill chunks) within
  /// the step's token budget; `model` gets what they compute (with
  /// --model-writes read, only the bytes a later command reads: a row at its
  /// snapshot points, the KV entries of the pages a snapshot saves). Requests
  /// that finish are snapshotted next step or freed now. The clock advances by
  /// the step's duration.
  void advance_requests(Model& model);

  /// Host page tables, [capacity, width] (-1: unmapped), and the slots whose
  /// rows of them changed since the last call.
  const std::vector<std::int32_t>& page_tables() const { return tables_; }
  const std::vector<std::int32_t>& draft_tables() const { return draft_tables_; }
  std::vector<std::int64_t> take_changed_slots() {
    std::vector<std::int64_t> out;
    out.swap(changed_slots_);
    for (std::int64_t s : out) slot_changed_[static_cast<std::size_t>(s)] = 0;
    return out;
  }

  /// The host's mirror of the state rows: column 0 each slot's live row (a
  /// remapping commit swaps it with a position row), columns 1..K its position
  /// rows. Every command names live rows from here.
  const HostStateRows& state_rows() const { return rows_; }
  std::int64_t live_row(std::int64_t slot) const { return rows_.live(slot); }

  const SchedulerCounts& counts() const { return counts_; }
  const PrefixCache& prefix_cache() const { return cache_; }
  /// Simulated milliseconds since the start.
  double now_ms() const { return now_ms_; }
  /// Each admitted request's wait from its arrival to its admission (simulated ms).
  const std::vector<float>& queue_delays_ms() const { return queue_ms_; }

 private:
  struct Pending {
    PrefixKey key;
    std::int64_t row = -1;
    bool completion = false;
  };
  /// A verify step whose commit is in the next batch: the live row's endpoint
  /// after it (n + 1), its drafts and the sampler's accepted count.
  struct Verify {
    std::int64_t end = 0;
    std::int32_t drafts = 0, accepted = 0;
  };
  struct Slot {
    enum Phase { free, restore, reset, running, drain, needs_reset };
    Phase phase = free;
    std::int64_t request = -1;
    std::int64_t consumed = 0;
    TokenStream stream;  // at `consumed`
    TokenStream restore_stream;
    std::int64_t restore_end = 0;
    std::optional<Pending> snapshot;
    std::optional<Verify> verify;
    std::vector<std::int32_t> pages, draft_pages;
    RequestPoints points;
    std::size_t next_point = 0;  // the first snapshot point past `consumed`
  };

  /// The first positions whose KV entries (`kv`) and draft entries (`draft`)
  /// the snapshot at endpoint `e` saves: its partial page, and for draft planes
  /// the page before it too (the draft entry of position p is token p - 1's).
  struct SavedFrom {
    std::int64_t kv, draft;
  };

  void take_moves(std::int64_t room, Batch& batch);
  std::int64_t pages_needed(std::int64_t request) const;
  double arrival(std::int64_t request) const;
  SavedFrom saved_from(std::int64_t e) const;
  bool admit(std::int64_t slot);
  std::int64_t advance(std::int64_t slot, std::int64_t tokens, Model& model);
  // The snapshot points at or before the slot's endpoint are behind it.
  static void skip_passed_points(Slot& sl);
  // A row for a snapshot of the slot's prefix at its endpoint, unless the
  // prefix is cached or no row is free: true when the next batch snapshots it.
  bool reserve_snapshot(Slot& sl, bool completion);
  // The slot's request consumed its last token: true when a completion
  // snapshot (a point of the policy) drains it next batch, else it joins
  // `finished` (freed at the end of the step).
  bool drain_or_finish(std::int64_t slot, std::vector<std::int64_t>& finished);
  void finish_request(std::int64_t slot);
  // Speculative decoding (speculate.cpp): one request's step at a committed
  // endpoint (a snapshot, its completion, or a verify); a commit's result.
  std::int64_t speculate(std::int64_t slot, std::int64_t budget, Model& model, std::vector<std::int64_t>& finished);
  void verify(std::int64_t slot, std::int64_t end_point, bool point, std::int64_t budget, Model& model);
  void committed(std::int64_t slot, bool ok);
  void table_changed(std::int64_t slot);

  const SimConfig& cfg_;
  const Workload& w_;
  const Geometry& g_;
  std::vector<Slot> slots_;
  Batch batch_, onloads_, offloads_;      // the step's batch; the tier stream's
  std::vector<PrefixCache::Move> moves_;  // this step's offloads and onloads
  bool tier_stream_ = false;
  HostStateRows rows_;  // the state rows' mirror
  std::deque<std::int64_t> queue_;
  std::vector<char> done_;
  PrefixCache cache_;
  std::vector<std::int32_t> free_pages_, free_draft_pages_;
  std::vector<std::int32_t> tables_, draft_tables_;
  std::vector<std::int64_t> changed_slots_;  // the device starts with every entry unmapped too
  std::vector<char> slot_changed_;
  std::int64_t rotate_ = 0;
  double now_ms_ = 0;
  std::vector<float> queue_ms_;
  SchedulerCounts counts_;
};

}  // namespace statexfer::sim

#endif
