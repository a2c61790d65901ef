// Explicit instantiation of the prefill/decode moves for Kokkos::Serial.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_SERIAL
#include "impl/exchange_impl.hpp"

namespace statexfer {
template class PreparedExport<Kokkos::Serial>;
template class PreparedImport<Kokkos::Serial>;
}  // namespace statexfer
#endif
