#ifndef STATEXFER_IMPL_BULK_COPY_HPP
#define STATEXFER_IMPL_BULK_COPY_HPP

// Hopper's bulk asynchronous copies (cp.async.bulk, the TMA engine) for apply():
// one thread of a team streams a range global -> shared -> global through a ring
// of staging buffers in team scratch, completion tracked by mbarriers. It moves
// large tiles faster than the team's own loads and stores, which keep registers
// busy with the data (unit_tests/cuda/bulk_copy_bench.cu measures both; figures in
// perf_tests/RESULTS.md). Compiled for sm_90 and newer only; elsewhere apply()
// copies with loads and stores.

// No Kokkos here: unit_tests/cuda/bulk_copy_bench.cu measures the same code outside it.

#include <cstddef>
#include <cstdint>

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define STATEXFER_IMPL_BULK_COPY_DEVICE 1
#endif

namespace statexfer::impl {

inline constexpr int bulk_stages = 4;
inline constexpr int bulk_chunk = 8 * 1024;
/// Team scratch of one team: the staging ring, its mbarriers, alignment slack.
/// 32 KiB fits Kokkos 3.4's 40 KiB of level-0 scratch without an opt-in.
inline constexpr std::size_t bulk_scratch_bytes = bulk_stages * bulk_chunk + bulk_stages * 8 + 128;
/// Ranges shorter than this are copied by the team's loads and stores.
inline constexpr std::int64_t bulk_min_bytes = 4096;

#if defined(STATEXFER_IMPL_BULK_COPY_DEVICE)

__device__ inline std::uint32_t shared_address(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

/// The mbarrier at `bar` set up for one arrival a phase, by one thread; a team barrier publishes it.
__device__ inline void bulk_barrier_init(std::uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bar)) : "memory");
}

/// n bytes from src (global) into ring (shared), completing on `bar`: its one arrival, expecting them.
__device__ inline void bulk_load(std::uint8_t* ring, const std::uint8_t* src, int n, std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)), "r"(n) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   shared_address(ring)),
               "l"(src), "r"(n), "r"(shared_address(bar))
               : "memory");
}

/// Until the phase of `bar` with this parity has completed.
__device__ inline void bulk_wait(std::uint64_t* bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done)
                 : "r"(shared_address(bar)), "r"(parity)
                 : "memory");
}

/// n bytes from ring (shared) to dst (global), committed as a bulk group of their own.
__device__ inline void bulk_store(std::uint8_t* dst, const std::uint8_t* ring, int n) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(shared_address(ring)),
               "r"(n)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

/// Stream `chunks` chunks of `Chunk` bytes (the last one `last_bytes`, all
/// multiples of 16) from src + offset(j) to dst + offset(j), by the calling
/// thread alone, through `Stages` buffers of `ring` (128-byte aligned shared
/// memory) whose loads complete on the mbarriers `bar` (one per buffer). A
/// buffer is reloaded once the store of its previous chunk has read it.
/// Returns when every byte is written.
template <int Stages, int Chunk, class ChunkOffset>
__device__ inline void bulk_copy_chunks(std::uint8_t* dst, const std::uint8_t* src, std::int64_t chunks,
                                        std::int32_t last_bytes, ChunkOffset offset, std::uint8_t* ring,
                                        std::uint64_t* bar) {
  for (int s = 0; s < Stages; ++s) bulk_barrier_init(bar + s);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  auto bytes = [&](std::int64_t j) { return j == chunks - 1 ? last_bytes : Chunk; };
  auto load = [&](std::int64_t j) {
    const int s = static_cast<int>(j % Stages);
    bulk_load(ring + s * Chunk, src + offset(j), bytes(j), bar + s);
  };
  for (std::int64_t j = 0; j < chunks && j < Stages; ++j) load(j);
  for (std::int64_t j = 0; j < chunks; ++j) {
    const int s = static_cast<int>(j % Stages);
    bulk_wait(bar + s, static_cast<std::uint32_t>((j / Stages) & 1));
    bulk_store(dst + offset(j), ring + s * Chunk, bytes(j));
    // At most this chunk's group still reading: the previous buffer is free.
    if (j >= 1 && j - 1 + Stages < chunks) {
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
      load(j - 1 + Stages);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  for (int s = 0; s < Stages; ++s)
    asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(shared_address(bar + s)) : "memory");
}

/// Copy n bytes (n % 16 == 0; dst, src 16-byte aligned) by the calling thread
/// alone, staging through `scratch` (bulk_scratch_bytes of team scratch).
__device__ inline void bulk_copy_thread(std::uint8_t* dst, const std::uint8_t* src, std::int32_t n,
                                        std::uint8_t* scratch) {
  if (n <= 0) return;
  auto* ring =
      reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(scratch) + 127) & ~std::uintptr_t(127));
  auto* bar = reinterpret_cast<std::uint64_t*>(ring + bulk_stages * bulk_chunk);
  const std::int32_t chunks = (n + bulk_chunk - 1) / bulk_chunk;
  bulk_copy_chunks<bulk_stages, bulk_chunk>(
      dst, src, chunks, n - (chunks - 1) * bulk_chunk, [](std::int64_t j) { return j * bulk_chunk; }, ring, bar);
}

#endif

}  // namespace statexfer::impl

#endif
