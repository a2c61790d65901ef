// The simulator's parts on their own, without a device: the geometry's checks
// and shards, the scheduler's prefix-cache decisions, the two-tier prefix cache, the fault injector's
// choice of command, and the verifier's replica judged by the oracle.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <test_common/oracle_commands.hpp>

#include "batch.hpp"
#include "faults.hpp"
#include "geometry.hpp"
#include "model.hpp"
#include "prefix_cache.hpp"
#include "replica.hpp"
#include "scheduler.hpp"
#include "sim_config.hpp"
#include "workload.hpp"

namespace statexfer::sim {
namespace {

SimConfig small_config() {
  SimConfig cfg;
  cfg.capacity = 1;
  cfg.snapshot_rows = 4;
  cfg.page_tokens = 4;
  cfg.row_bytes = 256;
  cfg.kv_planes = 2;
  cfg.kv_token_bytes = 8;
  cfg.draft_planes = 1;
  cfg.draft_token_bytes = 4;
  cfg.scratch_bytes = 16;
  return cfg;
}

// Two requests that share a 20-token prefix document, one after the other.
Workload shared_prefix_workload() {
  Workload w;
  for (std::uint64_t seed : {11u, 12u}) {
    RequestSpec r;
    r.prefix = 0;
    r.prefix_len = 20;
    r.input_len = 4;
    r.output_len = 2;
    r.seed = seed;
    w.requests.push_back(r);
  }
  w.finish();
  return w;
}

TEST(SimGeometry, RefusesABadCapacityNamingTheOption) {
  SimConfig cfg = small_config();
  cfg.capacity = 3;
  try {
    make_geometry(cfg, 26, Comm{});
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--capacity"), std::string::npos) << e.what();
  }
}

TEST(SimGeometry, ShardsOfThreeRanksCoverTheWholeState) {
  const SimConfig cfg = small_config();
  std::int64_t ssm = 0, conv = 0, kv = 0;
  for (int rank = 0; rank < 3; ++rank) {
    Comm comm;
    comm.rank = rank;
    comm.size = 3;
    const Geometry g = make_geometry(cfg, 26, comm);
    ssm += g.ssm.size();
    conv += g.conv.size();
    kv += g.kv.size();
    EXPECT_EQ(g.table_width, 7);  // 26 tokens in pages of 4
    EXPECT_EQ(g.rows, 1 + cfg.capacity + cfg.snapshot_rows);
    EXPECT_EQ(g.layout.region("kv1").nbytes, g.kv_page_bytes);
    EXPECT_EQ(g.layout.region("draft0").nbytes, 2 * g.draft_page_bytes);
    EXPECT_EQ(g.row_copy_bytes, g.row_bytes - cfg.scratch_bytes);
  }
  EXPECT_EQ(ssm + conv, cfg.row_bytes);
  EXPECT_EQ(kv, cfg.kv_token_bytes);
}

// Runs the scheduler with every command applied except the restores, which get
// `restore_code`, until every request completed.
std::vector<BatchEntry> run_schedule(Scheduler& scheduler, Model& model, std::int32_t restore_code) {
  std::vector<BatchEntry> issued;
  for (std::int64_t step = 0; step < 50 && scheduler.counts().completed < 2; ++step) {
    const Batch& batch = scheduler.plan_batch();
    std::vector<std::int32_t> codes;
    for (const BatchEntry& b : batch) {
      issued.push_back(b);
      codes.push_back(b.kind == kind_restore ? restore_code : 0);
    }
    scheduler.take_results(codes);
    model.begin_step(step);
    scheduler.advance_requests(model);
  }
  return issued;
}

TEST(SimScheduler, TheSecondRequestRestoresTheSharedPrefix) {
  const SimConfig cfg = small_config();
  const Workload w = shared_prefix_workload();
  const Geometry g = make_geometry(cfg, w.max_total, Comm{});
  Scheduler scheduler(cfg, w, g);
  Model model(g);
  const std::vector<BatchEntry> issued = run_schedule(scheduler, model, 0);

  const SchedulerCounts& n = scheduler.counts();
  EXPECT_EQ(n.completed, 2);
  EXPECT_EQ(n.misses, 1);
  EXPECT_EQ(n.hits, 1);
  EXPECT_EQ(n.restored_tokens, 20);
  EXPECT_EQ(n.restore_fallbacks, 0);
  std::int64_t checkpoint_row = -1;
  for (const BatchEntry& b : issued)
    if (b.kind == kind_snapshot && b.cmd.expected_consumed == 20) checkpoint_row = b.cmd.destination;
  ASSERT_GE(checkpoint_row, g.first_snapshot_row()) << "no snapshot of the prefix document's end";
  bool restored = false;
  for (const BatchEntry& b : issued)
    if (b.kind == kind_restore) {
      EXPECT_EQ(b.cmd.source, checkpoint_row);
      EXPECT_EQ(b.cmd.destination, g.home_row(0));
      EXPECT_EQ(b.cmd.expected_consumed, 20);
      restored = true;
    }
  EXPECT_TRUE(restored);
  // Every page went back.
  for (std::int32_t page : scheduler.page_tables()) EXPECT_EQ(page, -1);
}

TEST(SimScheduler, AFailedRestoreFallsBackToAReset) {
  const SimConfig cfg = small_config();
  const Workload w = shared_prefix_workload();
  const Geometry g = make_geometry(cfg, w.max_total, Comm{});
  Scheduler scheduler(cfg, w, g);
  Model model(g);
  const std::vector<BatchEntry> issued = run_schedule(scheduler, model, 6);

  EXPECT_EQ(scheduler.counts().completed, 2);
  EXPECT_EQ(scheduler.counts().restore_fallbacks, 1);
  EXPECT_EQ(scheduler.counts().restored_tokens, 0);
  std::size_t restore = issued.size();
  for (std::size_t i = 0; i < issued.size(); ++i)
    if (issued[i].kind == kind_restore) restore = i;
  ASSERT_LT(restore, issued.size());
  bool reset_after = false;
  for (std::size_t i = restore + 1; i < issued.size(); ++i) reset_after |= issued[i].kind == kind_reset;
  EXPECT_TRUE(reset_after);
}

TEST(SimFaults, TheFirstCommandWithAPartialPageOfItsKind) {
  Batch batch;
  batch.push_back({Command::reset(0, 1), kind_reset, 0});
  batch.push_back({Command::snapshot(1, 2, 9, 8), kind_snapshot, 1});   // endpoint on a page boundary: no partial page
  batch.push_back({Command::restore(2, 10, 3, 6), kind_restore, 2});    // partial page: logical page 1
  batch.push_back({Command::snapshot(3, 4, 11, 7), kind_snapshot, 3});  // partial page: logical page 1
  const std::vector<Fault> faults{{1, 0, -1}, {0, 0, kind_snapshot}, {1, 5, -1}};
  SimConfig cfg = small_config();
  cfg.capacity = 4;
  const Geometry g = make_geometry(cfg, 26, Comm{});  // 4 tokens a page
  std::vector<std::int32_t> tables(static_cast<std::size_t>(4 * g.table_width), -1);
  tables[2 * g.table_width + 1] = 13;
  tables[3 * g.table_width + 1] = 17;
  const HostStateRows rows = g.initial_state_rows();

  FaultInjector on_rank_1(faults, 1, g);
  const StepFaults step0 = on_rank_1.inject(0, batch, tables, rows);
  ASSERT_EQ(step0.hits.size(), 2u);
  EXPECT_EQ(step0.hits[0].rank, 1);
  EXPECT_EQ(step0.hits[0].command, 2);
  EXPECT_EQ(step0.hits[1].rank, 0);
  EXPECT_EQ(step0.hits[1].command, 3);
  ASSERT_EQ(step0.patches.size(), 2u);  // every rank's changes: each rank makes its own
  EXPECT_EQ(step0.patches[0].target, FaultPatch::page);
  EXPECT_EQ(step0.patches[0].index, 2);
  EXPECT_EQ(step0.patches[0].at, 1);
  EXPECT_EQ(step0.patches[0].value, -1);
  EXPECT_EQ(step0.patches[0].original, 13);
  EXPECT_EQ(step0.patches[1].rank, 0);
  EXPECT_EQ(step0.patches[1].original, 17);
  EXPECT_EQ(on_rank_1.injected(), 2);
  EXPECT_EQ(on_rank_1.missed(), 1);  // the step-5 fault is not due yet
  on_rank_1.record(step0, {0, 0, 6, 6});
  EXPECT_EQ(on_rank_1.refused(), 2);
  EXPECT_EQ(on_rank_1.faults()[0].code, 6);

  FaultInjector on_rank_0(faults, 0, g);
  const StepFaults seen_by_0 = on_rank_0.inject(0, batch, tables, rows);
  ASSERT_EQ(seen_by_0.hits.size(), 2u);  // every rank knows every fault
  EXPECT_EQ(seen_by_0.hits[0].command, 2);
  EXPECT_EQ(seen_by_0.hits[1].command, 3);
  on_rank_0.record(seen_by_0, {0, 0, 6, 0});  // a command that applied: its fault was not refused
  EXPECT_EQ(on_rank_0.refused(), 1);
  EXPECT_FALSE(on_rank_0.faults()[1].refused);
}

// The verifier's wiring: the model's writes on the replica, then the oracle's
// codes and writes for a snapshot of the live row.
TEST(SimReplica, TheOracleSnapshotsTheLiveRowAndItsPartialPage) {
  SimConfig cfg = small_config();
  cfg.capacity = 2;
  const Geometry g = make_geometry(cfg, 26, Comm{});
  HostReplica replica(g);
  Model model(g);
  std::vector<std::int32_t> tables(static_cast<std::size_t>(g.capacity * g.table_width), -1);
  std::vector<std::int32_t> draft_tables = tables;
  tables[0 * g.table_width + 0] = 5;
  tables[0 * g.table_width + 1] = 2;
  draft_tables[0 * g.table_width + 0] = 7;
  draft_tables[0 * g.table_width + 1] = 1;
  const std::vector<std::int32_t> pages{5, 2}, draft_pages{7, 1};
  model.begin_step(0);
  for (std::int64_t p = 0; p < 6; ++p) model.write_token(p, 100 + p, 99 + p, pages, draft_pages);
  model.write_row(0, g.home_row(0), 42, 6);
  replica.run_jobs(model.jobs());

  const std::int64_t row = g.first_snapshot_row();
  const test::OracleCommandRows rows(
      {Command::snapshot(0, g.home_row(0), row, 6), Command::snapshot(0, g.home_row(0), row + 1, 5)});
  test::OracleCommands one = rows.view();
  one.num_ops = 1;
  test::OracleMemory memory = replica.memory(tables.data(), draft_tables.data());
  const std::vector<std::int32_t> codes = replica.oracle().validate(one, memory);
  ASSERT_EQ(codes[0], 0);
  std::vector<test::CachePage> written;
  replica.oracle().apply(one, codes, memory, &written);
  EXPECT_TRUE(written.empty());  // a snapshot reads the caches

  const std::uint8_t* live = replica.pool().data() + g.home_row(0) * g.row_bytes;
  const std::uint8_t* saved = replica.pool().data() + row * g.row_bytes;
  EXPECT_EQ(std::memcmp(saved + g.ssm_offset, live + g.ssm_offset, static_cast<std::size_t>(g.ssm.size())), 0);
  const std::int64_t kv1 = g.layout.region("kv1").offset;
  EXPECT_EQ(std::memcmp(saved + kv1, replica.cache(1).data() + 2 * g.kv_page_bytes,
                        static_cast<std::size_t>(g.kv_page_bytes)),
            0);
  for (std::int64_t b = 0; b < g.scratch_bytes; ++b) EXPECT_EQ(saved[g.scratch_offset + b], 0) << "scratch byte " << b;

  // The second command claims 5 consumed tokens where the request holds 6.
  test::OracleCommands wrong_end = one;
  wrong_end.request_slots += 1;
  wrong_end.source_slots += 1;
  wrong_end.destination_slots += 1;
  wrong_end.operation += 1;
  wrong_end.expected_consumed += 1;
  wrong_end.prefix_keys += 1;
  EXPECT_EQ(replica.oracle().validate(wrong_end, memory)[0], 3);
}

PrefixKey key(std::int64_t len) { return {len, static_cast<std::uint64_t>(len) * 7, static_cast<std::uint64_t>(len)}; }

// Reserve and publish `k` (its row must be ready at once).
std::int64_t store(PrefixCache& cache, std::int64_t k) {
  const auto row = cache.reserve(key(k));
  EXPECT_TRUE(row.has_value());
  cache.publish(key(k));
  return row.value_or(-1);
}

TEST(SimPrefixCache, WithoutAHostTierTheLeastRecentlyUsedEntryIsEvicted) {
  PrefixCache cache(10, 2);  // device rows 10, 11
  const std::int64_t r1 = store(cache, 1);
  store(cache, 2);
  const auto row = cache.reserve(key(3));
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(*row, r1);
  EXPECT_TRUE(cache.ready(*row));
  EXPECT_FALSE(cache.lookup(key(1)).has_value());
  EXPECT_EQ(cache.evictions(), 1);
  EXPECT_TRUE(cache.take_moves(64).empty());
}

TEST(SimPrefixCache, ADemotedRowIsWrittenOnlyAfterItsOffloadApplied) {
  PrefixCache cache(10, 2, 1);  // device rows 10, 11; host row 1
  const std::int64_t r1 = store(cache, 1);
  store(cache, 2);
  const auto row = cache.reserve(key(3));
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(*row, r1);
  EXPECT_FALSE(cache.ready(r1));  // the offload of key 1 reads it first
  const auto during = cache.lookup(key(1));
  ASSERT_TRUE(during.has_value());  // still readable in its device row meanwhile
  EXPECT_FALSE(during->host);
  const auto moves = cache.take_moves(64);
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_TRUE(moves[0].offload);
  EXPECT_EQ(moves[0].src, r1);
  EXPECT_EQ(moves[0].dst, 1);
  EXPECT_EQ(moves[0].key.len, 1);
  cache.moved(moves[0], true);
  EXPECT_TRUE(cache.ready(r1));
  const auto after = cache.lookup(key(1));
  ASSERT_TRUE(after.has_value());
  EXPECT_TRUE(after->host);
  EXPECT_EQ(after->row, 1);
  EXPECT_EQ(cache.demotions(), 1);
  EXPECT_EQ(cache.evictions(), 0);
}

TEST(SimPrefixCache, TheSecondHostHitPromotesByAnOnload) {
  PrefixCache cache(10, 1, 1);  // device row 10; host row 1
  auto settle = [&] {
    for (const auto& m : cache.take_moves(64)) cache.moved(m, true);
  };
  store(cache, 1);
  cache.reserve(key(2));  // demotes key 1 into host row 1
  settle();
  cache.publish(key(2));
  EXPECT_TRUE(cache.lookup(key(1))->host);  // a first host hit is served in place
  EXPECT_EQ(cache.promotions(), 0);
  const auto second = cache.lookup(key(1));
  ASSERT_TRUE(second.has_value());
  EXPECT_TRUE(second->host);  // this step's restore still reads the host row
  EXPECT_EQ(cache.promotions(), 1);
  // Key 2 is the device victim, but key 1 holds the only host row and is pinned
  // while promoted: key 2 is evicted, its row ready at once, the onload issued.
  EXPECT_EQ(cache.evictions(), 1);
  const auto moves = cache.take_moves(64);
  ASSERT_EQ(moves.size(), 1u);
  EXPECT_FALSE(moves[0].offload);
  EXPECT_EQ(moves[0].src, 1);
  EXPECT_EQ(moves[0].dst, 10);
  cache.moved(moves[0], true);
  const auto back = cache.lookup(key(1));
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->host);
  EXPECT_EQ(back->row, 10);
  EXPECT_EQ(cache.host_published(), 0);
  // Host row 1 is free again: the next demotion takes it without a host eviction.
  cache.reserve(key(3));
  settle();
  EXPECT_EQ(cache.host_evictions(), 0);
  EXPECT_TRUE(cache.lookup(key(1))->host);
}

TEST(SimPrefixCache, AFullHostTierEvictsItsLeastRecentlyUsedEntry) {
  PrefixCache cache(10, 1, 1);
  auto settle = [&] {
    for (const auto& m : cache.take_moves(64)) cache.moved(m, true);
  };
  store(cache, 1);
  cache.reserve(key(2));
  settle();
  cache.publish(key(2));
  cache.reserve(key(3));  // demotes key 2 into key 1's host row: key 1 is gone
  EXPECT_EQ(cache.host_evictions(), 1);
  EXPECT_FALSE(cache.lookup(key(1)).has_value());
  settle();
  EXPECT_TRUE(cache.lookup(key(2))->host);
}

TEST(SimPrefixCache, MovesWaitForRoomInTheBatch) {
  PrefixCache cache(10, 2, 4);
  store(cache, 1);
  store(cache, 2);
  cache.reserve(key(3));
  cache.reserve(key(4));
  EXPECT_EQ(cache.take_moves(1).size(), 1u);
  EXPECT_EQ(cache.take_moves(0).size(), 0u);
  EXPECT_EQ(cache.take_moves(8).size(), 1u);
}

}  // namespace
}  // namespace statexfer::sim
