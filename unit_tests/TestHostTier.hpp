#ifndef STATEXFER_TEST_HOST_TIER_HPP
#define STATEXFER_TEST_HOST_TIER_HPP

// The host tier (issue 14, docs/CONTRACT.md §12): offload (2), onload (3) and
// restore from the host tier (4) validated and applied with the device
// commands. Every batch runs on TEST_EXECSPACE and through the oracle
// (common/oracle.hpp), and the codes, the pool, the host tier and both caches
// must agree byte for byte; random batches at capacities up to 64 and above
// (the sorted validation) hit every code; hand-made batches pin the rules that
// random ones hit rarely; the constructor's checks name what they refuse.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/batch_fixture.hpp"
#include "common/tier_fixture.hpp"
#include "common/tool_counts.hpp"

namespace {
namespace host_tier {

namespace ft = statexfer::test;
using Exec = TEST_EXECSPACE;
using Rig = ft::TierRig<Exec>;

// Codes seen, overall and per tier operation.
struct TierStats {
  std::array<std::int64_t, 7> codes{};
  std::array<std::array<std::int64_t, 7>, 5> by_op{};  // operation 0..4 x code
  void add(const ft::TierCommands& k, const std::vector<std::int32_t>& codes_out) {
    for (std::size_t r = 0; r < codes_out.size(); ++r) {
      const std::int32_t code = codes_out[r];
      ASSERT_TRUE(code >= 0 && code <= 6);
      ++codes[static_cast<std::size_t>(code)];
      if (static_cast<std::int64_t>(r) < k.count && k.op[r] >= 0 && k.op[r] <= 4)
        ++by_op[static_cast<std::size_t>(k.op[r])][static_cast<std::size_t>(code)];
    }
  }
};

// Random batches on one rig (chained: each starts from the memory the last left).
TierStats random_batches(const ft::TierOptions& options, std::uint64_t seed, int batches) {
  Rig rig(options);
  ft::TierRng rng(seed);
  TierStats stats;
  for (int b = 0; b < batches; ++b) {
    const ft::TierCommands k = ft::random_tier_batch(rng, rig, ft::tier_unit(rng) < 0.3);
    const auto codes = rig.run_and_check(
        k, b % 2 == 1, "capacity " + std::to_string(options.capacity) + " batch " + std::to_string(b));
    stats.add(k, codes);
    if (::testing::Test::HasFailure()) break;
  }
  return stats;
}

}  // namespace host_tier

// Random batches mixing device and tier commands, capacities 1..64 (one team
// compares every pair) and 128, 256 (the sorted validation): every code occurs,
// and every tier operation applies and conflicts.
TEST(TEST_CATEGORY, host_tier_random_batches_match_the_oracle) {
  using namespace host_tier;
  TierStats total;
  int config = 0;
  for (const std::int64_t C : {1, 4, 16, 64, 128, 256}) {
    for (const bool trailing : {false, true}) {
      ft::TierOptions o;
      o.capacity = C;
      o.host_rows = C < 16 ? 5 : C / 2;
      o.trailing = trailing;
      o.page_tokens = trailing ? 4 : 3;
      o.cache_pages = 2 * C + 6;
      if (config % 3 == 2) o.excluded = {"meta"};
      const TierStats s = random_batches(o, 0x71e40000ULL + static_cast<std::uint64_t>(config++), C > 64 ? 40 : 120);
      for (int code = 0; code <= 6; ++code) {
        total.codes[code] += s.codes[code];
        for (int op = 0; op <= 4; ++op) total.by_op[op][code] += s.by_op[op][code];
      }
      ASSERT_FALSE(HasFailure()) << "capacity " << C;
    }
  }
  for (int code = 0; code <= 6; ++code) EXPECT_GT(total.codes[code], 0) << "code " << code << " never occurred";
  for (int op = 2; op <= 4; ++op)
    for (const int code : {0, 2, 3, 4})
      EXPECT_GT(total.by_op[op][code], 0) << "operation " << op << " never got code " << code;
  EXPECT_GT(total.by_op[4][6], 0) << "a restore from the host tier never met an unmapped page";
  std::printf("[host_tier] %s: codes 0..6:", Exec::name());
  for (auto n : total.codes) std::printf(" %lld", static_cast<long long>(n));
  std::printf("; applied offload %lld, onload %lld, restore from host %lld\n",
              static_cast<long long>(total.by_op[2][0]), static_cast<long long>(total.by_op[3][0]),
              static_cast<long long>(total.by_op[4][0]));
}

// Without a host tier, operations 2..4 are unknown values (code 1) that write
// nothing, and the same random batches still match the oracle.
TEST(TEST_CATEGORY, host_tier_operations_without_a_tier_are_invalid) {
  using namespace host_tier;
  for (const std::int64_t C : {8, 128}) {
    ft::TierOptions o;
    o.capacity = C;
    o.host_rows = 0;
    const TierStats s = random_batches(o, 0x71e41000ULL + static_cast<std::uint64_t>(C), 40);
    for (int op = 2; op <= 4; ++op) {
      std::int64_t other = 0;
      for (int code = 0; code <= 6; ++code) other += code == 1 || code == 5 ? 0 : s.by_op[op][code];
      EXPECT_EQ(other, 0) << "operation " << op << " without a host tier";
      EXPECT_GT(s.by_op[op][1], 0);
    }
  }
}

// The rules one by one, on a fixed rig: C = 4, pool rows 1..4 live, 5..14
// snapshot rows, host rows 1..5; every row and request consumed 6 tokens
// (a partial page at PT = 4). Each batch is checked against the oracle
// (bytes of both tiers and the caches) and its codes are pinned here.
TEST(TEST_CATEGORY, host_tier_rules) {
  using namespace host_tier;
  ft::TierOptions o;
  o.capacity = 4;
  o.rows = 15;
  o.host_rows = 6;
  o.cache_pages = 32;
  Rig rig(o);
  auto fresh = [&] {
    for (std::size_t i = 0; i < rig.pool_h.size(); ++i) rig.pool_h[i] = ft::pool_pattern(0, std::int64_t(i));
    for (std::size_t i = 0; i < rig.host_h.size(); ++i) rig.host_h[i] = ft::cache_pattern(7, 0, std::int64_t(i));
    for (std::size_t i = 0; i < rig.kv_h.size(); ++i) rig.kv_h[i] = ft::cache_pattern(0x40, 0, std::int64_t(i));
    for (std::size_t i = 0; i < rig.draft_h.size(); ++i) rig.draft_h[i] = ft::cache_pattern(0xA1, 0, std::int64_t(i));
    for (std::int64_t r = 0; r < rig.rows; ++r) rig.put_consumed(rig.pool_h, r, 6);
    for (std::int64_t r = 0; r < o.host_rows; ++r) rig.put_consumed(rig.host_h, r, 6);
    for (std::size_t i = 0; i < rig.tables_h.size(); ++i) {
      rig.tables_h[i] = static_cast<std::int32_t>(i);
      rig.trailing_h[i] = static_cast<std::int32_t>(31 - i);
    }
    for (auto& c : rig.consumed_h) c = 6;
    rig.slots_capacity = rig.rows, rig.pages_capacity = o.cache_pages, rig.host_capacity = o.host_rows;
  };
  struct Step {
    const char* what;
    std::vector<std::array<std::int64_t, 5>> cmds;  // slot, src, dst, op, end
    std::vector<std::int32_t> codes;
    std::int64_t host_capacity = -1;  // -1: the rows
    std::function<void(Rig&)> setup = {};
  };
  const auto endpoints_40 = [](Rig& r) {
    r.put_consumed(r.pool_h, 9, 40);
    r.put_consumed(r.host_h, 4, 40);
  };
  const auto one_page = [](Rig& r) { r.tables_h[1 * 4 + 1] = r.tables_h[0 * 4 + 1]; };
  const std::vector<Step> steps = {
      {"offload, onload, restore from host apply", {{-1, 5, 1, 2, 6}, {-1, 2, 6, 3, 6}, {1, 3, 2, 4, 6}}, {0, 0, 0, 0}},
      {"offload needs request slot -1", {{0, 5, 1, 2, 6}}, {2}},
      {"onload needs request slot -1", {{3, 2, 6, 3, 6}}, {2}},
      {"offload of the null row or past the pool", {{-1, 0, 1, 2, 6}, {-1, 15, 2, 2, 6}}, {2, 2}},
      {"offload into the host null row or past HOST_SLOTS", {{-1, 5, 0, 2, 6}, {-1, 6, 6, 2, 6}}, {2, 2}},
      {"onload from past HOST_SLOTS", {{-1, 6, 7, 3, 6}}, {2}},
      {"a capacity above the host rows is clamped", {{-1, 5, 6, 2, 6}, {-1, 6, 5, 2, 6}}, {2, 0}, 1000},
      {"a reduced host capacity", {{-1, 5, 3, 2, 6}, {-1, 6, 2, 2, 6}, {2, 3, 3, 4, 6}}, {2, 0, 2}, 3},
      {"restore from host into a row that is not the live row", {{1, 3, 3, 4, 6}}, {2}},
      {"endpoints: the source row's consumed tokens, > 0",
       {{-1, 5, 1, 2, 7}, {-1, 2, 6, 3, 5}, {1, 3, 2, 4, 0}},
       {3, 3, 3}},
      {"an offloaded snapshot may end past W * PT; a restore may not",
       {{-1, 9, 1, 2, 40}, {0, 4, 1, 4, 40}},
       {0, 3},
       -1,
       endpoints_40},
      {"one host row written twice", {{-1, 5, 1, 2, 6}, {-1, 6, 1, 2, 6}}, {4, 4}},
      {"a host row written and read", {{-1, 5, 1, 2, 6}, {-1, 1, 7, 3, 6}}, {4, 4}},
      {"a host row written and restored from", {{-1, 5, 1, 2, 6}, {2, 1, 3, 4, 6}}, {4, 4}},
      {"a host row read twice", {{-1, 1, 7, 3, 6}, {2, 1, 3, 4, 6}}, {0, 0}},
      {"equal numbers in different tiers are different rows",
       {{-1, 5, 5, 2, 6}, {-1, 1, 6, 3, 6}, {-1, 2, 2, 3, 6}},
       {0, 0, 0}},
      {"an onload writes a row a snapshot writes", {{-1, 1, 7, 3, 6}, {0, 1, 7, 0, 6}}, {4, 4}},
      {"an offload reads a row a restore writes", {{-1, 2, 1, 2, 6}, {1, 8, 2, 0, 6}}, {4, 4}},
      {"restores from host and device on different partial pages", {{0, 1, 1, 4, 6}, {1, 8, 2, 0, 6}}, {0, 0}},
      {"restores from host and device on one partial page", {{0, 1, 1, 4, 6}, {1, 8, 2, 0, 6}}, {4, 4}, -1, one_page},
      {"a restore from host and a snapshot on one partial page",
       {{0, 1, 1, 4, 6}, {1, 2, 9, 0, 6}},
       {4, 4},
       -1,
       one_page},
      {"operations past 4 are unknown", {{-1, 5, 1, 5, 6}, {-1, 5, 2, -1, 6}}, {1, 1}},
  };
  for (const Step& step : steps) {
    SCOPED_TRACE(step.what);
    fresh();
    if (step.host_capacity >= 0) rig.host_capacity = step.host_capacity;
    if (step.setup) step.setup(rig);
    ft::TierCommands k(o.capacity);
    for (std::size_t i = 0; i < step.cmds.size(); ++i) {
      const auto& c = step.cmds[i];
      k.set(i, c[0], c[1], c[2], static_cast<std::int32_t>(c[3]), c[4]);
    }
    k.count = static_cast<std::int32_t>(step.cmds.size());
    const auto pool_before = rig.pool_h, host_before = rig.host_h;
    std::vector<std::int32_t> want = step.codes;
    want.resize(static_cast<std::size_t>(o.capacity), 0);
    EXPECT_EQ(rig.run_and_check(k, false, step.what), want);
    // A batch that applies nothing writes nothing, in either tier.
    bool any = false;
    for (auto c : step.codes) any |= c == 0;
    if (!any) {
      EXPECT_EQ(rig.pool_h, pool_before);
      EXPECT_EQ(rig.host_h, host_before);
    }
  }
}

// An offload copies the whole row, page regions included, and leaves the
// caches alone; an onload brings it back the same way; a restore from the host
// tier writes the live row and its partial and trailing pages into the caches.
TEST(TEST_CATEGORY, host_tier_bytes_of_a_round_trip) {
  using namespace host_tier;
  ft::TierOptions o;
  o.capacity = 2;
  o.rows = 8;
  o.host_rows = 3;
  o.excluded = {"meta"};
  Rig rig(o);
  for (std::size_t i = 0; i < rig.pool_h.size(); ++i) rig.pool_h[i] = ft::pool_pattern(1, std::int64_t(i));
  for (std::int64_t r = 0; r < rig.rows; ++r) rig.put_consumed(rig.pool_h, r, 6);
  for (std::size_t i = 0; i < rig.tables_h.size(); ++i) rig.tables_h[i] = rig.trailing_h[i] = std::int32_t(i + 3);
  ft::TierCommands off(2);
  off.set(0, -1, 5, 2, 2, 6);
  off.count = 1;
  const auto kv_before = rig.kv_h;
  ASSERT_EQ(rig.run_and_check(off, false, "offload"), (std::vector<std::int32_t>{0, 0}));
  EXPECT_EQ(rig.kv_h, kv_before) << "an offload moves no cache page";
  for (std::int64_t b = 0; b < ft::test_row_bytes; ++b) {
    const bool meta = b >= ft::off_meta && b < ft::off_meta + ft::meta_bytes;
    if (!meta) {
      EXPECT_EQ(rig.host_h[2 * ft::test_row_bytes + b], rig.pool_h[5 * ft::test_row_bytes + b]) << b;
    }
  }
  ft::TierCommands back(2);
  back.set(0, -1, 2, 6, 3, 6);  // onload into snapshot row 6
  back.set(1, 1, 2, 2, 4, 6);   // and restore it into slot 1's live row 2
  back.count = 2;
  ASSERT_EQ(rig.run_and_check(back, true, "onload and restore from host"), (std::vector<std::int32_t>{0, 0}));
  EXPECT_NE(rig.kv_h, kv_before) << "the restore wrote its partial page";
}

// Constructor checks of docs/CONTRACT.md §3 check 15 and the HostTier's own.
TEST(TEST_CATEGORY, host_tier_construction_errors) {
  using namespace host_tier;
  using Tier = statexfer::HostTier<Exec>;
  using statexfer::DType;
  const statexfer::StateLayout other({{"consumed_tokens", 0, 8, DType::int64}}, 96);
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { Tier(ft::test_layout(), -1); }, {"HostTier", "rows"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { Tier(ft::test_layout(), typename Tier::backing_view("b", 4, 96), typename Tier::capacity_view("c", 1)); },
      {"HostTier", "backing", "96", "row_bytes 80"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { Tier(ft::test_layout(), typename Tier::backing_view("b", 4, 80), typename Tier::capacity_view("c", 2)); },
      {"HostTier", "capacity", "int64[1]", "int64[2]"}));

  ft::TierOptions o;
  o.capacity = 4;
  o.host_rows = 4;
  Rig rig(o);  // a valid rig whose Views the cases below rebind
  auto build = [&](const Tier& tier) {
    statexfer::TransferConfig<Exec> config;
    config.pages = {{"kv", rig.kv_cache}};
    config.page_tokens = 4;
    config.state_rows = rig.state_rows;
    config.requests = rig.requests;
    config.host_tier = tier;
    statexfer::PreparedStateTransfer<Exec> t(rig.pool, rig.commands, rig.tables, config);
  };
  EXPECT_NO_THROW(build(Tier()));
  EXPECT_NO_THROW(build(rig.host));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { build(Tier(other, 4)); },
                                                       {"PreparedStateTransfer", "host_tier", "row_bytes 96", "80"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { build(Tier(ft::test_layout(), 1)); },
                                                       {"host_tier", "at least 2 rows", "got 1"}));
  using unmanaged_rows = Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, typename Tier::memory_space,
                                      Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using unmanaged_capacity =
      Kokkos::View<std::int64_t*, typename Exec::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(Tier(ft::test_layout(), unmanaged_rows(nullptr, 4, 80), rig.host.capacity())); },
      {"host_tier backing", "no memory"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(Tier(ft::test_layout(), rig.host.backing(), unmanaged_capacity(nullptr, 1))); },
      {"host_tier capacity", "no memory"}));

  // Overlaps: memory with the tier's memory space's type over other Views'
  // bytes (their addresses only; nothing runs).
  auto rows_over = [&](void* p, std::size_t n) { return unmanaged_rows(static_cast<std::uint8_t*>(p), n, 80); };
  auto capacity_over = [&](void* p) { return unmanaged_capacity(static_cast<std::int64_t*>(p), 1); };
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(Tier(ft::test_layout(), rows_over(rig.pool.backing().data() + 80, 2), rig.host.capacity())); },
      {"host_tier backing overlaps the pool backing"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(Tier(ft::test_layout(), rows_over(rig.kv_cache.data(), 2), rig.host.capacity())); },
      {"host_tier backing overlaps the cache of binding 'kv'"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(Tier(ft::test_layout(), rows_over(rig.state_rows.data(), 2), rig.host.capacity())); },
      {"state_rows overlaps the host_tier backing", "validation reads memory that apply() writes"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(Tier(ft::test_layout(), rows_over(rig.commands.errors.data(), 2), rig.host.capacity())); },
      {"commands.errors overlaps the host_tier backing"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(Tier(ft::test_layout(), rig.host.backing(), capacity_over(rig.pool.backing().data() + 8))); },
      {"host_tier capacity overlaps the pool backing"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(Tier(ft::test_layout(), rig.host.backing(), capacity_over(rig.commands.errors.data()))); },
      {"host_tier capacity overlaps commands.errors"}));
  if constexpr (std::is_same_v<typename Tier::memory_space, typename Exec::memory_space>) {
    EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
        [&] { build(Tier(ft::test_layout(), rig.host.backing(), capacity_over(rig.host.backing().data() + 16))); },
        {"host_tier capacity overlaps the host_tier backing"}));
  }
}

// With a host tier bound, validate() and apply() still launch only kernels:
// no allocation, fence or copy (they are captured in CUDA graphs), one launch
// each, two for validate() where it sorts (default_validate_launches()).
TEST(TEST_CATEGORY, host_tier_launches_without_allocation) {
  using namespace host_tier;
  using ft::ToolCounts;
  const bool device = !std::is_same_v<Exec::memory_space, Kokkos::HostSpace>;
  for (const std::int64_t C : {16, 128, 512}) {
    SCOPED_TRACE("capacity " + std::to_string(C));
    ft::TierOptions o;
    o.capacity = C;
    o.host_rows = C;
    Rig rig(o);
    ft::TierRng rng(0x71e42000ULL + static_cast<std::uint64_t>(C));
    const ft::TierCommands k = ft::random_tier_batch(rng, rig, false);
    rig.upload_all(k);
    const Exec& exec = rig.transfer->execution_space_instance();
    exec.fence();
    ft::expect_default_launches(*rig.transfer, exec, C, k.count, device);
    ToolCounts::count([&] { rig.transfer->validate_and_apply(exec); });
    exec.fence();
    ToolCounts::expect_capturable();
  }
}

}  // namespace

#endif
