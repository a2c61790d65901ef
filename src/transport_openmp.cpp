// Explicit instantiation of the wire transport for Kokkos::OpenMP.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_OPENMP
#include "impl/transport_impl.hpp"

namespace statexfer {
template class WireTransport<Kokkos::OpenMP>;
}
#endif
