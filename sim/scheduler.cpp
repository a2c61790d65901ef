#include "scheduler.hpp"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <string>

#include <statexfer/commands.hpp>

#include "speculative.hpp"

namespace statexfer::sim {

Scheduler::Scheduler(const SimConfig& cfg, const Workload& workload, const Geometry& geometry)
    : cfg_(cfg), w_(workload), g_(geometry) {
  const std::int64_t C = g_.capacity;
  if (!(cfg_.tokens_per_ms > 0) || !(cfg_.step_ms >= 0) || !(cfg_.time_scale >= 0))
    throw std::invalid_argument("--tokens-per-ms must be > 0, --step-ms and --time-scale >= 0");
  if (cfg_.block_tokens < 1) throw std::invalid_argument("--trace-block-tokens must be >= 1");
  slots_.resize(static_cast<std::size_t>(C));
  slot_changed_.assign(static_cast<std::size_t>(C), 0);
  tables_.assign(static_cast<std::size_t>(C * g_.table_width), -1);
  draft_tables_.assign(static_cast<std::size_t>(C * g_.table_width), -1);
  cache_ = PrefixCache(g_.first_snapshot_row(), g_.snapshot_rows, cfg_.host_snapshot_rows);
  tier_stream_ = cfg_.host_snapshot_rows > 0 && cfg_.tier_stream;
  cache_.read_onloading(tier_stream_);
  rows_ = g_.initial_state_rows();
  for (std::int64_t p = g_.pages - 1; p >= 0; --p) free_pages_.push_back(static_cast<std::int32_t>(p));
  free_draft_pages_ = free_pages_;  // draft pages in another (fixed) order than the KV pages
  std::shuffle(free_draft_pages_.begin(), free_draft_pages_.end(), std::mt19937_64(0x5EEDULL));
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(w_.requests.size()); ++i) {
    queue_.push_back(i);
    if (pages_needed(i) > g_.pages)
      throw std::invalid_argument("request " + std::to_string(i) + " needs more pages than --pages");
  }
  done_.assign(w_.requests.size(), 0);
}

std::int64_t Scheduler::pages_needed(std::int64_t request) const {
  return (w_.requests[static_cast<std::size_t>(request)].total_len + g_.page_tokens - 1) / g_.page_tokens;
}

double Scheduler::arrival(std::int64_t request) const {
  return w_.requests[static_cast<std::size_t>(request)].arrival_ms * cfg_.time_scale;
}

Scheduler::SavedFrom Scheduler::saved_from(std::int64_t e) const {
  const std::int64_t pt = g_.page_tokens;
  return {(e / pt) * pt, (e / pt - 1) * pt + 1};
}

void Scheduler::skip_passed_points(Slot& sl) {
  const std::vector<std::int64_t>& points = sl.points.snapshots;
  while (sl.next_point < points.size() && points[sl.next_point] <= sl.consumed) ++sl.next_point;
}

bool Scheduler::reserve_snapshot(Slot& sl, bool completion) {
  const PrefixKey key = sl.stream.key();
  if (cache_.contains(key)) return false;
  const std::optional<std::int64_t> row = cache_.reserve(key);
  if (!row) return false;
  sl.snapshot = Pending{key, *row, completion};
  return true;
}

bool Scheduler::drain_or_finish(std::int64_t s, std::vector<std::int64_t>& finished) {
  Slot& sl = slots_[static_cast<std::size_t>(s)];
  const auto& points = sl.points.snapshots;
  const std::int64_t total = w_.requests[static_cast<std::size_t>(sl.request)].total_len;
  if (!points.empty() && points.back() == total && reserve_snapshot(sl, true)) {
    sl.phase = Slot::drain;
    return true;
  }
  finished.push_back(s);
  return false;
}

void Scheduler::table_changed(std::int64_t s) {
  if (slot_changed_[static_cast<std::size_t>(s)]) return;
  slot_changed_[static_cast<std::size_t>(s)] = 1;
  changed_slots_.push_back(s);
}

// The moves into `batch` (the step's) or, with the tier stream, into the
// tier's batches, each command's slot its index in moves_.
void Scheduler::take_moves(std::int64_t room, Batch& batch) {
  moves_ = cache_.take_moves(room);
  for (std::size_t i = 0; i < moves_.size(); ++i) {
    const PrefixCache::Move& m = moves_[i];
    const Command c = m.offload ? Command::offload(m.src, m.dst, m.key.len, command_key(m.key))
                                : Command::onload(m.src, m.dst, m.key.len, command_key(m.key));
    const BatchEntry e{c, m.offload ? kind_offload : kind_onload, static_cast<std::int64_t>(i)};
    (tier_stream_ ? (m.offload ? offloads_ : onloads_) : batch).push_back(e);
  }
}

const Batch& Scheduler::plan_batch(bool race) {
  const std::int64_t C = g_.capacity;
  batch_.clear();
  onloads_.clear();
  offloads_.clear();
  if (tier_stream_) take_moves(C, batch_);  // batches of their own, at most C commands each
  for (std::int64_t s = 0; s < C; ++s) {
    const Slot& sl = slots_[s];
    if (!sl.snapshot) continue;
    bool raced = false;
    if (!cache_.ready(sl.snapshot->row)) {  // its row's demotion applies first
      const std::int64_t row = sl.snapshot->row;
      raced = race &&
              std::any_of(offloads_.begin(), offloads_.end(), [&](const BatchEntry& o) { return o.cmd.source == row; });
      if (!raced) continue;
      race = false;  // one such snapshot
    }
    batch_.push_back({Command::snapshot(s, live_row(s), sl.snapshot->row, sl.consumed, command_key(sl.snapshot->key)),
                      kind_snapshot, s});
    batch_.back().race = raced;
    (sl.snapshot->completion ? counts_.completion_snapshots : counts_.checkpoint_snapshots)++;
  }
  for (std::int64_t s = 0; s < C; ++s)
    if (slots_[s].phase == Slot::needs_reset) {
      batch_.push_back({Command::reset(s, live_row(s)), kind_reset, s});
      slots_[s].phase = Slot::reset;
    }
  // The commits of the last step's verifies: the same command whatever the
  // sampler accepted (the device picks the position row), never beside a
  // snapshot of the same slot (advance_requests() decides one or the other).
  for (std::int64_t s = 0; s < C; ++s)
    if (const auto& v = slots_[s].verify)
      batch_.push_back({Command::commit(s, v->end), kind_commit, s, v->drafts, v->accepted});
  // In the step's batch, the moves take the room the admissions leave (one
  // command per free slot at most).
  std::int64_t free_slots = 0;
  for (const Slot& sl : slots_) free_slots += sl.phase == Slot::free ? 1 : 0;
  if (!tier_stream_) take_moves(C - static_cast<std::int64_t>(batch_.size()) - free_slots, batch_);
  // Nothing in flight and the next request still to come: the clock jumps to its arrival.
  if (free_slots == C && !queue_.empty()) now_ms_ = std::max(now_ms_, arrival(queue_.front()));
  for (std::int64_t s = 0; s < C; ++s)
    if (slots_[s].phase == Slot::free && !admit(s)) break;
  return batch_;
}

// Picks the next arrived request whose parent is done, lays out its pages,
// looks its prefix up: a restore on a hit, a reset on a miss. False: nothing
// admissible.
bool Scheduler::admit(std::int64_t s) {
  const std::int64_t W = g_.table_width;
  std::int64_t scanned = 0;
  for (auto it = queue_.begin(); it != queue_.end() && scanned < cfg_.lookahead; ++it, ++scanned) {
    const std::int64_t req = *it;
    const RequestSpec& spec = w_.requests[static_cast<std::size_t>(req)];
    if (arrival(req) > now_ms_) return false;  // the queue is in arrival order
    if (spec.parent >= 0 && !done_[static_cast<std::size_t>(spec.parent)]) continue;
    const std::int64_t need = pages_needed(req);
    if (need > static_cast<std::int64_t>(free_pages_.size()) ||
        need > static_cast<std::int64_t>(free_draft_pages_.size()))
      return false;  // first come, first served: wait for pages
    queue_.erase(it);
    Slot& sl = slots_[s];
    sl = Slot{};
    sl.request = req;
    for (std::int64_t l = 0; l < need; ++l) {
      sl.pages.push_back(free_pages_.back());
      free_pages_.pop_back();
      sl.draft_pages.push_back(free_draft_pages_.back());
      free_draft_pages_.pop_back();
      tables_[s * W + l] = sl.pages.back();
      draft_tables_[s * W + l] = sl.draft_pages.back();
    }
    table_changed(s);
    counts_.admitted++;
    counts_.prompt_tokens += spec.prompt_len;
    const double waited = now_ms_ - arrival(req);
    queue_ms_.push_back(static_cast<float>(waited));
    if (waited > 0) counts_.queued++;

    // Longest snapshotted lookup point (exact match of length and hashes).
    sl.points = request_points(cfg_.policy, w_, req, cfg_.block_tokens, cfg_.completion_snapshots);
    sl.stream = TokenStream(w_, req);
    TokenStream walker = sl.stream;
    std::vector<PrefixKey> keys;
    keys.reserve(sl.points.lookups.size());
    for (const std::int64_t e : sl.points.lookups) {
      walker.advance(e - walker.pos());
      keys.push_back(walker.key());
    }
    for (std::size_t i = keys.size(); i-- > 0;) {
      if (auto found = cache_.lookup(keys[i])) {
        sl.phase = Slot::restore;
        sl.restore_end = sl.points.lookups[i];
        sl.restore_stream = sl.stream;
        sl.restore_stream.advance(sl.restore_end);
        // A host entry is restored from its host row directly (prefix_cache.hpp says why).
        const std::int64_t key = command_key(keys[i]);
        batch_.push_back({found->host ? Command::restore_from_host(s, found->row, live_row(s), sl.restore_end, key)
                                      : Command::restore(s, found->row, live_row(s), sl.restore_end, key),
                          kind_restore, s});
        batch_.back().after_onload = found->after_onload;
        counts_.hits++;
        (found->host ? counts_.host_hits : counts_.device_hits)++;
        return true;
      }
    }
    sl.phase = Slot::reset;
    batch_.push_back({Command::reset(s, live_row(s)), kind_reset, s});
    counts_.misses++;
    return true;
  }
  return false;
}

void Scheduler::finish_request(std::int64_t s) {
  const std::int64_t W = g_.table_width;
  Slot& sl = slots_[s];
  for (auto p : sl.pages) free_pages_.push_back(p);
  for (auto p : sl.draft_pages) free_draft_pages_.push_back(p);
  const auto used = static_cast<std::int64_t>(sl.pages.size());  // the rest is unmapped already
  for (std::int64_t l = 0; l < used && l < W; ++l) tables_[s * W + l] = draft_tables_[s * W + l] = -1;
  table_changed(s);
  done_[static_cast<std::size_t>(sl.request)] = 1;
  sl = Slot{};
  counts_.completed++;
}

void Scheduler::take_tier_results(const std::vector<std::int32_t>& onload_codes,
                                  const std::vector<std::int32_t>& offload_codes) {
  for (std::size_t i = 0; i < onloads_.size(); ++i)
    cache_.moved(moves_[static_cast<std::size_t>(onloads_[i].slot)], onload_codes[i] == 0);
  for (std::size_t i = 0; i < offloads_.size(); ++i)
    cache_.moved(moves_[static_cast<std::size_t>(offloads_[i].slot)], offload_codes[i] == 0);
}

void Scheduler::take_results(const std::vector<std::int32_t>& codes) {
  for (std::size_t i = 0; i < batch_.size(); ++i) {
    const BatchEntry& b = batch_[i];
    const bool ok = codes[i] == 0;
    if (b.kind == kind_offload || b.kind == kind_onload) {
      cache_.moved(moves_[static_cast<std::size_t>(b.slot)], ok);
      continue;
    }
    Slot& sl = slots_[b.slot];
    switch (b.kind) {
      case kind_snapshot: {
        const Pending p = *sl.snapshot;
        sl.snapshot.reset();
        if (ok)
          cache_.publish(p.key);
        else
          cache_.release(p.key);
        if (p.completion) finish_request(b.slot);
        break;
      }
      case kind_restore:
        if (ok) {
          sl.phase = Slot::running;
          sl.consumed = sl.restore_end;
          sl.stream = sl.restore_stream;
          counts_.restored_tokens += sl.restore_end;
        } else {
          sl.phase = Slot::needs_reset;  // recompute from the start
          counts_.restore_fallbacks++;
        }
        break;
      case kind_reset:
        if (ok) {
          sl.phase = Slot::running;
          sl.consumed = 0;
          sl.stream = TokenStream(w_, sl.request);
        } else {
          sl.phase = Slot::needs_reset;
        }
        break;
      case kind_commit: committed(b.slot, ok); break;
    }
  }
}

// Consumes `tokens` tokens of slot s, stopping early at a snapshot point that
// gets a row (its state must be in the live row when the snapshot copies it);
// returns the tokens consumed. The model writes the KV entries of every token,
// or (--model-writes read) of the tokens in the pages that the next snapshot
// point's snapshot saves: the partial page before it, and for draft planes the
// page before that (the draft entry of position p is token p - 1's).
std::int64_t Scheduler::advance(std::int64_t s, std::int64_t tokens, Model& model) {
  Slot& sl = slots_[s];
  const RequestSpec& spec = w_.requests[static_cast<std::size_t>(sl.request)];
  const std::vector<std::int64_t>& points = sl.points.snapshots;
  const bool all = cfg_.model_writes_all;
  std::int64_t done = 0;
  while (done < tokens) {
    skip_passed_points(sl);
    const bool point = sl.next_point < points.size();
    const std::int64_t e = point ? points[sl.next_point] : spec.total_len;
    const std::int64_t stop = std::min(sl.consumed + tokens - done, e);
    const SavedFrom from = saved_from(e);
    const std::int64_t window = !point ? stop : g_.draft_planes > 0 ? from.draft : from.kv;
    if (!all && window > sl.consumed) {  // tokens no command reads: their hashes only
      const std::int64_t quiet = std::min(stop, window) - sl.consumed;
      sl.stream.advance(quiet);
      sl.consumed += quiet;
      done += quiet;
    }
    for (; sl.consumed < stop; ++sl.consumed, ++done) {
      const std::int64_t position = sl.consumed;
      const std::uint64_t previous = kv_seed(sl.stream.key());
      sl.stream.advance();
      model.write_token(position, kv_seed(sl.stream.key()), previous, sl.pages, sl.draft_pages,
                        all || position >= from.kv, all || position >= from.draft);
    }
    // A snapshot point that is not cached yet: snapshot it next step.
    if (point && sl.consumed == e && e < spec.total_len && reserve_snapshot(sl, false)) break;
  }
  (sl.consumed <= spec.prompt_len ? counts_.prefill_tokens : counts_.decode_tokens) += done;
  return done;
}

void Scheduler::advance_requests(Model& model) {
  const std::int64_t C = g_.capacity;
  std::vector<std::int64_t> finished;
  std::int64_t budget = cfg_.step_tokens;
  // Decode first (one token each), then prefill chunks, rotating who goes first.
  for (int pass = 0; pass < 2; ++pass) {
    for (std::int64_t k = 0; k < C && budget > 0; ++k) {
      const std::int64_t s = (k + rotate_) % C;
      Slot& sl = slots_[s];
      if (sl.phase != Slot::running || sl.snapshot) continue;
      const RequestSpec& spec = w_.requests[static_cast<std::size_t>(sl.request)];
      const bool decoding = sl.consumed >= spec.prompt_len;
      if (decoding != (pass == 0)) continue;
      if (decoding && g_.positions > 0) {
        budget -= speculate(s, budget, model, finished);
        continue;
      }
      const std::int64_t want = decoding ? 1 : std::min({cfg_.chunk, budget, spec.prompt_len - sl.consumed});
      budget -= advance(s, want, model);
      // Finished: snapshot the whole sequence for follow-ups, then free the slot.
      if (sl.consumed == spec.total_len) drain_or_finish(s, finished);
      // The row (state, scratch, consumed tokens in the row and the request state):
      // only where a snapshot reads it next (or always, --model-writes all). No
      // other command reads a live row or a request's consumed tokens (a restore
      // checks its source row's, a reset writes the row).
      if (cfg_.model_writes_all || sl.snapshot) model.write_row(s, live_row(s), sl.stream.state_seed(), sl.consumed);
    }
  }
  rotate_ = (rotate_ + 1) % C;
  for (std::int64_t s : finished) finish_request(s);
  now_ms_ += cfg_.step_ms + static_cast<double>(cfg_.step_tokens - budget) / cfg_.tokens_per_ms;
}

}  // namespace statexfer::sim
