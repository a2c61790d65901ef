// Explicit instantiation of the transfer for Kokkos::OpenMP.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_OPENMP
#include "impl/transfer_impl.hpp"

namespace statexfer {
template class PreparedStateTransfer<Kokkos::OpenMP>;
}
#endif
