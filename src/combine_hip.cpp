// Explicit instantiation of the error combiner for Kokkos::HIP.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_HIP
#include "impl/combine_impl.hpp"

namespace statexfer {
template class ErrorCombiner<Kokkos::HIP>;
}
#endif
