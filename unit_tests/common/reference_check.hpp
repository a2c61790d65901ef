#ifndef STATEXFER_TEST_REFERENCE_CHECK_HPP
#define STATEXFER_TEST_REFERENCE_CHECK_HPP

// One case through the library on an execution space and through the plain
// oracle (common/reference.hpp), compared byte for byte: the check of the
// differential, large-row and large-batch tests.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <test_common/case.hpp>
#include <test_common/run_case.hpp>

#include "common/case_factory.hpp"
#include <test_common/reference.hpp>

namespace statexfer::test {

struct ReferenceCheck {
  bool identical = false;
  CaseOutputs expected;        // the reference's outputs
  std::string launch_summary;  // the library run's
  std::int64_t work_items = 0;
};

/// Runs `c` on Exec (through `steps`) and on the reference. A difference fails the current test
/// with `what` and every differing value; the first `keep` mismatching cases
/// (counted in `saved`) are written to TempDir()/`suite`/<backend>/`what`, where
/// `statexfer-replay` can run them again.
template <class Exec>
ReferenceCheck check_against_reference(const Case& c, const std::string& suite, const std::string& what, int keep,
                                       int& saved, Steps steps = Steps::separate, const TransferOptions& options = {}) {
  ReferenceCheck out;
  out.expected = reference_run(c);
  const CaseOutputs actual = run_case<Exec>(c, steps, options);
  const Comparison cmp = compare_outputs(actual, out.expected);
  out.identical = cmp.identical();
  out.launch_summary = actual.launch_summary;
  out.work_items = actual.work_items;
  if (!out.identical) {
    std::string where;
    if (saved < keep) {
      const auto dir = std::filesystem::path(::testing::TempDir()) / suite / Exec::name() / what;
      write_case(c, dir);
      where = " (saved as " + dir.string() + ")";
      ++saved;
    }
    ADD_FAILURE() << what << where << ": library vs reference: " << describe(cmp);
  }
  return out;
}

}  // namespace statexfer::test

#endif
