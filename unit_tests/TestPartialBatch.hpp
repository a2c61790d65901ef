#ifndef STATEXFER_TEST_PARTIAL_BATCH_HPP
#define STATEXFER_TEST_PARTIAL_BATCH_HPP

// Partly filled batches (issue 29): a graph is captured at a fixed capacity and
// each step fills a few of its slots. Whatever the capacity, the live count and
// the design (apply()'s compact grid, which strides over the rows validate()
// listed as moving, the flat grid and the teams, which launch every slot;
// validate_and_apply() in one launch or two, its teams of 64 or 128 threads
// above 128 commands), the codes and bytes are the oracle's; rows past the
// count never write, however they collide with the live ones; and a transfer
// reused from a full batch to a partial one, an empty one and a bad count
// leaves nothing of the earlier batch behind (the compact list, the sorted
// validation's keys and look-ups above 64 commands).

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <statexfer/statexfer.hpp>
#include <test_common/case.hpp>
#include <test_common/reference.hpp>
#include <test_common/run_case.hpp>

#include "common/batch_fixture.hpp"
#include "common/case_factory.hpp"
#include "common/reference_check.hpp"

namespace {
namespace partial {

namespace ft = statexfer::test;
using statexfer::ApplyDesign;
using statexfer::FusedDesign;

struct Design {
  const char* name;
  ApplyDesign apply;
  FusedDesign fused;
  int apply_teams;        // 0: the default league
  bool small_tiles;       // 1 KiB work items: several a row
  int compact_words = 0;  // the compact grid's 16-byte words a thread on GPUs (0: the default)
  int handout = 0;        // options.expert.compact_handout
  int staged = 0;         // options.expert.compact_staged (GPUs with bulk copies; elsewhere the compact grid's own)
  int joint = 0;          // options.expert.compact_joint_pages
};

const std::vector<Design>& designs() {
  static const std::vector<Design> all = {
      {"automatic", ApplyDesign::automatic, FusedDesign::two_launches, 0, false},
      {"compact", ApplyDesign::compact, FusedDesign::two_launches, 0, true},
      {"compact_3_teams", ApplyDesign::compact, FusedDesign::two_launches, 3, true},
      // These rows' work items are under 64 KiB (8 KiB units by default): 4 KiB units too.
      {"compact_2_words", ApplyDesign::compact, FusedDesign::two_launches, 3, true, 2},
      // Handed out (GPUs, the default past 64 units a team): three teams stride over a batch of at most 64
      // units each, else draw tickets; strided asked for: three teams stride over every batch.
      {"compact_strided", ApplyDesign::compact, FusedDesign::two_launches, 3, true, 0, -1},
      {"compact_handed_out", ApplyDesign::compact, FusedDesign::two_launches, 3, true, 0, 1},
      {"compact_2_words_handed_out", ApplyDesign::compact, FusedDesign::two_launches, 3, true, 2, 1},
      // Staged units (16 KiB): three teams past 64 units each draw tickets; the default league too.
      {"compact_staged", ApplyDesign::compact, FusedDesign::two_launches, 3, false, 0, 0, 1},
      {"compact_staged_default_league", ApplyDesign::compact, FusedDesign::two_launches, 0, false, 0, 0, 1},
      // A region's row bytes and its page as one work item (by default a row tile and a page tile apart).
      {"compact_joint_pages", ApplyDesign::compact, FusedDesign::two_launches, 3, true, 0, 0, 0, 1},
      {"compact_joint_pages_handed_out", ApplyDesign::compact, FusedDesign::two_launches, 3, true, 0, 1, 0, 1},
      {"compact_joint_pages_staged", ApplyDesign::compact, FusedDesign::two_launches, 0, false, 0, 0, 1, 1},
      {"compact_joint_pages_default_league", ApplyDesign::compact, FusedDesign::two_launches, 0, true, 0, 0, 0, 1},
      {"flat_grid", ApplyDesign::flat_grid, FusedDesign::two_launches, 0, true},
      {"teams", ApplyDesign::teams, FusedDesign::two_launches, 0, false},
      {"persistent", ApplyDesign::persistent, FusedDesign::two_launches, 0, false},
      {"one_call_automatic", ApplyDesign::automatic, FusedDesign::automatic, 0, false},
      {"one_call_flat_grid", ApplyDesign::automatic, FusedDesign::flat_grid, 0, true},
      {"one_call_teams", ApplyDesign::automatic, FusedDesign::teams, 0, false},
      // 1 KiB work items: at 256 commands past a wave of teams of 128 threads, a wave of 64 (GPUs).
      {"one_call_small_tiles", ApplyDesign::automatic, FusedDesign::automatic, 0, true},
  };
  return all;
}

/// Capacity C with `live` commands: snapshots, restores and resets of slots
/// 0..live-1 at endpoints that end mid-page (partial and trailing pages move),
/// row 1 refused (a wrong endpoint) when live >= 3, and every row past the
/// count a command that would collide with row 0 if it were live.
ft::Case partial_case(std::int64_t C, std::int64_t live, std::int64_t ssm_bytes = 3001) {
  ft::CaseConfig cfg;
  cfg.capacity = C;
  cfg.page_tokens = 4;
  cfg.width = 3;
  cfg.cache_pages = C * cfg.width + 3;
  cfg.salt = C + live;
  cfg.regions = {{"consumed_tokens", 8, statexfer::DType::int64, 8},
                 {"ssm", ssm_bytes, statexfer::DType::uint8, 1},
                 {"kv", 48, statexfer::DType::uint8, 16},  // 16-byte words: the compact grid joins it
                 {"draft", 2 * 24, statexfer::DType::uint8, 8}};
  cfg.pages = {"kv"};
  cfg.trailing_pages = {"draft"};
  ft::Case c = ft::make_case(cfg);
  // Trailing pages apart from every other slot's, as the main pages are.
  for (std::int64_t s = 0; s < C; ++s)
    for (std::int64_t l = 0; l < cfg.width; ++l)
      ft::set_trailing_table(c, s, l, static_cast<std::int32_t>(s * cfg.width + l));
  const std::int64_t max_end = cfg.width * cfg.page_tokens;
  for (std::int64_t i = 0; i < live; ++i) {
    const std::int64_t end = 1 + (i * 7 + 2) % (max_end - 1), snapshot_row = C + 1 + i;
    switch (i % 3) {
      case 0: ft::add_snapshot(c, i, snapshot_row, end); break;
      case 1: ft::add_restore(c, i, snapshot_row, end); break;
      default: ft::add_reset(c, i); break;
    }
  }
  if (live >= 3) ft::put<std::int64_t>(c.arrays.at("expected_consumed"), 1, max_end + 1);  // code 3
  for (std::int64_t i = live; i < C; ++i)
    ft::set_command(c, i, 0, ft::state_row(c, 0), C + 1, 0, 3);  // row 0's slot and destination: junk
  return c;
}

}  // namespace partial

TEST(TEST_CATEGORY, partial_batches_match_the_oracle_at_every_capacity_and_design) {
  using namespace partial;
  const bool device = !std::is_same<TEST_EXECSPACE::memory_space, Kokkos::HostSpace>::value;
  int saved = 0;
  for (const std::int64_t C : {1, 2, 8, 64, 128, 256, 1024}) {
    const std::set<std::int64_t> counts = {0, 1, 3, C / 2 + 1, C};
    for (const std::int64_t live : counts) {
      if (live > C) continue;
      const ft::Case c = partial_case(C, live);
      for (const Design& d : designs()) {
        statexfer::TransferOptions options;
        options.apply = d.apply;
        options.validate_and_apply = d.fused;
        options.expert.apply_teams = d.apply_teams;
        options.expert.compact_words = d.compact_words;
        options.expert.compact_handout = d.handout;
        options.expert.compact_staged = d.staged;
        options.expert.compact_joint_pages = d.joint;
        if (d.small_tiles) options.expert.apply_tile_bytes = 1024;
        const bool one_call = d.fused != FusedDesign::two_launches;
        const std::string what = std::string(d.name) + "_C" + std::to_string(C) + "_live" + std::to_string(live);
        const ft::ReferenceCheck check = ft::check_against_reference<TEST_EXECSPACE>(
            c, "statexfer_partial", what, 4, saved, one_call ? ft::Steps::fused : ft::Steps::separate, options);
        // The teams of 64 threads this design is here for (9 work items a row: 2304 teams at 256 commands).
        const std::int64_t teams = C * check.work_items, concurrency = TEST_EXECSPACE().concurrency();
        if (device && std::string(d.name) == "one_call_small_tiles" && C == 256 && teams * 128 > concurrency &&
            teams * 64 <= concurrency) {
          EXPECT_NE(check.launch_summary.find("validate_and_apply " + std::to_string(teams) + "x64"), std::string::npos)
              << what << ": " << check.launch_summary;
        }
        if (!check.identical) continue;
        // The batch the oracle answered is the one meant: row 1 refused from 3 live rows, the others applied.
        for (std::int64_t r = 0; r < C; ++r)
          EXPECT_EQ(ft::get<std::int32_t>(*check.expected.errors, r), live >= 3 && r == 1 ? 3 : 0)
              << what << " row " << r;
      }
    }
  }
}

// Rows of 16 MiB and more: apply()'s compact grid keeps its units in registers
// by default and stages them where asked for, at the default league and at a
// caller's alike (GPUs with bulk copies; elsewhere nothing to stage); partly
// filled and full batches of such rows, ragged, match the oracle either way,
// in one call and in two.
TEST(TEST_CATEGORY, partial_batches_of_large_rows_staged_where_asked) {
  using namespace partial;
  int saved = 0;
  const std::int64_t C = 2;
  const auto staged = [](const ft::ReferenceCheck& check) {
    return check.launch_summary.find(", staged)") != std::string::npos;
  };
  for (const std::int64_t live : {1, 2}) {
    const ft::Case c = partial_case(C, live, (std::int64_t(16) << 20) + 3);
    for (const ft::Steps steps : {ft::Steps::separate, ft::Steps::fused}) {
      const std::string what = "live" + std::to_string(live) + (steps == ft::Steps::fused ? "_one_call" : "");
      statexfer::TransferOptions asked;
      asked.expert.compact_staged = 1;
      const ft::ReferenceCheck check_asked =
          ft::check_against_reference<TEST_EXECSPACE>(c, "statexfer_partial", what + "_asked", 2, saved, steps, asked);
      const ft::ReferenceCheck check = ft::check_against_reference<TEST_EXECSPACE>(
          c, "statexfer_partial", what + "_default", 2, saved, steps, statexfer::TransferOptions{});
      EXPECT_FALSE(staged(check)) << what << ": " << check.launch_summary;
      statexfer::TransferOptions league = asked;
      league.expert.apply_teams = 5;
      const ft::ReferenceCheck check_league = ft::check_against_reference<TEST_EXECSPACE>(
          c, "statexfer_partial", what + "_league", 2, saved, steps, league);
      EXPECT_EQ(staged(check_league), staged(check_asked)) << what << ": " << check_league.launch_summary;
    }
  }
}

// One transfer, reused: a full batch, then a partial one whose rows past the
// count still hold the full batch's commands, an empty one, bad counts, and a
// batch of one. Above 64 commands this also holds the sorted validation's
// keys and look-ups of the earlier batch away from the later ones, and at 512
// (sorted on every backend) its first launch's clearing of the plans past the
// pair compares' rows, which it limits to the last batch's live rows.
TEST(TEST_CATEGORY, partial_batches_after_full_ones_leave_nothing_behind) {
  using namespace partial;
  for (const std::int64_t C : {64, 128, 512}) {
    for (const Design& d : designs()) {
      if (d.apply == ApplyDesign::persistent && C > 64) continue;  // up to 64 commands
      ft::BatchOptions o;
      o.capacity = C;
      o.rows = 2 * C + 2;
      o.cache_pages = 4 * C;
      o.trailing = true;
      o.options.apply = d.apply;
      o.options.validate_and_apply = d.fused;
      o.options.expert.apply_teams = d.apply_teams;
      o.options.expert.compact_words = d.compact_words;
      o.options.expert.compact_handout = d.handout;
      o.options.expert.compact_staged = d.staged;
      o.options.expert.compact_joint_pages = d.joint;
      ft::Batch<TEST_EXECSPACE> b(o);
      b.one_call = d.fused != FusedDesign::two_launches;
      const std::string what = std::string(d.name) + " C" + std::to_string(C);
      // Full: every slot snapshots its live row into a snapshot row of its own (all apply).
      std::vector<ft::Command> full;
      for (std::int64_t s = 0; s < C; ++s) full.push_back(ft::snapshot_cmd(s, 1 + s, C + 1 + s, 6));
      EXPECT_EQ(b.run(full), b.codes({})) << what;
      EXPECT_TRUE(b.memory_is(b.expect(full))) << what << ", full batch";
      // Two live rows (a restore and a reset); rows past the count keep the full batch's snapshots.
      std::vector<ft::Command> two = full;
      two[0] = ft::restore_cmd(0, C + 1, 1, 6);
      two[1] = ft::reset_cmd(1, 2);
      EXPECT_EQ(b.run(two, 2), b.codes({})) << what;
      EXPECT_TRUE(b.memory_is(b.expect({two[0], two[1]}))) << what << ", two live commands";
      // None live, then bad counts: nothing written; every row gets code 5 for a bad count.
      EXPECT_EQ(b.run(full, 0), b.codes({})) << what;
      EXPECT_TRUE(b.memory_is(b.unchanged())) << what << ", no live command";
      for (const std::int32_t bad : {-1, static_cast<std::int32_t>(C + 1)}) {
        EXPECT_EQ(b.run(full, bad), std::vector<std::int32_t>(static_cast<std::size_t>(C), 5)) << what;
        EXPECT_TRUE(b.memory_is(b.unchanged())) << what << ", count " << bad;
      }
      // One live row, the last slot's snapshot, at row 0.
      EXPECT_EQ(b.run({full.back()}), b.codes({})) << what;
      EXPECT_TRUE(b.memory_is(b.expect({full.back()}))) << what << ", one live command";
    }
  }
}

// validate_and_apply() in one launch and validate() then apply() take turns on
// one transfer. On GPUs one launch of the teams (asked for where validate()
// sorts) decides every row, writing every row's plan, and validate()'s sorted path
// clears only the plans below its mark of the last batch's live rows: one
// launch of a full batch must leave that mark at its own count, or the next
// validate() leaves its plans behind for apply()'s designs that read every
// row's plan (the flat grid, the teams) to move again.
TEST(TEST_CATEGORY, partial_batches_alternate_one_launch_and_two) {
  using namespace partial;
  for (const std::int64_t C : {64, 512, 1024}) {
    for (const ApplyDesign apply : {ApplyDesign::automatic, ApplyDesign::flat_grid, ApplyDesign::teams}) {
      ft::BatchOptions o;
      o.capacity = C;
      o.rows = 2 * C + 2;
      o.cache_pages = 4 * C;
      o.options.apply = apply;
      o.options.validate_and_apply = FusedDesign::teams;
      ft::Batch<TEST_EXECSPACE> b(o);
      const std::string what = "C" + std::to_string(C) + " " + statexfer::to_string(apply);
      std::vector<ft::Command> full;
      for (std::int64_t s = 0; s < C; ++s) full.push_back(ft::snapshot_cmd(s, 1 + s, C + 1 + s, 6));
      std::vector<ft::Command> two = full;
      two[0] = ft::restore_cmd(0, C + 1, 1, 6);
      two[1] = ft::reset_cmd(1, 2);
      for (const bool full_in_one_call : {true, false}) {
        const std::string turn = what + (full_in_one_call ? ", full in one call" : ", full in two");
        b.one_call = full_in_one_call;
        EXPECT_EQ(b.run(full), b.codes({})) << turn;
        EXPECT_TRUE(b.memory_is(b.expect(full))) << turn << ", full batch";
        // run() uploads the state before the full batch again: a stale plan's copy would show.
        b.one_call = !full_in_one_call;
        EXPECT_EQ(b.run(two, 2), b.codes({})) << turn;
        EXPECT_TRUE(b.memory_is(b.expect({two[0], two[1]}))) << turn << ", two live commands after it";
      }
    }
  }
}

// apply() follows the plan of the last validation enqueued before it, also when
// that was validate_and_apply() in one launch (which leaves no compact list):
// after one, apply() moves that batch's rows again, here from live rows that
// changed in between, and not the rows an earlier validate() listed.
TEST(TEST_CATEGORY, apply_after_one_launch_validate_and_apply_follows_its_plan) {
  using namespace partial;
  ft::BatchOptions o;
  o.capacity = 4;
  o.options.validate_and_apply = FusedDesign::flat_grid;  // one launch on every backend
  ft::Batch<TEST_EXECSPACE> b(o);
  ASSERT_EQ(b.transfer->launch_plan().validate_and_apply, FusedDesign::flat_grid);
  // validate() + apply(): row 0 moves.
  EXPECT_EQ(b.run({ft::snapshot_cmd(0, 1, 5, 6)}), b.codes({}));
  // validate_and_apply(): row 0 refused (code 2: slot 5 of 4), rows 1 and 2 move.
  const std::vector<ft::Command> batch = {ft::reset_cmd(5, 11), ft::snapshot_cmd(1, 2, 6, 6),
                                          ft::snapshot_cmd(2, 3, 7, 6)};
  b.sync();
  b.upload_commands(batch, 3);
  b.transfer->validate_and_apply(TEST_EXECSPACE());
  b.read_back();
  EXPECT_EQ(b.errors, b.codes({2, 0, 0}));
  // New bytes in the live rows read, then apply() alone.
  b.pool_h = b.pool_after;
  for (std::int64_t row : {2, 3})
    for (std::int64_t i = 0; i < ft::test_row_bytes; ++i)
      if (i >= ft::off_conv) b.pool_h[row * ft::test_row_bytes + i] = static_cast<std::uint8_t>(200 + row + i);
  b.sync();
  b.transfer->apply(TEST_EXECSPACE());
  b.read_back();
  ft::Memory m = b.unchanged();
  b.apply_model(m, batch[1]);
  b.apply_model(m, batch[2]);
  EXPECT_TRUE(b.memory_is(m));
}

}  // namespace

#endif
