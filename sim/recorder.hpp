#ifndef STATEXFER_SIM_RECORDER_HPP
#define STATEXFER_SIM_RECORDER_HPP

// The engine's statistics (stats.hpp), the only writer of them: commands by
// kind and code, the bytes each applied command moved (by kind of move, for the
// limit), the scheduler's and the prefix cache's counts, and the per-step times.

#include <cstdint>
#include <vector>

#include <statexfer/commands.hpp>

#include "batch.hpp"
#include "comm.hpp"
#include "geometry.hpp"
#include "limit.hpp"
#include "prefix_cache.hpp"
#include "scheduler.hpp"
#include "stats.hpp"

namespace statexfer::sim {

class Recorder {
 public:
  Recorder(const Geometry& geometry, const Comm& comm) : g_(geometry), comm_(comm) {}

  Stats& stats() { return st_; }
  const Stats& stats() const { return st_; }

  void issued(const Batch& batch) {
    for (const BatchEntry& b : batch) st_.issued[b.kind]++;
  }

  /// One batch's combined codes: applied and failed commands, codes, and the
  /// bytes the applied ones moved (returned by kind of move).
  MovedBytes results(const Batch& batch, const std::vector<std::int32_t>& codes) {
    MovedBytes moved;
    bool commits = false;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      const BatchEntry& b = batch[i];
      const std::int32_t code = codes[i];
      const int c = code_slot(code);
      st_.errors[c]++;
      const bool ok = code == 0;
      (ok ? st_.applied : st_.failed)[b.kind]++;
      if (b.kind == kind_commit) {
        commits = true;
        st_.commit_errors[c]++;
        // A copying commit moves the accepted row (all but the excluded scratch);
        // a remap, or accepting nothing, moves no byte (docs/CONTRACT.md §13).
        if (ok && g_.commit_copy && b.accepted > 0) {
          st_.row_bytes_moved += g_.row_copy_bytes;
          st_.commit_bytes += g_.row_copy_bytes;
          moved.copy += g_.row_copy_bytes;
        }
        continue;
      }
      if (ok) moved += bytes(b.cmd, b.kind);
      if (ok && b.cmd.operation == statexfer::op_restore_from_host) st_.host_restores++;
      if (b.after_onload) st_.restores_after_onload++;
    }
    if (commits) st_.commit_steps++;
    return moved;
  }

  void scheduler(const SchedulerCounts& s, double now_ms) {
    st_.admitted = s.admitted;
    st_.completed = s.completed;
    st_.hits = s.hits;
    st_.device_hits = s.device_hits;
    st_.host_hits = s.host_hits;
    st_.misses = s.misses;
    st_.prompt_tokens = s.prompt_tokens;
    st_.restored_tokens = s.restored_tokens;
    st_.prefill_tokens = s.prefill_tokens;
    st_.decode_tokens = s.decode_tokens;
    st_.checkpoint_snapshots = s.checkpoint_snapshots;
    st_.completion_snapshots = s.completion_snapshots;
    st_.restore_fallbacks = s.restore_fallbacks;
    st_.queued = s.queued;
    st_.verifies = s.verifies;
    st_.drafted_tokens = s.drafted_tokens;
    st_.verified_tokens = s.verified_tokens;
    st_.committed_tokens = s.committed_tokens;
    st_.accepted_drafts = s.accepted_drafts;
    st_.commit_fallbacks = s.commit_fallbacks;
    st_.verify_pauses = s.verify_pauses;
    st_.accepted_histogram = s.accepted_histogram;
    st_.sim_ms = now_ms;
  }

  void cache(const PrefixCache& cache) {
    st_.cache_published = cache.published();
    st_.cache_evictions = cache.evictions();
    st_.cache_reservations = cache.reservations();
    st_.cache_refused = cache.reservations_refused();
    st_.cache_releases = cache.releases();
    st_.demotions = cache.demotions();
    st_.promotions = cache.promotions();
    st_.host_evictions = cache.host_evictions();
    st_.host_published = cache.host_published();
  }

  /// The totals over the ranks, and whether every rank ran the same schedule.
  void finish() {
    st_.total_bytes_moved = comm_.sum(st_.row_bytes_moved + st_.page_bytes_moved);
    st_.total_snapshot_bytes = comm_.sum(st_.snapshot_bytes);
    st_.total_commit_bytes = comm_.sum(st_.commit_bytes);
    if (comm_.distributed()) {
      // Every rank ran the same schedule with the same combined codes.
      for (std::int64_t v :
           {st_.steps, st_.applied[0], st_.applied[1], st_.applied[2], st_.failed[0], st_.failed[1], st_.failed[2],
            st_.applied[kind_commit], st_.failed[kind_commit], st_.accepted_drafts, st_.hits, st_.completed})
        if (comm_.min(v) != comm_.max(v)) st_.cross_rank_ok = false;
    }
  }

 private:
  // This rank's bytes of one applied command, each byte it writes once: the row,
  // its partial page in every KV plane, its trailing pages in every draft plane.
  // A snapshot's pages overwrite the row's page regions, which its row copy then
  // skips (docs/CONTRACT.md §5): it writes the row's bytes; a restore writes the
  // row and, from the row's regions, the pages. An offload's bytes go to the
  // host, an onload's and a restore from the host's come from it.
  MovedBytes bytes(const Command& c, int kind) {
    MovedBytes m;
    std::int64_t pages = 0;
    if (c.operation == statexfer::op_copy || c.operation == statexfer::op_restore_from_host) {
      if (c.expected_consumed % g_.page_tokens != 0) pages += g_.kv_planes * g_.kv_page_bytes;
      for (int part = 0; part < 2 && g_.draft_planes > 0; ++part) {
        const std::int64_t t_logical = c.expected_consumed / g_.page_tokens + part - 1;
        if (c.expected_consumed > 1 && t_logical >= 0 && (part == 0 || c.expected_consumed % g_.page_tokens >= 2))
          pages += g_.draft_planes * g_.draft_page_bytes;
      }
    }
    const std::int64_t row = kind == kind_snapshot ? g_.row_copy_bytes - pages : g_.row_copy_bytes;
    st_.row_bytes_moved += row;
    st_.page_bytes_moved += pages;
    if (kind == kind_snapshot) st_.snapshot_bytes += row + pages;
    switch (c.operation) {
      case statexfer::op_offload:
        st_.bytes_to_host += g_.row_copy_bytes;
        m.to_host = g_.row_copy_bytes;
        break;
      case statexfer::op_onload:
      case statexfer::op_restore_from_host:
        st_.bytes_from_host += row + pages;
        m.to_device = row + pages;
        break;
      case statexfer::op_reset: m.fill = g_.row_copy_bytes; break;
      default: m.copy = row + pages;
    }
    return m;
  }

  const Geometry& g_;
  Comm comm_;
  Stats st_;
};

}  // namespace statexfer::sim

#endif
