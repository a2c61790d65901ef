#ifndef STATEXFER_TEST_REFERENCE_HPP
#define STATEXFER_TEST_REFERENCE_HPP

// The oracle (oracle.hpp) on a stx-case/1 case: what the unit tests and the
// fuzzers hold the library's outputs against.

#include <cstdint>
#include <vector>

#include <test_common/case.hpp>

namespace statexfer::test {

/// The error code of every command row (int32 [C]) after validate(), including
/// the trailing (draft) page rules when trailing bindings remain after exclusions.
std::vector<std::int32_t> reference_validate(const Case& c);

/// errors, backing and every binding's cache (keyed by binding name, excluded
/// bindings included, unchanged) after prepare(); validate(); apply().
CaseOutputs reference_run(const Case& c);

}  // namespace statexfer::test

#endif
