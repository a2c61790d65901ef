#include "model.hpp"

namespace statexfer::sim {

void Model::begin_step(std::int64_t step) {
  jobs_.clear();
  step_seed_ = mix64(static_cast<std::uint64_t>(step) * 0x9E37ULL);
}

void Model::write_token(std::int64_t position, std::uint64_t seed, std::uint64_t previous_seed,
                        const std::vector<std::int32_t>& pages, const std::vector<std::int32_t>& draft_pages) {
  const std::int64_t pt = g_.page_tokens;
  const std::int64_t page = pages[static_cast<std::size_t>(position / pt)];
  for (std::int64_t i = 0; i < g_.kv_planes; ++i)
    jobs_.push_back({kv_target(i), 0, page * g_.kv_page_bytes + (position % pt) * g_.kv.size(),
                     mix64(seed + salt_kv + static_cast<std::uint64_t>(i)), g_.kv.lo, g_.kv.hi});
  if (position < 1) return;  // the draft model lags one token
  const std::int64_t q = position - 1;
  const std::int64_t draft_page = draft_pages[static_cast<std::size_t>(q / pt)];
  for (std::int64_t i = 0; i < g_.draft_planes; ++i)
    jobs_.push_back({draft_target(i), 0, draft_page * g_.draft_page_bytes + (q % pt) * g_.draft.size(),
                     mix64(previous_seed + salt_draft + static_cast<std::uint64_t>(i)), g_.draft.lo, g_.draft.hi});
}

void Model::write_row(std::int64_t slot, std::uint64_t state_seed, std::int64_t consumed) {
  const std::int64_t base = g_.live_row(slot) * g_.row_bytes;
  jobs_.push_back({0, 0, base + g_.ssm_offset, mix64(state_seed + salt_ssm), g_.ssm.lo, g_.ssm.hi});
  jobs_.push_back({0, 0, base + g_.conv_offset, mix64(state_seed + salt_conv), g_.conv.lo, g_.conv.hi});
  if (g_.scratch_bytes > 0)
    jobs_.push_back({0, 0, base + g_.scratch_offset,
                     mix64(step_seed_ + salt_scratch + static_cast<std::uint64_t>(slot)), 0, g_.scratch_bytes});
  jobs_.push_back({0, 1, base + g_.consumed_offset, static_cast<std::uint64_t>(consumed), 0, 0});
  jobs_.push_back({request_target(), 1, slot * 8, static_cast<std::uint64_t>(consumed), 0, 0});
}

}  // namespace statexfer::sim
