#ifndef STATEXFER_IMPL_EXCHANGE_FORMAT_HPP
#define STATEXFER_IMPL_EXCHANGE_FORMAT_HPP

// The record of a prefill/decode move (docs/CONTRACT.md §17): its header, its
// checksum, and the tables both sides build on the host from the model's
// layout for one (source rank, destination rank) pair: the slices the record
// carries and the chunks its payload is moved in.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

#include <statexfer/sharding.hpp>

namespace statexfer::impl {

inline constexpr std::uint32_t record_magic = 0x52585453u;  // "STXR" in little-endian bytes
inline constexpr std::uint32_t record_version = 1;

/// The fixed part of a record's header (80 bytes), then `segments` RecordSlice.
struct RecordHeader {
  std::uint32_t magic;
  std::uint32_t version;
  std::uint64_t fingerprint;
  std::int64_t key;
  std::int64_t endpoint;
  std::int32_t source_tp, source_rank, destination_tp, destination_rank;
  std::int32_t status;
  std::int32_t segments;
  std::int64_t payload_bytes;
  std::uint64_t checksum;
  std::int64_t slot;
};
static_assert(sizeof(RecordHeader) == 80, "docs/CONTRACT.md §17 fixes the header's layout");

struct RecordSlice {
  std::int32_t segment, begin, end, zero;
};
static_assert(sizeof(RecordSlice) == 16, "docs/CONTRACT.md §17 fixes the header's layout");

/// Word k of a record (8 bytes, the record's k-th) as the checksum adds it: SplitMix64's finalizer.
KOKKOS_INLINE_FUNCTION std::uint64_t checksum_word(std::uint64_t word, std::int64_t k) {
  std::uint64_t z = word + static_cast<std::uint64_t>(k) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// A header's own words (RecordHeader, before the slices) summed as the
/// checksum does, its checksum field read as 0: with the slices' sum
/// (PairTable::slices_checksum, fixed for a pair), the header's checksum.
/// From a copy in registers (the export's, before it is stored).
KOKKOS_INLINE_FUNCTION std::uint64_t header_fields_checksum(const RecordHeader& h) {
  std::uint64_t words[sizeof(RecordHeader) / 8];
  std::memcpy(words, &h, sizeof(words));
  std::uint64_t sum = 0;
  for (int k = 0; k < static_cast<int>(sizeof(RecordHeader) / 8); ++k) sum += checksum_word(k == 8 ? 0 : words[k], k);
  return sum;
}
/// The same of a record's header (8-byte aligned).
KOKKOS_INLINE_FUNCTION std::uint64_t header_fields_checksum(const std::uint8_t* record) {
  std::uint64_t sum = 0;
  for (int k = 0; k < static_cast<int>(sizeof(RecordHeader) / 8); ++k)
    sum += checksum_word(k == 8 ? 0 : reinterpret_cast<const std::uint64_t*>(record)[k], k);  // bytes 64..71: 0
  return sum;
}

/// `length` bytes of a pool row at `row_offset` and the record's payload at
/// `payload_offset`, then `padding` zero bytes of payload (a run ends on an
/// 8-byte boundary); `peer` is the other side's rank.
struct ExchangeChunk {
  std::int64_t row_offset;
  std::int64_t payload_offset;
  std::int32_t length;
  std::int32_t padding;
  std::int32_t peer;
  std::int32_t unused;
};

/// One (source rank, destination rank) pair's record: its sizes, its slices,
/// and the chunks of its payload (row offsets on this side's row).
struct PairTable {
  std::int64_t header_bytes = 0;
  std::int64_t payload_bytes = 0;
  std::int64_t record_bytes = 0;      // 0: the pair sends nothing
  std::uint64_t slices_checksum = 0;  // the slices' words in the header, summed as the checksum does
  // Where the record carries the row's consumed_tokens and prefix_key regions (replicated, one
  // source rank's), their payload offsets, which the import compares with the header's endpoint and key; -1: not here.
  std::int64_t endpoint_at = -1, key_at = -1;
  std::vector<RecordSlice> slices;
  std::vector<ExchangeChunk> chunks;
};

/// The pair table of `source` -> `destination`, with row offsets in the
/// source's row (`on_source`) or the destination's; chunks of at most `chunk` bytes.
PairTable pair_table(const ModelLayout& model, int source_tp, int source_rank, int destination_tp, int destination_rank,
                     bool on_source, std::int64_t chunk, int peer);

}  // namespace statexfer::impl

#endif
