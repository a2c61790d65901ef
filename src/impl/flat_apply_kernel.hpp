#ifndef STATEXFER_IMPL_FLAT_APPLY_KERNEL_HPP
#define STATEXFER_IMPL_FLAT_APPLY_KERNEL_HPP

// apply() on GPUs: a flat grid with a thread per `Words` words of a work item,
// the shape of the plain copy kernel. A block of 128 threads covers a few KiB of
// one item and waits only for one cached round of (plan, error, item) loads;
// thousands of such short blocks keep more bytes in flight than teams that each
// stream a whole tile, which is what closes the gap to the copy kernel on rows
// of tens of MiB (perf_tests/RESULTS.md). Host backends keep ApplyFunctor's
// team of one (a memcpy per tile).

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "apply_kernel.hpp"
#include "device_types.hpp"
#include "wide_copy.hpp"

namespace statexfer::impl {

/// Bytes [0, n) from src to dst (zeros when src is null) by thread t of the
/// `threads` of one item: words t, t + threads, ... of the widest `Word` that
/// dst and src share the alignment of, up to `Words` loads in flight before the
/// stores, and one edge byte for each thread below the count of edge bytes
/// (fewer than 32: `threads` >= 32 covers them).
template <class Word, int Words>
KOKKOS_INLINE_FUNCTION void flat_move(std::uint8_t* KOKKOS_RESTRICT dst, const std::uint8_t* KOKKOS_RESTRICT src, int n,
                                      int t, int threads) {
  const WordSpan span = word_span<sizeof(Word)>(dst, n);
  const int head = span.head, words = span.words, tail_begin = span.tail_begin;
  Word* KOKKOS_RESTRICT d = reinterpret_cast<Word*>(dst + head);
  const Word* KOKKOS_RESTRICT s = reinterpret_cast<const Word*>(src + head);
  // One round for 16-byte words (the grid covers the item); narrower words loop.
  for (int base = t; base < words; base += threads * Words) {
    Word v[Words]{};  // zeros for a reset
    if (src != nullptr)
      for (int j = 0; j < Words; ++j)
        if (base + j * threads < words) v[j] = s[base + j * threads];
    for (int j = 0; j < Words; ++j)
      if (base + j * threads < words) d[base + j * threads] = v[j];
  }
  const int edge = head + (n - tail_begin);
  if (t < edge) {
    const int b = t < head ? t : tail_begin + (t - head);
    dst[b] = src == nullptr ? std::uint8_t(0) : src[b];
  }
}

/// flat_move() in the widest word whose alignment dst and src share.
template <int Words>
KOKKOS_INLINE_FUNCTION void flat_move_widest(std::uint8_t* dst, const std::uint8_t* src, int n, int t, int threads) {
  const auto shared = reinterpret_cast<std::uintptr_t>(dst) ^ reinterpret_cast<std::uintptr_t>(src);
  if ((shared & 15) == 0)
    flat_move<Word16, Words>(dst, src, n, t, threads);
  else if ((shared & 7) == 0)
    flat_move<std::uint64_t, Words>(dst, src, n, t, threads);
  else if ((shared & 3) == 0)
    flat_move<std::uint32_t, Words>(dst, src, n, t, threads);
  else
    flat_move<std::uint8_t, Words>(dst, src, n, t, threads);
}

/// Thread i of the grid: item w = i >> thread_shift of row w / items_per_row,
/// thread i mod 2^thread_shift of that item.
template <class ExecutionSpace, int Words = 2>
struct FlatApplyFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  // 16 blocks of 128 fill an H100/H200 SM when the kernel fits 32 registers;
  // four 16-byte words in flight need more (12 blocks: 40 registers).
  using policy_type = Kokkos::RangePolicy<ExecutionSpace, Kokkos::LaunchBounds<128, Words >= 4 ? 12 : 16>,
                                          Kokkos::IndexType<std::int64_t>>;

  Kokkos::View<const std::int32_t*, memory_space> errors;
  Kokkos::View<const RowPlan*, memory_space> plan;
  Kokkos::View<const WorkItem*, memory_space> items;
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, memory_space> state_rows;  // written by remapping commits
  std::int32_t items_per_row;
  std::int32_t thread_shift;

  KOKKOS_INLINE_FUNCTION void operator()(const std::int64_t i) const {
    const auto w = static_cast<std::int32_t>(i >> thread_shift);
    const auto t = static_cast<std::int32_t>(i & ((std::int64_t(1) << thread_shift) - 1));
    const std::int32_t r = w / items_per_row;
    // Three independent loads, the same for every thread of the item (cached);
    // the plan's fields are read where they are used (a copy of the whole plan
    // would not fit the 32 registers that 16 blocks of 128 threads leave).
    const RowPlan& p = plan(r);
    const std::int32_t error = errors(r);
    const std::int32_t item_index = w - r * items_per_row;
    const WorkItem item = items(item_index);
    if ((p.flags & plan_remap) && (p.flags & plan_active) && error == 0) {
      if (item_index == 0 && t == 0) remap_state_rows(state_rows, p);
      return;
    }
    const ItemMove m = item_move(p, error, item);
    // A thread at or past both the item's length and 32 has neither a word nor an edge byte.
    if (m.length == 0 || (t >= 32 && t >= m.length)) return;
    if (m.stamp) {
      if (t == 0) stamp_key(m.dst, p.key);
      return;
    }
    flat_move_widest<Words>(m.dst, m.src, static_cast<int>(m.length), t, 1 << thread_shift);
  }
};

}  // namespace statexfer::impl

#endif
