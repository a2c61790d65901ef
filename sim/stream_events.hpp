#ifndef STATEXFER_SIM_STREAM_EVENTS_HPP
#define STATEXFER_SIM_STREAM_EVENTS_HPP

// Points in an execution-space instance's work: to time what an instance
// spends between two of them, and to make another instance wait for one. On
// Kokkos::Cuda they are CUDA events on the instance's stream (the time is the
// stream's, measured on the device); elsewhere the instances run their work in
// the host's order, so a point is the host's clock after a fence and a wait has
// nothing to wait for.

#include <Kokkos_Core.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <type_traits>

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime.h>
#endif

namespace statexfer::sim {

#ifdef KOKKOS_ENABLE_CUDA
/// std::runtime_error naming the call and CUDA's message unless `status` is cudaSuccess.
inline void cuda_check(cudaError_t status, const char* call) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(call) + " failed: " + cudaGetErrorName(status) + ": " +
                             cudaGetErrorString(status));
}
/// The same on stderr, for the calls of a destructor.
inline void cuda_report(cudaError_t status, const char* call) noexcept {
  if (status != cudaSuccess)
    std::fprintf(stderr, "statexfer-sim: %s failed: %s: %s\n", call, cudaGetErrorName(status),
                 cudaGetErrorString(status));
}
#endif

template <class Exec>
class StreamEvent {
 public:
#ifdef KOKKOS_ENABLE_CUDA
  static constexpr bool cuda = std::is_same_v<Exec, Kokkos::Cuda>;
#else
  static constexpr bool cuda = false;
#endif

  StreamEvent() {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (cuda) cuda_check(cudaEventCreate(&event_), "cudaEventCreate");
#endif
  }
  StreamEvent(const StreamEvent&) = delete;
  StreamEvent& operator=(const StreamEvent&) = delete;
  ~StreamEvent() {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (cuda) cuda_report(cudaEventDestroy(event_), "cudaEventDestroy");
#endif
  }

  /// The point after the work enqueued on `exec` so far (hosts: fences it).
  void record(const Exec& exec) {
    recorded_ = true;
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (cuda) {
      cuda_check(cudaEventRecord(event_, exec.cuda_stream()), "cudaEventRecord");
      return;
    }
#endif
    exec.fence();
    at_ = std::chrono::steady_clock::now();
  }
  /// `exec`'s work enqueued from now on starts after the recorded point
  /// (cudaStreamWaitEvent; nothing on hosts, where it is past already).
  void wait(const Exec& exec) const {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (cuda) {
      if (recorded_) cuda_check(cudaStreamWaitEvent(exec.cuda_stream(), event_, 0), "cudaStreamWaitEvent");
      return;
    }
#endif
    (void)exec;
  }
  /// The host waits until the recorded point is reached.
  void synchronize() const {
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (cuda)
      if (recorded_) cuda_check(cudaEventSynchronize(event_), "cudaEventSynchronize");
#endif
  }
  bool recorded() const { return recorded_; }

  /// Seconds from `from` to `to` (both recorded; waits for `to`).
  static double elapsed(const StreamEvent& from, const StreamEvent& to) {
    if (!from.recorded_ || !to.recorded_) return 0;
#ifdef KOKKOS_ENABLE_CUDA
    if constexpr (cuda) {
      to.synchronize();
      float ms = 0;
      cuda_check(cudaEventElapsedTime(&ms, from.event_, to.event_), "cudaEventElapsedTime");
      return 1e-3 * static_cast<double>(ms);
    }
#endif
    return std::chrono::duration<double>(to.at_ - from.at_).count();
  }

 private:
  bool recorded_ = false;
  std::chrono::steady_clock::time_point at_{};
#ifdef KOKKOS_ENABLE_CUDA
  cudaEvent_t event_ = nullptr;
#endif
};

/// How StreamEvent measures on `Exec`, for the report.
template <class Exec>
const char* stream_clock_name() {
  return StreamEvent<Exec>::cuda ? "CUDA events on the stream" : "the host's clock (fenced)";
}

}  // namespace statexfer::sim

#endif
