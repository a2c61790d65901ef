// The host tier's moves on a stream of their own (--tier-moves stream), without
// a device: the prefix cache's reads of rows being onloaded, the scheduler's
// tier batches, their results a step later and the offload-race snapshot; and
// the limit's figures (limit.hpp, report_format.hpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "batch.hpp"
#include "geometry.hpp"
#include "limit.hpp"
#include "model.hpp"
#include "prefix_cache.hpp"
#include "report_format.hpp"
#include "scheduler.hpp"
#include "sim_config.hpp"
#include "workload.hpp"

namespace statexfer::sim {
namespace {

PrefixKey key(std::int64_t len) { return {len, static_cast<std::uint64_t>(len) * 7, static_cast<std::uint64_t>(len)}; }

// Key 1 demoted to host row 1 and hit there twice (promoted: an onload into
// device row 10 is queued); key 2 in device row 10's place until then evicted.
void promote_key_1(PrefixCache& cache) {
  cache.reserve(key(1));
  cache.publish(key(1));
  cache.reserve(key(2));  // demotes key 1 into host row 1
  for (const auto& m : cache.take_moves(64)) cache.moved(m, true);
  cache.publish(key(2));
  cache.lookup(key(1));
  const auto second = cache.lookup(key(1));  // the second host hit: promoted, its onload not issued yet
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(second->host);
  EXPECT_FALSE(second->after_onload);
}

// An entry whose onload is in flight is read from its device row, after the
// onloads; before the onload is issued, and once it applied, as before.
TEST(SimTierStream, AnIssuedOnloadsRowIsReadAfterTheOnloads) {
  PrefixCache cache(10, 1, 1);  // device row 10; host row 1
  cache.read_onloading(true);
  promote_key_1(cache);
  const auto moves = cache.take_moves(64);
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_FALSE(moves[0].offload);
  const auto in_flight = cache.lookup(key(1));
  ASSERT_TRUE(in_flight.has_value());
  EXPECT_FALSE(in_flight->host);
  EXPECT_EQ(in_flight->row, 10);
  EXPECT_TRUE(in_flight->after_onload);
  cache.moved(moves[0], true);
  const auto after = cache.lookup(key(1));
  ASSERT_TRUE(after.has_value());
  EXPECT_FALSE(after->host);
  EXPECT_FALSE(after->after_onload);
}

// In the step's batch an onload and a restore of its row would conflict (code
// 4): the restore reads the host row the onload reads.
TEST(SimTierStream, InTheStepsBatchAnIssuedOnloadsEntryIsReadOnTheHost) {
  PrefixCache cache(10, 1, 1);
  promote_key_1(cache);
  ASSERT_EQ(cache.take_moves(64).size(), 1u);
  const auto in_flight = cache.lookup(key(1));
  ASSERT_TRUE(in_flight.has_value());
  EXPECT_TRUE(in_flight->host);
  EXPECT_EQ(in_flight->row, 1);
}

SimConfig tier_config() {
  SimConfig cfg;
  cfg.capacity = 4;
  cfg.snapshot_rows = 2;
  cfg.host_snapshot_rows = 3;
  cfg.page_tokens = 4;
  cfg.row_bytes = 256;
  cfg.kv_planes = 1;
  cfg.kv_token_bytes = 8;
  cfg.draft_planes = 0;
  cfg.scratch_bytes = 0;
  return cfg;
}

Workload tier_workload() {
  SyntheticOptions o;
  o.requests = 120;
  o.seed = 5;
  o.prefixes = 6;
  o.prefix_len = {8, 40};
  o.input_len = {1, 8};
  o.output_len = {1, 6};
  o.max_context = 128;
  return synthesize(o);
}

// Every step as the engine runs it with every code 0: the last step's tier
// results first, then the batches (`race` asked at every step), the step's
// results, the model. Checks what each step's batches hold.
struct TierRun {
  std::int64_t steps = 0, offloads = 0, onloads = 0, after_onload = 0, raced = 0;
};
TierRun run_tier_schedule(const SimConfig& cfg, bool race) {
  const Workload w = tier_workload();
  const Geometry g = make_geometry(cfg, w.max_total, Comm{});
  Scheduler scheduler(cfg, w, g);
  Model model(g);
  TierRun run;
  std::vector<std::int32_t> on_codes, off_codes;
  for (; run.steps < 5000 && scheduler.counts().completed < static_cast<std::int64_t>(w.requests.size()); ++run.steps) {
    scheduler.take_tier_results(on_codes, off_codes);
    const Batch& batch = scheduler.plan_batch(race);
    const Batch& on = scheduler.onload_batch();
    const Batch& off = scheduler.offload_batch();
    for (const BatchEntry& b : batch) {
      EXPECT_NE(b.kind, kind_offload);  // the moves are in the tier's batches only
      EXPECT_NE(b.kind, kind_onload);
      const auto reads = [&](const Batch& moves, bool source) {
        return std::any_of(moves.begin(), moves.end(), [&](const BatchEntry& m) {
          return (source ? m.cmd.source : m.cmd.destination) ==
                 (b.kind == kind_snapshot ? b.cmd.destination : b.cmd.source);
        });
      };
      if (b.kind == kind_snapshot) {
        // A snapshot never writes a row this step's offloads read, unless it is the race.
        EXPECT_EQ(reads(off, true), b.race) << "step " << run.steps;
        run.raced += b.race ? 1 : 0;
      }
      if (b.kind == kind_restore && b.cmd.operation == statexfer::op_copy) {
        // A restore reads a row this step's onloads write only marked to wait for them.
        EXPECT_EQ(reads(on, false), b.after_onload) << "step " << run.steps;
        run.after_onload += b.after_onload ? 1 : 0;
      }
    }
    for (const BatchEntry& m : on) EXPECT_EQ(m.kind, kind_onload);
    for (const BatchEntry& m : off) EXPECT_EQ(m.kind, kind_offload);
    run.onloads += static_cast<std::int64_t>(on.size());
    run.offloads += static_cast<std::int64_t>(off.size());
    on_codes.assign(on.size(), 0);
    off_codes.assign(off.size(), 0);
    scheduler.take_results(std::vector<std::int32_t>(batch.size(), 0));
    model.begin_step(run.steps);
    scheduler.advance_requests(model);
  }
  EXPECT_EQ(scheduler.counts().completed, static_cast<std::int64_t>(w.requests.size()));
  return run;
}

TEST(SimTierStream, TheSchedulerPutsTheMovesInTheirOwnBatches) {
  const TierRun run = run_tier_schedule(tier_config(), false);
  EXPECT_GT(run.offloads, 0);
  EXPECT_GT(run.onloads, 0);
  EXPECT_EQ(run.raced, 0);
  std::printf("%lld steps, %lld offloads, %lld onloads, %lld restores after an onload\n",
              static_cast<long long>(run.steps), static_cast<long long>(run.offloads),
              static_cast<long long>(run.onloads), static_cast<long long>(run.after_onload));
}

TEST(SimTierStream, ARaceIssuesOneSnapshotIntoARowBeingOffloaded) {
  const TierRun run = run_tier_schedule(tier_config(), true);
  EXPECT_GT(run.raced, 0);
}

TEST(SimLimit, EachKindOfBytesTakesItsRate) {
  CopyRates r;
  EXPECT_EQ(r.seconds({100, 0, 0, 0}), 0.0);  // not probed: no limit
  r.probe_bytes = 1 << 20;
  r.copy = 1000, r.fill = 2000, r.to_device = 100, r.to_host = 50;
  EXPECT_DOUBLE_EQ(r.seconds({1000, 0, 0, 0}), 1.0);
  EXPECT_DOUBLE_EQ(r.seconds({1000, 2000, 100, 50}), 4.0);
  MovedBytes m{1, 2, 3, 4};
  m += MovedBytes{10, 20, 30, 40};
  EXPECT_EQ(m.total(), 110);
}

TEST(SimLimit, TheProbeSitsWhereAStepsRowsDo) {
  constexpr std::int64_t mib = std::int64_t(1) << 20;
  // GPUs: past the L2, whatever the rows.
  EXPECT_EQ(default_probe_bytes(true, 64, 38992), 256 * mib);
  EXPECT_EQ(default_probe_bytes(true, 1, 1), 256 * mib);
  // Hosts: a full batch's rows, from 1 to 64 MiB.
  EXPECT_EQ(default_probe_bytes(false, 64, 38992), 64 * 38992);
  EXPECT_EQ(default_probe_bytes(false, 3, 1000001), 3 * 1000001);
  EXPECT_EQ(default_probe_bytes(false, 1, 1), mib);
  EXPECT_EQ(default_probe_bytes(false, 0, 38992), mib);
  EXPECT_EQ(default_probe_bytes(false, 65, mib), 64 * mib);
  EXPECT_EQ(default_probe_bytes(false, 4096, std::int64_t(52) << 20), 64 * mib);
  EXPECT_EQ(default_probe_bytes(false, std::int64_t(1) << 40, std::int64_t(1) << 40), 64 * mib);  // no overflow
  // More repetitions of shorter probes.
  EXPECT_EQ(probe_repetitions(256 * mib), 4);
  EXPECT_EQ(probe_repetitions(1024 * mib), 4);
  EXPECT_EQ(probe_repetitions(64 * mib), 16);
  EXPECT_EQ(probe_repetitions(mib), 32);
  EXPECT_EQ(probe_repetitions(0), 4);
}

TEST(SimLimit, TheFiguresCountTheStepsWithCommands) {
  Stats st;
  st.step_commands = {2, 0, 1, 3};
  st.critical_us = {10, 0, 20, 30};
  st.limit_us = {5, 0, 2, 3};
  st.tier_us = {8, 12};
  st.tier_limit_us = {4, 2};
  const report::LimitFigures f = report::limit_figures(st);
  EXPECT_EQ(f.steps, 3);
  EXPECT_DOUBLE_EQ(f.critical.mean, 20.0);
  EXPECT_DOUBLE_EQ(f.limit, 10.0 / 3);
  EXPECT_DOUBLE_EQ(f.efficiency, 10.0 / 60);
  EXPECT_EQ(f.launches, 2);
  EXPECT_DOUBLE_EQ(f.tier.mean, 10.0);
  EXPECT_DOUBLE_EQ(f.tier_limit, 3.0);
  EXPECT_DOUBLE_EQ(f.tier_efficiency, 6.0 / 20);
}

}  // namespace
}  // namespace statexfer::sim
