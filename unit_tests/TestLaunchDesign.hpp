#ifndef STATEXFER_TEST_LAUNCH_DESIGN_HPP
#define STATEXFER_TEST_LAUNCH_DESIGN_HPP

// The launch designs as a transfer on TEST_EXECSPACE takes them from its
// options (docs/CONTRACT.md §10): apply()'s designs, validate_and_apply()'s,
// validate()'s teams, and the constructor's refusal of every option out of
// range, naming it; launch_plan() and launch_summary() say what was chosen. The
// rules themselves, on a GPU's and a host's limits whatever the backend:
// unit_tests/pure/TestLaunchPlan.cpp.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/ctor_fixture.hpp"

namespace {

using Exec = TEST_EXECSPACE;
using CtorArgs = statexfer::test::CtorArgs<Exec>;
using statexfer::test::throws_naming;

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
    // GPUs name the words a thread moves; hosts move a work item a unit with the C library.
    const bool host = std::is_same_v<Exec::memory_space, Kokkos::HostSpace>;
    EXPECT_EQ(t.launch_plan().compact_words, 4) << "work items under 64 KiB: 8 KiB units";
    EXPECT_FALSE(t.launch_plan().compact_handed_out) << "small rows: no team would hold 64 units";
    EXPECT_NE(
        t.launch_summary().find(host ? " compact (1 unit an item)" : " compact (1 unit an item, 4 words a thread)"),
        std::string::npos)
        << t.launch_summary();
  }
  {
    s.config.options.expert.compact_handout = 1;
    auto t = s.make();
    t.prepare(Exec());
    const bool host = std::is_same_v<Exec::memory_space, Kokkos::HostSpace>;
    EXPECT_EQ(t.launch_plan().compact_handed_out, !host) << "hosts' teams of one stride";
    EXPECT_EQ(t.launch_summary().find(", handed out)") != std::string::npos, !host) << t.launch_summary();
    s.config.options.expert.compact_handout = 0;
  }
  {
    // Staged units: only where the device has bulk copies (prepare() asks), then 16 KiB units handed out.
    s.config.options.expert.compact_staged = 1;
    auto t = s.make();
    t.prepare(Exec());
    const statexfer::LaunchPlan p = t.launch_plan();
    EXPECT_EQ(p.compact_staged, p.bulk_copies) << t.launch_summary();
    if (p.compact_staged) {
      EXPECT_TRUE(p.compact_handed_out);
      EXPECT_EQ(p.compact_words, 8);
      EXPECT_NE(t.launch_summary().find(", 8 words a thread, handed out, staged)"), std::string::npos)
          << t.launch_summary();
    }
    s.config.options.expert.no_bulk_copies = true;
    auto without = s.make();
    without.prepare(Exec());
    EXPECT_FALSE(without.launch_plan().compact_staged) << "no bulk copies, no staged units";
    EXPECT_EQ(without.launch_summary().find("staged"), std::string::npos) << without.launch_summary();
    s.config.options.expert.no_bulk_copies = false;
    s.config.options.expert.compact_staged = 0;
  }
  {
    // By default the compact grid's map is the others': 4 work items a row (the bytes before kv, kv, the
    // bytes after it, kv's page); joint pages join kv's row bytes and its page: 3.
    auto apart = s.make();
    apart.prepare(Exec());
    EXPECT_EQ(apart.launch_plan().work_items, 4 * 4);
    EXPECT_EQ(apart.launch_plan().compact_work_items, 4 * 4);
    s.config.options.expert.compact_joint_pages = 1;
    auto joint = s.make();
    joint.prepare(Exec());
    EXPECT_EQ(joint.launch_plan().work_items, 4 * 4);
    EXPECT_EQ(joint.launch_plan().compact_work_items, 4 * 3);
    s.config.options.expert.compact_joint_pages = -1;
    auto asked_apart = s.make();
    asked_apart.prepare(Exec());
    EXPECT_EQ(asked_apart.launch_plan().compact_work_items, 4 * 4);
    s.config.options.expert.compact_joint_pages = 0;
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
      {"options.expert.compact_words", [](auto& o) { o.expert.compact_words = 3; }},
      {"options.expert.compact_handout", [](auto& o) { o.expert.compact_handout = 2; }},
      {"options.expert.compact_handout", [](auto& o) { o.expert.compact_handout = -2; }},
      {"options.expert.compact_staged", [](auto& o) { o.expert.compact_staged = 2; }},
      {"options.expert.compact_joint_pages", [](auto& o) { o.expert.compact_joint_pages = 2; }},
      {"options.expert.compact_joint_pages", [](auto& o) { o.expert.compact_joint_pages = -2; }},
      {"options.expert.validate_pairs_capacity", [](auto& o) { o.expert.validate_pairs_capacity = 32; }},
      {"options.expert.validate_pairs_capacity", [](auto& o) { o.expert.validate_pairs_capacity = 100; }},
      {"options.expert.validate_pairs_capacity", [](auto& o) { o.expert.validate_pairs_capacity = 1024; }},
      {"options.expert.validate_rows_per_team", [](auto& o) { o.expert.validate_rows_per_team = 65; }},
      {"options.expert.validate_peers_per_lane", [](auto& o) { o.expert.validate_peers_per_lane = -1; }},
      {"options.expert.validate_chunk", [](auto& o) { o.expert.validate_chunk = 96; }},
      {"options.expert.validate_chunk", [](auto& o) { o.expert.validate_chunk = 8192; }},
      {"options.expert.validate_groups", [](auto& o) { o.expert.validate_groups = 65; }},
      {"options.expert.validate_counted_keys", [](auto& o) { o.expert.validate_counted_keys = 2; }},
      {"options.expert.fused_block", [](auto& o) { o.expert.fused_block = 16; }},
      {"options.expert.fused_block", [](auto& o) { o.expert.fused_block = 1024; }},
      {"options.expert.fused_rounds", [](auto& o) { o.expert.fused_rounds = 65; }},
      {"options.expert.fused_first_units", [](auto& o) { o.expert.fused_first_units = -2; }},
      {"options.expert.fused_first_units", [](auto& o) { o.expert.fused_first_units = (1 << 20) + 1; }},
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
  // Above 64 commands: the teams on GPUs, where validate() sorts too (hosts: two launches); the flat grid
  // never.
  for (const std::int64_t c : {128, 512}) {
    CtorArgs large(c);
    large.config.options.validate_and_apply = FusedDesign::teams;
    auto t = large.make();
    t.prepare(Exec());
    EXPECT_EQ(t.launch_plan().sorted_validation, c == 512) << c;
    EXPECT_EQ(t.launch_plan().validate_and_apply, host ? FusedDesign::two_launches : FusedDesign::teams)
        << c << ": " << t.launch_summary();
    large.config.options.validate_and_apply = FusedDesign::flat_grid;
    auto f = large.make();
    f.prepare(Exec());
    EXPECT_EQ(f.launch_plan().validate_and_apply, FusedDesign::two_launches) << c;
  }
  // Past one launch's reach where validate() sorts (1024 commands), the automatic design's first launch moves
  // a batch of few live work items itself: a wave of teams, four an SM, on GPUs; on hosts only when asked for;
  // never when two launches are asked for, or with -1.
  CtorArgs large(1024);
  const std::int64_t sms = Exec().concurrency() / 2048;
  const auto first_units = [&](FusedDesign design, int option) {
    large.config.options.validate_and_apply = design;
    large.config.options.expert.fused_first_units = option;
    auto t = large.make();
    t.prepare(Exec());
    const statexfer::LaunchPlan p = t.launch_plan();
    EXPECT_TRUE(p.sorted_validation);
    EXPECT_EQ(p.validate_and_apply, FusedDesign::two_launches) << t.launch_summary();
    EXPECT_EQ(t.launch_summary().find("first launch") != std::string::npos, p.fused_first_units > 0)
        << t.launch_summary();
    return p.fused_first_units;
  };
  EXPECT_EQ(first_units(FusedDesign::automatic, 0), host ? 0 : std::max<std::int64_t>(1, 4 * sms));
  EXPECT_EQ(first_units(FusedDesign::automatic, 48), 48);
  EXPECT_EQ(first_units(FusedDesign::automatic, -1), 0);
  EXPECT_EQ(first_units(FusedDesign::two_launches, 48), 0);
  // Only before the compact apply(), which reads the move list alone (the others read every plan).
  large.config.options.apply = statexfer::ApplyDesign::teams;
  EXPECT_EQ(first_units(FusedDesign::automatic, 48), 0);
}

// validate()'s teams: one team up to 64 commands on every backend, teams of 8
// rows above on GPUs (the pair compares up to 256); options.expert.validate_rows_per_team
// picks the rows per team on every backend.
TEST(TEST_CATEGORY, construction_validate_teams) {
  const bool host = std::is_same_v<Exec::memory_space, Kokkos::HostSpace>;
  for (const std::int64_t c : {32, 64, 128}) {
    CtorArgs s(c);
    auto t = s.make();
    t.prepare(Exec());
    EXPECT_EQ(t.launch_plan().validate_league, c <= 64 ? 1 : host ? 2 : c / 8) << t.launch_summary();
    EXPECT_EQ(t.launch_plan().validate_rows_per_team, c <= 64 ? c : host ? 64 : 8);
  }
  CtorArgs s(64);
  s.config.options.expert.validate_rows_per_team = 3;
  auto t = s.make();
  t.prepare(Exec());
  EXPECT_EQ(t.launch_plan().validate_league, 22) << "ceil(64 / 3) teams";
  EXPECT_EQ(t.launch_summary().rfind("validate 22x", 0), 0u) << t.launch_summary();
}

}  // namespace

#endif
