#include "replica.hpp"

#include <cstring>
#include <string>

namespace statexfer::sim {
namespace {

test::OracleGeometry oracle_geometry(const Geometry& g) {
  test::OracleGeometry o;
  o.capacity = g.capacity;
  o.rows = g.rows;
  o.row_bytes = g.row_bytes;
  o.page_tokens = g.page_tokens;
  o.width = g.table_width;
  o.consumed_offset = g.consumed_offset;
  o.cache_pages = g.pages;
  o.host_rows = g.host_rows;
  o.positions = g.positions;
  o.remap = !g.commit_copy;
  o.key_offset = g.key_offset;
  if (g.scratch_bytes > 0) o.excluded.emplace_back(g.scratch_offset, g.scratch_offset + g.scratch_bytes);
  for (std::int64_t i = 0; i < g.kv_planes; ++i)
    o.page_bindings.push_back({g.layout.region("kv" + std::to_string(i)).offset, g.kv_page_bytes});
  for (std::int64_t i = 0; i < g.draft_planes; ++i)
    o.trailing_bindings.push_back({g.layout.region("draft" + std::to_string(i)).offset, 2 * g.draft_page_bytes});
  return o;
}

}  // namespace

HostReplica::HostReplica(const Geometry& geometry) : g_(geometry), oracle_(oracle_geometry(geometry)) {
  pool_.assign(static_cast<std::size_t>(g_.rows * g_.row_bytes), 0);
  host_.assign(static_cast<std::size_t>(g_.host_rows * g_.row_bytes), 0);
  for (std::int64_t i = 0; i < g_.kv_planes + g_.draft_planes; ++i)
    caches_.emplace_back(static_cast<std::size_t>(g_.pages * cache_page_bytes(static_cast<std::size_t>(i))), 0);
  request_consumed_.assign(static_cast<std::size_t>(g_.capacity), 0);
  state_rows_ = g_.initial_state_rows();
  accepted_.assign(static_cast<std::size_t>(g_.capacity), 0);
}

test::OracleMemory HostReplica::memory(const std::int32_t* tables, const std::int32_t* draft_tables,
                                       const std::int32_t* accepted) {
  test::OracleMemory m;
  m.pool = pool_.data();
  for (auto& c : caches_) m.caches.push_back(c.data());
  m.tables = tables;
  m.trailing_tables = g_.draft_planes > 0 ? draft_tables : nullptr;
  m.state_rows = state_rows_.data();
  m.state_rows_stride = HostStateRows::columns;
  m.accepted = accepted != nullptr ? accepted : accepted_.data();
  m.request_consumed = request_consumed_.data();
  m.request_stride = 1;
  m.memory_capacity[0] = g_.rows;  // the pool's own memory capacity: every row, every page
  m.memory_capacity[1] = g_.pages;
  m.host = host_.empty() ? nullptr : host_.data();
  m.host_capacity = g_.host_rows;  // the tier's own capacity: every host row
  return m;
}

void HostReplica::run_jobs(const std::vector<FillJob>& jobs) {
  for (const FillJob& j : jobs) {
    std::uint8_t* base = target(j.target);
    if (j.set64) {
      set_int64(base, j);
    } else {
      const std::int64_t words = fill_words(j);
      for (std::int64_t k = 0; k < words; ++k) fill_word(base, j, k);
    }
  }
}

std::int64_t HostReplica::word(bool host, std::int64_t row, std::int64_t offset) const {
  std::int64_t v;
  std::memcpy(&v, (host ? host_ : pool_).data() + row * g_.row_bytes + offset, sizeof v);
  return v;
}

void HostReplica::set_word(bool host, std::int64_t row, std::int64_t offset, std::int64_t value) {
  std::memcpy((host ? host_ : pool_).data() + row * g_.row_bytes + offset, &value, sizeof value);
}

std::uint8_t* HostReplica::target(std::int32_t t) {
  if (t == 0) return pool_.data();
  if (t <= static_cast<std::int32_t>(caches_.size())) return caches_[static_cast<std::size_t>(t - 1)].data();
  return reinterpret_cast<std::uint8_t*>(request_consumed_.data());
}

}  // namespace statexfer::sim
