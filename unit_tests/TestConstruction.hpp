#ifndef STATEXFER_TEST_CONSTRUCTION_HPP
#define STATEXFER_TEST_CONSTRUCTION_HPP

// Host errors of docs/CONTRACT.md §3 in the arguments' shapes: every check the
// PreparedStateTransfer constructor makes of the capacity, the pool's rows,
// page_tokens, the command arrays, page tables, state rows, request state and
// the consumed_tokens region, and of StatePool's own arguments. Each asserts the
// exact exception type, that the message names the argument, and that nothing
// was written (pool, caches and command arrays unchanged). Bindings:
// TestBindingChecks; aliasing and memory: TestMemoryChecks; launch designs:
// TestLaunchDesign; prepare() and moved-from transfers: TestLifecycle.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/ctor_fixture.hpp"

namespace {

using Exec = TEST_EXECSPACE;
using CtorArgs = statexfer::test::CtorArgs<Exec>;
using int64_view = CtorArgs::int64_view;
using int32_view = CtorArgs::int32_view;
using statexfer::DType;
using statexfer::Region;
using statexfer::StateLayout;
using statexfer::test::accepts;
using statexfer::test::rejects;
using statexfer::test::throws_naming;

TEST(TEST_CATEGORY, construction_valid_setup_builds_and_prepares) {
  CtorArgs s;
  EXPECT_TRUE(accepts(s));
  auto t = s.make();
  EXPECT_FALSE(t.prepared());
  EXPECT_EQ(t.launch_summary(), "not prepared");
  t.prepare(Exec());
  EXPECT_TRUE(t.prepared());
  EXPECT_EQ(t.capacity(), 4);
  EXPECT_EQ(t.page_regions(), std::vector<std::string>{"kv"});
  EXPECT_TRUE(t.trailing_regions().empty());
  EXPECT_GT(t.work_items_per_command(), 0);
  // apply(): the compact grid, never more teams than the 4 command rows have work items.
  const std::string summary = t.launch_summary();
  EXPECT_EQ(summary.rfind("validate 1x", 0), 0u) << summary;
  EXPECT_NE(summary.find(", apply " + std::to_string(t.launch_plan().compact_teams) + "x"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find(" compact ("), std::string::npos) << summary;
  EXPECT_LE(t.launch_plan().compact_teams, 4 * t.work_items_per_command());

  CtorArgs tr;
  tr.with_trailing();
  tr.config.pages.push_back({"meta", tr.meta});
  auto t2 = tr.make();
  EXPECT_EQ(t2.page_regions(), (std::vector<std::string>{"kv", "meta"}));
  EXPECT_EQ(t2.trailing_regions(), std::vector<std::string>{"draft"});

  // Exclusions drop bindings; a trailing binding dropped needs no tables.
  CtorArgs ex;
  ex.config.pages.push_back({"meta", ex.meta});
  ex.config.trailing_pages = {{"draft", ex.draft}};
  ex.config.excluded_regions = {"meta", "draft", "draft"};
  EXPECT_TRUE(accepts(ex));
  auto t3 = ex.make();
  EXPECT_EQ(t3.page_regions(), std::vector<std::string>{"kv"});
  EXPECT_TRUE(t3.trailing_regions().empty());
}

TEST(TEST_CATEGORY, construction_every_capacity_with_the_fewest_rows) {
  for (std::int64_t c = 1; c <= 64; c *= 2) {
    SCOPED_TRACE("capacity " + std::to_string(c));
    EXPECT_TRUE(statexfer::is_valid_capacity(c));
    CtorArgs s(c, statexfer::test::test_layout(), c + 2);
    EXPECT_TRUE(accepts(s));
  }
  for (std::int64_t c : {-4, -1, 0, 3, 5, 6, 12, 63, 65, 96, 128, 256})
    EXPECT_FALSE(statexfer::is_valid_capacity(c)) << c;
}

TEST(TEST_CATEGORY, construction_capacity_allocate_rejects) {
  // 128..4096 are the large-batch extension (TestLargeBatch); past 4096 nothing.
  for (std::int64_t c : {0, 3, 8192, -1, -4, 65, 96, 4095, 4097}) {
    SCOPED_TRACE("capacity " + std::to_string(c));
    EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { statexfer::StateCommands<Exec>::allocate(c); },
                                                     {"capacity", std::to_string(c)}));
  }
}

TEST(TEST_CATEGORY, construction_allocated_commands_initial_values) {
  auto c = statexfer::StateCommands<Exec>::allocate(8);
  EXPECT_EQ(c.capacity(), 8);
  EXPECT_EQ(statexfer::test::download(c.request_slots), std::vector<std::int64_t>(8, -1));
  EXPECT_EQ(statexfer::test::download(c.source_slots), std::vector<std::int64_t>(8, -1));
  EXPECT_EQ(statexfer::test::download(c.destination_slots), std::vector<std::int64_t>(8, -1));
  EXPECT_EQ(statexfer::test::download(c.operation), std::vector<std::int32_t>(8, 0));
  EXPECT_EQ(statexfer::test::download(c.expected_consumed), std::vector<std::int64_t>(8, -1));
  EXPECT_EQ(statexfer::test::download(c.prefix_keys), std::vector<std::int64_t>(8, 0));
  EXPECT_EQ(statexfer::test::download(c.num_ops), std::vector<std::int32_t>(1, 0));
  EXPECT_EQ(statexfer::test::download(c.errors), std::vector<std::int32_t>(8, 0));
  EXPECT_EQ(statexfer::test::download(c.commit_positions), std::vector<std::int32_t>(8, -1));
  // Every field but the two device outputs (errors, commit_positions).
  const auto buffers = c.buffers();
  const std::vector<std::string> names = {"state_request_slots", "state_source_slots",      "state_destination_slots",
                                          "state_operation",     "state_expected_consumed", "state_prefix_keys",
                                          "state_num_ops"};
  ASSERT_EQ(buffers.size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(buffers[i].name, names[i]);
    const bool int32 = names[i] == "state_operation" || names[i] == "state_num_ops";
    EXPECT_EQ(buffers[i].dtype, int32 ? DType::int32 : DType::int64) << names[i];
    EXPECT_EQ(buffers[i].extent, names[i] == "state_num_ops" ? 1u : 8u) << names[i];
  }
  EXPECT_EQ(buffers[0].data, c.request_slots.data());
  EXPECT_EQ(buffers[5].data, c.prefix_keys.data());
  EXPECT_EQ(buffers[6].data, c.num_ops.data());
}

TEST(TEST_CATEGORY, construction_capacity_of_hand_made_command_views) {
  for (std::int64_t n : {0, 3, 8192, 65}) {
    SCOPED_TRACE("extent " + std::to_string(n));
    CtorArgs s(4, statexfer::test::test_layout(), 8196);
    const auto nu = static_cast<std::size_t>(n);
    s.hand_made_commands(nu);
    s.tables = statexfer::PageTable<Exec>("tables", nu, 4);
    s.config.state_rows = statexfer::StateRows<Exec>("state_rows", nu, 8);
    s.config.requests = statexfer::RequestState<Exec>::allocate(n);
    EXPECT_TRUE(rejects(s, {"capacity", "source_slots", std::to_string(n)}));
  }
  // The same hand-made Views of a valid extent are accepted.
  CtorArgs ok(4);
  ok.hand_made_commands(4);
  EXPECT_TRUE(accepts(ok));
}

TEST(TEST_CATEGORY, construction_pool_rows) {
  EXPECT_TRUE(rejects(CtorArgs(4, statexfer::test::test_layout(), 5), {"pool", "rows", "6", "5"}));
  EXPECT_TRUE(rejects(CtorArgs(4, statexfer::test::test_layout(), 1), {"pool", "rows"}));
  EXPECT_TRUE(rejects(CtorArgs(4, statexfer::test::test_layout(), 0), {"pool", "rows"}));
  EXPECT_TRUE(rejects(CtorArgs(64, statexfer::test::test_layout(), 65), {"pool", "66", "65"}));
  EXPECT_TRUE(accepts(CtorArgs(4, statexfer::test::test_layout(), 6)));
}

TEST(TEST_CATEGORY, construction_page_tokens) {
  for (std::int64_t pt : {0, -1, -4}) {
    CtorArgs s;
    s.config.page_tokens = pt;
    EXPECT_TRUE(rejects(s, {"page_tokens", std::to_string(pt)})) << pt;
  }
  CtorArgs one;
  one.config.page_tokens = 1;
  EXPECT_TRUE(accepts(one));
}

TEST(TEST_CATEGORY, construction_command_arrays_of_the_wrong_extent) {
  for (std::size_t n : {std::size_t(2), std::size_t(5), std::size_t(8), std::size_t(0)}) {
    SCOPED_TRACE("extent " + std::to_string(n));
    {
      CtorArgs s;
      s.commands.request_slots = s.own64(n);
      EXPECT_TRUE(rejects(s, {"commands.request_slots", "[4]"}));
    }
    {
      CtorArgs s;
      s.commands.destination_slots = s.own64(n);
      EXPECT_TRUE(rejects(s, {"commands.destination_slots", "[4]"}));
    }
    {
      CtorArgs s;
      s.commands.operation = s.own32(n);
      EXPECT_TRUE(rejects(s, {"commands.operation", "int32", "[4]"}));
    }
    {
      CtorArgs s;
      s.commands.expected_consumed = s.own64(n);
      EXPECT_TRUE(rejects(s, {"commands.expected_consumed", "[4]"}));
    }
    {
      CtorArgs s;
      s.commands.errors = s.own32(n);
      EXPECT_TRUE(rejects(s, {"commands.errors", "[4]"}));
    }
    {
      CtorArgs s;
      s.commands.num_ops = s.own32(n == 0 ? 0 : n);
      EXPECT_TRUE(rejects(s, {"commands.num_ops", "[1]"}));
    }
  }
  // Default-constructed (empty) Views.
  {
    CtorArgs s;
    s.commands.errors = int32_view();
    EXPECT_TRUE(rejects(s, {"commands.errors", "empty"}));
  }
  {
    CtorArgs s;
    s.commands.num_ops = int32_view();
    EXPECT_TRUE(rejects(s, {"commands.num_ops", "empty"}));
  }
}

TEST(TEST_CATEGORY, construction_source_slots_of_the_wrong_extent) {
  // The capacity is taken from source_slots; a source_slots array that disagrees
  // with the other six arrays must be the one the message names.
  {
    CtorArgs s(4, statexfer::test::test_layout(), 20);
    s.commands.source_slots = s.own64(5);  // not a capacity
    EXPECT_TRUE(rejects(s, {"source_slots", "5"}));
  }
  {
    CtorArgs s(4, statexfer::test::test_layout(), 20);
    s.commands.source_slots = s.own64(8);  // a capacity, but not the others' 4
    EXPECT_TRUE(rejects(s, {"source_slots"}));
  }
  {
    CtorArgs s(4, statexfer::test::test_layout(), 20);
    s.commands.source_slots = s.own64(2);
    EXPECT_TRUE(rejects(s, {"source_slots"}));
  }
}

TEST(TEST_CATEGORY, construction_page_tables) {
  {
    CtorArgs s;
    s.tables = statexfer::PageTable<Exec>("t", 8, 4);
    EXPECT_TRUE(rejects(s, {"page_tables", "[8, 4]"}));
  }
  {
    CtorArgs s;
    s.tables = statexfer::PageTable<Exec>("t", 2, 4);
    EXPECT_TRUE(rejects(s, {"page_tables", "[2, 4]"}));
  }
  {
    CtorArgs s;
    s.tables = statexfer::PageTable<Exec>("t", 4, 0);
    EXPECT_TRUE(rejects(s, {"page_tables", "W >= 1", "[4, 0]"}));
  }
  {
    CtorArgs s;
    s.tables = statexfer::PageTable<Exec>();
    EXPECT_TRUE(rejects(s, {"page_tables"}));
  }
  CtorArgs w1;
  w1.tables = statexfer::PageTable<Exec>("t", 4, 1);
  EXPECT_TRUE(accepts(w1));
}

TEST(TEST_CATEGORY, construction_state_rows) {
  for (auto shape : {std::pair<int, int>{4, 7}, {4, 9}, {8, 8}, {2, 8}, {0, 0}}) {
    CtorArgs s;
    s.config.state_rows =
        shape.first == 0 ? statexfer::StateRows<Exec>() : statexfer::StateRows<Exec>("r", shape.first, shape.second);
    EXPECT_TRUE(rejects(s, {"state_rows", "[4, 8]"})) << shape.first << "x" << shape.second;
  }
}

TEST(TEST_CATEGORY, construction_request_state) {
  {
    CtorArgs s;
    s.config.requests = statexfer::RequestState<Exec>::allocate(8);
    EXPECT_TRUE(rejects(s, {"requests", "capacity", "8"}));
  }
  {
    CtorArgs s;
    s.config.requests = statexfer::RequestState<Exec>::allocate(2, 3);
    EXPECT_TRUE(rejects(s, {"requests", "2"}));
  }
  {
    CtorArgs s;
    s.config.requests = statexfer::RequestState<Exec>();
    EXPECT_TRUE(rejects(s, {"requests"}));
  }
  {
    CtorArgs s;
    s.config.requests.consumed_tokens =
        Kokkos::View<std::int64_t**, Kokkos::LayoutRight, Exec::memory_space>("consumed", 4, 0);
    EXPECT_TRUE(rejects(s, {"consumed_tokens", "column"}));
  }
  {
    // Several columns and a row stride are fine.
    CtorArgs s;
    Kokkos::View<std::int64_t**, Kokkos::LayoutRight, Exec::memory_space> wide("wide", 4, 5);
    s.config.requests.consumed_tokens = Kokkos::subview(wide, Kokkos::ALL(), std::make_pair(2, 4));
    EXPECT_TRUE(accepts(s));
  }
  EXPECT_TRUE(throws_naming<std::invalid_argument>([] { statexfer::RequestState<Exec>::allocate(-1); }, {"capacity"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([] { statexfer::RequestState<Exec>::allocate(4, 0); }, {"columns"}));
}

TEST(TEST_CATEGORY, construction_consumed_tokens_region) {
  auto layout_with = [](Region consumed, std::int64_t row_bytes = 48) {
    std::vector<Region> regions = {{"kv", 32, 16, DType::uint8}};
    if (!consumed.name.empty()) regions.push_back(consumed);
    return StateLayout(regions, row_bytes);
  };
  EXPECT_TRUE(rejects(CtorArgs(4, layout_with({})), {"consumed_tokens"}));
  EXPECT_TRUE(rejects(CtorArgs(4, layout_with({"consumed", 0, 8, DType::int64})), {"consumed_tokens"}));
  EXPECT_TRUE(rejects(CtorArgs(4, layout_with({"consumed_tokens", 0, 8, DType::int32})),
                      {"consumed_tokens", "int64", "int32"}));
  EXPECT_TRUE(rejects(CtorArgs(4, layout_with({"consumed_tokens", 0, 8, DType::uint8})),
                      {"consumed_tokens", "int64", "uint8"}));
  EXPECT_TRUE(rejects(CtorArgs(4, layout_with({"consumed_tokens", 0, 8, DType::float32})),
                      {"consumed_tokens", "int64", "float32"}));
  EXPECT_TRUE(rejects(CtorArgs(4, layout_with({"consumed_tokens", 0, 16, DType::int64})),
                      {"consumed_tokens", "one int64", "16"}));
  EXPECT_TRUE(rejects(CtorArgs(4, layout_with({"consumed_tokens", 4, 8, DType::int64})),
                      {"consumed_tokens", "aligned", "offset 4"}));
  EXPECT_TRUE(rejects(CtorArgs(4, layout_with({"consumed_tokens", 0, 8, DType::int64}, 52)),
                      {"consumed_tokens", "aligned", "row_bytes 52"}));
  EXPECT_TRUE(accepts(CtorArgs(4, layout_with({"consumed_tokens", 16, 8, DType::int64}))));

  // A backing that starts off an 8-byte boundary.
  {
    CtorArgs s;
    const StateLayout layout = statexfer::test::test_layout();
    const std::int64_t rows = 8, rb = layout.row_bytes();
    Kokkos::View<std::uint8_t*, Exec::memory_space> storage("storage", rows * rb + 8);
    statexfer::StatePool<Exec>::backing_view shifted(storage.data() + 1, rows, rb);
    statexfer::StatePool<Exec>::capacity_view capacity("capacity", 2);
    s.pool = statexfer::StatePool<Exec>(layout, shifted, capacity);
    s.fill_pool();
    EXPECT_TRUE(rejects(s, {"consumed_tokens", "aligned"}));
    // The same memory on the boundary is accepted.
    CtorArgs ok;
    ok.pool = statexfer::StatePool<Exec>(layout, statexfer::StatePool<Exec>::backing_view(storage.data(), rows, rb),
                                         capacity);
    EXPECT_TRUE(accepts(ok));
  }
}

TEST(TEST_CATEGORY, construction_largest_endpoint_fits_in_int64) {
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  {
    CtorArgs s;  // W = 4
    s.config.page_tokens = max / 2;
    EXPECT_TRUE(rejects(s, {"page_tokens", std::to_string(max / 2), "width W (4)", "int64"}));
    s.config.page_tokens = max / 4 + 1;
    EXPECT_TRUE(rejects(s, {"page_tokens", "W (4)"}));
    s.config.page_tokens = max / 4;
    EXPECT_TRUE(accepts(s));
  }
  {
    CtorArgs s;
    s.tables = statexfer::PageTable<Exec>("t", 4, 1);
    s.config.page_tokens = max;
    EXPECT_TRUE(accepts(s));
  }
}

TEST(TEST_CATEGORY, construction_state_pool_errors) {
  const StateLayout layout = statexfer::test::test_layout();
  EXPECT_TRUE(
      throws_naming<std::invalid_argument>([&] { (void)statexfer::StatePool<Exec>(layout, -1, 4); }, {"rows", "-1"}));
  EXPECT_TRUE(
      throws_naming<std::invalid_argument>([&] { (void)statexfer::StatePool<Exec>(layout, 4, -2); }, {"pages", "-2"}));
  statexfer::StatePool<Exec>::capacity_view capacity("capacity", 2);
  EXPECT_TRUE(throws_naming<std::invalid_argument>(
      [&] { (void)statexfer::StatePool<Exec>(layout, statexfer::StatePool<Exec>::backing_view("b", 8, 81), capacity); },
      {"backing", "81", "row_bytes", "80"}));
  EXPECT_TRUE(throws_naming<std::invalid_argument>(
      [&] {
        (void)statexfer::StatePool<Exec>(layout, statexfer::StatePool<Exec>::backing_view("b", 8, 80),
                                         statexfer::StatePool<Exec>::capacity_view("c", 3));
      },
      {"memory_capacity", "[3]"}));
  // The allocating constructor zeroes rows and sets the capacity to {rows, pages}.
  statexfer::StatePool<Exec> pool(layout, 6, 9);
  EXPECT_EQ(pool.rows(), 6);
  EXPECT_EQ(pool.row_bytes(), 80);
  EXPECT_EQ(statexfer::test::download(pool.backing()), std::vector<std::uint8_t>(6 * 80, 0));
  EXPECT_EQ(statexfer::test::download(pool.memory_capacity()), (std::vector<std::int64_t>{6, 9}));
  EXPECT_EQ(pool.region_bytes("kv").extent(0), 6u);
  EXPECT_EQ(pool.region_bytes("kv").extent(1), 16u);
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { pool.region_bytes("nope"); }, {"'nope'"}));
}

}  // namespace

#endif
