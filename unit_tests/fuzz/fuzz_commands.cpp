// libFuzzer target: arbitrary device-side inputs on a few fixed, valid
// configurations (page bindings, trailing bindings, excluded regions, capacities
// 1 to 64, and 128 for the sorted validation), run through the library on
// Kokkos::Serial (test::run_case) and through the contract's oracle
// (test::reference_run, test_common/; docs/CONTRACT.md). Error codes, the pool and every cache must agree byte
// for byte; any difference aborts, and ASan, UBSan and the Kokkos bounds checks
// catch any access outside the Views.
//
// The input drives, through FuzzedDataProvider: the configuration; edits of the
// memory capacity, state rows, page tables, trailing tables, request consumed
// tokens and pool consumed tokens; then each command row as a well-formed
// snapshot, restore or reset (arguments in or near range, so batches apply and
// collide) or as raw values; then num_ops (the row count, or any int32).
//
// STATEXFER_FUZZ_SAVE=DIR saves a failing input as a stx-case/1 folder DIR/case
// (no expected/) for statexfer-replay.

#include <fuzzer/FuzzedDataProvider.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <exception>
#include <string>
#include <vector>

#include <test_common/case.hpp>
#include <test_common/run_case.hpp>

#include "common/case_factory.hpp"
#include <test_common/reference.hpp>

namespace {

namespace ft = statexfer::test;
using statexfer::DType;
using statexfer::test::Case;

struct Fixed {
  Case base;
  std::int64_t C, PT, W, rows, P;
  bool trailing;
};

Fixed make_fixed(const ft::CaseConfig& cfg) {
  Fixed f{ft::make_case(cfg),         cfg.capacity, cfg.page_tokens, cfg.width, 0, cfg.cache_pages,
          !cfg.trailing_pages.empty()};
  f.rows = f.base.spec.rows;
  return f;
}

std::vector<Fixed> make_configurations() {
  std::vector<Fixed> out;
  {  // two page bindings of odd sizes, a trailing binding, an excluded region, a float32 region
    ft::CaseConfig cfg;
    cfg.capacity = 4, cfg.page_tokens = 4, cfg.width = 3, cfg.cache_pages = 8;
    cfg.regions = {{"consumed_tokens", 8, DType::int64, 8},
                   {"conv", 12, DType::float32},
                   {"kv_a", 13},
                   {"ex", 5},
                   {"kv_b", 7},
                   {"draft", 10}};
    cfg.pages = {"kv_a", "kv_b"};
    cfg.trailing_pages = {"draft"};
    cfg.excluded_regions = {"ex"};
    out.push_back(make_fixed(cfg));
  }
  {  // the fewest rows (C + 2); two trailing bindings, one excluded; an excluded page binding
    ft::CaseConfig cfg;
    cfg.capacity = 8, cfg.page_tokens = 3, cfg.width = 4, cfg.cache_pages = 6, cfg.rows = 10;
    cfg.regions = {{"ssm", 33}, {"consumed_tokens", 8, DType::int64, 8}, {"kv", 16}, {"d1", 6}, {"d2", 12}, {"kv2", 9}};
    cfg.row_pad = 8;
    cfg.pages = {"kv", "kv2"};
    cfg.trailing_pages = {"d1", "d2"};
    cfg.excluded_regions = {"d2", "kv2"};
    cfg.salt = 3;
    out.push_back(make_fixed(cfg));
  }
  {  // capacity 1, one token per page, three rows
    ft::CaseConfig cfg;
    cfg.capacity = 1, cfg.page_tokens = 1, cfg.width = 2, cfg.cache_pages = 3, cfg.rows = 3;
    cfg.regions = {{"consumed_tokens", 8, DType::int64, 8}, {"kv", 4}, {"tr", 2}};
    cfg.pages = {"kv"};
    cfg.trailing_pages = {"tr"};
    cfg.salt = 5;
    out.push_back(make_fixed(cfg));
  }
  {  // capacity 16, odd page size, trailing binding and an excluded region
    ft::CaseConfig cfg;
    cfg.capacity = 16, cfg.page_tokens = 5, cfg.width = 2, cfg.cache_pages = 12;
    cfg.regions = {{"consumed_tokens", 8, DType::int64, 8}, {"kv", 20}, {"ex", 3}, {"draft", 8}};
    cfg.pages = {"kv"};
    cfg.trailing_pages = {"draft"};
    cfg.excluded_regions = {"ex"};
    cfg.salt = 7;
    out.push_back(make_fixed(cfg));
  }
  {  // capacity 64, one logical page
    ft::CaseConfig cfg;
    cfg.capacity = 64, cfg.page_tokens = 16, cfg.width = 1, cfg.cache_pages = 70, cfg.rows = 70;
    cfg.regions = {{"consumed_tokens", 8, DType::int64, 8}, {"kv", 3}};
    cfg.pages = {"kv"};
    cfg.salt = 11;
    out.push_back(make_fixed(cfg));
  }
  {  // capacity 128: the sorted validation of the extension; few rows and pages, so keys collide
    ft::CaseConfig cfg;
    cfg.capacity = 128, cfg.page_tokens = 4, cfg.width = 3, cfg.cache_pages = 9, cfg.rows = 136;
    cfg.regions = {{"consumed_tokens", 8, DType::int64, 8}, {"kv", 6}, {"draft", 4}};
    cfg.pages = {"kv"};
    cfg.trailing_pages = {"draft"};
    cfg.salt = 13;
    out.push_back(make_fixed(cfg));
  }
  return out;
}

const std::vector<Fixed>& configurations() {
  static const std::vector<Fixed> all = make_configurations();
  return all;
}

constexpr std::int64_t edges[] = {INT64_MIN, INT64_MIN + 1, INT64_MAX, INT64_MAX - 1, INT32_MIN,
                                  INT32_MAX, UINT32_MAX,    -2,        INT64_MAX / 2, INT64_MAX / 3};

// Mostly a value in [lo, hi]; one time in sixteen an edge value, one in sixteen any int64.
std::int64_t near(FuzzedDataProvider& in, std::int64_t lo, std::int64_t hi) {
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 15: return in.ConsumeIntegral<std::int64_t>();
    case 14: return edges[in.ConsumeIntegralInRange<std::size_t>(0, std::size(edges) - 1)];
    default: return in.ConsumeIntegralInRange<std::int64_t>(lo, hi);
  }
}
std::int32_t near32(FuzzedDataProvider& in, std::int32_t lo, std::int32_t hi) {
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 15: return in.ConsumeIntegral<std::int32_t>();
    case 14: return in.ConsumeBool() ? INT32_MIN : INT32_MAX;
    default: return in.ConsumeIntegralInRange<std::int32_t>(lo, hi);
  }
}

Case build(FuzzedDataProvider& in, const Fixed& f) {
  Case c = f.base;
  const std::int64_t C = f.C, W = f.W, N = f.rows, P = f.P, end_max = f.W * f.PT + 1;
  auto slot_of = [&] { return in.ConsumeIntegralInRange<std::int64_t>(0, C - 1); };

  const int edits = in.ConsumeIntegralInRange<int>(0, 12);
  for (int e = 0; e < edits; ++e) {
    switch (in.ConsumeIntegralInRange<int>(0, 6)) {
      case 0: ft::put<std::int64_t>(c.arrays.at("memory_capacity"), 0, near(in, -1, N + 2)); break;
      case 1: ft::put<std::int64_t>(c.arrays.at("memory_capacity"), 1, near(in, -1, P + 2)); break;
      case 2: {
        const std::int64_t s = slot_of();
        ft::set_state_row(c, s, near(in, -1, N + 1));
        break;
      }
      case 3: {
        const std::int64_t s = slot_of(), l = in.ConsumeIntegralInRange<std::int64_t>(0, W - 1);
        ft::set_table(c, s, l, near32(in, -2, static_cast<std::int32_t>(P + 1)));
        break;
      }
      case 4: {
        if (!f.trailing) break;
        const std::int64_t s = slot_of(), l = in.ConsumeIntegralInRange<std::int64_t>(0, W - 1);
        ft::set_trailing_table(c, s, l, near32(in, -2, static_cast<std::int32_t>(P + 1)));
        break;
      }
      case 5: {
        const std::int64_t s = slot_of();
        ft::set_request_consumed(c, s, near(in, -1, end_max));
        break;
      }
      case 6: {
        const std::int64_t r = in.ConsumeIntegralInRange<std::int64_t>(0, N - 1);
        ft::set_pool_consumed(c, r, near(in, -1, end_max));
        break;
      }
    }
  }

  const std::int64_t rows_written = in.ConsumeIntegralInRange<std::int64_t>(0, C);
  for (std::int64_t i = 0; i < rows_written; ++i) {
    const std::int64_t s = slot_of();
    const std::int64_t live = ft::state_row(c, s);
    switch (in.ConsumeIntegralInRange<int>(0, 5)) {
      case 0: {  // snapshot: endpoint == request consumed
        const std::int64_t dst = near(in, 0, N), end = near(in, 0, end_max);
        ft::set_request_consumed(c, s, end);
        ft::set_command(c, i, s, live, dst, 0, end);
        break;
      }
      case 1:
      case 2: {  // restore: endpoint == pool consumed of the source
        const std::int64_t src = in.ConsumeIntegralInRange<std::int64_t>(0, N - 1), end = near(in, 0, end_max);
        ft::set_pool_consumed(c, src, end);
        ft::set_command(c, i, s, src, live, 0, end);
        break;
      }
      case 3:  // reset
        ft::set_command(c, i, s, in.ConsumeBool() ? -1 : near(in, -1, N), live, 1,
                        in.ConsumeBool() ? 0 : near(in, -1, 2));
        break;
      case 4:  // small raw values
        ft::set_command(c, i, near(in, -2, C + 1), near(in, -2, N + 1), near(in, -2, N + 1), near32(in, -1, 2),
                        near(in, -2, end_max + 1));
        break;
      default:  // any values
        ft::set_command(c, i, in.ConsumeIntegral<std::int64_t>(), in.ConsumeIntegral<std::int64_t>(),
                        in.ConsumeIntegral<std::int64_t>(), in.ConsumeIntegral<std::int32_t>(),
                        in.ConsumeIntegral<std::int64_t>());
    }
  }
  std::int32_t count = static_cast<std::int32_t>(rows_written);
  switch (in.ConsumeIntegralInRange<int>(0, 7)) {
    case 6: count = in.ConsumeIntegralInRange<std::int32_t>(-2, static_cast<std::int32_t>(C + 2)); break;
    case 7: count = in.ConsumeIntegral<std::int32_t>(); break;
    default: break;
  }
  ft::set_num_ops(c, count);
  return c;
}

[[noreturn]] void fail(const Case& c, const std::string& what) {
  std::fprintf(stderr, "fuzz_commands: %s\n", what.c_str());
  if (const char* dir = std::getenv("STATEXFER_FUZZ_SAVE")) {
    try {
      ft::write_case(c, std::filesystem::path(dir) / "case");
      std::fprintf(stderr, "fuzz_commands: case saved in %s/case\n", dir);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "fuzz_commands: could not save the case: %s\n", e.what());
    }
  }
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Kokkos::initialize();
  std::atexit([] { Kokkos::finalize(); });
  configurations();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  const auto& all = configurations();
  const Fixed& f = all[in.ConsumeIntegralInRange<std::size_t>(0, all.size() - 1)];
  const Case c = build(in, f);

  statexfer::test::CaseOutputs actual, expected;
  try {
    actual = statexfer::test::run_case<Kokkos::Serial>(c);
  } catch (const std::exception& e) {
    fail(c, std::string("the library threw: ") + e.what());
  }
  if (actual.construct_error) fail(c, "a fixed configuration was refused: " + *actual.construct_error);
  try {
    expected = statexfer::test::reference_run(c);
  } catch (const std::exception& e) {
    fail(c, std::string("the reference threw: ") + e.what());
  }
  const auto cmp = statexfer::test::compare_outputs(actual, expected);
  if (!cmp.identical()) fail(c, "library and reference differ: " + ft::describe(cmp));
  return 0;
}
