#include "reshard.hpp"

#include <cstring>
#include <stdexcept>

namespace statexfer::test {

namespace {

std::int64_t up16(std::int64_t n) { return (n + 15) / 16 * 16; }

// Bytes of one block of `region` on the rank.
std::int64_t block_bytes(const ModelRegion& region, int tp, int rank) {
  std::int64_t n = 0;
  for (const Segment& s : region.segments) {
    const auto [begin, end] = oracle_held(s, tp, rank);
    n += (end - begin) * s.unit_bytes;
  }
  return n;
}

}  // namespace

std::pair<std::int64_t, std::int64_t> oracle_held(const Segment& s, int tp, int rank) {
  if (s.split == Split::replicated) return {0, s.units};
  if (s.units % tp == 0) return {rank * (s.units / tp), (rank + 1) * (s.units / tp)};
  if (tp % s.units == 0) {
    const std::int64_t u = rank / (tp / s.units);
    return {u, u + 1};
  }
  throw std::invalid_argument("oracle_held: the split does not divide");
}

std::int64_t oracle_row_bytes(const std::vector<ModelRegion>& regions, int tp, int rank) {
  std::int64_t offset = 0;
  for (const ModelRegion& region : regions) offset = up16(offset) + region.blocks * block_bytes(region, tp, rank);
  return offset > 16 ? up16(offset) : 16;
}

std::vector<std::uint8_t> oracle_shard(const std::vector<ModelRegion>& regions, const std::vector<std::uint8_t>& whole,
                                       int tp, int rank) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(oracle_row_bytes(regions, tp, rank)), 0);
  std::int64_t from = 0, to = 0;  // the region's offset in the whole row and in the rank's
  for (const ModelRegion& region : regions) {
    from = up16(from);
    to = up16(to);
    const std::int64_t whole_block = block_bytes(region, 1, 0), rank_block = block_bytes(region, tp, rank);
    for (std::int64_t b = 0; b < region.blocks; ++b) {
      std::int64_t in_whole = from + b * whole_block, in_rank = to + b * rank_block;
      for (const Segment& s : region.segments) {
        const auto [begin, end] = oracle_held(s, tp, rank);
        std::memcpy(out.data() + in_rank, whole.data() + in_whole + begin * s.unit_bytes,
                    static_cast<std::size_t>((end - begin) * s.unit_bytes));
        in_whole += s.units * s.unit_bytes;
        in_rank += (end - begin) * s.unit_bytes;
      }
    }
    from += region.blocks * whole_block;
    to += region.blocks * rank_block;
  }
  return out;
}

std::uint64_t oracle_checksum(const std::uint8_t* record, std::int64_t header_bytes, std::int64_t payload_bytes) {
  std::uint64_t sum = 0;
  const std::int64_t words = (header_bytes + payload_bytes) / 8;
  for (std::int64_t k = 0; k < words; ++k) {
    std::uint64_t w = 0;
    if (k != 8) std::memcpy(&w, record + 8 * k, 8);  // bytes 64..71 hold the checksum itself
    std::uint64_t z = w + static_cast<std::uint64_t>(k) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    sum += z ^ (z >> 31);
  }
  return sum;
}

}  // namespace statexfer::test
