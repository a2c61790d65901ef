// Explicit instantiation of the error combiner for Kokkos::Threads.
#include <Kokkos_Core.hpp>

#ifdef KOKKOS_ENABLE_THREADS
#include "impl/combine_impl.hpp"

namespace statexfer {
template class ErrorCombiner<Kokkos::Threads>;
}
#endif
