// Device-copy yardsticks on Hopper, outside Kokkos: cudaMemcpyAsync, a plain
// 16-byte-word kernel, and bulk asynchronous copies (cp.async.bulk, the TMA
// engine) staged through shared memory. Each is captured in a CUDA graph and
// replayed, like statexfer-bench's figures.
//
//   nvcc -O3 -arch=sm_90 -o bulk_copy_bench unit_tests/cuda/bulk_copy_bench.cu
//
// Here, not in tools/: it measures an internal of the library (the ring of
// src/impl/bulk_copy.hpp), and only src/ and unit_tests/ reach the internals
// (tools/check-impl-includes). Not part of the CUDA test executable, which
// takes this folder's *.cpp; tools/gpu/stage compiles it.
//   bulk_copy_bench            prints µs and TB/s (read + write) per variant and size

#include <cuda_runtime.h>

#include "../../src/impl/bulk_copy.hpp"

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

// Every thread keeps ILP 16-byte loads in flight before it stores them; with
// `tile_words` > 0 a block copies one tile of that many words (as a team of
// statexfer's apply), else blocks stride over the buffer.
template <int ILP>
__global__ void word_copy_ilp(const int4* __restrict__ src, int4* __restrict__ dst, std::int64_t words,
                              std::int64_t tile_words) {
  std::int64_t begin = 0, end = words, i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x,
               stride = std::int64_t(gridDim.x) * blockDim.x;
  if (tile_words > 0) {
    begin = blockIdx.x * tile_words, end = begin + tile_words < words ? begin + tile_words : words;
    i = begin + threadIdx.x, stride = blockDim.x;
  }
  for (; i + (ILP - 1) * stride < end; i += ILP * stride) {
    int4 v[ILP];
#pragma unroll
    for (int k = 0; k < ILP; ++k) v[k] = src[i + k * stride];
#pragma unroll
    for (int k = 0; k < ILP; ++k) dst[i + k * stride] = v[k];
  }
  for (; i < end; i += stride) dst[i] = src[i];
}

// A block of T threads copies K * T words, every thread its K loads before its
// stores, with no loop: the grid covers the buffer in address order, as the
// one-word RangePolicy yardstick does with K = 1. With `Plan`, the block first
// reads its row's addresses and its tile's offset from two tables (independent
// loads, as an apply team reads its plan and work item) before it copies.
struct FlatRow {
  const int4* src;
  int4* dst;
};
template <int K, bool Plan>
__global__ void word_copy_flat(const int4* __restrict__ src, int4* __restrict__ dst, std::int64_t words,
                               const FlatRow* __restrict__ rows, const std::int32_t* __restrict__ tile_offset,
                               std::int32_t tiles_per_row) {
  const std::int64_t b = blockIdx.x;
  const int4* s = src;
  int4* d = dst;
  std::int64_t base = b * K * blockDim.x;
  if constexpr (Plan) {
    const std::int64_t r = b / tiles_per_row;
    const FlatRow row = rows[r];
    const std::int32_t off = tile_offset[b - r * tiles_per_row];
    s = row.src, d = row.dst, base = off;
  }
  int4 v[K];
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const std::int64_t i = base + k * blockDim.x + threadIdx.x;
    if (Plan || i < words) v[k] = s[i];
  }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const std::int64_t i = base + k * blockDim.x + threadIdx.x;
    if (Plan || i < words) d[i] = v[k];
  }
}

// One thread per block drives the library's ring (src/impl/bulk_copy.hpp):
// chunks blockIdx.x, blockIdx.x + gridDim.x, ... of the buffer or, with
// `per_block` > 0, chunks [b * per_block, (b + 1) * per_block): one tile per
// block, as a team of statexfer's apply.
template <int Stages, int Chunk>
__global__ void bulk_copy(const std::uint8_t* __restrict__ src, std::uint8_t* __restrict__ dst, std::int64_t chunks,
                          int per_block) {
#if defined(STATEXFER_IMPL_BULK_COPY_DEVICE)
  extern __shared__ __align__(128) std::uint8_t ring[];
  __shared__ __align__(8) std::uint64_t bar[Stages];
  if (threadIdx.x != 0) return;
  const std::int64_t b = blockIdx.x, grid = gridDim.x;
  if (per_block > 0) {
    statexfer::impl::bulk_copy_chunks<Stages, Chunk>(
        dst, src, per_block, Chunk, [&](std::int64_t j) { return (b * per_block + j) * Chunk; }, ring, bar);
  } else {
    const std::int64_t mine = chunks > b ? (chunks - b + grid - 1) / grid : 0;
    statexfer::impl::bulk_copy_chunks<Stages, Chunk>(
        dst, src, mine, Chunk, [&](std::int64_t j) { return (b + j * grid) * Chunk; }, ring, bar);
  }
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
  const std::vector<std::int64_t> sizes = {std::int64_t(64) << 20, std::int64_t(512) << 20, std::int64_t(544) << 20};
  for (const std::int64_t n : sizes) {
    char *src, *dst;
    cudaMalloc(&src, n);
    cudaMalloc(&dst, n);
    cudaMemset(src, 1, n);
    auto report = [&](const char* what, double us) {
      std::printf("%-40s %6lld MiB %9.1f us %6.2f TB/s\n", what, static_cast<long long>(n >> 20), us,
                  2.0 * n / us * 1e-6);
    };
    // A copy of the variant just timed left 1s at dst (src holds 1s): checked at three places.
    auto check_bytes = [&]() {
      std::vector<char> probe(4096);
      bool ok = cudaGetLastError() == cudaSuccess;
      for (std::int64_t at : {std::int64_t(0), n / 2, n - 4096}) {
        cudaMemcpy(probe.data(), dst + at, probe.size(), cudaMemcpyDeviceToHost);
        for (char c : probe) ok = ok && c == 1;
      }
      if (!ok) std::printf("  WRONG BYTES or launch error\n");
    };
    report("cudaMemcpyAsync",
           Timer([&](cudaStream_t s) { cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s); }).us(20));
    {  // not captured: what an eager copy (torch's, for one) gets
      cudaStream_t s;
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
      cudaEvent_t a, b;
      cudaEventCreate(&a);
      cudaEventCreate(&b);
      for (int i = 0; i < 3; ++i) cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s);
      cudaEventRecord(a, s);
      for (int i = 0; i < 20; ++i) cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, s);
      cudaEventRecord(b, s);
      cudaEventSynchronize(b);
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      report("cudaMemcpyAsync, eager (not in a graph)", ms * 1e3 / 20);
      cudaStreamDestroy(s);
    }
    for (int ilp : {4, 8}) {
      for (int per_sm : {4, 8}) {
        const int grid = prop.multiProcessorCount * per_sm;
        char label[64];
        std::snprintf(label, sizeof label, "word kernel ILP %d, 256 thr x %d/SM", ilp, per_sm);
        report(label, Timer([&](cudaStream_t s) {
                        auto k = ilp == 4 ? word_copy_ilp<4> : word_copy_ilp<8>;
                        k<<<grid, 256, 0, s>>>(reinterpret_cast<const int4*>(src), reinterpret_cast<int4*>(dst), n / 16,
                                               0);
                      }).us(20));
      }
      char label[64];
      std::snprintf(label, sizeof label, "word tile 64 KiB ILP %d, 128 thr", ilp);
      report(label, Timer([&](cudaStream_t s) {
                      auto k = ilp == 4 ? word_copy_ilp<4> : word_copy_ilp<8>;
                      k<<<static_cast<unsigned>(n / 65536), 128, 0, s>>>(reinterpret_cast<const int4*>(src),
                                                                         reinterpret_cast<int4*>(dst), n / 16, 4096);
                    }).us(20));
    }
    {  // flat grids in address order, without and with a plan read per block
      const std::int64_t words = n / 16, row_words = (std::int64_t(8) << 20) / 16;
      const std::int64_t nrows = words / row_words;
      FlatRow* rows;
      std::int32_t* offsets;
      cudaMalloc(&rows, nrows * sizeof(FlatRow));
      cudaMalloc(&offsets, row_words * sizeof(std::int32_t));
      std::vector<FlatRow> hrows(nrows);
      for (std::int64_t r = 0; r < nrows; ++r)
        hrows[r] = {reinterpret_cast<const int4*>(src) + r * row_words, reinterpret_cast<int4*>(dst) + r * row_words};
      cudaMemcpy(rows, hrows.data(), nrows * sizeof(FlatRow), cudaMemcpyHostToDevice);
      auto flat = [&](auto kernel, int k, int threads, bool plan) {
        const std::int64_t tile = std::int64_t(k) * threads;
        const std::int64_t tiles_per_row = row_words / tile;
        std::vector<std::int32_t> hoff(tiles_per_row);
        for (std::int64_t t = 0; t < tiles_per_row; ++t) hoff[t] = static_cast<std::int32_t>(t * tile);
        cudaMemcpy(offsets, hoff.data(), hoff.size() * sizeof(std::int32_t), cudaMemcpyHostToDevice);
        const unsigned grid = static_cast<unsigned>(plan ? nrows * tiles_per_row : (words + tile - 1) / tile);
        char label[64];
        std::snprintf(label, sizeof label, "flat %s%d word x %d thr (%lld KiB)", plan ? "plan, " : "", k, threads,
                      static_cast<long long>(tile * 16 / 1024));
        cudaMemset(dst, 0, n);
        Timer t([&](cudaStream_t s) {
          kernel<<<grid, threads, 0, s>>>(reinterpret_cast<const int4*>(src), reinterpret_cast<int4*>(dst), words, rows,
                                          offsets, static_cast<std::int32_t>(tiles_per_row));
        });
        report(label, t.us(20));
        check_bytes();
      };
      for (int threads : {128, 256}) {
        flat(word_copy_flat<1, false>, 1, threads, false);
        flat(word_copy_flat<2, false>, 2, threads, false);
        flat(word_copy_flat<4, false>, 4, threads, false);
        flat(word_copy_flat<1, true>, 1, threads, true);
        flat(word_copy_flat<2, true>, 2, threads, true);
        flat(word_copy_flat<4, true>, 4, threads, true);
        flat(word_copy_flat<8, true>, 8, threads, true);
      }
      cudaFree(rows);
      cudaFree(offsets);
    }
    for (int blocks_per_sm : {4, 8, 16}) {
      const int grid = prop.multiProcessorCount * blocks_per_sm;
      char name[64];
      std::snprintf(name, sizeof name, "word kernel 256 thr x %d/SM", blocks_per_sm);
      report(name, Timer([&](cudaStream_t s) {
                     word_copy<<<grid, 256, 0, s>>>(reinterpret_cast<const int4*>(src), reinterpret_cast<int4*>(dst),
                                                    n / 16);
                   }).us(20));
    }
    // The bytes of every bulk variant are checked once.
    auto bulk = [&](const char* what, auto kernel, int chunk, int stages, unsigned grid, int per_block) {
      const int smem = chunk * stages;
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
      cudaMemset(dst, 0, n);
      Timer t([&](cudaStream_t s) {
        kernel<<<grid, 32, smem, s>>>(reinterpret_cast<const std::uint8_t*>(src), reinterpret_cast<std::uint8_t*>(dst),
                                      n / chunk, per_block);
      });
      report(what, t.us(20));
      check_bytes();
    };
    // Persistent blocks striding over the buffer: chunk x stages x blocks per SM.
    char name[64];
    for (int per_sm : {1, 2, 4}) {
      const unsigned grid = prop.multiProcessorCount * per_sm;
      auto strided = [&](auto kernel, int chunk, int stages) {
        if (chunk * stages * per_sm > 220 * 1024) return;
        std::snprintf(name, sizeof name, "bulk %2d KiB x %d stages x %d/SM", chunk / 1024, stages, per_sm);
        bulk(name, kernel, chunk, stages, grid, 0);
      };
      strided(bulk_copy<2, 16384>, 16384, 2);
      strided(bulk_copy<3, 16384>, 16384, 3);
      strided(bulk_copy<4, 16384>, 16384, 4);
      strided(bulk_copy<2, 32768>, 32768, 2);
      strided(bulk_copy<3, 32768>, 32768, 3);
      strided(bulk_copy<4, 32768>, 32768, 4);
    }
    // One 64 KiB tile per block (grid = bytes / 64 KiB), as statexfer's apply teams.
    auto tile = [&](auto kernel, int chunk, int stages) {
      std::snprintf(name, sizeof name, "bulk tile 64 KiB, %2d KiB x %d stages", chunk / 1024, stages);
      bulk(name, kernel, chunk, stages, static_cast<unsigned>(n / 65536), 65536 / chunk);
    };
    tile(bulk_copy<2, 8192>, 8192, 2);
    tile(bulk_copy<4, 8192>, 8192, 4);
    tile(bulk_copy<2, 16384>, 16384, 2);
    tile(bulk_copy<4, 16384>, 16384, 4);
    cudaFree(src);
    cudaFree(dst);
  }
  return 0;
}
