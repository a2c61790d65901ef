#ifndef STATEXFER_TEST_BINDING_CHECKS_HPP
#define STATEXFER_TEST_BINDING_CHECKS_HPP

// Host errors of docs/CONTRACT.md §3 in the page and trailing bindings: two
// bindings on one region, a binding on a region that is not uint8, cache pages
// of the wrong size or count, odd trailing regions, no binding left after the
// exclusions, names the layout lacks, trailing tables of the wrong shape and
// padded caches. Each asserts the exact exception type, that the message names
// the binding, and that nothing was written. What bindings move: TestBindings.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <string>
#include <utility>

#include "common/ctor_fixture.hpp"

namespace {

using Exec = TEST_EXECSPACE;
using CtorArgs = statexfer::test::CtorArgs<Exec>;
using cache_view = CtorArgs::cache_view;
using statexfer::DType;
using statexfer::StateLayout;
using statexfer::test::accepts;
using statexfer::test::rejects;

TEST(TEST_CATEGORY, construction_two_bindings_on_one_region) {
  {
    CtorArgs s;
    s.config.pages.push_back({"kv", s.meta});
    EXPECT_TRUE(rejects(s, {"'kv'", "two bindings"}));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages = {{"kv", CtorArgs::cache("kv_half", 16, 8, 1)}};
    EXPECT_TRUE(rejects(s, {"'kv'", "two bindings"}));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages.push_back({"draft", CtorArgs::cache("draft2", 16, 8, 2)});
    EXPECT_TRUE(rejects(s, {"'draft'", "two bindings"}));
  }
}

TEST(TEST_CATEGORY, construction_binding_on_a_non_uint8_region) {
  {
    CtorArgs s;
    s.config.pages = {{"conv", CtorArgs::cache("conv", 16, 24, 3)}};
    EXPECT_TRUE(rejects(s, {"'conv'", "uint8", "float32"}));
  }
  {
    CtorArgs s;
    s.config.pages.push_back({"consumed_tokens", CtorArgs::cache("ct", 16, 8, 3)});
    EXPECT_TRUE(rejects(s, {"'consumed_tokens'", "uint8", "int64"}));
  }
  {
    CtorArgs s;
    s.with_trailing();
    s.config.trailing_pages = {{"conv", CtorArgs::cache("conv_half", 16, 12, 3)}};
    EXPECT_TRUE(rejects(s, {"'conv'", "uint8", "float32"}));
  }
}

TEST(TEST_CATEGORY, construction_cache_page_bytes) {
  for (std::int64_t bytes : {15, 17, 32, 8}) {
    CtorArgs s;
    s.config.pages = {{"kv", CtorArgs::cache("kv_bad", 16, bytes, 4)}};
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
    s.config.trailing_pages = {{"draft", CtorArgs::cache("draft_bad", 16, bytes, 4)}};
    EXPECT_TRUE(rejects(s, {"'draft'", "half the region", "[16, 8]"})) << bytes;
  }
}

TEST(TEST_CATEGORY, construction_odd_trailing_region) {
  const StateLayout layout(
      {{"consumed_tokens", 0, 8, DType::int64}, {"kv", 16, 16, DType::uint8}, {"odd", 32, 15, DType::uint8}}, 48);
  CtorArgs s(4, layout);
  s.with_trailing();
  s.config.trailing_pages = {{"odd", CtorArgs::cache("odd", 16, 7, 5)}};
  EXPECT_TRUE(rejects(s, {"'odd'", "even", "15"}));
  s.config.trailing_pages = {{"odd", CtorArgs::cache("odd8", 16, 8, 5)}};
  EXPECT_TRUE(rejects(s, {"'odd'", "even"}));
}

TEST(TEST_CATEGORY, construction_cache_page_counts) {
  {
    CtorArgs s;
    s.config.pages.push_back({"meta", CtorArgs::cache("meta17", 17, 16, 6)});
    EXPECT_TRUE(rejects(s, {"'meta'", "page count", "17", "16"}));
  }
  {
    CtorArgs s;
    s.config.pages = {{"kv", CtorArgs::cache("kv8", 8, 16, 6)}, {"meta", s.meta}};
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

}  // namespace

#endif
