#ifndef STATEXFER_TEST_MEMORY_CHECKS_HPP
#define STATEXFER_TEST_MEMORY_CHECKS_HPP

// The arguments' memory (docs/CONTRACT.md §2, §3): caches that overlap each
// other or the pool, validation inputs inside memory that apply() or
// validate() writes, Views without memory (each refused by the constructor,
// naming both, with nothing written), and memory_capacity, which may change
// between replays and is clamped on the device to the real rows and pages.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/ctor_fixture.hpp"

namespace {

using Exec = TEST_EXECSPACE;
using CtorArgs = statexfer::test::CtorArgs<Exec>;
using cache_view = CtorArgs::cache_view;
using int64_view = CtorArgs::int64_view;
using int32_view = CtorArgs::int32_view;
using statexfer::StateLayout;
using statexfer::test::accepts;
using statexfer::test::Image;
using statexfer::test::image_of;
using statexfer::test::rejects;
using statexfer::test::throws_naming;

TEST(TEST_CATEGORY, construction_overlapping_caches) {
  {
    CtorArgs s;
    s.config.pages.push_back({"meta", s.kv});  // the same memory twice
    EXPECT_TRUE(rejects(s, {"'kv'", "'meta'", "overlap"}));
  }
  {
    CtorArgs s;
    cache_view storage("storage", 32, 16);
    s.config.pages = {{"kv", cache_view(storage.data(), 16, 16)},
                      {"meta", cache_view(storage.data() + 8 * 16, 16, 16)}};
    EXPECT_TRUE(rejects(s, {"'kv'", "'meta'", "overlap"}));
    // One byte of overlap is enough.
    s.config.pages = {{"kv", cache_view(storage.data(), 16, 16)}, {"meta", cache_view(storage.data() + 255, 16, 16)}};
    EXPECT_TRUE(rejects(s, {"overlap"}));
    // Adjacent is fine.
    s.config.pages = {{"kv", cache_view(storage.data(), 16, 16)}, {"meta", cache_view(storage.data() + 256, 16, 16)}};
    EXPECT_TRUE(accepts(s));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages = {{"draft", cache_view(s.kv.data() + 64, 16, 8)}};
    EXPECT_TRUE(rejects(s, {"'kv'", "'draft'", "overlap"}));
  }
  {
    CtorArgs s;
    s.config.pages = {{"kv", cache_view(s.pool.backing().data(), 16, 16)}};
    EXPECT_TRUE(rejects(s, {"'kv'", "pool"}));
  }
  {
    CtorArgs s;  // the last bytes of the pool
    const auto total = static_cast<std::int64_t>(s.pool.backing().span());
    s.config.pages.push_back({"meta", cache_view(s.pool.backing().data() + total - 16 * 16, 16, 16)});
    EXPECT_TRUE(rejects(s, {"'meta'", "pool"}));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages = {{"draft", cache_view(s.pool.backing().data() + 8, 16, 8)}};
    EXPECT_TRUE(rejects(s, {"'draft'", "pool"}));
  }
}

// apply() writes the pool and the caches while validate_and_apply() may still be
// deciding other rows from the inputs; validate() writes errors. An input inside
// written memory is rejected, naming both (docs/CONTRACT.md §3).
TEST(TEST_CATEGORY, construction_validation_inputs_apart_from_written_memory) {
  using backing_view = statexfer::StatePool<Exec>::backing_view;
  using capacity_view = statexfer::StatePool<Exec>::capacity_view;
  const auto rb = static_cast<std::size_t>(statexfer::test::test_row_bytes);
  {
    // The review's example: request consumed tokens as a strided View of the pool's
    // consumed_tokens column (rows 1..C), one pool row between elements.
    CtorArgs s;
    const Kokkos::LayoutStride column(static_cast<std::size_t>(s.c), rb / 8, 1, 1);
    s.config.requests.consumed_tokens = statexfer::RequestState<Exec>::consumed_view(
        reinterpret_cast<std::int64_t*>(s.pool.backing().data() + rb + statexfer::test::off_consumed), column);
    EXPECT_TRUE(rejects(s, {"requests.consumed_tokens", "pool backing", "apply() writes"}));
  }
  {
    CtorArgs s;  // a page table inside the kv cache
    s.tables = statexfer::PageTable<Exec>(reinterpret_cast<std::int32_t*>(s.kv.data() + 64), 4, 4);
    EXPECT_TRUE(rejects(s, {"page_tables", "cache of binding 'kv'"}));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_tables = statexfer::PageTable<Exec>(reinterpret_cast<std::int32_t*>(s.draft.data()), 4, 4);
    EXPECT_TRUE(rejects(s, {"trailing_tables", "cache of binding 'draft'"}));
    s.config.trailing_tables =
        statexfer::PageTable<Exec>(reinterpret_cast<std::int32_t*>(s.pool.backing().data()), 4, 4);
    EXPECT_TRUE(rejects(s, {"trailing_tables", "pool backing"}));
  }
  {
    CtorArgs s;
    s.config.state_rows =
        statexfer::StateRows<Exec>(reinterpret_cast<std::int64_t*>(s.pool.backing().data() + rb), 4, 8);
    EXPECT_TRUE(rejects(s, {"state_rows", "pool backing"}));
  }
  {
    CtorArgs s;
    s.pool = statexfer::StatePool<Exec>(s.pool.layout(), s.pool.backing(),
                                        capacity_view(reinterpret_cast<std::int64_t*>(s.kv.data()), 2));
    EXPECT_TRUE(rejects(s, {"pool memory_capacity", "cache of binding 'kv'"}));
  }
  {
    CtorArgs s;
    s.commands.num_ops = int32_view(reinterpret_cast<std::int32_t*>(s.kv.data() + 252), 1);  // the last 4 bytes
    EXPECT_TRUE(rejects(s, {"commands.num_ops", "cache of binding 'kv'"}));
  }
  {
    CtorArgs s;
    s.commands.request_slots = int64_view(reinterpret_cast<std::int64_t*>(s.pool.backing().data() + 2 * rb), 4);
    EXPECT_TRUE(rejects(s, {"commands.request_slots", "pool backing"}));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.commands.expected_consumed = int64_view(reinterpret_cast<std::int64_t*>(s.draft.data() + 8), 4);
    EXPECT_TRUE(rejects(s, {"commands.expected_consumed", "cache of binding 'draft'"}));
  }
  {
    CtorArgs s;  // errors: validate() writes them
    s.commands.errors = int32_view(reinterpret_cast<std::int32_t*>(s.pool.backing().data() + 3 * rb), 4);
    EXPECT_TRUE(rejects(s, {"commands.errors", "pool backing"}));
    // errors over the second half of operation, both inside one allocation (a
    // View past the end of its allocation would fail to read back on CUDA).
    Kokkos::View<std::int32_t*, Exec::memory_space> both("operation_and_errors", 6);
    s.commands.operation = int32_view(both.data(), 4);
    s.commands.errors = int32_view(both.data() + 2, 4);
    EXPECT_TRUE(rejects(s, {"commands.operation", "overlaps commands.errors"}));
  }
  {
    // A page table right after the pool's last byte is apart from it; four bytes
    // earlier it is not.
    CtorArgs s;
    const std::size_t rows = static_cast<std::size_t>(s.pool.rows());
    Kokkos::View<std::uint8_t*, Exec::memory_space> storage("storage", rows * rb + 64);
    s.pool =
        statexfer::StatePool<Exec>(s.pool.layout(), backing_view(storage.data(), rows, rb), s.pool.memory_capacity());
    s.fill_pool();
    s.tables = statexfer::PageTable<Exec>(reinterpret_cast<std::int32_t*>(storage.data() + rows * rb), 4, 4);
    EXPECT_TRUE(accepts(s));
    s.tables = statexfer::PageTable<Exec>(reinterpret_cast<std::int32_t*>(storage.data() + rows * rb - 4), 4, 4);
    EXPECT_TRUE(rejects(s, {"page_tables", "pool backing"}));
  }
}

TEST(TEST_CATEGORY, construction_views_without_memory) {
  // Unmanaged Views over a null pointer have extents but no memory.
  using backing_view = statexfer::StatePool<Exec>::backing_view;
  using capacity_view = statexfer::StatePool<Exec>::capacity_view;
  const StateLayout layout = statexfer::test::test_layout();
  {
    CtorArgs s;  // (rejects() would read the pool back)
    s.pool = statexfer::StatePool<Exec>(layout, backing_view(static_cast<std::uint8_t*>(nullptr), 8, 80),
                                        s.pool.memory_capacity());
    EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { auto t = s.make(); }, {"pool backing", "no memory"}));
  }
  {
    CtorArgs s;
    s.pool =
        statexfer::StatePool<Exec>(layout, s.pool.backing(), capacity_view(static_cast<std::int64_t*>(nullptr), 2));
    EXPECT_TRUE(rejects(s, {"memory_capacity", "no memory"}));
  }
  {
    CtorArgs s;
    s.tables = statexfer::PageTable<Exec>(static_cast<std::int32_t*>(nullptr), 4, 4);
    EXPECT_TRUE(rejects(s, {"page_tables", "no memory"}));
  }
  {
    CtorArgs s;
    s.config.state_rows = statexfer::StateRows<Exec>(static_cast<std::int64_t*>(nullptr), 4, 8);
    EXPECT_TRUE(rejects(s, {"state_rows", "no memory"}));
  }
  {
    CtorArgs s;
    s.config.requests.consumed_tokens = Kokkos::View<std::int64_t**, Kokkos::LayoutRight, Exec::memory_space>(
        static_cast<std::int64_t*>(nullptr), 4, 1);
    EXPECT_TRUE(rejects(s, {"requests.consumed_tokens", "no memory"}));
  }
  {
    CtorArgs s;
    s.config.pages = {{"kv", cache_view(static_cast<std::uint8_t*>(nullptr), 16, 16)}};
    EXPECT_TRUE(rejects(s, {"page binding 'kv'", "no memory"}));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages = {{"draft", cache_view(static_cast<std::uint8_t*>(nullptr), 16, 8)}};
    EXPECT_TRUE(rejects(s, {"trailing binding 'draft'", "no memory"}));
  }
}

// docs/CONTRACT.md §2 lets memory_capacity change between replays; the device clamps it to
// the real rows and cache pages (the seed trusts it and would read and write past
// the pool and the caches). Checked here through the API on every backend.
TEST(TEST_CATEGORY, construction_memory_capacity_is_clamped_on_the_device) {
  for (const std::int64_t cap :
       {std::int64_t(16), std::int64_t(17), std::int64_t(1000), std::numeric_limits<std::int64_t>::max()}) {
    SCOPED_TRACE("memory capacity " + std::to_string(cap));
    CtorArgs s(4, statexfer::test::test_layout(), 8);  // rows 0..7, kv pages 0..15
    auto t = s.make();
    t.prepare(Exec());
    statexfer::test::upload(s.pool.memory_capacity(), std::vector<std::int64_t>{cap, cap});
    std::vector<std::int64_t> state_rows(4 * 8, 0);
    for (std::int64_t slot = 0; slot < 4; ++slot) state_rows[static_cast<std::size_t>(slot * 8)] = 1 + slot;
    statexfer::test::upload(s.config.state_rows, state_rows);
    // tables[slot][0]: 0, 1, 16 (== P, no such page), 15 (the last page)
    std::vector<std::int32_t> tables(16, 0);
    tables[4] = 1, tables[8] = 16, tables[12] = 15;
    statexfer::test::upload(s.tables, tables);
    statexfer::test::upload(s.config.requests.consumed_tokens, std::vector<std::int64_t>{2, 2, 2, 2});
    // Snapshot into row 8 (== rows); restore from row 8; a partial page 16; a snapshot
    // into the last row 7 saving page 15, which applies.
    statexfer::test::upload(s.commands.request_slots, std::vector<std::int64_t>{0, 1, 2, 3});
    statexfer::test::upload(s.commands.source_slots, std::vector<std::int64_t>{1, 8, 3, 4});
    statexfer::test::upload(s.commands.destination_slots, std::vector<std::int64_t>{8, 2, 5, 7});
    statexfer::test::upload(s.commands.operation, std::vector<std::int32_t>{0, 0, 0, 0});
    statexfer::test::upload(s.commands.expected_consumed, std::vector<std::int64_t>{2, 2, 2, 2});
    statexfer::test::upload(s.commands.num_ops, std::vector<std::int32_t>{4});
    const Image before = image_of(s);
    t.validate(Exec());
    t.apply(Exec());
    Exec().fence();
    EXPECT_EQ(statexfer::test::download(s.commands.errors), (std::vector<std::int32_t>{2, 2, 6, 0}));
    std::vector<std::uint8_t> want = before.pool;
    const std::size_t rb = statexfer::test::test_row_bytes;
    // want[7] = pool[4] with page 15 of the cache at the kv region (memcpy: g++ 12
    // takes copy_n into a vector here for an overflow, wrongly).
    ASSERT_GE(want.size(), 8 * rb);
    std::memcpy(want.data() + 7 * rb, before.pool.data() + 4 * rb, rb);
    std::memcpy(want.data() + 7 * rb + statexfer::test::off_kv, before.kv.data() + 15 * 16, 16);
    EXPECT_TRUE(statexfer::test::same_bytes(statexfer::test::download(s.pool.backing()), want, "pool", 80));
    EXPECT_EQ(statexfer::test::download(s.kv), before.kv);
  }
  {  // negative capacities: no row is usable
    CtorArgs s(4, statexfer::test::test_layout(), 8);
    auto t = s.make();
    t.prepare(Exec());
    statexfer::test::upload(s.pool.memory_capacity(), std::vector<std::int64_t>{-1, -1});
    std::vector<std::int64_t> state_rows(4 * 8, 0);
    for (std::int64_t slot = 0; slot < 4; ++slot) state_rows[static_cast<std::size_t>(slot * 8)] = 1 + slot;
    statexfer::test::upload(s.config.state_rows, state_rows);
    statexfer::test::upload(s.commands.request_slots, std::vector<std::int64_t>{0, 1, -1, -1});
    statexfer::test::upload(s.commands.source_slots, std::vector<std::int64_t>{-1, 2, -1, -1});
    statexfer::test::upload(s.commands.destination_slots, std::vector<std::int64_t>{1, 5, -1, -1});
    statexfer::test::upload(s.commands.operation, std::vector<std::int32_t>{1, 0, 0, 0});
    statexfer::test::upload(s.commands.expected_consumed, std::vector<std::int64_t>{0, 4, -1, -1});
    statexfer::test::upload(s.commands.num_ops, std::vector<std::int32_t>{2});
    const Image before = image_of(s);
    t.validate(Exec());
    t.apply(Exec());
    Exec().fence();
    EXPECT_EQ(statexfer::test::download(s.commands.errors), (std::vector<std::int32_t>{2, 2, 0, 0}));
    EXPECT_EQ(statexfer::test::download(s.pool.backing()), before.pool);
  }
}

}  // namespace

#endif
