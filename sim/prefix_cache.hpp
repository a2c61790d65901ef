#ifndef STATEXFER_SIM_PREFIX_CACHE_HPP
#define STATEXFER_SIM_PREFIX_CACHE_HPP

// Exact prefix endpoints -> snapshot rows, in the device pool and, with
// --host-snapshot-rows, in the host tier (docs/CONTRACT.md §12).
//
// A key is reserved (its destination row taken, invisible to lookups) before
// the snapshot command runs, and published only once the snapshot applied on
// every rank. When a reservation finds no free device row, the least recently
// used published device entry gives its row: without a host tier it is evicted;
// with one it is demoted (an offload to a free host row, or to the least
// recently used host entry's row, which is evicted). The row is handed over
// only after the offload applied: the contract rejects an offload and a write
// of the same row in one batch (code 4), so the writer waits one step (ready()).
//
// A host entry is served in place by a restore from the host (operation 4): one
// copy, no device row, in the step of the hit. An entry hit on the host a second
// time is promoted: an onload (operation 3) into a device row reserved like a
// snapshot's, so hot entries return to the device while a one-off hit costs no
// demotion. Rows that a move writes are taken at the decision and written in a
// later batch, so no command of the deciding batch can read them.
//
// With the moves on a stream of their own (read_onloading), a move's result
// comes a step after it was issued; meanwhile a demoting entry's device row and
// host row and a promoting entry's host row stay taken as above, and a lookup
// of an entry whose onload is in flight names its device row, marked
// after_onload: the step that restores from it waits for the onloads first.

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "workload.hpp"

namespace statexfer::sim {

class PrefixCache {
 public:
  /// Where a published entry can be read: a device row or a host row.
  struct Location {
    bool host = false;
    std::int64_t row = 0;
    bool after_onload = false;  ///< a device row an onload in flight writes: read it after the onloads
  };
  /// A row move between the tiers: an offload (device src -> host dst) or an onload.
  struct Move {
    PrefixKey key;
    bool offload = true;
    std::int64_t src = 0, dst = 0;
  };
  /// Host hits after which a host entry is promoted back to the device.
  static constexpr int promote_after_host_hits = 2;

  PrefixCache() = default;
  /// Snapshot rows [first_row, first_row + rows); host rows 1..host_rows (0: no host tier).
  PrefixCache(std::int64_t first_row, std::int64_t rows, std::int64_t host_rows = 0);
  /// Lookups name the device row of an entry whose onload was issued (the moves
  /// run on their own stream), instead of its host row.
  void read_onloading(bool on) { read_onloading_ = on; }

  /// The location of a published key (marked most recently used in its tier; a
  /// host hit may promote it).
  std::optional<Location> lookup(const PrefixKey& key);
  /// Whether the key is published, moving or reserved.
  bool contains(const PrefixKey& key) const { return entries_.count(key) != 0; }

  /// Reserve a device destination row for `key`: a free row, else the least
  /// recently used published device entry's (evicted, or demoted with a host
  /// tier: then the row is ready() only after the offload applied). None if the
  /// key is present or every device row is reserved or moving.
  std::optional<std::int64_t> reserve(const PrefixKey& key);
  /// Whether a reserved device row may be written (no demotion of it pending).
  bool ready(std::int64_t row) const { return awaiting_.count(row) == 0; }

  /// The snapshot into the reserved row applied: make the key visible.
  void publish(const PrefixKey& key);
  /// The snapshot failed: give the reserved row back.
  void release(const PrefixKey& key);

  /// At most `room` moves to issue in this step's batch: the demotions decided
  /// before (first: rows wait on them), then the promotions whose device row is
  /// ready. The rest stay queued.
  std::vector<Move> take_moves(std::int64_t room);
  /// The result of an issued move.
  void moved(const Move& move, bool ok);

  std::int64_t published() const { return static_cast<std::int64_t>(lru_.size()); }
  std::int64_t host_published() const { return static_cast<std::int64_t>(host_lru_.size()); }
  std::int64_t evictions() const { return evictions_; }
  std::int64_t host_evictions() const { return host_evictions_; }
  std::int64_t demotions() const { return demotions_; }
  std::int64_t promotions() const { return promotions_; }
  std::int64_t reservations() const { return reservations_; }
  std::int64_t reservations_refused() const { return reservations_refused_; }
  std::int64_t publications() const { return publications_; }
  std::int64_t releases() const { return releases_; }

 private:
  enum class State { reserved, device, host, demoting, promoting };
  struct Entry {
    State state = State::reserved;
    std::int64_t row = 0;      // the device row (reserved, device, demoting) or the host row (host, promoting)
    std::int64_t target = -1;  // demoting: the host row; promoting: the device row
    int host_hits = 0;
    bool issued = false;  // promoting: its onload is in flight
    std::list<PrefixKey>::iterator lru;
  };

  std::optional<std::int64_t> take_device_row();
  std::optional<std::int64_t> take_host_row();
  void promote(const PrefixKey& key, Entry& e);

  bool tier_ = false, read_onloading_ = false;
  std::unordered_map<PrefixKey, Entry, PrefixKeyHash> entries_;
  std::list<PrefixKey> lru_, host_lru_;  // published keys of each tier, most recently used first
  std::vector<std::int64_t> free_rows_, free_host_rows_;
  // Device rows whose demotions have not applied yet, with how many: an
  // offload-race snapshot published into a row whose offload is in flight can
  // be demoted again before that offload's result comes.
  std::unordered_map<std::int64_t, int> awaiting_;
  std::vector<PrefixKey> demote_queue_, promote_queue_;
  std::int64_t evictions_ = 0, host_evictions_ = 0, demotions_ = 0, promotions_ = 0;
  std::int64_t reservations_ = 0, reservations_refused_ = 0, publications_ = 0, releases_ = 0;
};

}  // namespace statexfer::sim

#endif
