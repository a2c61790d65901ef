#ifndef STATEXFER_TEST_RUN_CASE_HPP
#define STATEXFER_TEST_RUN_CASE_HPP

// Run a case on a Kokkos backend: build the pool, commands and transfer from the
// case's arrays, prepare(), load the commands, validate() and apply() (or
// validate_and_apply()), read back.

#include <statexfer/statexfer.hpp>

#include "case.hpp"

namespace statexfer::test {

/// How run_case enqueues the batch: validate() then apply(), or validate_and_apply().
enum class Steps { separate, fused };

/// Runs `c` on `ExecutionSpace` with the transfer options `options`. A
/// construction error (std::invalid_argument from the library) is returned in
/// outputs.construct_error, not thrown.
template <class ExecutionSpace>
CaseOutputs run_case(const Case& c, Steps steps = Steps::separate, const TransferOptions& options = {});

}  // namespace statexfer::test

#include "run_case_impl.hpp"

#endif
