// StateLayout's checks of its regions and row size, the named regions and
// dtypes, and pack() (docs/CONTRACT.md §1, §3): a plain host type, the same on
// every backend, so compiled once (unit_tests/pure).

#include <gtest/gtest.h>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/batch_fixture.hpp"

namespace {

using statexfer::DType;
using statexfer::Region;
using statexfer::StateLayout;
using statexfer::test::throws_naming;

TEST(pure, construction_state_layout_errors) {
  auto layout_rejects = [](std::vector<Region> regions, std::int64_t row_bytes,
                           std::initializer_list<std::string> words) {
    return throws_naming<std::invalid_argument>([&] { StateLayout l(regions, row_bytes); }, words);
  };
  EXPECT_TRUE(layout_rejects({{"a", 0, 8, DType::uint8}, {"b", 4, 8, DType::uint8}}, 16, {"'a'", "'b'", "overlap"}));
  EXPECT_TRUE(layout_rejects({{"a", 4, 8, DType::uint8}, {"b", 0, 16, DType::uint8}}, 16, {"'a'", "'b'", "overlap"}));
  EXPECT_TRUE(layout_rejects({{"a", 8, 16, DType::uint8}}, 16, {"'a'", "not inside", "16"}));
  EXPECT_TRUE(layout_rejects({{"a", -1, 4, DType::uint8}}, 16, {"'a'", "not inside"}));
  EXPECT_TRUE(layout_rejects({{"a", 17, 1, DType::uint8}}, 16, {"'a'", "not inside"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 4, DType::uint8}, {"a", 8, 4, DType::uint8}}, 16, {"'a'", "twice"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 4, DType::uint8}, {"", 8, 4, DType::uint8}}, 16, {"region 1", "empty name"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 0, DType::uint8}}, 16, {"'a'", "positive size"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, -4, DType::uint8}}, 16, {"'a'", "positive size", "-4"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 4, DType::uint8}}, 0, {"row_bytes", "0"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 4, DType::uint8}}, -16, {"row_bytes", "-16"}));
  EXPECT_TRUE(layout_rejects({{"a", 0, 12, DType::int64}}, 16, {"'a'", "multiple", "int64"}));
  // Touching regions and an empty layout are fine.
  EXPECT_NO_THROW((StateLayout({{"a", 0, 8, DType::uint8}, {"b", 8, 8, DType::uint8}}, 16)));
  EXPECT_NO_THROW((StateLayout({}, 16)));

  const StateLayout l = statexfer::test::test_layout();
  EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { l.region("nope"); }, {"'nope'"}));
  EXPECT_TRUE(l.contains("kv"));
  EXPECT_FALSE(l.contains("nope"));
  EXPECT_TRUE(throws_naming<std::invalid_argument>([] { statexfer::dtype_from_string("float8"); }, {"'float8'"}));
  EXPECT_EQ(statexfer::dtype_from_string("bfloat16"), DType::bfloat16);

  const StateLayout packed = StateLayout::pack(
      {{"consumed_tokens", 8, DType::int64}, {"x", 3, DType::uint8}, {"y", 8, DType::float32}, {"z", 1, DType::uint8}});
  EXPECT_EQ(packed.region("x").offset, 8);
  EXPECT_EQ(packed.region("y").offset, 16);
  EXPECT_EQ(packed.region("z").offset, 24);
  EXPECT_EQ(packed.row_bytes(), 32);
}

}  // namespace
