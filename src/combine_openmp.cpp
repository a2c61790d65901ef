// Explicit instantiation of the error combiner for Kokkos::OpenMP.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_OPENMP
#include "impl/combine_impl.hpp"

namespace statexfer {
template class ErrorCombiner<Kokkos::OpenMP>;
}
#endif
