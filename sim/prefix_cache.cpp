#include "prefix_cache.hpp"

#include <cstddef>

namespace statexfer::sim {

PrefixCache::PrefixCache(std::int64_t first_row, std::int64_t rows, std::int64_t host_rows) : tier_(host_rows > 0) {
  for (std::int64_t r = first_row + rows - 1; r >= first_row; --r) free_rows_.push_back(r);
  for (std::int64_t r = host_rows; r >= 1; --r) free_host_rows_.push_back(r);  // host row 0: the tier's null row
}

std::optional<PrefixCache::Location> PrefixCache::lookup(const PrefixKey& key) {
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  Entry& e = it->second;
  switch (e.state) {
    case State::reserved: return std::nullopt;
    case State::device: lru_.splice(lru_.begin(), lru_, e.lru); return Location{false, e.row};
    case State::demoting:  // still whole in its device row until the offload applied
      return Location{false, e.row};
    case State::host: {
      const Location at{true, e.row};  // promote() may retarget the entry, not this step's source
      host_lru_.splice(host_lru_.begin(), host_lru_, e.lru);
      if (++e.host_hits >= promote_after_host_hits) promote(key, e);
      return at;
    }
    case State::promoting:
      if (e.issued && read_onloading_) return Location{false, e.target, true};
      return Location{true, e.row};
  }
  return std::nullopt;
}

// A device row for a reservation or a promotion: free, else the LRU device
// entry's, evicted or (host tier) demoted.
std::optional<std::int64_t> PrefixCache::take_device_row() {
  if (!free_rows_.empty()) {
    const std::int64_t row = free_rows_.back();
    free_rows_.pop_back();
    return row;
  }
  if (lru_.empty()) return std::nullopt;
  const PrefixKey victim = lru_.back();
  lru_.pop_back();
  Entry& v = entries_.at(victim);
  const std::int64_t row = v.row;
  if (tier_) {
    if (auto host_row = take_host_row()) {
      v.state = State::demoting;
      v.target = *host_row;
      awaiting_[row]++;
      demote_queue_.push_back(victim);
      ++demotions_;
      return row;
    }
  }
  entries_.erase(victim);
  ++evictions_;
  return row;
}

// A host row for a demotion: free, else the LRU host entry's (evicted). Entries
// being promoted are not in the LRU list, so their row is never taken.
std::optional<std::int64_t> PrefixCache::take_host_row() {
  if (!free_host_rows_.empty()) {
    const std::int64_t row = free_host_rows_.back();
    free_host_rows_.pop_back();
    return row;
  }
  if (host_lru_.empty()) return std::nullopt;
  const PrefixKey victim = host_lru_.back();
  host_lru_.pop_back();
  const std::int64_t row = entries_.at(victim).row;
  entries_.erase(victim);
  ++host_evictions_;
  return row;
}

std::optional<std::int64_t> PrefixCache::reserve(const PrefixKey& key) {
  if (contains(key)) return std::nullopt;
  const auto row = take_device_row();
  if (!row) {
    ++reservations_refused_;
    return std::nullopt;
  }
  Entry e;
  e.row = *row;
  entries_.emplace(key, e);
  ++reservations_;
  return row;
}

// Pinned first (out of the host LRU list) so that its own demotion cannot take its host row.
void PrefixCache::promote(const PrefixKey& key, Entry& e) {
  host_lru_.erase(e.lru);
  e.state = State::promoting;
  const auto row = take_device_row();
  if (!row) {  // every device row reserved or moving: stay on the host
    e.state = State::host;
    host_lru_.push_front(key);
    e.lru = host_lru_.begin();
    return;
  }
  e.target = *row;
  promote_queue_.push_back(key);
  ++promotions_;
}

void PrefixCache::publish(const PrefixKey& key) {
  Entry& e = entries_.at(key);
  e.state = State::device;
  lru_.push_front(key);
  e.lru = lru_.begin();
  ++publications_;
}

void PrefixCache::release(const PrefixKey& key) {
  auto it = entries_.find(key);
  if (it == entries_.end() || it->second.state != State::reserved) return;
  free_rows_.push_back(it->second.row);
  entries_.erase(it);
  ++releases_;
}

std::vector<PrefixCache::Move> PrefixCache::take_moves(std::int64_t room) {
  std::vector<Move> moves;
  auto full = [&] { return static_cast<std::int64_t>(moves.size()) >= room; };
  std::size_t taken = 0;
  for (; taken < demote_queue_.size() && !full(); ++taken) {
    const Entry& e = entries_.at(demote_queue_[taken]);
    moves.push_back({demote_queue_[taken], true, e.row, e.target});
  }
  demote_queue_.erase(demote_queue_.begin(), demote_queue_.begin() + static_cast<std::ptrdiff_t>(taken));
  std::vector<PrefixKey> waiting;
  for (const PrefixKey& k : promote_queue_) {
    const Entry& e = entries_.at(k);
    if (ready(e.target) && !full()) {
      moves.push_back({k, false, e.row, e.target});
      entries_.at(k).issued = true;
    } else {
      waiting.push_back(k);  // its device row is still being demoted, or no room
    }
  }
  promote_queue_.swap(waiting);
  return moves;
}

void PrefixCache::moved(const Move& m, bool ok) {
  Entry& e = entries_.at(m.key);
  if (m.offload) {
    if (--awaiting_.at(m.src) == 0) awaiting_.erase(m.src);  // the row goes to its reservation either way
    if (!ok) {
      free_host_rows_.push_back(m.dst);
      entries_.erase(m.key);
      ++evictions_;
      return;
    }
    e.state = State::host;
    e.row = m.dst;
    e.target = -1;
    e.host_hits = 0;
    host_lru_.push_front(m.key);
    e.lru = host_lru_.begin();
    return;
  }
  if (ok) {
    free_host_rows_.push_back(m.src);
    e.state = State::device;
    e.row = m.dst;
    lru_.push_front(m.key);
    e.lru = lru_.begin();
  } else {
    free_rows_.push_back(m.dst);
    host_lru_.push_front(m.key);
    e.lru = host_lru_.begin();
    e.state = State::host;
  }
  e.target = -1;
  e.issued = false;
}

}  // namespace statexfer::sim
