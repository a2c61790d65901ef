#ifndef STATEXFER_TEST_COMMAND_BATCH_HPP
#define STATEXFER_TEST_COMMAND_BATCH_HPP

// The host side of a batch (commands.hpp): CommandBatch, and
// StateCommands::upload(), which must put the batch's rows and num_ops into the
// device arrays in one copy, at capacities 1, odd-sized batches and 4096.
// Command's named constructors: unit_tests/pure/TestCommandValues.cpp.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/batch_fixture.hpp"
#include "common/tier_fixture.hpp"

namespace {

using Exec = TEST_EXECSPACE;
using statexfer::Command;

TEST(TEST_CATEGORY, command_batch_refuses_what_it_cannot_hold) {
  using Batch = statexfer::CommandBatch<Exec>;
  for (const std::int64_t c : {0, 3, 8192})
    EXPECT_TRUE(statexfer::test::throws_naming<std::invalid_argument>([&] { Batch b(c); },
                                                                      {"CommandBatch", "capacity", std::to_string(c)}));
  Batch b(2);
  b.push_back(Command::reset(0, 1));
  b.push_back(Command::reset(1, 2));
  EXPECT_TRUE(statexfer::test::throws_naming<std::length_error>([&] { b.push_back(Command::reset(0, 1)); },
                                                                {"full", "capacity 2"}));
  EXPECT_TRUE(statexfer::test::throws_naming<std::out_of_range>([&] { b.set(2, Command{}); }, {"row 2", "0..1"}));
  EXPECT_TRUE(statexfer::test::throws_naming<std::out_of_range>([&] { (void)b[-1]; }, {"row -1"}));
  EXPECT_TRUE(statexfer::test::throws_naming<std::out_of_range>([&] { b.resize(3); }, {"3", "0..2"}));
  EXPECT_EQ(b.size(), 2);
  b.clear();
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.num_ops(), 0);
  EXPECT_EQ(b[1].destination, 2) << "clear() keeps the rows";

  auto commands = statexfer::StateCommands<Exec>::allocate(4);
  const Exec exec;
  EXPECT_TRUE(statexfer::test::throws_naming<std::invalid_argument>([&] { commands.upload(exec, b); },
                                                                    {"upload", "capacity 2", "commands 4"}));
  statexfer::StateCommands<Exec> hand_made;
  const Kokkos::View<std::int64_t*, Exec::memory_space> source_slots("source_slots", 2);  // the caller's memory
  hand_made.source_slots = source_slots;
  EXPECT_TRUE(statexfer::test::throws_naming<std::logic_error>([&] { hand_made.upload(exec, b); }, {"allocate()"}));
}

// Every row and num_ops reach the device arrays; rows past the batch keep what
// the batch object holds; errors and commit_positions are not touched.
TEST(TEST_CATEGORY, command_batch_upload_is_the_batch) {
  for (const auto placement : {statexfer::CommandPlacement::device, statexfer::CommandPlacement::mapped})
    for (const std::int64_t c : {1, 8, 64, 4096}) {
      SCOPED_TRACE("capacity " + std::to_string(c) +
                   (placement == statexfer::CommandPlacement::mapped ? ", mapped" : ", device"));
      auto commands = statexfer::StateCommands<Exec>::allocate(c, placement);
      EXPECT_EQ(commands.placement(), placement);
      statexfer::CommandBatch<Exec> batch(c);
      const std::int64_t n = c == 1 ? 1 : c - 3;  // odd-sized batches below the capacity
      for (std::int64_t i = 0; i < n; ++i)
        batch.push_back({i % 7 - 1, 3 * i + 1, -2 * i, static_cast<std::int32_t>(i % 6), 1000 + i, (i << 40) ^ 77});
      Kokkos::deep_copy(commands.errors, 33);
      const Exec exec;
      commands.upload(exec, batch);
      exec.fence();
      const auto slots = statexfer::test::download(commands.request_slots);
      const auto src = statexfer::test::download(commands.source_slots);
      const auto dst = statexfer::test::download(commands.destination_slots);
      const auto op = statexfer::test::download(commands.operation);
      const auto end = statexfer::test::download(commands.expected_consumed);
      const auto keys = statexfer::test::download(commands.prefix_keys);
      for (std::int64_t i = 0; i < c; ++i) {
        const auto at = static_cast<std::size_t>(i);
        const Command want = batch[i];
        EXPECT_EQ(slots[at], want.request_slot) << i;
        EXPECT_EQ(src[at], want.source) << i;
        EXPECT_EQ(dst[at], want.destination) << i;
        EXPECT_EQ(op[at], want.operation) << i;
        EXPECT_EQ(end[at], want.expected_consumed) << i;
        EXPECT_EQ(keys[at], want.prefix_key) << i;
        if (i >= n) {
          EXPECT_EQ(slots[at], -1) << i;
        }
      }
      EXPECT_EQ(statexfer::test::download(commands.num_ops), std::vector<std::int32_t>{static_cast<std::int32_t>(n)});
      EXPECT_EQ(statexfer::test::download(commands.errors), std::vector<std::int32_t>(static_cast<std::size_t>(c), 33));
      EXPECT_EQ(statexfer::test::download(commands.commit_positions),
                std::vector<std::int32_t>(static_cast<std::size_t>(c), -1));
      batch.set_num_ops(-4);
      commands.upload(exec, batch);
      exec.fence();
      EXPECT_EQ(statexfer::test::download(commands.num_ops), std::vector<std::int32_t>{-4});
    }
}

// StateCommands' arrays are unmanaged views into the block that allocate()
// made: a copy of one (`auto e = commands.errors;`) is typed unmanaged and
// holds no reference to the memory, a copy of the StateCommands (or a combiner
// built from it) holds the block. outputs() is errors then commit_positions.
TEST(TEST_CATEGORY, command_arrays_are_views_into_the_block) {
  using Commands = statexfer::StateCommands<Exec>;
  EXPECT_TRUE(Commands::int64_view::traits::memory_traits::is_unmanaged);
  EXPECT_TRUE(Commands::int32_view::traits::memory_traits::is_unmanaged);
  EXPECT_FALSE(decltype(Commands::block)::traits::memory_traits::is_unmanaged);
  for (const auto placement : {statexfer::CommandPlacement::device, statexfer::CommandPlacement::mapped})
    for (const std::int64_t c : {1, 8, 4096}) {
      const bool mapped = placement == statexfer::CommandPlacement::mapped;
      SCOPED_TRACE("capacity " + std::to_string(c) + (mapped ? ", mapped" : ", device"));
      auto commands = Commands::allocate(c, placement);
      ASSERT_EQ(commands.block.use_count(), 1);
      // Every array lies in its allocation: the host-written ones in mapped_block when mapped.
      struct Bytes {
        const std::uint8_t* data;
        std::size_t size;
      };
      const auto inside = [](const auto& array, Bytes block) {
        const auto* begin = reinterpret_cast<const std::uint8_t*>(array.data());
        return begin >= block.data && begin + array.span() * sizeof(*array.data()) <= block.data + block.size;
      };
      const Bytes outputs_block{commands.block.data(), commands.block.span()};
      const Bytes written = mapped ? Bytes{commands.mapped_block.data(), commands.mapped_block.span()} : outputs_block;
      EXPECT_EQ(commands.mapped_block.use_count(), mapped ? 1 : 0);
      EXPECT_TRUE(inside(commands.request_slots, written));
      EXPECT_TRUE(inside(commands.source_slots, written));
      EXPECT_TRUE(inside(commands.destination_slots, written));
      EXPECT_TRUE(inside(commands.operation, written));
      EXPECT_TRUE(inside(commands.expected_consumed, written));
      EXPECT_TRUE(inside(commands.prefix_keys, written));
      EXPECT_TRUE(inside(commands.num_ops, written));
      EXPECT_TRUE(inside(commands.errors, outputs_block));
      EXPECT_TRUE(inside(commands.commit_positions, outputs_block));

      auto errors = commands.errors;  // holds nothing
      static_assert(decltype(errors)::traits::memory_traits::is_unmanaged, "a copy of an array is unmanaged");
      EXPECT_EQ(commands.block.use_count(), 1);
      {
        const Commands copy = commands;  // shares the block
        EXPECT_EQ(commands.block.use_count(), 2);
        EXPECT_EQ(copy.errors.data(), errors.data());
        const statexfer::ErrorCombiner<Exec> combiner(commands);  // holds it too
        EXPECT_EQ(commands.block.use_count(), 3);
      }
      EXPECT_EQ(commands.block.use_count(), 1);

      // outputs(): one [2 C] array over both device-written arrays.
      const auto outputs = commands.outputs();
      ASSERT_EQ(outputs.extent(0), static_cast<std::size_t>(2 * c));
      EXPECT_EQ(outputs.data(), commands.errors.data());
      EXPECT_EQ(outputs.data() + c, commands.commit_positions.data());
      std::vector<std::int32_t> codes(static_cast<std::size_t>(c)), positions(codes.size());
      for (std::size_t i = 0; i < codes.size(); ++i) {
        codes[i] = static_cast<std::int32_t>(i % 7);
        positions[i] = static_cast<std::int32_t>(i % 3) - 1;
      }
      statexfer::test::upload(commands.errors, codes);
      statexfer::test::upload(commands.commit_positions, positions);
      std::vector<std::int32_t> both = codes;
      both.insert(both.end(), positions.begin(), positions.end());
      EXPECT_EQ(statexfer::test::download(outputs), both);
    }
  // Arrays a caller put together: outputs() is empty.
  Commands hand_made;
  const Kokkos::View<std::int32_t*, Exec::memory_space> errors("errors", 4), positions("positions", 4);
  hand_made.errors = errors;
  hand_made.commit_positions = positions;
  EXPECT_EQ(hand_made.outputs().extent(0), 0u);
  auto replaced = Commands::allocate(4);
  replaced.errors = errors;
  EXPECT_EQ(replaced.outputs().extent(0), 0u) << "errors no longer beside commit_positions";
}

#if defined(__SANITIZE_ADDRESS__)
#define STATEXFER_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STATEXFER_TEST_ASAN 1
#endif
#endif
#ifdef STATEXFER_TEST_ASAN
// The debug preset (ASan): a copy of an array read after the last holder of
// the block is gone is a use after free that AddressSanitizer reports and ends
// the process on, not a read of whatever the memory holds next.
TEST(TEST_CATEGORY, command_array_copy_past_its_block_dies_under_asan) {
  if (!Kokkos::SpaceAccessibility<Kokkos::HostSpace, Exec::memory_space>::accessible)
    GTEST_SKIP() << "the arrays are not host memory";
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // OpenMP threads: a fresh process, not a fork
  const auto outlive = [] {
    statexfer::StateCommands<Exec>::int32_view errors;
    {
      const auto commands = statexfer::StateCommands<Exec>::allocate(8);
      errors = commands.errors;
    }
    volatile std::int32_t code = errors(3);
    (void)code;
  };
  EXPECT_DEATH(outlive(), "heap-use-after-free");
  // The same read while a copy of the StateCommands holds the block is fine.
  const auto commands = statexfer::StateCommands<Exec>::allocate(8);
  const auto errors = commands.errors;
  EXPECT_EQ(errors(3), 0);
}
#endif

// The kernels read mapped command arrays in place: random batches of every
// operation (commits and prefix keys included) through both calls, against the
// oracle, at capacities of one team and of the sorted validation.
TEST(TEST_CATEGORY, command_batch_mapped_commands_match_the_oracle) {
  namespace ft = statexfer::test;
  for (const std::int64_t c : {4, 64, 128}) {
    SCOPED_TRACE("capacity " + std::to_string(c));
    ft::TierOptions o;
    o.capacity = c;
    o.host_rows = c < 16 ? 5 : c / 2;
    o.cache_pages = 2 * c + 6;
    o.positions = 3;
    o.keys = true;
    o.placement = statexfer::CommandPlacement::mapped;
    ft::TierRig<Exec> rig(o);
    ft::TierRng rng(0x3a99e0ULL + static_cast<std::uint64_t>(c));
    std::int64_t applied = 0;
    for (int b = 0; b < 24; ++b) {
      const ft::TierCommands k = ft::random_tier_batch(rng, rig, b % 3 == 2);
      const auto codes = rig.run_and_check(k, b % 2 == 1, "batch " + std::to_string(b));
      for (std::int64_t r = 0; r < k.count && r < c; ++r) applied += codes[static_cast<std::size_t>(r)] == 0;
      ASSERT_FALSE(::testing::Test::HasFailure());
    }
    EXPECT_GT(applied, 10);
  }
}

}  // namespace

#endif
