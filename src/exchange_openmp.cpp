// Explicit instantiation of the prefill/decode moves for Kokkos::OpenMP.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_OPENMP
#include "impl/exchange_impl.hpp"

namespace statexfer {
template class PreparedExport<Kokkos::OpenMP>;
template class PreparedImport<Kokkos::OpenMP>;
}  // namespace statexfer
#endif
