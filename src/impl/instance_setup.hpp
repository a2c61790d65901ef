#ifndef STATEXFER_IMPL_INSTANCE_SETUP_HPP
#define STATEXFER_IMPL_INSTANCE_SETUP_HPP

// Host-side set-up of the instance a transfer runs on: telling instances
// apart, and what Kokkos must set up before a capture.

#include <Kokkos_Core.hpp>

#include <type_traits>

namespace statexfer::impl {

// Whether two handles name one execution space instance (one stream on CUDA).
template <class ExecutionSpace>
bool same_instance(const ExecutionSpace& a, const ExecutionSpace& b) {
#if KOKKOS_VERSION >= 40000
  return a == b;
#else
#ifdef KOKKOS_ENABLE_CUDA
  if constexpr (std::is_same_v<ExecutionSpace, Kokkos::Cuda>)
    return a.cuda_stream() == b.cuda_stream() && a.cuda_device() == b.cuda_device();
#endif
  (void)a, (void)b;
  return true;  // Kokkos 3.4's host spaces have one instance each
#endif
}

// Kokkos 4 gives a TeamPolicy launch a level-1 team scratch buffer from the
// instance's pool, and allocates it on every launch (even of zero bytes) until
// some launch has asked for more than zero. One such launch here keeps
// validate() and apply() free of allocations, which stream capture needs.
template <class ExecutionSpace>
void prime_team_scratch(const ExecutionSpace& exec) {
  using policy = Kokkos::TeamPolicy<ExecutionSpace>;
  Kokkos::parallel_for("statexfer::prime_team_scratch", policy(exec, 1, 1).set_scratch_size(1, Kokkos::PerTeam(64)),
                       KOKKOS_LAMBDA(const typename policy::member_type&){});
}

}  // namespace statexfer::impl

#endif
