#ifndef STATEXFER_TEST_SPECULATIVE_HPP
#define STATEXFER_TEST_SPECULATIVE_HPP

// Commits of speculative decoding (docs/CONTRACT.md §13) and prefix keys
// (§14). Every batch runs on TEST_EXECSPACE and through the oracle
// (test_common/oracle.hpp): codes, commit positions, the pool, the host tier,
// both caches and the state rows must agree byte for byte. Random batches at
// capacities 1 to 256 (one team compares every pair up to 64; the sorted
// validation above) mix commits of both moves with snapshots, restores,
// resets, tier moves and noise, and hit every code; hand-made batches pin
// each rule; the constructor's checks name what they refuse.

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
namespace speculative {

namespace ft = statexfer::test;
using Exec = TEST_EXECSPACE;
using Rig = ft::TierRig<Exec>;
using statexfer::CommitMove;

// Codes seen per operation 0..5, and commits that moved something.
struct Stats {
  std::array<std::array<std::int64_t, 7>, 6> by_op{};
  std::int64_t moved = 0;        // applied commits with accepted > 0
  std::int64_t key_refused = 0;  // code 3 of a restore whose endpoint was right: its key was not
  void add(const Rig& rig, const ft::TierCommands& k, const std::vector<std::int32_t>& codes,
           const std::vector<std::int32_t>& accepted_before, const std::vector<std::uint8_t>& pool_before) {
    for (std::int64_t r = 0; r < k.count && r < static_cast<std::int64_t>(codes.size()); ++r) {
      const auto i = static_cast<std::size_t>(r);
      if (k.op[i] < 0 || k.op[i] > 5) continue;
      ++by_op[static_cast<std::size_t>(k.op[i])][static_cast<std::size_t>(codes[i])];
      if (k.op[i] == 5 && codes[i] == 0 && accepted_before[static_cast<std::size_t>(k.slot[i])] > 0) ++moved;
      // A restore at its source's endpoint, within the table, whose key differs.
      const bool restore = k.op[i] == 0 && k.src[i] > 0 && k.src[i] < rig.rows && k.slot[i] >= 0;
      if (rig.opt.keys && restore && codes[i] == 3 && Rig::consumed_of(pool_before, k.src[i]) == k.end[i] &&
          k.end[i] <= rig.opt.width * rig.opt.page_tokens && Rig::key_of(pool_before, k.src[i]) != k.key[i])
        ++key_refused;
    }
  }
};

// Random batches on one rig, chained: each starts from the memory (and, for
// remapping commits, the state rows) the last left.
Stats random_batches(const ft::TierOptions& options, std::uint64_t seed, int batches) {
  Rig rig(options);
  ft::TierRng rng(seed);
  Stats stats;
  for (int b = 0; b < batches; ++b) {
    const ft::TierCommands k = ft::random_tier_batch(rng, rig, ft::tier_unit(rng) < 0.3);
    const auto accepted = rig.accepted_h;
    const auto pool = rig.pool_h;
    const auto codes = rig.run_and_check(k, b % 2 == 1,
                                         "capacity " + std::to_string(options.capacity) + " move " +
                                             statexfer::to_string(options.move) + " batch " + std::to_string(b));
    stats.add(rig, k, codes, accepted, pool);
    if (::testing::Test::HasFailure()) break;
  }
  return stats;
}

}  // namespace speculative

// Commits of both moves among every other operation, with prefix keys and a
// host tier, at capacities 1..256: the oracle's codes and bytes everywhere,
// every code a commit can get, and applied commits of both moves.
TEST(TEST_CATEGORY, speculative_random_batches_match_the_oracle) {
  using namespace speculative;
  Stats total;
  int config = 0;
  for (const std::int64_t C : {1, 2, 8, 32, 64, 128, 256}) {
    for (const CommitMove move : {CommitMove::remap, CommitMove::copy}) {
      ft::TierOptions o;
      o.capacity = C;
      o.host_rows = C < 16 ? 5 : C / 2;
      o.trailing = config % 2 == 0;
      o.page_tokens = o.trailing ? 4 : 3;
      o.cache_pages = 2 * C + 6;
      o.positions = 1 + config % statexfer::max_speculative_positions;
      o.move = move;
      o.keys = config % 4 != 3;
      if (config % 3 == 2) o.excluded = {"meta"};
      const Stats s = random_batches(o, 0x5bec0000ULL + static_cast<std::uint64_t>(config++), C > 64 ? 30 : 80);
      for (int op = 0; op <= 5; ++op)
        for (int code = 0; code <= 6; ++code) total.by_op[op][code] += s.by_op[op][code];
      total.moved += s.moved;
      total.key_refused += s.key_refused;
      ASSERT_FALSE(HasFailure()) << "capacity " << C;
    }
  }
  for (const int code : {0, 2, 3, 4, 5}) EXPECT_GT(total.by_op[5][code], 0) << "a commit never got code " << code;
  EXPECT_EQ(total.by_op[5][1] + total.by_op[5][6], 0) << "a commit got code 1 or 6";
  EXPECT_GT(total.moved, 0) << "no commit with an accepted count above 0 applied";
  EXPECT_GT(total.key_refused, 0) << "no restore at the right endpoint was refused for its key";
  std::printf("[speculative] %s: commits' codes 0..6:", Exec::name());
  for (auto n : total.by_op[5]) std::printf(" %lld", static_cast<long long>(n));
  std::printf("; moving commits applied %lld; restores refused for their key %lld\n",
              static_cast<long long>(total.moved), static_cast<long long>(total.key_refused));
}

// The designs of apply() and validate_and_apply() on every backend, with
// commits of both moves, keys and a host tier: the persistent grid (every team
// deciding every row, team 0 remapping while others decide), the flat grid,
// the teams and two launches, against the oracle.
TEST(TEST_CATEGORY, speculative_designs_match_the_oracle) {
  using namespace speculative;
  using statexfer::ApplyDesign;
  using statexfer::FusedDesign;
  const std::pair<ApplyDesign, FusedDesign> designs[] = {{ApplyDesign::persistent, FusedDesign::persistent},
                                                         {ApplyDesign::flat_grid, FusedDesign::flat_grid},
                                                         {ApplyDesign::teams, FusedDesign::teams}};
  int config = 0;
  for (const auto& [apply, fused] : designs)
    for (const std::int64_t C : {1, 8, 64})
      for (const CommitMove move : {CommitMove::remap, CommitMove::copy}) {
        ft::TierOptions o;
        o.capacity = C;
        o.host_rows = C < 16 ? 5 : C / 2;
        o.cache_pages = 2 * C + 6;
        o.positions = 2 + config % 5;
        o.move = move;
        o.keys = true;
        o.options.apply = apply;
        o.options.validate_and_apply = fused;
        random_batches(o, 0x5bec1000ULL + static_cast<std::uint64_t>(config++), 30);
        ASSERT_FALSE(HasFailure()) << statexfer::to_string(apply) << " / " << statexfer::to_string(fused) << ", C "
                                   << C;
      }
}

// Codes raised between validate() and apply() (tensor-parallel ranks
// combining theirs, docs/CONTRACT.md §9) veto every move in every apply()
// design: the compact grid (striding and handed out), the flat grid, the
// teams and the persistent grid. Snapshots with keys, restores, resets, tier moves and
// commits of both moves, against the oracle applying the raised codes.
TEST(TEST_CATEGORY, speculative_raised_codes_veto_every_apply_design) {
  using namespace speculative;
  using statexfer::ApplyDesign;
  struct Design {
    ApplyDesign apply;
    int handout;
    int staged = 0;  // options.expert.compact_staged (GPUs with bulk copies)
    int joint = 0;   // options.expert.compact_joint_pages
  };
  const Design designs[] = {{ApplyDesign::compact, 0},    {ApplyDesign::compact, 1},       {ApplyDesign::compact, -1},
                            {ApplyDesign::compact, 1, 1}, {ApplyDesign::compact, 0, 0, 1}, {ApplyDesign::flat_grid, 0},
                            {ApplyDesign::teams, 0},      {ApplyDesign::persistent, 0}};
  int config = 0;
  std::int64_t raised_rows = 0;
  for (const Design& d : designs)
    for (const std::int64_t C : {1, 8, 64, 256}) {
      if (d.apply == ApplyDesign::persistent && C > 64) continue;  // up to 64 commands
      for (const CommitMove move : {CommitMove::remap, CommitMove::copy}) {
        ft::TierOptions o;
        o.capacity = C;
        o.host_rows = C < 16 ? 5 : C / 2;
        o.cache_pages = 2 * C + 6;
        o.positions = 1 + config % statexfer::max_speculative_positions;
        o.move = move;
        o.keys = true;
        o.options.apply = d.apply;
        o.options.expert.compact_handout = d.handout;
        o.options.expert.compact_staged = d.staged;
        o.options.expert.compact_joint_pages = d.joint;
        if (d.handout != 0) o.options.expert.apply_teams = 3;  // few teams: past 64 units a team, tickets or not
        Rig rig(o);
        ft::TierRng rng(0x5bec2000ULL + static_cast<std::uint64_t>(config));
        const std::string what = std::string(statexfer::to_string(d.apply)) +
                                 (d.handout > 0   ? " handed out"
                                  : d.handout < 0 ? " strided"
                                                  : "") +
                                 (d.staged ? ", staged" : "") + (d.joint > 0 ? ", joint pages" : "") + ", C " +
                                 std::to_string(C) + ", " + statexfer::to_string(move);
        for (int b = 0; b < 12 && !HasFailure(); ++b) {
          const ft::TierCommands k = ft::random_tier_batch(rng, rig, b % 3 == 2);
          const auto codes = rig.run_raised_and_check(k, 1 + (config + b) % 3, what + " batch " + std::to_string(b));
          for (std::size_t r = 0; r < codes.size(); ++r) raised_rows += codes[r] == 8;  // count may be bad: past C
        }
        ++config;
        ASSERT_FALSE(HasFailure()) << what;
      }
    }
  EXPECT_GT(raised_rows, 100) << "too few rows were raised for the test to mean anything";
}

// Without speculative positions, operation 5 is an unknown value (code 1), and
// the same random batches still match the oracle.
TEST(TEST_CATEGORY, speculative_commits_without_positions_are_invalid) {
  using namespace speculative;
  ft::TierOptions o;
  o.capacity = 8;
  o.positions = 0;
  Rig rig(o);
  ft::TierCommands k(8);
  k.set(0, 0, -1, -1, 5, 6);
  k.count = 1;
  EXPECT_EQ(rig.run_and_check(k, false, "op 5 without positions")[0], 1);
}

// The rules one by one on a fixed rig: C = 4, K = 3; pool rows 1..4 live
// (slot s has live row 1 + s), 5..16 position rows (slot s, position j:
// 5 + 3 s + j - 1), 17..24 snapshot rows. Live rows at endpoint 6, position j
// at 6 + j; every slot accepted 2 unless a step says otherwise; keys 0 except
// where set.
TEST(TEST_CATEGORY, speculative_rules) {
  using namespace speculative;
  for (const CommitMove move : {CommitMove::remap, CommitMove::copy}) {
    SCOPED_TRACE(statexfer::to_string(move));
    ft::TierOptions o;
    o.capacity = 4;
    o.positions = 3;
    o.rows = 25;
    o.host_rows = 4;
    o.cache_pages = 32;
    o.move = move;
    o.keys = true;
    Rig rig(o);
    auto position = [](std::int64_t slot, std::int64_t j) { return 5 + 3 * slot + j - 1; };
    auto fresh = [&] {
      for (std::size_t i = 0; i < rig.pool_h.size(); ++i) rig.pool_h[i] = ft::pool_pattern(0, std::int64_t(i));
      for (std::size_t i = 0; i < rig.host_h.size(); ++i) rig.host_h[i] = ft::cache_pattern(7, 0, std::int64_t(i));
      for (std::int64_t r = 0; r < rig.rows; ++r) {
        rig.put_consumed(rig.pool_h, r, 6);
        rig.put_key(rig.pool_h, r, 0);
      }
      for (std::int64_t r = 0; r < o.host_rows; ++r) {
        rig.put_consumed(rig.host_h, r, 6);
        rig.put_key(rig.host_h, r, 0);
      }
      for (std::int64_t s = 0; s < 4; ++s) {
        rig.state_h[s * 8] = 1 + s;
        for (std::int64_t j = 1; j <= 3; ++j) {
          rig.state_h[s * 8 + j] = position(s, j);
          rig.put_consumed(rig.pool_h, position(s, j), 6 + j);
        }
        rig.accepted_h[static_cast<std::size_t>(s)] = 2;
      }
      for (std::size_t i = 0; i < rig.tables_h.size(); ++i) {
        rig.tables_h[i] = static_cast<std::int32_t>(i);
        rig.trailing_h[i] = static_cast<std::int32_t>(31 - i);
      }
      for (auto& c : rig.consumed_h) c = 6;
      rig.slots_capacity = rig.rows, rig.pages_capacity = o.cache_pages, rig.host_capacity = o.host_rows;
    };
    struct Step {
      const char* what;
      std::vector<std::array<std::int64_t, 6>> cmds;  // slot, src, dst, op, end, key
      std::vector<std::int32_t> codes;
      std::function<void(Rig&)> setup = {};
    };
    const auto accept = [](std::int64_t slot, std::int32_t a) {
      return [=](Rig& r) { r.accepted_h[static_cast<std::size_t>(slot)] = a; };
    };
    const std::vector<Step> steps = {
        {"commits of accepted 2, 0 and 3",
         {{0, -1, -1, 5, 6, 0}, {1, -1, -1, 5, 6, 0}, {2, -1, -1, 5, 6, 0}},
         {0, 0, 0},
         [](Rig& r) { r.accepted_h[1] = 0, r.accepted_h[2] = 3; }},
        {"accepted count past K or negative",
         {{0, -1, -1, 5, 6, 0}, {1, -1, -1, 5, 6, 0}},
         {2, 2},
         [](Rig& r) { r.accepted_h[0] = 4, r.accepted_h[1] = -1; }},
        {"a commit names no rows", {{0, 1, -1, 5, 6, 0}, {1, -1, 2, 5, 6, 0}}, {2, 2}},
        {"a stale position (its endpoint is not end + accepted)",
         {{0, -1, -1, 5, 6, 0}},
         {3},
         [&](Rig& r) { r.put_consumed(r.pool_h, position(0, 2), 7); }},
        {"accepted 0 reads the live row's endpoint", {{0, -1, -1, 5, 5, 0}}, {3}, accept(0, 0)},
        {"a position row that is the live row, the null row or past the pool",
         {{0, -1, -1, 5, 6, 0}, {1, -1, -1, 5, 6, 0}, {2, -1, -1, 5, 6, 0}},
         {2, 2, 2},
         [](Rig& r) { r.state_h[0 * 8 + 2] = 1, r.state_h[1 * 8 + 2] = 0, r.state_h[2 * 8 + 2] = 25; }},
        {"a reduced SLOTS puts the position row past it",
         {{3, -1, -1, 5, 6, 0}},
         {2},
         [&](Rig& r) { r.slots_capacity = position(3, 2); }},
        {"an endpoint past W * PT - accepted",
         {{0, -1, -1, 5, 15, 0}},
         {3},
         [&](Rig& r) { r.put_consumed(r.pool_h, position(0, 2), 17); }},
        {"a snapshot of the committed slot's live row conflicts", {{0, -1, -1, 5, 6, 0}, {0, 1, 17, 0, 6, 9}}, {4, 4}},
        {"a restore into it conflicts", {{0, -1, -1, 5, 6, 0}, {0, 17, 1, 0, 6, 0}}, {4, 4}},
        {"two commits of one slot", {{0, -1, -1, 5, 6, 0}, {0, -1, -1, 5, 6, 0}}, {4, 4}},
        {"a row reading the position row conflicts", {{0, -1, -1, 5, 6, 0}, {1, position(0, 2), 2, 0, 8, 0}}, {4, 4}},
        {"an offload of the position row conflicts", {{0, -1, -1, 5, 6, 0}, {-1, position(0, 2), 1, 2, 8, 0}}, {4, 4}},
        {"a row writing another position row of the slot does not",
         {{0, -1, -1, 5, 6, 0}, {1, 2, position(0, 3), 0, 6, 0}},
         {0, 0}},
        {"commits of different slots", {{0, -1, -1, 5, 6, 0}, {3, -1, -1, 5, 6, 0}}, {0, 0}},
        {"a restore of a snapshot row with the key it holds",
         {{1, 17, 2, 0, 6, 5}},
         {0},
         [](Rig& r) { r.put_key(r.pool_h, 17, 5); }},
        {"a restore whose key differs", {{1, 17, 2, 0, 6, 4}}, {3}, [](Rig& r) { r.put_key(r.pool_h, 17, 5); }},
        {"offload, onload and restore from host prove the key",
         {{-1, 17, 1, 2, 6, 4}, {-1, 2, 18, 3, 6, 4}, {3, 3, 4, 4, 6, 4}},
         {3, 3, 3},
         [](Rig& r) { r.put_key(r.pool_h, 17, 5), r.put_key(r.host_h, 2, 5), r.put_key(r.host_h, 3, 5); }},
        {"a snapshot stamps any key (the live row's is not read)",
         {{1, 2, 19, 0, 6, 123}},
         {0},
         [](Rig& r) { r.put_key(r.pool_h, 2, 77); }},
    };
    for (const Step& step : steps) {
      SCOPED_TRACE(step.what);
      fresh();
      if (step.setup) step.setup(rig);
      ft::TierCommands k(o.capacity);
      for (std::size_t i = 0; i < step.cmds.size(); ++i) {
        const auto& c = step.cmds[i];
        k.set(i, c[0], c[1], c[2], static_cast<std::int32_t>(c[3]), c[4]);
        k.key[i] = c[5];
      }
      k.count = static_cast<std::int32_t>(step.cmds.size());
      const auto pool_before = rig.pool_h, host_before = rig.host_h;
      const auto state_before = rig.state_h;
      std::vector<std::int32_t> want = step.codes;
      want.resize(static_cast<std::size_t>(o.capacity), 0);
      EXPECT_EQ(rig.run_and_check(k, false, step.what), want);
      bool any = false;
      for (auto c : step.codes) any |= c == 0;
      if (!any) {
        EXPECT_EQ(rig.pool_h, pool_before);
        EXPECT_EQ(rig.host_h, host_before);
        EXPECT_EQ(rig.state_h, state_before);
      }
    }
    // What the first step left: slot 0 (accepted 2) and slot 2 (accepted 3)
    // hold their accepted positions' states, slot 1 (accepted 0) is as it was.
    fresh();
    rig.accepted_h[1] = 0, rig.accepted_h[2] = 3;
    const auto pool_before = rig.pool_h;
    ft::TierCommands k(4);
    for (std::int64_t s = 0; s < 3; ++s) k.set(static_cast<std::size_t>(s), s, -1, -1, 5, 6);
    k.count = 3;
    ASSERT_EQ(rig.run_and_check(k, true, "three commits, one launch"), (std::vector<std::int32_t>{0, 0, 0, 0}));
    EXPECT_EQ(ft::download(rig.commands.commit_positions), (std::vector<std::int32_t>{2, 0, 3, -1}));
    const std::int64_t rb = ft::test_row_bytes;
    auto row = [&](const std::vector<std::uint8_t>& image, std::int64_t r) {
      return std::vector<std::uint8_t>(image.begin() + r * rb, image.begin() + (r + 1) * rb);
    };
    if (move == CommitMove::remap) {
      EXPECT_EQ(rig.state_h[0 * 8], position(0, 2));
      EXPECT_EQ(rig.state_h[0 * 8 + 2], 1);
      EXPECT_EQ(rig.state_h[2 * 8], position(2, 3));
      EXPECT_EQ(rig.state_h[2 * 8 + 3], 3);
      EXPECT_EQ(rig.state_h[1 * 8], 2);
      EXPECT_EQ(rig.pool_h, pool_before) << "a remap moves no byte";
    } else {
      EXPECT_EQ(row(rig.pool_h, 1), row(pool_before, position(0, 2)));
      EXPECT_EQ(row(rig.pool_h, 3), row(pool_before, position(2, 3)));
      EXPECT_EQ(row(rig.pool_h, 2), row(pool_before, 2));
      EXPECT_EQ(rig.state_h[0 * 8], 1) << "a copy keeps the rows' roles";
    }
    // The snapshot step's key landed in the snapshot row; a reset zeroes the live row's.
    fresh();
    ft::TierCommands snap(4);
    snap.set(0, 1, 2, 19, 0, 6);
    snap.key[0] = 123;
    snap.set(1, 2, -1, 3, 1, 0);
    snap.count = 2;
    ASSERT_EQ(rig.run_and_check(snap, false, "stamp and reset"), (std::vector<std::int32_t>{0, 0, 0, 0}));
    EXPECT_EQ(Rig::key_of(rig.pool_h, 19), 123);
    EXPECT_EQ(Rig::key_of(rig.pool_h, 3), 0);
  }
}

// Constructor checks of docs/CONTRACT.md §3 checks 16 and 17.
TEST(TEST_CATEGORY, speculative_construction_errors) {
  using namespace speculative;
  using statexfer::DType;
  ft::TierOptions o;
  o.capacity = 4;
  o.positions = 2;
  o.keys = true;
  Rig rig(o);
  using accepted_view = Kokkos::View<std::int32_t*, typename Exec::memory_space>;
  auto config = [&](int positions, accepted_view accepted, CommitMove move) {
    auto c = ft::fixture_config<Exec>(4, rig.state_rows, rig.requests, rig.kv_cache, rig.draft_cache, false,
                                      rig.trailing_tables, {});
    c.speculative.positions = positions;
    c.speculative.accepted = accepted;
    c.speculative.move = move;
    return c;
  };
  auto build = [&](const statexfer::StatePool<Exec>& pool, const statexfer::StateCommands<Exec>& commands,
                   const statexfer::TransferConfig<Exec>& c) {
    statexfer::PreparedStateTransfer<Exec> t(pool, commands, rig.tables, c);
  };
  EXPECT_NO_THROW(build(rig.pool, rig.commands, config(2, rig.accepted, CommitMove::remap)));
  EXPECT_NO_THROW(build(rig.pool, rig.commands, config(7, rig.accepted, CommitMove::copy)));
  for (const int k : {8, -1})
    EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
        [&] { build(rig.pool, rig.commands, config(k, rig.accepted, CommitMove::remap)); },
        {"speculative.positions", "1..7", std::to_string(k)}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(rig.pool, rig.commands, config(2, accepted_view("a", 3), CommitMove::remap)); },
      {"speculative.accepted", "int32 [4]", "[3]"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(rig.pool, rig.commands, config(2, accepted_view(), CommitMove::remap)); },
      {"speculative.accepted", "empty View"}));
  auto no_positions = rig.commands;
  no_positions.commit_positions = {};
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(rig.pool, no_positions, config(2, rig.accepted, CommitMove::remap)); },
      {"commands.commit_positions"}));
  // Without commits the Views are not needed.
  EXPECT_NO_THROW(build(rig.pool, no_positions, config(0, accepted_view(), CommitMove::remap)));

  // Overlaps: Views over other Views' bytes.
  using unmanaged32 = Kokkos::View<std::int32_t*, typename Exec::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  auto over = [](void* p) { return unmanaged32(static_cast<std::int32_t*>(p), 4); };
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(rig.pool, rig.commands, config(2, over(rig.pool.backing().data() + 80), CommitMove::remap)); },
      {"speculative.accepted overlaps the pool backing"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(rig.pool, rig.commands, config(2, over(rig.commands.commit_positions.data()), CommitMove::copy)); },
      {"speculative.accepted overlaps commands.commit_positions"}));
  auto shared_positions = rig.commands;
  shared_positions.commit_positions = over(rig.commands.errors.data());
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(rig.pool, shared_positions, config(2, rig.accepted, CommitMove::copy)); },
      {"commit_positions", "commands.errors"}));
  // A remap writes the state rows: no other input may lie in them.
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(rig.pool, rig.commands, config(2, over(rig.state_rows.data() + 2), CommitMove::remap)); },
      {"state_rows overlaps speculative.accepted", "remapping commits write the state rows"}));
  EXPECT_NO_THROW(build(rig.pool, rig.commands, config(2, over(rig.state_rows.data() + 2), CommitMove::copy)));

  // Prefix keys: one int64, 8-byte aligned, not excluded; prefix_keys of the capacity.
  auto layout_with = [](std::int64_t offset, std::int64_t bytes, DType type) {
    return statexfer::StateLayout({{"consumed_tokens", ft::off_consumed, 8, DType::int64},
                                   {"prefix_key", offset, bytes, type},
                                   {"kv", ft::off_kv, ft::kv_bytes, DType::uint8}},
                                  ft::test_row_bytes);
  };
  auto pool_with = [&](const statexfer::StateLayout& layout) { return statexfer::StatePool<Exec>(layout, 25, 32); };
  const auto plain = config(0, accepted_view(), CommitMove::remap);
  EXPECT_NO_THROW(build(pool_with(layout_with(8, 8, DType::int64)), rig.commands, plain));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(pool_with(layout_with(8, 4, DType::int32)), rig.commands, plain); },
      {"prefix_key", "one int64", "4 bytes of int32"}));
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(pool_with(layout_with(12, 8, DType::int64)), rig.commands, plain); },
      {"prefix_key", "8-byte aligned", "offset 12"}));
  auto excluded = plain;
  excluded.excluded_regions = {"prefix_key"};
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(pool_with(layout_with(8, 8, DType::int64)), rig.commands, excluded); },
      {"prefix_key cannot be excluded"}));
  auto no_keys = rig.commands;
  no_keys.prefix_keys = {};
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>(
      [&] { build(pool_with(layout_with(8, 8, DType::int64)), no_keys, plain); }, {"commands.prefix_keys"}));
  EXPECT_NO_THROW(build(pool_with(ft::test_layout()), no_keys, plain));
  using unmanaged64 = Kokkos::View<std::int64_t*, typename Exec::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  auto keys_in_pool = rig.commands;
  auto pool = pool_with(layout_with(8, 8, DType::int64));
  keys_in_pool.prefix_keys = unmanaged64(reinterpret_cast<std::int64_t*>(pool.backing().data() + 80), 4);
  EXPECT_TRUE(ft::throws_naming<std::invalid_argument>([&] { build(pool, keys_in_pool, plain); },
                                                       {"commands.prefix_keys overlaps the pool backing"}));
}

// With commits and keys, validate() and apply() still launch only kernels: no
// allocation, fence or copy, one launch each, two for validate() where it
// sorts (default_validate_launches()).
TEST(TEST_CATEGORY, speculative_launches_without_allocation) {
  using namespace speculative;
  using ft::ToolCounts;
  const bool device = !std::is_same_v<Exec::memory_space, Kokkos::HostSpace>;
  for (const std::int64_t C : {16, 128, 512}) {
    for (const CommitMove move : {CommitMove::remap, CommitMove::copy}) {
      SCOPED_TRACE("capacity " + std::to_string(C));
      ft::TierOptions o;
      o.capacity = C;
      o.host_rows = C;
      o.positions = 4;
      o.move = move;
      o.keys = true;
      Rig rig(o);
      ft::TierRng rng(0x5bec2000ULL + static_cast<std::uint64_t>(C));
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
}

}  // namespace

#endif
