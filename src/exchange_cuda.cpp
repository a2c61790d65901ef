// Explicit instantiation of the prefill/decode moves for Kokkos::Cuda.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA
#include "impl/exchange_impl.hpp"

namespace statexfer {
template class PreparedExport<Kokkos::Cuda>;
template class PreparedImport<Kokkos::Cuda>;
}  // namespace statexfer
#endif
