// Explicit instantiation of the prefill/decode moves for Kokkos::HIP.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_HIP
#include "impl/exchange_impl.hpp"

namespace statexfer {
template class PreparedExport<Kokkos::HIP>;
template class PreparedImport<Kokkos::HIP>;
}  // namespace statexfer
#endif
