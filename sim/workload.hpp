#ifndef STATEXFER_SIM_WORKLOAD_HPP
#define STATEXFER_SIM_WORKLOAD_HPP

// Requests with shared prefixes: synthetic (seeded, Zipf-popular prefix
// documents, multi-turn follow-ups) or read from a JSON-lines trace (traces.hpp:
// the simulator's own format or Mooncake's block-hashed one); their token
// streams and the rolling hashes that key the prefix cache.

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace statexfer::sim {

/// One request. Its prompt is: the parent's whole sequence (prompt + output) if
/// `parent` >= 0, else the shared prefix document `prefix` (`prefix_len` tokens)
/// if `prefix` >= 0, else nothing; then `input_len` tokens of its own. It then
/// generates `output_len` tokens. In a block-hashed workload (Workload::hashed)
/// the prompt is `input_len` tokens in blocks of Workload::block_tokens, block j
/// the tokens of hash id `hash_ids[first_block + j]` (j < blocks; the blocks
/// past those, if any, the request's own).
struct RequestSpec {
  std::int64_t parent = -1;
  std::int64_t prefix = -1;
  std::int64_t prefix_len = 0;
  std::int64_t input_len = 1;
  std::int64_t output_len = 1;
  std::uint64_t seed = 0;  ///< tokens of the input and the output
  double arrival_ms = 0;   ///< when the request may be admitted (simulated time)
  std::int64_t first_block = 0, blocks = 0;
  std::int64_t line = 0;  ///< the trace line it came from (0: synthetic)
  // Derived by Workload::finish():
  std::int64_t prompt_len = 0;
  std::int64_t total_len = 0;
};

struct Range {
  std::int64_t min = 0, max = 0;
};

struct SyntheticOptions {
  std::int64_t requests = 10000;
  std::uint64_t seed = 1;
  std::int64_t prefixes = 32;
  double zipf = 1.1;
  Range prefix_len{256, 1024};
  Range input_len{16, 256};
  Range output_len{8, 48};
  double followup = 0.3;       ///< probability that a request continues an earlier conversation
  std::int64_t max_turns = 4;  ///< turns per conversation
  std::int64_t max_context = 4096;
  std::int64_t followup_window = 256;  ///< follow-ups continue one of the last N requests
};

struct Workload {
  std::vector<RequestSpec> requests;
  std::string source;                ///< "synthetic" or the trace path
  std::string format = "synthetic";  ///< "synthetic", "sim" (own trace format) or "mooncake"
  std::int64_t max_total = 0;
  bool timed = false;   ///< arrival times from the trace (else every request arrives at 0)
  bool hashed = false;  ///< prompts are blocks of hash ids (Mooncake)
  std::int64_t block_tokens = 512;
  std::vector<std::int64_t> hash_ids;  ///< every request's block ids, RequestSpec::first_block on
  /// Hashed: the prompt lengths of the requests whose last hash id is the key,
  /// ascending (the exact prompt ends another prompt can share).
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> prompt_ends;

  /// Derive prompt and total lengths (and the prompt-end index); std::runtime_error on a bad reference.
  void finish();
  /// Keep the first `n` requests (arrival order).
  void truncate(std::int64_t n);
  /// Hash id of block j of request i, or -1 past its ids.
  std::int64_t block_id(std::int64_t i, std::int64_t j) const {
    const RequestSpec& r = requests[static_cast<std::size_t>(i)];
    return j < r.blocks ? hash_ids[static_cast<std::size_t>(r.first_block + j)] : -1;
  }
};

Workload synthesize(const SyntheticOptions& options);

/// A token sequence key: length and two independent 64-bit rolling hashes.
struct PrefixKey {
  std::int64_t len = 0;
  std::uint64_t h1 = 0, h2 = 0;
  bool operator==(const PrefixKey& o) const { return len == o.len && h1 == o.h1 && h2 == o.h2; }
};
struct PrefixKeyHash {
  std::size_t operator()(const PrefixKey& k) const {
    return static_cast<std::size_t>(k.h1 ^ (k.h2 * 0x9E3779B97F4A7C15ULL) ^ static_cast<std::uint64_t>(k.len));
  }
};

/// The exact endpoints of a request's structure, ascending: the end of its
/// prefix document and of every ancestor's whole sequence, then its own end
/// (synthetic and own-format traces); its prompt's end, then its own end (hashed).
std::vector<std::int64_t> structural_endpoints(const Workload& w, std::int64_t request);

/// Walks a request's tokens, keeping the rolling hashes of the prefix consumed.
/// In a block-hashed workload the key of a prefix is a hash of its length and
/// of its last block's id (that id names the whole prefix up to and with its
/// block, traces.hpp checks it), computed in O(1) rather than token by token.
class TokenStream {
 public:
  struct Segment {
    std::uint64_t seed;
    std::int64_t len;
  };
  TokenStream() = default;
  TokenStream(const Workload& w, std::int64_t request);

  /// Consume the next `n` tokens (std::logic_error past the end).
  void advance(std::int64_t n = 1);
  std::int64_t pos() const { return key_.len; }
  const PrefixKey& key() const { return key_; }
  /// Seed of the state after the prefix consumed so far.
  std::uint64_t state_seed() const;

 private:
  std::vector<Segment> segments_;
  std::size_t segment_ = 0;
  std::int64_t offset_ = 0;
  PrefixKey key_;
  bool hashed_ = false;
};

}  // namespace statexfer::sim

#endif
