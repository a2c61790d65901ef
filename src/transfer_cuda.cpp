// Explicit instantiation of the transfer for Kokkos::Cuda.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA
#include "impl/transfer_impl.hpp"

namespace statexfer {
template class PreparedStateTransfer<Kokkos::Cuda>;
}
#endif
