// The hybrid models' table; MODELS.md derives every figure.

#include "models.hpp"

#include <stdexcept>

namespace statexfer::models {

const std::vector<HybridModel>& all() {
  static const std::vector<HybridModel> table{
      // Gated DeltaNet: SSM state = value heads × key head dim × value head dim (fp32:
      // mamba_ssm_dtype float32); conv_dim = 2 × 16 × 128 (Q, K) + 32 × 128 (V).
      // Conv channels: Q and K by the 16 key heads, V by the 32 value heads.
      {"qwen3.5-9b", 24, 32, 128, 128, 4, 4, 8192, 2, 8, 4, 256, 2, {{"q", 16, 128}, {"k", 16, 128}, {"v", 32, 128}}},
      // Same layer as Qwen3.5's, 36 of 48 layers, state in the model's dtype (bf16).
      {"qwen3-next-80b-a3b",
       36,
       32,
       128,
       128,
       2,
       4,
       8192,
       2,
       12,
       2,
       256,
       2,
       {{"q", 16, 128}, {"k", 16, 128}, {"v", 32, 128}}},
      // Mamba-2: 128 heads × 64 × state 128 in fp32 (mamba_ssm_cache_dtype);
      // conv_dim = 128 × 64 + 2 × n_groups 8 × 128.
      // Conv channels: x by the 128 heads, B and C by the 8 groups (n_groups: not confirmed for Super, MODELS.md).
      {"nemotron-3-super-120b-a12b",
       40,
       128,
       64,
       128,
       4,
       4,
       10240,
       2,
       8,
       2,
       128,
       2,
       {{"x", 128, 64}, {"B", 8, 128}, {"C", 8, 128}}},
      // Mamba-2: 128 heads × 64 × state 128 in bf16; conv_dim = 8192 + 2 × 1 × 128.
      // One group: B and C replicated on every rank above TP 1 (vLLM #55208's case).
      {"granite-4.0-h-small",
       36,
       128,
       64,
       128,
       2,
       4,
       8448,
       2,
       4,
       8,
       128,
       2,
       {{"x", 128, 64}, {"B", 1, 128}, {"C", 1, 128}}},
      // Mamba-1: d_inner 8192 channels × state 16 in bf16; conv_dim = d_inner.
      // Mamba-1's conv covers x alone, split by channels.
      {"jamba-v0.1", 28, 8192, 1, 16, 2, 4, 8192, 2, 4, 8, 128, 2, {{"x", 8192, 1}}},
  };
  return table;
}

std::vector<statexfer::ModelRegion> model_regions(const HybridModel& m, std::int64_t page_tokens, bool keys) {
  using statexfer::DType;
  using statexfer::Split;
  const auto dtype = [](std::int64_t bytes) { return bytes == 4 ? DType::float32 : DType::bfloat16; };
  std::vector<statexfer::ModelRegion> regions = {
      {"consumed_tokens", DType::int64, 1, {{"endpoint", 1, 8, Split::replicated}}}};
  if (keys) regions.push_back({"prefix_key", DType::int64, 1, {{"key", 1, 8, Split::replicated}}});
  regions.push_back({"ssm",
                     dtype(m.ssm_dtype_bytes),
                     m.recurrent_layers,
                     {{"heads", m.ssm_heads, m.ssm_head_dim * m.ssm_state_dim * m.ssm_dtype_bytes, Split::units}}});
  statexfer::ModelRegion conv{"conv", dtype(m.conv_dtype_bytes), m.recurrent_layers, {}};
  for (const ConvSegment& s : m.conv_segments)
    conv.segments.push_back({s.name, s.units, s.channels * (m.conv_kernel - 1) * m.conv_dtype_bytes, Split::units});
  regions.push_back(conv);
  for (std::int64_t a = 0; a < m.attention_layers; ++a)
    regions.push_back({"kv" + std::to_string(a),
                       DType::uint8,
                       2 * page_tokens,
                       {{"kv_heads", m.kv_heads, m.head_dim * m.kv_dtype_bytes, Split::units}}});
  return regions;
}

std::string names() {
  std::string out;
  for (const HybridModel& m : all()) out += (out.empty() ? "" : ", ") + std::string(m.name);
  return out;
}

const HybridModel& find(const std::string& name) {
  for (const HybridModel& m : all())
    if (name == m.name) return m;
  throw std::invalid_argument("unknown model '" + name + "' (known: " + names() + ")");
}

}  // namespace statexfer::models
