// Explicit instantiation of the error combiner for Kokkos::Serial.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_SERIAL
#include "impl/combine_impl.hpp"

namespace statexfer {
template class ErrorCombiner<Kokkos::Serial>;
}
#endif
