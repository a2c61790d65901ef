#ifndef STATEXFER_TEST_COMMON_MODELS_HPP
#define STATEXFER_TEST_COMMON_MODELS_HPP

// The per-request state of public hybrid models (perf_tests/MODELS.md has the
// sources and the arithmetic): the one table that statexfer-bench's `models`
// set and statexfer-sim's --model read. Plain C++, no Kokkos.

#include <cstdint>
#include <string>
#include <vector>

#include <statexfer/sharding.hpp>

namespace statexfer::models {

/// A run of the convolution state's channels that tensor parallelism splits
/// as one: `units` units (heads or groups) of `channels` channels each.
struct ConvSegment {
  const char* name;
  std::int64_t units, channels;
};

/// Every recurrent layer keeps an SSM state (heads × head_dim × state_dim) and a
/// convolution state ((kernel - 1) × conv_dim); every attention layer keeps K
/// and V of kv_heads × head_dim per token.
struct HybridModel {
  const char* name;
  std::int64_t recurrent_layers, ssm_heads, ssm_head_dim, ssm_state_dim, ssm_dtype_bytes;
  std::int64_t conv_kernel, conv_dim, conv_dtype_bytes;
  std::int64_t attention_layers, kv_heads, head_dim, kv_dtype_bytes;
  /// The conv state's channel runs in order (their channels add up to conv_dim).
  std::vector<ConvSegment> conv_segments;

  std::int64_t ssm_bytes() const {
    return recurrent_layers * ssm_heads * ssm_head_dim * ssm_state_dim * ssm_dtype_bytes;
  }
  std::int64_t conv_bytes() const { return recurrent_layers * (conv_kernel - 1) * conv_dim * conv_dtype_bytes; }
  /// The recurrent state of one request: one pool row.
  std::int64_t row_bytes() const { return ssm_bytes() + conv_bytes(); }
  /// K and V of one token in one attention layer.
  std::int64_t kv_token_bytes() const { return kv_heads * head_dim * 2 * kv_dtype_bytes; }
  /// One KV page of one attention layer (the partial page a snapshot saves).
  std::int64_t page_bytes(std::int64_t page_tokens) const { return page_tokens * kv_token_bytes(); }
};

/// The model's row as tensor parallelism splits it (docs/CONTRACT.md §16):
/// consumed_tokens and (with `keys`) prefix_key replicated; "ssm", the SSM
/// states of every recurrent layer, split by heads; "conv", every layer's
/// convolution state channel-major (each channel's kernel - 1 steps
/// together), its channel runs split by heads or groups; one page region
/// "kv<i>" per attention layer (K then V, page_tokens tokens each) split by KV
/// heads. Row bytes beyond row_bytes(): those regions and page regions.
std::vector<statexfer::ModelRegion> model_regions(const HybridModel& model, std::int64_t page_tokens, bool keys);

/// Every model of the table, in MODELS.md's order.
const std::vector<HybridModel>& all();
/// The model named `name`; std::invalid_argument naming the known ones otherwise.
const HybridModel& find(const std::string& name);
/// "qwen3.5-9b, qwen3-next-80b-a3b, ...".
std::string names();

}  // namespace statexfer::models

#endif
