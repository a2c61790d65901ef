// Speculative decoding in the scheduler (--spec-tokens K; scheduler.hpp,
// sim/README.md "Speculative decoding"): a decoding request's step at a
// committed endpoint n is a snapshot of it, its completion, or a verify of
// 1 + K' tokens whose commit goes in the next batch; the commit's code says
// where the request's endpoint moves.

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "scheduler.hpp"
#include "speculative.hpp"

namespace statexfer::sim {

std::int64_t Scheduler::speculate(std::int64_t s, std::int64_t budget, Model& model,
                                  std::vector<std::int64_t>& finished) {
  Slot& sl = slots_[static_cast<std::size_t>(s)];
  const RequestSpec& spec = w_.requests[static_cast<std::size_t>(sl.request)];
  const std::vector<std::int64_t>& points = sl.points.snapshots;
  const bool at_point = sl.next_point < points.size() && points[sl.next_point] == sl.consumed;
  skip_passed_points(sl);
  if (cfg_.model_writes_all) model.set_request_consumed(s, sl.consumed);
  if (sl.consumed == spec.total_len) {
    // The last commit applied: snapshot the whole sequence for follow-ups in
    // the next batch, then free the slot.
    if (drain_or_finish(s, finished)) model.set_request_consumed(s, sl.consumed);
    return 0;
  }
  // A snapshot point at the committed endpoint: snapshot it in the next batch
  // and verify after it (a commit and a snapshot of one slot in one batch
  // conflict: docs/CONTRACT.md §13).
  if (at_point && reserve_snapshot(sl, false)) {
    model.set_request_consumed(s, sl.consumed);
    counts_.verify_pauses++;
    return 0;
  }
  const bool point = sl.next_point < points.size();
  verify(s, point ? points[sl.next_point] : spec.total_len, point, budget, model);
  return 1 + sl.verify->drafts;
}

// The model over the last sampled token and K' drafts, K' = min(K, e - n - 1,
// budget - 1) so that the verify never passes the next snapshot point (or the
// request's end) `e`: a committed endpoint reaches it exactly. The live row gets
// the state after n + 1 tokens, position row j the state after n + 1 + j: the
// request's own tokens up to the accepted drafts, another stream's past them;
// every row's consumed_tokens is its endpoint (the commit checks the accepted
// one). With --model-writes read the state bytes are written only where a
// snapshot reads them (the accepted row when it lands on e), and KV entries
// only in the pages that e's snapshot saves, as for plain decoding.
void Scheduler::verify(std::int64_t s, std::int64_t e, bool point, std::int64_t budget, Model& model) {
  Slot& sl = slots_[static_cast<std::size_t>(s)];
  const std::int64_t n = sl.consumed;
  const bool all = cfg_.model_writes_all;
  const std::int64_t drafts = std::max<std::int64_t>(0, std::min({g_.positions, e - n - 1, budget - 1}));
  const std::int32_t a = accepted_drafts(cfg_.accept_seed, cfg_.accept_rate, sl.request, n, drafts);
  const SavedFrom from = saved_from(e);
  TokenStream own = sl.stream;
  std::uint64_t previous = kv_seed(own.key()), leave = 0;
  for (std::int64_t j = 0; j <= drafts; ++j) {
    const std::int64_t position = n + j, row = rows_(s, j);
    std::uint64_t seed = 0, state = 0;
    if (j <= a) {
      own.advance();
      seed = kv_seed(own.key());
      state = leave = own.state_seed();
    } else {
      seed = wrong_kv_seed(leave, position);
      state = wrong_state_seed(leave, position);
    }
    model.write_token(position, seed, previous, sl.pages, sl.draft_pages, all || (point && position >= from.kv),
                      all || (point && position >= from.draft));
    previous = seed;
    if (all || (point && j == a && n + 1 + j == e)) model.write_state(row, state, row);
    model.stamp_consumed(row, n + 1 + j);
  }
  model.set_accepted(s, a);  // the sampler's output, on the device
  sl.verify = Verify{n + 1, static_cast<std::int32_t>(drafts), a};
  counts_.verifies++;
  counts_.drafted_tokens += drafts;
  counts_.verified_tokens += 1 + drafts;
}

void Scheduler::committed(std::int64_t s, bool ok) {
  Slot& sl = slots_[static_cast<std::size_t>(s)];
  if (!sl.verify || sl.verify->end != sl.consumed + 1)
    throw std::logic_error("statexfer-sim: a commit without its verify (slot " + std::to_string(s) + ")");
  const Verify v = *sl.verify;
  sl.verify.reset();
  // Refused: the live row still holds position 0's state, at n + 1.
  const std::int64_t tokens = ok ? 1 + v.accepted : 1;
  sl.stream.advance(tokens);
  sl.consumed += tokens;
  counts_.committed_tokens += tokens;
  counts_.decode_tokens += tokens;
  if (!ok) {
    counts_.commit_fallbacks++;
    return;
  }
  counts_.accepted_drafts += v.accepted;
  counts_.accepted_histogram[static_cast<std::size_t>(v.accepted)]++;
  // The device swapped the slot's live row and position row a; so does the mirror.
  if (!cfg_.commit_copy && v.accepted > 0) std::swap(rows_(s, 0), rows_(s, v.accepted));
}

}  // namespace statexfer::sim
