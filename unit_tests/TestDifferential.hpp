#ifndef STATEXFER_TEST_DIFFERENTIAL_HPP
#define STATEXFER_TEST_DIFFERENTIAL_HPP

// Randomized differential test: thousands of random batches (fixed seeds,
// std::mt19937_64), each run through the library on TEST_EXECSPACE
// (test::run_case; odd batches through validate_and_apply(), the others through
// validate() and apply()) and through the host reference (reference_run); error
// codes, pool and every cache must agree byte for byte.
//
// Configurations follow shared/conformance/reference/cases.py (capacities 1..64,
// page tokens 1..16, W 1..8, odd region sizes and alignments, 1-3 page bindings
// of equal and different sizes, trailing bindings, excluded regions including an
// excluded page region) and add what the conformance set lacks: capacities above
// the real row and page counts, more invalid counts, and deliberately colliding
// batches (shared destinations, shared tail pages, shared trailing pages), so that
// every code 0..6 occurs many times. Sizes are kept small so that the whole test
// runs in seconds per backend. A failing batch is saved as a case folder under
// testing::TempDir() for replay.

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <test_common/case.hpp>
#include <test_common/run_case.hpp>

#include "common/case_factory.hpp"
#include <test_common/reference.hpp>
#include "common/reference_check.hpp"

namespace {
namespace differential {

using statexfer::test::Case;
using Rng = std::mt19937_64;

using statexfer::test::choice;
using statexfer::test::uniform;
using statexfer::test::unit;

struct Config {
  Case base;
  std::int64_t C, PT, W, N, P;
};

// A configuration in the manner of cases.py, smaller. `index` forces a few shapes.
inline Config make_config(Rng& rng, int index) {
  namespace ft = statexfer::test;
  ft::CaseConfig cfg;
  std::int64_t C;
  if (index == 0)
    C = 64;
  else if (index == 1)
    C = 1;
  else {
    const double u = unit(rng);
    C = u < .08 ? 1 : u < .2 ? 2 : u < .42 ? 4 : u < .64 ? 8 : u < .8 ? 16 : u < .9 ? 32 : 64;
  }
  const std::int64_t PT = unit(rng) < 0.6 ? choice<std::int64_t>(rng, {1, 2, 3, 4, 8, 16}) : uniform(rng, 1, 16);
  const std::int64_t W = uniform(rng, 1, 8);
  const std::int64_t n_snap = uniform(rng, 1, 2 * C + 2);
  const std::int64_t N = C + 1 + n_snap;
  // Keep rows * row_bytes at a few KiB.
  const std::int64_t budget = std::max<std::int64_t>(48, 8192 / N);

  const bool trailing = unit(rng) < 0.4;
  const bool excluded = unit(rng) < 0.4;
  cfg.regions.push_back({"consumed_tokens", 8, statexfer::DType::int64, 8});
  auto align = [&] { return choice<std::int64_t>(rng, {1, 1, 4, 16}); };
  cfg.regions.push_back(
      {"ssm", uniform(rng, 1, std::max<std::int64_t>(1, budget / 3)), statexfer::DType::uint8, align()});
  if (unit(rng) < 0.5)
    cfg.regions.push_back(
        {"conv", uniform(rng, 1, std::max<std::int64_t>(1, budget / 6)), statexfer::DType::uint8, align()});
  const std::int64_t pb1 = choice<std::int64_t>(rng, {1, 7, 16, 33, 64, 100});
  const std::int64_t pb2 = choice<std::int64_t>(rng, {3, 32, 61, 128});
  const std::int64_t npages = uniform(rng, 1, 3);
  const std::vector<std::string> all_pages = {"kv_a", "kv_b", "kv_c"};
  const std::int64_t kv_b = unit(rng) < 0.25 ? choice<std::int64_t>(rng, {5, 48}) : pb1;  // sometimes unequal to kv_a
  for (std::int64_t i = 0; i < npages; ++i) {
    const std::string& name = all_pages[static_cast<std::size_t>(i)];
    const std::int64_t bytes = name == "kv_a" ? pb1 : name == "kv_b" ? kv_b : pb2;
    cfg.regions.push_back({name, bytes, statexfer::DType::uint8, align()});
    cfg.pages.push_back(name);
  }
  if (trailing) {
    cfg.regions.push_back(
        {"draft", 2 * choice<std::int64_t>(rng, {1, 2, 8, 13, 64}), statexfer::DType::uint8, align()});
    cfg.trailing_pages.push_back("draft");
    if (unit(rng) < 0.2) {
      cfg.regions.push_back({"draft_b", 2 * choice<std::int64_t>(rng, {3, 8}), statexfer::DType::uint8, align()});
      cfg.trailing_pages.push_back("draft_b");
    }
  }
  if (excluded) {
    cfg.regions.push_back({"scratch", uniform(rng, 1, 100), statexfer::DType::uint8, align()});
    cfg.excluded_regions.push_back("scratch");
    if (cfg.pages.size() > 1 && unit(rng) < 0.3) cfg.excluded_regions.push_back(cfg.pages.back());
    if (trailing && cfg.trailing_pages.size() > 1 && unit(rng) < 0.5) cfg.excluded_regions.push_back("draft_b");
    if (trailing && cfg.trailing_pages.size() == 1 && unit(rng) < 0.2)
      cfg.excluded_regions.push_back("draft");  // none left
  }
  // Region order: shuffle all but consumed_tokens now and then (layout order is free).
  if (unit(rng) < 0.3) std::shuffle(cfg.regions.begin() + 1, cfg.regions.end(), rng);
  cfg.row_pad = choice<std::int64_t>(rng, {0, 8, 24});
  cfg.capacity = C;
  cfg.page_tokens = PT;
  cfg.width = W;
  cfg.rows = N;
  cfg.cache_pages = uniform(rng, 1, 47);
  cfg.salt = index;
  Config out{ft::make_case(cfg), C, PT, W, N, cfg.cache_pages};
  return out;
}

inline void random_bytes(Rng& rng, std::vector<std::uint8_t>& bytes) {
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    const std::uint64_t v = rng();
    std::memcpy(bytes.data() + i, &v, 8);
  }
  for (; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(rng());
}

// Page table entries: a permutation modulo P (as cases.py), or, when colliding,
// one of very few pages; about 4% unmapped (-1) and 3% past the page count.
inline void random_table(Rng& rng, statexfer::test::NpyArray& table, std::int64_t P, bool collide) {
  namespace ft = statexfer::test;
  const std::int64_t n = table.shape[0] * table.shape[1];
  std::vector<std::int64_t> perm(static_cast<std::size_t>(std::max(P, n)));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t page =
        collide ? uniform(rng, 0, std::min<std::int64_t>(P, 2) - 1) : perm[static_cast<std::size_t>(i)] % P;
    const double bad = unit(rng);
    if (bad < 0.04)
      page = -1;
    else if (bad < 0.07)
      page = P + uniform(rng, 0, 2);
    ft::put<std::int32_t>(table, i, static_cast<std::int32_t>(page));
  }
}

// One random batch on the configuration: new pool and cache bytes, consumed
// endpoints, tables, state rows, memory capacity, count and commands.
inline void randomize_batch(Rng& rng, const Config& cfg, Case& c, int batch) {
  namespace ft = statexfer::test;
  const std::int64_t C = cfg.C, PT = cfg.PT, W = cfg.W, N = cfg.N, P = cfg.P;
  const bool collide = unit(rng) < 0.25;
  const std::int64_t max_end = W * PT + 1;

  random_bytes(rng, c.arrays["backing"].bytes);
  std::vector<std::int64_t> consumed(static_cast<std::size_t>(N));
  for (std::int64_t r = 0; r < N; ++r) {
    const double u = unit(rng);
    consumed[static_cast<std::size_t>(r)] =
        u < 0.02 ? choice<std::int64_t>(
                       rng, {-1, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()})
                 : uniform(rng, 0, max_end);
    ft::set_pool_consumed(c, r, consumed[static_cast<std::size_t>(r)]);
  }
  for (auto& [name, array] : c.arrays)
    if (name.rfind("cache_", 0) == 0) random_bytes(rng, array.bytes);

  if (batch == 0 || unit(rng) < 0.5) random_table(rng, c.arrays["tables"], P, collide);
  if (c.arrays.count("trailing_tables") && (batch == 0 || unit(rng) < 0.5))
    random_table(rng, c.arrays["trailing_tables"], P, collide);

  // Live rows: 1..C, sometimes permuted, ~4% invalid (0, -1, N, N + 5).
  std::vector<std::int64_t> live(static_cast<std::size_t>(C));
  std::iota(live.begin(), live.end(), 1);
  if (unit(rng) < 0.3) std::shuffle(live.begin(), live.end(), rng);
  for (std::int64_t s = 0; s < C; ++s) {
    for (int k = 1; k < 8; ++k) ft::put<std::int64_t>(c.arrays["state_rows"], s * 8 + k, uniform(rng, -3, N + 3));
    std::int64_t row = live[static_cast<std::size_t>(s)];
    if (unit(rng) < 0.04) row = choice<std::int64_t>(rng, {0, -1, N, N + 5});
    ft::set_state_row(c, s, row);
    ft::set_request_consumed(c, s, uniform(rng, 0, max_end));
  }

  // Memory capacity: mostly exact, sometimes reduced, above the real counts
  // (the hardening caps them), zero or negative.
  auto capacity = [&](std::int64_t real) -> std::int64_t {
    const double u = unit(rng);
    if (u < 0.62) return real;
    if (u < 0.72) return std::max<std::int64_t>(real - uniform(rng, 1, 2), 0);
    if (u < 0.78) return uniform(rng, 0, real);
    if (u < 0.92) return real + uniform(rng, 1, 100);
    if (u < 0.96) return std::numeric_limits<std::int64_t>::max() - uniform(rng, 0, 1);
    return choice<std::int64_t>(rng, {-1, std::numeric_limits<std::int64_t>::min()});
  };
  const std::int64_t slots_cap = capacity(N);
  ft::set_memory_capacity(c, slots_cap, capacity(P));

  // Count: full, any, or invalid.
  std::int64_t count;
  const double u = unit(rng);
  if (u < 0.45)
    count = C;
  else if (u < 0.9)
    count = uniform(rng, 0, C);
  else if (u < 0.93)
    count = 0;
  else if (u < 0.96)
    count = std::min<std::int64_t>(1, C);
  else
    count = choice<std::int64_t>(
        rng, {-1, C + 1, C + 7, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()});
  ft::set_num_ops(c, static_cast<std::int32_t>(count));

  // Commands (every row, live or not, so that rows past the count carry junk).
  std::vector<std::int64_t> slots(static_cast<std::size_t>(C));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  std::vector<std::int64_t> snaps;
  for (std::int64_t r = C + 1; r < N; ++r) snaps.push_back(r);
  std::shuffle(snaps.begin(), snaps.end(), rng);
  // Colliding batches draw snapshot rows from a pool of two.
  const std::size_t snap_pool = collide ? std::min<std::size_t>(2, snaps.size()) : snaps.size();
  std::size_t si = 0;
  auto snap_row = [&]() -> std::int64_t {
    if (collide) return snaps[static_cast<std::size_t>(uniform(rng, 0, static_cast<std::int64_t>(snap_pool) - 1))];
    if (si < snaps.size() && unit(rng) > 0.05) return snaps[si++];
    return uniform(rng, C + 1, N - 1);
  };
  for (std::int64_t i = 0; i < C; ++i) {
    std::int64_t slot = collide && unit(rng) < 0.3 ? uniform(rng, 0, C - 1) : slots[static_cast<std::size_t>(i)];
    if (unit(rng) < 0.03) slot = choice<std::int64_t>(rng, {-1, C});
    const std::int64_t live_row = (0 <= slot && slot < C) ? ft::state_row(c, slot) : 1;
    std::int64_t src, dst, end;
    std::int32_t op;
    const double k = unit(rng);
    if (k < 0.4) {  // snapshot live -> immutable
      src = live_row, dst = snap_row(), op = 0;
      end = (0 <= slot && slot < C) ? ft::get<std::int64_t>(c.arrays["request_consumed"], slot) : 3;
    } else if (k < 0.75) {  // restore immutable -> live
      src = snap_row(), dst = live_row, op = 0;
      end = consumed[static_cast<std::size_t>(src)];
    } else if (k < 0.9) {  // reset
      src = -1, dst = live_row, op = 1, end = 0;
    } else {  // noise
      src = uniform(rng, -2, N + 2);
      dst = uniform(rng, -2, N + 2);
      op = static_cast<std::int32_t>(uniform(rng, -1, 2));
      end = uniform(rng, -1, W * PT + 3);
      if (unit(rng) < 0.1) {  // extreme values anywhere
        constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
                               hi = std::numeric_limits<std::int64_t>::max();
        src = choice<std::int64_t>(rng, {src, lo, hi});
        dst = choice<std::int64_t>(rng, {dst, lo, hi});
        end = choice<std::int64_t>(rng, {end, lo, hi});
        slot = choice<std::int64_t>(rng, {slot, lo, hi});
        op = choice<std::int32_t>(
            rng, {op, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()});
      }
    }
    if (unit(rng) < 0.04 && end > std::numeric_limits<std::int64_t>::min() &&
        end < std::numeric_limits<std::int64_t>::max())
      end += choice<std::int64_t>(rng, {-1, 1});
    ft::set_command(c, i, slot, src, dst, op, end);
  }
}

struct Stats {
  std::array<std::int64_t, 7> codes{};
  std::int64_t copies = 0, resets = 0, trailing_copies = 0, batches = 0, mismatches = 0;
  bool count_zero = false, count_one = false, count_odd = false, full_64 = false;
};

// `configs` random configurations, `batches_per_config` random batches each,
// against the reference (odd batches through validate_and_apply()), with the
// transfer options `options`.
inline Stats random_batches(int configs, int batches_per_config, const statexfer::TransferOptions& options = {}) {
  namespace ft = statexfer::test;
  Stats stats;
  int dumped = 0;
  for (int ci = 0; ci < configs; ++ci) {
    Rng config_rng(0x5eed0000ULL + static_cast<std::uint64_t>(ci));
    const Config cfg = make_config(config_rng, ci);
    Case c = cfg.base;
    for (int b = 0; b < batches_per_config; ++b) {
      Rng rng(0xba7c0000ULL * 31 + static_cast<std::uint64_t>(ci) * 1000003ULL + static_cast<std::uint64_t>(b));
      randomize_batch(rng, cfg, c, b);
      if (ci == 0 && b < 8) ft::set_num_ops(c, static_cast<std::int32_t>(cfg.C));  // C = 64, full count

      // Odd batches through validate_and_apply() (one launch on GPUs).
      const auto steps = b % 2 ? ft::Steps::fused : ft::Steps::separate;
      const ft::ReferenceCheck check = ft::check_against_reference<TEST_EXECSPACE>(
          c, "statexfer_differential",
          "config" + std::to_string(ci) + "_batch" + std::to_string(b) + (b % 2 ? "_fused" : ""), 5, dumped, steps,
          options);
      const ft::CaseOutputs& expected = check.expected;
      ++stats.batches;
      if (!check.identical) {
        ++stats.mismatches;
        if (stats.mismatches >= 20) break;
        continue;
      }

      const std::int32_t count = ft::num_ops(c);
      stats.count_zero |= count == 0;
      stats.count_one |= count == 1;
      stats.count_odd |= count > 1 && count % 2 == 1 && count <= cfg.C;
      stats.full_64 |= cfg.C == 64 && count == 64;
      for (std::int64_t r = 0; r < cfg.C; ++r) {
        const std::int32_t code = ft::get<std::int32_t>(*expected.errors, r);
        EXPECT_TRUE(code >= 0 && code <= 6) << "code " << code;
        if (code < 0 || code > 6) continue;
        ++stats.codes[static_cast<std::size_t>(code)];
        if (code == 0 && r < count) {
          const std::int32_t op = ft::get<std::int32_t>(c.arrays.at("operation"), r);
          if (op == 0) {
            ++stats.copies;
            if (!c.spec.trailing_pages.empty() && ft::get<std::int64_t>(c.arrays.at("expected_consumed"), r) > 1)
              ++stats.trailing_copies;
          } else {
            ++stats.resets;
          }
        }
      }
    }
    if (stats.mismatches >= 20) break;
  }
  return stats;
}

}  // namespace differential

TEST(TEST_CATEGORY, differential_random_batches) {
  using namespace differential;
  const auto start = std::chrono::steady_clock::now();
  const Stats stats = random_batches(160, 128);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  EXPECT_EQ(stats.mismatches, 0);
  for (int code = 0; code <= 6; ++code)
    EXPECT_GT(stats.codes[static_cast<std::size_t>(code)], 0) << "code " << code << " never occurred";
  EXPECT_GE(stats.copies, 20000);
  EXPECT_GE(stats.resets, 10000);
  EXPECT_GE(stats.trailing_copies, 5000);
  EXPECT_TRUE(stats.count_zero && stats.count_one && stats.count_odd && stats.full_64);

  RecordProperty("batches", static_cast<int>(stats.batches));
  RecordProperty("applied_copies", static_cast<int>(stats.copies));
  RecordProperty("applied_resets", static_cast<int>(stats.resets));
  std::printf(
      "[differential] %s: %lld batches in %.2f s, %lld mismatches; applied %lld copies (%lld with trailing "
      "pages), %lld resets; codes 0..6:",
      TEST_EXECSPACE::name(), static_cast<long long>(stats.batches), seconds, static_cast<long long>(stats.mismatches),
      static_cast<long long>(stats.copies), static_cast<long long>(stats.trailing_copies),
      static_cast<long long>(stats.resets));
  for (std::int64_t n : stats.codes) std::printf(" %lld", static_cast<long long>(n));
  std::printf("\n");
}

// validate() split over several teams (GPUs' default above 32 commands,
// options.expert.validate_rows_per_team elsewhere): teams of 1, 3 (a last team with
// fewer rows at most capacities) and 8 rows, with 1 and 4 peers a lane (vector
// lanes on GPUs), against the reference.
TEST(TEST_CATEGORY, differential_validate_teams) {
  for (const int rows : {1, 3, 8})
    for (const int per_lane : {1, 4}) {
      statexfer::TransferOptions options;
      options.expert.validate_rows_per_team = rows;
      options.expert.validate_peers_per_lane = per_lane;
      const differential::Stats stats = differential::random_batches(24, 16, options);
      EXPECT_EQ(stats.mismatches, 0) << "validate_rows_per_team " << rows << ", validate_peers_per_lane " << per_lane;
      EXPECT_GT(stats.codes[4], 50) << "too few alias conflicts to exercise the shared keys";
      EXPECT_TRUE(stats.full_64);
    }
}

namespace differential {

struct LargeRowRun {
  std::int64_t batches = 0, mismatches = 0, copies = 0;
};

// Rows of tens of KiB and pages of several KiB: the sizes at which apply()
// takes its wide paths (bulk copies on Hopper, which need 16-byte alignment
// shared by source and destination and at least 4 KiB; row sizes here make
// some copies share it and others not). `label` names the failing cases.
inline LargeRowRun large_row_batches(const std::string& label, const statexfer::TransferOptions& options = {}) {
  namespace ft = statexfer::test;
  LargeRowRun run;
  int dumped = 0;
  for (int ci = 0; ci < 8; ++ci) {
    Rng rng(0x1a76e000ULL + static_cast<std::uint64_t>(ci));
    ft::CaseConfig cfg;
    const std::int64_t C = choice<std::int64_t>(rng, {1, 4, 8});
    cfg.capacity = C;
    cfg.page_tokens = choice<std::int64_t>(rng, {4, 16, 5});
    cfg.width = uniform(rng, 2, 4);
    cfg.cache_pages = C * cfg.width + 2;
    cfg.rows = C + 1 + uniform(rng, 1, C + 2);
    cfg.salt = 1000 + ci;
    cfg.regions.push_back({"consumed_tokens", 8, statexfer::DType::int64, 8});
    cfg.regions.push_back(
        {"ssm", uniform(rng, 20000, 90000), statexfer::DType::uint8, choice<std::int64_t>(rng, {1, 16})});
    cfg.regions.push_back({"kv_a", choice<std::int64_t>(rng, {4096, 5003, 8192, 12288}), statexfer::DType::uint8,
                           choice<std::int64_t>(rng, {1, 8, 16})});
    cfg.pages.push_back("kv_a");
    if (unit(rng) < 0.6) {
      cfg.regions.push_back({"draft", 2 * choice<std::int64_t>(rng, {2048, 4100, 6000}), statexfer::DType::uint8,
                             choice<std::int64_t>(rng, {1, 16})});
      cfg.trailing_pages.push_back("draft");
    }
    cfg.row_pad = choice<std::int64_t>(rng, {0, 8, 24});
    const Config config{ft::make_case(cfg), C, cfg.page_tokens, cfg.width, cfg.rows, cfg.cache_pages};
    Case c = config.base;
    for (int b = 0; b < 12; ++b) {
      Rng batch_rng(0x1a76e100ULL * 7 + static_cast<std::uint64_t>(ci) * 1009ULL + static_cast<std::uint64_t>(b));
      randomize_batch(batch_rng, config, c, b);
      const auto steps = b % 2 ? ft::Steps::fused : ft::Steps::separate;
      const ft::ReferenceCheck check = ft::check_against_reference<TEST_EXECSPACE>(
          c, "statexfer_differential",
          label + std::to_string(ci) + "_batch" + std::to_string(b) + (b % 2 ? "_fused" : ""), 5, dumped, steps,
          options);
      const ft::CaseOutputs& expected = check.expected;
      ++run.batches;
      run.mismatches += check.identical ? 0 : 1;
      const std::int32_t count = ft::num_ops(c);
      for (std::int64_t r = 0; r < count && r < C; ++r)
        run.copies +=
            ft::get<std::int32_t>(*expected.errors, r) == 0 && ft::get<std::int32_t>(c.arrays.at("operation"), r) == 0;
    }
  }
  return run;
}

}  // namespace differential

TEST(TEST_CATEGORY, differential_large_rows) {
  const differential::LargeRowRun run = differential::large_row_batches("large_rows");
  EXPECT_EQ(run.mismatches, 0);
  EXPECT_GE(run.copies, 40) << "too few applied copies to exercise the wide paths";
  std::printf("[differential] %s: %lld large-row batches, %lld mismatches, %lld applied copies\n",
              TEST_EXECSPACE::name(), static_cast<long long>(run.batches), static_cast<long long>(run.mismatches),
              static_cast<long long>(run.copies));
}

// Every apply() design on every backend (options.apply picks it): the teams,
// the flat grid at each word count, the persistent grid and the compact grid
// (the default; staged through bulk-copy buffers on GPUs that have them, by
// its default league and by two teams drawing tickets), over tiles from a few
// hundred bytes (many items, narrow grids) to the default, with byte edges and
// 1-, 8- and 16-byte shared alignments.
TEST(TEST_CATEGORY, differential_apply_designs) {
  using statexfer::ApplyDesign;
  struct Design {
    ApplyDesign design;
    int words;
    std::int64_t tile;
    int staged = 0, teams = 0;  // options.expert.compact_staged, apply_teams
  };
  const std::vector<Design> designs = {
      {ApplyDesign::teams, 0, 1040},         {ApplyDesign::flat_grid, 1, 4096},   {ApplyDesign::flat_grid, 2, 65536},
      {ApplyDesign::flat_grid, 2, 272},      {ApplyDesign::flat_grid, 4, 16384},  {ApplyDesign::persistent, 0, 65536},
      {ApplyDesign::persistent, 0, 272},     {ApplyDesign::persistent, 0, 20000}, {ApplyDesign::compact, 0, 65536},
      {ApplyDesign::compact, 0, 272},        {ApplyDesign::compact, 0, 20000},    {ApplyDesign::compact, 0, 65536, 1},
      {ApplyDesign::compact, 0, 20000, 1, 2}};
  for (const auto& [design, words, tile, staged, teams] : designs) {
    statexfer::TransferOptions options;
    options.apply = design;
    options.expert.apply_words = words;
    options.expert.apply_tile_bytes = tile;
    options.expert.compact_staged = staged;
    options.expert.apply_teams = teams;
    const std::string label = std::string(statexfer::to_string(design)) + "_w" + std::to_string(words) + "_t" +
                              std::to_string(tile) + (staged ? "_staged" : "") + "_";
    const differential::LargeRowRun run = differential::large_row_batches(label, options);
    EXPECT_EQ(run.mismatches, 0) << label;
    EXPECT_GE(run.copies, 40);
  }
}

// validate_and_apply()'s designs on every backend (options.validate_and_apply):
// two launches, the teams (two launches on hosts) and the flat grid whose
// blocks decide their rows, in blocks of 32 to 512 threads on GPUs (hosts: a
// team of one per work item), moving one chunk of their item or several
// (options.expert.fused_rounds, GPUs; 3 leaves a block per item past its end). On
// GPUs its blocks load the words an operation 0 row would copy before the code
// is known: sources that share 16-byte alignment with the destination and
// those that do not, rows of every code. Odd batches go through validate_and_apply().
TEST(TEST_CATEGORY, differential_validate_and_apply_designs) {
  using statexfer::FusedDesign;
  struct Design {
    FusedDesign design;
    int block, rounds;
  };
  const std::vector<Design> designs = {{FusedDesign::two_launches, 128, 1}, {FusedDesign::teams, 128, 1},
                                       {FusedDesign::flat_grid, 32, 1},     {FusedDesign::flat_grid, 128, 1},
                                       {FusedDesign::flat_grid, 512, 1},    {FusedDesign::flat_grid, 128, 2},
                                       {FusedDesign::flat_grid, 32, 3},     {FusedDesign::persistent, 128, 1}};
  for (const auto& [design, block, rounds] : designs) {
    statexfer::TransferOptions options;
    options.validate_and_apply = design;
    options.expert.fused_block = block;
    options.expert.fused_rounds = rounds;
    const std::string label =
        std::string(statexfer::to_string(design)) + "_b" + std::to_string(block) + "_r" + std::to_string(rounds) + "_";
    const differential::Stats stats = differential::random_batches(24, 16, options);
    EXPECT_EQ(stats.mismatches, 0) << label;
    EXPECT_GT(stats.codes[4], 50) << label;
    EXPECT_TRUE(stats.full_64) << label;
    const differential::LargeRowRun run = differential::large_row_batches("fused_" + label, options);
    EXPECT_EQ(run.mismatches, 0) << label;
    EXPECT_GE(run.copies, 40) << label;
  }
}

}  // namespace

#endif
