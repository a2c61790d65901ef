#ifndef STATEXFER_SIM_PD_CACHE_HPP
#define STATEXFER_SIM_PD_CACHE_HPP

// --pd's prefix caches, one per instance: exact prefix endpoints (PrefixKey)
// to rows of the instance's cache, least recently used evicted. Driven by the
// workload and the decode group's combined codes only, so every rank of an
// instance keeps the same cache.

#include <cstdint>
#include <list>
#include <unordered_map>
#include <utility>
#include <vector>

#include "workload.hpp"

namespace statexfer::sim {

class PdCache {
 public:
  explicit PdCache(std::int64_t rows) {
    for (std::int64_t i = rows - 1; i >= 0; --i) free_.push_back(i);
  }
  /// The row holding `key` (made the most recently used), or -1.
  std::int64_t lookup(const PrefixKey& key) {
    const auto it = map_.find(key);
    if (it == map_.end()) return -1;
    lru_.splice(lru_.end(), lru_, it->second.second);
    return it->second.first;
  }
  bool holds(const PrefixKey& key) const { return map_.count(key) > 0; }
  /// A row for a new entry: a free one, else the least recently used entry's
  /// (evicted); -1 when there is none. `pinned` rows are not taken.
  std::int64_t reserve(const std::vector<std::int64_t>& pinned = {}) {
    if (!free_.empty()) {
      const std::int64_t row = free_.back();
      free_.pop_back();
      return row;
    }
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      const std::int64_t row = map_.at(*it).first;
      bool keep = false;
      for (const std::int64_t p : pinned) keep = keep || p == row;
      if (keep) continue;
      map_.erase(*it);
      lru_.erase(it);
      ++evictions;
      return row;
    }
    return -1;
  }
  /// `key` now in `row`; where another row holds it already (two requests of one
  /// step reaching one prefix), `row` goes back to the free rows.
  void publish(const PrefixKey& key, std::int64_t row) {
    if (holds(key)) return release(row);
    lru_.push_back(key);
    map_[key] = {row, std::prev(lru_.end())};
  }
  void release(std::int64_t row) { free_.push_back(row); }
  std::int64_t evictions = 0;

 private:
  std::vector<std::int64_t> free_;
  std::list<PrefixKey> lru_;
  std::unordered_map<PrefixKey, std::pair<std::int64_t, std::list<PrefixKey>::iterator>, PrefixKeyHash> map_;
};

}  // namespace statexfer::sim

#endif
