#ifndef STATEXFER_TEST_ERROR_CODES_HPP
#define STATEXFER_TEST_ERROR_CODES_HPP

// Every error code of docs/CONTRACT.md §4 from minimal hand-built batches, with the bytes
// each batch moves (docs/CONTRACT.md §5): commands with a non-zero code write nothing,
// commands with code 0 write exactly what §5 says.
//
// The default batch (batch_fixture.hpp): C = 4, 12 pool rows of 80 bytes, PT = 4,
// W = 4, 32 cache pages; slot s lives in row 1 + s; every request and every row
// has consumed 6 tokens (logical page 1, a partial page, both trailing parts);
// tables[s][l] = 4 s + l, trailing_tables[s][l] = 31 - (4 s + l).

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "common/batch_fixture.hpp"

namespace {

using statexfer::test::Batch;
using statexfer::test::BatchOptions;
using statexfer::test::Command;
using statexfer::test::reset_cmd;
using statexfer::test::restore_cmd;
using statexfer::test::snapshot_cmd;
using ErrorCodesBatch = Batch<TEST_EXECSPACE>;
using codes_t = std::vector<std::int32_t>;

// Bytes [offset, offset + n) of row `row` of a pool image.
inline std::vector<std::uint8_t> row_bytes_of(const std::vector<std::uint8_t>& pool, std::int64_t row,
                                              std::int64_t offset, std::int64_t n) {
  const auto at = pool.begin() + row * statexfer::test::test_row_bytes + offset;
  return {at, at + n};
}
inline std::vector<std::uint8_t> page_of(const std::vector<std::uint8_t>& cache, std::int64_t page,
                                         std::int64_t page_bytes) {
  const auto at = cache.begin() + page * page_bytes;
  return {at, at + page_bytes};
}

// One command alone in a fresh default batch (after `setup`): its code, and no byte written.
inline void expect_single_rejected(const std::string& name, std::int32_t code, const Command& cmd,
                                   const std::function<void(ErrorCodesBatch&)>& setup = {}, BatchOptions options = {}) {
  SCOPED_TRACE(name);
  ErrorCodesBatch b(options);
  if (setup) setup(b);
  EXPECT_EQ(b.run({cmd}), b.codes({code}));
  EXPECT_TRUE(b.memory_is(b.unchanged()));
}

// ----------------------------------------------------------------------- code 0

TEST(TEST_CATEGORY, error_codes_snapshot_copies_row_and_saves_partial_page) {
  using namespace statexfer::test;
  ErrorCodesBatch b;
  const Command snap = snapshot_cmd(0, 1, 5, 6);
  EXPECT_EQ(b.run({snap}), b.codes({0}));
  EXPECT_TRUE(b.memory_is(b.expect({snap})));
  // Independently of the model: row 5 is row 1 except the kv region, which holds
  // cache page tables[0][6 / 4] = 1; the caches are untouched.
  EXPECT_EQ(row_bytes_of(b.pool_after, 5, 0, off_kv), row_bytes_of(b.pool_h, 1, 0, off_kv));
  EXPECT_EQ(row_bytes_of(b.pool_after, 5, off_kv, kv_bytes), page_of(b.kv_h, 1, kv_bytes));
  EXPECT_EQ(row_bytes_of(b.pool_after, 5, off_draft, test_row_bytes - off_draft),
            row_bytes_of(b.pool_h, 1, off_draft, test_row_bytes - off_draft));
  EXPECT_NE(row_bytes_of(b.pool_h, 1, off_kv, kv_bytes), page_of(b.kv_h, 1, kv_bytes));
  EXPECT_EQ(b.kv_after, b.kv_h);
  EXPECT_EQ(b.pool_after[5 * test_row_bytes + off_consumed], 6);
}

TEST(TEST_CATEGORY, error_codes_snapshot_at_page_boundary_copies_row_only) {
  using namespace statexfer::test;
  ErrorCodesBatch b;
  b.request_consumed(0) = 8;  // 8 % 4 == 0: no partial page
  b.table(0, 2) = -1;         // never read
  const Command snap = snapshot_cmd(0, 1, 5, 8);
  EXPECT_EQ(b.run({snap}), b.codes({0}));
  EXPECT_TRUE(b.memory_is(b.expect({snap})));
  EXPECT_EQ(row_bytes_of(b.pool_after, 5, 0, test_row_bytes), row_bytes_of(b.pool_h, 1, 0, test_row_bytes));
}

TEST(TEST_CATEGORY, error_codes_restore_copies_row_and_restores_partial_page) {
  using namespace statexfer::test;
  ErrorCodesBatch b;
  const Command rest = restore_cmd(1, 6, 2, 6);
  EXPECT_EQ(b.run({rest}), b.codes({0}));
  EXPECT_TRUE(b.memory_is(b.expect({rest})));
  // Row 2 is row 6; cache page tables[1][1] = 5 holds row 6's kv bytes.
  EXPECT_EQ(row_bytes_of(b.pool_after, 2, 0, test_row_bytes), row_bytes_of(b.pool_h, 6, 0, test_row_bytes));
  EXPECT_EQ(page_of(b.kv_after, 5, kv_bytes), row_bytes_of(b.pool_h, 6, off_kv, kv_bytes));
  for (std::int64_t p = 0; p < 32; ++p)
    if (p != 5) {
      EXPECT_EQ(page_of(b.kv_after, p, kv_bytes), page_of(b.kv_h, p, kv_bytes)) << "page " << p;
    }
}

TEST(TEST_CATEGORY, error_codes_restore_reads_consumed_tokens_of_the_source_row) {
  ErrorCodesBatch b;
  b.set_row_consumed(6, 9);  // logical page 2, tables[1][2] = 6
  const Command rest = restore_cmd(1, 6, 2, 9);
  EXPECT_EQ(b.run({rest}), b.codes({0}));
  EXPECT_TRUE(b.memory_is(b.expect({rest})));
  EXPECT_EQ(page_of(b.kv_after, 6, statexfer::test::kv_bytes),
            row_bytes_of(b.pool_h, 6, statexfer::test::off_kv, statexfer::test::kv_bytes));
  // The request's own consumed count (6) is not what a restore compares with.
  EXPECT_EQ(b.run({restore_cmd(1, 6, 2, 6)}), b.codes({3}));
  EXPECT_TRUE(b.memory_is(b.unchanged()));
}

TEST(TEST_CATEGORY, error_codes_reset_zeroes_row_outside_excluded_regions) {
  using namespace statexfer::test;
  BatchOptions o;
  o.excluded = {"meta"};
  ErrorCodesBatch b(o);
  const Command reset = reset_cmd(2, 3);
  EXPECT_EQ(b.run({reset}), b.codes({0}));
  EXPECT_TRUE(b.memory_is(b.expect({reset})));
  EXPECT_EQ(row_bytes_of(b.pool_after, 3, 0, off_meta), std::vector<std::uint8_t>(off_meta, 0));
  EXPECT_EQ(row_bytes_of(b.pool_after, 3, off_meta, meta_bytes), row_bytes_of(b.pool_h, 3, off_meta, meta_bytes));

  // Without exclusions the whole row is zeroed.
  ErrorCodesBatch all;
  EXPECT_EQ(all.run({reset}), all.codes({0}));
  EXPECT_EQ(row_bytes_of(all.pool_after, 3, 0, test_row_bytes), std::vector<std::uint8_t>(test_row_bytes, 0));
  EXPECT_TRUE(all.memory_is(all.expect({reset})));
}

TEST(TEST_CATEGORY, error_codes_copies_leave_excluded_regions_alone) {
  using namespace statexfer::test;
  BatchOptions o;
  o.excluded = {"meta", "conv"};
  ErrorCodesBatch b(o);
  const std::vector<Command> cmds = {snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6), reset_cmd(2, 3)};
  EXPECT_EQ(b.run(cmds), b.codes({0, 0, 0}));
  EXPECT_TRUE(b.memory_is(b.expect(cmds)));
  EXPECT_EQ(row_bytes_of(b.pool_after, 5, off_meta, meta_bytes), row_bytes_of(b.pool_h, 5, off_meta, meta_bytes));
  EXPECT_EQ(row_bytes_of(b.pool_after, 2, off_conv, 24), row_bytes_of(b.pool_h, 2, off_conv, 24));
}

TEST(TEST_CATEGORY, error_codes_full_batch_of_valid_commands) {
  ErrorCodesBatch b;
  const std::vector<Command> cmds = {snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6), reset_cmd(2, 3),
                                     snapshot_cmd(3, 4, 7, 6)};
  EXPECT_EQ(b.run(cmds, 4), b.codes({0, 0, 0, 0}));
  EXPECT_TRUE(b.memory_is(b.expect(cmds)));
}

TEST(TEST_CATEGORY, error_codes_validate_alone_writes_nothing) {
  ErrorCodesBatch b;
  EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6), reset_cmd(2, 3)}, 3, /*apply_too=*/false),
            b.codes({0, 0, 0}));
  EXPECT_TRUE(b.memory_is(b.unchanged()));
}

TEST(TEST_CATEGORY, error_codes_request_consumed_with_row_stride) {
  BatchOptions o;
  o.strided_requests = true;  // column 0 of a [C, 2] View with row stride 3, garbage -5 before it
  {
    ErrorCodesBatch b(o);
    const Command snap = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({snap}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
  }
  {
    ErrorCodesBatch b(o);
    b.request_consumed(1) = 9;
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, -5), snapshot_cmd(1, 2, 6, 9), snapshot_cmd(2, 3, 7, 6)}),
              b.codes({3, 0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect({snapshot_cmd(1, 2, 6, 9), snapshot_cmd(2, 3, 7, 6)})));
  }
}

// ----------------------------------------------------------------------- code 1

TEST(TEST_CATEGORY, error_codes_invalid_operation) {
  expect_single_rejected("op 2", 1, {0, 1, 5, 2, 6});
  expect_single_rejected("op -1", 1, {0, 1, 5, -1, 6});
  expect_single_rejected("op 2 shaped as a reset", 1, {2, -1, 3, 2, 0});
  ErrorCodesBatch b;
  const Command good = restore_cmd(1, 6, 2, 6);
  EXPECT_EQ(b.run({{0, 1, 5, 2, 6}, good, {2, -1, 3, -1, 0}}), b.codes({1, 0, 1}));
  EXPECT_TRUE(b.memory_is(b.expect({good})));
}

// ----------------------------------------------------------------------- code 2

TEST(TEST_CATEGORY, error_codes_invalid_slots) {
  expect_single_rejected("request slot -1", 2, {-1, 1, 5, 0, 6});
  expect_single_rejected("request slot C", 2, {4, 1, 5, 0, 6});
  expect_single_rejected("state row 0 (null row)", 2, {0, 0, 5, 0, 6}, [](ErrorCodesBatch& b) { b.state_row(0) = 0; });
  expect_single_rejected("state row 0, source 1", 2, {0, 1, 5, 0, 6}, [](ErrorCodesBatch& b) { b.state_row(0) = 0; });
  expect_single_rejected("state row >= SLOTS", 2, {0, 12, 5, 0, 6}, [](ErrorCodesBatch& b) { b.state_row(0) = 12; });
  expect_single_rejected("state row negative", 2, {0, -3, 5, 0, 6}, [](ErrorCodesBatch& b) { b.state_row(0) = -3; });
  expect_single_rejected("snapshot src == dst", 2, {0, 1, 1, 0, 6});
  expect_single_rejected("snapshot into the null row", 2, {0, 1, 0, 0, 6});
  expect_single_rejected("snapshot into row SLOTS", 2, {0, 1, 12, 0, 6});
  expect_single_rejected("snapshot into row -1", 2, {0, 1, -1, 0, 6});
  expect_single_rejected("restore from the null row", 2, {1, 0, 2, 0, 6});
  expect_single_rejected("restore from row SLOTS", 2, {1, 12, 2, 0, 6});
  expect_single_rejected("reset with src != -1", 2, {2, 5, 3, 1, 0});
  expect_single_rejected("reset with src == dst", 2, {2, 3, 3, 1, 0});
  expect_single_rejected("reset of another row", 2, {2, -1, 5, 1, 0});
  expect_single_rejected("copy neither snapshot nor restore", 2, {0, 5, 6, 0, 6});
  expect_single_rejected("reset of the null row", 2, {0, -1, 0, 1, 0}, [](ErrorCodesBatch& b) { b.state_row(0) = 0; });
}

TEST(TEST_CATEGORY, error_codes_reduced_slots) {
  {
    SCOPED_TRACE("SLOTS = 5: snapshot row 5 is no longer usable");
    ErrorCodesBatch b;
    b.slots_capacity() = 5;
    const Command reset = reset_cmd(1, 2);
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), reset, restore_cmd(2, 6, 3, 6)}), b.codes({2, 0, 2}));
    EXPECT_TRUE(b.memory_is(b.expect({reset})));
  }
  {
    SCOPED_TRACE("SLOTS = 3: the live row of slot 2 is no longer usable");
    ErrorCodesBatch b;
    b.slots_capacity() = 3;
    EXPECT_EQ(b.run({reset_cmd(2, 3)}), b.codes({2}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("the capacity is read at every run");
    ErrorCodesBatch b;
    const Command snap = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({snap}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
    b.slots_capacity() = 5;
    EXPECT_EQ(b.run({snap}), b.codes({2}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
    b.slots_capacity() = 6;
    EXPECT_EQ(b.run({snap}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
  }
  {
    SCOPED_TRACE("SLOTS larger than the pool: rows past the pool stay invalid");
    ErrorCodesBatch b;
    b.slots_capacity() = 1000;
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 12, 6), restore_cmd(1, 12, 2, 6), snapshot_cmd(2, 3, 500, 6)}),
              b.codes({2, 2, 2}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
    const Command last = snapshot_cmd(0, 1, 11, 6);
    EXPECT_EQ(b.run({last}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({last})));
  }
}

// ----------------------------------------------------------------------- code 3

TEST(TEST_CATEGORY, error_codes_invalid_endpoint) {
  expect_single_rejected("snapshot endpoint != request consumed", 3, snapshot_cmd(0, 1, 5, 5));
  expect_single_rejected("restore endpoint != row consumed", 3, restore_cmd(1, 6, 2, 7));
  expect_single_rejected("endpoint > W * PT", 3, snapshot_cmd(0, 1, 5, 17),
                         [](ErrorCodesBatch& b) { b.request_consumed(0) = 17; });
  expect_single_rejected("restore endpoint > W * PT", 3, restore_cmd(1, 6, 2, 20),
                         [](ErrorCodesBatch& b) { b.set_row_consumed(6, 20); });
  expect_single_rejected("reset with endpoint -1", 3, {2, -1, 3, 1, -1});
  expect_single_rejected("reset with endpoint 6", 3, {2, -1, 3, 1, 6});
  expect_single_rejected("copy with endpoint 0", 3, snapshot_cmd(0, 1, 5, 0),
                         [](ErrorCodesBatch& b) { b.request_consumed(0) = 0; });
  expect_single_rejected("restore with endpoint 0", 3, restore_cmd(1, 6, 2, 0),
                         [](ErrorCodesBatch& b) { b.set_row_consumed(6, 0); });
  expect_single_rejected("copy with a negative endpoint", 3, snapshot_cmd(0, 1, 5, -2),
                         [](ErrorCodesBatch& b) { b.request_consumed(0) = -2; });
  // The boundary itself is valid: end == W * PT, no partial page.
  ErrorCodesBatch b;
  b.request_consumed(0) = 16;
  const Command snap = snapshot_cmd(0, 1, 5, 16);
  EXPECT_EQ(b.run({snap}), b.codes({0}));
  EXPECT_TRUE(b.memory_is(b.expect({snap})));
}

// ----------------------------------------------------------------------- code 4

TEST(TEST_CATEGORY, error_codes_alias_conflict_rows) {
  {
    SCOPED_TRACE("same destination");
    ErrorCodesBatch b;
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), snapshot_cmd(1, 2, 5, 6)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("the source of one is the destination of another");
    ErrorCodesBatch b;
    EXPECT_EQ(b.run({restore_cmd(1, 6, 2, 6), snapshot_cmd(0, 1, 6, 6)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("a reset of the row another command snapshots");
    ErrorCodesBatch b;
    const Command other = restore_cmd(2, 7, 3, 6);
    EXPECT_EQ(b.run({reset_cmd(0, 1), snapshot_cmd(0, 1, 5, 6), other}), b.codes({4, 4, 0}));
    EXPECT_TRUE(b.memory_is(b.expect({other})));
  }
  {
    SCOPED_TRACE("two resets of one row");
    ErrorCodesBatch b;
    EXPECT_EQ(b.run({reset_cmd(2, 3), reset_cmd(2, 3)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("two snapshots of one row into different rows read the same row only");
    ErrorCodesBatch b;
    const std::vector<Command> cmds = {snapshot_cmd(0, 1, 5, 6), snapshot_cmd(0, 1, 6, 6)};
    b.table(0, 1) = 3;
    EXPECT_EQ(b.run(cmds), b.codes({0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect(cmds)));
  }
  {
    SCOPED_TRACE("a command whose own code is not 0 still conflicts with the others");
    ErrorCodesBatch b;
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), {-1, 2, 5, 0, 6}}), b.codes({4, 2}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
}

TEST(TEST_CATEGORY, error_codes_alias_conflict_pages) {
  {
    SCOPED_TRACE("two restores into one tail page");
    ErrorCodesBatch b;
    b.table(1, 1) = b.table(0, 1);
    EXPECT_EQ(b.run({restore_cmd(0, 5, 1, 6), restore_cmd(1, 6, 2, 6)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("a snapshot and a restore on one tail page");
    ErrorCodesBatch b;
    b.table(1, 1) = b.table(0, 1);
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("the same page at different logical positions");
    ErrorCodesBatch b;
    b.set_row_consumed(6, 9);  // logical 2
    b.table(1, 2) = b.table(0, 1);
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 9)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("two snapshots of one tail page are fine");
    ErrorCodesBatch b;
    b.table(1, 1) = b.table(0, 1);
    const std::vector<Command> cmds = {snapshot_cmd(0, 1, 5, 6), snapshot_cmd(1, 2, 6, 6)};
    EXPECT_EQ(b.run(cmds), b.codes({0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect(cmds)));
    EXPECT_EQ(row_bytes_of(b.pool_after, 5, statexfer::test::off_kv, statexfer::test::kv_bytes),
              row_bytes_of(b.pool_after, 6, statexfer::test::off_kv, statexfer::test::kv_bytes));
  }
  {
    SCOPED_TRACE("a page shared with a command that has no partial page is fine");
    ErrorCodesBatch b;
    b.set_row_consumed(6, 8);  // 8 % 4 == 0: slot 1 uses no page
    b.table(1, 2) = b.table(0, 1);
    const std::vector<Command> cmds = {restore_cmd(0, 5, 1, 6), restore_cmd(1, 6, 2, 8)};
    EXPECT_EQ(b.run(cmds), b.codes({0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect(cmds)));
  }
}

TEST(TEST_CATEGORY, error_codes_alias_conflict_pages_of_other_rows) {
  {
    SCOPED_TRACE("a restore with a bad endpoint still holds its page");
    ErrorCodesBatch b;
    b.set_row_consumed(6, 7);  // the restore below claims 6: code 3; its page is logical 6 / 4 = 1
    b.table(1, 1) = b.table(0, 1);
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6)}), b.codes({4, 3}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("a reset shaped like a restore holds no page");
    ErrorCodesBatch b;
    b.table(1, 1) = b.table(0, 1);
    const Command snap = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({snap, {1, 6, 2, 1, 6}}), b.codes({0, 2}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
  }
  {
    SCOPED_TRACE("two restores into one unmapped page: 6, not 4");
    ErrorCodesBatch b;
    b.table(0, 1) = -1;
    b.table(1, 1) = -1;
    EXPECT_EQ(b.run({restore_cmd(0, 5, 1, 6), restore_cmd(1, 6, 2, 6)}), b.codes({6, 6}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("two restores from one snapshot row into different requests");
    ErrorCodesBatch b;
    const std::vector<Command> cmds = {restore_cmd(0, 5, 1, 6), restore_cmd(1, 5, 2, 6)};
    EXPECT_EQ(b.run(cmds), b.codes({0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect(cmds)));
  }
}

// ----------------------------------------------------------------------- code 5

TEST(TEST_CATEGORY, error_codes_invalid_count) {
  const std::vector<Command> cmds = {
      snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6), reset_cmd(2, 3), {-1, 1, 5, 9, 3}};
  for (std::int32_t count :
       {-1, 5, 64, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()}) {
    SCOPED_TRACE("num_ops " + std::to_string(count));
    ErrorCodesBatch b;
    EXPECT_EQ(b.run(cmds, count), (codes_t{5, 5, 5, 5}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("num_ops 0 (nothing live)");
    ErrorCodesBatch b;
    EXPECT_EQ(b.run(cmds, 0), (codes_t{0, 0, 0, 0}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
}

// ----------------------------------------------------------------------- code 6

TEST(TEST_CATEGORY, error_codes_invalid_page) {
  expect_single_rejected("unmapped tail page (-1)", 6, snapshot_cmd(0, 1, 5, 6),
                         [](ErrorCodesBatch& b) { b.table(0, 1) = -1; });
  expect_single_rejected("restore into an unmapped page", 6, restore_cmd(1, 6, 2, 6),
                         [](ErrorCodesBatch& b) { b.table(1, 1) = -7; });
  expect_single_rejected("page == PAGES", 6, snapshot_cmd(0, 1, 5, 6), [](ErrorCodesBatch& b) {
    b.pages_capacity() = 4;
    b.table(0, 1) = 4;
  });
  expect_single_rejected("page past the cache while PAGES says more (hardening)", 6, snapshot_cmd(0, 1, 5, 6),
                         [](ErrorCodesBatch& b) {
                           b.pages_capacity() = 1000;
                           b.table(0, 1) = 32;
                         });
  expect_single_rejected("restore page past the cache while PAGES says more", 6, restore_cmd(1, 6, 2, 6),
                         [](ErrorCodesBatch& b) {
                           b.pages_capacity() = 1000;
                           b.table(1, 1) = 100000;
                         });
  {
    SCOPED_TRACE("reduced PAGES: page 1 unusable, page 0 usable");
    ErrorCodesBatch b;
    b.pages_capacity() = 1;
    b.table(1, 1) = 0;
    const Command ok = snapshot_cmd(1, 2, 6, 6);
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), ok}), b.codes({6, 0}));
    EXPECT_TRUE(b.memory_is(b.expect({ok})));
  }
  {
    SCOPED_TRACE("the last cache page is usable when PAGES says more");
    ErrorCodesBatch b;
    b.pages_capacity() = 1000;
    b.table(0, 1) = 31;
    const Command ok = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({ok}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({ok})));
  }
  {
    SCOPED_TRACE("no partial page: the table entry is not read");
    ErrorCodesBatch b;
    b.request_consumed(0) = 4;
    b.table(0, 1) = -1;
    b.table(0, 0) = -1;
    const Command ok = snapshot_cmd(0, 1, 5, 4);
    EXPECT_EQ(b.run({ok}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({ok})));
  }
}

// ------------------------------------------------------------------ priorities

TEST(TEST_CATEGORY, error_codes_priority_order) {
  expect_single_rejected("1 and 2 -> 1", 1, {-1, 1, 5, 2, 6});
  expect_single_rejected("1 and 3 -> 1", 1, {0, 1, 5, 3, 99});
  expect_single_rejected("2 and 3 -> 2", 2, {-1, 1, 5, 0, 5});
  expect_single_rejected("2 and 6 -> 2", 2, {0, 1, 1, 0, 6}, [](ErrorCodesBatch& b) { b.table(0, 1) = -1; });
  expect_single_rejected("3 and 6 -> 3", 3, snapshot_cmd(0, 1, 5, 7), [](ErrorCodesBatch& b) { b.table(0, 1) = -1; });
  {
    SCOPED_TRACE("3 and 4 -> 3 (the other row still gets 4)");
    ErrorCodesBatch b;
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), snapshot_cmd(1, 2, 5, 5)}), b.codes({4, 3}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("4 and 6 -> 4");
    ErrorCodesBatch b;
    b.table(0, 1) = -1;
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), snapshot_cmd(1, 2, 5, 6)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("5 over everything");
    ErrorCodesBatch b;
    EXPECT_EQ(b.run({{-1, 1, 5, 2, 6}, snapshot_cmd(0, 1, 5, 6)}, -1), (codes_t{5, 5, 5, 5}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
}

// --------------------------------------------------------- rows past the count

TEST(TEST_CATEGORY, error_codes_rows_past_count_are_ignored) {
  {
    SCOPED_TRACE("a row past the count neither applies nor conflicts");
    ErrorCodesBatch b;
    const Command first = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({first, snapshot_cmd(1, 2, 5, 6)}, 1), b.codes({0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect({first})));
  }
  {
    SCOPED_TRACE("invalid rows past the count get 0");
    ErrorCodesBatch b;
    const Command first = restore_cmd(1, 6, 2, 6);
    EXPECT_EQ(b.run({first, {-7, 3, 3, 9, -4}, {0, 1, 5, 2, 6}, snapshot_cmd(2, 3, 6, 6)}, 1), b.codes({0, 0, 0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect({first})));
  }
  {
    SCOPED_TRACE("the row at the count is past it; a page shared past the count is fine");
    ErrorCodesBatch b;
    b.table(2, 1) = b.table(1, 1);
    const std::vector<Command> live = {snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6)};
    EXPECT_EQ(b.run({live[0], live[1], restore_cmd(2, 7, 3, 6), snapshot_cmd(3, 4, 5, 6)}, 2), b.codes({0, 0, 0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect(live)));
  }
}

// ------------------------------------------------------------- trailing pages

TEST(TEST_CATEGORY, error_codes_trailing_bytes) {
  using namespace statexfer::test;
  BatchOptions o;
  o.trailing = true;
  const std::int64_t half = draft_bytes / 2;
  {
    SCOPED_TRACE("snapshot, end 6: parts 0 and 1 saved from trailing pages 31 and 30");
    ErrorCodesBatch b(o);
    const Command snap = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({snap}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
    EXPECT_EQ(row_bytes_of(b.pool_after, 5, off_draft, half), page_of(b.draft_h, 31, half));
    EXPECT_EQ(row_bytes_of(b.pool_after, 5, off_draft + half, half), page_of(b.draft_h, 30, half));
    EXPECT_EQ(b.draft_after, b.draft_h);
  }
  {
    SCOPED_TRACE("restore, end 6: trailing pages 27 and 26 restored");
    ErrorCodesBatch b(o);
    const Command rest = restore_cmd(1, 6, 2, 6);
    EXPECT_EQ(b.run({rest}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({rest})));
    EXPECT_EQ(page_of(b.draft_after, 27, half), row_bytes_of(b.pool_h, 6, off_draft, half));
    EXPECT_EQ(page_of(b.draft_after, 26, half), row_bytes_of(b.pool_h, 6, off_draft + half, half));
  }
  for (std::int64_t end : {1, 2, 3, 4, 5, 7, 8, 9, 13, 16}) {
    SCOPED_TRACE("snapshot and restore, end " + std::to_string(end));
    ErrorCodesBatch b(o);
    b.request_consumed(0) = end;
    b.set_row_consumed(6, end);
    const std::vector<Command> cmds = {snapshot_cmd(0, 1, 5, end), restore_cmd(1, 6, 2, end)};
    EXPECT_EQ(b.run(cmds), b.codes({0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect(cmds)));
  }
  {
    SCOPED_TRACE("end 5: part 1 inactive (5 % 4 < 2), its half copied from the source row");
    ErrorCodesBatch b(o);
    b.request_consumed(0) = 5;
    b.trailing_table(0, 1) = -1;  // part 1 would read it: unused
    const Command snap = snapshot_cmd(0, 1, 5, 5);
    EXPECT_EQ(b.run({snap}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
    EXPECT_EQ(row_bytes_of(b.pool_after, 5, off_draft, half), page_of(b.draft_h, 31, half));
    EXPECT_EQ(row_bytes_of(b.pool_after, 5, off_draft + half, half), row_bytes_of(b.pool_h, 1, off_draft + half, half));
  }
  {
    SCOPED_TRACE("restore with both parts on one trailing page: part 1 wins");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 1) = b.trailing_table(1, 0);
    const Command rest = restore_cmd(1, 6, 2, 6);
    EXPECT_EQ(b.run({rest}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({rest})));
    EXPECT_EQ(page_of(b.draft_after, 27, half), row_bytes_of(b.pool_h, 6, off_draft + half, half));
  }
  {
    SCOPED_TRACE("snapshot with both parts on one trailing page");
    ErrorCodesBatch b(o);
    b.trailing_table(0, 1) = b.trailing_table(0, 0);
    const Command snap = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({snap}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
  }
  {
    SCOPED_TRACE("an excluded trailing binding is dropped: its table is not read");
    BatchOptions ox = o;
    ox.excluded = {"draft"};
    ErrorCodesBatch b(ox);
    b.trailing_table(0, 0) = -1;
    b.trailing_table(0, 1) = -1;
    const Command snap = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({snap}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
    EXPECT_EQ(row_bytes_of(b.pool_after, 5, off_draft, draft_bytes), row_bytes_of(b.pool_h, 5, off_draft, draft_bytes));
  }
}

TEST(TEST_CATEGORY, error_codes_trailing_invalid_page) {
  BatchOptions o;
  o.trailing = true;
  expect_single_rejected(
      "part 0 unmapped", 6, snapshot_cmd(0, 1, 5, 6), [](ErrorCodesBatch& b) { b.trailing_table(0, 0) = -1; }, o);
  expect_single_rejected(
      "part 1 unmapped", 6, restore_cmd(1, 6, 2, 6), [](ErrorCodesBatch& b) { b.trailing_table(1, 1) = -1; }, o);
  expect_single_rejected(
      "part 1 >= PAGES", 6, snapshot_cmd(0, 1, 5, 6),
      [](ErrorCodesBatch& b) {
        b.pages_capacity() = 8;
        b.trailing_table(0, 0) = 0;
        b.trailing_table(0, 1) = 8;
      },
      o);
  {
    SCOPED_TRACE("both parts below a reduced PAGES");
    ErrorCodesBatch b(o);
    b.pages_capacity() = 8;
    b.trailing_table(0, 0) = 0;
    b.trailing_table(0, 1) = 7;
    const Command snap = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({snap}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
  }
  expect_single_rejected(
      "part 0 past the cache while PAGES says more", 6, snapshot_cmd(0, 1, 5, 6),
      [](ErrorCodesBatch& b) {
        b.pages_capacity() = 1000;
        b.trailing_table(0, 0) = 32;
      },
      o);
  expect_single_rejected(
      "end 4: part 0 on logical page 0", 6, snapshot_cmd(0, 1, 5, 4),
      [](ErrorCodesBatch& b) {
        b.request_consumed(0) = 4;
        b.trailing_table(0, 0) = -1;
      },
      o);
  {
    SCOPED_TRACE("end 5: an unmapped part 1 is not used");
    ErrorCodesBatch b(o);
    b.request_consumed(0) = 5;
    b.trailing_table(0, 1) = -1;
    const Command snap = snapshot_cmd(0, 1, 5, 5);
    EXPECT_EQ(b.run({snap}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
  }
  {
    SCOPED_TRACE("end 1: no trailing page");
    ErrorCodesBatch b(o);
    b.request_consumed(0) = 1;
    b.trailing_table(0, 0) = -1;
    b.trailing_table(0, 1) = -1;
    const Command snap = snapshot_cmd(0, 1, 5, 1);
    EXPECT_EQ(b.run({snap}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
  }
  {
    SCOPED_TRACE("trailing checks leave non-zero codes alone");
    ErrorCodesBatch b(o);
    b.trailing_table(0, 0) = -1;
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 7)}), b.codes({3}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("trailing checks skip resets");
    ErrorCodesBatch b(o);
    const Command reset = reset_cmd(2, 3);
    b.trailing_table(2, 0) = -1;
    b.trailing_table(2, 1) = -1;
    EXPECT_EQ(b.run({reset}), b.codes({0}));
    EXPECT_TRUE(b.memory_is(b.expect({reset})));
  }
}

TEST(TEST_CATEGORY, error_codes_trailing_conflicts) {
  BatchOptions o;
  o.trailing = true;
  {
    SCOPED_TRACE("snapshot and restore on one trailing page (parts 0 and 0)");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 0) = b.trailing_table(0, 0);
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("snapshot part 1 and restore part 0 on one trailing page");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 0) = b.trailing_table(0, 1);
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("two restores on one trailing page");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 1) = b.trailing_table(0, 1);
    EXPECT_EQ(b.run({restore_cmd(0, 5, 1, 6), restore_cmd(1, 6, 2, 6)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("two snapshots on one trailing page are exempt");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 0) = b.trailing_table(0, 0);
    b.trailing_table(1, 1) = b.trailing_table(0, 0);
    const std::vector<Command> cmds = {snapshot_cmd(0, 1, 5, 6), snapshot_cmd(1, 2, 6, 6)};
    EXPECT_EQ(b.run(cmds), b.codes({0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect(cmds)));
  }
  {
    SCOPED_TRACE("an unused part of the other row does not conflict (end 5: part 1 unused)");
    ErrorCodesBatch b(o);
    b.set_row_consumed(6, 5);
    b.trailing_table(1, 1) = b.trailing_table(0, 0);
    const std::vector<Command> cmds = {snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 5)};
    EXPECT_EQ(b.run(cmds), b.codes({0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect(cmds)));
  }
  {
    SCOPED_TRACE("the other row's code does not matter");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 0) = b.trailing_table(0, 0);
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 5)}), b.codes({4, 3}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("other rows with op != 0 do not count");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 0) = b.trailing_table(0, 0);
    const Command snap = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({snap, {1, 6, 2, 1, 6}}), b.codes({0, 2}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
  }
  {
    SCOPED_TRACE("rows past the count do not count");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 0) = b.trailing_table(0, 0);
    const Command snap = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({snap, restore_cmd(1, 6, 2, 6)}, 1), b.codes({0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
  }
  {
    SCOPED_TRACE("part 1 overrides part 0: 4 then 6 gives 6");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 0) = b.trailing_table(0, 0);  // part 0 of the restore conflicts
    b.trailing_table(1, 1) = -1;                      // part 1 of the restore is unmapped
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6)}), b.codes({4, 6}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("part 1 overrides part 0: 6 then 4 gives 4");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 0) = -1;                      // part 0 of the restore is unmapped
    b.trailing_table(1, 1) = b.trailing_table(0, 1);  // part 1 of the restore conflicts
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("part 0 invalid and part 1 fine keeps 6");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 0) = 32;
    const Command snap = snapshot_cmd(0, 1, 5, 6);
    EXPECT_EQ(b.run({snap, restore_cmd(1, 6, 2, 6)}), b.codes({0, 6}));
    EXPECT_TRUE(b.memory_is(b.expect({snap})));
  }
  {
    SCOPED_TRACE("two unmapped trailing pages are one table entry: 4 overrides 6");
    ErrorCodesBatch b(o);
    b.trailing_table(0, 0) = -1;
    b.trailing_table(1, 0) = -1;
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    // validate() compares 32-bit keys with INT32_MIN for an unused part, and
    // falls back to exact keys when a row's active entry is INT32_MIN itself.
    SCOPED_TRACE("two active trailing entries INT32_MIN are one table entry: 4");
    ErrorCodesBatch b(o);
    b.trailing_table(0, 0) = std::numeric_limits<std::int32_t>::min();
    b.trailing_table(1, 0) = std::numeric_limits<std::int32_t>::min();
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6)}), b.codes({4, 4}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("an active trailing entry INT32_MIN does not meet another row's unused part");
    ErrorCodesBatch b(o);
    b.set_row_consumed(6, 5);                                           // the restore: part 1 unused
    b.trailing_table(0, 1) = std::numeric_limits<std::int32_t>::min();  // the snapshot's part 1: code 6
    const Command restore = restore_cmd(1, 6, 2, 5);
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore}), b.codes({6, 0}));
    EXPECT_TRUE(b.memory_is(b.expect({restore})));
  }
  {
    SCOPED_TRACE("a row whose main code is 6 keeps it; its trailing pages still count for others");
    ErrorCodesBatch b(o);
    b.table(1, 1) = -1;
    b.trailing_table(1, 0) = b.trailing_table(0, 0);
    EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6)}), b.codes({4, 6}));
    EXPECT_TRUE(b.memory_is(b.unchanged()));
  }
  {
    SCOPED_TRACE("trailing pages do not conflict with the main page binding");
    ErrorCodesBatch b(o);
    b.trailing_table(1, 0) = b.table(0, 1);
    b.trailing_table(1, 1) = b.table(0, 1);
    const std::vector<Command> cmds = {snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6)};
    EXPECT_EQ(b.run(cmds), b.codes({0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect(cmds)));
  }
}

// ------------------------------------------------------------- other shapes

TEST(TEST_CATEGORY, error_codes_full_capacity_64) {
  for (bool trailing : {false, true}) {
    SCOPED_TRACE(trailing ? "with a trailing binding" : "page binding only");
    BatchOptions o;
    o.capacity = 64;
    o.rows = 130;  // live rows 1..64, snapshot rows 65..129
    o.cache_pages = 512;
    o.trailing = trailing;
    ErrorCodesBatch b(o);
    std::vector<Command> cmds;
    for (std::int64_t s = 0; s < 32; ++s) cmds.push_back(snapshot_cmd(s, 1 + s, 65 + s, 6));
    for (std::int64_t s = 32; s < 64; ++s) cmds.push_back(restore_cmd(s, 65 + s, 1 + s, 6));
    EXPECT_EQ(b.run(cmds, 64), codes_t(64, 0));
    EXPECT_TRUE(b.memory_is(b.expect(cmds)));

    // The last command restores into the page the first one saves: both 4, the rest apply.
    b.table(63, 1) = b.table(0, 1);
    codes_t expected(64, 0);
    expected[0] = expected[63] = 4;
    std::vector<Command> applied(cmds.begin() + 1, cmds.end() - 1);
    EXPECT_EQ(b.run(cmds, 64), expected);
    EXPECT_TRUE(b.memory_is(b.expect(applied)));

    // Half the batch live: the other half neither applies nor conflicts.
    EXPECT_EQ(b.run(cmds, 32), codes_t(64, 0));
    EXPECT_TRUE(b.memory_is(b.expect(std::vector<Command>(cmds.begin(), cmds.begin() + 32))));
  }
}

// Counts that are no multiple of four: validate() compares peers in groups of
// four and, on GPUs, splits them over vector lanes; conflicts with the last
// live rows must be found by every row, and rows past the count must not count.
TEST(TEST_CATEGORY, error_codes_conflicts_with_the_last_live_rows) {
  BatchOptions o;
  o.capacity = 32;
  o.rows = 66;  // live rows 1..32, snapshot rows 33..65
  o.cache_pages = 128;
  o.trailing = true;
  ErrorCodesBatch b(o);
  std::vector<Command> cmds;
  for (std::int64_t s = 0; s < 16; ++s) cmds.push_back(snapshot_cmd(s, 1 + s, 33 + s, 6));
  for (std::int64_t s = 16; s < 32; ++s) cmds.push_back(restore_cmd(s, 33 + s, 1 + s, 6));
  EXPECT_EQ(b.run(cmds, 27), codes_t(32, 0));
  EXPECT_TRUE(b.memory_is(b.expect(std::vector<Command>(cmds.begin(), cmds.begin() + 27))));

  // The first row meets the third-last on a trailing page, the last two share
  // a partial page, and the row past the count would meet the second.
  b.trailing_table(24, 0) = b.trailing_table(0, 0);
  b.table(26, 1) = b.table(25, 1);
  b.table(27, 1) = b.table(1, 1);
  codes_t expected(32, 0);
  expected[0] = expected[24] = expected[25] = expected[26] = 4;
  std::vector<Command> applied(cmds.begin() + 1, cmds.begin() + 24);
  EXPECT_EQ(b.run(cmds, 27), expected);
  EXPECT_TRUE(b.memory_is(b.expect(applied)));

  // One more live row: it meets the second.
  expected[1] = expected[27] = 4;
  applied.erase(applied.begin());
  EXPECT_EQ(b.run(cmds, 28), expected);
  EXPECT_TRUE(b.memory_is(b.expect(applied)));
}

TEST(TEST_CATEGORY, error_codes_capacity_one) {
  BatchOptions o;
  o.capacity = 1;
  o.rows = 3;
  o.trailing = true;
  ErrorCodesBatch b(o);
  const Command snap = snapshot_cmd(0, 1, 2, 6);
  EXPECT_EQ(b.run({snap}), (codes_t{0}));
  EXPECT_TRUE(b.memory_is(b.expect({snap})));
  EXPECT_EQ(b.run({snap}, 2), (codes_t{5}));
  EXPECT_TRUE(b.memory_is(b.unchanged()));
  EXPECT_EQ(b.run({snapshot_cmd(1, 1, 2, 6)}), (codes_t{2}));
  EXPECT_TRUE(b.memory_is(b.unchanged()));
}

TEST(TEST_CATEGORY, error_codes_page_tokens_one) {
  // PT = 1: never a partial page; the trailing part 0 is the last full page, part 1 never.
  BatchOptions o;
  o.page_tokens = 1;
  o.trailing = true;
  ErrorCodesBatch b(o);
  for (std::int64_t end : {1, 2, 3, 4}) {
    SCOPED_TRACE("end " + std::to_string(end));
    b.request_consumed(0) = end;
    b.set_row_consumed(6, end);
    for (std::int64_t l = 0; l < 4; ++l) b.table(0, l) = b.table(1, l) = -1;  // never read
    const std::vector<Command> cmds = {snapshot_cmd(0, 1, 5, end), restore_cmd(1, 6, 2, end)};
    EXPECT_EQ(b.run(cmds), b.codes({0, 0}));
    EXPECT_TRUE(b.memory_is(b.expect(cmds)));
  }
  b.request_consumed(0) = 5;  // > W * PT
  EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 5)}), b.codes({3}));
  b.request_consumed(0) = 3;
  b.trailing_table(0, 2) = -1;
  EXPECT_EQ(b.run({snapshot_cmd(0, 1, 5, 3)}), b.codes({6}));
  EXPECT_TRUE(b.memory_is(b.unchanged()));
}

// ------------------------------------------------------ one transfer, many batches

TEST(TEST_CATEGORY, error_codes_commands_are_read_afresh) {
  ErrorCodesBatch b;
  // Batch A.
  const Command a = snapshot_cmd(0, 1, 5, 6);
  EXPECT_EQ(b.run({a}), b.codes({0}));
  EXPECT_TRUE(b.memory_is(b.expect({a})));
  // Batch B on top of A's result, through the same transfer, new contents and count.
  const std::vector<Command> batch_b = {restore_cmd(1, 6, 2, 6), reset_cmd(2, 3), {-1, 1, 5, 0, 6}};
  b.upload_commands(batch_b, 3);
  b.transfer->validate(TEST_EXECSPACE());
  b.transfer->apply(TEST_EXECSPACE());
  b.read_back();
  EXPECT_EQ(b.errors, b.codes({0, 0, 2}));
  EXPECT_TRUE(b.memory_is(b.expect({a, batch_b[0], batch_b[1]})));
  // Batch C: what was valid in A now conflicts (same destination twice).
  b.upload_commands({a, snapshot_cmd(1, 2, 5, 6)}, 2);
  b.transfer->validate(TEST_EXECSPACE());
  b.transfer->apply(TEST_EXECSPACE());
  b.read_back();
  EXPECT_EQ(b.errors, b.codes({4, 4}));
  EXPECT_TRUE(b.memory_is(b.expect({a, batch_b[0], batch_b[1]})));
}

TEST(TEST_CATEGORY, error_codes_apply_follows_the_latest_validate) {
  ErrorCodesBatch b;
  const Command first = snapshot_cmd(0, 1, 5, 6);
  const Command second = restore_cmd(1, 6, 2, 6);
  b.sync();
  b.upload_commands({first}, 1);
  b.transfer->validate(TEST_EXECSPACE());
  b.upload_commands({second}, 1);
  b.transfer->validate(TEST_EXECSPACE());
  b.transfer->apply(TEST_EXECSPACE());
  b.read_back();
  EXPECT_EQ(b.errors, b.codes({0}));
  EXPECT_TRUE(b.memory_is(b.expect({second})));
}

TEST(TEST_CATEGORY, error_codes_apply_reads_combined_errors) {
  // Tensor-parallel callers raise codes between validate() and apply().
  ErrorCodesBatch b;
  const std::vector<Command> cmds = {snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6), reset_cmd(2, 3)};
  b.sync();
  b.upload_commands(cmds, 3);
  b.transfer->validate(TEST_EXECSPACE());
  TEST_EXECSPACE().fence();
  EXPECT_EQ(statexfer::test::download(b.commands.errors), b.codes({0, 0, 0}));
  statexfer::test::upload(b.commands.errors, b.codes({4, 0, 6}));
  b.transfer->apply(TEST_EXECSPACE());
  b.read_back();
  EXPECT_TRUE(b.memory_is(b.expect({cmds[1]})));
}

// apply() acts on the plan the last validate() stored (docs/CONTRACT.md §5): num_ops,
// commands and tables rewritten in between change nothing, and `errors` can only
// veto. The reference module re-reads them; the library deliberately does not.
TEST(TEST_CATEGORY, error_codes_apply_acts_on_the_validated_plan) {
  using statexfer::test::download;
  using statexfer::test::upload;
  const std::vector<Command> validated = {snapshot_cmd(0, 1, 5, 6), restore_cmd(1, 6, 2, 6), {2, 3, 9, 0, 7}};
  // 0: num_ops only; 1: num_ops and every command; 2: the tables and errors too.
  for (int rewrite = 0; rewrite < 3; ++rewrite) {
    SCOPED_TRACE("rewrite " + std::to_string(rewrite));
    ErrorCodesBatch b;
    b.sync();
    b.upload_commands(validated, 3);
    b.transfer->validate(TEST_EXECSPACE());
    TEST_EXECSPACE().fence();
    const codes_t codes = b.codes({0, 0, 3});
    EXPECT_EQ(download(b.commands.errors), codes);
    if (rewrite == 0) {
      upload(b.commands.num_ops, std::vector<std::int32_t>{0});
    } else {
      // Other rows, other endpoints, the rejected row made valid, one more live row.
      b.upload_commands({snapshot_cmd(0, 1, 9, 5), restore_cmd(1, 7, 2, 6), snapshot_cmd(2, 3, 10, 6), reset_cmd(3, 4)},
                        4);
      upload(b.commands.errors, codes);
    }
    if (rewrite == 2) {
      std::vector<std::int32_t> other_tables = b.tables_h;
      for (auto& page : other_tables) page = (page + 7) % 32;
      upload(b.tables, other_tables);
      upload(b.commands.errors, b.codes({0, 0, 0, 0}));
    }
    b.transfer->apply(TEST_EXECSPACE());
    b.read_back();
    // What validate() saw: rows 0 and 1 apply with the tables it read; row 2 does not.
    EXPECT_TRUE(b.memory_is(b.expect({validated[0], validated[1]})));
  }
}

}  // namespace

#endif
