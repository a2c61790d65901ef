// The attention-only reuse bound (bound.hpp).

#include "bound.hpp"

#include <algorithm>
#include <list>
#include <unordered_map>
#include <unordered_set>

namespace statexfer::sim {

ReuseBound attention_bound(const Workload& w, std::int64_t budget_blocks) {
  ReuseBound b;
  b.available = w.hashed;
  b.block_tokens = w.block_tokens;
  b.budget_blocks = std::max<std::int64_t>(budget_blocks, 0);
  for (const RequestSpec& r : w.requests) b.input_tokens += r.prompt_len;
  if (!w.hashed) return b;
  const std::int64_t B = w.block_tokens;
  std::unordered_set<std::int64_t> seen;
  std::list<std::int64_t> lru;  // most recently used first
  std::unordered_map<std::int64_t, std::list<std::int64_t>::iterator> cached;
  for (std::size_t i = 0; i < w.requests.size(); ++i) {
    const RequestSpec& r = w.requests[i];
    const auto request = static_cast<std::int64_t>(i);
    std::int64_t run = 0;
    while (run < r.blocks && seen.count(w.block_id(request, run))) ++run;
    b.unbounded_tokens += std::min(run * B, r.prompt_len);
    run = 0;
    while (run < r.blocks && cached.count(w.block_id(request, run))) ++run;
    b.budget_tokens += std::min(run * B, r.prompt_len);
    for (std::int64_t j = 0; j < r.blocks; ++j) seen.insert(w.block_id(request, j));
    if (b.budget_blocks == 0) continue;
    for (std::int64_t j = r.blocks - 1; j >= 0; --j) {
      const std::int64_t id = w.block_id(request, j);
      const auto it = cached.find(id);
      if (it != cached.end()) lru.erase(it->second);
      lru.push_front(id);
      cached[id] = lru.begin();
      if (static_cast<std::int64_t>(lru.size()) > b.budget_blocks) {
        cached.erase(lru.back());
        lru.pop_back();
      }
    }
  }
  return b;
}

}  // namespace statexfer::sim
