// What an import's checksum pass may cost on this GPU (issue 31): the rate of
// reading a wire buffer of eight qwen3.5-9b records (412 MB) and summing it,
// beside the copy kernel of the same bytes. Grids: a flat one for copies (a
// 16-byte word a thread, every block short-lived; a flat read would flush a sum
// a warp into one counter, timing that atomic's contention) and persistent teams of
// 128 threads, T an SM, each holding W words a thread in flight before it sums
// them (the shape of the import's sums). Sums: a plain add, the record
// checksum of docs/CONTRACT.md §17 (SplitMix64's finalizer of each 8-byte word
// and its position, summed) and a positional multiply-add of 4-byte words
// (sum of x_i * c_i, c_i odd, one wide multiply-add a word).
// Built by tools/gpu/stage; run on the GPU machine: .carry/bin/read_floor
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

constexpr int sum_add = 0, sum_record = 1, sum_positional = 2;

// docs/CONTRACT.md §17's checksum of the record's k-th 8-byte word.
__device__ __forceinline__ std::uint64_t record_word(std::uint64_t w, std::uint64_t k) {
  std::uint64_t z = w + k * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The 16-byte word q of the buffer.
template <int Sum>
__device__ __forceinline__ std::uint64_t word_sum(uint4 v, std::uint64_t q) {
  if constexpr (Sum == sum_add) {
    return (std::uint64_t(v.y) << 32 | v.x) + (std::uint64_t(v.w) << 32 | v.z);
  } else if constexpr (Sum == sum_record) {
    return record_word(std::uint64_t(v.y) << 32 | v.x, 2 * q) + record_word(std::uint64_t(v.w) << 32 | v.z, 2 * q + 1);
  } else {
    const std::uint32_t c = static_cast<std::uint32_t>(q) * 0x9E3779B8u + 0x7F4A7C15u;  // 4-byte word 4q's, odd
    constexpr std::uint32_t step = 0x3C6EF372u;                                         // even: c stays odd
    return std::uint64_t(v.x) * c + std::uint64_t(v.y) * (c + step) + std::uint64_t(v.z) * (c + 2 * step) +
           std::uint64_t(v.w) * (c + 3 * step);
  }
}

__device__ __forceinline__ void block_flush(std::uint64_t s, unsigned long long* sink) {
  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(sink, static_cast<unsigned long long>(s));
}

__global__ void copy_flat(uint4* __restrict__ dst, const uint4* __restrict__ src, std::int64_t n) {
  const std::int64_t q = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (q < n) dst[q] = src[q];
}

// Chunks of 128 * W words, strided over by the league; W words a thread loaded before any is summed.
template <int Sum, int W>
__global__ void __launch_bounds__(128)
    read_team(const uint4* __restrict__ src, std::int64_t n, unsigned long long* sink) {
  constexpr std::int64_t chunk = 128 * W;
  std::uint64_t s = 0;
  for (std::int64_t base = std::int64_t(blockIdx.x) * chunk; base < n; base += std::int64_t(gridDim.x) * chunk) {
    uint4 v[W];
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const std::int64_t q = base + j * 128 + threadIdx.x;
      v[j] = q < n ? src[q] : uint4{0, 0, 0, 0};
    }
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const std::int64_t q = base + j * 128 + threadIdx.x;
      if (q < n) s += word_sum<Sum>(v[j], q);
    }
  }
  block_flush(s, sink);
}

// A persistent copy: chunks of 128 * W words, W a thread loaded before any is stored (Stream: evict-first
// loads and streaming stores).
template <int W, bool Stream>
__global__ void __launch_bounds__(128)
    copy_team(uint4* __restrict__ dst, const uint4* __restrict__ src, std::int64_t n) {
  constexpr std::int64_t chunk = 128 * W;
  for (std::int64_t base = std::int64_t(blockIdx.x) * chunk; base < n; base += std::int64_t(gridDim.x) * chunk) {
    uint4 v[W];
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const std::int64_t q = base + j * 128 + threadIdx.x;
      if (q < n) v[j] = Stream ? __ldcs(src + q) : src[q];
    }
#pragma unroll
    for (int j = 0; j < W; ++j) {
      const std::int64_t q = base + j * 128 + threadIdx.x;
      if (q < n) {
        if (Stream)
          __stcs(dst + q, v[j]);
        else
          dst[q] = v[j];
      }
    }
  }
}

template <int W, bool Stream>
void copy_row(uint4* dst, const uint4* src, std::int64_t n, int sms, int per_sm, double bytes) {
  const float us = best_us([&] { copy_team<W, Stream><<<sms * per_sm, 128>>>(dst, src, n); });
  std::printf("copy  team %2d an SM, %2d words a thread  %-16s %9.1f us %7.0f GB/s (read + write)\n", per_sm, W,
              Stream ? "streaming" : "", us, 2 * bytes / us / 1e3);
}

// A block's chunk of 128 * W words from `base`: every word loaded before any is stored.
template <int W>
__device__ __forceinline__ void move_chunk(uint4* __restrict__ dst, const uint4* __restrict__ src, std::int64_t n,
                                           std::int64_t base) {
  uint4 v[W];
#pragma unroll
  for (int j = 0; j < W; ++j) {
    const std::int64_t q = base + j * 128 + threadIdx.x;
    if (q < n) v[j] = src[q];
  }
#pragma unroll
  for (int j = 0; j < W; ++j) {
    const std::int64_t q = base + j * 128 + threadIdx.x;
    if (q < n) dst[q] = v[j];
  }
}

// Other ways to hand out a persistent grid's chunks: a flat grid of W words a
// thread (one chunk a block); a counter each team takes its next chunk from
// (Order 1); a contiguous range of chunks a team (Order 2).
template <int W>
__global__ void __launch_bounds__(128)
    copy_flat_words(uint4* __restrict__ dst, const uint4* __restrict__ src, std::int64_t n) {
  const std::int64_t base = std::int64_t(blockIdx.x) * 128 * W;
  move_chunk<W>(dst, src, n, base);
}

template <int W, int Order>
__global__ void __launch_bounds__(128) copy_team_order(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                                       std::int64_t n, unsigned long long* counter) {
  constexpr std::int64_t chunk = 128 * W;
  const std::int64_t chunks = (n + chunk - 1) / chunk;
  __shared__ std::int64_t next;
  std::int64_t c = Order == 1 ? -1 : chunks * blockIdx.x / gridDim.x;
  const std::int64_t end = Order == 1 ? chunks : chunks * (blockIdx.x + 1) / gridDim.x;
  for (;;) {
    if (Order == 1) {
      __syncthreads();
      if (threadIdx.x == 0) next = static_cast<std::int64_t>(atomicAdd(counter, 1ull));
      __syncthreads();
      c = next;
    }
    if (c >= end) break;
    const std::int64_t base = c * chunk;
    move_chunk<W>(dst, src, n, base);
    if (Order == 2) ++c;
  }
}

// Tickets as the library hands them out (src/impl/unit_tickets.hpp): team i takes ticket i, then asks
// for the next while it moves the current one; a ticket is G chunks of 128 * W words, moved in turn;
// the last ask of a launch sets the counter back to 0.
template <int W, int G>
__global__ void __launch_bounds__(128) copy_team_tickets(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                                         std::int64_t n, unsigned long long* counter) {
  constexpr std::int64_t chunk = 128 * W;
  const std::int64_t total = (n + chunk * G - 1) / (chunk * G), league = gridDim.x;
  const std::int64_t handed = total > league ? total - league : 0, teams = total < league ? total : league;
  __shared__ std::int64_t drawn;
  for (std::int64_t c = blockIdx.x < total ? blockIdx.x : total; c < total;) {
    const std::int64_t ask = threadIdx.x == 0 ? static_cast<std::int64_t>(atomicAdd(counter, 1ull)) : 0;
    for (int g = 0; g < G; ++g) {
      const std::int64_t base = (c * G + g) * chunk;
      move_chunk<W>(dst, src, n, base);
    }
    __syncthreads();
    if (threadIdx.x == 0) drawn = ask;
    __syncthreads();
    const std::int64_t d = drawn;
    if (d == handed + teams - 1 && threadIdx.x == 0) atomicExch(counter, 0ull);
    c = d < handed ? league + d : total;
  }
}

template <int W, int G>
void copy_ticket_row(uint4* dst, const uint4* src, std::int64_t n, int sms, int per_sm, double bytes,
                     unsigned long long* counter) {
  const float us = best_us([&] { copy_team_tickets<W, G><<<sms * per_sm, 128>>>(dst, src, n, counter); });
  unsigned long long left = 1;
  cudaMemcpy(&left, counter, sizeof(left), cudaMemcpyDeviceToHost);
  std::printf("copy  team %2d an SM, %2d words, tickets of %d          %9.1f us %7.0f GB/s (read + write)%s\n", per_sm,
              W, G, us, 2 * bytes / us / 1e3, left == 0 ? "" : " COUNTER NOT RESET");
}

template <int W>
void copy_order_rows(uint4* dst, const uint4* src, std::int64_t n, int sms, int per_sm, double bytes,
                     unsigned long long* counters) {
  const int blocks = static_cast<int>((n + 128 * W - 1) / (128 * W));
  float us = best_us([&] { copy_flat_words<W><<<blocks, 128>>>(dst, src, n); });
  std::printf("copy  flat, %2d words a thread                               %9.1f us %7.0f GB/s (read + write)\n", W,
              us, 2 * bytes / us / 1e3);
  int launch = 0;
  us = best_us([&] { copy_team_order<W, 1><<<sms * per_sm, 128>>>(dst, src, n, counters + launch++); });
  std::printf("copy  team %2d an SM, %2d words a thread  counter          %9.1f us %7.0f GB/s (read + write)\n", per_sm,
              W, us, 2 * bytes / us / 1e3);
  us = best_us([&] { copy_team_order<W, 2><<<sms * per_sm, 128>>>(dst, src, n, counters); });
  std::printf("copy  team %2d an SM, %2d words a thread  ranges           %9.1f us %7.0f GB/s (read + write)\n", per_sm,
              W, us, 2 * bytes / us / 1e3);
  for (int waves : {2, 4}) {
    us = best_us([&] { copy_team<W, false><<<sms * per_sm * waves, 128>>>(dst, src, n); });
    std::printf("copy  team %2d an SM x %d waves, %2d words                    %9.1f us %7.0f GB/s (read + write)\n",
                per_sm, waves, W, us, 2 * bytes / us / 1e3);
  }
}

// The import's sums as the library strides: a unit is (command, chunk of a
// table), the chunk's record found through the command's slot, the chunk table
// and the peer table (a chain of dependent loads before the words'); or
// (command, 32 KiB piece of its record's payload), found by arithmetic.
struct Chunk {
  std::int64_t row_offset, payload_offset;
  std::int32_t length, padding, peer, unused;
};
struct Peer {
  const unsigned char* wire;
  std::int64_t record_bytes, header_bytes, payload_bytes;
};

template <bool Table>
__global__ void __launch_bounds__(128, 4)
    read_units(const Chunk* chunks, const Peer* peers, const std::int64_t* slots, const int* ops, std::int64_t live,
               std::int64_t per_record, unsigned long long* sink) {
  constexpr int W = 16;
  std::uint64_t s = 0;
  const int t = threadIdx.x;
  for (std::int64_t u = blockIdx.x; u < live * per_record; u += gridDim.x) {
    const std::int64_t r = u / per_record, c = u - r * per_record;
    if (ops[r] != 1) continue;
    const std::int64_t slot = slots[r];
    const unsigned char* record;
    std::int64_t first, words;
    if constexpr (Table) {
      const Chunk ch = chunks[c];
      const Peer pe = peers[ch.peer];
      record = pe.wire + slot * pe.record_bytes;
      first = (pe.header_bytes + ch.payload_offset) / 8;
      words = (ch.length + ch.padding) / 8;
    } else {
      const Peer pe = peers[0];
      record = pe.wire + slot * pe.record_bytes;
      first = pe.header_bytes / 8 + c * (128 * W * 2);
      const std::int64_t left = (pe.header_bytes + pe.payload_bytes) / 8 - first;
      words = left < 128 * W * 2 ? left : 128 * W * 2;
    }
    const auto* w = reinterpret_cast<const std::uint64_t*>(record) + first;
    const std::int64_t head = (reinterpret_cast<std::uintptr_t>(w) & 15) != 0 && words > 0 ? 1 : 0;
    const std::int64_t pairs = (words - head) / 2;
    const auto* p = reinterpret_cast<const uint4*>(w + head);
    for (std::int64_t base = t; base < pairs; base += 128 * W) {
      uint4 v[W];
#pragma unroll
      for (int j = 0; j < W; ++j) {
        const std::int64_t q = base + std::int64_t(j) * 128;
        v[j] = q < pairs ? p[q] : uint4{0, 0, 0, 0};
      }
#pragma unroll
      for (int j = 0; j < W; ++j) {
        const std::int64_t q = base + std::int64_t(j) * 128;
        if (q < pairs)
          s += record_word(std::uint64_t(v[j].y) << 32 | v[j].x, first + head + 2 * q) +
               record_word(std::uint64_t(v[j].w) << 32 | v[j].z, first + head + 2 * q + 1);
      }
    }
  }
  block_flush(s, sink);
}

template <class Launch>
float best_us(Launch launch, int reps = 20, int rounds = 7) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  launch();
  cudaDeviceSynchronize();
  float best = 1e30f;
  for (int r = 0; r < rounds; ++r) {
    cudaEventRecord(a);
    for (int i = 0; i < reps; ++i) launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    if (ms * 1000 / reps < best) best = ms * 1000 / reps;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best;
}

const char* sum_name(int s) { return s == sum_add ? "add" : s == sum_record ? "record checksum" : "positional"; }

template <int Sum, int W>
void team_row(const uint4* src, std::int64_t n, unsigned long long* sink, int sms, int per_sm, double bytes) {
  const float us = best_us([&] { read_team<Sum, W><<<sms * per_sm, 128>>>(src, n, sink); });
  std::printf("read  team %2d an SM, %2d words a thread  %-16s %9.1f us %7.0f GB/s\n", per_sm, W, sum_name(Sum), us,
              bytes / us / 1e3);
}

template <int Sum>
void sum_rows(const uint4* src, std::int64_t n, unsigned long long* sink, int sms, double bytes) {
  team_row<Sum, 16>(src, n, sink, sms, 4, bytes);
  team_row<Sum, 8>(src, n, sink, sms, 8, bytes);
  team_row<Sum, 4>(src, n, sink, sms, 16, bytes);
  team_row<Sum, 32>(src, n, sink, sms, 2, bytes);
}

}  // namespace

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const std::int64_t bytes = 8 * 51507200LL;  // eight qwen3.5-9b rows (49.12 MiB each)
  const std::int64_t n = bytes / 16;
  uint4 *src = nullptr, *dst = nullptr;
  unsigned long long* sink = nullptr;
  if (cudaMalloc(&src, bytes) != cudaSuccess || cudaMalloc(&dst, bytes) != cudaSuccess ||
      cudaMalloc(&sink, sizeof(unsigned long long)) != cudaSuccess) {
    std::printf("read_floor: cudaMalloc of %lld bytes failed\n", static_cast<long long>(bytes));
    return 1;
  }
  cudaMemset(src, 0x5a, bytes);
  std::printf("read_floor: %lld bytes, %d SMs (best of 7 x 20 launches, us a launch)\n", static_cast<long long>(bytes),
              sms);
  const int blocks = static_cast<int>((n + 255) / 256);
  const float copy = best_us([&] { copy_flat<<<blocks, 256>>>(dst, src, n); });
  std::printf("copy  flat, a word a thread                              %9.1f us %7.0f GB/s (read + write)\n", copy,
              2.0 * bytes / copy / 1e3);
  copy_row<16, false>(dst, src, n, sms, 4, double(bytes));
  copy_row<8, false>(dst, src, n, sms, 5, double(bytes));
  copy_row<8, false>(dst, src, n, sms, 8, double(bytes));
  copy_row<4, false>(dst, src, n, sms, 10, double(bytes));
  copy_row<4, false>(dst, src, n, sms, 16, double(bytes));
  copy_row<2, false>(dst, src, n, sms, 16, double(bytes));
  copy_row<1, false>(dst, src, n, sms, 16, double(bytes));
  copy_row<8, true>(dst, src, n, sms, 5, double(bytes));
  copy_row<4, true>(dst, src, n, sms, 10, double(bytes));
  copy_row<2, true>(dst, src, n, sms, 16, double(bytes));
  unsigned long long* counters = nullptr;
  cudaMalloc(&counters, 512 * sizeof(unsigned long long));
  cudaMemset(counters, 0, 512 * sizeof(unsigned long long));
  cudaMemset(counters, 0, 512 * sizeof(unsigned long long));
  copy_ticket_row<8, 1>(dst, src, n, sms, 5, double(bytes), counters);
  copy_ticket_row<16, 1>(dst, src, n, sms, 4, double(bytes), counters);
  copy_ticket_row<4, 1>(dst, src, n, sms, 10, double(bytes), counters);
  copy_ticket_row<4, 2>(dst, src, n, sms, 10, double(bytes), counters);
  copy_ticket_row<2, 1>(dst, src, n, sms, 10, double(bytes), counters);
  copy_ticket_row<2, 2>(dst, src, n, sms, 10, double(bytes), counters);
  copy_ticket_row<2, 4>(dst, src, n, sms, 10, double(bytes), counters);
  copy_ticket_row<2, 8>(dst, src, n, sms, 10, double(bytes), counters);
  copy_ticket_row<2, 4>(dst, src, n, sms, 12, double(bytes), counters);
  copy_ticket_row<2, 4>(dst, src, n, sms, 16, double(bytes), counters);
  copy_ticket_row<8, 1>(dst, src, n, sms, 8, double(bytes), counters);
  copy_order_rows<8>(dst, src, n, sms, 5, double(bytes), counters);
  cudaMemset(counters, 0, 512 * sizeof(unsigned long long));
  copy_order_rows<4>(dst, src, n, sms, 10, double(bytes), counters);
  cudaMemset(counters, 0, 512 * sizeof(unsigned long long));
  copy_order_rows<2>(dst, src, n, sms, 16, double(bytes), counters);
  sum_rows<sum_add>(src, n, sink, sms, double(bytes));
  sum_rows<sum_record>(src, n, sink, sms, double(bytes));
  sum_rows<sum_positional>(src, n, sink, sms, double(bytes));
  // Eight records of a qwen3.5-9b row in the wire buffer (header 96 bytes), C = 8.
  {
    const std::int64_t header = 96, payload = 51507200 - 96, record = (header + payload + 15) / 16 * 16;
    const std::int64_t piece = 32768, pieces = (payload + piece - 1) / piece;
    std::vector<Chunk> table;
    for (std::int64_t at = 0; at < payload; at += piece)
      table.push_back({at, at, static_cast<std::int32_t>(payload - at < piece ? payload - at : piece), 0, 0, 0});
    const Peer peer{reinterpret_cast<const unsigned char*>(src), record, header, payload};
    const std::int64_t slots[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    const int ops[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    Chunk* d_table = nullptr;
    Peer* d_peer = nullptr;
    std::int64_t* d_slots = nullptr;
    int* d_ops = nullptr;
    cudaMalloc(&d_table, table.size() * sizeof(Chunk));
    cudaMalloc(&d_peer, sizeof(Peer));
    cudaMalloc(&d_slots, sizeof(slots));
    cudaMalloc(&d_ops, sizeof(ops));
    cudaMemcpy(d_table, table.data(), table.size() * sizeof(Chunk), cudaMemcpyHostToDevice);
    cudaMemcpy(d_peer, &peer, sizeof(Peer), cudaMemcpyHostToDevice);
    cudaMemcpy(d_slots, slots, sizeof(slots), cudaMemcpyHostToDevice);
    cudaMemcpy(d_ops, ops, sizeof(ops), cudaMemcpyHostToDevice);
    const double moved = 8.0 * payload;
    const std::int64_t per = static_cast<std::int64_t>(table.size());
    float us = best_us([&] { read_units<true><<<sms * 4, 128>>>(d_table, d_peer, d_slots, d_ops, 8, per, sink); });
    std::printf("read  units: chunk table, peer table     record checksum  %9.1f us %7.0f GB/s\n", us,
                moved / us / 1e3);
    us = best_us([&] { read_units<false><<<sms * 4, 128>>>(d_table, d_peer, d_slots, d_ops, 8, pieces, sink); });
    std::printf("read  units: record pieces by arithmetic record checksum  %9.1f us %7.0f GB/s\n", us,
                moved / us / 1e3);
  }
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("read_floor: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
