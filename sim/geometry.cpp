#include "geometry.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace statexfer::sim {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument(what);
}

}  // namespace

std::string spec_tokens_range() {
  return "--spec-tokens must be 0 (off) to " + std::to_string(statexfer::max_speculative_positions) +
         " (the free columns of the [C, " + std::to_string(statexfer::state_row_columns) + "] state rows)";
}

Geometry make_geometry(const SimConfig& cfg, std::int64_t max_tokens, const Comm& comm) {
  Geometry g;
  g.capacity = cfg.capacity;
  g.snapshot_rows = cfg.snapshot_rows;
  g.page_tokens = cfg.page_tokens;
  g.kv_planes = cfg.kv_planes;
  g.draft_planes = cfg.draft_planes;
  require(g.capacity >= 1 && (g.capacity & (g.capacity - 1)) == 0, "--capacity must be a power of two");
  require(g.snapshot_rows >= 1, "--snapshot-rows must be >= 1");
  require(g.page_tokens >= 1, "--page-tokens must be >= 1");
  require(g.kv_planes >= 1, "--kv-planes must be >= 1 (the transfer needs a page binding)");
  require(g.draft_planes >= 0, "--draft-planes must be >= 0");
  require(cfg.host_snapshot_rows >= 0, "--host-snapshot-rows must be >= 0");
  g.host_rows = cfg.host_snapshot_rows > 0 ? 1 + cfg.host_snapshot_rows : 0;
  const int n = comm.size, r = comm.rank;
  require(cfg.row_bytes >= 16 * n, "--row-bytes must be at least 16 per rank");
  require(cfg.kv_token_bytes >= n && (g.draft_planes == 0 || cfg.draft_token_bytes >= n),
          "--kv-token-bytes and --draft-token-bytes must be at least 1 per rank");
  require(cfg.scratch_bytes >= 0, "--scratch-bytes must be >= 0");
  require(cfg.spec_tokens >= 0 && cfg.spec_tokens <= statexfer::max_speculative_positions, spec_tokens_range());
  require(cfg.accept_rate >= 0 && cfg.accept_rate <= 1, "--accept-rate must be in [0, 1]");
  g.positions = cfg.spec_tokens;
  g.commit_copy = cfg.commit_copy;

  // The recurrent state is one sixteenth conv, the rest SSM.
  const std::int64_t conv_global = cfg.row_bytes / 16;
  g.ssm = shard_of(cfg.row_bytes - conv_global, r, n);
  g.conv = shard_of(conv_global, r, n);
  g.kv = shard_of(cfg.kv_token_bytes, r, n);
  g.draft = shard_of(std::max<std::int64_t>(cfg.draft_token_bytes, 1), r, n);
  g.table_width =
      std::max<std::int64_t>(1, (std::max<std::int64_t>(max_tokens, 1) + g.page_tokens - 1) / g.page_tokens);
  g.rows = 1 + g.capacity * (1 + g.positions) + g.snapshot_rows;
  g.pages = cfg.pages > 0 ? cfg.pages : g.capacity * g.table_width;
  g.kv_page_bytes = g.page_tokens * g.kv.size();
  g.draft_page_bytes = g.page_tokens * g.draft.size();

  // consumed_tokens and the scratch are whole on every rank; the recurrent
  // state and the saved pages are this rank's shard.
  std::vector<statexfer::StateLayout::Field> fields{{"consumed_tokens", 8, statexfer::DType::int64}};
  // The prefix key, whole on every rank like consumed_tokens: with speculative
  // decoding (whose restores and commits recycle rows) or --prefix-keys; never
  // otherwise, so that a default run's rows and bytes stay as they were.
  if (g.positions > 0 || cfg.prefix_keys) fields.push_back({"prefix_key", 8, statexfer::DType::int64});
  if (cfg.scratch_bytes > 0) fields.push_back({"scratch", cfg.scratch_bytes, statexfer::DType::uint8});
  fields.push_back({"ssm", g.ssm.size(), statexfer::DType::uint8});
  fields.push_back({"conv", g.conv.size(), statexfer::DType::uint8});
  for (std::int64_t i = 0; i < g.kv_planes; ++i)
    fields.push_back({"kv" + std::to_string(i), g.kv_page_bytes, statexfer::DType::uint8});
  for (std::int64_t i = 0; i < g.draft_planes; ++i)
    fields.push_back({"draft" + std::to_string(i), 2 * g.draft_page_bytes, statexfer::DType::uint8});
  g.layout = statexfer::StateLayout::pack(fields);
  g.scratch_bytes = cfg.scratch_bytes;
  g.consumed_offset = g.layout.region("consumed_tokens").offset;
  g.scratch_offset = cfg.scratch_bytes > 0 ? g.layout.region("scratch").offset : 0;
  g.ssm_offset = g.layout.region("ssm").offset;
  g.conv_offset = g.layout.region("conv").offset;
  g.key_offset = g.layout.contains("prefix_key") ? g.layout.region("prefix_key").offset : -1;
  g.row_bytes = g.layout.row_bytes();
  g.row_copy_bytes = g.row_bytes - cfg.scratch_bytes;
  return g;
}

}  // namespace statexfer::sim
