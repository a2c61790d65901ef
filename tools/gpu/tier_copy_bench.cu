// Host tier copy yardsticks (issue 14), outside Kokkos: moving a row between
// device memory and pinned host memory, both directions, for rows of 64 KiB to
// 64 MiB, by
//   (a) a kernel reading/writing the mapped pinned memory with 16-byte words
//       (a few grid shapes and ILP depths: what statexfer's apply() does for a
//       tier move), captured in a graph;
//   (b) cudaMemcpyAsync captured in a graph;
//   (c) a batch of copies (cudaMemcpyBatchAsync, CUDA 12.8+, eager; and the
//       same pieces as memcpy nodes of one graph), the row in 8 pieces;
//   (d) an eager cudaMemcpyAsync: the yardstick (100 %);
// and (a) and (b) again while a 256 MiB device-to-device copy kernel runs on
// another stream (the model's own traffic): the D2D time alone and overlapped.
// Bytes are verified once per variant.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o tier_copy_bench tools/gpu/tier_copy_bench.cu
//   tier_copy_bench [REPS]      prints µs, GB/s and % of eager per variant, size, direction

#include <cuda_runtime.h>

#include "cuda_yardstick.cuh"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Kernel {
  const char* name;
  int blocks, threads, ilp;
};

void launch_kernel(const Kernel& k, const void* src, void* dst, std::size_t bytes, cudaStream_t s) {
  const auto words = static_cast<std::int64_t>(bytes / 16);
  const auto* in = static_cast<const int4*>(src);
  auto* out = static_cast<int4*>(dst);
  if (k.ilp == 1) yardstick::word_copy<1><<<k.blocks, k.threads, 0, s>>>(in, out, words);
  if (k.ilp == 4) yardstick::word_copy<4><<<k.blocks, k.threads, 0, s>>>(in, out, words);
  if (k.ilp == 8) yardstick::word_copy<8><<<k.blocks, k.threads, 0, s>>>(in, out, words);
}

constexpr int pieces = 8;  // (c): the row in this many copies

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const std::vector<std::size_t> sizes = {64u << 10, 256u << 10, 1u << 20, 4u << 20, 16u << 20, 64u << 20};
  const std::size_t max_bytes = sizes.back(), d2d_bytes = std::size_t(256) << 20;
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# tier_copy_bench: %s, %d SMs, %d reps per figure\n", prop.name, sms, reps);

  std::uint8_t *dev, *host, *host_mapped, *d2d_src, *d2d_dst;
  CHECK(cudaMalloc(&dev, max_bytes));
  CHECK(cudaHostAlloc(&host, max_bytes, cudaHostAllocMapped | cudaHostAllocPortable));
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&host_mapped), host, 0));
  CHECK(cudaMalloc(&d2d_src, d2d_bytes));
  CHECK(cudaMalloc(&d2d_dst, d2d_bytes));
  CHECK(cudaMemset(d2d_src, 1, d2d_bytes));
  std::vector<std::uint8_t> pattern(max_bytes), check(max_bytes);
  for (std::size_t i = 0; i < max_bytes; ++i) pattern[i] = static_cast<std::uint8_t>((i * 131 + 7) >> 3);

  cudaStream_t s, other;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  const Kernel kernels[] = {{"kernel 1x/SM x256 ilp1", sms, 256, 1},
                            {"kernel 4x/SM x256 ilp4", 4 * sms, 256, 4},
                            {"kernel 8x/SM x512 ilp8", 8 * sms, 512, 8}};
  const Kernel d2d_kernel{"d2d", 4 * sms, 512, 4};
  const double d2d_alone =
      yardstick::time_us(s, reps, [&] { launch_kernel(d2d_kernel, d2d_src, d2d_dst, d2d_bytes, s); });
  std::printf("# D2D copy kernel of 256 MiB alone: %.1f us (%.0f GB/s read + write)\n", d2d_alone,
              2.0 * d2d_bytes / d2d_alone / 1e3);
  std::printf("%-10s %-4s %-34s %10s %8s %8s %14s\n", "row", "dir", "variant", "us", "GB/s", "% eager",
              "D2D us (over.)");

  for (const std::size_t bytes : sizes) {
    for (const bool to_host : {true, false}) {
      void* dst = to_host ? static_cast<void*>(host) : dev;
      const void* src = to_host ? static_cast<const void*>(dev) : host;
      void* dst_mapped = to_host ? static_cast<void*>(host_mapped) : dev;
      const void* src_mapped = to_host ? static_cast<const void*>(dev) : host_mapped;
      const cudaMemcpyKind kind = to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
      const char* dir = to_host ? "D2H" : "H2D";
      // Verify: source holds the pattern, destination is cleared, one run, compare.
      auto verify = [&](const char* name, const std::function<void()>& step) {
        if (to_host) {
          CHECK(cudaMemcpy(dev, pattern.data(), bytes, cudaMemcpyHostToDevice));
          std::memset(host, 0, bytes);
        } else {
          std::memcpy(host, pattern.data(), bytes);
          CHECK(cudaMemset(dev, 0, bytes));
        }
        CHECK(cudaDeviceSynchronize());
        step();
        CHECK(cudaStreamSynchronize(s));
        if (to_host)
          std::memcpy(check.data(), host, bytes);
        else
          CHECK(cudaMemcpy(check.data(), dev, bytes, cudaMemcpyDeviceToHost));
        if (std::memcmp(check.data(), pattern.data(), bytes) != 0) {
          std::fprintf(stderr, "%s %s %zu bytes: wrong bytes\n", name, dir, bytes);
          std::exit(1);
        }
      };
      double eager = 0;
      auto report = [&](const std::string& name, double us, double d2d_over) {
        char over[32] = "";
        if (d2d_over > 0) std::snprintf(over, sizeof over, "%.1f", d2d_over);
        std::printf("%-10zu %-4s %-34s %10.1f %8.1f %8.0f %14s\n", bytes, dir, name.c_str(), us, bytes / us / 1e3,
                    eager > 0 ? 100.0 * eager / us : 100.0, over);
      };
      // (d) the yardstick first.
      auto eager_step = [&] { CHECK(cudaMemcpyAsync(dst, src, bytes, kind, s)); };
      verify("eager memcpy", eager_step);
      eager = yardstick::time_us(s, reps, eager_step);
      report("(d) eager cudaMemcpyAsync", eager, 0);
      // (b) memcpy in a graph.
      cudaGraphExec_t memcpy_graph = yardstick::capture(s, eager_step);
      auto memcpy_graph_step = [&] { CHECK(cudaGraphLaunch(memcpy_graph, s)); };
      verify("graph memcpy", memcpy_graph_step);
      report("(b) cudaMemcpyAsync in a graph", yardstick::time_us(s, reps, memcpy_graph_step), 0);
      // (c) the row in pieces: memcpy nodes of one graph, and cudaMemcpyBatchAsync.
      const std::size_t piece = bytes / pieces;
      cudaGraphExec_t pieces_graph = yardstick::capture(s, [&] {
        for (int p = 0; p < pieces; ++p)
          CHECK(cudaMemcpyAsync(static_cast<std::uint8_t*>(dst) + p * piece,
                                static_cast<const std::uint8_t*>(src) + p * piece, piece, kind, s));
      });
      auto pieces_step = [&] { CHECK(cudaGraphLaunch(pieces_graph, s)); };
      verify("graph memcpy pieces", pieces_step);
      report("(c) 8 memcpy nodes in a graph", yardstick::time_us(s, reps, pieces_step), 0);
#if CUDART_VERSION >= 12080
      {
        std::vector<void*> dsts(pieces);
        std::vector<const void*> srcs(pieces);
        std::vector<std::size_t> lens(pieces, piece);
        for (int p = 0; p < pieces; ++p) {
          dsts[p] = static_cast<std::uint8_t*>(dst) + p * piece;
          srcs[p] = static_cast<const std::uint8_t*>(src) + p * piece;
        }
        cudaMemcpyAttributes attr{};
        attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
        attr.flags = cudaMemcpyFlagPreferOverlapWithCompute;
        std::size_t attr_index = 0;
        auto batch_step = [&] {
          CHECK(cudaMemcpyBatchAsync(dsts.data(), const_cast<void**>(srcs.data()), lens.data(), pieces, &attr,
                                     &attr_index, 1, s));
        };
        verify("memcpy batch", batch_step);
        report("(c) cudaMemcpyBatchAsync, 8 pieces", yardstick::time_us(s, reps, batch_step), 0);
      }
#endif
      // (a) kernels over the mapped memory, in graphs.
      std::vector<cudaGraphExec_t> kernel_graphs;
      for (const Kernel& k : kernels) {
        cudaGraphExec_t g = yardstick::capture(s, [&] { launch_kernel(k, src_mapped, dst_mapped, bytes, s); });
        kernel_graphs.push_back(g);
        auto step = [&] { CHECK(cudaGraphLaunch(g, s)); };
        verify(k.name, step);
        report(std::string("(a) ") + k.name, yardstick::time_us(s, reps, step), 0);
      }
      // Overlapped with the 256 MiB D2D kernel on the other stream: the tier
      // copy's time, and the D2D kernel's time while the copies run.
      auto overlapped = [&](const std::string& name, const std::function<void()>& step) {
        cudaEvent_t a, b;
        CHECK(cudaEventCreate(&a));
        CHECK(cudaEventCreate(&b));
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaEventRecord(a, other));
        for (int i = 0; i < reps; ++i) launch_kernel(d2d_kernel, d2d_src, d2d_dst, d2d_bytes, other);
        CHECK(cudaEventRecord(b, other));
        const double us = yardstick::time_us(s, reps, step);
        CHECK(cudaEventSynchronize(b));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, a, b));
        report(name + " +D2D", us, 1000.0 * ms / reps);
        CHECK(cudaEventDestroy(a));
        CHECK(cudaEventDestroy(b));
      };
      overlapped("(b) graph memcpy", memcpy_graph_step);
      overlapped(std::string("(a) ") + kernels[1].name, [&] { CHECK(cudaGraphLaunch(kernel_graphs[1], s)); });
      for (auto g : kernel_graphs) CHECK(cudaGraphExecDestroy(g));
      CHECK(cudaGraphExecDestroy(memcpy_graph));
      CHECK(cudaGraphExecDestroy(pieces_graph));
    }
  }
  CHECK(cudaFree(dev));
  CHECK(cudaFreeHost(host));
  CHECK(cudaFree(d2d_src));
  CHECK(cudaFree(d2d_dst));
  return 0;
}
