// Explicit instantiation of the error combiner for Kokkos::Cuda.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_CUDA
#include "impl/combine_impl.hpp"

namespace statexfer {
template class ErrorCombiner<Kokkos::Cuda>;
}
#endif
