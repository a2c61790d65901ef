// Explicit instantiation of the wire transport for Kokkos::Cuda.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA
#include "impl/transport_impl.hpp"

namespace statexfer {
template class WireTransport<Kokkos::Cuda>;
}
#endif
