#ifndef STATEXFER_TEST_COMBINER_HPP
#define STATEXFER_TEST_COMBINER_HPP

// statexfer::ErrorCombiner on one rank (docs/CONTRACT.md §9): combine() leaves
// the codes as they are, and a moved-from combiner holds nothing and refuses
// work with std::logic_error. Across ranks: unit_tests/mpi (MPI) and
// unit_tests/nccl (NCCL, on GPUs).

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/combine.hpp>
#include <statexfer/commands.hpp>

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "common/batch_fixture.hpp"

namespace {

using CombinerExec = TEST_EXECSPACE;
using statexfer::test::throws_naming;

std::vector<std::int32_t> errors_of(const statexfer::StateCommands<CombinerExec>& commands) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), commands.errors);
  return std::vector<std::int32_t>(h.data(), h.data() + h.extent(0));
}

void set_errors(const statexfer::StateCommands<CombinerExec>& commands, const std::vector<std::int32_t>& codes) {
  auto h = Kokkos::create_mirror_view(commands.errors);
  for (std::size_t i = 0; i < codes.size(); ++i) h(i) = codes[i];
  Kokkos::deep_copy(commands.errors, h);
}

// Every code, one outside 0..11 and one below it: one rank changes none of them.
const std::vector<std::int32_t> one_rank_codes = {0, 7, 6, 4, 3, 2, 1, 5, 9, 8, 10, 11, 12, -1, 0, 0};

TEST(TEST_CATEGORY, combiner_one_rank_leaves_codes) {
  auto commands = statexfer::StateCommands<CombinerExec>::allocate(16);
  statexfer::ErrorCombiner<CombinerExec> combiner(commands);
  EXPECT_EQ(combiner.backend(), statexfer::CombineBackend::none);
  EXPECT_TRUE(combiner.capturable());
  EXPECT_EQ(combiner.rank(), 0);
  EXPECT_EQ(combiner.ranks(), 1);
  CombinerExec exec;
  combiner.prepare(exec);
  set_errors(commands, one_rank_codes);
  combiner.combine(exec);
  exec.fence();
  EXPECT_EQ(errors_of(commands), one_rank_codes);
}

TEST(TEST_CATEGORY, combiner_moved_from) {
  auto commands = statexfer::StateCommands<CombinerExec>::allocate(16);
  statexfer::ErrorCombiner<CombinerExec> combiner(commands);
  CombinerExec exec;
  combiner.prepare(exec);
  statexfer::ErrorCombiner<CombinerExec> owner(std::move(combiner));
  EXPECT_EQ(owner.backend(), statexfer::CombineBackend::none);
  EXPECT_EQ(owner.ranks(), 1);
  EXPECT_TRUE(owner.capturable());

  // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested.
  EXPECT_EQ(combiner.backend(), statexfer::CombineBackend::none);
  EXPECT_FALSE(combiner.capturable());
  EXPECT_EQ(combiner.rank(), 0);
  EXPECT_EQ(combiner.ranks(), 0);
  set_errors(commands, one_rank_codes);
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { combiner.prepare(exec); }, {"prepare", "moved from"}));
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { combiner.combine(exec); }, {"combine", "moved from"}));
  exec.fence();
  EXPECT_EQ(errors_of(commands), one_rank_codes);

  // Assigning to a moved-from combiner makes it whole again.
  combiner = std::move(owner);
  EXPECT_EQ(combiner.ranks(), 1);
  EXPECT_TRUE(combiner.capturable());
  EXPECT_NO_THROW(combiner.combine(exec));
  exec.fence();
  EXPECT_EQ(errors_of(commands), one_rank_codes);
  EXPECT_EQ(owner.ranks(), 0);
  EXPECT_TRUE(throws_naming<std::logic_error>([&] { owner.combine(exec); }, {"combine", "moved from"}));
  // NOLINTEND(bugprone-use-after-move)
}

}  // namespace

#endif
