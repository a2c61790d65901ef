// What the CUDA yardsticks outside Kokkos share (tools/gpu/tier_copy_bench.cu,
// unit_tests/cuda/tier_offload_bench.cu): a runtime call checked, and a stream's
// work captured into an instantiated graph and timed, the grid-stride word copy.

#ifndef STATEXFER_TOOLS_GPU_CUDA_YARDSTICK_CUH
#define STATEXFER_TOOLS_GPU_CUDA_YARDSTICK_CUH

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>

#define CHECK(call)                                                                               \
  do {                                                                                            \
    const cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

namespace yardstick {

/// A graph of whatever `body` enqueues on `s`, instantiated.
inline cudaGraphExec_t capture(cudaStream_t s, const std::function<void()>& body) {
  cudaGraph_t g;
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  body();
  CHECK(cudaStreamEndCapture(s, &g));
  cudaGraphExec_t e;
  CHECK(cudaGraphInstantiate(&e, g, 0));
  CHECK(cudaGraphDestroy(g));
  return e;
}

/// Mean µs of `reps` runs of `step` on `s` (after two warm-ups), between events.
inline double time_us(cudaStream_t s, int reps, const std::function<void()>& step) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 2; ++i) step();
  CHECK(cudaEventRecord(a, s));
  for (int i = 0; i < reps; ++i) step();
  CHECK(cudaEventRecord(b, s));
  CHECK(cudaEventSynchronize(b));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, a, b));
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return 1000.0 * ms / reps;
}

/// Grid-stride copy of 16-byte words, `ILP` loads in flight a thread; launch
/// bounds of `MaxThreads` x `MinBlocks` an SM cap its registers where a kernel
/// must share SMs (the compact grid's 40 at 12 teams an SM).
template <int ILP, int MaxThreads = 1024, int MinBlocks = 1>
__global__ void __launch_bounds__(MaxThreads, MinBlocks)
    word_copy(const int4* __restrict__ src, int4* __restrict__ dst, std::int64_t words) {
  const std::int64_t stride = std::int64_t(gridDim.x) * blockDim.x;
  std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x;
  for (; i + (ILP - 1) * stride < words; i += ILP * stride) {
    int4 v[ILP];
#pragma unroll
    for (int k = 0; k < ILP; ++k) v[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < ILP; ++k) dst[i + k * stride] = v[k];
  }
  for (; i < words; i += stride) dst[i] = src[i];
}

}  // namespace yardstick

#endif
