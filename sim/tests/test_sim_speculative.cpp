// Speculative decoding's parts in the simulator, without a device: the seeded
// acceptance model, the scheduler's verifies and commits (one command per slot
// and batch, endpoints, the remap mirror, the completion snapshot after the
// last commit, the fallback of a refused commit), the commit faults' choice and
// changes, and the replica's oracle on commits.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <statexfer/commands.hpp>
#include <test_common/oracle_commands.hpp>

#include "batch.hpp"
#include "faults.hpp"
#include "geometry.hpp"
#include "model.hpp"
#include "replica.hpp"
#include "scheduler.hpp"
#include "sim_config.hpp"
#include "speculative.hpp"
#include "workload.hpp"

namespace statexfer::sim {
namespace {

SimConfig spec_config(std::int64_t k, bool copy) {
  SimConfig cfg;
  cfg.capacity = 2;
  cfg.snapshot_rows = 4;
  cfg.page_tokens = 4;
  cfg.row_bytes = 256;
  cfg.kv_planes = 1;
  cfg.kv_token_bytes = 8;
  cfg.draft_planes = 1;
  cfg.draft_token_bytes = 4;
  cfg.scratch_bytes = 16;
  cfg.spec_tokens = k;
  cfg.commit_copy = copy;
  cfg.accept_rate = 0.6;
  return cfg;
}

// Two requests on their own prefix documents, 30 tokens to decode each.
Workload decode_workload() {
  Workload w;
  for (std::uint64_t seed : {21u, 22u}) {
    RequestSpec r;
    r.prefix = static_cast<std::int64_t>(seed);
    r.prefix_len = 9;
    r.input_len = 3;
    r.output_len = 30;
    r.seed = seed;
    w.requests.push_back(r);
  }
  w.finish();
  return w;
}

TEST(SimSpeculative, AcceptanceIsSeededBoundedAndGeometric) {
  EXPECT_EQ(accepted_drafts(1, 0.7, 5, 100, 4), accepted_drafts(1, 0.7, 5, 100, 4));
  std::int64_t sum = 0, differ = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const std::int32_t a = accepted_drafts(3, 0.5, i % 97, i, 3);
    ASSERT_GE(a, 0);
    ASSERT_LE(a, 3);
    sum += a;
    differ += a != accepted_drafts(4, 0.5, i % 97, i, 3) ? 1 : 0;  // another seed, another sampler
    EXPECT_EQ(accepted_drafts(3, 0.0, i, i, 3), 0);
    EXPECT_EQ(accepted_drafts(3, 1.0, i, i, 3), 3);
    EXPECT_EQ(accepted_drafts(3, 0.9, i, i, 0), 0);
  }
  // E[a] = 0.5 + 0.25 + 0.125 for three drafts at rate 0.5.
  EXPECT_NEAR(static_cast<double>(sum) / n, 0.875, 0.01);
  EXPECT_GT(differ, n / 4);
  EXPECT_NE(command_key({5, 0, 0}), 0);
  EXPECT_NE(command_key({5, 1, 2}), command_key({5, 1, 3}));
}

TEST(SimSpeculative, GeometryAddsPositionRowsAndAKey) {
  const Geometry plain = make_geometry(spec_config(0, false), 50, Comm{});
  EXPECT_EQ(plain.rows, 1 + 2 + 4);
  EXPECT_EQ(plain.key_offset, -1);
  const Geometry g = make_geometry(spec_config(3, false), 50, Comm{});
  EXPECT_EQ(g.rows, 1 + 2 * (1 + 3) + 4);
  EXPECT_EQ(g.first_snapshot_row(), 9);
  EXPECT_EQ(g.position_row(1, 3), 8);
  EXPECT_GE(g.key_offset, 0);
  EXPECT_EQ(g.key_offset % 8, 0);
  const HostStateRows rows = g.initial_state_rows();
  EXPECT_EQ(rows.capacity(), 2);
  EXPECT_EQ(rows.live(1), 2);  // slot 1's live row
  EXPECT_EQ(rows(1, 1), 6);    // and its position rows
  EXPECT_EQ(rows(1, 3), 8);
  EXPECT_EQ(rows(1, 4), 0);  // columns past K unused
  EXPECT_EQ(rows.data()[HostStateRows::columns], 2) << "row-major, as the oracle reads it";
  SimConfig bad = spec_config(8, false);
  EXPECT_THROW(make_geometry(bad, 50, Comm{}), std::invalid_argument);
}

// Runs the scheduler to completion; `code_of` gives each command's code.
template <class Codes>
std::vector<Batch> run(Scheduler& scheduler, Model& model, Codes code_of) {
  std::vector<Batch> batches;
  for (std::int64_t step = 0; step < 400 && scheduler.counts().completed < 2; ++step) {
    const Batch& batch = scheduler.plan_batch();
    std::vector<std::int32_t> codes;
    for (const BatchEntry& b : batch) {
      codes.push_back(code_of(b));
      // Every command names the live row the mirror holds now (a remap moved it).
      if (b.kind == kind_snapshot) {
        EXPECT_EQ(b.cmd.source, scheduler.live_row(b.cmd.request_slot));
      }
      if (b.kind == kind_restore || b.kind == kind_reset) {
        EXPECT_EQ(b.cmd.destination, scheduler.live_row(b.cmd.request_slot));
      }
    }
    batches.push_back(batch);
    scheduler.take_results(codes);
    model.begin_step(step);
    scheduler.advance_requests(model);
  }
  return batches;
}

TEST(SimSpeculative, EveryVerifyIsCommittedInTheNextBatchAndNeverBesideASnapshot) {
  for (const bool copy : {false, true}) {
    SCOPED_TRACE(copy ? "copy" : "remap");
    const SimConfig cfg = spec_config(3, copy);
    const Workload w = decode_workload();
    const Geometry g = make_geometry(cfg, w.max_total, Comm{});
    Scheduler scheduler(cfg, w, g);
    Model model(g);
    std::vector<std::int64_t> endpoint(2, -1);  // each slot's committed endpoint, as the commits say
    bool swapped = false;
    const auto batches = run(scheduler, model, [](const BatchEntry&) { return 0; });
    for (const Batch& batch : batches) {
      std::set<std::int64_t> slots;
      for (const BatchEntry& b : batch) {
        if (b.cmd.request_slot >= 0) {
          EXPECT_TRUE(slots.insert(b.cmd.request_slot).second) << "two commands of slot " << b.cmd.request_slot;
        }
        if (b.kind != kind_commit) continue;
        EXPECT_EQ(b.cmd.operation, statexfer::op_commit);
        EXPECT_EQ(b.cmd.source, -1);
        EXPECT_EQ(b.cmd.destination, -1);
        EXPECT_GE(b.accepted, 0);
        EXPECT_LE(b.accepted, b.drafts);
        EXPECT_LE(b.drafts, 3);
        auto& e = endpoint[static_cast<std::size_t>(b.cmd.request_slot)];
        if (e >= 0) {
          EXPECT_EQ(b.cmd.expected_consumed, e + 1) << "a commit names the live row's endpoint after the verify";
        }
        e = b.cmd.expected_consumed + b.accepted;  // it applied
      }
      for (const BatchEntry& b : batch)
        if (b.kind == kind_snapshot && b.cmd.expected_consumed == w.requests[0].total_len) {
          // The completion snapshot: after the last commit, at the committed end.
          EXPECT_EQ(endpoint[static_cast<std::size_t>(b.cmd.request_slot)], b.cmd.expected_consumed);
        }
    }
    for (std::int64_t s = 0; s < 2; ++s) {
      // The mirror is a permutation of the slot's own rows.
      std::vector<std::int64_t> mine, home{g.home_row(s)};
      for (std::int64_t j = 0; j <= 3; ++j) mine.push_back(scheduler.state_rows()(s, j));
      for (std::int64_t j = 1; j <= 3; ++j) home.push_back(g.position_row(s, j));
      swapped |= mine != home;
      std::sort(mine.begin(), mine.end());
      std::sort(home.begin(), home.end());
      EXPECT_EQ(mine, home);
    }
    EXPECT_EQ(swapped, !copy) << "remapping commits move the live row; copying ones never";
    const SchedulerCounts& n = scheduler.counts();
    EXPECT_EQ(n.completed, 2);
    EXPECT_EQ(n.decode_tokens, 2 * 30);
    EXPECT_EQ(n.committed_tokens, 2 * 30);
    EXPECT_EQ(n.committed_tokens, n.verifies + n.accepted_drafts);
    EXPECT_GT(n.accepted_drafts, 0);
    EXPECT_LT(n.verifies, 2 * 30);
    EXPECT_EQ(n.verified_tokens, n.verifies + n.drafted_tokens);
    EXPECT_EQ(n.completion_snapshots, 2);
  }
}

TEST(SimSpeculative, ARefusedCommitFallsBackToTheLiveRowsEndpoint) {
  const SimConfig cfg = spec_config(3, false);
  const Workload w = decode_workload();
  const Geometry g = make_geometry(cfg, w.max_total, Comm{});
  Scheduler scheduler(cfg, w, g);
  Model model(g);
  int refused = 0;
  std::int64_t refused_end = -1, next_end = -1;
  const auto batches = run(scheduler, model, [&](const BatchEntry& b) {
    if (b.kind != kind_commit) return 0;
    if (refused_end >= 0 && next_end < 0 && b.cmd.request_slot == 0) next_end = b.cmd.expected_consumed;
    if (refused == 0 && b.cmd.request_slot == 0 && b.accepted > 0) {
      ++refused;
      refused_end = b.cmd.expected_consumed;
      return 3;
    }
    return 0;
  });
  ASSERT_EQ(refused, 1);
  EXPECT_EQ(next_end, refused_end + 1) << "the request goes on from n + 1";
  EXPECT_EQ(scheduler.counts().commit_fallbacks, 1);
  EXPECT_EQ(scheduler.counts().completed, 2);
  EXPECT_EQ(scheduler.counts().decode_tokens, 2 * 30);
}

TEST(SimSpeculative, FaultKindsParseAndName) {
  const std::vector<std::pair<std::string, FaultType>> kinds{{"stale-position", FaultType::stale_position},
                                                             {"accepted-range", FaultType::accepted_range},
                                                             {"accepted-disagree", FaultType::accepted_disagree},
                                                             {"recycled-key", FaultType::recycled_key},
                                                             {"host-restore", FaultType::page},
                                                             {"any", FaultType::page}};
  for (const auto& [name, type] : kinds) {
    const Fault f = parse_fault("1:40:" + name);
    EXPECT_EQ(f.rank, 1);
    EXPECT_EQ(f.step, 40);
    EXPECT_EQ(f.type, type) << name;
    EXPECT_EQ(fault_kind_name(f), name);
  }
  for (const char* bad : {"1:40:stale", "1", "-1:4", "1:4:any:5"}) {
    try {
      parse_fault(bad);
      ADD_FAILURE() << bad << " parsed";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("got '") + bad + "'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("recycled-key"), std::string::npos) << e.what();
    }
  }
}

TEST(SimSpeculative, CommitFaultsChangeWhatTheirRankSees) {
  const SimConfig cfg = spec_config(3, false);
  const Geometry g = make_geometry(cfg, 50, Comm{});
  HostStateRows rows = g.initial_state_rows();
  std::swap(rows(1, 0), rows(1, 2));  // slot 1 remapped once
  const std::vector<std::int32_t> tables(static_cast<std::size_t>(2 * g.table_width), 0);
  Batch batch;
  batch.push_back({Command::restore(0, 10, g.home_row(0), 9, 77), kind_restore, 0});
  batch.push_back({Command::commit(1, 12), kind_commit, 1, 2, 1});
  batch.push_back({Command::offload(10, 3, 9, 77), kind_offload, 0});
  std::vector<Fault> faults(4);
  faults[0].type = FaultType::stale_position;
  faults[1].type = FaultType::recycled_key;
  faults[1].rank = 1;
  faults[2].type = FaultType::accepted_disagree;
  faults[3].type = FaultType::accepted_range;
  FaultInjector injector(faults, 0, g);
  const StepFaults f = injector.inject(0, batch, tables, rows);
  ASSERT_EQ(f.patches.size(), 2u) << "one commit: the first commit fault takes it, the other two wait";
  EXPECT_EQ(f.patches[0].target, FaultPatch::pool_word);
  EXPECT_EQ(f.patches[0].index, rows(1, 1));  // the row accepting one draft selects
  EXPECT_EQ(f.patches[0].at, g.consumed_offset);
  EXPECT_EQ(f.patches[0].original, 13);
  EXPECT_EQ(f.patches[0].value, 12);
  EXPECT_EQ(f.patches[1].target, FaultPatch::pool_word);
  EXPECT_EQ(f.patches[1].rank, 1);
  EXPECT_EQ(f.patches[1].index, 10);
  EXPECT_EQ(f.patches[1].at, g.key_offset);
  EXPECT_EQ(f.patches[1].original, 77);
  EXPECT_NE(f.patches[1].value, 77);
  EXPECT_TRUE(f.hit(0) && f.hit(1) && f.hit(2)) << "the offload reads the recycled row too";
  EXPECT_EQ(injector.faults()[1].commands, 2);
  EXPECT_EQ(injector.missed(), 2);

  const StepFaults later = injector.inject(1, batch, tables, rows);
  ASSERT_EQ(later.patches.size(), 1u);
  EXPECT_EQ(later.patches[0].target, FaultPatch::accepted);
  EXPECT_EQ(later.patches[0].index, 1);
  EXPECT_EQ(later.patches[0].value, 2) << "another valid count: within the verify's drafts";
  const StepFaults last = injector.inject(2, batch, tables, rows);
  ASSERT_EQ(last.patches.size(), 1u);
  EXPECT_EQ(last.patches[0].value, 4) << "K + 1";
  EXPECT_EQ(injector.missed(), 0);
}

// The replica's oracle on a commit: the model's verify rows, then the commit's
// code and what each move writes (the remap: the replica's state rows).
TEST(SimSpeculative, TheReplicasOracleCommitsTheAcceptedPosition) {
  for (const bool copy : {false, true}) {
    SCOPED_TRACE(copy ? "copy" : "remap");
    const Geometry g = make_geometry(spec_config(2, copy), 50, Comm{});
    HostReplica replica(g);
    Model model(g);
    model.begin_step(0);
    for (std::int64_t j = 0; j <= 2; ++j) {
      model.write_state(g.initial_state_rows()(1, j), 1000 + j, 0);
      model.stamp_consumed(g.initial_state_rows()(1, j), 7 + j);
    }
    replica.run_jobs(model.jobs());
    replica.set_accepted({0, 2});
    const std::vector<std::int32_t> tables(static_cast<std::size_t>(2 * g.table_width), 0);
    const test::OracleCommandRows rows({Command::commit(1, 7)});
    const test::OracleCommands commit = rows.view();
    test::OracleMemory memory = replica.memory(tables.data(), tables.data());
    std::vector<std::int32_t> positions;
    const std::vector<std::int32_t> codes = replica.oracle().validate(commit, memory, &positions);
    ASSERT_EQ(codes[0], 0);
    EXPECT_EQ(positions[0], 2);
    const std::vector<std::uint8_t> before = replica.pool();
    replica.oracle().apply(commit, codes, memory);
    const std::int64_t live = g.home_row(1), accepted = g.position_row(1, 2), RB = g.row_bytes;
    if (copy) {
      EXPECT_EQ(replica.state_rows().live(1), live);
      EXPECT_EQ(std::memcmp(replica.pool().data() + live * RB + g.ssm_offset,
                            before.data() + accepted * RB + g.ssm_offset, static_cast<std::size_t>(g.ssm.size())),
                0);
    } else {
      EXPECT_EQ(replica.state_rows().live(1), accepted);
      EXPECT_EQ(replica.state_rows()(1, 2), live);
      EXPECT_EQ(replica.pool(), before) << "a remap moves no byte";
    }
    // Accepting one draft where position 1 holds endpoint 8, as it should, but
    // with an expected endpoint one short: a stale state (code 3).
    const test::OracleCommandRows short_rows({Command::commit(1, 6)});
    replica.set_accepted({0, 1});
    EXPECT_EQ(replica.oracle().validate(short_rows.view(), replica.memory(tables.data(), tables.data()))[0], 3);
  }
}

// The saved state of every snapshot that applied, by (endpoint, prefix key):
// its recurrent state and saved KV and draft pages, as the oracle's batches
// and the model's writes leave them on a host replica (no device).
// The bytes of a snapshot row at endpoint `e` that hold its prefix: the
// recurrent state, and of the saved pages only the tokens before the endpoint
// (the rest of a partial page is whatever its physical page held before, which
// differs between schedules): per KV plane the first e % PT tokens, per draft
// plane the entries of parts 0 and 1 below e - 1 (the draft model lags one
// token: its entry q is written with token q + 1).
std::vector<std::pair<std::string, std::pair<std::int64_t, std::int64_t>>> prefix_bytes(const Geometry& g,
                                                                                        std::int64_t e) {
  std::vector<std::pair<std::string, std::pair<std::int64_t, std::int64_t>>> out;
  const std::int64_t pt = g.page_tokens, tail = e % pt;
  out.push_back({"ssm", {0, g.ssm.size()}});
  out.push_back({"conv", {0, g.conv.size()}});
  for (std::int64_t i = 0; i < g.kv_planes && tail != 0; ++i)
    out.push_back({"kv" + std::to_string(i), {0, tail * g.kv.size()}});
  for (std::int64_t i = 0; i < g.draft_planes; ++i) {
    const std::string name = "draft" + std::to_string(i);
    if (e > 1 && e / pt >= 1) out.push_back({name, {0, (tail == 0 ? pt - 1 : pt) * g.draft.size()}});
    if (tail >= 2) out.push_back({name, {g.draft_page_bytes, g.draft_page_bytes + (tail - 1) * g.draft.size()}});
  }
  return out;
}

std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::uint8_t>> snapshots_of(const SimConfig& cfg,
                                                                                        const Workload& w) {
  const Geometry g = make_geometry(cfg, w.max_total, Comm{});
  Scheduler scheduler(cfg, w, g);
  Model model(g);
  HostReplica replica(g);
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::uint8_t>> saved;
  const auto total = static_cast<std::int64_t>(w.requests.size());
  for (std::int64_t step = 0; step < 5000 && scheduler.counts().completed < total; ++step) {
    const Batch& batch = scheduler.plan_batch();
    test::OracleCommandRows rows;
    for (const BatchEntry& b : batch) rows.push_back(b.cmd);
    const test::OracleCommands commands = rows.view();
    test::OracleMemory memory = replica.memory(scheduler.page_tables().data(), scheduler.draft_tables().data());
    const std::vector<std::int32_t> codes = replica.oracle().validate(commands, memory);
    replica.oracle().apply(commands, codes, memory);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      EXPECT_EQ(codes[i], 0) << "step " << step << " command " << i << " (" << kind_name(batch[i].kind) << ")";
      if (batch[i].kind != kind_snapshot || codes[i] != 0) continue;
      std::vector<std::uint8_t> bytes;
      for (const auto& [name, range] : prefix_bytes(g, batch[i].cmd.expected_consumed)) {
        const std::uint8_t* row =
            replica.pool().data() + batch[i].cmd.destination * g.row_bytes + g.layout.region(name).offset;
        bytes.insert(bytes.end(), row + range.first, row + range.second);
      }
      saved[{batch[i].cmd.expected_consumed, batch[i].cmd.prefix_key}] = bytes;
    }
    scheduler.take_results(std::vector<std::int32_t>(codes.begin(), codes.begin() + batch.size()));
    model.begin_step(step);
    scheduler.advance_requests(model);
    replica.run_jobs(model.jobs());
    replica.set_accepted(model.accepted());
  }
  EXPECT_EQ(scheduler.counts().completed, total);
  return saved;
}

// A verify's rejected drafts leave other tokens' KV and states behind, the
// commit picks the accepted one, and the request's own tokens overwrite the
// rest: every prefix snapshotted both with and without speculative decoding
// (either move, either --model-writes) saves the same state and pages.
TEST(SimSpeculative, SnapshotsSaveWhatPlainDecodingSaves) {
  SyntheticOptions o;
  o.requests = 80;
  o.seed = 5;
  o.prefixes = 4;
  o.prefix_len = {10, 60};
  o.input_len = {1, 12};
  o.output_len = {5, 40};
  o.followup = 0.5;
  const Workload w = synthesize(o);
  SimConfig plain = spec_config(0, false);
  plain.capacity = 8;
  plain.snapshot_rows = 16;
  const auto want = snapshots_of(plain, w);
  for (const bool all : {false, true})
    for (const bool copy : {false, true}) {
      SCOPED_TRACE(std::string(copy ? "copy" : "remap") + (all ? ", model writes all" : ""));
      SimConfig spec = plain;
      spec.spec_tokens = 4;
      spec.commit_copy = copy;
      spec.model_writes_all = all;
      const auto got = snapshots_of(spec, w);
      std::int64_t compared = 0;
      for (const auto& [at, bytes] : got) {
        const auto it = want.find(at);
        if (it == want.end()) continue;
        ++compared;
        EXPECT_EQ(bytes, it->second) << "the snapshot at endpoint " << at.first << " differs";
      }
      EXPECT_GT(compared, 60) << "too few prefixes snapshotted in both runs";
    }
}

}  // namespace
}  // namespace statexfer::sim
