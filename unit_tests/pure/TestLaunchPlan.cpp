// The choice of launches (src/impl/launch_plan.hpp) as the pure function it
// is: shapes, device limits (an H200's and a host's, written out here) and
// options in, a LaunchPlan out, so that every design and every rule of the
// defaults is reached whatever device the tests run on. Compiled once
// (unit_tests/pure); what a transfer on each backend takes from its options:
// TestLaunchDesign.hpp.

#include <gtest/gtest.h>

#include <statexfer/options.hpp>

#include <cstdint>

#include "impl/launch_plan.hpp"

namespace {

using statexfer::FusedDesign;
using statexfer::TransferOptions;
namespace si = statexfer::impl;

// An H200 as Kokkos' CUDA backend reports it (132 SMs x 2048 threads, warps of 32).
si::DeviceLimits gpu_limits() {
  si::DeviceLimits d;
  d.host = false;
  d.kokkos4 = true;
  d.bulk = true;
  d.concurrency = 132 * 2048;
  d.vector_length_max = 32;
  for (int i = 0; i < 7; ++i) d.validate_threads_max[i] = 512 >> i;
  d.apply_team_max = 1024;
  d.fused_team_max = 1024;
  d.fused_flat_team_max = 512;
  d.sort_team_max = 1024;
  d.sort_teams = 20;
  d.persistent_team_max = 128;
  return d;
}

si::DeviceLimits host_limits() {
  si::DeviceLimits d;
  d.host = true;
  d.concurrency = 2;
  return d;
}

// A shape of C commands of `row` bytes in 64 KiB work items.
si::PlanShape shape(std::int64_t c, std::int64_t row) {
  const std::int64_t tile = 64 * 1024;
  return {c, (row + tile - 1) / tile, row < tile ? row : tile, row};
}

TEST(pure, launch_plan_gpu_defaults) {
  const si::DeviceLimits d = gpu_limits();
  const TransferOptions o;
  // tiny-c4: the flat grid of validate_and_apply (Kokkos 4, up to 8 commands, 256 MiB).
  statexfer::LaunchPlan p = si::choose_launch_plan(shape(4, 16 * 1024), d, o);
  EXPECT_EQ(p.validate_and_apply, FusedDesign::flat_grid);
  EXPECT_EQ(p.fused_block, 128);
  EXPECT_EQ(p.fused_words, 4);
  EXPECT_EQ(p.fused_chunk_bytes, 128 * 4 * 16);
  EXPECT_EQ(p.fused_blocks, p.work_items << p.fused_chunk_shift);
  // apply(): the compact grid, 8 KiB units (four words a thread: items under 64 KiB), no more teams
  // than units (4 rows x 2).
  EXPECT_EQ(p.apply, statexfer::ApplyDesign::compact);
  EXPECT_EQ(p.compact_words, 4);
  EXPECT_EQ(p.compact_units, 2);
  EXPECT_EQ(p.compact_teams, 8);
  EXPECT_EQ(p.apply_words, 2);
  EXPECT_TRUE(p.bulk_copies);
  EXPECT_EQ(p.validate_league, 1);
  EXPECT_EQ(p.validate_team_size, 4);
  EXPECT_EQ(p.validate_vector_length, 1);
  EXPECT_TRUE(p.listed_plans) << "one team, a thread a row: it lists the rows' plans";
  // Kokkos 3.4: the teams instead.
  si::DeviceLimits k34 = d;
  k34.kokkos4 = false;
  EXPECT_EQ(si::choose_launch_plan(shape(4, 16 * 1024), k34, o).validate_and_apply, FusedDesign::teams);
  // 8 rows of 49 MiB: the flat grid's blocks past two waves, the teams' league past one: two
  // launches, apply() the compact grid in registers, 4 KiB units of 64 KiB items (100,608 of them,
  // more than 64 a team of a full league), handed out to nine teams an SM (room for another
  // stream's teams).
  p = si::choose_launch_plan(shape(8, 51511296), d, o);
  EXPECT_EQ(p.validate_and_apply, FusedDesign::two_launches);
  EXPECT_EQ(p.apply, statexfer::ApplyDesign::compact);
  EXPECT_FALSE(p.compact_staged);
  EXPECT_TRUE(p.compact_handed_out);
  EXPECT_EQ(p.compact_teams, 132 * 9);
  EXPECT_EQ(p.compact_words, 2) << "64 KiB work items: 4 KiB units";
  EXPECT_EQ(p.compact_units, 16);
  // One such row: 12,576 units, fewer than 64 a team: strided, ten teams an SM.
  p = si::choose_launch_plan(shape(1, 51511296), d, o);
  EXPECT_FALSE(p.compact_handed_out);
  EXPECT_EQ(p.compact_teams, 132 * 10);
  {
    // Staged units asked for: 16 KiB units (a staging buffer) handed out to three teams an SM, at any
    // row size, or on a caller's league; -1 as the default; nothing without bulk copies.
    TransferOptions mine;
    mine.expert.compact_staged = 1;
    p = si::choose_launch_plan(shape(8, 51511296), d, mine);
    EXPECT_TRUE(p.compact_staged);
    EXPECT_TRUE(p.compact_handed_out);
    EXPECT_EQ(p.compact_teams, 132 * 3);
    EXPECT_EQ(p.compact_words, 8);
    EXPECT_EQ(p.compact_units, 4);
    EXPECT_TRUE(si::choose_launch_plan(shape(8, 1 << 20), d, mine).compact_staged) << "1 MiB rows";
    mine.expert.apply_teams = 11;
    p = si::choose_launch_plan(shape(8, 51511296), d, mine);
    EXPECT_TRUE(p.compact_staged) << "a caller's league";
    EXPECT_EQ(p.compact_teams, 11);
    mine.expert.apply_teams = 0;
    mine.expert.compact_staged = -1;
    EXPECT_FALSE(si::choose_launch_plan(shape(8, 51511296), d, mine).compact_staged) << "-1";
    EXPECT_FALSE(si::choose_launch_plan(shape(8, 1 << 30), d, o).compact_staged) << "1 GiB rows";
    mine.expert.compact_staged = 1;
    si::DeviceLimits sm80 = d;
    sm80.bulk = false;
    EXPECT_FALSE(si::choose_launch_plan(shape(8, 51511296), sm80, mine).compact_staged) << "sm_80";
    EXPECT_FALSE(si::choose_launch_plan(shape(8, 51511296), sm80, o).compact_staged) << "sm_80";
    EXPECT_FALSE(si::choose_launch_plan(shape(8, 51511296), host_limits(), mine).compact_staged);
    EXPECT_FALSE(si::choose_launch_plan(shape(8, 51511296), host_limits(), o).compact_staged);
    mine.expert.no_bulk_copies = true;
    EXPECT_FALSE(si::choose_launch_plan(shape(8, 51511296), d, mine).compact_staged) << "no bulk copies";
  }
  // One row of 49 MiB: the flat grid (a capacity of one is always full).
  EXPECT_EQ(si::choose_launch_plan(shape(1, 51511296), d, o).validate_and_apply, FusedDesign::flat_grid);
  // 8 rows of 1 MiB (1024 blocks, within two waves): the flat grid.
  EXPECT_EQ(si::choose_launch_plan(shape(8, 1 << 20), d, o).validate_and_apply, FusedDesign::flat_grid);
  // 8 rows of 4 MiB: past two waves of the flat grid, within one of the teams (a team a 64 KiB item).
  EXPECT_EQ(si::choose_launch_plan(shape(8, 4 << 20), d, o).validate_and_apply, FusedDesign::teams);
  // C = 64 of 64 KiB rows: the teams (one wave), validate in one team of 64 rows, 4 lanes.
  p = si::choose_launch_plan(shape(64, 64 * 1024), d, o);
  EXPECT_EQ(p.validate_and_apply, FusedDesign::teams);
  EXPECT_EQ(p.fused_team_size, 128);
  EXPECT_EQ(p.validate_league, 1);
  EXPECT_EQ(p.validate_rows_per_team, 64);
  EXPECT_EQ(p.validate_vector_length, 4);
  EXPECT_EQ(p.validate_team_size, 64);
  EXPECT_TRUE(p.listed_plans);
  // With row claims (lane 0 claims a row) validate() lists no plans.
  si::PlanShape claimed = shape(64, 64 * 1024);
  claimed.claims = true;
  EXPECT_FALSE(si::choose_launch_plan(claimed, d, o).listed_plans);
  // C = 32: one team, at most 4 lanes.
  p = si::choose_launch_plan(shape(32, 64 * 1024), d, o);
  EXPECT_EQ(p.validate_league, 1);
  EXPECT_EQ(p.validate_vector_length, 4);
  // Above 256: the sorted validation, a sort team of half a chunk, two launches; its first launch the pair
  // compares' teams at 256 commands (up to 256 live rows it decides them all).
  p = si::choose_launch_plan(shape(4096, 1024), d, o);
  EXPECT_TRUE(p.sorted_validation);
  EXPECT_EQ(p.sort_team_size, 512);
  EXPECT_EQ(p.sort_teams, 20);
  EXPECT_EQ(p.validate_league, 32);
  EXPECT_EQ(p.validate_rows_per_team, 8);
  EXPECT_EQ(p.validate_vector_length, 32);
  EXPECT_EQ(p.validate_team_size, 8);
  EXPECT_EQ(p.validate_and_apply, FusedDesign::two_launches);
  EXPECT_FALSE(p.listed_plans) << "several teams: apply() reads each listed row's plan";
  // 128 and 256 commands: the pair compares' one launch, teams of 8 rows of 32 lanes, then apply();
  // validate_and_apply() the teams' one launch of 128 threads a team while they are one wave; 512 sorts.
  for (const std::int64_t c : {128, 256}) {
    p = si::choose_launch_plan(shape(c, 1 << 20), d, o);
    EXPECT_FALSE(p.sorted_validation) << c;
    EXPECT_EQ(p.validate_league, c / 8) << c;
    EXPECT_EQ(p.validate_rows_per_team, 8) << c;
    EXPECT_EQ(p.validate_vector_length, 32) << c;
    EXPECT_EQ(p.validate_team_size, 8) << c;
    EXPECT_FALSE(p.listed_plans) << c;
    // 16 work items a row: a wave of teams of 128 threads (2112) at 128 commands; at 256 teams of 64 (4224).
    EXPECT_EQ(p.validate_and_apply, FusedDesign::teams) << c;
    EXPECT_EQ(p.fused_team_size, c == 128 ? 128 : 64) << c;
    p = si::choose_launch_plan(shape(c, 16 * 1024), d, o);
    EXPECT_EQ(p.validate_and_apply, FusedDesign::teams) << c;
    EXPECT_EQ(p.fused_team_size, 128) << c;
  }
  // At 256 commands teams of 128 threads, two commands a thread: a wave of them is 2112 teams, 8 work
  // items a row; past that teams of 64 (a wave of 4224: 16 work items a row); past that two launches.
  p = si::choose_launch_plan(shape(256, 8 * 64 * 1024), d, o);
  EXPECT_EQ(p.validate_and_apply, FusedDesign::teams);
  EXPECT_EQ(p.fused_team_size, 128);
  for (const std::int64_t items : {9, 16}) {
    p = si::choose_launch_plan(shape(256, items * 64 * 1024), d, o);
    EXPECT_EQ(p.validate_and_apply, FusedDesign::teams) << items;
    EXPECT_EQ(p.fused_team_size, 64) << items;
  }
  EXPECT_EQ(si::choose_launch_plan(shape(256, 17 * 64 * 1024), d, o).validate_and_apply, FusedDesign::two_launches);
  EXPECT_EQ(si::choose_launch_plan(shape(128, 17 * 64 * 1024), d, o).validate_and_apply, FusedDesign::two_launches)
      << "teams of 64 above 128 commands only";
  // Where validate() sorts: the teams of 128 up to 512 commands while a wave holds them, else two launches
  // unless the teams are asked for.
  p = si::choose_launch_plan(shape(512, 16 * 1024), d, o);
  EXPECT_TRUE(p.sorted_validation);
  EXPECT_EQ(p.validate_and_apply, FusedDesign::teams);
  EXPECT_EQ(p.fused_team_size, 128);
  EXPECT_EQ(si::choose_launch_plan(shape(512, 4 * 64 * 1024), d, o).validate_and_apply, FusedDesign::teams)
      << "2048 work items: a wave of teams of 128 (2112)";
  EXPECT_EQ(si::choose_launch_plan(shape(512, 5 * 64 * 1024), d, o).validate_and_apply, FusedDesign::two_launches)
      << "2560 work items: past a wave of teams of 128, no teams of 64 where validate() sorts";
  EXPECT_EQ(si::choose_launch_plan(shape(1024, 16 * 1024), d, o).validate_and_apply, FusedDesign::two_launches)
      << "1024 commands: 8 rows a thread in a full batch";
  EXPECT_TRUE(si::choose_launch_plan(shape(512, 1 << 20), d, o).sorted_validation);
  EXPECT_EQ(si::choose_launch_plan(shape(512, 1 << 20), d, o).validate_and_apply, FusedDesign::two_launches);
  // Asked for where validate() sorts: the teams, of 64 threads where a wave holds those and not 128, kept
  // past a wave.
  TransferOptions teams;
  teams.validate_and_apply = FusedDesign::teams;
  p = si::choose_launch_plan(shape(512, 16 * 1024), d, teams);
  EXPECT_TRUE(p.sorted_validation);
  EXPECT_EQ(p.validate_and_apply, FusedDesign::teams);
  EXPECT_EQ(p.fused_team_size, 128);
  p = si::choose_launch_plan(shape(4096, 16 * 1024), d, teams);
  EXPECT_EQ(p.validate_and_apply, FusedDesign::teams) << "4096 work items: a wave of teams of 64 threads (4224)";
  EXPECT_EQ(p.fused_team_size, 64);
  p = si::choose_launch_plan(shape(1024, 5 * 64 * 1024), d, teams);
  EXPECT_EQ(p.validate_and_apply, FusedDesign::teams) << "5120 work items: past a wave, asked for";
  EXPECT_EQ(p.fused_team_size, 128);
  // A flat grid of one round a block between one and two waves of resident blocks: two rounds.
  const std::int64_t resident = d.concurrency / 2 / 128;  // 1056
  const std::int64_t chunk = 128 * 4 * 16;
  p = si::choose_launch_plan(shape(1, (resident + 100) * chunk), d, o);
  EXPECT_EQ(p.validate_and_apply, FusedDesign::flat_grid);
  EXPECT_EQ(p.fused_rounds, 2);
  p = si::choose_launch_plan(shape(1, 3 * resident * chunk), d, o);
  EXPECT_EQ(p.fused_rounds, 1);
}

TEST(pure, launch_plan_persistent_grid_for_remapping_commits) {
  const TransferOptions o;
  for (const std::int64_t c : {1, 8, 64, 128}) {
    SCOPED_TRACE(c);
    si::PlanShape s = shape(c, 48 << 20);
    const statexfer::LaunchPlan plain = si::choose_launch_plan(s, gpu_limits(), o);
    EXPECT_EQ(plain.apply, statexfer::ApplyDesign::compact) << "apply(): the compact grid";
    EXPECT_NE(plain.validate_and_apply, FusedDesign::persistent);
    s.remapping_commits = true;
    const statexfer::LaunchPlan gpu = si::choose_launch_plan(s, gpu_limits(), o);
    const bool fits = c <= 64;
    EXPECT_EQ(gpu.apply, statexfer::ApplyDesign::compact) << "its list holds the remaps apart";
    if (fits)
      EXPECT_EQ(gpu.validate_and_apply, FusedDesign::persistent);
    else
      EXPECT_NE(gpu.validate_and_apply, FusedDesign::persistent) << "above 64 commands no persistent grid";
    const statexfer::LaunchPlan host = si::choose_launch_plan(s, host_limits(), o);
    EXPECT_EQ(host.apply, statexfer::ApplyDesign::compact) << "hosts: a team of one a thread, a work item a unit";
    EXPECT_EQ(host.validate_and_apply, FusedDesign::two_launches);
    TransferOptions flat;
    flat.apply = statexfer::ApplyDesign::flat_grid;
    flat.validate_and_apply = FusedDesign::flat_grid;
    EXPECT_EQ(si::choose_launch_plan(s, gpu_limits(), flat).apply, statexfer::ApplyDesign::flat_grid)
        << "a caller's choice stands";
  }
}

TEST(pure, launch_plan_every_design_from_options) {
  for (const bool host : {false, true}) {
    SCOPED_TRACE(host ? "host" : "gpu");
    const si::DeviceLimits d = host ? host_limits() : gpu_limits();
    TransferOptions o;
    o.validate_and_apply = FusedDesign::flat_grid;
    o.expert.fused_block = 64;
    o.expert.fused_rounds = 3;
    statexfer::LaunchPlan p = si::choose_launch_plan(shape(32, 1 << 20), d, o);
    EXPECT_EQ(p.validate_and_apply, FusedDesign::flat_grid);
    EXPECT_EQ(p.fused_block, host ? 1 : 64);
    EXPECT_EQ(p.fused_rounds, host ? 1 : 3);
    EXPECT_EQ(p.fused_chunk_bytes, host ? 64 * 1024 : 64 * 4 * 16) << "hosts: a whole work item a block";
    // Asked for, the teams are kept past a wave (on hosts only where a team holds a thread a row).
    o.validate_and_apply = FusedDesign::teams;
    p = si::choose_launch_plan(shape(8, 51511296), d, o);
    EXPECT_EQ(p.validate_and_apply, host ? FusedDesign::two_launches : FusedDesign::teams);
    o.validate_and_apply = FusedDesign::two_launches;
    EXPECT_EQ(si::choose_launch_plan(shape(4, 1024), d, o).validate_and_apply, FusedDesign::two_launches);
    // Above 64 commands only the teams, on GPUs (where validate() sorts too); hosts two launches.
    o.validate_and_apply = FusedDesign::flat_grid;
    EXPECT_EQ(si::choose_launch_plan(shape(128, 1024), d, o).validate_and_apply, FusedDesign::two_launches);
    o.validate_and_apply = FusedDesign::teams;
    for (const std::int64_t c : {128, 512, 4096})
      EXPECT_EQ(si::choose_launch_plan(shape(c, 1024), d, o).validate_and_apply,
                host ? FusedDesign::two_launches : FusedDesign::teams)
          << c;
    o.expert.validate_pairs_capacity = 64;
    EXPECT_EQ(si::choose_launch_plan(shape(128, 1024), d, o).validate_and_apply,
              host ? FusedDesign::two_launches : FusedDesign::teams);
    o.expert.validate_pairs_capacity = 0;
    // apply(): every word count of the flat grid, the teams, the persistent grid.
    o.apply = statexfer::ApplyDesign::flat_grid;
    for (const int words : {1, 2, 4}) {
      o.expert.apply_words = words;
      p = si::choose_launch_plan(shape(4, 1 << 20), d, o);
      EXPECT_EQ(p.apply, statexfer::ApplyDesign::flat_grid);
      EXPECT_EQ(p.apply_words, words);
      EXPECT_GE(p.apply_item_threads * 16 * words, 64 * 1024) << "the grid covers a work item";
    }
    o.apply = statexfer::ApplyDesign::teams;
    EXPECT_EQ(si::choose_launch_plan(shape(4, 1 << 20), d, o).apply, statexfer::ApplyDesign::teams);
    o.apply = statexfer::ApplyDesign::persistent;
    p = si::choose_launch_plan(shape(4, 1 << 20), d, o);
    EXPECT_EQ(p.apply, statexfer::ApplyDesign::persistent);
    EXPECT_EQ(p.persistent_units, 8) << "8 KiB units of 64 KiB items";
    EXPECT_EQ(p.persistent_teams, host ? 2 : 4 * 16 * 8) << "no more teams than units, at most about a wave";
    EXPECT_EQ(si::choose_launch_plan(shape(128, 1 << 20), d, o).apply, statexfer::ApplyDesign::compact)
        << "above 64 commands no persistent grid";
    // The compact grid: a caller's league, never more teams than units.
    o.apply = statexfer::ApplyDesign::compact;
    o.expert.apply_teams = 3;
    p = si::choose_launch_plan(shape(4, 1 << 20), d, o);
    EXPECT_EQ(p.apply, statexfer::ApplyDesign::compact);
    EXPECT_EQ(p.compact_teams, 3);
    EXPECT_EQ(p.compact_units, host ? 1 : 16);
    o.expert.apply_teams = 1 << 20;
    EXPECT_EQ(si::choose_launch_plan(shape(4, 1 << 20), d, o).compact_teams, host ? 4 * 16 : 4 * 16 * 16);
    // 8 KiB units (four words a thread), the other variant.
    o.expert.compact_words = 4;
    p = si::choose_launch_plan(shape(4, 1 << 20), d, o);
    EXPECT_EQ(p.compact_words, 4);
    EXPECT_EQ(p.compact_units, host ? 1 : 8);
    EXPECT_EQ(p.compact_teams, host ? 4 * 16 : 4 * 16 * 8);
    o.expert.compact_words = 0;
    // Units handed out where the capacity's units exceed 64 a team, up to 64 commands in a league of an
    // eighth of the SMs (16 of 132) and more, above 64 in any league; forced either way.
    for (const int teams : {8, 15, 16, 66, 132, 133, 0}) {
      o.expert.apply_teams = teams;
      p = si::choose_launch_plan(shape(64, 1 << 26), d, o);  // 64 x 16384 units
      EXPECT_EQ(p.compact_handed_out, !host && (teams == 0 || teams >= 16)) << teams << " teams";
      EXPECT_EQ(p.compact_teams, teams > 0 ? teams : host ? 2 : 9 * 132) << teams << " teams";
      p = si::choose_launch_plan(shape(128, 1 << 23), d, o);  // 128 x 2048 units
      EXPECT_EQ(p.compact_handed_out, !host) << teams << " teams, C = 128";
      EXPECT_EQ(p.compact_teams, teams > 0 ? teams : host ? 2 : 9 * 132) << "handed out: nine teams an SM";
      EXPECT_FALSE(p.compact_staged);
    }
    o.expert.apply_teams = 16;
    EXPECT_FALSE(si::choose_launch_plan(shape(1, 1 << 20), d, o).compact_handed_out) << "256 units: 16 a team";
    o.expert.apply_teams = 0;
    EXPECT_FALSE(si::choose_launch_plan(shape(128, 1 << 20), d, o).compact_handed_out) << "32768 units: 25 a team";
    o.expert.compact_handout = 1;
    p = si::choose_launch_plan(shape(64, 1 << 26), d, o);
    EXPECT_EQ(p.compact_handed_out, !host) << "forced";
    EXPECT_EQ(p.compact_teams, host ? 2 : 9 * 132);
    EXPECT_EQ(si::choose_launch_plan(shape(1, 1 << 16), d, o).compact_handed_out, !host) << "forced";
    o.expert.apply_teams = 16;
    o.expert.compact_handout = -1;
    EXPECT_FALSE(si::choose_launch_plan(shape(64, 1 << 26), d, o).compact_handed_out) << "forced strided";
    o.expert.apply_teams = 0;
    p = si::choose_launch_plan(shape(128, 1 << 23), d, o);
    EXPECT_FALSE(p.compact_handed_out) << "forced strided";
    EXPECT_EQ(p.compact_teams, host ? 2 : 10 * 132);
    o.expert.compact_handout = 0;
    o.apply = statexfer::ApplyDesign::persistent;
    o.validate_and_apply = FusedDesign::persistent;
    EXPECT_EQ(si::choose_launch_plan(shape(64, 1 << 20), d, o).validate_and_apply, FusedDesign::persistent);
    EXPECT_EQ(si::choose_launch_plan(shape(128, 1 << 20), d, o).validate_and_apply, FusedDesign::two_launches);
    o.validate_and_apply = FusedDesign::two_launches;
    o.apply = statexfer::ApplyDesign::automatic;
    o.expert.apply_team_size = 256;
    EXPECT_EQ(si::choose_launch_plan(shape(4, 1 << 20), d, o).apply_team_size, host ? 1 : 256);
    o.expert.no_bulk_copies = true;
    EXPECT_FALSE(si::choose_launch_plan(shape(4, 1 << 20), d, o).bulk_copies);
    // validate(): rows per team and peers per lane.
    o.expert.validate_rows_per_team = 3;
    o.expert.validate_peers_per_lane = 1;
    p = si::choose_launch_plan(shape(64, 1024), d, o);
    EXPECT_EQ(p.validate_league, 22);
    EXPECT_EQ(p.validate_rows_per_team, 3);
    EXPECT_EQ(p.validate_vector_length, host ? 1 : 32) << "the most lanes the warp has";
  }
}

// The compact grid counts the units of its own work map (a region's row bytes and page joined), the other
// grids their row's: a decode row of a 64-byte header and four 16 KiB pages has 9 work items apart, 5 joined.
TEST(pure, launch_plan_compact_grid_counts_its_own_work_map) {
  for (const bool host : {false, true}) {
    const si::DeviceLimits d = host ? host_limits() : gpu_limits();
    si::PlanShape s{4, 9, 16 * 1024, 64 * 1024 + 64};
    const statexfer::LaunchPlan apart = si::choose_launch_plan(s, d, TransferOptions{});
    s.compact_work_items = 5;
    s.compact_longest_item = 16 * 1024;
    const statexfer::LaunchPlan joint = si::choose_launch_plan(s, d, TransferOptions{});
    EXPECT_EQ(joint.work_items, 4 * 9) << "the flat grid and the teams keep the row's map";
    EXPECT_EQ(joint.work_items, apart.work_items);
    EXPECT_EQ(joint.compact_work_items, 4 * 5);
    EXPECT_EQ(apart.compact_work_items, 4 * 9);
    EXPECT_EQ(joint.compact_units, host ? 1 : 2) << "8 KiB units of 16 KiB items";
    EXPECT_EQ(apart.compact_teams, host ? 2 : 4 * 9 * 2) << "no more teams than units";
    EXPECT_EQ(joint.compact_teams, host ? 2 : 4 * 5 * 2);
  }
}

TEST(pure, launch_plan_host_defaults) {
  const statexfer::LaunchPlan p = si::choose_launch_plan(shape(16, 1 << 20), host_limits(), TransferOptions{});
  EXPECT_EQ(p.apply, statexfer::ApplyDesign::compact);
  EXPECT_EQ(p.compact_teams, 2) << "a team a thread";
  EXPECT_EQ(p.compact_units, 1) << "a work item a unit";
  EXPECT_EQ(p.apply_team_size, 1);
  EXPECT_FALSE(p.bulk_copies);
  EXPECT_EQ(p.validate_team_size, 1);
  EXPECT_EQ(p.validate_vector_length, 1);
  EXPECT_EQ(p.validate_and_apply, FusedDesign::two_launches);
  EXPECT_FALSE(p.listed_plans) << "a team of one thread decides 16 rows";
  EXPECT_TRUE(si::choose_launch_plan(shape(1, 1 << 20), host_limits(), TransferOptions{}).listed_plans);
  // Hosts sort above 128 commands by default.
  EXPECT_FALSE(si::choose_launch_plan(shape(128, 1 << 20), host_limits(), TransferOptions{}).sorted_validation);
  const statexfer::LaunchPlan sorted = si::choose_launch_plan(shape(256, 1 << 20), host_limits(), TransferOptions{});
  EXPECT_TRUE(sorted.sorted_validation);
  // Its first launch: the pair compares' teams at 128 commands, two of one thread.
  EXPECT_EQ(sorted.validate_league, 2);
  EXPECT_EQ(sorted.validate_rows_per_team, 64);
  EXPECT_EQ(sorted.validate_team_size, 1);
  EXPECT_EQ(sorted.sort_team_size, 1);
}

// options.expert.validate_pairs_capacity moves the line between the pair
// compares and the sorted validation on both kinds of backend.
TEST(pure, launch_plan_validate_pairs_capacity) {
  TransferOptions o;
  for (const si::DeviceLimits& d : {gpu_limits(), host_limits()}) {
    o.expert.validate_pairs_capacity = 64;
    EXPECT_FALSE(si::choose_launch_plan(shape(64, 1 << 20), d, o).sorted_validation);
    statexfer::LaunchPlan sorted = si::choose_launch_plan(shape(128, 1 << 20), d, o);
    EXPECT_TRUE(sorted.sorted_validation);
    EXPECT_EQ(sorted.validate_league, 1) << "the first launch: the pair compares' at 64 commands, one team";
    o.expert.validate_pairs_capacity = 512;
    statexfer::LaunchPlan p = si::choose_launch_plan(shape(512, 1 << 20), d, o);
    EXPECT_FALSE(p.sorted_validation);
    EXPECT_EQ(p.validate_league, d.host ? 8 : 64) << "rows of 64 a team on hosts, 8 on GPUs";
    EXPECT_EQ(p.validate_and_apply, FusedDesign::two_launches);
    sorted = si::choose_launch_plan(shape(1024, 1 << 20), d, o);
    EXPECT_TRUE(sorted.sorted_validation);
    EXPECT_EQ(sorted.validate_league, p.validate_league) << "the first launch: the pair compares' at 512 commands";
  }
}

}  // namespace
