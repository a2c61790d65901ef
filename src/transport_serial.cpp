// Explicit instantiation of the wire transport for Kokkos::Serial.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_SERIAL
#include "impl/transport_impl.hpp"

namespace statexfer {
template class WireTransport<Kokkos::Serial>;
}
#endif
