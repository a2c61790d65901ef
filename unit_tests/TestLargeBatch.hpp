#ifndef STATEXFER_TEST_LARGE_BATCH_HPP
#define STATEXFER_TEST_LARGE_BATCH_HPP

// Large batches (issue 6): capacities 128..4096 beyond the contract's 1..64, whose
// validation sorts the keys that can collide instead of comparing every pair.
// Every batch runs through the library on TEST_EXECSPACE (ft::run_case, or one
// transfer reused across batches) and through the brute-force host reference
// (reference_run); error codes, pool and caches must agree byte for byte, at
// every capacity from 1 to 4096, so the contract's path (<= 64) and the sorted
// path (> 64) are held to the same reading of docs/CONTRACT.md §4.
//
// Besides random batches, each capacity gets adversarial ones: many rows on one
// destination, one main tail page, one trailing page (restores: all conflict;
// snapshots only: the snapshot+snapshot exemption, all apply), long runs of one
// source (restores from one snapshot row: no conflict), junk rows after the
// count that would collide if they were live, and invalid counts. A failing
// batch is saved as a case folder under testing::TempDir() for replay.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <statexfer/statexfer.hpp>
#include <test_common/case.hpp>
#include <test_common/run_case.hpp>

#include "common/case_factory.hpp"
#include <test_common/reference.hpp>
#include "common/reference_check.hpp"
#include "common/tool_counts.hpp"

namespace {
namespace large_batch {

namespace ft = statexfer::test;

/// Whether a transfer of C commands counts the sorted validation's keys in a table
/// (options.expert.validate_counted_keys `option`): 1 always, -1 never, 0 on GPUs from 1024 commands.
inline bool counts_keys(int option, bool device, std::int64_t C) {
  return option == 1 || (option == 0 && device && C >= 1024);
}
using ft::Case;
using Rng = std::mt19937_64;

using statexfer::test::choice;
using statexfer::test::uniform;
using statexfer::test::unit;

enum class Scenario {
  mixed,                // snapshots, restores, resets, noise; valid and colliding tables
  one_destination,      // every snapshot into one row
  one_tail_page,        // every partial page on one cache page, snapshots and restores
  one_trailing_page,    // every trailing page on one cache page, snapshots and restores
  snapshots_one_page,   // snapshots only, every main and trailing page on one cache page: all apply
  restores_one_source,  // restores from one snapshot row into every live row: all apply
  junk_after_count,     // rows past the count collide with the live ones
  invalid_count,        // count < 0 or > C
};
constexpr std::array<Scenario, 8> all_scenarios = {Scenario::mixed,
                                                   Scenario::one_destination,
                                                   Scenario::one_tail_page,
                                                   Scenario::one_trailing_page,
                                                   Scenario::snapshots_one_page,
                                                   Scenario::restores_one_source,
                                                   Scenario::junk_after_count,
                                                   Scenario::invalid_count};

inline const char* name(Scenario s) {
  switch (s) {
    case Scenario::mixed: return "mixed";
    case Scenario::one_destination: return "one_destination";
    case Scenario::one_tail_page: return "one_tail_page";
    case Scenario::one_trailing_page: return "one_trailing_page";
    case Scenario::snapshots_one_page: return "snapshots_one_page";
    case Scenario::restores_one_source: return "restores_one_source";
    case Scenario::junk_after_count: return "junk_after_count";
    case Scenario::invalid_count: return "invalid_count";
  }
  return "?";
}

struct Shape {
  std::int64_t C, PT, W, N, P;
  bool trailing;
};

// A configuration of capacity C: small rows (bytes are compared, but the
// reference's O(C^2) validation is what costs), 1-2 page bindings, a trailing
// binding when asked, sometimes an excluded region. Enough snapshot rows and
// cache pages that every command can be valid.
inline Case make_config(Rng& rng, std::int64_t C, bool trailing, std::int64_t row_scale, Shape* shape) {
  ft::CaseConfig cfg;
  cfg.capacity = C;
  cfg.page_tokens = choice<std::int64_t>(rng, {3, 4, 5, 8, 16});
  cfg.width = uniform(rng, 1, C >= 1024 ? 3 : 6);
  cfg.rows = 2 * C + 2 + uniform(rng, 0, 3);
  cfg.cache_pages = C * cfg.width + uniform(rng, 0, 9);
  cfg.regions.push_back({"consumed_tokens", 8, statexfer::DType::int64, 8});
  cfg.regions.push_back({"ssm", uniform(rng, 1, 24) * row_scale, statexfer::DType::uint8, 1});
  cfg.regions.push_back({"kv", choice<std::int64_t>(rng, {1, 4, 7, 16}) * row_scale, statexfer::DType::uint8, 4});
  cfg.pages.push_back("kv");
  if (unit(rng) < 0.4) {
    cfg.regions.push_back({"kv_b", choice<std::int64_t>(rng, {3, 8}) * row_scale, statexfer::DType::uint8, 1});
    cfg.pages.push_back("kv_b");
  }
  if (trailing) {
    cfg.regions.push_back(
        {"draft", 2 * choice<std::int64_t>(rng, {1, 2, 5, 8}) * row_scale, statexfer::DType::uint8, 1});
    cfg.trailing_pages.push_back("draft");
  }
  if (unit(rng) < 0.3) {
    cfg.regions.push_back({"scratch", uniform(rng, 1, 12) * row_scale, statexfer::DType::uint8, 1});
    cfg.excluded_regions.push_back("scratch");
  }
  cfg.salt = static_cast<std::int64_t>(rng() % 1000);
  *shape = Shape{C, cfg.page_tokens, cfg.width, cfg.rows, cfg.cache_pages, trailing};
  return ft::make_case(cfg);
}

// Page table contents: distinct pages (a permutation of [0, P)), one page for
// every entry, or pages from a pool of two; `bad` of the entries unmapped (-1)
// or past the page count.
inline void fill_table(Rng& rng, ft::NpyArray& table, std::int64_t P, int distinct_pages, double bad) {
  const std::int64_t n = table.shape[0] * table.shape[1];
  std::vector<std::int64_t> perm(static_cast<std::size_t>(std::max(P, n)));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  const std::int64_t one = uniform(rng, 0, P - 1), two = uniform(rng, 0, P - 1);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t page = distinct_pages == 0   ? perm[static_cast<std::size_t>(i)] % P
                        : distinct_pages == 1 ? one
                                              : (unit(rng) < 0.5 ? one : two);
    const double u = unit(rng);
    if (u < bad / 2)
      page = -1;
    else if (u < bad)
      page = P + uniform(rng, 0, 2);
    ft::put<std::int32_t>(table, i, static_cast<std::int32_t>(page));
  }
}

// One batch of `scenario` on the configuration: new tables, state rows, consumed
// endpoints, memory capacity, commands and count. Returns the live count.
inline std::int64_t fill_batch(Rng& rng, const Shape& s, Case& c, Scenario scenario,
                               std::optional<std::int64_t> forced_count = std::nullopt) {
  const std::int64_t C = s.C, PT = s.PT, W = s.W, N = s.N, P = s.P;
  const bool mixed = scenario == Scenario::mixed;
  const bool collide_tables = mixed && unit(rng) < 0.3;
  const int main_pages = scenario == Scenario::one_tail_page || scenario == Scenario::snapshots_one_page ? 1
                         : collide_tables                                                                ? 2
                                                                                                         : 0;
  const int trailing_pages = scenario == Scenario::one_trailing_page || scenario == Scenario::snapshots_one_page ? 1
                             : collide_tables                                                                    ? 2
                                                                                                                 : 0;
  const double bad = mixed ? 0.04 : scenario == Scenario::one_trailing_page ? 0.02 : 0.0;
  fill_table(rng, c.arrays.at("tables"), P, main_pages, bad);
  if (s.trailing) fill_table(rng, c.arrays.at("trailing_tables"), P, trailing_pages, bad);

  // Live rows 1..C (sometimes permuted); a few invalid ones in mixed batches.
  std::vector<std::int64_t> live(static_cast<std::size_t>(C));
  std::iota(live.begin(), live.end(), 1);
  if (unit(rng) < 0.5) std::shuffle(live.begin(), live.end(), rng);
  for (std::int64_t slot = 0; slot < C; ++slot) {
    std::int64_t row = live[static_cast<std::size_t>(slot)];
    if (mixed && unit(rng) < 0.02) row = choice<std::int64_t>(rng, {0, -1, N, N + 3});
    ft::set_state_row(c, slot, row);
    ft::set_request_consumed(c, slot, uniform(rng, 1, W * PT));
  }
  // Snapshot rows C+1..N-1: pool consumed endpoints for restores.
  for (std::int64_t r = 0; r < N; ++r) ft::set_pool_consumed(c, r, uniform(rng, 0, W * PT));

  std::int64_t slots_cap = N, pages_cap = P;
  if (mixed) {
    const double u = unit(rng);
    if (u < 0.1)
      slots_cap = N - uniform(rng, 1, 3);
    else if (u < 0.2)
      pages_cap = std::max<std::int64_t>(1, P - uniform(rng, 1, P / 2 + 1));
    else if (u < 0.25)
      slots_cap = std::numeric_limits<std::int64_t>::max();
  }
  ft::set_memory_capacity(c, slots_cap, pages_cap);

  std::vector<std::int64_t> slots(static_cast<std::size_t>(C));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  std::vector<std::int64_t> snaps;
  for (std::int64_t r = C + 1; r < N; ++r) snaps.push_back(r);
  std::shuffle(snaps.begin(), snaps.end(), rng);
  std::size_t next_snap = 0;
  const std::int64_t one_row = snaps.front();
  auto snap_row = [&]() -> std::int64_t {
    if (scenario == Scenario::one_destination || scenario == Scenario::restores_one_source) return one_row;
    if (collide_tables && unit(rng) < 0.3) return snaps[static_cast<std::size_t>(uniform(rng, 0, 1))];
    return snaps[next_snap++ % snaps.size()];
  };

  // Count. Half the partial counts are a few rows (up to twice the 256 live rows up to
  // which the sorted validation compares every pair on GPUs, 128 on hosts).
  const std::int64_t few = 512;
  std::int64_t count = C;
  if (forced_count)
    count = *forced_count;
  else if (scenario == Scenario::invalid_count)
    count = choice<std::int64_t>(
        rng, {-1, C + 1, 2 * C, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()});
  else if (scenario == Scenario::junk_after_count)
    count = C == 1 ? 0 : uniform(rng, 1, unit(rng) < 0.5 ? std::min<std::int64_t>(C - 1, few) : C - 1);
  else if (mixed && unit(rng) < 0.3)
    count = uniform(rng, 0, unit(rng) < 0.5 ? std::min<std::int64_t>(C, few) : C);
  else if (scenario == Scenario::one_trailing_page && unit(rng) < 0.25)
    count = 1;  // alone: its two parts on one page do not collide with each other

  const std::int64_t live_rows = std::clamp<std::int64_t>(count, 0, C);
  for (std::int64_t i = 0; i < C; ++i) {
    if (scenario == Scenario::junk_after_count && i >= live_rows && live_rows > 0) {
      // A copy of a live row's command: it would collide if it were counted.
      const std::int64_t j = uniform(rng, 0, live_rows - 1);
      ft::set_command(c, i, ft::get<std::int64_t>(c.arrays.at("request_slots"), j),
                      ft::get<std::int64_t>(c.arrays.at("source_slots"), j),
                      ft::get<std::int64_t>(c.arrays.at("destination_slots"), j),
                      ft::get<std::int32_t>(c.arrays.at("operation"), j),
                      ft::get<std::int64_t>(c.arrays.at("expected_consumed"), j));
      continue;
    }
    std::int64_t slot = slots[static_cast<std::size_t>(i)];
    if (mixed && unit(rng) < 0.03) slot = uniform(rng, 0, C - 1);  // repeated request slot
    const std::int64_t live_row = ft::state_row(c, slot);
    double kind = unit(rng);
    switch (scenario) {
      case Scenario::one_destination:
      case Scenario::snapshots_one_page: kind = 0.0; break;   // snapshot
      case Scenario::restores_one_source: kind = 0.5; break;  // restore
      case Scenario::one_tail_page:
      case Scenario::one_trailing_page: kind = kind < 0.5 ? 0.0 : 0.5; break;
      default: break;
    }
    if (kind < 0.4) {  // snapshot
      const std::int64_t end = ft::get<std::int64_t>(c.arrays.at("request_consumed"), slot);
      ft::set_command(c, i, slot, live_row, snap_row(), 0, end);
    } else if (kind < 0.75) {  // restore
      const std::int64_t src = snap_row();
      std::int64_t end = ft::pool_consumed(c, src);
      if (end <= 0) {
        end = uniform(rng, 1, W * PT);
        ft::set_pool_consumed(c, src, end);
      }
      ft::set_command(c, i, slot, src, live_row, 0, end);
    } else if (kind < 0.9) {  // reset
      ft::set_command(c, i, slot, -1, live_row, 1, 0);
    } else {  // noise
      ft::set_command(c, i, choice<std::int64_t>(rng, {slot, -1, C}), uniform(rng, -2, N + 2), uniform(rng, -2, N + 2),
                      static_cast<std::int32_t>(uniform(rng, -1, 2)), uniform(rng, -1, W * PT + 2));
    }
    if (mixed && unit(rng) < 0.05) {  // an endpoint that does not match (code 3)
      const std::int64_t end = ft::get<std::int64_t>(c.arrays.at("expected_consumed"), i);
      ft::put<std::int64_t>(c.arrays.at("expected_consumed"), i,
                            choice<std::int64_t>(rng, {end - 1, end + 1, 0, W * PT + 1}));
    }
  }
  ft::set_num_ops(c, static_cast<std::int32_t>(count));
  return count;
}

struct Tally {
  std::array<std::int64_t, 7> codes{};  // over rows of capacities above 64
  std::int64_t batches = 0, mismatches = 0;
  int dumped = 0;
};

// Library vs reference on `c` (saves a mismatching case). Returns the reference's outputs.
inline ft::CaseOutputs check(const Case& c, const std::string& what, Tally& tally) {
  ft::ReferenceCheck r = ft::check_against_reference<TEST_EXECSPACE>(c, "statexfer_large_batch", what, 3, tally.dumped);
  ++tally.batches;
  if (!r.identical) ++tally.mismatches;
  if (c.spec.capacity > statexfer::max_capacity && r.expected.errors)
    for (std::int64_t row = 0; row < c.spec.capacity; ++row)
      ++tally.codes[ft::get<std::int32_t>(*r.expected.errors, row)];
  return std::move(r.expected);
}

inline std::int64_t count_code(const ft::CaseOutputs& out, std::int64_t C, std::int32_t code, std::int64_t rows) {
  std::int64_t n = 0;
  for (std::int64_t r = 0; r < std::min(C, rows); ++r) n += ft::get<std::int32_t>(*out.errors, r) == code;
  return n;
}

// The transfer of a Case bound once and reused for several batches (as an
// engine replays one captured graph): only the commands and num_ops change.
struct Bound {
  using Exec = TEST_EXECSPACE;
  using Mem = Exec::memory_space;
  Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, Mem> backing;
  Kokkos::View<std::int64_t*, Mem> capacity;
  statexfer::PageTable<Exec> tables, trailing_tables;
  statexfer::StateRows<Exec> state_rows;
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, Mem> consumed;
  std::map<std::string, statexfer::PageBinding<Exec>::cache_view> caches;
  statexfer::StateCommands<Exec> commands;
  std::optional<statexfer::PreparedStateTransfer<Exec>> transfer;

  explicit Bound(const Case& c, const statexfer::TransferOptions& options = {}) {
    namespace d = ft::run_case_detail;
    const ft::CaseSpec& s = c.spec;
    backing = d::upload2<std::uint8_t, Mem>(c, "backing", statexfer::DType::uint8);
    capacity = d::upload1<std::int64_t, Mem>(c, "memory_capacity", statexfer::DType::int64);
    tables = d::upload2<std::int32_t, Mem>(c, "tables", statexfer::DType::int32);
    state_rows = d::upload2<std::int64_t, Mem>(c, "state_rows", statexfer::DType::int64);
    consumed = d::upload2<std::int64_t, Mem>(c, "request_consumed", statexfer::DType::int64);
    if (c.arrays.count("trailing_tables"))
      trailing_tables = d::upload2<std::int32_t, Mem>(c, "trailing_tables", statexfer::DType::int32);
    for (const auto& n : ft::binding_names(s))
      caches[n] = d::upload2<std::uint8_t, Mem>(c, "cache_" + n, statexfer::DType::uint8);
    statexfer::StatePool<Exec> pool(statexfer::StateLayout(s.regions, s.row_bytes), backing, capacity);
    commands = statexfer::StateCommands<Exec>::allocate(s.capacity);
    statexfer::TransferConfig<Exec> config;
    config.page_tokens = s.page_tokens;
    config.state_rows = state_rows;
    config.requests.consumed_tokens = consumed;
    config.trailing_tables = trailing_tables;
    config.excluded_regions = s.excluded_regions;
    config.options = options;
    for (const auto& n : s.pages) config.pages.push_back({n, caches.at(n)});
    for (const auto& n : s.trailing_pages) config.trailing_pages.push_back({n, caches.at(n)});
    transfer.emplace(pool, commands, tables, config);
    transfer->prepare(Exec());
  }

  // Upload everything a batch may change (the pool and caches are left as the
  // previous batch made them), run validate and apply, read back.
  ft::CaseOutputs run(const Case& c, bool one_call = false) {
    namespace d = ft::run_case_detail;
    Kokkos::deep_copy(tables, d::upload2<std::int32_t, Mem>(c, "tables", statexfer::DType::int32));
    if (trailing_tables.data())
      Kokkos::deep_copy(trailing_tables, d::upload2<std::int32_t, Mem>(c, "trailing_tables", statexfer::DType::int32));
    Kokkos::deep_copy(state_rows, d::upload2<std::int64_t, Mem>(c, "state_rows", statexfer::DType::int64));
    Kokkos::deep_copy(consumed, d::upload2<std::int64_t, Mem>(c, "request_consumed", statexfer::DType::int64));
    Kokkos::deep_copy(capacity, d::upload1<std::int64_t, Mem>(c, "memory_capacity", statexfer::DType::int64));
    Kokkos::deep_copy(backing, d::upload2<std::uint8_t, Mem>(c, "backing", statexfer::DType::uint8));
    Exec exec;
    commands.upload(exec, d::command_batch<Exec>(c, c.spec.capacity));
    exec.fence();
    if (one_call) {
      transfer->validate_and_apply(exec);
    } else {
      transfer->validate(exec);
      transfer->apply(exec);
    }
    exec.fence();
    ft::CaseOutputs out;
    out.errors = d::download(commands.errors, statexfer::DType::int32);
    out.backing = d::download(backing, statexfer::DType::uint8);
    for (const auto& [n, v] : caches) out.caches[n] = d::download(v, statexfer::DType::uint8);
    return out;
  }
};

using statexfer::test::ToolCounts;

}  // namespace large_batch

TEST(TEST_CATEGORY, large_batch_capacities) {
  using Exec = TEST_EXECSPACE;
  for (std::int64_t c = 1; c <= 4096; c *= 2) {
    EXPECT_TRUE(statexfer::is_valid_extended_capacity(c)) << c;
    EXPECT_EQ(statexfer::is_valid_capacity(c), c <= 64) << c;
  }
  for (std::int64_t c : {-4096, -1, 0, 3, 96, 100, 4095, 4097, 6144, 8192, 1 << 20})
    EXPECT_FALSE(statexfer::is_valid_extended_capacity(c)) << c;
  EXPECT_EQ(statexfer::max_capacity, 64);
  EXPECT_EQ(statexfer::max_extended_capacity, 4096);
  for (std::int64_t c : {8192, 4095, 96}) {
    try {
      statexfer::StateCommands<Exec>::allocate(c);
      ADD_FAILURE() << "allocate(" << c << ") did not throw";
    } catch (const std::invalid_argument& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("capacity"), std::string::npos) << what;
      EXPECT_NE(what.find("4096"), std::string::npos) << what;
      EXPECT_NE(what.find(std::to_string(c)), std::string::npos) << what;
    }
  }
  auto commands = statexfer::StateCommands<Exec>::allocate(4096);
  EXPECT_EQ(commands.capacity(), 4096);
}

// Codes and bytes against the reference at every capacity 1..4096, each
// scenario at least once per capacity.
TEST(TEST_CATEGORY, large_batch_matches_reference_every_capacity) {
  using namespace large_batch;
  const auto start = std::chrono::steady_clock::now();
  Tally tally;
  for (std::int64_t C = 1; C <= statexfer::max_extended_capacity; C *= 2) {
    const int rounds = C <= 64 ? 3 : C <= 512 ? 2 : 1;
    for (int round = 0; round < rounds; ++round) {
      Rng rng(0x1a26e000ULL + static_cast<std::uint64_t>(C) * 131 + static_cast<std::uint64_t>(round));
      Shape shape{};
      Case c = make_config(rng, C, /*trailing=*/round % 2 == 0 || C >= 2048, 1, &shape);
      for (Scenario scenario : all_scenarios) {
        if (scenario == Scenario::one_trailing_page && !shape.trailing) continue;
        const std::int64_t count = fill_batch(rng, shape, c, scenario);
        const std::string what = "C" + std::to_string(C) + "_round" + std::to_string(round) + "_" + name(scenario);
        const ft::CaseOutputs expected = check(c, what, tally);
        if (!expected.errors) continue;
        const std::int64_t live = std::clamp<std::int64_t>(count, 0, C);
        // The scenarios do what they say (so that a generator change cannot
        // silently stop covering them).
        switch (scenario) {
          case Scenario::one_destination:
            if (C >= 2) {
              EXPECT_EQ(count_code(expected, C, 4, live), live) << what;
            }
            break;
          case Scenario::snapshots_one_page:
          case Scenario::restores_one_source: EXPECT_EQ(count_code(expected, C, 0, C), C) << what; break;
          case Scenario::invalid_count: EXPECT_EQ(count_code(expected, C, 5, C), C) << what; break;
          case Scenario::one_tail_page:
          case Scenario::one_trailing_page:
            if (C >= 8 && live > 1) {
              EXPECT_GT(count_code(expected, C, 4, live), 0) << what;
            }
            break;
          default: break;
        }
        if (tally.mismatches >= 10) break;
      }
      if (tally.mismatches >= 10) break;
    }
    if (tally.mismatches >= 10) break;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(tally.mismatches, 0);
  // Every code occurs on the sorted path.
  for (int code = 0; code <= 6; ++code)
    EXPECT_GT(tally.codes[static_cast<std::size_t>(code)], 0) << "code " << code << " never occurred above 64";
  std::printf("[large_batch] %s: %lld batches (capacities 1..4096) in %.2f s, %lld mismatches; codes 0..6 above 64:",
              TEST_EXECSPACE::name(), static_cast<long long>(tally.batches), seconds,
              static_cast<long long>(tally.mismatches));
  for (std::int64_t n : tally.codes) std::printf(" %lld", static_cast<long long>(n));
  std::printf("\n");
}

// Bytes at large capacities with wider rows: two page bindings, a trailing
// binding and an excluded region; a mostly valid batch applies thousands of
// copies and resets.
TEST(TEST_CATEGORY, large_batch_bytes_match_reference) {
  using namespace large_batch;
  Tally tally;
  for (std::int64_t C : {1024, 4096}) {
    Rng rng(0xb17e5000ULL + static_cast<std::uint64_t>(C));
    Shape shape{};
    Case c = make_config(rng, C, /*trailing=*/true, 8, &shape);
    for (Scenario scenario :
         {Scenario::restores_one_source, Scenario::snapshots_one_page, Scenario::one_trailing_page}) {
      fill_batch(rng, shape, c, scenario);
      const std::string what = "bytes_C" + std::to_string(C) + "_" + name(scenario);
      const ft::CaseOutputs expected = check(c, what, tally);
      if (scenario != Scenario::one_trailing_page) {
        EXPECT_EQ(count_code(expected, C, 0, C), C) << what;
      }
    }
    // A valid mixed batch: distinct rows and pages, every kind of command.
    fill_batch(rng, shape, c, Scenario::mixed);
    check(c, "bytes_C" + std::to_string(C) + "_mixed", tally);
  }
  EXPECT_EQ(tally.mismatches, 0);
}

// One transfer, prepared once, validates and applies a sequence of batches
// (the work View and plan are reused): each batch against the reference, from
// the pool and caches the previous batch left.
TEST(TEST_CATEGORY, large_batch_reused_transfer) {
  using namespace large_batch;
  for (std::int64_t C : {128, 2048}) {
    Rng rng(0x2e05ed00ULL + static_cast<std::uint64_t>(C));
    Shape shape{};
    Case c = make_config(rng, C, /*trailing=*/true, 2, &shape);
    Bound bound(c);
    int step = 0;
    for (Scenario scenario :
         {Scenario::mixed, Scenario::one_trailing_page, Scenario::invalid_count, Scenario::restores_one_source,
          Scenario::junk_after_count, Scenario::one_destination, Scenario::snapshots_one_page, Scenario::mixed}) {
      fill_batch(rng, shape, c, scenario);
      const std::string what = "reused_C" + std::to_string(C) + "_step" + std::to_string(step++) + "_" + name(scenario);
      const ft::CaseOutputs expected = statexfer::test::reference_run(c);
      const ft::CaseOutputs actual = bound.run(c);
      const ft::Comparison cmp = ft::compare_outputs(actual, expected);
      EXPECT_TRUE(cmp.identical()) << what << ": " << ft::describe(cmp);
      if (!cmp.identical()) break;
      // The next batch starts from what this one wrote.
      c.arrays["backing"] = *expected.backing;
      for (const auto& [n, cache] : expected.caches) c.arrays["cache_" + n] = cache;
    }
  }
}

// validate() is one launch where it compares every pair of rows (up to 128
// commands on hosts, 256 on GPUs) and two where it sorts (pairs or keys; sort,
// look up and decide), apply() one; none of them allocates, fences or copies (they are
// captured in CUDA graphs). Hosts, which know the count when the first launch
// returns, leave out the second where the first decided every row: 3 live
// commands are one launch there and a full batch two. The counts are exact on
// every Kokkos version: zero launches would fail too.
TEST(TEST_CATEGORY, large_batch_validate_launches_without_allocation) {
  using namespace large_batch;
  const bool device = !std::is_same<TEST_EXECSPACE::memory_space, Kokkos::HostSpace>::value;
  for (const std::int64_t C : {64, 256, 4096})
    for (const std::int64_t live : {std::int64_t(3), C}) {
      SCOPED_TRACE("capacity " + std::to_string(C) + ", " + std::to_string(live) + " live");
      Rng rng(0x0e1a0ULL + static_cast<std::uint64_t>(C));
      Shape shape{};
      Case c = make_config(rng, C, /*trailing=*/true, 1, &shape);
      ASSERT_EQ(fill_batch(rng, shape, c, Scenario::mixed, live), live);
      Bound bound(c);
      bound.run(c);  // commands uploaded, one batch done
      const TEST_EXECSPACE& exec = bound.transfer->execution_space_instance();
      ft::expect_default_launches(*bound.transfer, exec, C, live, device);
      EXPECT_EQ(bound.transfer->launch_plan().sorted_validation, C > (device ? 256 : 128));
    }
}

// Both validations above 64 commands, chosen by options.expert.validate_pairs_capacity
// on every backend: the pair compares' one launch (512) and the sorted
// validation's two (64) give the reference's codes and bytes for every
// scenario at C = 128, 256 and 512, one transfer reused across the batches.
TEST(TEST_CATEGORY, large_batch_validate_designs_match_reference) {
  using namespace large_batch;
  for (const int pairs : {64, 512})
    for (const std::int64_t C : {128, 256, 512}) {
      SCOPED_TRACE("capacity " + std::to_string(C) + ", validate_pairs_capacity " + std::to_string(pairs));
      Rng rng(0x9a125000ULL + static_cast<std::uint64_t>(C) * 7 + static_cast<std::uint64_t>(pairs));
      Shape shape{};
      Case c = make_config(rng, C, /*trailing=*/C != 256, 1, &shape);
      statexfer::TransferOptions options;
      options.expert.validate_pairs_capacity = pairs;
      Bound bound(c, options);
      EXPECT_EQ(bound.transfer->launch_plan().sorted_validation, C > pairs);
      std::int64_t live = 0;  // the last batch's (hosts launch the sort only past the pair compares' capacity)
      for (Scenario scenario : all_scenarios) {
        if (scenario == Scenario::one_trailing_page && !shape.trailing) continue;
        live = fill_batch(rng, shape, c, scenario);
        if (live < 0 || live > C) live = 0;
        const ft::CaseOutputs expected = statexfer::test::reference_run(c);
        const ft::CaseOutputs actual = bound.run(c);
        const ft::Comparison cmp = ft::compare_outputs(actual, expected);
        EXPECT_TRUE(cmp.identical()) << name(scenario) << ": " << ft::describe(cmp);
        if (!cmp.identical()) break;
        c.arrays["backing"] = *expected.backing;
        for (const auto& [n, cache] : expected.caches) c.arrays["cache_" + n] = cache;
      }
      const TEST_EXECSPACE& exec = bound.transfer->execution_space_instance();
      ToolCounts::count([&] { bound.transfer->validate(exec); });
      exec.fence();
      const bool device = !std::is_same<TEST_EXECSPACE::memory_space, Kokkos::HostSpace>::value;
      EXPECT_EQ(ToolCounts::parallel_for, C > pairs && (device || live > pairs) ? 2 : 1) << live << " live";
    }
}

// The sorted validation's chunks and look-up teams on every backend, whatever
// each backend's default: GPUs' sort (1024 keys, four teams a chunk), hosts' (whole
// arrays, one team), many small chunks and an odd team count give the
// reference's codes and bytes for every scenario; the launch has arrays x
// chunks x groups teams. So do the keys counted in a table (a team of 128 rows,
// one batch after another so that each empties the table the one before filled).
TEST(TEST_CATEGORY, large_batch_sorted_chunks_and_groups_match_reference) {
  using namespace large_batch;
  const bool device = !std::is_same<TEST_EXECSPACE::memory_space, Kokkos::HostSpace>::value;
  struct Split {
    int chunk, groups, counted;
  };
  for (const Split split :
       {Split{0, 0, 0}, Split{0, 0, -1}, Split{1024, 4, -1}, Split{4096, 1, -1}, Split{64, 3, -1}, Split{0, 0, 1}})
    for (const std::int64_t C : {512, 2048}) {
      const bool counted = counts_keys(split.counted, device, C);
      SCOPED_TRACE("capacity " + std::to_string(C) + ", chunk " + std::to_string(split.chunk) + ", groups " +
                   std::to_string(split.groups) + (counted ? ", counted keys" : ", sorted keys"));
      Rng rng(0x5c4a2000ULL + static_cast<std::uint64_t>(C) * 11 + static_cast<std::uint64_t>(split.chunk));
      Shape shape{};
      Case c = make_config(rng, C, /*trailing=*/true, 1, &shape);
      statexfer::TransferOptions options;
      options.expert.validate_chunk = split.chunk;
      options.expert.validate_groups = split.groups;
      options.expert.validate_counted_keys = split.counted;
      Bound bound(c, options);
      const statexfer::LaunchPlan plan = bound.transfer->launch_plan();
      ASSERT_TRUE(plan.sorted_validation);
      EXPECT_EQ(bound.transfer->launch_summary().find("counting teams") != std::string::npos, counted)
          << bound.transfer->launch_summary();
      const std::int64_t chunk = std::min<std::int64_t>(C, split.chunk > 0 ? split.chunk : device ? 1024 : 4096);
      const int groups = split.groups > 0 ? split.groups : device ? 4 : 1;
      EXPECT_EQ(plan.sort_teams, counted ? C / 128 : 5 * (C / chunk) * groups)
          << "five key arrays with trailing pages, or a counting team of 128 rows";
      for (Scenario scenario : all_scenarios) {
        fill_batch(rng, shape, c, scenario);  // invalid counts too
        const ft::CaseOutputs expected = statexfer::test::reference_run(c);
        const ft::Comparison cmp = ft::compare_outputs(bound.run(c), expected);
        EXPECT_TRUE(cmp.identical()) << name(scenario) << ": " << ft::describe(cmp);
        if (!cmp.identical()) break;
        c.arrays["backing"] = *expected.backing;
        for (const auto& [n, cache] : expected.caches) c.arrays["cache_" + n] = cache;
      }
    }
}

// The sorted validation's first launch decides a batch of up to its pair
// compares' capacity of live rows alone (SortedFirstFunctor), and leaves more to
// the sort: live counts of 0, 1, an odd few, that capacity and one more, and
// all, at C = 512 and 4096, by default, with the line at 64 and with the keys
// counted (a batch of few rows between two that fill the tables), each against
// the reference (rows past the count that would collide if counted included),
// one transfer reused.
TEST(TEST_CATEGORY, large_batch_sorted_validation_pairs_up_to_their_capacity) {
  using namespace large_batch;
  const bool device = !std::is_same<TEST_EXECSPACE::memory_space, Kokkos::HostSpace>::value;
  struct Variant {
    int option, counted;
  };
  for (const Variant v : {Variant{0, 0}, Variant{64, 0}, Variant{0, -1}, Variant{0, 1}})
    for (const std::int64_t C : {512, 4096}) {
      const int option = v.option;
      const std::int64_t pairs = option > 0 ? option : device ? 256 : 128;
      const bool counted = counts_keys(v.counted, device, C);
      SCOPED_TRACE("capacity " + std::to_string(C) + ", pair compares up to " + std::to_string(pairs) +
                   (counted ? ", counted keys" : ", sorted keys"));
      Rng rng(0x5f1e5700ULL + static_cast<std::uint64_t>(C) * 3 + static_cast<std::uint64_t>(option + v.counted));
      Shape shape{};
      Case c = make_config(rng, C, /*trailing=*/true, 1, &shape);
      statexfer::TransferOptions options;
      options.expert.validate_pairs_capacity = option;
      options.expert.validate_counted_keys = v.counted;
      Bound bound(c, options);
      ASSERT_TRUE(bound.transfer->launch_plan().sorted_validation);
      EXPECT_NE(bound.transfer->launch_summary().find("pairs up to " + std::to_string(pairs) + " live"),
                std::string::npos)
          << bound.transfer->launch_summary();
      for (const std::int64_t count :
           {std::int64_t(0), std::int64_t(1), std::int64_t(7), pairs - 1, pairs, pairs + 1, C})
        for (const Scenario scenario : {Scenario::mixed, Scenario::one_destination, Scenario::junk_after_count}) {
          fill_batch(rng, shape, c, scenario, count);
          const std::string what = std::string(name(scenario)) + " with " + std::to_string(count) + " live";
          const ft::CaseOutputs expected = statexfer::test::reference_run(c);
          const ft::CaseOutputs actual = bound.run(c);
          const ft::Comparison cmp = ft::compare_outputs(actual, expected);
          ASSERT_TRUE(cmp.identical()) << what << ": " << ft::describe(cmp);
          if (scenario == Scenario::one_destination && count >= 2) {
            EXPECT_EQ(count_code(expected, C, 4, count), count) << what << ": every live row collides";
          }
          c.arrays["backing"] = *expected.backing;
          for (const auto& [n, cache] : expected.caches) c.arrays["cache_" + n] = cache;
        }
    }
}

// validate_and_apply() past one launch's reach where validate() sorts: its first
// launch decides and moves a batch of up to options.expert.fused_first_units
// live work items itself (a team an item), decides up to a team a row for
// apply() (at most the pair compares' capacity), and writes more rows' keys for
// the look-up launch. Live counts either side of both lines (k rows fill the
// first) and all, every scenario (bad counts too), counted and sorted keys, one
// transfer reused and two calls between (the plans' mark), each against the
// reference; GPUs by default too.
TEST(TEST_CATEGORY, large_batch_first_launch_moves_a_few_live_rows) {
  using namespace large_batch;
  const bool device = !std::is_same<TEST_EXECSPACE::memory_space, Kokkos::HostSpace>::value;
  for (const int counted : {0, -1})
    for (const std::int64_t C : {1024, 4096})
      for (const int k : {5, 0}) {  // 0: the default's units (GPUs)
        if (k == 0 && !device) continue;
        Rng rng(0xf1257000ULL + static_cast<std::uint64_t>(C + k + counted));
        Shape shape{};
        Case c = make_config(rng, C, /*trailing=*/true, 1, &shape);
        statexfer::TransferOptions options;
        options.expert.validate_counted_keys = counted;
        std::int64_t items = 0;
        {
          Bound probe(c, options);
          items = probe.transfer->work_items_per_command();
        }
        options.expert.fused_first_units = static_cast<int>(k * items);
        Bound bound(c, options);
        const statexfer::LaunchPlan p = bound.transfer->launch_plan();
        ASSERT_TRUE(p.sorted_validation);
        const std::int64_t units = p.fused_first_units;
        ASSERT_EQ(units, k > 0 ? k * items : 4 * (TEST_EXECSPACE().concurrency() / 2048))
            << bound.transfer->launch_summary();
        // Moved by the first launch up to `rows`, decided there up to `decided` (a team a row), else keys.
        const std::int64_t rows = units / items, decided = std::min<std::int64_t>(device ? 256 : 128, units);
        SCOPED_TRACE("capacity " + std::to_string(C) + ", up to " + std::to_string(rows) + " rows moved first, " +
                     bound.transfer->launch_summary());
        int call = 0;
        const auto run = [&](const std::string& what) {
          const bool one_call = call++ % 3 != 2;
          const ft::CaseOutputs expected = statexfer::test::reference_run(c);
          const ft::Comparison cmp = ft::compare_outputs(bound.run(c, one_call), expected);
          EXPECT_TRUE(cmp.identical()) << what << (one_call ? " (one call)" : " (two calls)") << ": "
                                       << ft::describe(cmp);
          c.arrays["backing"] = *expected.backing;
          for (const auto& [n, cache] : expected.caches) c.arrays["cache_" + n] = cache;
          return cmp.identical();
        };
        for (const std::int64_t count : {std::int64_t(0), std::int64_t(1), std::int64_t(2), rows - 1, rows, rows + 1,
                                         std::int64_t(7), decided, decided + 1, C, std::int64_t(1)})
          for (const Scenario scenario : {Scenario::mixed, Scenario::one_destination, Scenario::junk_after_count}) {
            if (count < 0 || count > C) continue;
            fill_batch(rng, shape, c, scenario, count);
            if (!run(std::string(name(scenario)) + " with " + std::to_string(count) + " live")) return;
          }
        for (const Scenario scenario : all_scenarios) {
          fill_batch(rng, shape, c, scenario);  // invalid counts too
          if (!run(name(scenario))) return;
        }
      }
}

// validate_and_apply() neither allocates nor fences either: one launch on GPUs up
// to 64 commands (on Kokkos 4 the flat grid up to 8, the teams above), the teams
// up to 256 while a wave holds them and up to 512 (where validate() sorts) while a
// wave holds teams of 128, else validate()'s launches and apply()'s.
// options.validate_and_apply picks the design: two launches, the teams (also
// where validate() sorts; two launches on hosts, whose teams are of one thread),
// the flat grid (on hosts too, up to 64 commands).
TEST(TEST_CATEGORY, large_batch_validate_and_apply_launches_without_allocation) {
  using namespace large_batch;
  using statexfer::FusedDesign;
  const bool device = !std::is_same<TEST_EXECSPACE::memory_space, Kokkos::HostSpace>::value;
  for (const FusedDesign design :
       {FusedDesign::automatic, FusedDesign::two_launches, FusedDesign::teams, FusedDesign::flat_grid})
    for (const std::int64_t C : {8, 64, 256, 512, 4096}) {
      SCOPED_TRACE("capacity " + std::to_string(C) + " " + statexfer::to_string(design));
      statexfer::TransferOptions options;
      options.validate_and_apply = design;
      Rng rng(0x0e1a1ULL + static_cast<std::uint64_t>(C));
      Shape shape{};
      Case c = make_config(rng, C, /*trailing=*/true, 1, &shape);
      fill_batch(rng, shape, c, Scenario::mixed);
      Bound bound(c, options);
      bound.run(c);
      ToolCounts::count([&] { bound.transfer->validate_and_apply(); });
      bound.transfer->execution_space_instance().fence();
      const bool automatic = design == FusedDesign::automatic;
      const bool flat =
          C <= 64 && (design == FusedDesign::flat_grid || (device && automatic && C <= 8 && KOKKOS_VERSION >= 40000));
      const statexfer::LaunchPlan p = bound.transfer->launch_plan();
      // The teams' one launch: asked for, or by default up to 256 commands while a wave holds them (128
      // threads a team, above 128 commands 64 where a wave holds no more); where validate() sorts, up to 512
      // commands while a wave holds teams of 128.
      const std::int64_t concurrency = bound.transfer->execution_space_instance().concurrency();
      const bool wave128 = p.work_items * 128 <= concurrency;
      const bool wave = wave128 || (C > 128 && p.work_items * 64 <= concurrency);
      const bool teams =
          device && (design == FusedDesign::teams || (automatic && (p.sorted_validation ? C <= 512 && wave128 : wave)));
      const bool one = flat || teams;
      EXPECT_EQ(ToolCounts::parallel_for, one ? 1 : p.sorted_validation ? 3 : 2);
      EXPECT_EQ(p.validate_and_apply, !one   ? FusedDesign::two_launches
                                      : flat ? FusedDesign::flat_grid
                                             : FusedDesign::teams);
      ToolCounts::expect_capturable();
    }
}

// One transfer serves the instance prepare() bound it to: another instance is
// refused before anything is enqueued, and prepare() on it rebinds.
TEST(TEST_CATEGORY, transfer_is_bound_to_the_prepared_instance) {
  using namespace large_batch;
  Rng rng(0x0e1a2ULL);
  Shape shape{};
  Case c = make_config(rng, 16, /*trailing=*/false, 1, &shape);
  fill_batch(rng, shape, c, Scenario::mixed);
  Bound bound(c);
  bound.run(c);
  const TEST_EXECSPACE bound_exec = bound.transfer->execution_space_instance();
#if KOKKOS_VERSION >= 40000  // Kokkos 3.4's host spaces have one instance; its CUDA test is the capture test
  for (const TEST_EXECSPACE& other : Kokkos::Experimental::partition_space(bound_exec, 1, 1)) {
    if (other == bound_exec) continue;  // a backend with one instance
    int launches = -1;
    ToolCounts::count([&] {
      for (const char* call : {"validate", "apply", "validate_and_apply"}) {
        try {
          if (std::string(call) == "validate") bound.transfer->validate(other);
          if (std::string(call) == "apply") bound.transfer->apply(other);
          if (std::string(call) == "validate_and_apply") bound.transfer->validate_and_apply(other);
          ADD_FAILURE() << call << " on another instance did not throw";
        } catch (const std::invalid_argument& e) {
          const std::string what = e.what();
          EXPECT_NE(what.find(call), std::string::npos) << what;
          EXPECT_NE(what.find("prepare()"), std::string::npos) << what;
        }
      }
      launches = ToolCounts::parallel_for;
    });
    EXPECT_EQ(launches, 0) << "a refused call enqueued work";
    Kokkos::deep_copy(bound.commands.num_ops, 0);  // prepare() needs an empty batch
    bound.transfer->prepare(other);                // rebinds
    EXPECT_NO_THROW(bound.transfer->validate(other));
    EXPECT_THROW(bound.transfer->validate(bound_exec), std::invalid_argument);
    other.fence();
    bound.transfer->prepare(bound_exec);
  }
#endif
  EXPECT_NO_THROW(bound.transfer->validate());
  EXPECT_NO_THROW(bound.transfer->apply(bound_exec));
  bound_exec.fence();
}

}  // namespace

#endif
