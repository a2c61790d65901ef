// Explicit instantiation of the transfer for Kokkos::Serial.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_SERIAL
#include "impl/transfer_impl.hpp"

namespace statexfer {
template class PreparedStateTransfer<Kokkos::Serial>;
}
#endif
