#ifndef STATEXFER_IMPL_INSTANCE_SETUP_HPP
#define STATEXFER_IMPL_INSTANCE_SETUP_HPP

// Host-side set-up of the instance a transfer runs on: the tuning diagnostics,
// telling instances apart, and what Kokkos must set up before a capture.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace statexfer::impl {

// Diagnostics for measuring apply()'s design on a machine (README, "Tuning
// diagnostics"): an integer from the environment in [lo, hi], else `fallback`.
inline std::int64_t env_integer(const char* name, std::int64_t fallback, std::int64_t lo, std::int64_t hi) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value < lo || value > hi)
    throw std::invalid_argument(std::string("statexfer: the environment variable ") + name + "=" + text +
                                " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return value;
}

// Whether the diagnostic `name` is set (a set value overrides the rules it tunes).
inline bool env_is_set(const char* name) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0';
}

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
