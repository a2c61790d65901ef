#ifndef STATEXFER_UNIT_TESTS_HOST_REFERENCE_HPP
#define STATEXFER_UNIT_TESTS_HOST_REFERENCE_HPP

// A plain, sequential reading of SPEC.md section 4 (validate) and section 5
// (apply), on the host, without Kokkos. It is the independent second reading
// the library's kernels are held against: written from the specification, not
// from src/impl.
//
// Scope: a configuration that the library would accept (SPEC section 3 errors
// are not modelled). Shared hardening with the library: the usable rows are
// min(memory_capacity[0], pool rows) and the usable pages
// min(memory_capacity[1], cache page count), so no capacity can make anything
// read or write outside the arrays.

#include <cstdint>
#include <vector>

#include <statexfer_tools/case.hpp>

namespace statexfer::reference {

/// The error code of every command row (int32 [C]) after validate(), including
/// the trailing (draft) page rules when trailing bindings remain after exclusions.
std::vector<std::int32_t> reference_validate(const tools::Case& c);

/// errors, backing and every binding's cache (keyed by binding name, excluded
/// bindings included, unchanged) after prepare(); validate(); apply().
tools::CaseOutputs reference_run(const tools::Case& c);

}  // namespace statexfer::reference

#endif
