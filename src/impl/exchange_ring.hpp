#ifndef STATEXFER_IMPL_EXCHANGE_RING_HPP
#define STATEXFER_IMPL_EXCHANGE_RING_HPP

// GPUs with Hopper's bulk copies (bulk_copy.hpp): two staging buffers of a
// team of the prefill/decode applies. Thread 0 loads a team's next chunk into
// one buffer with a bulk copy while the team sums the other's words from shared
// memory and thread 0 stores that one with a bulk copy: the copy engine keeps
// the chunk's bytes in flight, the team's registers only sum. (The register
// path holds a chunk's words in registers, and its next loads wait for the
// checksum's multiplies: perf_tests/RESULTS.md.)

// Device code of sm_90 and newer, built on bulk_copy.hpp's bulk copies and
// mbarriers; ring_units() walks a grid's units through the ring.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>

#include "bulk_copy.hpp"
#include "exchange_format.hpp"
#include "unit_tickets.hpp"

namespace statexfer::impl {

/// Bytes of one buffer: the applies' chunks (ExchangeData::chunk_bytes()).
inline constexpr int ring_chunk_bytes = 16 * 1024;
/// Team scratch of the ring: two buffers, their mbarriers, alignment slack.
inline constexpr std::size_t ring_scratch_bytes = 2 * ring_chunk_bytes + 2 * 8 + 128;

/// Whether a chunk of `length` bytes (`padding` zeros after it) from src to
/// dst moves through a team's ChunkRing: both ends 16-byte aligned, whole
/// 16-byte words, no padding, one buffer.
KOKKOS_INLINE_FUNCTION bool ring_fits(const std::uint8_t* dst, const std::uint8_t* src, int length, int padding) {
  const auto ends = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(src);
  return padding == 0 && length > 0 && length % 16 == 0 && length <= ring_chunk_bytes && (ends & 15) == 0;
}

#if defined(STATEXFER_IMPL_BULK_COPY_DEVICE)

struct ChunkRing {
  std::uint8_t* buffers;  // two of ring_chunk_bytes, 128-byte aligned shared memory
  std::uint64_t* bars;    // a load's completion, a buffer each
  std::uint32_t phases;   // bit s: the parity buffer s's next load completes with (every thread's copy)

  /// The ring in `scratch` (ring_scratch_bytes of team scratch); thread 0 sets
  /// up its barriers, which the caller's next team barrier publishes.
  __device__ static ChunkRing make(void* scratch, int t) {
    auto* b = reinterpret_cast<std::uint8_t*>((reinterpret_cast<std::uintptr_t>(scratch) + 127) & ~std::uintptr_t(127));
    ChunkRing r{b, reinterpret_cast<std::uint64_t*>(b + 2 * ring_chunk_bytes), 0};
    if (t == 0) {
      for (int s = 0; s < 2; ++s) bulk_barrier_init(r.bars + s);
      asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    return r;
  }
  /// Thread 0: n bytes from src into buffer s, once the stores that read the
  /// buffers before have read them (the team's threads are done with buffer s:
  /// the caller's team barrier since it summed it).
  __device__ void load(int s, const std::uint8_t* src, int n) const {
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    bulk_load(buffers + s * ring_chunk_bytes, src, n, bars + s);
  }
  /// Every thread: until buffer s's load has landed.
  __device__ void wait(int s) {
    bulk_wait(bars + s, (phases >> s) & 1u);
    phases ^= 1u << s;
  }
  /// Thread 0: buffer s's first n bytes to dst.
  __device__ void store(int s, std::uint8_t* dst, int n) const { bulk_store(dst, buffers + s * ring_chunk_bytes, n); }
  /// Thread t's share of buffer s's n bytes summed as record words first, first + 1, ... (move_sum_pairs()).
  __device__ std::uint64_t sum(int s, int t, int threads, int n, std::int64_t first) const {
    const auto* w = reinterpret_cast<const std::uint64_t*>(buffers + s * ring_chunk_bytes);
    std::uint64_t total = 0;
    for (int q = t; q < n / 16; q += threads) {
      const std::uint64_t lo = w[2 * q], hi = w[2 * q + 1];
      total += checksum_word(lo, first + 2 * q) + checksum_word(hi, first + 2 * q + 1);
    }
    return total;
  }
  /// Thread 0, at the end: the buffers read by every store, before the team's
  /// shared memory goes; `ordered`: every store written too, and ordered
  /// before the generic writes and fences that follow (the landing's
  /// endpoints, which its payload may hold).
  __device__ void finish(bool ordered) const {
    if (ordered) {
      asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
      asm volatile("fence.proxy.async;" ::: "memory");
    } else {
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    for (int s = 0; s < 2; ++s)
      asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(shared_address(bars + s)) : "memory");
  }
};

/// GPUs with bulk copies: the units `tickets` hands the team, each through its
/// ChunkRing where it fits (ring_fits()), the next one loading while this one
/// is summed and stored, else by `words(unit)`, which returns the thread's
/// sum; every word summed into `carry`. `from_row`: the export (row to record,
/// a row refused across the group skipped), else the landing import (record to
/// row). Returns once every store has read its buffer (the landing: once every
/// store is written, ChunkRing::finish()).
template <class Views, class Member, class Carry, class Words>
__device__ void ring_units(const Views& v, const Member& team, std::int64_t total, std::int64_t chunks, bool from_row,
                           Carry& carry, const Words& words) {
  const int t = team.team_rank(), threads = team.team_size();
  ChunkRing ring = ChunkRing::make(team.team_scratch(0).get_shmem(static_cast<std::ptrdiff_t>(ring_scratch_bytes)), t);
  team.team_barrier();  // the ring's barriers, set up
  const UnitTickets<std::int64_t> tickets{&v.tickets(0), total};
  const auto fits = [&](const auto& u) {
    return u.live && (from_row ? ring_fits(u.payload, u.row, u.length, u.padding)
                               : ring_fits(u.row, u.payload, u.length, u.padding));
  };
  const auto load = [&](int s, const auto& u) {
    if (t == 0) ring.load(s, from_row ? u.row : u.payload, u.length);
  };
  auto units = tickets.first(team);
  auto unit = v.unit(units.begin, total, chunks, from_row);
  bool staged = fits(unit);
  if (staged) load(0, unit);
  for (int s = 0; units.begin < units.end; s ^= 1) {
    const auto u = unit;
    const bool held = staged;
    // Past its first units a team draws tickets, whose broadcast is a team
    // barrier: every thread has summed buffer s ^ 1 before it is loaded again.
    units = tickets.next(team, tickets.ask(team));
    unit = v.unit(units.begin, total, chunks, from_row);
    staged = fits(unit);
    if (staged) load(s ^ 1, unit);
    if (!u.live) continue;
    carry.into(team, v.sums, u.at);
    if (held) {
      ring.wait(s);
      if (t == 0) ring.store(s, from_row ? u.payload : u.row, u.length);
      carry.sum += ring.sum(s, t, threads, u.length, u.first);
    } else {
      carry.sum += words(u);
    }
  }
  if (t == 0) ring.finish(!from_row);
}

#endif

}  // namespace statexfer::impl

#endif
