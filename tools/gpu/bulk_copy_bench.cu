// Device-copy yardsticks on Hopper, outside Kokkos: cudaMemcpyAsync, a plain
// 16-byte-word kernel, and bulk asynchronous copies (cp.async.bulk, the TMA
// engine) staged through shared memory. Each is captured in a CUDA graph and
// replayed, like statexfer-bench's figures.
//
//   nvcc -O3 -arch=sm_90 -o bulk_copy_bench tools/gpu/bulk_copy_bench.cu
//   bulk_copy_bench            prints µs and TB/s (read + write) per variant and size

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

namespace {

__global__ void word_copy(const int4* __restrict__ src, int4* __restrict__ dst, std::int64_t words) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < words;
       i += std::int64_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// One thread per block drives a ring of `stages` shared-memory buffers of
// `chunk` bytes: bulk load global -> shared (completion on an mbarrier), bulk
// store shared -> global, the buffer reloaded once its store has read it.
// Chunks of the block: blockIdx.x, blockIdx.x + gridDim.x, ...
// With `per_block` > 0, block b copies chunks [b * per_block, (b + 1) * per_block)
// instead: one tile per block, as a team of statexfer's apply would.
__global__ void bulk_copy(const char* __restrict__ src, char* __restrict__ dst, std::int64_t chunks, int chunk,
                          int stages, int per_block) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) char smem[];
  __shared__ __align__(8) std::uint64_t bar[8];
  if (threadIdx.x != 0) return;
  for (int s = 0; s < stages; ++s)
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bar[s])));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  const std::int64_t mine = per_block > 0 ? per_block
                             : chunks > blockIdx.x ? (chunks - blockIdx.x + gridDim.x - 1) / gridDim.x
                                                   : 0;
  auto offset = [&](std::int64_t j) {
    return (per_block > 0 ? std::int64_t(blockIdx.x) * per_block + j : blockIdx.x + j * gridDim.x) *
           std::int64_t(chunk);
  };
  auto load = [&](std::int64_t j) {
    const int s = static_cast<int>(j % stages);
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(&bar[s])), "r"(chunk)
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
            smem_addr(smem + s * chunk)),
        "l"(src + offset(j)), "r"(chunk), "r"(smem_addr(&bar[s]))
        : "memory");
  };
  for (std::int64_t j = 0; j < mine && j < stages; ++j) load(j);
  for (std::int64_t j = 0; j < mine; ++j) {
    const int s = static_cast<int>(j % stages);
    const std::uint32_t parity = static_cast<std::uint32_t>((j / stages) & 1);
    std::uint32_t done = 0;
    while (!done)
      asm volatile(
          "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
          : "=r"(done)
          : "r"(smem_addr(&bar[s])), "r"(parity)
          : "memory");
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + offset(j)),
                 "r"(smem_addr(smem + s * chunk)), "r"(chunk)
                 : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    // The previous chunk's store has read its buffer once at most one group
    // (this one) is still reading: refill that buffer.
    if (j >= 1 && j - 1 + stages < mine) {
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
      load(j - 1 + stages);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}

struct Timer {
  cudaStream_t stream;
  cudaGraphExec_t exec = nullptr;
  cudaEvent_t a, b;
  explicit Timer(const std::function<void(cudaStream_t)>& step) {
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaGraph_t g;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    step(stream);
    cudaStreamEndCapture(stream, &g);
    cudaGraphInstantiate(&exec, g, 0);
    cudaGraphDestroy(g);
    cudaEventCreate(&a);
    cudaEventCreate(&b);
  }
  double us(int reps) {
    for (int i = 0; i < 3; ++i) cudaGraphLaunch(exec, stream);
    cudaEventRecord(a, stream);
    for (int i = 0; i < reps; ++i) cudaGraphLaunch(exec, stream);
    cudaEventRecord(b, stream);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    return ms * 1e3 / reps;
  }
  ~Timer() {
    cudaGraphExecDestroy(exec);
    cudaStreamDestroy(stream);
  }
};

}  // namespace

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("%s, %d SMs, %d KiB shared per SM\n", prop.name, prop.multiProcessorCount,
              static_cast<int>(prop.sharedMemPerMultiprocessor / 1024));
  cudaFuncSetAttribute(bulk_copy, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
  const std::vector<std::int64_t> sizes = {std::int64_t(64) << 20, std::int64_t(512) << 20, std::int64_t(544) << 20};
  for (const std::int64_t n : sizes) {
    char *src, *dst;
    cudaMalloc(&src, n);
    cudaMalloc(&dst, n);
    cudaMemset(src, 1, n);
    auto report = [&](const char* what, double us) {
      std::printf("%-40s %6lld MiB %9.1f us %6.2f TB/s\n", what, static_cast<long long>(n >> 20), us, 2.0 * n / us * 1e-6);
    };
    report("cudaMemcpyAsync", Timer([&](cudaStream_t s) { cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s); }).us(20));
    for (int blocks_per_sm : {4, 8, 16}) {
      const int grid = prop.multiProcessorCount * blocks_per_sm;
      char name[64];
      std::snprintf(name, sizeof name, "word kernel 256 thr x %d/SM", blocks_per_sm);
      report(name, Timer([&](cudaStream_t s) {
                     word_copy<<<grid, 256, 0, s>>>(reinterpret_cast<const int4*>(src), reinterpret_cast<int4*>(dst),
                                                    n / 16);
                   }).us(20));
    }
    for (int chunk : {16384, 32768}) {
      for (int stages : {2, 3, 4}) {
        for (int blocks_per_sm : {1, 2, 4}) {
          const int smem = chunk * stages;
          if (smem * blocks_per_sm > 220 * 1024) continue;
          const int grid = prop.multiProcessorCount * blocks_per_sm;
          char name[64];
          std::snprintf(name, sizeof name, "bulk %2d KiB x %d stages x %d/SM", chunk / 1024, stages, blocks_per_sm);
          cudaMemset(dst, 0, n);
          Timer t([&](cudaStream_t s) { bulk_copy<<<grid, 32, smem, s>>>(src, dst, n / chunk, chunk, stages, 0); });
          const double us = t.us(20);
          // Check the bytes of this variant once.
          std::vector<char> probe(4096);
          bool ok = cudaGetLastError() == cudaSuccess;
          for (std::int64_t at : {std::int64_t(0), n / 2, n - 4096}) {
            cudaMemcpy(probe.data(), dst + at, probe.size(), cudaMemcpyDeviceToHost);
            for (char c : probe) ok = ok && c == 1;
          }
          report(name, us);
          if (!ok) std::printf("  WRONG BYTES or launch error\n");
        }
      }
    }
    // One 64 KiB tile per block (grid = bytes / 64 KiB), as statexfer's apply teams.
    for (int chunk : {8192, 16384}) {
      for (int stages : {2, 4}) {
        const int per = 65536 / chunk;
        const int smem = chunk * stages;
        char name[64];
        std::snprintf(name, sizeof name, "bulk tile 64 KiB, %2d KiB x %d stages", chunk / 1024, stages);
        cudaMemset(dst, 0, n);
        Timer t([&](cudaStream_t s) {
          bulk_copy<<<static_cast<unsigned>(n / 65536), 32, smem, s>>>(src, dst, n / chunk, chunk, stages, per);
        });
        const double us = t.us(20);
        std::vector<char> probe(4096);
        bool ok = cudaGetLastError() == cudaSuccess;
        for (std::int64_t at : {std::int64_t(0), n / 2, n - 4096}) {
          cudaMemcpy(probe.data(), dst + at, probe.size(), cudaMemcpyDeviceToHost);
          for (char c : probe) ok = ok && c == 1;
        }
        report(name, us);
        if (!ok) std::printf("  WRONG BYTES or launch error\n");
      }
    }
    cudaFree(src);
    cudaFree(dst);
  }
  return 0;
}
