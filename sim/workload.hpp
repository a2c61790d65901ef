#ifndef STATEXFER_SIM_WORKLOAD_HPP
#define STATEXFER_SIM_WORKLOAD_HPP

// Requests with shared prefixes: synthetic (seeded, Zipf-popular prefix
// documents, multi-turn follow-ups) or read from a JSON-lines trace; their
// token streams and the rolling hashes that key the prefix cache.

#include <cstdint>
#include <string>
#include <vector>

namespace statexfer::sim {

/// One request. Its prompt is: the parent's whole sequence (prompt + output) if
/// `parent` >= 0, else the shared prefix document `prefix` (`prefix_len` tokens)
/// if `prefix` >= 0, else nothing; then `input_len` tokens of its own. It then
/// generates `output_len` tokens.
struct RequestSpec {
  std::int64_t parent = -1;
  std::int64_t prefix = -1;
  std::int64_t prefix_len = 0;
  std::int64_t input_len = 1;
  std::int64_t output_len = 1;
  std::uint64_t seed = 0;  ///< tokens of the input and the output
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
  std::string source;  ///< "synthetic" or the trace path
  std::int64_t max_total = 0;

  /// Derive prompt and total lengths; std::runtime_error on a bad reference.
  void finish();
};

Workload synthesize(const SyntheticOptions& options);

/// One JSON object per line: {"parent": 3} or {"prefix": 5, "prefix_len": 700},
/// or neither; "input" and "output" token counts (>= 1); optional "seed" and
/// "id" (parents may be named by "id" or by 0-based line index of a request).
/// Blank lines and lines starting with '#' are skipped.
Workload read_trace(const std::string& path);
void write_trace(const Workload& workload, const std::string& path);

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

/// Walks a request's tokens, keeping the rolling hashes of the prefix consumed.
class TokenStream {
 public:
  struct Segment {
    std::uint64_t seed;
    std::int64_t len;
  };
  TokenStream() = default;
  /// The request's segments, and the endpoints where a prefix snapshot may exist
  /// (the end of its prefix document and of every ancestor, its own end).
  TokenStream(const Workload& w, std::int64_t request);

  /// Consume the next token.
  void advance();
  std::int64_t pos() const { return key_.len; }
  const PrefixKey& key() const { return key_; }
  /// Seed of the state after the prefix consumed so far.
  std::uint64_t state_seed() const;
  const std::vector<std::int64_t>& boundaries() const { return boundaries_; }

 private:
  std::vector<Segment> segments_;
  std::vector<std::int64_t> boundaries_;
  std::size_t segment_ = 0;
  std::int64_t offset_ = 0;
  PrefixKey key_;
};

}  // namespace statexfer::sim

#endif
