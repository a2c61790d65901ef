// Values that need no backend: Command's named constructors (commands.hpp)
// and the names of the error codes (docs/CONTRACT.md §4). Compiled once
// (unit_tests/pure).

#include <gtest/gtest.h>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <limits>

namespace {

using statexfer::Command;

TEST(pure, command_batch_named_commands) {
  const auto expect = [](const Command& c, std::int64_t slot, std::int64_t src, std::int64_t dst, std::int32_t op,
                         std::int64_t end, std::int64_t key) {
    EXPECT_EQ(c.request_slot, slot);
    EXPECT_EQ(c.source, src);
    EXPECT_EQ(c.destination, dst);
    EXPECT_EQ(c.operation, op);
    EXPECT_EQ(c.expected_consumed, end);
    EXPECT_EQ(c.prefix_key, key);
  };
  expect(Command::snapshot(2, 3, 9, 17, 5), 2, 3, 9, statexfer::op_copy, 17, 5);
  expect(Command::restore(2, 9, 3, 17, 5), 2, 9, 3, statexfer::op_copy, 17, 5);
  expect(Command::reset(2, 3), 2, -1, 3, statexfer::op_reset, 0, 0);
  expect(Command::offload(9, 1, 17, 5), -1, 9, 1, statexfer::op_offload, 17, 5);
  expect(Command::onload(1, 9, 17, 5), -1, 1, 9, statexfer::op_onload, 17, 5);
  expect(Command::restore_from_host(2, 1, 3, 17, 5), 2, 1, 3, statexfer::op_restore_from_host, 17, 5);
  expect(Command::commit(2, 17), 2, -1, -1, statexfer::op_commit, 17, 0);
  expect(Command{}, -1, -1, -1, statexfer::op_copy, -1, 0);
}

TEST(pure, error_codes_names) {
  using statexfer::CommandError;
  const char* names[] = {"none",
                         "invalid_operation",
                         "invalid_slots",
                         "invalid_endpoint",
                         "alias_conflict",
                         "invalid_count",
                         "invalid_page",
                         "row_in_use",
                         "layout_mismatch",
                         "record_mismatch",
                         "checksum_mismatch",
                         "coverage_mismatch"};
  for (std::int32_t code = 0; code <= 11; ++code) {
    EXPECT_STREQ(statexfer::command_error_name(code), names[code]) << code;
    EXPECT_STREQ(statexfer::to_string(static_cast<CommandError>(code)), names[code]) << code;
  }
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::none), 0);
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::invalid_operation), 1);
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::invalid_slots), 2);
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::invalid_endpoint), 3);
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::alias_conflict), 4);
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::invalid_count), 5);
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::invalid_page), 6);
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::row_in_use), 7);
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::layout_mismatch), 8);
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::record_mismatch), 9);
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::checksum_mismatch), 10);
  EXPECT_EQ(static_cast<std::int32_t>(CommandError::coverage_mismatch), 11);
  for (std::int32_t code :
       {-1, 12, 77, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()}) {
    EXPECT_STREQ(statexfer::command_error_name(code), "unknown") << code;
    EXPECT_STREQ(statexfer::to_string(static_cast<CommandError>(code)), "unknown") << code;
  }
}

}  // namespace
