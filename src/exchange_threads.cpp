// Explicit instantiation of the prefill/decode moves for Kokkos::Threads.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_THREADS
#include "impl/exchange_impl.hpp"

namespace statexfer {
template class PreparedExport<Kokkos::Threads>;
template class PreparedImport<Kokkos::Threads>;
}  // namespace statexfer
#endif
