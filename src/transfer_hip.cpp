// Explicit instantiation of the transfer for Kokkos::HIP.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_HIP
#include "impl/transfer_impl.hpp"

namespace statexfer {
template class PreparedStateTransfer<Kokkos::HIP>;
}
#endif
