// Explicit instantiation of the wire transport for Kokkos::Threads.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_THREADS
#include "impl/transport_impl.hpp"

namespace statexfer {
template class WireTransport<Kokkos::Threads>;
}
#endif
