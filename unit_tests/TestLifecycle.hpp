#ifndef STATEXFER_TEST_LIFECYCLE_HPP
#define STATEXFER_TEST_LIFECYCLE_HPP

// A transfer's life (docs/CONTRACT.md §3): prepare() refuses live commands,
// validate()/apply()/validate_and_apply() refuse to run before prepare(), and a
// moved-from transfer holds nothing, refuses work with std::logic_error and
// is made whole by assignment; none of them writes memory when it refuses.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/ctor_fixture.hpp"

namespace {

using Exec = TEST_EXECSPACE;
using CtorArgs = statexfer::test::CtorArgs<Exec>;
using statexfer::test::Image;
using statexfer::test::image_of;
using statexfer::test::throws_naming;

TEST(TEST_CATEGORY, construction_moved_from_transfer) {
  CtorArgs s;
  s.with_trailing();
  auto t = s.make();
  t.prepare(Exec());
  const std::string summary = t.launch_summary();
  const std::int64_t items = t.work_items_per_command();
  auto owner = std::move(t);
  EXPECT_EQ(owner.capacity(), 4);
  EXPECT_TRUE(owner.prepared());
  EXPECT_EQ(owner.launch_summary(), summary);
  EXPECT_EQ(owner.work_items_per_command(), items);
  EXPECT_EQ(owner.page_regions(), std::vector<std::string>{"kv"});
  EXPECT_EQ(owner.trailing_regions(), std::vector<std::string>{"draft"});

  // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested.
  EXPECT_EQ(t.capacity(), 0);
  EXPECT_EQ(t.work_items_per_command(), 0);
  EXPECT_TRUE(t.page_regions().empty());
  EXPECT_TRUE(t.trailing_regions().empty());
  EXPECT_FALSE(t.prepared());
  EXPECT_EQ(t.launch_summary(), "moved-from");
  const Image before = image_of(s);
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.prepare(Exec()); }, {"prepare", "moved from"}));
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.validate(Exec()); }, {"validate", "moved from"}));
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.apply(Exec()); }, {"apply", "moved from"}));
  EXPECT_TRUE(
      throws_naming<std::logic_error>([&] { t.validate_and_apply(Exec()); }, {"validate_and_apply", "moved from"}));
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { (void)t.execution_space_instance(); },
                                              {"execution_space_instance", "moved from"}));
  EXPECT_TRUE(image_of(s) == before);

  // Assigning to a moved-from transfer makes it whole again.
  t = std::move(owner);
  EXPECT_EQ(t.capacity(), 4);
  EXPECT_EQ(t.launch_summary(), summary);
  EXPECT_NO_THROW(t.validate_and_apply(Exec()));
  EXPECT_EQ(owner.capacity(), 0);
  // NOLINTEND(bugprone-use-after-move)
}

TEST(TEST_CATEGORY, construction_prepare_requires_zero_num_ops) {
  for (std::int32_t n : {1, -1, 4, 5}) {
    SCOPED_TRACE("num_ops " + std::to_string(n));
    CtorArgs s;
    statexfer::test::upload(s.commands.errors, std::vector<std::int32_t>(4, 9));
    auto t = s.make();
    statexfer::test::upload(s.commands.num_ops, std::vector<std::int32_t>{n});
    const Image before = image_of(s);
    EXPECT_TRUE(throws_naming<std::invalid_argument>([&] { t.prepare(Exec()); }, {"num_ops", std::to_string(n)}));
    EXPECT_FALSE(t.prepared());
    EXPECT_TRUE(image_of(s) == before) << "a failed prepare() wrote memory";
    // Still unprepared: validate() and apply() refuse.
    EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.validate(Exec()); }, {"prepare"}));
    EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.apply(Exec()); }, {"prepare"}));
    // With num_ops back at 0 it prepares, and validate() writes the errors.
    statexfer::test::upload(s.commands.num_ops, std::vector<std::int32_t>{0});
    EXPECT_NO_THROW(t.prepare(Exec()));
    EXPECT_TRUE(t.prepared());
    EXPECT_EQ(statexfer::test::download(s.commands.errors), std::vector<std::int32_t>(4, 0));
    EXPECT_EQ(statexfer::test::download(s.pool.backing()), before.pool);
  }
}

TEST(TEST_CATEGORY, construction_validate_and_apply_before_prepare) {
  CtorArgs s;
  statexfer::test::upload(s.commands.errors, std::vector<std::int32_t>(4, 9));
  auto t = s.make();
  const Image before = image_of(s);
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.validate(Exec()); }, {"validate", "prepare"}));
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { t.apply(Exec()); }, {"apply", "prepare"}));
  EXPECT_TRUE(
      throws_naming<std::logic_error>([&] { t.validate_and_apply(Exec()); }, {"validate_and_apply", "prepare"}));
  EXPECT_TRUE(image_of(s) == before) << "validate()/apply()/validate_and_apply() before prepare() wrote memory";
  // A moved-from-and-back transfer keeps its state.
  statexfer::PreparedStateTransfer<Exec> moved(std::move(t));
  moved.prepare(Exec());
  EXPECT_NO_THROW(moved.validate(Exec()));
  EXPECT_NO_THROW(moved.apply(Exec()));
  Exec().fence();
}

}  // namespace

#endif
