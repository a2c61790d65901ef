#ifndef STATEXFER_SIM_BOUND_HPP
#define STATEXFER_SIM_BOUND_HPP

// The attention-only reuse bound of a block-hashed trace, from its hash ids
// alone (no simulation): requests in arrival order, one after the other; each
// reuses its longest run of leading blocks that are cached, times the block
// size, capped at its prompt's length; then its blocks are cached.
//
//   unbounded  every block of every earlier prompt is cached: the most prompt
//              tokens any prefix cache can reuse on this trace. A hybrid
//              model's restores cannot exceed it (a restore needs an earlier
//              prompt with the same blocks).
//   budget N   at most N blocks are cached (N: the run's device + host snapshot
//              rows, one block per row), least recently used evicted first;
//              after a request, its blocks are inserted or refreshed from the
//              last to the first, so a prefix's tail goes first. What an
//              attention cache of N blocks reuses, and what policy `all` would
//              with N rows and no concurrency; not a bound for the sparser
//              policies (one row of `last` covers a whole prompt).

#include <cstdint>

#include "workload.hpp"

namespace statexfer::sim {

struct ReuseBound {
  bool available = false;  ///< a block-hashed workload
  std::int64_t block_tokens = 0;
  std::int64_t input_tokens = 0;      ///< the prompts' tokens
  std::int64_t unbounded_tokens = 0;  ///< reusable with an unbounded block cache
  std::int64_t budget_blocks = 0;
  std::int64_t budget_tokens = 0;  ///< reusable with a cache of budget_blocks blocks
};

ReuseBound attention_bound(const Workload& w, std::int64_t budget_blocks);

}  // namespace statexfer::sim

#endif
