// The graph replay floor on this GPU (a yardstick for issue 29's fixed floors):
// CUDA graphs of 1 to 5 kernel nodes, each an empty kernel or one that reads a
// flag and exits (what a launch of a partly filled batch's unused stage does),
// over grids of 1, 132, 1320 and 4096 blocks of 128 or 1024 threads, and a
// small copy followed by such nodes; each graph replayed 20 times back to back
// between two events, as statexfer-bench replays a step (the best of 20 such
// batches, in µs per replay). `graph_floor launch` instead measures what a
// launch's own shape adds to a flag-reading node: its parameter's size (Kokkos
// passes the functor by value: a validate functor's Views are about 1 KiB),
// dynamic shared memory, and nodes that alternate between shared-memory sizes.
// `graph_floor conditional` measures what a CUDA conditional (IF) node costs
// when a first node decides to skip its body of flag nodes, against the same
// nodes unconditional (a partly filled batch above 64 commands skipping the
// sorted path's launches), captured from a stream as a library would.
// Built by tools/gpu/stage; run on the GPU machine:
//   .carry/bin/graph_floor [launch | conditional | pdl]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

namespace {

__global__ void empty_kernel() {}

__global__ void flag_kernel(const int* n, int* out) {
  if (*n > 1000000) out[blockIdx.x] = 1;
}

template <int Bytes>
struct Param {
  long v[Bytes / 8];
};

template <int Bytes>
__global__ void flag_param_kernel(const int* n, int* out, Param<Bytes> p) {
  if (*n > 1000000) out[blockIdx.x] = static_cast<int>(p.v[Bytes / 8 - 1]);
}

__global__ void flag_shared_kernel(const int* n, int* out) {
  extern __shared__ int shared[];
  if (*n > 1000000) {
    shared[threadIdx.x] = 1;
    __syncthreads();
    out[blockIdx.x] = shared[(threadIdx.x + 1) % blockDim.x];
  }
}

__global__ void copy_kernel(const int4* a, int4* b, long n) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

// A first node that reads the flag and sets the IF node's condition (block 0; no handle: none).
__global__ void deciding_kernel(const int* n, int* out, cudaGraphConditionalHandle h, int threshold) {
  const int v = *n;
  if (v > 1000000) out[blockIdx.x] = 1;
  if (h != 0 && blockIdx.x == 0 && threadIdx.x == 0) cudaGraphSetConditional(h, v > threshold ? 1u : 0u);
}

// A flag node that may start before the node ahead of it ends: it waits for that node's writes first.
__global__ void pdl_flag_kernel(const int* n, int* out) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (*n > 1000000) out[blockIdx.x] = 1;
}

// validate()'s shape: a few blocks read the flag and write a list word; the next grid reads it.
// trigger: let the next grid launch at once (it still waits for this grid's writes).
__global__ void list_kernel(const int* n, int* list, int trigger) {
  if (trigger) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  if (blockIdx.x == 0 && threadIdx.x == 0) list[0] = *n;
}

__global__ void list_copy_kernel(const int* list, const int4* a, int4* b, long n, int pdl) {
  if (pdl) asm volatile("griddepcontrol.wait;" ::: "memory");
  if (list[0] != 0) return;
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long>(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

// Best µs per replay of a graph that `record` captures on `s` (20 batches of 20 replays).
template <class Record>
float replay_us(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, Record record) {
  cudaGraph_t g;
  cudaGraphExec_t ge;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  record();
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
  cudaGraphExecDestroy(ge);
  cudaGraphDestroy(g);
  return best * 1000 / 20;
}

// What a flag node's launch shape adds: parameter bytes, dynamic shared memory, alternating shared sizes.
int launch_shapes(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, const int* n, int* out) {
  cudaFuncSetAttribute(flag_shared_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10);
  const Param<1024> p1{};
  const Param<3072> p3{};
  for (int blocks : {32, 132, 1320})
    for (int nodes = 1; nodes <= 4; ++nodes) {
      const float plain = replay_us(s, e0, e1, [&] {
        for (int k = 0; k < nodes; ++k) flag_kernel<<<blocks, 128, 0, s>>>(n, out);
      });
      const float param1 = replay_us(s, e0, e1, [&] {
        for (int k = 0; k < nodes; ++k) flag_param_kernel<1024><<<blocks, 128, 0, s>>>(n, out, p1);
      });
      const float param3 = replay_us(s, e0, e1, [&] {
        for (int k = 0; k < nodes; ++k) flag_param_kernel<3072><<<blocks, 128, 0, s>>>(n, out, p3);
      });
      const float shared8 = replay_us(s, e0, e1, [&] {
        for (int k = 0; k < nodes; ++k) flag_shared_kernel<<<blocks, 128, 8 << 10, s>>>(n, out);
      });
      const float alternate = replay_us(s, e0, e1, [&] {
        for (int k = 0; k < nodes; ++k)
          if (k % 2 == 0)
            flag_kernel<<<blocks, 128, 0, s>>>(n, out);
          else
            flag_shared_kernel<<<blocks, 128, 48 << 10, s>>>(n, out);
      });
      std::printf(
          "blocks %5d nodes %d: flag %.2f, 1 KiB param %.2f, 3 KiB param %.2f, 8 KiB shared %.2f, "
          "0 / 48 KiB shared alternating %.2f us per replay\n",
          blocks, nodes, plain, param1, param3, shared8, alternate);
    }
  const cudaError_t err = cudaGetLastError();
  std::printf("graph_floor launch: %s\n", cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}

// A deciding node, then `body` flag nodes inside an IF node (or after it,
// unconditional), then `tail` flag nodes; n = 0 and threshold 0 skip the body,
// threshold -1 runs it.
int conditional_nodes(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, const int* n, int* out) {
  cudaStream_t side;
  cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  cudaError_t first_error = cudaSuccess;
  const auto check = [&](cudaError_t e) {
    if (e != cudaSuccess && first_error == cudaSuccess) first_error = e;
  };
  for (int blocks : {32, 132, 1320})
    for (int body = 1; body <= 3; ++body)
      for (int tail = 0; tail <= 1; ++tail) {
        const float plain = replay_us(s, e0, e1, [&] {
          deciding_kernel<<<blocks, 128, 0, s>>>(n, out, 0, 0);
          for (int k = 0; k < body + tail; ++k) flag_kernel<<<blocks, 128, 0, s>>>(n, out);
        });
        const float alone = replay_us(s, e0, e1, [&] {
          deciding_kernel<<<blocks, 128, 0, s>>>(n, out, 0, 0);
          for (int k = 0; k < tail; ++k) flag_kernel<<<blocks, 128, 0, s>>>(n, out);
        });
        float cond[2];
        for (int run = 0; run < 2; ++run)
          cond[run] = replay_us(s, e0, e1, [&] {
            cudaStreamCaptureStatus status;
            cudaGraph_t g;
            const cudaGraphNode_t* deps;
            size_t ndeps = 0;
            check(cudaStreamGetCaptureInfo(s, &status, nullptr, &g, nullptr, nullptr, nullptr));
            cudaGraphConditionalHandle h;
            check(cudaGraphConditionalHandleCreate(&h, g, 0, cudaGraphCondAssignDefault));
            deciding_kernel<<<blocks, 128, 0, s>>>(n, out, h, run == 0 ? 0 : -1);
            check(cudaStreamGetCaptureInfo(s, &status, nullptr, &g, &deps, nullptr, &ndeps));
            cudaGraphNodeParams p{};
            p.type = cudaGraphNodeTypeConditional;
            p.conditional.handle = h;
            p.conditional.type = cudaGraphCondTypeIf;
            p.conditional.size = 1;
            cudaGraphNode_t node;
            check(cudaGraphAddNode(&node, g, deps, nullptr, ndeps, &p));
            check(cudaStreamUpdateCaptureDependencies(s, &node, nullptr, 1, cudaStreamSetCaptureDependencies));
            cudaGraph_t inner = p.conditional.phGraph_out[0];
            check(cudaStreamBeginCaptureToGraph(side, inner, nullptr, nullptr, 0, cudaStreamCaptureModeRelaxed));
            for (int k = 0; k < body; ++k) flag_kernel<<<blocks, 128, 0, side>>>(n, out);
            check(cudaStreamEndCapture(side, &inner));
            for (int k = 0; k < tail; ++k) flag_kernel<<<blocks, 128, 0, s>>>(n, out);
          });
        std::printf(
            "blocks %5d body %d tail %d: deciding + body + tail unconditional %.2f, deciding + tail %.2f, "
            "deciding + IF(body) skipped + tail %.2f, IF(body) run %.2f us per replay\n",
            blocks, body, tail, plain, alone, cond[0], cond[1]);
      }
  check(cudaGetLastError());
  std::printf("graph_floor conditional: %s\n", cudaGetErrorString(first_error));
  return first_error == cudaSuccess ? 0 : 1;
}

template <class... Params, class... Args>
void launch_pdl(void (*kernel)(Params...), int blocks, int threads, cudaStream_t s, Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(blocks);
  config.blockDim = dim3(threads);
  config.stream = s;
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  cudaLaunchKernelEx(&config, kernel, args...);
}

// Chains of flag nodes, and a deciding node then a copy of `words` 16-byte words, plain or with PDL edges.
int pdl_nodes(cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1, const int* n, int* out, const int4* a, int4* b) {
  for (int blocks : {132, 1320})
    for (int nodes = 1; nodes <= 4; ++nodes) {
      const float plain = replay_us(s, e0, e1, [&] {
        for (int k = 0; k < nodes; ++k) flag_kernel<<<blocks, 128, 0, s>>>(n, out);
      });
      const float pdl = replay_us(s, e0, e1, [&] {
        flag_kernel<<<blocks, 128, 0, s>>>(n, out);
        for (int k = 1; k < nodes; ++k) launch_pdl(pdl_flag_kernel, blocks, 128, s, n, out);
      });
      std::printf("flag x128 blocks %5d nodes %d: plain %.2f, PDL edges %.2f us per replay\n", blocks, nodes, plain,
                  pdl);
    }
  int* list = out + (1 << 16);
  for (long words : {1024L, 1L << 16, 1L << 20, 3252244L})  // 16 KiB, 1 MiB, 16 MiB, a qwen3.5-9b row
    for (int deciders : {1, 8}) {
      const int grid = 1320;
      const float copy = replay_us(s, e0, e1, [&] { list_copy_kernel<<<grid, 128, 0, s>>>(n, a, b, words, 0); });
      const float plain = replay_us(s, e0, e1, [&] {
        list_kernel<<<deciders, 128, 0, s>>>(n, list, 0);
        list_copy_kernel<<<grid, 128, 0, s>>>(list, a, b, words, 0);
      });
      const float pdl = replay_us(s, e0, e1, [&] {
        list_kernel<<<deciders, 128, 0, s>>>(n, list, 0);
        launch_pdl(list_copy_kernel, grid, 128, s, static_cast<const int*>(list), a, b, words, 1);
      });
      const float early = replay_us(s, e0, e1, [&] {
        list_kernel<<<deciders, 128, 0, s>>>(n, list, 1);
        launch_pdl(list_copy_kernel, grid, 128, s, static_cast<const int*>(list), a, b, words, 1);
      });
      std::printf(
          "copy of %8ld words (1320 x 128) after %d deciding blocks: copy alone %.2f, plain %.2f, "
          "PDL edge %.2f, PDL edge triggered at the decider's start %.2f us per replay\n",
          words, deciders, copy, plain, pdl, early);
    }
  const cudaError_t err = cudaGetLastError();
  std::printf("graph_floor pdl: %s\n", cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  int *n, *out;
  cudaMalloc(&n, sizeof(int));
  cudaMemset(n, 0, sizeof(int));
  cudaMalloc(&out, 1 << 20);
  int4 *a, *b;
  const bool pdl = argc > 1 && std::strcmp(argv[1], "pdl") == 0;
  const std::size_t copy_bytes = pdl ? 3252244UL * 16 : 16 << 10;
  cudaMalloc(&a, copy_bytes);
  cudaMalloc(&b, copy_bytes);
  cudaMemset(a, 0, copy_bytes);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  if (argc > 1 && std::strcmp(argv[1], "launch") == 0) return launch_shapes(s, e0, e1, n, out);
  if (argc > 1 && std::strcmp(argv[1], "conditional") == 0) return conditional_nodes(s, e0, e1, n, out);
  if (pdl) return pdl_nodes(s, e0, e1, n, out, a, b);
  const char* names[] = {"empty x128", "flag x128", "flag x1024", "copy, then flag x128"};
  for (int kind = 0; kind < 4; ++kind)
    for (int blocks : {1, 132, 1320, 4096})
      for (int nodes = 1; nodes <= 5; ++nodes) {
        const float us = replay_us(s, e0, e1, [&] {
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
        });
        std::printf("%-22s blocks %5d nodes %d: %.2f us per replay\n", names[kind], blocks, nodes, us);
      }
  const cudaError_t err = cudaGetLastError();
  std::printf("graph_floor: %s\n", cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}
