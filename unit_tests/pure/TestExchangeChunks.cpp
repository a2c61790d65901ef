// The pair tables of prefill/decode moves (src/impl/exchange_format.hpp) as the
// host values they are. The export moves a chunk by one of three paths by how
// its source (a pool row) and its destination (the record's payload) lie
// against 16 bytes: 16-byte words, 8-byte words, or bytes assembled
// (team_move_sum, src/impl/exchange_words.hpp, on GPUs; hosts copy with the
// C library). The every-TP-pair test (TestExchange.hpp) moves mini_regions'
// records against the oracle on every backend; here: those records' chunks
// reach all three paths. And the slices' part of a header's checksum, taken
// once a pair, is what the oracle's checksum of the header's words adds for
// them. Compiled once (unit_tests/pure).

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <statexfer/statexfer.hpp>
#include <test_common/reshard.hpp>

#include "common/exchange_fixture.hpp"
#include "impl/exchange_format.hpp"

namespace {

TEST(pure, exchange_chunks_reach_every_alignment_and_slices_sum_once) {
  const statexfer::ModelLayout model(statexfer::test::mini_regions(), 2);
  // Chunks of at least 16 bytes whose source and destination are 16 bytes apart, 8, or neither.
  std::int64_t paths[3] = {0, 0, 0};
  for (const int p : {1, 2, 4, 8})
    for (const int d : {1, 2, 4, 8})
      for (int i = 0; i < p; ++i)
        for (int j = 0; j < d; ++j) {
          SCOPED_TRACE("prefill TP " + std::to_string(p) + " rank " + std::to_string(i) + ", decode TP " +
                       std::to_string(d) + " rank " + std::to_string(j));
          const statexfer::impl::PairTable t = statexfer::impl::pair_table(model, p, i, d, j, true, 16384, j);
          if (t.record_bytes == 0) continue;
          // The header with every field 0 but its slices: the oracle's sum of its words less the header's
          // own ten (the checksum field counts as 0) is the slices' part.
          std::vector<std::uint8_t> header(static_cast<std::size_t>(t.header_bytes), 0);
          ASSERT_EQ(t.header_bytes, std::int64_t(sizeof(statexfer::impl::RecordHeader)) +
                                        std::int64_t(t.slices.size() * sizeof(statexfer::impl::RecordSlice)));
          std::memcpy(header.data() + sizeof(statexfer::impl::RecordHeader), t.slices.data(),
                      t.slices.size() * sizeof(statexfer::impl::RecordSlice));
          EXPECT_EQ(t.slices_checksum, statexfer::test::oracle_checksum(header.data(), t.header_bytes, 0) -
                                           statexfer::impl::header_fields_checksum(header.data()));
          // Pool rows 1 and 2 into record slots 0 and 1 (the pool's backing and the wire 16-byte aligned), in
          // the GPUs' export chunks of 16 KiB (exchange_words.hpp).
          const std::int64_t row_bytes = model.local(p, i).row_bytes();
          for (const std::int64_t row : {1, 2})
            for (const std::int64_t slot : {0, 1})
              for (const statexfer::impl::ExchangeChunk& c : t.chunks) {
                if (c.length < 16) continue;
                const std::int64_t src = row * row_bytes + c.row_offset;
                const std::int64_t dst = slot * t.record_bytes + t.header_bytes + c.payload_offset;
                const std::int64_t apart = (src ^ dst) & 15;
                ++paths[apart == 0 ? 0 : (apart & 7) == 0 ? 1 : 2];
              }
        }
  EXPECT_GT(paths[0], 0) << "16-byte words";
  EXPECT_GT(paths[1], 0) << "8-byte words";
  EXPECT_GT(paths[2], 0) << "bytes assembled";
}

}  // namespace
