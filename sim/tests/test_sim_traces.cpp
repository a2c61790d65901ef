// Mooncake-format traces, snapshot policies and the attention-only bound, on
// files the tests write themselves (and the hand-checked mooncake-small.jsonl).

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bound.hpp"
#include "policy.hpp"
#include "traces.hpp"
#include "workload.hpp"

#ifndef STATEXFER_SIM_TEST_DATA
#error "STATEXFER_SIM_TEST_DATA: the folder of mooncake-small.jsonl"
#endif

namespace statexfer::sim {
namespace {

const std::string small_trace = std::string(STATEXFER_SIM_TEST_DATA) + "/mooncake-small.jsonl";

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

// The message of read_trace's error on a file whose third line is `bad`.
std::string error_on_third_line(const std::string& bad, std::int64_t block_tokens = 16) {
  const std::string path =
      write_file("bad.jsonl",
                 "{\"timestamp\": 0, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [1, 2]}\n"
                 "# a comment\n" +
                     bad +
                     "\n{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 1, "
                     "\"hash_ids\": [7]}\n");
  try {
    read_trace(path, TraceFormat::mooncake, block_tokens);
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path + ":3: "), std::string::npos) << what;
    return what;
  }
  ADD_FAILURE() << "no error for: " << bad;
  return "";
}

TEST(SimMooncake, ReadsTheHandCheckedFileInArrivalOrder) {
  const Workload w = read_trace(small_trace, TraceFormat::automatic, 16);
  EXPECT_EQ(w.format, "mooncake");
  EXPECT_TRUE(w.hashed);
  EXPECT_TRUE(w.timed);
  ASSERT_EQ(w.requests.size(), 7u);
  EXPECT_EQ(w.requests[4].prompt_len, 64);
  EXPECT_EQ(w.requests[4].total_len, 67);
  EXPECT_EQ(w.requests[4].arrival_ms, 4000);
  EXPECT_EQ(w.block_id(4, 2), 4);
  EXPECT_EQ(w.block_id(4, 4), -1);
}

TEST(SimMooncake, SortsByTimestampStably) {
  const std::string path = write_file(
      "unsorted.jsonl",
      "{\"timestamp\": 5, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [1]}\n"
      "{\"timestamp\": 2.5, \"input_length\": 4, \"output_length\": 1, \"hash_ids\": [2]}\n"
      "{\"timestamp\": 5, \"input_length\": 6, \"output_length\": 1, \"hash_ids\": [3], \"extra\": \"ignored\"}\n");
  const Workload w = read_trace(path, TraceFormat::automatic, 16);
  ASSERT_EQ(w.requests.size(), 3u);
  EXPECT_EQ(w.requests[0].input_len, 4);
  EXPECT_EQ(w.requests[1].input_len, 3);
  EXPECT_EQ(w.requests[2].input_len, 6);
  EXPECT_EQ(w.requests[0].line, 2);
}

TEST(SimMooncake, RefusesBadLinesNamingTheLine) {
  EXPECT_NE(error_on_third_line("{\"timestamp\": 1, \"input_length\": 9").find("not JSON"), std::string::npos);
  EXPECT_NE(error_on_third_line("[1, 2]").find("JSON object"), std::string::npos);
  EXPECT_NE(
      error_on_third_line("{\"timestamp\": 1, \"input_length\": 9, \"output_length\": 1}").find("missing 'hash_ids'"),
      std::string::npos);
  EXPECT_NE(
      error_on_third_line("{\"input_length\": 9, \"output_length\": 1, \"hash_ids\": []}").find("missing 'timestamp'"),
      std::string::npos);
  EXPECT_NE(
      error_on_third_line("{\"timestamp\": 1, \"output_length\": 1, \"hash_ids\": []}").find("missing 'input_length'"),
      std::string::npos);
  EXPECT_NE(error_on_third_line("{\"timestamp\": 1, \"input_length\": -5, \"output_length\": 1, \"hash_ids\": []}")
                .find("'input_length' must be from 1"),
            std::string::npos);
  EXPECT_NE(error_on_third_line("{\"timestamp\": 1, \"input_length\": 5, \"output_length\": -1, \"hash_ids\": []}")
                .find("'output_length' must be from 1"),
            std::string::npos);
  EXPECT_NE(error_on_third_line("{\"timestamp\": -1, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": []}")
                .find("'timestamp' must be a number"),
            std::string::npos);
  EXPECT_NE(error_on_third_line("{\"timestamp\": 1, \"input_length\": 5.5, \"output_length\": 1, \"hash_ids\": []}")
                .find("'input_length' must be an integer"),
            std::string::npos);
  // 20 tokens are two blocks of 16: a third id is one too many.
  EXPECT_NE(
      error_on_third_line("{\"timestamp\": 1, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}")
          .find("3 hash ids, but 'input_length' 20 needs at most 2 blocks of 16 tokens"),
      std::string::npos);
  EXPECT_NE(error_on_third_line("{\"timestamp\": 1, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [1, -2]}")
                .find("hash_ids[1] must be an integer >= 0, got -2"),
            std::string::npos);
  // Id 2 is line 1's second block, after id 1: here it is a first block.
  EXPECT_NE(error_on_third_line("{\"timestamp\": 1, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [2]}")
                .find("equal ids must be equal prefixes"),
            std::string::npos);
  try {
    read_trace(small_trace, TraceFormat::automatic, 0);
    ADD_FAILURE() << "no error for --trace-block-tokens 0";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--trace-block-tokens"), std::string::npos) << e.what();
  }
}

// Equal ids give equal tokens: two prompts sharing their first blocks have equal
// keys up to the end of the shared blocks and different keys after.
TEST(SimMooncake, SharedHashIdsGiveEqualPrefixKeys) {
  const Workload w = read_trace(small_trace, TraceFormat::automatic, 16);
  auto key_at = [&](std::int64_t request, std::int64_t len) {
    TokenStream t(w, request);
    t.advance(len);
    return t.key();
  };
  EXPECT_EQ(key_at(0, 32), key_at(1, 32));       // ids 1, 2
  EXPECT_FALSE(key_at(0, 33) == key_at(1, 33));  // ids 3 and 4
  EXPECT_EQ(key_at(0, 40), key_at(6, 40));       // request 6 extends request 0's partial block 3
  EXPECT_EQ(key_at(0, 40), key_at(2, 40));       // the same prompt
  EXPECT_FALSE(key_at(0, 44) == key_at(2, 44));  // outputs are each request's own
  EXPECT_FALSE(key_at(0, 16) == key_at(3, 16));  // ids 1 and 6
  // Advancing in steps or at once ends at the same key.
  TokenStream steps(w, 4);
  for (int k = 0; k < 64; ++k) steps.advance();
  EXPECT_EQ(steps.key(), key_at(4, 64));
}

TEST(SimPolicy, ParsesTheFourPolicies) {
  EXPECT_EQ(SnapshotPolicy::parse("ends").name(), "ends");
  EXPECT_EQ(SnapshotPolicy::parse("all").name(), "all");
  EXPECT_EQ(SnapshotPolicy::parse("last").name(), "last");
  EXPECT_EQ(SnapshotPolicy::parse("every:3").every_blocks, 3);
  for (const char* bad : {"every:0", "every:", "every:x", "some", "every:-1"}) {
    try {
      SnapshotPolicy::parse(bad);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--snapshot-policy"), std::string::npos) << e.what();
    }
  }
}

// Request 6 of the hand-checked file: a 60-token prompt (blocks at 16, 32, 48),
// 2 output tokens, its first 40 tokens request 0's whole prompt.
TEST(SimPolicy, EachPolicysSnapshotPoints) {
  const Workload w = read_trace(small_trace, TraceFormat::automatic, 16);
  using V = std::vector<std::int64_t>;
  auto points = [&](const char* policy, std::int64_t request, bool completion = true) {
    return request_points(SnapshotPolicy::parse(policy), w, request, 16, completion);
  };
  EXPECT_EQ(points("all", 6).snapshots, (V{16, 32, 48}));
  EXPECT_EQ(points("last", 6).snapshots, (V{48}));
  EXPECT_EQ(points("every:2", 6).snapshots, (V{32}));
  EXPECT_EQ(points("every:3", 6).snapshots, (V{48}));
  EXPECT_EQ(points("every:4", 6).snapshots, (V{}));
  EXPECT_EQ(points("ends", 6).snapshots, (V{60, 62}));
  EXPECT_EQ(points("ends", 6, false).snapshots, (V{60}));
  // A prompt of whole blocks has its end as the last boundary.
  EXPECT_EQ(points("all", 4).snapshots, (V{16, 32, 48, 64}));
  EXPECT_EQ(points("last", 4).snapshots, (V{64}));
  // Lookups stay below the prompt's end: every block boundary, or the prompt ends
  // that end in one of the prompt's blocks (request 0's and 2's 40 for request 6).
  EXPECT_EQ(points("last", 4).lookups, (V{16, 32, 48}));
  EXPECT_EQ(points("every:2", 6).lookups, (V{16, 32, 48}));
  EXPECT_EQ(points("ends", 6).lookups, (V{40}));
  EXPECT_EQ(points("ends", 0).lookups, (V{}));  // its own end is not below itself
}

TEST(SimPolicy, EndsOfTheSyntheticStructure) {
  Workload w;
  RequestSpec a;
  a.prefix = 0;
  a.prefix_len = 20;
  a.input_len = 4;
  a.output_len = 2;
  RequestSpec b;
  b.parent = 0;
  b.input_len = 3;
  b.output_len = 5;
  w.requests = {a, b};
  w.finish();
  using V = std::vector<std::int64_t>;
  const RequestPoints p = request_points(SnapshotPolicy{}, w, 1, 16, true);
  EXPECT_EQ(p.snapshots, (V{20, 26, 34}));  // the document, the parent's end, its own end
  EXPECT_EQ(p.lookups, (V{20, 26}));
  EXPECT_EQ(request_points(SnapshotPolicy::parse("all"), w, 1, 16, true).snapshots, (V{16}));  // prompt 29
}

// The figures of sim/README.md's hand-checked table.
TEST(SimBound, TheHandCheckedFile) {
  const Workload w = read_trace(small_trace, TraceFormat::automatic, 16);
  const ReuseBound unbounded = attention_bound(w, 1000);
  EXPECT_TRUE(unbounded.available);
  EXPECT_EQ(unbounded.input_tokens, 307);
  EXPECT_EQ(unbounded.unbounded_tokens, 184);  // 0 + 32 + 40 + 0 + 48 + 16 + 48
  EXPECT_EQ(unbounded.budget_tokens, 184);
  const ReuseBound four = attention_bound(w, 4);
  EXPECT_EQ(four.unbounded_tokens, 184);
  EXPECT_EQ(four.budget_tokens, 144);  // 0 + 32 + 32 + 0 + 32 + 16 + 32
  EXPECT_EQ(attention_bound(w, 0).budget_tokens, 0);
  Workload synthetic;
  EXPECT_FALSE(attention_bound(synthetic, 4).available);
}

// A synthetic workload written in Mooncake's format and read back keeps its
// block sharing: the same bound, block for block.
TEST(SimMooncake, DumpsAndReadsBack) {
  SyntheticOptions o;
  o.requests = 60;
  o.seed = 3;
  o.prefixes = 4;
  o.prefix_len = {20, 70};
  o.input_len = {1, 30};
  o.output_len = {1, 5};
  o.max_context = 400;
  const Workload synthetic = synthesize(o);
  const std::string path = ::testing::TempDir() + "dumped.jsonl";
  write_trace(synthetic, path, TraceFormat::mooncake, 16);
  const Workload back = read_trace(path, TraceFormat::automatic, 16);
  ASSERT_EQ(back.requests.size(), synthetic.requests.size());
  for (std::size_t i = 0; i < back.requests.size(); ++i) {
    EXPECT_EQ(back.requests[i].prompt_len, synthetic.requests[i].prompt_len) << i;
    EXPECT_EQ(back.requests[i].output_len, synthetic.requests[i].output_len) << i;
    EXPECT_EQ(back.requests[i].blocks, (back.requests[i].prompt_len + 15) / 16) << i;
  }
  const ReuseBound b = attention_bound(back, 0);
  EXPECT_GT(b.unbounded_tokens, 0);
  // Written again, the ids are the same.
  const std::string again = ::testing::TempDir() + "dumped-again.jsonl";
  write_trace(back, again, TraceFormat::mooncake, 16);
  std::ifstream x(path), y(again);
  const std::string xs((std::istreambuf_iterator<char>(x)), {}), ys((std::istreambuf_iterator<char>(y)), {});
  EXPECT_EQ(xs, ys);
  try {
    write_trace(back, again, TraceFormat::sim, 16);
    ADD_FAILURE() << "a hashed workload written in the sim format";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--trace-format mooncake"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace statexfer::sim
