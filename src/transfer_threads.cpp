// Explicit instantiation of the transfer for Kokkos::Threads.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_THREADS
#include "impl/transfer_impl.hpp"

namespace statexfer {
template class PreparedStateTransfer<Kokkos::Threads>;
}
#endif
