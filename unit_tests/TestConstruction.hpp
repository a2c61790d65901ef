#ifndef STATEXFER_TEST_CONSTRUCTION_HPP
#define STATEXFER_TEST_CONSTRUCTION_HPP

// Host errors of docs/CONTRACT.md §3: every check of the PreparedStateTransfer constructor,
// of StateLayout, StatePool, StateCommands and RequestState, prepare() with live
// commands, and validate()/apply() before prepare(). Each asserts the exact
// exception type, that the message names the argument, and that nothing was
// written (pool, caches and command arrays unchanged).

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/batch_fixture.hpp"

namespace {

using statexfer::test::throws_naming;
using Exec = TEST_EXECSPACE;
using cache_view = statexfer::PageBinding<Exec>::cache_view;
using int64_view = statexfer::StateCommands<Exec>::int64_view;
using int32_view = statexfer::StateCommands<Exec>::int32_view;
using statexfer::DType;
using statexfer::Region;
using statexfer::StateLayout;

inline std::vector<std::uint8_t> pattern_bytes(std::size_t n, std::uint8_t salt) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(salt + i * 13);
  return v;
}

inline cache_view patterned_cache(const char* label, std::int64_t pages, std::int64_t bytes, std::uint8_t salt) {
  cache_view c(std::string(label), pages, bytes);
  statexfer::test::upload(c, pattern_bytes(c.span(), salt));
  return c;
}

/// A valid set of constructor arguments (capacity C, the test layout, C + 4 rows,
/// one page binding "kv" with 16 pages, PT 4, W 4) that each test breaks once.
struct CtorArgs {
  std::int64_t c;
  statexfer::StatePool<Exec> pool;
  statexfer::StateCommands<Exec> commands;
  statexfer::PageTable<Exec> tables;
  statexfer::TransferConfig<Exec> config;
  cache_view kv, draft, meta;

  explicit CtorArgs(std::int64_t capacity = 4, StateLayout layout = statexfer::test::test_layout(),
                    std::int64_t rows = -1)
      : c(capacity) {
    pool = statexfer::StatePool<Exec>(layout, rows < 0 ? c + 4 : rows, 16);
    fill_pool();
    commands = statexfer::StateCommands<Exec>::allocate(c);
    tables = statexfer::PageTable<Exec>("tables", c, 4);
    kv = patterned_cache("kv", 16, 16, 0x11);
    draft = patterned_cache("draft", 16, 8, 0x22);
    meta = patterned_cache("meta", 16, 16, 0x33);
    config.pages = {{"kv", kv}};
    config.page_tokens = 4;
    config.state_rows = statexfer::StateRows<Exec>("state_rows", c, 8);
    config.requests = statexfer::RequestState<Exec>::allocate(c);
  }

  void fill_pool() { statexfer::test::upload(pool.backing(), pattern_bytes(pool.backing().span(), 0x5a)); }

  void with_trailing() {
    config.trailing_pages = {{"draft", draft}};
    config.trailing_tables = statexfer::PageTable<Exec>("trailing_tables", c, 4);
  }

  statexfer::PreparedStateTransfer<Exec> make() const {
    return statexfer::PreparedStateTransfer<Exec>(pool, commands, tables, config);
  }

  // Hand-made command arrays: StateCommands' arrays are unmanaged views of
  // memory the caller owns, here for as long as these arguments live.
  std::vector<Kokkos::View<std::int64_t*, Exec::memory_space>> owned64;
  std::vector<Kokkos::View<std::int32_t*, Exec::memory_space>> owned32;
  int64_view own64(std::size_t n) { return owned64.emplace_back("hand_made", n); }
  int32_view own32(std::size_t n) { return owned32.emplace_back("hand_made", n); }

  /// Commands whose every array has `n` elements (num_ops 1): what a caller who
  /// allocates them by hand passes.
  void hand_made_commands(std::size_t n) {
    commands = statexfer::StateCommands<Exec>();
    commands.request_slots = own64(n);
    commands.source_slots = own64(n);
    commands.destination_slots = own64(n);
    commands.operation = own32(n);
    commands.expected_consumed = own64(n);
    commands.num_ops = own32(1);
    commands.errors = own32(n);
  }
};

/// Everything a failed construction must leave alone.
struct Image {
  std::vector<std::uint8_t> pool, kv, draft, meta;
  std::vector<std::int32_t> errors, num_ops;
  std::vector<std::int64_t> request_slots;
  bool operator==(const Image& o) const {
    return pool == o.pool && kv == o.kv && draft == o.draft && meta == o.meta && errors == o.errors &&
           num_ops == o.num_ops && request_slots == o.request_slots;
  }
};

inline Image image_of(const CtorArgs& s) {
  Exec().fence();
  return {statexfer::test::download(s.pool.backing()),
          statexfer::test::download(s.kv),
          statexfer::test::download(s.draft),
          statexfer::test::download(s.meta),
          statexfer::test::download(s.commands.errors),
          statexfer::test::download(s.commands.num_ops),
          statexfer::test::download(s.commands.request_slots)};
}

/// The constructor throws exactly std::invalid_argument naming `words`, and writes nothing.
inline ::testing::AssertionResult rejects(const CtorArgs& s, std::initializer_list<std::string> words) {
  try {
    const Image before = image_of(s);
    auto result = throws_naming<std::invalid_argument>([&] { auto t = s.make(); }, words);
    if (!result) return result;
    if (!(image_of(s) == before)) return ::testing::AssertionFailure() << "a failed construction wrote memory";
    return result;
  } catch (const std::exception& e) {  // reading the memory back failed
    return ::testing::AssertionFailure() << "reading the arguments' memory threw: " << e.what();
  }
}

inline ::testing::AssertionResult accepts(const CtorArgs& s) {
  try {
    auto t = s.make();
    t.prepare(Exec());
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "rejected: " << e.what();
  }
  return ::testing::AssertionSuccess();
}

// ------------------------------------------------------------------ valid builds

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

// ------------------------------------------------------------------ capacity

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

// ------------------------------------------------------------------ pool, page_tokens

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

// ------------------------------------------------------------------ command arrays

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

// ------------------------------------------------------------------ tables, state rows, requests

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

// ------------------------------------------------------------------ consumed_tokens

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

// ------------------------------------------------------------------ bindings

TEST(TEST_CATEGORY, construction_two_bindings_on_one_region) {
  {
    CtorArgs s;
    s.config.pages.push_back({"kv", s.meta});
    EXPECT_TRUE(rejects(s, {"'kv'", "two bindings"}));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages = {{"kv", patterned_cache("kv_half", 16, 8, 1)}};
    EXPECT_TRUE(rejects(s, {"'kv'", "two bindings"}));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages.push_back({"draft", patterned_cache("draft2", 16, 8, 2)});
    EXPECT_TRUE(rejects(s, {"'draft'", "two bindings"}));
  }
}

TEST(TEST_CATEGORY, construction_binding_on_a_non_uint8_region) {
  {
    CtorArgs s;
    s.config.pages = {{"conv", patterned_cache("conv", 16, 24, 3)}};
    EXPECT_TRUE(rejects(s, {"'conv'", "uint8", "float32"}));
  }
  {
    CtorArgs s;
    s.config.pages.push_back({"consumed_tokens", patterned_cache("ct", 16, 8, 3)});
    EXPECT_TRUE(rejects(s, {"'consumed_tokens'", "uint8", "int64"}));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages = {{"conv", patterned_cache("conv_half", 16, 12, 3)}};
    EXPECT_TRUE(rejects(s, {"'conv'", "uint8", "float32"}));
  }
}

TEST(TEST_CATEGORY, construction_cache_page_bytes) {
  for (std::int64_t bytes : {15, 17, 32, 8}) {
    CtorArgs s;
    s.config.pages = {{"kv", patterned_cache("kv_bad", 16, bytes, 4)}};
    EXPECT_TRUE(rejects(s, {"'kv'", "16 bytes per page", "[16, " + std::to_string(bytes) + "]"})) << bytes;
  }
  {
    CtorArgs s;
    s.config.pages = {{"kv", cache_view()}};
    EXPECT_TRUE(rejects(s, {"'kv'", "bytes per page"}));
  }
  for (std::int64_t bytes : {16, 4, 9}) {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages = {{"draft", patterned_cache("draft_bad", 16, bytes, 4)}};
    EXPECT_TRUE(rejects(s, {"'draft'", "half the region", "[16, 8]"})) << bytes;
  }
}

TEST(TEST_CATEGORY, construction_odd_trailing_region) {
  const StateLayout layout(
      {{"consumed_tokens", 0, 8, DType::int64}, {"kv", 16, 16, DType::uint8}, {"odd", 32, 15, DType::uint8}}, 48);
  CtorArgs s(4, layout);
  s.with_trailing();
  s.config.trailing_pages = {{"odd", patterned_cache("odd", 16, 7, 5)}};
  EXPECT_TRUE(rejects(s, {"'odd'", "even", "15"}));
  s.config.trailing_pages = {{"odd", patterned_cache("odd8", 16, 8, 5)}};
  EXPECT_TRUE(rejects(s, {"'odd'", "even"}));
}

TEST(TEST_CATEGORY, construction_cache_page_counts) {
  {
    CtorArgs s;
    s.config.pages.push_back({"meta", patterned_cache("meta17", 17, 16, 6)});
    EXPECT_TRUE(rejects(s, {"'meta'", "page count", "17", "16"}));
  }
  {
    CtorArgs s;
    s.config.pages = {{"kv", patterned_cache("kv8", 8, 16, 6)}, {"meta", s.meta}};
    EXPECT_TRUE(rejects(s, {"'meta'", "page count", "16", "8"}));
  }
  {
    CtorArgs s;
    s.config.pages = {{"kv", cache_view("kv0", 0, 16)}};
    EXPECT_TRUE(rejects(s, {"'kv'", "no pages"}));
  }
  {
    CtorArgs s;
    s.config.pages.push_back({"meta", cache_view("meta0", 0, 16)});
    EXPECT_TRUE(rejects(s, {"'meta'"}));
  }
  for (std::int64_t pages : {15, 17, 0}) {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages = {{"draft", cache_view("draft_n", pages, 8)}};
    EXPECT_TRUE(rejects(s, {"'draft'", "page count", "[" + std::to_string(pages) + ", 8]"})) << pages;
  }
}

TEST(TEST_CATEGORY, construction_no_page_binding_left) {
  {
    CtorArgs s;
    s.config.excluded_regions = {"kv"};
    EXPECT_TRUE(rejects(s, {"no page binding"}));
  }
  {
    CtorArgs s;
    s.config.pages.clear();
    EXPECT_TRUE(rejects(s, {"no page binding"}));
  }
  {
    CtorArgs s;
    s.config.pages.clear();
    s.with_trailing();
    EXPECT_TRUE(rejects(s, {"no page binding"}));
  }
  {
    CtorArgs s;
    s.config.pages.push_back({"meta", s.meta});
    s.config.excluded_regions = {"kv", "meta"};
    EXPECT_TRUE(rejects(s, {"no page binding"}));
  }
}

TEST(TEST_CATEGORY, construction_unknown_region_names) {
  {
    CtorArgs s;
    s.config.pages = {{"nope", s.kv}};
    EXPECT_TRUE(rejects(s, {"page binding", "'nope'", "layout"}));
  }
  {
    CtorArgs s;
    s.config.pages.push_back({"", s.meta});
    EXPECT_TRUE(rejects(s, {"page binding", "''"}));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages = {{"nope_draft", s.draft}};
    EXPECT_TRUE(rejects(s, {"trailing binding", "'nope_draft'", "layout"}));
  }
  {
    CtorArgs s;
    s.config.excluded_regions = {"meta", "nope_excluded"};
    EXPECT_TRUE(rejects(s, {"excluded", "'nope_excluded'", "layout"}));
  }
}

TEST(TEST_CATEGORY, construction_trailing_tables) {
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_tables = statexfer::PageTable<Exec>();
    EXPECT_TRUE(rejects(s, {"trailing_tables", "[4, 4]"}));
  }
  for (auto shape : {std::pair<int, int>{4, 5}, {4, 3}, {8, 4}, {2, 4}, {4, 0}}) {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_tables = statexfer::PageTable<Exec>("tt", shape.first, shape.second);
    EXPECT_TRUE(rejects(s, {"trailing_tables", "[4, 4]",
                            "[" + std::to_string(shape.first) + ", " + std::to_string(shape.second) + "]"}))
        << shape.first << "x" << shape.second;
  }
}

// ------------------------------------------------------------------ aliasing caches

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

// ------------------------------------------- validation inputs apart from written memory

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

// apply()'s design: the compact grid by default on every backend; options.apply
// picks any other, options.expert.apply_words the flat grid's words; the constructor
// refuses the rest, naming it.
TEST(TEST_CATEGORY, construction_apply_design) {
  CtorArgs s;
  {
    auto t = s.make();
    t.prepare(Exec());
    EXPECT_EQ(t.launch_plan().apply, statexfer::ApplyDesign::compact) << t.launch_summary();
    EXPECT_EQ(t.launch_plan().compact_units, 1) << "small rows: one unit an item";
    EXPECT_EQ(t.launch_plan().apply_words, 2);
    EXPECT_NE(t.launch_summary().find(" compact (1 units an item)"), std::string::npos) << t.launch_summary();
  }
  s.config.options.apply = statexfer::ApplyDesign::flat_grid;
  for (const int words : {1, 2, 4}) {
    s.config.options.expert.apply_words = words;
    auto t = s.make();
    t.prepare(Exec());
    const statexfer::LaunchPlan p = t.launch_plan();
    EXPECT_EQ(p.apply_words, words);
    EXPECT_GE(p.apply_item_threads, 32) << "at least a warp of threads per work item";
    EXPECT_EQ(p.work_items, 4 * t.work_items_per_command());
    EXPECT_NE(t.launch_summary().find(" flat (" + std::to_string(words) + " words a thread)"), std::string::npos)
        << t.launch_summary();
  }
  s.config.options.expert.apply_words = 0;
  for (const auto design : {statexfer::ApplyDesign::teams, statexfer::ApplyDesign::flat_grid,
                            statexfer::ApplyDesign::persistent, statexfer::ApplyDesign::compact}) {
    s.config.options.apply = design;
    auto t = s.make();
    t.prepare(Exec());
    EXPECT_EQ(t.launch_plan().apply, design);
    EXPECT_GE(t.launch_plan().apply_team_size, 1);
  }
  s.config.options.apply = static_cast<statexfer::ApplyDesign>(5);
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { (void)s.make(); }, {"options.apply", "ApplyDesign"}));
  s.config.options.apply = statexfer::ApplyDesign::automatic;
  for (const int bad : {-1, 1 << 21}) {
    s.config.options.expert.apply_teams = bad;
    EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { (void)s.make(); },
                                                     {"options.expert.apply_teams", std::to_string(bad)}))
        << bad;
  }
  s.config.options.expert.apply_teams = 0;
  for (const int bad : {-1, 3, 5, -2}) {
    s.config.options.expert.apply_words = bad;
    EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { (void)s.make(); },
                                                     {"options.expert.apply_words", std::to_string(bad)}))
        << bad;
  }
}

// Every option out of range is refused by the constructor, naming it.
TEST(TEST_CATEGORY, construction_options_ranges) {
  const std::vector<std::pair<std::string, std::function<void(statexfer::TransferOptions&)>>> bad = {
      {"options.expert.apply_team_size", [](auto& o) { o.expert.apply_team_size = 1025; }},
      {"options.expert.apply_tile_bytes", [](auto& o) { o.expert.apply_tile_bytes = 128; }},
      {"options.expert.apply_tile_bytes", [](auto& o) { o.expert.apply_tile_bytes = 1000; }},
      {"options.expert.apply_teams", [](auto& o) { o.expert.apply_teams = -3; }},
      {"options.expert.validate_rows_per_team", [](auto& o) { o.expert.validate_rows_per_team = 65; }},
      {"options.expert.validate_peers_per_lane", [](auto& o) { o.expert.validate_peers_per_lane = -1; }},
      {"options.expert.validate_chunk", [](auto& o) { o.expert.validate_chunk = 96; }},
      {"options.expert.validate_chunk", [](auto& o) { o.expert.validate_chunk = 8192; }},
      {"options.expert.validate_groups", [](auto& o) { o.expert.validate_groups = 65; }},
      {"options.expert.fused_block", [](auto& o) { o.expert.fused_block = 16; }},
      {"options.expert.fused_block", [](auto& o) { o.expert.fused_block = 1024; }},
      {"options.expert.fused_rounds", [](auto& o) { o.expert.fused_rounds = 65; }},
      {"options.validate_and_apply", [](auto& o) { o.validate_and_apply = static_cast<statexfer::FusedDesign>(9); }}};
  for (const auto& [name, set] : bad) {
    CtorArgs s;
    set(s.config.options);
    EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { (void)s.make(); }, {"PreparedStateTransfer", name})) << name;
  }
  CtorArgs s;
  s.config.options.expert.apply_tile_bytes = 256;
  s.config.options.expert.validate_chunk = 64;
  EXPECT_NO_THROW((void)s.make());
}

// validate_and_apply()'s designs from options on every backend: the flat grid
// (hosts: a team of one per work item), the teams where a team holds a thread
// per row, two launches; launch_plan() says which ran and its shape.
TEST(TEST_CATEGORY, construction_validate_and_apply_design) {
  using statexfer::FusedDesign;
  const bool host = std::is_same_v<Exec::memory_space, Kokkos::HostSpace>;
  CtorArgs s;
  {
    auto t = s.make();
    t.prepare(Exec());
    if (host) {
      EXPECT_EQ(t.launch_plan().validate_and_apply, FusedDesign::two_launches);
    }
  }
  s.config.options.validate_and_apply = FusedDesign::flat_grid;
  s.config.options.expert.fused_block = 64;
  {
    auto t = s.make();
    t.prepare(Exec());
    const statexfer::LaunchPlan p = t.launch_plan();
    EXPECT_EQ(p.validate_and_apply, FusedDesign::flat_grid);
    // Hosts a team of one per work item, GPUs 64 threads of 4 words per 4 KiB chunk.
    EXPECT_EQ(p.fused_block, host ? 1 : 64);
    EXPECT_EQ(p.fused_words, 4);
    EXPECT_EQ(p.fused_rounds, 1);
    EXPECT_EQ(p.fused_blocks, p.work_items << p.fused_chunk_shift);
  }
  s.config.options.expert.fused_rounds = 2;
  {
    auto t = s.make();
    t.prepare(Exec());
    EXPECT_EQ(t.launch_plan().fused_rounds, host ? 1 : 2) << "hosts move a whole work item a block";
  }
  s.config.options.validate_and_apply = FusedDesign::two_launches;
  {
    auto t = s.make();
    t.prepare(Exec());
    EXPECT_EQ(t.launch_plan().validate_and_apply, FusedDesign::two_launches);
    EXPECT_EQ(t.launch_summary().find("validate_and_apply"), std::string::npos) << t.launch_summary();
  }
  CtorArgs large(128);
  large.config.options.validate_and_apply = FusedDesign::teams;
  auto t = large.make();
  t.prepare(Exec());
  EXPECT_EQ(t.launch_plan().validate_and_apply, FusedDesign::two_launches) << "no one launch above 64 commands";
  EXPECT_TRUE(t.launch_plan().sorted_validation);
}

// validate()'s teams at C <= 64: one team on hosts and up to 32 commands on
// GPUs, teams of 8 rows above; options.expert.validate_rows_per_team picks the rows
// per team on every backend.
TEST(TEST_CATEGORY, construction_validate_teams) {
  const bool host = std::is_same_v<Exec::memory_space, Kokkos::HostSpace>;
  for (const std::int64_t c : {32, 64}) {
    CtorArgs s(c);
    auto t = s.make();
    t.prepare(Exec());
    EXPECT_EQ(t.launch_plan().validate_league, host || c <= 32 ? 1 : 8) << t.launch_summary();
    EXPECT_EQ(t.launch_plan().validate_rows_per_team, host || c <= 32 ? c : 8);
  }
  CtorArgs s(64);
  s.config.options.expert.validate_rows_per_team = 3;
  auto t = s.make();
  t.prepare(Exec());
  EXPECT_EQ(t.launch_plan().validate_league, 22) << "ceil(64 / 3) teams";
  EXPECT_EQ(t.launch_summary().rfind("validate 22x", 0), 0u) << t.launch_summary();
}

// ------------------------------------------------------------------ moved-from transfers

TEST(TEST_CATEGORY, construction_moved_from_transfer) {
  CtorArgs s;
  s.with_trailing();
  auto t = s.make();
  t.prepare(Exec());
  const std::string summary = t.launch_summary();
  const std::int64_t items = t.work_items_per_command();
  auto owner = std::move(t);
  EXPECT_EQ(owner.capacity(), 4);
  EXPECT_TRUE(owner.prepared());
  EXPECT_EQ(owner.launch_summary(), summary);
  EXPECT_EQ(owner.work_items_per_command(), items);
  EXPECT_EQ(owner.page_regions(), std::vector<std::string>{"kv"});
  EXPECT_EQ(owner.trailing_regions(), std::vector<std::string>{"draft"});

  // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested.
  EXPECT_EQ(t.capacity(), 0);
  EXPECT_EQ(t.work_items_per_command(), 0);
  EXPECT_TRUE(t.page_regions().empty());
  EXPECT_TRUE(t.trailing_regions().empty());
  EXPECT_FALSE(t.prepared());
  EXPECT_EQ(t.launch_summary(), "moved-from");
  const Image before = image_of(s);
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.prepare(Exec()); }, {"prepare", "moved from"}));
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.validate(Exec()); }, {"validate", "moved from"}));
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.apply(Exec()); }, {"apply", "moved from"}));
  EXPECT_TRUE(
      throws_naming<std::logic_error>([&] { t.validate_and_apply(Exec()); }, {"validate_and_apply", "moved from"}));
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { (void)t.execution_space_instance(); },
                                              {"execution_space_instance", "moved from"}));
  EXPECT_TRUE(image_of(s) == before);

  // Assigning to a moved-from transfer makes it whole again.
  t = std::move(owner);
  EXPECT_EQ(t.capacity(), 4);
  EXPECT_EQ(t.launch_summary(), summary);
  EXPECT_NO_THROW(t.validate_and_apply(Exec()));
  EXPECT_EQ(owner.capacity(), 0);
  // NOLINTEND(bugprone-use-after-move)
}

// ------------------------------------------------------------------ StateLayout, StatePool

TEST(TEST_CATEGORY, construction_state_layout_errors) {
  auto layout_rejects = [](std::vector<Region> regions, std::int64_t row_bytes,
                           std::initializer_list<std::string> words) {
    return throws_naming<std::invalid_argument>([&] { StateLayout l(regions, row_bytes); }, words);
  };
  EXPECT_TRUE(layout_rejects({{"a", 0, 8, DType::uint8}, {"b", 4, 8, DType::uint8}}, 16, {"'a'", "'b'", "overlap"}));
  EXPECT_TRUE(layout_rejects({{"a", 4, 8, DType::uint8}, {"b", 0, 16, DType::uint8}}, 16, {"'a'", "'b'", "overlap"}));
  EXPECT_TRUE(layout_rejects({{"a", 8, 16, DType::uint8}}, 16, {"'a'", "not inside", "16"}));
  EXPECT_TRUE(layout_rejects({{"a", -1, 4, DType::uint8}}, 16, {"'a'", "not inside"}));
  EXPECT_TRUE(layout_rejects({{"a", 17, 1, DType::uint8}}, 16, {"'a'", "not inside"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 4, DType::uint8}, {"a", 8, 4, DType::uint8}}, 16, {"'a'", "twice"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 4, DType::uint8}, {"", 8, 4, DType::uint8}}, 16, {"region 1", "empty name"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 0, DType::uint8}}, 16, {"'a'", "positive size"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, -4, DType::uint8}}, 16, {"'a'", "positive size", "-4"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 4, DType::uint8}}, 0, {"row_bytes", "0"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 4, DType::uint8}}, -16, {"row_bytes", "-16"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 12, DType::int64}}, 16, {"'a'", "multiple", "int64"}));
  // Touching regions and an empty layout are fine.
  EXPECT_NO_THROW((StateLayout({{"a", 0, 8, DType::uint8}, {"b", 8, 8, DType::uint8}}, 16)));
  EXPECT_NO_THROW((StateLayout({}, 16)));

  const StateLayout l = statexfer::test::test_layout();
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { l.region("nope"); }, {"'nope'"}));
  EXPECT_TRUE(l.contains("kv"));
  EXPECT_FALSE(l.contains("nope"));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([] { statexfer::dtype_from_string("float8"); }, {"'float8'"}));
  EXPECT_EQ(statexfer::dtype_from_string("bfloat16"), DType::bfloat16);

  const StateLayout packed = StateLayout::pack(
      {{"consumed_tokens", 8, DType::int64}, {"x", 3, DType::uint8}, {"y", 8, DType::float32}, {"z", 1, DType::uint8}});
  EXPECT_EQ(packed.region("x").offset, 8);
  EXPECT_EQ(packed.region("y").offset, 16);
  EXPECT_EQ(packed.region("z").offset, 24);
  EXPECT_EQ(packed.row_bytes(), 32);
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

// ------------------------------------------------------------------ prepare, validate, apply

TEST(TEST_CATEGORY, construction_prepare_requires_zero_num_ops) {
  for (std::int32_t n : {1, -1, 4, 5}) {
    SCOPED_TRACE("num_ops " + std::to_string(n));
    CtorArgs s;
    statexfer::test::upload(s.commands.errors, std::vector<std::int32_t>(4, 9));
    auto t = s.make();
    statexfer::test::upload(s.commands.num_ops, std::vector<std::int32_t>{n});
    const Image before = image_of(s);
    EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { t.prepare(Exec()); }, {"num_ops", std::to_string(n)}));
    EXPECT_FALSE(t.prepared());
    EXPECT_TRUE(image_of(s) == before) << "a failed prepare() wrote memory";
    // Still unprepared: validate() and apply() refuse.
    EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.validate(Exec()); }, {"prepare"}));
    EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.apply(Exec()); }, {"prepare"}));
    // With num_ops back at 0 it prepares, and validate() writes the errors.
    statexfer::test::upload(s.commands.num_ops, std::vector<std::int32_t>{0});
    EXPECT_NO_THROW(t.prepare(Exec()));
    EXPECT_TRUE(t.prepared());
    EXPECT_EQ(statexfer::test::download(s.commands.errors), std::vector<std::int32_t>(4, 0));
    EXPECT_EQ(statexfer::test::download(s.pool.backing()), before.pool);
  }
}

TEST(TEST_CATEGORY, construction_validate_and_apply_before_prepare) {
  CtorArgs s;
  statexfer::test::upload(s.commands.errors, std::vector<std::int32_t>(4, 9));
  auto t = s.make();
  const Image before = image_of(s);
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.validate(Exec()); }, {"validate", "prepare"}));
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.apply(Exec()); }, {"apply", "prepare"}));
  EXPECT_TRUE(
      throws_naming<std::logic_error>([&] { t.validate_and_apply(Exec()); }, {"validate_and_apply", "prepare"}));
  EXPECT_TRUE(image_of(s) == before) << "validate()/apply()/validate_and_apply() before prepare() wrote memory";
  // A moved-from-and-back transfer keeps its state.
  statexfer::PreparedStateTransfer<Exec> moved(std::move(t));
  moved.prepare(Exec());
  EXPECT_NO_THROW(moved.validate(Exec()));
  EXPECT_NO_THROW(moved.apply(Exec()));
  Exec().fence();
}

// ------------------------------------------------------------------ hardening (issue 5)

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

TEST(TEST_CATEGORY, construction_padded_caches) {
  // apply() addresses cache page p at data() + p * page_bytes: a LayoutRight View
  // with padded rows would make it read and write the wrong bytes.
  const StateLayout layout(
      {{"consumed_tokens", 0, 8, DType::int64}, {"kv", 8, 300, DType::uint8}, {"draft", 308, 600, DType::uint8}}, 912);
  const cache_view padded(Kokkos::view_alloc("padded_kv", Kokkos::AllowPadding), 16, 300);
  const cache_view padded_half(Kokkos::view_alloc("padded_draft", Kokkos::AllowPadding), 16, 300);
  if (padded.span_is_contiguous()) GTEST_SKIP() << "this Kokkos does not pad [16, 300] uint8 Views";
  {
    CtorArgs s(4, layout);
    s.config.pages = {{"kv", padded}};
    EXPECT_TRUE(rejects(s, {"page binding 'kv'", "contiguous", "300-byte pages"}));
  }
  {
    CtorArgs s(4, layout);
    s.config.pages = {{"kv", cache_view("kv300", 16, 300)}};
    s.config.trailing_pages = {{"draft", padded_half}};
    s.config.trailing_tables = statexfer::PageTable<Exec>("trailing_tables", 4, 4);
    EXPECT_TRUE(rejects(s, {"trailing binding 'draft'", "contiguous"}));
    s.config.trailing_pages = {{"draft", cache_view("draft300", 16, 300)}};
    EXPECT_TRUE(accepts(s));
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
