#ifndef STATEXFER_TOOLS_COMMON_OPENMP_DEFAULTS_HPP
#define STATEXFER_TOOLS_COMMON_OPENMP_DEFAULTS_HPP

// Start-up that statexfer-sim and statexfer-replay share: called before
// Kokkos::initialize.

#include <cstdlib>

namespace statexfer::tools {

/// The OpenMP runtime read its environment when it was loaded, before main: with
/// OMP_PROC_BIND unset its threads are unbound, which is what "false" says.
/// Saying so spares every start Kokkos' four-line OMP_PROC_BIND advice. A
/// caller's own setting (spread, close, ...) is kept and applies, since it was
/// there at load; Kokkos' other advice (more threads than cores, ...) still shows.
inline void state_openmp_binding() { setenv("OMP_PROC_BIND", "false", 0); }

}  // namespace statexfer::tools

#endif
