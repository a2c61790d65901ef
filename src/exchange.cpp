// The host side of prefill/decode records (docs/CONTRACT.md §17): sizes and
// the tables both sides build from the model's layout.
#include <statexfer/exchange.hpp>

#include <algorithm>
#include <cstring>

#include "impl/exchange_format.hpp"

namespace statexfer {

namespace impl {

namespace {

struct SideLayout {
  StateLayout local;
  std::vector<std::int64_t> held_begin, segment_offset, block_bytes;  // per segment; block_bytes per region
};

// Where each segment's units lie in rank `rank` of `tp`'s row.
SideLayout side_layout(const ModelLayout& model, int tp, int rank) {
  SideLayout s{model.local(tp, rank), {}, {}, {}};
  const int n = model.segment_count();
  s.held_begin.resize(static_cast<std::size_t>(n));
  s.segment_offset.resize(static_cast<std::size_t>(n));
  s.block_bytes.assign(model.regions().size(), 0);
  for (int g = 0; g < n; ++g) {
    const auto [begin, end] = model.held(g, tp, rank);
    const auto r = static_cast<std::size_t>(model.region_of(g));
    s.held_begin[static_cast<std::size_t>(g)] = begin;
    s.segment_offset[static_cast<std::size_t>(g)] = s.block_bytes[r];
    s.block_bytes[r] += (end - begin) * model.segment(g).unit_bytes;
  }
  return s;
}

}  // namespace

PairTable pair_table(const ModelLayout& model, int source_tp, int source_rank, int destination_tp, int destination_rank,
                     bool on_source, std::int64_t chunk, int peer) {
  PairTable t;
  const std::vector<SliceRange> slices = model.slices(source_tp, source_rank, destination_tp, destination_rank);
  const SideLayout side =
      on_source ? side_layout(model, source_tp, source_rank) : side_layout(model, destination_tp, destination_rank);
  bool sends = false;
  for (const SliceRange& s : slices) {
    t.slices.push_back({s.segment, s.begin, s.end, 0});
    sends = sends || s.end > s.begin;
  }
  t.header_bytes = 80 + 16 * static_cast<std::int64_t>(slices.size());
  // The slices' words follow the header's 10; a pair's are fixed, so their sum is taken here once.
  for (std::size_t g = 0; g < t.slices.size(); ++g) {
    std::uint64_t words[2];
    std::memcpy(words, &t.slices[g], sizeof(words));
    const std::int64_t k = static_cast<std::int64_t>(sizeof(RecordHeader) / 8 + 2 * g);
    t.slices_checksum += checksum_word(words[0], k) + checksum_word(words[1], k + 1);
  }
  // Region by region, block by block, segment by segment (§17's payload order).
  std::int64_t payload = 0;
  int g = 0;
  for (std::size_t r = 0; r < model.regions().size(); ++r) {
    const ModelRegion& region = model.regions()[r];
    const int first = g, count = static_cast<int>(region.segments.size());
    const std::int64_t base = side.local.region(region.name).offset;
    for (std::int64_t b = 0; b < region.blocks; ++b) {
      for (int k = first; k < first + count; ++k) {
        const SliceRange& s = slices[static_cast<std::size_t>(k)];
        if (s.end <= s.begin) continue;
        const std::int64_t unit = model.segment(k).unit_bytes;
        const std::int64_t bytes = (s.end - s.begin) * unit;
        if (s.begin == 0 && bytes >= 8 && b == 0 && k == first) {
          if (region.name == "consumed_tokens") t.endpoint_at = payload;
          if (region.name == "prefix_key") t.key_at = payload;
        }
        const std::int64_t row = base + b * side.block_bytes[r] + side.segment_offset[static_cast<std::size_t>(k)] +
                                 (s.begin - side.held_begin[static_cast<std::size_t>(k)]) * unit;
        for (std::int64_t at = 0; at < bytes; at += chunk) {
          const std::int64_t length = std::min(chunk, bytes - at);
          const bool last = at + length == bytes;
          const std::int64_t padding = last ? (8 - bytes % 8) % 8 : 0;
          t.chunks.push_back(
              {row + at, payload + at, static_cast<std::int32_t>(length), static_cast<std::int32_t>(padding), peer, 0});
        }
        payload += (bytes + 7) / 8 * 8;
      }
    }
    g += count;
  }
  t.payload_bytes = payload;
  t.record_bytes = sends ? (t.header_bytes + payload + 15) / 16 * 16 : 0;
  return t;
}

}  // namespace impl

std::int64_t record_header_bytes(const ModelLayout& model) { return 80 + 16 * std::int64_t(model.segment_count()); }

std::int64_t record_bytes(const ModelLayout& model, GroupRank source, GroupRank destination) {
  return impl::pair_table(model, source.size, source.rank, destination.size, destination.rank, true,
                          std::int64_t(1) << 40, 0)
      .record_bytes;
}

}  // namespace statexfer
