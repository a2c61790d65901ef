// The graph replay floor on this GPU (a yardstick for issue 29's fixed floors):
// CUDA graphs of 1 to 5 kernel nodes, each an empty kernel or one that reads a
// flag and exits (what a launch of a partly filled batch's unused stage does),
// over grids of 1, 132, 1320 and 4096 blocks of 128 or 1024 threads, and a
// small copy followed by such nodes; each graph replayed 20 times back to back
// between two events, as statexfer-bench replays a step (the best of 20 such
// batches, in µs per replay). Built by tools/gpu/stage; run on the GPU machine:
//   .carry/bin/graph_floor
#include <cuda_runtime.h>

#include <cstdio>

namespace {

__global__ void empty_kernel() {}

__global__ void flag_kernel(const int* n, int* out) {
  if (*n > 1000000) out[blockIdx.x] = 1;
}

__global__ void copy_kernel(const int4* a, int4* b, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

}  // namespace

int main() {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int *n, *out;
  cudaMalloc(&n, sizeof(int));
  cudaMemset(n, 0, sizeof(int));
  cudaMalloc(&out, 1 << 20);
  int4 *a, *b;
  cudaMalloc(&a, 16 << 10);
  cudaMalloc(&b, 16 << 10);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  const char* names[] = {"empty x128", "flag x128", "flag x1024", "copy, then flag x128"};
  for (int kind = 0; kind < 4; ++kind)
    for (int blocks : {1, 132, 1320, 4096})
      for (int nodes = 1; nodes <= 5; ++nodes) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        for (int k = 0; k < nodes; ++k) {
          if (kind == 0)
            empty_kernel<<<blocks, 128, 0, s>>>();
          else if (kind == 1 || (kind == 3 && k > 0))
            flag_kernel<<<blocks, 128, 0, s>>>(n, out);
          else if (kind == 2)
            flag_kernel<<<blocks, 1024, 0, s>>>(n, out);
          else
            copy_kernel<<<8, 128, 0, s>>>(a, b, 1024);
        }
        cudaStreamEndCapture(s, &g);
        cudaGraphInstantiate(&ge, g, 0);
        for (int i = 0; i < 50; ++i) cudaGraphLaunch(ge, s);
        float best = 1e9f;
        for (int rep = 0; rep < 20; ++rep) {
          cudaStreamSynchronize(s);
          cudaEventRecord(e0, s);
          for (int i = 0; i < 20; ++i) cudaGraphLaunch(ge, s);
          cudaEventRecord(e1, s);
          cudaEventSynchronize(e1);
          float ms = 0;
          cudaEventElapsedTime(&ms, e0, e1);
          best = ms < best ? ms : best;
        }
        std::printf("%-22s blocks %5d nodes %d: %.2f us per replay\n", names[kind], blocks, nodes, best * 1000 / 20);
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
      }
  const cudaError_t err = cudaGetLastError();
  std::printf("graph_floor: %s\n", cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}
