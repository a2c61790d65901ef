#ifndef STATEXFER_SIM_RATE_PROBE_HPP
#define STATEXFER_SIM_RATE_PROBE_HPP

// The start-up probe of this device's move rates (limit.hpp): Kokkos::deep_copy
// of `bytes` (as 64-bit words) between two buffers of the execution space's memory (copy), into
// one of them from a value (fill), and between it and a buffer in the host
// tier's memory space (pinned host memory on GPUs; the same memory on hosts),
// both ways. On Kokkos::Cuda these are cudaMemcpyAsync (device to device, and
// pinned host <-> device) and cudaMemsetAsync on the simulator's stream, timed
// with CUDA events; on hosts Kokkos' parallel host copies, timed by the host's
// clock. Each rate is the best of 4 to 32 repetitions (probe_repetitions())
// after a first, untimed one; the fill's is at least the copy's.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>

#include <statexfer/host_tier.hpp>

#include "limit.hpp"
#include "stream_events.hpp"

namespace statexfer::sim {

template <class Exec>
CopyRates probe_rates(const Exec& exec, std::int64_t bytes) {
  const int repetitions = probe_repetitions(bytes);
  CopyRates r;
  if (bytes <= 0) return r;
  // Words, so that the fill writes words as the library's resets do (a fill
  // of bytes is a byte loop on some backends).
  using Device = Kokkos::View<std::uint64_t*, typename Exec::memory_space>;
  using Tier = Kokkos::View<std::uint64_t*, statexfer::host_tier_memory_space_t<Exec>>;
  bytes = bytes / 8 * 8;
  const auto n = static_cast<std::size_t>(bytes / 8);
  Device a(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sim::probe_a"), n);
  Device b(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sim::probe_b"), n);
  Tier h(Kokkos::view_alloc(Kokkos::WithoutInitializing, "sim::probe_host"), n);
  Kokkos::fence();
  Kokkos::deep_copy(exec, a, std::uint64_t(1));  // every page touched before the timed copies
  Kokkos::deep_copy(exec, b, std::uint64_t(2));
  Kokkos::deep_copy(exec, h, std::uint64_t(3));
  exec.fence();
  auto rate = [&](auto&& move) {
    StreamEvent<Exec> start, stop;
    double best = std::numeric_limits<double>::infinity();
    for (int i = 0; i <= repetitions; ++i) {
      start.record(exec);
      move();
      stop.record(exec);
      const double s = StreamEvent<Exec>::elapsed(start, stop);
      if (i > 0 && s > 0) best = std::min(best, s);
    }
    return best < std::numeric_limits<double>::infinity() ? static_cast<double>(bytes) / best : 0.0;
  };
  r.copy = rate([&] { Kokkos::deep_copy(exec, b, a); });
  r.fill = rate([&] { Kokkos::deep_copy(exec, b, std::uint64_t(0)); });
  r.to_device = rate([&] { Kokkos::deep_copy(exec, a, h); });
  r.to_host = rate([&] { Kokkos::deep_copy(exec, h, a); });
  exec.fence();
  // A fill is never slower than a copy of its bytes (a copy from zeroed memory
  // is one): where deep_copy's fill is an unoptimised loop (debug builds, at a
  // fraction of the copy's rate) the probe would otherwise put the limit above
  // the step that beat it.
  r.fill = std::max(r.fill, r.copy);
  r.probe_bytes = bytes;
  r.repetitions = repetitions;
  return r;
}

}  // namespace statexfer::sim

#endif
