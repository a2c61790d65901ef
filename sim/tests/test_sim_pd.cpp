// --pd's parts (sim/pd.hpp, pd_model.hpp, pd_cache.hpp): the model's shard
// writer against the reshard oracle's cut of the whole row, for every model
// and TP size that splits it; the fault parser's refusals; the prefix cache's
// reservations, evictions and publications.

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <test_common/models.hpp>
#include <test_common/reshard.hpp>

#include "pd_cache.hpp"
#include "pd_model.hpp"

namespace {

using namespace statexfer::sim;

TEST(sim_pd, shards_are_the_oracles_cuts_of_the_whole_row) {
  for (const auto& m : statexfer::models::all()) {
    std::string description;
    const statexfer::ModelLayout model = pd_model(m.name, 1, 16, &description);
    EXPECT_NE(description.find("stand-in"), std::string::npos) << m.name;
    std::vector<std::uint8_t> whole;
    write_whole(model, 0x5eed + 7, 4096, 0x31, whole);
    int tested = 0;
    for (const int tp : {1, 2, 3, 4, 8}) {
      if (!model.splits(tp)) continue;
      for (int r = 0; r < tp; ++r) {
        const auto want = statexfer::test::oracle_shard(model.regions(), whole, tp, r);
        std::vector<std::uint8_t> got(want.size(), 0);
        write_shard(model, tp, r, 0x5eed + 7, 4096, 0x31, got.data());
        EXPECT_TRUE(got == want) << m.name << " TP " << tp << " rank " << r;
        ++tested;
      }
    }
    EXPECT_GE(tested, 3) << m.name;
  }
}

TEST(sim_pd, states_differ_and_keys_are_positive) {
  const statexfer::ModelLayout model = pd_model("qwen3.5-9b", 1, 16, nullptr);
  std::vector<std::uint8_t> a, b;
  write_whole(model, 1, 10, 5, a);
  write_whole(model, 2, 10, 5, b);
  EXPECT_NE(a, b);
  EXPECT_GT(pd_key(PrefixKey{0, 0, 0}), 0);
  EXPECT_NE(pd_key(PrefixKey{10, 1, 2}), pd_key(PrefixKey{11, 1, 2}));
}

TEST(sim_pd, fault_parser) {
  const PdFault f = parse_pd_fault("1:7:missing-slice");
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.step, 7);
  EXPECT_EQ(f.type, PdFaultType::missing_slice);
  EXPECT_EQ(parse_pd_fault("0:0:flipped-byte").type, PdFaultType::flipped_byte);
  EXPECT_EQ(parse_pd_fault("0:0:other-layout").type, PdFaultType::other_layout);
  EXPECT_EQ(parse_pd_fault("0:0:stale-key").type, PdFaultType::stale_key);
  for (const char* bad : {"1:7", "a:1:stale-key", "1:b:stale-key", "-1:1:stale-key", "1:1:page", "1:1:"})
    EXPECT_THROW(parse_pd_fault(bad), std::invalid_argument) << bad;
}

TEST(sim_pd, cache_evicts_the_least_recently_used_and_keeps_one_row_a_key) {
  PdCache cache(2);
  const PrefixKey a{1, 1, 1}, b{2, 2, 2}, c{3, 3, 3};
  const std::int64_t ra = cache.reserve(), rb = cache.reserve();
  EXPECT_NE(ra, rb);
  cache.publish(a, ra);
  cache.publish(b, rb);
  EXPECT_EQ(cache.lookup(a), ra);  // a is now the most recently used
  const std::int64_t rc = cache.reserve();
  EXPECT_EQ(rc, rb);  // b evicted
  EXPECT_FALSE(cache.holds(b));
  cache.publish(c, rc);
  EXPECT_EQ(cache.evictions, 1);
  EXPECT_EQ(cache.reserve({ra, rc}), -1);     // every row pinned
  const std::int64_t next = cache.reserve();  // a, the least recently used now, evicted
  EXPECT_EQ(next, ra);
  EXPECT_EQ(cache.evictions, 2);
  cache.publish(c, next);  // c is held in rc already: the row goes back to the free rows
  EXPECT_EQ(cache.lookup(c), rc);
  EXPECT_EQ(cache.reserve(), ra);
}

}  // namespace
