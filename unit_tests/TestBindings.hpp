#ifndef STATEXFER_TEST_BINDINGS_HPP
#define STATEXFER_TEST_BINDINGS_HPP

// Targeted tests on hand-made cases: excluded regions, several page bindings of
// equal and different sizes, trailing (draft) bindings at every kind of
// endpoint, and the error codes of docs/CONTRACT.md §4 in small crafted batches.
// Each case runs through the library on TEST_EXECSPACE and through the host
// reference; both must agree byte for byte, and both must equal expected bytes
// and codes written out in the test itself (so that the test does not only
// compare two implementations).

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <test_common/case.hpp>
#include <test_common/run_case.hpp>

#include "common/case_factory.hpp"
#include <test_common/reference.hpp>

namespace {
namespace bindings {

using statexfer::test::Case;
using statexfer::test::CaseOutputs;
namespace ft = statexfer::test;

constexpr auto u8 = statexfer::DType::uint8;
constexpr auto i64 = statexfer::DType::int64;

// The inputs as outputs: nothing written, the given codes.
inline CaseOutputs unchanged(const Case& c, const std::vector<std::int32_t>& codes) {
  CaseOutputs out;
  statexfer::test::NpyArray errors = ft::npy<std::int32_t>({c.spec.capacity}, 0);
  for (std::size_t i = 0; i < codes.size(); ++i) ft::put<std::int32_t>(errors, static_cast<std::int64_t>(i), codes[i]);
  out.errors = errors;
  out.backing = c.arrays.at("backing");
  for (const std::string& name : statexfer::test::binding_names(c.spec))
    out.caches[name] = c.arrays.at("cache_" + name);
  return out;
}

inline bool excluded_byte(const Case& c, std::int64_t byte) {
  for (const std::string& name : c.spec.excluded_regions) {
    const statexfer::Region& r = ft::region_of(c, name);
    if (byte >= r.offset && byte < r.offset + r.nbytes) return true;
  }
  return false;
}
inline std::uint8_t& byte_of(CaseOutputs& out, const Case& c, std::int64_t row, std::int64_t byte) {
  return out.backing->bytes.at(static_cast<std::size_t>(row * c.spec.row_bytes + byte));
}
// Row copy / reset of the expected outputs: every byte outside the excluded regions.
inline void copy_row(CaseOutputs& out, const Case& c, std::int64_t src, std::int64_t dst) {
  for (std::int64_t b = 0; b < c.spec.row_bytes; ++b)
    if (!excluded_byte(c, b)) byte_of(out, c, dst, b) = byte_of(out, c, src, b);
}
inline void zero_row(CaseOutputs& out, const Case& c, std::int64_t dst) {
  for (std::int64_t b = 0; b < c.spec.row_bytes; ++b)
    if (!excluded_byte(c, b)) byte_of(out, c, dst, b) = 0;
}
// `n` bytes of cache page `page` into row `row` at `offset`, and back.
inline void cache_to_row(CaseOutputs& out, const Case& c, const std::string& name, std::int64_t page, std::int64_t row,
                         std::int64_t offset, std::int64_t n) {
  auto& cache = out.caches.at(name);
  ASSERT_EQ(cache.shape.at(1), n);
  for (std::int64_t b = 0; b < n; ++b)
    byte_of(out, c, row, offset + b) = cache.bytes.at(static_cast<std::size_t>(page * n + b));
}
inline void row_to_cache(CaseOutputs& out, const Case& c, const std::string& name, std::int64_t row,
                         std::int64_t offset, std::int64_t page, std::int64_t n) {
  auto& cache = out.caches.at(name);
  ASSERT_EQ(cache.shape.at(1), n);
  for (std::int64_t b = 0; b < n; ++b)
    cache.bytes.at(static_cast<std::size_t>(page * n + b)) = byte_of(out, c, row, offset + b);
}
inline std::int32_t table(const Case& c, std::int64_t slot, std::int64_t logical) {
  return ft::get<std::int32_t>(c.arrays.at("tables"), slot * ft::width_of(c) + logical);
}
inline std::int32_t trailing_table(const Case& c, std::int64_t slot, std::int64_t logical) {
  return ft::get<std::int32_t>(c.arrays.at("trailing_tables"), slot * ft::width_of(c) + logical);
}

// Library and reference agree byte for byte, and (when given) both equal `expected`.
template <class ExecutionSpace>
void check(const Case& c, const CaseOutputs* expected, const std::string& what) {
  SCOPED_TRACE(what);
  const CaseOutputs library = statexfer::test::run_case<ExecutionSpace>(c);
  ASSERT_FALSE(library.construct_error.has_value()) << *library.construct_error;
  const CaseOutputs reference = statexfer::test::reference_run(c);
  const auto lr = statexfer::test::compare_outputs(library, reference);
  EXPECT_TRUE(lr.identical()) << "library vs reference: " << ft::describe(lr);
  if (expected) {
    const auto le = statexfer::test::compare_outputs(library, *expected);
    EXPECT_TRUE(le.identical()) << "library vs explicit expectation: " << ft::describe(le);
    const auto re = statexfer::test::compare_outputs(reference, *expected);
    EXPECT_TRUE(re.identical()) << "reference vs explicit expectation: " << ft::describe(re);
  }
}

// C = 4, PT = 4, W = 3, rows 10 (null, live 1..4, snapshots 5..9), P = 16.
inline ft::CaseConfig base_config() {
  ft::CaseConfig cfg;
  cfg.capacity = 4;
  cfg.page_tokens = 4;
  cfg.width = 3;
  cfg.rows = 10;
  cfg.cache_pages = 16;
  return cfg;
}

}  // namespace bindings

// Excluded regions keep their bytes through copies and resets; a page binding
// on an excluded region is dropped (its cache and region bytes stay as they are).
TEST(TEST_CATEGORY, bindings_excluded_regions) {
  using namespace bindings;
  ft::CaseConfig cfg = base_config();
  cfg.regions = {{"consumed_tokens", 8, i64, 8},
                 {"ssm", 13, u8, 1},
                 {"scratch", 7, u8, 1},
                 {"kv_a", 5, u8, 4},
                 {"kv_b", 5, u8, 1},
                 {"conv", 3, u8, 16}};
  cfg.row_pad = 8;
  cfg.pages = {"kv_a", "kv_b"};
  cfg.excluded_regions = {"scratch", "kv_b"};
  Case c = ft::make_case(cfg);
  ft::add_snapshot(c, 0, 5, 6);  // row 1 -> row 5, partial page tables[0][1]
  ft::add_restore(c, 1, 6, 5);   // row 6 -> row 2, partial page tables[1][1]
  ft::add_reset(c, 2);           // zero row 3

  CaseOutputs want = unchanged(c, {0, 0, 0, 0});
  copy_row(want, c, 1, 5);
  copy_row(want, c, 6, 2);
  zero_row(want, c, 3);
  const auto& kv_a = ft::region_of(c, "kv_a");
  cache_to_row(want, c, "kv_a", table(c, 0, 1), 5, kv_a.offset, kv_a.nbytes);
  row_to_cache(want, c, "kv_a", 6, kv_a.offset, table(c, 1, 1), kv_a.nbytes);

  // The expectation itself: excluded bytes of every row and the excluded cache are the inputs'.
  for (const char* name : {"scratch", "kv_b"}) {
    const auto& r = ft::region_of(c, name);
    for (std::int64_t row = 0; row < c.spec.rows; ++row)
      for (std::int64_t b = r.offset; b < r.offset + r.nbytes; ++b)
        ASSERT_EQ(byte_of(want, c, row, b), ft::pool_byte(c, row, b));
  }
  ASSERT_EQ(want.caches.at("kv_b").bytes, c.arrays.at("cache_kv_b").bytes);
  ASSERT_NE(byte_of(want, c, 3, ft::region_of(c, "ssm").offset), ft::pool_byte(c, 3, ft::region_of(c, "ssm").offset));
  check<TEST_EXECSPACE>(c, &want, "excluded scratch and excluded page region kv_b");

  // Excluding the first page binding instead (bindings on it dropped, kv_b kept).
  cfg.excluded_regions = {"kv_a"};
  Case d = ft::make_case(cfg);
  ft::add_snapshot(d, 0, 5, 6);
  ft::add_restore(d, 1, 6, 5);
  CaseOutputs want_d = unchanged(d, {0, 0, 0, 0});
  copy_row(want_d, d, 1, 5);
  copy_row(want_d, d, 6, 2);
  const auto& kv_b = ft::region_of(d, "kv_b");
  cache_to_row(want_d, d, "kv_b", table(d, 0, 1), 5, kv_b.offset, kv_b.nbytes);
  row_to_cache(want_d, d, "kv_b", 6, kv_b.offset, table(d, 1, 1), kv_b.nbytes);
  check<TEST_EXECSPACE>(d, &want_d, "excluded page region kv_a");
}

// Three page bindings (two of 7 bytes, one of 3) at odd offsets: every binding's
// partial page moves; endpoints at a page boundary move rows only; two
// snapshots may read one physical page.
TEST(TEST_CATEGORY, bindings_several_page_sizes) {
  using namespace bindings;
  ft::CaseConfig cfg = base_config();
  cfg.regions = {
      {"consumed_tokens", 8, i64, 8}, {"ssm", 11, u8, 1}, {"kv_a", 7, u8, 1}, {"kv_b", 7, u8, 16}, {"kv_c", 3, u8, 4}};
  cfg.pages = {"kv_a", "kv_b", "kv_c"};
  Case c = ft::make_case(cfg);
  ft::set_table(c, 3, 1, table(c, 0, 1));
  ft::add_snapshot(c, 0, 5, 5);  // partial page tables[0][1]
  ft::add_restore(c, 1, 6, 3);   // partial page tables[1][0]
  ft::add_restore(c, 2, 7, 8);   // at a page boundary: row only
  ft::add_snapshot(c, 3, 8, 7);  // shares tables[0][1] with the first snapshot: allowed
  ASSERT_EQ(table(c, 3, 1), table(c, 0, 1));

  CaseOutputs want = unchanged(c, {0, 0, 0, 0});
  copy_row(want, c, 1, 5);
  copy_row(want, c, 6, 2);
  copy_row(want, c, 7, 3);
  copy_row(want, c, 4, 8);
  for (const char* name : {"kv_a", "kv_b", "kv_c"}) {
    const auto& r = ft::region_of(c, name);
    cache_to_row(want, c, name, table(c, 0, 1), 5, r.offset, r.nbytes);
    row_to_cache(want, c, name, 6, r.offset, table(c, 1, 0), r.nbytes);
    cache_to_row(want, c, name, table(c, 0, 1), 8, r.offset, r.nbytes);
  }
  check<TEST_EXECSPACE>(c, &want, "three page bindings");

  // A restore and a snapshot on one physical page conflict (code 4 for both),
  // while a third command on other pages still applies.
  Case d = ft::make_case(cfg);
  ft::set_table(d, 1, 1, table(d, 0, 1));
  ft::add_snapshot(d, 0, 5, 5);
  ft::add_restore(d, 1, 6, 6);
  ft::add_restore(d, 2, 7, 9);
  CaseOutputs want_d = unchanged(d, {4, 4, 0, 0});
  copy_row(want_d, d, 7, 3);
  for (const char* name : {"kv_a", "kv_b", "kv_c"}) {
    const auto& r = ft::region_of(d, name);
    row_to_cache(want_d, d, name, 7, r.offset, table(d, 2, 2), r.nbytes);
  }
  check<TEST_EXECSPACE>(d, &want_d, "restore and snapshot on one page");
}

// Trailing bindings at endpoints with end % PT in {0, 1, >= 2}, end == 1 and
// end == W * PT, for PT 1..4: which parts move is written out per endpoint.
TEST(TEST_CATEGORY, bindings_trailing_endpoints) {
  using namespace bindings;
  struct Point {
    std::int64_t pt, end;
    bool part0, part1, partial;
  };
  // part 0: end > 1 and end / PT >= 1; part 1: end > 1 and end % PT >= 2.
  const std::vector<Point> points = {
      {4, 1, false, false, true},  {4, 2, false, true, true},  {4, 3, false, true, true},  {4, 4, true, false, false},
      {4, 5, true, false, true},   {4, 6, true, true, true},   {4, 7, true, true, true},   {4, 8, true, false, false},
      {4, 9, true, false, true},   {4, 10, true, true, true},  {4, 11, true, true, true},  {4, 12, true, false, false},
      {1, 1, false, false, false}, {1, 2, true, false, false}, {1, 3, true, false, false}, {2, 1, false, false, true},
      {2, 2, true, false, false},  {2, 3, true, false, true},  {2, 6, true, false, false}, {3, 2, false, true, true},
      {3, 5, true, true, true},    {3, 7, true, false, true},  {3, 9, true, false, false},
  };
  for (const Point& p : points) {
    ft::CaseConfig cfg = base_config();
    cfg.page_tokens = p.pt;
    cfg.regions = {{"consumed_tokens", 8, i64, 8},
                   {"ssm", 9, u8, 1},
                   {"kv_a", 6, u8, 1},
                   {"draft", 6, u8, 1},
                   {"draft_b", 10, u8, 4}};
    cfg.pages = {"kv_a"};
    cfg.trailing_pages = {"draft", "draft_b"};
    cfg.salt = p.pt * 100 + p.end;
    Case c = ft::make_case(cfg);
    ft::add_snapshot(c, 0, 5, p.end);  // row 1 -> row 5
    ft::add_restore(c, 1, 6, p.end);   // row 6 -> row 2

    CaseOutputs want = unchanged(c, {0, 0, 0, 0});
    copy_row(want, c, 1, 5);
    copy_row(want, c, 6, 2);
    const std::int64_t logical = p.end / p.pt;
    if (p.partial) {
      const auto& r = ft::region_of(c, "kv_a");
      cache_to_row(want, c, "kv_a", table(c, 0, logical), 5, r.offset, r.nbytes);
      row_to_cache(want, c, "kv_a", 6, r.offset, table(c, 1, logical), r.nbytes);
    }
    for (const char* name : {"draft", "draft_b"}) {
      const auto& r = ft::region_of(c, name);
      const std::int64_t half = r.nbytes / 2;
      if (p.part0) {  // the preceding page into the first half
        cache_to_row(want, c, name, trailing_table(c, 0, logical - 1), 5, r.offset, half);
        row_to_cache(want, c, name, 6, r.offset, trailing_table(c, 1, logical - 1), half);
      }
      if (p.part1) {  // the current page into the second half
        cache_to_row(want, c, name, trailing_table(c, 0, logical), 5, r.offset + half, half);
        row_to_cache(want, c, name, 6, r.offset + half, trailing_table(c, 1, logical), half);
      }
    }
    check<TEST_EXECSPACE>(c, &want, "PT " + std::to_string(p.pt) + ", end " + std::to_string(p.end));
  }
}

// A restore whose two trailing parts map to one cache page: part 1 (the second
// half of the region) is what the page holds afterwards. A snapshot with both
// parts on one page reads it into both halves.
TEST(TEST_CATEGORY, bindings_trailing_same_page) {
  using namespace bindings;
  ft::CaseConfig cfg = base_config();
  cfg.regions = {{"consumed_tokens", 8, i64, 8}, {"ssm", 5, u8, 1}, {"kv_a", 4, u8, 1}, {"draft", 8, u8, 1}};
  cfg.pages = {"kv_a"};
  cfg.trailing_pages = {"draft"};
  Case c = ft::make_case(cfg);
  ft::set_trailing_table(c, 1, 0, 9);
  ft::set_trailing_table(c, 1, 1, 9);
  ft::set_trailing_table(c, 0, 0, 10);
  ft::set_trailing_table(c, 0, 1, 10);
  ft::add_restore(c, 1, 6, 6);   // row 6 -> row 2, parts 0 and 1 both on page 9
  ft::add_snapshot(c, 0, 5, 7);  // row 1 -> row 5, parts 0 and 1 both on page 10

  const auto& draft = ft::region_of(c, "draft");
  const auto& kv_a = ft::region_of(c, "kv_a");
  CaseOutputs want = unchanged(c, {0, 0, 0, 0});
  copy_row(want, c, 6, 2);
  copy_row(want, c, 1, 5);
  row_to_cache(want, c, "kv_a", 6, kv_a.offset, table(c, 1, 1), kv_a.nbytes);
  cache_to_row(want, c, "kv_a", table(c, 0, 1), 5, kv_a.offset, kv_a.nbytes);
  // Page 9 ends as the second half of row 6's draft region, byte for byte.
  for (std::int64_t b = 0; b < 4; ++b)
    want.caches.at("draft").bytes.at(static_cast<std::size_t>(9 * 4 + b)) = ft::pool_byte(c, 6, draft.offset + 4 + b);
  // Row 5's draft region holds page 10 twice.
  for (std::int64_t b = 0; b < 4; ++b) {
    const std::uint8_t v = c.arrays.at("cache_draft").bytes.at(static_cast<std::size_t>(10 * 4 + b));
    byte_of(want, c, 5, draft.offset + b) = v;
    byte_of(want, c, 5, draft.offset + 4 + b) = v;
  }
  ASSERT_NE(ft::pool_byte(c, 6, draft.offset), ft::pool_byte(c, 6, draft.offset + 4));  // the halves differ
  check<TEST_EXECSPACE>(c, &want, "both parts on one page");
}

// The error codes of docs/CONTRACT.md §4 in small crafted batches, written out per
// scenario; a batch's bytes change only for its rows with code 0.
TEST(TEST_CATEGORY, bindings_error_codes) {
  using namespace bindings;
  auto plain = [] {
    ft::CaseConfig cfg = base_config();
    cfg.regions = {{"consumed_tokens", 8, i64, 8}, {"ssm", 6, u8, 1}, {"kv_a", 3, u8, 1}};
    cfg.pages = {"kv_a"};
    return ft::make_case(cfg);
  };
  auto trailing = [] {
    ft::CaseConfig cfg = base_config();
    cfg.regions = {{"consumed_tokens", 8, i64, 8}, {"ssm", 6, u8, 1}, {"kv_a", 3, u8, 1}, {"draft", 4, u8, 1}};
    cfg.pages = {"kv_a"};
    cfg.trailing_pages = {"draft"};
    return ft::make_case(cfg);
  };
  // Expected outputs: nothing written (every code is non-zero).
  auto none_applied = [](const Case& c, std::vector<std::int32_t> codes) { return unchanged(c, codes); };

  {  // invalid counts: every row 5, live or not
    for (std::int32_t count : {-1, 5, 1 << 30}) {
      Case c = plain();
      ft::add_snapshot(c, 0, 5, 4);
      ft::add_reset(c, 1);
      ft::set_num_ops(c, count);
      const CaseOutputs want = none_applied(c, {5, 5, 5, 5});
      check<TEST_EXECSPACE>(c, &want, "count " + std::to_string(count));
    }
  }
  {  // 1: operation; 2: slots; 3: endpoint
    Case c = plain();
    ft::add_command(c, 0, 1, 5, 2, 4);   // operation 2
    ft::add_command(c, -1, 1, 5, 0, 4);  // request slot -1
    ft::add_command(c, 2, 3, 3, 0, 4);   // source == destination
    ft::set_request_consumed(c, 3, 4);
    ft::add_command(c, 3, 4, 6, 0, 5);  // snapshot endpoint 5, request consumed 4
    const CaseOutputs want = none_applied(c, {1, 2, 2, 3});
    check<TEST_EXECSPACE>(c, &want, "codes 1, 2, 3");
  }
  {  // 3: reset with an endpoint; endpoint past W * PT; endpoint 0 for a copy; restore from row 0 is 2
    Case c = plain();
    ft::add_command(c, 0, -1, 1, 1, 1);
    ft::add_restore(c, 1, 6, 13);  // W * PT = 12
    ft::add_restore(c, 2, 7, 0);
    ft::add_command(c, 3, 0, 4, 0, 0);
    const CaseOutputs want = none_applied(c, {3, 3, 3, 2});
    check<TEST_EXECSPACE>(c, &want, "code 3 variants");
  }
  {  // 4: two snapshots into one row; a reset of a row another command reads
    Case c = plain();
    ft::add_snapshot(c, 0, 5, 4);
    ft::add_snapshot(c, 1, 5, 4);
    ft::add_reset(c, 2);          // zeroes row 3 ...
    ft::add_restore(c, 3, 3, 4);  // ... which slot 3 restores from
    const CaseOutputs want = none_applied(c, {4, 4, 4, 4});
    check<TEST_EXECSPACE>(c, &want, "row conflicts");
  }
  {  // 6: unmapped partial page; page past PAGES (reduced memory capacity); both -1: 6, not 4
    Case c = plain();
    ft::set_table(c, 0, 1, -1);
    ft::set_table(c, 1, 1, 14);
    ft::set_table(c, 2, 0, -1);
    ft::set_table(c, 3, 0, -1);
    ft::set_memory_capacity(c, 10, 14);
    ft::add_snapshot(c, 0, 5, 5);
    ft::add_restore(c, 1, 6, 6);
    ft::add_restore(c, 2, 7, 1);
    ft::add_restore(c, 3, 8, 2);
    const CaseOutputs want = none_applied(c, {6, 6, 6, 6});
    check<TEST_EXECSPACE>(c, &want, "code 6");
  }
  {  // capacities above the real counts are capped at the pool's rows and the caches' pages
    Case c = plain();
    ft::set_memory_capacity(c, 1000, 1000);
    ft::set_state_row(c, 2, 10);    // == rows
    ft::set_table(c, 3, 0, 16);     // == P
    ft::add_snapshot(c, 0, 10, 4);  // destination == rows
    ft::add_restore(c, 1, 6, 4);    // applies
    ft::add_reset(c, 2);            // live row 10 does not exist
    ft::add_restore(c, 3, 7, 2);    // page 16 does not exist
    CaseOutputs want = none_applied(c, {2, 0, 2, 6});
    copy_row(want, c, 6, 2);
    check<TEST_EXECSPACE>(c, &want, "capacities above the real counts");
  }
  {  // ... and the last real row and page remain usable
    Case c = plain();
    ft::set_memory_capacity(c, 11, 17);
    ft::set_table(c, 0, 1, 15);    // == P - 1
    ft::add_snapshot(c, 0, 9, 5);  // destination == rows - 1
    ft::set_state_row(c, 1, 9 - 1);
    ft::add_restore(c, 1, 5, 4);  // into live row 8
    CaseOutputs want = none_applied(c, {0, 0, 0, 0});
    copy_row(want, c, 1, 9);
    copy_row(want, c, 5, 8);
    const auto& kv_a = ft::region_of(c, "kv_a");
    cache_to_row(want, c, "kv_a", 15, 9, kv_a.offset, kv_a.nbytes);
    check<TEST_EXECSPACE>(c, &want, "last row and page");
  }
  {  // 4 before 6: a conflicting command with an unmapped partial page gets 4
    Case c = plain();
    ft::set_table(c, 0, 1, -1);
    ft::add_snapshot(c, 0, 5, 5);
    ft::add_snapshot(c, 1, 5, 4);
    const CaseOutputs want = none_applied(c, {4, 4, 0, 0});
    check<TEST_EXECSPACE>(c, &want, "4 before 6");
  }
  {  // trailing part 1 only exists for end % PT >= 2: an unmapped entry there is
     // harmless at end % PT == 1 and fatal at end % PT == 2
    Case c = trailing();
    ft::set_trailing_table(c, 0, 1, -1);
    ft::set_trailing_table(c, 1, 1, -1);
    ft::add_restore(c, 0, 5, 5);  // parts: 0 only
    ft::add_restore(c, 1, 6, 6);  // parts: 0 and 1 (unmapped)
    CaseOutputs want = none_applied(c, {0, 6, 0, 0});
    copy_row(want, c, 5, 1);
    const auto& kv_a = ft::region_of(c, "kv_a");
    const auto& draft = ft::region_of(c, "draft");
    row_to_cache(want, c, "kv_a", 5, kv_a.offset, table(c, 0, 1), kv_a.nbytes);
    row_to_cache(want, c, "draft", 5, draft.offset, trailing_table(c, 0, 0), 2);
    check<TEST_EXECSPACE>(c, &want, "trailing part 1 at end % PT in {1, 2}");
  }
  {  // an excluded trailing binding is dropped: no trailing checks, no trailing writes
    ft::CaseConfig cfg = base_config();
    cfg.regions = {{"consumed_tokens", 8, i64, 8}, {"ssm", 6, u8, 1}, {"kv_a", 3, u8, 1}, {"draft", 4, u8, 1}};
    cfg.pages = {"kv_a"};
    cfg.trailing_pages = {"draft"};
    cfg.excluded_regions = {"draft"};
    Case c = ft::make_case(cfg);
    ft::set_trailing_table(c, 0, 0, -1);
    ft::add_restore(c, 0, 5, 6);
    CaseOutputs want = none_applied(c, {0, 0, 0, 0});
    copy_row(want, c, 5, 1);
    const auto& kv_a = ft::region_of(c, "kv_a");
    row_to_cache(want, c, "kv_a", 5, kv_a.offset, table(c, 0, 1), kv_a.nbytes);
    check<TEST_EXECSPACE>(c, &want, "excluded trailing binding");
  }
  {  // extreme endpoints with PT = 1 and trailing bindings: code 3, nothing else
     // (end / PT + part - 1 must not overflow: run under UBSan to see it)
    ft::CaseConfig cfg = base_config();
    cfg.page_tokens = 1;
    cfg.regions = {{"consumed_tokens", 8, i64, 8}, {"ssm", 6, u8, 1}, {"kv_a", 3, u8, 1}, {"draft", 4, u8, 1}};
    cfg.pages = {"kv_a"};
    cfg.trailing_pages = {"draft"};
    Case c = ft::make_case(cfg);
    ft::add_restore(c, 0, 5, std::numeric_limits<std::int64_t>::max());
    ft::add_snapshot(c, 1, 6, std::numeric_limits<std::int64_t>::max());
    ft::add_restore(c, 2, 7, std::numeric_limits<std::int64_t>::min());
    ft::add_restore(c, 3, 8, 2);  // applies: trailing part 0 on logical page 1
    CaseOutputs want = none_applied(c, {3, 3, 3, 0});
    copy_row(want, c, 8, 4);
    const auto& draft = ft::region_of(c, "draft");
    row_to_cache(want, c, "draft", 8, draft.offset, trailing_table(c, 3, 1), 2);
    check<TEST_EXECSPACE>(c, &want, "extreme endpoints");
  }
  {  // rows past the count do nothing and get 0
    Case c = plain();
    ft::add_snapshot(c, 0, 5, 4);
    ft::add_reset(c, 1);
    ft::add_command(c, 2, 0, 0, 7, 0);  // junk
    ft::set_num_ops(c, 1);
    CaseOutputs want = none_applied(c, {0, 0, 0, 0});
    copy_row(want, c, 1, 5);
    check<TEST_EXECSPACE>(c, &want, "rows past the count");
  }
  {  // trailing: a restore and a snapshot sharing a trailing page conflict; two snapshots do not
    Case c = trailing();
    ft::set_trailing_table(c, 1, 0, 3);  // slot 1's part 0 (end 5) ...
    ft::set_trailing_table(c, 0, 1, 3);  // ... is slot 0's part 1 (end 6)
    ft::add_restore(c, 0, 5, 6);
    ft::add_snapshot(c, 1, 6, 5);
    ft::set_trailing_table(c, 2, 0, 7);
    ft::set_trailing_table(c, 3, 0, 7);
    ft::add_snapshot(c, 2, 7, 4);
    ft::add_snapshot(c, 3, 8, 4);
    CaseOutputs want = none_applied(c, {4, 4, 0, 0});
    copy_row(want, c, 3, 7);
    copy_row(want, c, 4, 8);
    const auto& draft = ft::region_of(c, "draft");
    cache_to_row(want, c, "draft", 7, 7, draft.offset, 2);
    cache_to_row(want, c, "draft", 7, 8, draft.offset, 2);
    check<TEST_EXECSPACE>(c, &want, "trailing conflicts");
  }
  {  // trailing: part 1's code overrides part 0's (4 then 6 gives 6; 6 then 4 gives 4)
    Case c = trailing();
    ft::set_trailing_table(c, 0, 0, 11);  // slot 0 part 0 shared with slot 1 part 0
    ft::set_trailing_table(c, 1, 0, 11);
    ft::set_trailing_table(c, 0, 1, -1);  // slot 0 part 1 unmapped
    ft::add_restore(c, 0, 5, 6);
    ft::add_snapshot(c, 1, 6, 5);
    ft::set_trailing_table(c, 2, 0, 20);  // slot 2 part 0 past the page count ...
    ft::set_trailing_table(c, 2, 1, 12);  // ... part 1 shared with slot 3 part 1
    ft::set_trailing_table(c, 3, 1, 12);
    ft::add_restore(c, 2, 7, 6);
    ft::add_restore(c, 3, 8, 7);
    ft::set_trailing_table(c, 3, 0, 13);
    const CaseOutputs want = none_applied(c, {6, 4, 4, 4});
    check<TEST_EXECSPACE>(c, &want, "trailing code order");
  }
  {  // trailing: the table entry -1 is an entry like any other, so two rows on -1
     // conflict (4 overrides the 6 of the unmapped page); used parts of rows with
     // other codes count
    Case c = trailing();
    ft::set_trailing_table(c, 0, 0, -1);
    ft::set_trailing_table(c, 1, 0, -1);
    ft::add_restore(c, 0, 5, 5);
    ft::add_command(c, 1, 4, 6, 0, 5);  // slot 1's live row is 2, so code 2; its part 0 is still used
    const CaseOutputs want = none_applied(c, {4, 2, 0, 0});
    check<TEST_EXECSPACE>(c, &want, "trailing -1 entries");
  }
}

}  // namespace

#endif
