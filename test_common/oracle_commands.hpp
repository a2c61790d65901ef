#ifndef STATEXFER_TEST_ORACLE_COMMANDS_HPP
#define STATEXFER_TEST_ORACLE_COMMANDS_HPP

// statexfer::Command rows as the oracle's command arrays (oracle.hpp), for the
// callers that hold the library's commands: the simulator's verifier and tests.
// The oracle keeps its own plain arrays: it includes nothing of the library, so
// that it cannot share its mistakes, and it reads the bytes the device reads
// (a case file's arrays, a fuzzer's, rows past num_ops) as they are.

#include <cstdint>
#include <vector>

#include <statexfer/commands.hpp>
#include <test_common/oracle.hpp>

namespace statexfer::test {

class OracleCommandRows {
 public:
  OracleCommandRows() = default;
  explicit OracleCommandRows(const std::vector<statexfer::Command>& commands) {
    for (const statexfer::Command& c : commands) push_back(c);
  }

  void push_back(const statexfer::Command& c) {
    slot_.push_back(c.request_slot);
    src_.push_back(c.source);
    dst_.push_back(c.destination);
    op_.push_back(c.operation);
    end_.push_back(c.expected_consumed);
    key_.push_back(c.prefix_key);
  }
  std::size_t size() const { return op_.size(); }

  /// The rows as the oracle reads them, num_ops their count; valid until the next push_back().
  OracleCommands view() const {
    return {slot_.data(), src_.data(), dst_.data(), op_.data(), end_.data(), static_cast<std::int32_t>(size()),
            key_.data()};
  }

 private:
  std::vector<std::int64_t> slot_, src_, dst_, end_, key_;
  std::vector<std::int32_t> op_;
};

}  // namespace statexfer::test

#endif
