#ifndef STATEXFER_SIM_PREFIX_CACHE_HPP
#define STATEXFER_SIM_PREFIX_CACHE_HPP

// Exact prefix endpoints -> snapshot rows. A key is reserved (its destination
// row taken, invisible to lookups) before the snapshot command runs, and
// published only once the snapshot applied on every rank; published entries
// are evicted least recently used first when a reservation needs a row.

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

#include "workload.hpp"

namespace statexfer::sim {

class PrefixCache {
 public:
  PrefixCache() = default;
  /// Snapshot rows [first_row, first_row + rows).
  PrefixCache(std::int64_t first_row, std::int64_t rows) {
    for (std::int64_t r = first_row + rows - 1; r >= first_row; --r) free_rows_.push_back(r);
  }

  /// The snapshot row of a published key (and mark it most recently used).
  std::optional<std::int64_t> lookup(const PrefixKey& key) {
    auto it = entries_.find(key);
    if (it == entries_.end() || !it->second.published) return std::nullopt;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.row;
  }

  /// Whether the key is published or reserved.
  bool contains(const PrefixKey& key) const { return entries_.count(key) != 0; }

  /// Reserve a destination row for `key`: a free row, else the least recently
  /// used published entry's (evicted). None if the key is present or every row
  /// is reserved.
  std::optional<std::int64_t> reserve(const PrefixKey& key) {
    if (contains(key)) return std::nullopt;
    std::int64_t row;
    if (!free_rows_.empty()) {
      row = free_rows_.back();
      free_rows_.pop_back();
    } else if (!lru_.empty()) {
      const PrefixKey victim = lru_.back();
      lru_.pop_back();
      row = entries_.at(victim).row;
      entries_.erase(victim);
      ++evictions_;
    } else {
      ++reservations_refused_;
      return std::nullopt;
    }
    Entry e;
    e.row = row;
    entries_.emplace(key, e);
    ++reservations_;
    return row;
  }

  /// The snapshot into the reserved row applied: make the key visible.
  void publish(const PrefixKey& key) {
    Entry& e = entries_.at(key);
    e.published = true;
    lru_.push_front(key);
    e.lru = lru_.begin();
    ++publications_;
  }

  /// The snapshot failed: give the reserved row back.
  void release(const PrefixKey& key) {
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.published) return;
    free_rows_.push_back(it->second.row);
    entries_.erase(it);
    ++releases_;
  }

  std::int64_t published() const { return static_cast<std::int64_t>(lru_.size()); }
  std::int64_t evictions() const { return evictions_; }
  std::int64_t reservations() const { return reservations_; }
  std::int64_t reservations_refused() const { return reservations_refused_; }
  std::int64_t publications() const { return publications_; }
  std::int64_t releases() const { return releases_; }

 private:
  struct Entry {
    std::int64_t row = 0;
    bool published = false;
    std::list<PrefixKey>::iterator lru;
  };
  std::unordered_map<PrefixKey, Entry, PrefixKeyHash> entries_;
  std::list<PrefixKey> lru_;  // published keys, most recently used first
  std::vector<std::int64_t> free_rows_;
  std::int64_t evictions_ = 0, reservations_ = 0, reservations_refused_ = 0, publications_ = 0, releases_ = 0;
};

}  // namespace statexfer::sim

#endif
