#ifndef STATEXFER_TOOLS_RUN_CASE_HPP
#define STATEXFER_TOOLS_RUN_CASE_HPP

// Run a case on a Kokkos backend: build the pool, commands and transfer from the
// case's arrays, prepare(), load the commands, validate(), apply(), read back.

#include <statexfer/statexfer.hpp>

#include "case.hpp"

namespace statexfer::tools {

/// Runs `c` on `ExecutionSpace`. A construction error (std::invalid_argument from
/// the library) is returned in outputs.construct_error, not thrown.
template <class ExecutionSpace>
CaseOutputs run_case(const Case& c);

}  // namespace statexfer::tools

#include "run_case_impl.hpp"

#endif
