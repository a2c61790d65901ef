// Snapshot policies: the points of each request (policy.hpp).

#include "policy.hpp"

#include <algorithm>
#include <stdexcept>

namespace statexfer::sim {

SnapshotPolicy SnapshotPolicy::parse(const std::string& text) {
  SnapshotPolicy p;
  if (text == "ends") return p;
  if (text == "all") {
    p.kind = all;
    return p;
  }
  if (text == "last") {
    p.kind = last;
    return p;
  }
  const std::string every_prefix = "every:";
  if (text.compare(0, every_prefix.size(), every_prefix) == 0) {
    const std::string n = text.substr(every_prefix.size());
    if (!n.empty() && n.size() <= 9 && std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        std::stoll(n) >= 1) {
      p.kind = every;
      p.every_blocks = std::stoll(n);
      return p;
    }
  }
  throw std::invalid_argument("--snapshot-policy: expected ends, all, last or every:N (N >= 1 blocks), got '" + text +
                              "'");
}

std::string SnapshotPolicy::name() const {
  switch (kind) {
    case ends: return "ends";
    case all: return "all";
    case last: return "last";
    case every: return "every:" + std::to_string(every_blocks);
  }
  return "?";
}

RequestPoints request_points(const SnapshotPolicy& policy, const Workload& w, std::int64_t request,
                             std::int64_t block_tokens, bool completion) {
  const RequestSpec& spec = w.requests[static_cast<std::size_t>(request)];
  const std::int64_t B = block_tokens, prompt = spec.prompt_len, total = spec.total_len;
  RequestPoints p;
  if (policy.kind == SnapshotPolicy::ends) {
    for (const std::int64_t e : structural_endpoints(w, request)) {
      if (e < prompt) p.lookups.push_back(e);
      if (e < total || completion) p.snapshots.push_back(e);
    }
    if (w.hashed) {
      // The prompt ends of the requests whose last block is one of this prompt's blocks.
      p.lookups.clear();
      for (std::int64_t j = 0; j < spec.blocks && j * B < prompt; ++j) {
        const auto it = w.prompt_ends.find(w.block_id(request, j));
        if (it == w.prompt_ends.end()) continue;
        for (const std::int64_t e : it->second)
          if (e > j * B && e <= (j + 1) * B && e < prompt) p.lookups.push_back(e);
      }
    }
    return p;
  }
  for (std::int64_t e = B; e < prompt; e += B) p.lookups.push_back(e);
  const std::int64_t blocks = prompt / B;  // boundaries up to and with the prompt's end
  for (std::int64_t k = 1; k <= blocks; ++k) {
    const bool take = policy.kind == SnapshotPolicy::all || (policy.kind == SnapshotPolicy::last && k == blocks) ||
                      (policy.kind == SnapshotPolicy::every && k % policy.every_blocks == 0);
    if (take) p.snapshots.push_back(k * B);
  }
  return p;
}

}  // namespace statexfer::sim
