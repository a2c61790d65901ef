#include "model.hpp"

#include <algorithm>

namespace statexfer::sim {
namespace {

// A recurrent state of tens of MiB as one job would be one team's work on a GPU.
constexpr std::int64_t fill_piece_bytes = 128 * 1024;

}  // namespace

void Model::begin_step(std::int64_t step) {
  jobs_.clear();
  step_seed_ = mix64(static_cast<std::uint64_t>(step) * 0x9E37ULL);
}

void Model::write_token(std::int64_t position, std::uint64_t seed, std::uint64_t previous_seed,
                        const std::vector<std::int32_t>& pages, const std::vector<std::int32_t>& draft_pages, bool kv,
                        bool draft) {
  const std::int64_t pt = g_.page_tokens;
  if (kv) {
    const std::int64_t page = pages[static_cast<std::size_t>(position / pt)];
    for (std::int64_t i = 0; i < g_.kv_planes; ++i)
      jobs_.push_back({kv_target(i), 0, page * g_.kv_page_bytes + (position % pt) * g_.kv.size(),
                       mix64(seed + salt_kv + static_cast<std::uint64_t>(i)), g_.kv.lo, g_.kv.hi});
    token_bytes_ += g_.kv_planes * g_.kv.size();
  }
  if (position < 1 || !draft || g_.draft_planes == 0) return;  // the draft model lags one token
  const std::int64_t q = position - 1;
  const std::int64_t draft_page = draft_pages[static_cast<std::size_t>(q / pt)];
  for (std::int64_t i = 0; i < g_.draft_planes; ++i)
    jobs_.push_back({draft_target(i), 0, draft_page * g_.draft_page_bytes + (q % pt) * g_.draft.size(),
                     mix64(previous_seed + salt_draft + static_cast<std::uint64_t>(i)), g_.draft.lo, g_.draft.hi});
  token_bytes_ += g_.draft_planes * g_.draft.size();
}

void Model::fill(std::int64_t offset, std::uint64_t seed, std::int64_t lo, std::int64_t hi) {
  // Pieces end on global 8-byte words, so each piece writes whole words but at the ends.
  for (std::int64_t a = lo; a < hi;) {
    const std::int64_t b = std::min(hi, ((a + fill_piece_bytes) >> 3) << 3);
    jobs_.push_back({0, 0, offset + (a - lo), seed, a, b});
    a = b;
  }
}

void Model::write_row(std::int64_t slot, std::int64_t row, std::uint64_t state_seed, std::int64_t consumed) {
  write_state(row, state_seed, slot);
  stamp_consumed(row, consumed);
  set_request_consumed(slot, consumed);
}

void Model::write_state(std::int64_t row, std::uint64_t state_seed, std::int64_t salt) {
  const std::int64_t base = row * g_.row_bytes;
  fill(base + g_.ssm_offset, mix64(state_seed + salt_ssm), g_.ssm.lo, g_.ssm.hi);
  fill(base + g_.conv_offset, mix64(state_seed + salt_conv), g_.conv.lo, g_.conv.hi);
  state_bytes_ += g_.ssm.size() + g_.conv.size();
  if (g_.scratch_bytes > 0)
    jobs_.push_back({0, 0, base + g_.scratch_offset,
                     mix64(step_seed_ + salt_scratch + static_cast<std::uint64_t>(salt)), 0, g_.scratch_bytes});
}

void Model::stamp_consumed(std::int64_t row, std::int64_t consumed) {
  jobs_.push_back({0, 1, row * g_.row_bytes + g_.consumed_offset, static_cast<std::uint64_t>(consumed), 0, 0});
}

void Model::set_request_consumed(std::int64_t slot, std::int64_t consumed) {
  // Column 0 of the [C, 1] request state: one int64 per slot.
  const auto offset = slot * static_cast<std::int64_t>(sizeof(std::int64_t));
  jobs_.push_back({request_target(), 1, offset, static_cast<std::uint64_t>(consumed), 0, 0});
}

void Model::set_accepted(std::int64_t slot, std::int32_t accepted) {
  accepted_[static_cast<std::size_t>(slot)] = accepted;
}

}  // namespace statexfer::sim
