#ifndef STATEXFER_TEST_CONFORMANCE_HPP
#define STATEXFER_TEST_CONFORMANCE_HPP

// The conformance cases (shared/conformance/README.md): every case under
// STATEXFER_CASES_ROOT, run on TEST_EXECSPACE through validate() + apply() and
// through validate_and_apply(), must be byte-identical to the reference
// module's answers in expected/ (error codes, pool and every cache).
// The host reference (the oracle, test_common/) must match them too, which is what
// makes it fit to judge the randomized differential tests.

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>

#include <test_common/case.hpp>
#include <test_common/run_case.hpp>

#include "common/case_factory.hpp"
#include <test_common/reference.hpp>
#include "common/test_data.hpp"

#ifndef STATEXFER_CASES_ROOT
#error "STATEXFER_CASES_ROOT must name the folder holding the extracted conformance cases"
#endif

namespace {

TEST(TEST_CATEGORY, conformance_cases) {
  namespace ft = statexfer::test;
  const auto dirs = ft::find_cases(statexfer::test::cases_root());
  ASSERT_GE(dirs.size(), 200u) << "expected the 200 conformance cases under " << statexfer::test::cases_root();

  int checked = 0, library_failures = 0, reference_failures = 0;
  std::int64_t applied_copies = 0;
  std::array<std::int64_t, 7> codes{};
  for (const auto& dir : dirs) {
    SCOPED_TRACE(dir.string());
    const ft::Case c = ft::load_case(dir);
    ASSERT_TRUE(c.expected.errors.has_value() || c.expected.construct_error.has_value())
        << dir << " has no expected answers";

    // validate() then apply(), and validate_and_apply() (one launch on GPUs).
    for (const ft::Steps steps : {ft::Steps::separate, ft::Steps::fused}) {
      const ft::CaseOutputs actual = ft::run_case<TEST_EXECSPACE>(c, steps);
      const ft::Comparison library = ft::compare_outputs(actual, c.expected);
      if (!library.identical()) ++library_failures;
      EXPECT_TRUE(library.identical()) << "library" << (steps == ft::Steps::fused ? " (validate_and_apply)" : "")
                                       << " on " << dir.filename() << ": " << statexfer::test::describe(library);
    }

    if (!c.expected.construct_error) {
      const ft::CaseOutputs reference = statexfer::test::reference_run(c);
      const ft::Comparison ref = ft::compare_outputs(reference, c.expected);
      if (!ref.identical()) ++reference_failures;
      EXPECT_TRUE(ref.identical()) << "host reference on " << dir.filename() << ": " << statexfer::test::describe(ref);

      const ft::NpyArray& errors = *c.expected.errors;
      const std::int32_t count = statexfer::test::num_ops(c);
      for (std::int64_t r = 0; r < errors.shape.at(0); ++r) {
        const std::int32_t code = statexfer::test::get<std::int32_t>(errors, r);
        if (code >= 0 && code <= 6) ++codes[static_cast<std::size_t>(code)];
        if (code == 0 && r < count && statexfer::test::get<std::int32_t>(c.arrays.at("operation"), r) == 0)
          ++applied_copies;
      }
    }
    ++checked;
  }

  // The set must exercise every code (README: 0 to 6 all occur).
  for (int code = 1; code <= 6; ++code) EXPECT_GT(codes[static_cast<std::size_t>(code)], 0) << "code " << code;
  EXPECT_GE(applied_copies, 500);  // 518 code-0 copies in the 200 seed cases

  RecordProperty("cases_checked", checked);
  RecordProperty("applied_copies", static_cast<int>(applied_copies));
  std::printf(
      "[conformance] %s: %d cases checked, %d library mismatches, %d reference mismatches, %lld applied copies\n",
      TEST_EXECSPACE::name(), checked, library_failures, reference_failures, static_cast<long long>(applied_copies));
  EXPECT_GE(checked, 200);
}

}  // namespace

#endif
