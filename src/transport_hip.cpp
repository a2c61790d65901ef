// Explicit instantiation of the wire transport for Kokkos::HIP.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_HIP
#include "impl/transport_impl.hpp"

namespace statexfer {
template class WireTransport<Kokkos::HIP>;
}
#endif
