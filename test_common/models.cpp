// The hybrid models' table; MODELS.md derives every figure.

#include "models.hpp"

#include <stdexcept>

namespace statexfer::models {

const std::vector<HybridModel>& all() {
  static const std::vector<HybridModel> table{
      // Gated DeltaNet: SSM state = value heads × key head dim × value head dim (fp32:
      // mamba_ssm_dtype float32); conv_dim = 2 × 16 × 128 (Q, K) + 32 × 128 (V).
      {"qwen3.5-9b", 24, 32, 128, 128, 4, 4, 8192, 2, 8, 4, 256, 2},
      // Same layer as Qwen3.5's, 36 of 48 layers, state in the model's dtype (bf16).
      {"qwen3-next-80b-a3b", 36, 32, 128, 128, 2, 4, 8192, 2, 12, 2, 256, 2},
      // Mamba-2: 128 heads × 64 × state 128 in fp32 (mamba_ssm_cache_dtype);
      // conv_dim = 128 × 64 + 2 × n_groups 8 × 128.
      {"nemotron-3-super-120b-a12b", 40, 128, 64, 128, 4, 4, 10240, 2, 8, 2, 128, 2},
      // Mamba-2: 128 heads × 64 × state 128 in bf16; conv_dim = 8192 + 2 × 1 × 128.
      {"granite-4.0-h-small", 36, 128, 64, 128, 2, 4, 8448, 2, 4, 8, 128, 2},
      // Mamba-1: d_inner 8192 channels × state 16 in bf16; conv_dim = d_inner.
      {"jamba-v0.1", 28, 8192, 1, 16, 2, 4, 8192, 2, 4, 8, 128, 2},
  };
  return table;
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
