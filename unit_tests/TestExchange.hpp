#ifndef STATEXFER_TEST_EXCHANGE_HPP
#define STATEXFER_TEST_EXCHANGE_HPP

// Prefill/decode moves (docs/CONTRACT.md §16, §17) between groups of every TP
// size pair in {1, 2, 4, 8}, in one process (the in-process transport,
// SharedWires: a source rank's wire buffer for a destination rank is the
// destination rank's buffer from it; common/exchange_fixture.hpp): every
// imported row equals the oracle's shard of the whole row (test_common/
// reshard.hpp), every record's checksum the oracle's, and each fault (a
// flipped payload byte, another model's layout, a stale key, a header naming
// another prefix than its payload, a missing slice, a wrong endpoint, a
// refused export, bad rows, two imports into one row, a bad count) gets its
// code and writes nothing, or, for a payload landed
// before its checksum failed, leaves its row unpublished. Both landings of the
// import (ImportLanding). Partly filled batches reuse one export and import.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <statexfer/statexfer.hpp>
#include <test_common/models.hpp>
#include <test_common/reshard.hpp>

#include "common/exchange_fixture.hpp"

namespace {
namespace exchange_test {

namespace ft = statexfer::test;
using Exec = TEST_EXECSPACE;
using ft::exports_of;
using ft::imports_of;
using ft::make_wholes;
using ft::mini_regions;
using ft::Wholes;
using statexfer::Command;
using statexfer::GroupRank;
using statexfer::ModelLayout;
using statexfer::ModelRegion;
using statexfer::Segment;
using statexfer::Split;
using Move = ft::ExchangeMove<Exec>;
using statexfer::ImportLanding;

constexpr ImportLanding landings[] = {ImportLanding::publish_after_check, ImportLanding::check_before_write};

std::string name_of(ImportLanding l) {
  return l == ImportLanding::publish_after_check ? "publish after check" : "check before write";
}

constexpr int default_capacity = ft::default_exchange_capacity;

std::vector<std::int32_t> zeros(int capacity = default_capacity) { return std::vector<std::int32_t>(capacity, 0); }

}  // namespace exchange_test

// Every pair of TP sizes in {1, 2, 4, 8}: the imported rows are the oracle's
// shards, each record's header and checksum what §17 says.
TEST(TEST_CATEGORY, exchange_every_tp_pair_matches_the_oracle) {
  using namespace exchange_test;
  const ModelLayout model(mini_regions(), 2);
  for (const ImportLanding landing : landings)
    for (const int p : {1, 2, 4, 8})
      for (const int d : {1, 2, 4, 8}) {
        SCOPED_TRACE("prefill TP " + std::to_string(p) + ", decode TP " + std::to_string(d) + ", " + name_of(landing));
        Move move(model, p, d, default_capacity + 2, default_capacity, landing);
        const Wholes w = make_wholes(model, 5, 1000 + p * 10 + d);
        move.load_sources(w);
        for (const auto& codes : move.export_all(exports_of(w), 5)) EXPECT_EQ(codes, zeros());
        // Every record: magic, fingerprint, geometry, status 0, and the oracle's checksum.
        for (int i = 0; i < p; ++i)
          for (int j = 0; j < d; ++j) {
            if (statexfer::record_bytes(model, {p, i}, {d, j}) == 0) continue;
            for (std::int64_t k = 0; k < 5; ++k) {
              const auto rec = move.record(i, j, k);
              std::uint32_t magic;
              std::uint64_t fingerprint, checksum;
              std::int32_t geometry[6];
              std::int64_t payload;
              std::memcpy(&magic, rec.data(), 4);
              std::memcpy(&fingerprint, rec.data() + 8, 8);
              std::memcpy(geometry, rec.data() + 32, 24);
              std::memcpy(&payload, rec.data() + 56, 8);
              std::memcpy(&checksum, rec.data() + 64, 8);
              EXPECT_EQ(magic, 0x52585453u);
              EXPECT_EQ(fingerprint, model.fingerprint());
              EXPECT_EQ(geometry[0], p);
              EXPECT_EQ(geometry[1], i);
              EXPECT_EQ(geometry[2], d);
              EXPECT_EQ(geometry[3], j);
              EXPECT_EQ(geometry[4], 0) << "status";
              EXPECT_EQ(geometry[5], model.segment_count());
              const std::int64_t header = statexfer::record_header_bytes(model);
              EXPECT_EQ(checksum, ft::oracle_checksum(rec.data(), header, payload)) << "rank " << i << " -> " << j;
            }
          }
        for (const auto& codes : move.import_all(imports_of(w), 5)) EXPECT_EQ(codes, zeros());
        for (int j = 0; j < d; ++j)
          for (std::int64_t k = 0; k < 5; ++k)
            EXPECT_EQ(move.destination_row(j, k + 1), ft::oracle_shard(model.regions(), w.rows[k], d, j))
                << "decode rank " << j << ", row " << k + 1;
      }
}

// Each fault gets its code on the decode side and writes nothing there; a
// payload that fails its checksum (known only once it is read) is left
// unpublished where the import lands before it checks.
TEST(TEST_CATEGORY, exchange_faults_are_refused_and_write_nothing) {
  using namespace exchange_test;
  for (const ImportLanding landing : landings) {
    SCOPED_TRACE(name_of(landing));
    const ModelLayout model(mini_regions(), 2);
    const int p = 4, d = 2;  // groups 2: B and C replicated on the prefill side
    Move move(model, p, d, default_capacity + 2, default_capacity, landing);
    const Wholes w = make_wholes(model, 4, 77);
    move.load_sources(w);
    const auto fresh = [&] {
      for (auto& pool : move.destinations) Kokkos::deep_copy(pool.backing(), 0);
      for (const auto& codes : move.export_all(exports_of(w), 4)) ASSERT_EQ(codes, zeros());
    };
    const auto untouched = [&](std::int64_t row) {
      for (int j = 0; j < d; ++j)
        EXPECT_EQ(move.destination_row(j, row), std::vector<std::uint8_t>(move.destinations[j].row_bytes(), 0))
            << "decode rank " << j << " row " << row;
    };
    const auto expect_codes = [&](const std::vector<Command>& batch, int count, std::vector<std::int32_t> want) {
      want.resize(default_capacity, 0);
      const auto codes = move.import_all(batch, count);
      for (int j = 0; j < d; ++j) EXPECT_EQ(codes[static_cast<std::size_t>(j)], want) << "decode rank " << j;
    };
    const std::int64_t header = statexfer::record_header_bytes(model);

    fresh();  // a payload byte flipped in flight (rank 1 -> 0, row 0)
    move.patch_record(1, 0, 0, header + 3, 0x10);
    const auto codes = move.import_all(imports_of(w), 4);
    EXPECT_EQ(codes[0], (std::vector<std::int32_t>{10, 0, 0, 0, 0, 0, 0, 0}));
    EXPECT_EQ(codes[1], zeros()) << "rank 1 of the decode group never reads that record";
    if (landing == ImportLanding::publish_after_check)
      EXPECT_EQ(move.destination_endpoint(0, 1), -1) << "landed, unpublished";
    else
      EXPECT_EQ(move.destination_row(0, 1), std::vector<std::uint8_t>(move.destinations[0].row_bytes(), 0));

    fresh();  // another model's layout: the fingerprint of rank 0's record for decode rank 0 differs
    move.patch_record(0, 0, 1, 8, 0x01);
    {
      const auto c = move.import_all(imports_of(w), 4);
      EXPECT_EQ(c[0], (std::vector<std::int32_t>{0, 8, 0, 0, 0, 0, 0, 0}));
      EXPECT_EQ(c[1], zeros()) << "rank 0 of the prefill group sends decode rank 1 nothing";
      EXPECT_EQ(move.destination_row(0, 2), std::vector<std::uint8_t>(move.destinations[0].row_bytes(), 0));
    }

    fresh();  // a stale key and a wrong endpoint
    auto batch = imports_of(w);
    batch[2].prefix_key += 1;
    batch[3].expected_consumed += 1;
    expect_codes(batch, 4, {0, 0, 9, 9});
    untouched(3);
    untouched(4);

    // Records whose headers name another prefix than the payload holds, their
    // checksums recomputed (packed from another row, or edited): every record
    // of `slot` for decode rank 0 gets `field` (16 the key, 24 the endpoint) +
    // `by`, and the import's command names it: 9 from the record that carries
    // the row's `region` (replicated: one prefill rank sends it), its row
    // untouched, or landed and unpublished.
    const auto forge = [&](const char* region, std::int64_t field, std::int64_t slot, std::int64_t by) {
      bool carried = false;
      std::int64_t forged = 0;
      for (int i = 0; i < p; ++i) {
        if (statexfer::record_bytes(model, {p, i}, {d, 0}) == 0) continue;
        const auto slices = model.slices(p, i, d, 0);
        for (int g = 0; g < model.segment_count(); ++g)
          carried |= model.regions()[static_cast<std::size_t>(model.region_of(g))].name == region &&
                     slices[static_cast<std::size_t>(g)].end > slices[static_cast<std::size_t>(g)].begin;
        auto rec = move.record(i, 0, slot);
        std::int64_t value, payload;
        std::uint64_t was;
        std::memcpy(&value, rec.data() + field, 8);
        std::memcpy(&payload, rec.data() + 56, 8);
        std::memcpy(&was, rec.data() + 64, 8);
        forged = value + by;
        std::memcpy(rec.data() + field, &forged, 8);
        const std::uint64_t sum = ft::oracle_checksum(rec.data(), header, payload);
        for (int b = 0; b < 8; ++b) {
          move.patch_record(i, 0, slot, field + b, static_cast<std::uint8_t>(((value ^ forged) >> (8 * b)) & 0xff));
          move.patch_record(i, 0, slot, 64 + b, static_cast<std::uint8_t>(((sum ^ was) >> (8 * b)) & 0xff));
        }
      }
      EXPECT_TRUE(carried) << region;
      return forged;
    };
    const auto refused_on_rank0 = [&](std::int64_t row) {
      EXPECT_EQ(move.destination_row(1, row), std::vector<std::uint8_t>(move.destinations[1].row_bytes(), 0))
          << "decode rank 1 refuses its (unedited) record's header before it lands";
      if (landing == ImportLanding::publish_after_check)
        EXPECT_EQ(move.destination_endpoint(0, row), -1) << "landed, unpublished";
      else
        EXPECT_EQ(move.destination_row(0, row), std::vector<std::uint8_t>(move.destinations[0].row_bytes(), 0));
    };
    fresh();
    batch = imports_of(w);
    batch[2].prefix_key = forge("prefix_key", 16, 2, 7);
    expect_codes(batch, 4, {0, 0, 9});
    refused_on_rank0(3);
    fresh();
    batch = imports_of(w);
    batch[1].expected_consumed = forge("consumed_tokens", 24, 1, 3);
    expect_codes(batch, 4, {0, 9});
    refused_on_rank0(2);

    fresh();  // a missing slice: the first nonempty range of a record emptied
    for (int g = 0; g < model.segment_count(); ++g) {
      const auto rec = move.record(2, 1, 0);
      std::int32_t range[2];
      std::memcpy(range, rec.data() + 80 + 16 * g + 4, 8);
      if (range[1] > range[0]) {
        const std::int32_t begin = range[0];
        for (int b = 0; b < 4; ++b)
          move.patch_record(2, 1, 0, 80 + 16 * g + 8 + b,
                            static_cast<std::uint8_t>(((range[1] ^ begin) >> (8 * b)) & 0xff));
        break;
      }
    }
    {
      const auto c = move.import_all(imports_of(w), 4);
      EXPECT_EQ(c[1][0], 11);
      EXPECT_EQ(c[0][0], 0) << "decode rank 0's records are whole (a group would combine the codes, §9)";
      EXPECT_EQ(move.destination_row(1, 1), std::vector<std::uint8_t>(move.destinations[1].row_bytes(), 0));
    }

    // An export refused at the source (a wrong endpoint): status 3 in its records, code 9 on import.
    for (auto& pool : move.destinations) Kokkos::deep_copy(pool.backing(), 0);
    auto bad_export = exports_of(w);
    bad_export[1].expected_consumed += 2;
    for (const auto& c : move.export_all(bad_export, 4))
      EXPECT_EQ(c, (std::vector<std::int32_t>{0, 3, 0, 0, 0, 0, 0, 0}));
    expect_codes(imports_of(w), 4, {0, 9});
    untouched(2);

    // The prefill side's own refusals: two exports into one record slot (4 for
    // both), a bad count (5 for every row), then one live command (the rows past
    // it back to 0).
    auto twice = exports_of(w);
    twice[2].destination = 0;
    for (const auto& c : move.export_all(twice, 4)) EXPECT_EQ(c, (std::vector<std::int32_t>{4, 0, 4, 0, 0, 0, 0, 0}));
    for (const int count : {-1, default_capacity + 1})
      for (const auto& c : move.export_all(exports_of(w), count))
        EXPECT_EQ(c, std::vector<std::int32_t>(default_capacity, 5)) << "count " << count;
    for (const auto& c : move.export_all(twice, 4)) EXPECT_EQ(c, (std::vector<std::int32_t>{4, 0, 4, 0, 0, 0, 0, 0}));
    for (const auto& c : move.export_all(twice, 1)) EXPECT_EQ(c, zeros());

    // Bad rows, two imports into one row, a bad count.
    fresh();
    batch = imports_of(w);
    batch[0].destination = move.rows + 3;  // past the pool
    batch[2].destination = 4;              // the row of command 3 too
    expect_codes(batch, 4, {2, 0, 4, 4});
    untouched(3);
    untouched(4);
    expect_codes(imports_of(w), -1, std::vector<std::int32_t>(default_capacity, 5));
    batch = imports_of(w);
    batch[1].operation = statexfer::op_export;
    expect_codes(batch, 2, {0, 1});
  }
}

// A landed row is published only when its code is still 0 at apply(): a code
// another decode rank combined in (§9) leaves it unpublished (or, checking
// before writing, untouched), and no export reads an unpublished row.
TEST(TEST_CATEGORY, exchange_rows_publish_only_what_the_group_accepts) {
  using namespace exchange_test;
  const ModelLayout model(mini_regions(), 2);
  for (const ImportLanding landing : landings) {
    SCOPED_TRACE(name_of(landing));
    Move move(model, 2, 1, default_capacity + 2, default_capacity, landing);
    const Wholes w = make_wholes(model, 3, 31);
    move.load_sources(w);
    for (const auto& c : move.export_all(exports_of(w), 3)) EXPECT_EQ(c, zeros());
    auto& importer = *move.imports[0];
    const auto& errors = move.import_commands[0].errors;
    const auto zero_row = std::vector<std::uint8_t>(move.destinations[0].row_bytes(), 0);
    for (auto& pool : move.destinations) Kokkos::deep_copy(pool.backing(), 0);
    move.run(
        move.import_commands[0], imports_of(w), 3, [&] { importer.validate(Exec()); },
        [&] {
          Exec().fence();
          auto codes = ft::download(errors);
          EXPECT_EQ(codes, zeros());
          for (std::int64_t row = 1; row <= 3; ++row) {
            if (landing == ImportLanding::publish_after_check)
              EXPECT_EQ(move.destination_endpoint(0, row), -1) << "row " << row << " landed, not yet published";
            else
              EXPECT_EQ(move.destination_row(0, row), zero_row) << "row " << row << " written before apply()";
          }
          codes[1] = 9;  // another decode rank refused command 1
          ft::upload(errors, codes);
          importer.apply(Exec());
        });
    for (const std::int64_t k : {0, 2})
      EXPECT_EQ(move.destination_row(0, k + 1), ft::oracle_shard(model.regions(), w.rows[k], 1, 0)) << "command " << k;
    if (landing == ImportLanding::publish_after_check)
      EXPECT_EQ(move.destination_endpoint(0, 2), -1);
    else
      EXPECT_EQ(move.destination_row(0, 2), zero_row);
  }
  // The export refuses a negative endpoint, an unpublished row's among them: a row whose endpoint is -1 named
  // with -1 gets code 3 (§17).
  Move move(model, 1, 1);
  const Wholes w = make_wholes(model, 2, 32);
  move.load_sources(w);
  auto image = ft::download(move.sources[0].backing());
  const std::int64_t unpublished = -1, rb = move.sources[0].row_bytes();
  std::memcpy(image.data() + 2 * rb + model.local(1, 0).region("consumed_tokens").offset, &unpublished, 8);
  ft::upload(move.sources[0].backing(), image);
  auto batch = exports_of(w);
  batch[1].expected_consumed = -1;
  for (const auto& c : move.export_all(batch, 2)) EXPECT_EQ(c, (std::vector<std::int32_t>{0, 3, 0, 0, 0, 0, 0, 0}));
}

// One export and one import reused: a full batch, then partly filled ones (rows
// past the count carry junk), and an empty one.
TEST(TEST_CATEGORY, exchange_partial_batches_reuse_one_move) {
  using namespace exchange_test;
  const ModelLayout model(mini_regions(), 2);
  Move move(model, 2, 4);
  const Wholes w = make_wholes(model, default_capacity, 5);
  move.load_sources(w);
  for (const auto& c : move.export_all(exports_of(w), default_capacity)) EXPECT_EQ(c, zeros());
  for (const auto& c : move.import_all(imports_of(w), default_capacity)) EXPECT_EQ(c, zeros());
  for (const int live : {3, 1, 0}) {
    const Wholes v = make_wholes(model, default_capacity, 100 + live);
    move.load_sources(v);
    for (auto& pool : move.destinations) Kokkos::deep_copy(pool.backing(), 0);
    for (const auto& c : move.export_all(exports_of(v), live)) EXPECT_EQ(c, zeros());
    for (const auto& c : move.import_all(imports_of(v), live)) EXPECT_EQ(c, zeros());
    for (int j = 0; j < 4; ++j)
      for (std::int64_t k = 0; k < default_capacity; ++k) {
        const auto want = k < live ? ft::oracle_shard(model.regions(), v.rows[k], 4, j)
                                   : std::vector<std::uint8_t>(move.destinations[j].row_bytes(), 0);
        EXPECT_EQ(move.destination_row(j, k + 1), want) << "live " << live << ", rank " << j << ", row " << k + 1;
      }
  }
}

// Records of hundreds of chunks (3 MiB of SSM state a whole row, odd conv
// segments between): more chunks than a GPU's grid has teams, so the export
// and the landing import hand them out and, on Hopper, stage them through
// shared memory; every record's checksum and every row as the oracle's, full
// and partly filled, and a byte flipped deep in a payload refused (10).
TEST(TEST_CATEGORY, exchange_records_of_many_chunks_match_the_oracle) {
  using namespace exchange_test;
  const ModelLayout model(mini_regions(128 * 1024), 2);
  for (const ImportLanding landing : landings)
    for (const auto& [p, d] : {std::pair{1, 1}, std::pair{2, 1}, std::pair{1, 2}}) {
      SCOPED_TRACE("prefill TP " + std::to_string(p) + ", decode TP " + std::to_string(d) + ", " + name_of(landing));
      Move move(model, p, d, default_capacity + 2, default_capacity, landing);
      const std::int64_t header = statexfer::record_header_bytes(model);
      for (const int live : {default_capacity, 3}) {
        const Wholes w = make_wholes(model, live, 4000 + 100 * p + 10 * d + live);
        move.load_sources(w);
        for (auto& pool : move.destinations) Kokkos::deep_copy(pool.backing(), 0);
        for (const auto& codes : move.export_all(exports_of(w), live)) EXPECT_EQ(codes, zeros());
        for (int i = 0; i < p; ++i)
          for (int j = 0; j < d; ++j)
            for (std::int64_t k = 0; k < live; ++k) {
              const auto rec = move.record(i, j, k);
              std::int64_t payload;
              std::uint64_t checksum;
              std::memcpy(&payload, rec.data() + 56, 8);
              std::memcpy(&checksum, rec.data() + 64, 8);
              ASSERT_GT(payload, 64 * 16 * 1024) << "a record of many chunks";
              EXPECT_EQ(checksum, ft::oracle_checksum(rec.data(), header, payload)) << "rank " << i << " -> " << j;
            }
        for (const auto& codes : move.import_all(imports_of(w), live)) EXPECT_EQ(codes, zeros());
        for (int j = 0; j < d; ++j)
          for (std::int64_t k = 0; k < default_capacity; ++k) {
            const auto want = k < live ? ft::oracle_shard(model.regions(), w.rows[k], d, j)
                                       : std::vector<std::uint8_t>(move.destinations[j].row_bytes(), 0);
            EXPECT_EQ(move.destination_row(j, k + 1), want) << "live " << live << ", rank " << j << ", row " << k + 1;
          }
      }
      // A byte flipped in the middle of command 1's record from rank 0 to decode rank 0.
      const Wholes w = make_wholes(model, 4, 4999);
      move.load_sources(w);
      for (auto& pool : move.destinations) Kokkos::deep_copy(pool.backing(), 0);
      for (const auto& codes : move.export_all(exports_of(w), 4)) ASSERT_EQ(codes, zeros());
      move.patch_record(0, 0, 1, statexfer::record_bytes(model, {p, 0}, {d, 0}) / 2, 0x40);
      const auto codes = move.import_all(imports_of(w), 4);
      EXPECT_EQ(codes[0], (std::vector<std::int32_t>{0, 10, 0, 0, 0, 0, 0, 0}));
      if (landing == ImportLanding::publish_after_check)
        EXPECT_EQ(move.destination_endpoint(0, 2), -1) << "landed, unpublished";
      else
        EXPECT_EQ(move.destination_row(0, 2), std::vector<std::uint8_t>(move.destinations[0].row_bytes(), 0));
      EXPECT_EQ(move.destination_row(0, 1), ft::oracle_shard(model.regions(), w.rows[0], d, 0));
    }
}

// The layouts: every unit of a decode rank comes from exactly one prefill
// rank, the fingerprint follows the description, the constructors name what
// they refuse.
TEST(TEST_CATEGORY, exchange_layouts_and_construction) {
  using namespace exchange_test;
  const ModelLayout model(mini_regions(), 2);
  for (const int p : {1, 2, 4, 8})
    for (const int d : {1, 2, 4, 8})
      for (int j = 0; j < d; ++j)
        for (int g = 0; g < model.segment_count(); ++g) {
          const auto [a, b] = model.held(g, d, j);
          std::vector<int> senders(static_cast<std::size_t>(b - a), 0);
          for (int i = 0; i < p; ++i) {
            const statexfer::SliceRange s = model.slices(p, i, d, j)[static_cast<std::size_t>(g)];
            const auto [ha, hb] = model.held(g, p, i);
            EXPECT_LE(s.begin, s.end);
            if (s.end > s.begin) {
              EXPECT_TRUE(s.begin >= a && s.end <= b && s.begin >= ha && s.end <= hb) << "a sender sends what it holds";
            }
            for (std::int64_t u = s.begin; u < s.end; ++u) ++senders[static_cast<std::size_t>(u - a)];
          }
          for (const int n : senders) EXPECT_EQ(n, 1) << "p " << p << ", d " << d << ", j " << j << ", segment " << g;
        }
  for (const int tp : {1, 2, 4, 8})
    for (int r = 0; r < tp; ++r)
      EXPECT_EQ(model.local(tp, r).row_bytes(), ft::oracle_row_bytes(model.regions(), tp, r));
  EXPECT_EQ(model.fingerprint(), ModelLayout(mini_regions(), 2).fingerprint());
  EXPECT_NE(model.fingerprint(), ModelLayout(mini_regions(20), 2).fingerprint());
  EXPECT_NE(model.fingerprint(), ModelLayout(mini_regions(), 4).fingerprint());
  EXPECT_FALSE(model.splits(3));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { (void)model.local(3, 0); }, {"tp", "3", "heads"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { (void)model.local(2, 2); }, {"rank", "0..1"}));
  auto regions = mini_regions();
  regions[3].segments[1].unit_bytes = 5;  // not a whole number of bf16
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { ModelLayout(regions, 2); }, {"segment 'B'", "conv"}));
  regions = mini_regions();
  regions[4].name = "ssm";
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { ModelLayout(regions, 2); }, {"'ssm'", "twice"}));
  // A pool of another rank's layout, too few wire buffers, a wire too small.
  const statexfer::StatePool<Exec> pool(model.local(2, 0), 4, 1);
  const auto commands = statexfer::StateCommands<Exec>::allocate(default_capacity);
  std::vector<statexfer::WireBuffer<Exec>> wires(2);
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] {
        statexfer::PreparedExport<Exec>(pool, commands, model, {4, 0}, 2, wires);
      },
      {"PreparedExport", "layout"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] {
        statexfer::PreparedExport<Exec>(pool, commands, model, {2, 0}, 1, wires);
      },
      {"PreparedExport", "wires"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] {
        statexfer::PreparedImport<Exec>(pool, commands, model, 2, {2, 0}, wires);
      },
      {"PreparedImport", "wires[0]"}));
}

// The in-process transport: rank i's buffer for rank j is rank j's from rank
// i (one View), C records of record_bytes, empty where i sends j nothing; its
// constructor names what it refuses.
TEST(TEST_CATEGORY, exchange_shared_wires) {
  using namespace exchange_test;
  const ModelLayout model(mini_regions(), 2);
  const statexfer::SharedWires<Exec> wires(model, 4, 2, 3);
  EXPECT_EQ(wires.source_tp(), 4);
  EXPECT_EQ(wires.destination_tp(), 2);
  EXPECT_EQ(wires.capacity(), 3);
  int empty = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      const std::int64_t rb = statexfer::record_bytes(model, {4, i}, {2, j});
      EXPECT_EQ(static_cast<std::int64_t>(wires.wire(i, j).extent(0)), 3 * rb) << i << " -> " << j;
      EXPECT_EQ(wires.exporter(i)[static_cast<std::size_t>(j)].data(), wires.wire(i, j).data());
      EXPECT_EQ(wires.importer(j)[static_cast<std::size_t>(i)].data(), wires.wire(i, j).data());
      if (rb == 0) {
        EXPECT_EQ(wires.wire(i, j).data(), nullptr);
      }
      empty += rb == 0;
    }
  EXPECT_EQ(empty, 3) << "TP 4 to TP 2: prefill rank 0 sends decode rank 1 nothing, ranks 2 and 3 decode rank 0";
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { statexfer::SharedWires<Exec>(model, 3, 2, 1); },
                                                       {"SharedWires", "source_tp 3"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { statexfer::SharedWires<Exec>(model, 2, 0, 1); },
                                                       {"SharedWires", "destination_tp 0"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { statexfer::SharedWires<Exec>(model, 2, 2, 0); },
                                                       {"SharedWires", "capacity"}));
}

// The models of perf_tests/MODELS.md split at TP 1, 2, 4 and 8: their whole
// row is the row MODELS.md counts plus consumed_tokens and one page region an
// attention layer, every rank's row the oracle's. Granite's one group (B and C
// replicated on every rank, vLLM #55208's case) moves from TP 4 to TP 2 whole.
TEST(TEST_CATEGORY, exchange_real_models) {
  using namespace exchange_test;
  for (const auto& m : statexfer::models::all()) {
    SCOPED_TRACE(m.name);
    const ModelLayout model(statexfer::models::model_regions(m, 16, false), 16);
    const statexfer::StateLayout whole = model.whole();
    std::int64_t regions_bytes = 0;
    for (const statexfer::Region& r : whole.regions()) regions_bytes += r.nbytes;
    EXPECT_EQ(regions_bytes, 8 + m.row_bytes() + m.attention_layers * m.page_bytes(16));
    for (const int tp : {1, 2, 4, 8}) {
      ASSERT_TRUE(model.splits(tp)) << "TP " << tp;
      for (int r = 0; r < tp; ++r)
        EXPECT_EQ(model.local(tp, r).row_bytes(), ft::oracle_row_bytes(model.regions(), tp, r));
    }
  }
  const ModelLayout granite(statexfer::models::model_regions(statexfer::models::find("granite-4.0-h-small"), 16, true),
                            16);
  Move move(granite, 4, 2, 3, 1);
  const Wholes w = make_wholes(granite, 1, 55208);
  move.load_sources(w);
  for (const auto& codes : move.export_all(exports_of(w), 1)) EXPECT_EQ(codes, zeros(1));
  for (const auto& codes : move.import_all(imports_of(w), 1)) EXPECT_EQ(codes, zeros(1));
  for (int j = 0; j < 2; ++j)
    EXPECT_TRUE(move.destination_row(j, 1) == ft::oracle_shard(granite.regions(), w.rows[0], 2, j)) << "rank " << j;
}

}  // namespace

#endif
