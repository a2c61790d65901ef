#ifndef STATEXFER_IMPL_WIDE_COPY_HPP
#define STATEXFER_IMPL_WIDE_COPY_HPP

// Team-wide byte copies in the widest word that source and destination share
// the alignment of: 16-byte words with byte edges, else 8, 4 or 1 byte.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace statexfer::impl {

struct alignas(16) Word16 {
  std::uint64_t lo, hi;
};

/// Where the `W`-byte words of [dst, dst + n) lie: `head` bytes up to the first
/// aligned word, then `words` words, then the tail from `tail_begin`.
struct WordSpan {
  int head, words, tail_begin;
};

template <int W>
KOKKOS_INLINE_FUNCTION WordSpan word_span(const std::uint8_t* dst, int n) {
  int head = static_cast<int>((W - (reinterpret_cast<std::uintptr_t>(dst) & (W - 1))) & (W - 1));
  if (head > n) head = n;
  const int words = (n - head) / W;
  return WordSpan{head, words, head + words * W};
}

/// The bytes of [0, n) outside [head, tail_begin), whose aligned words another
/// loop (or a bulk copy) moves: fewer than 2 words, one thread each.
template <class Member>
KOKKOS_INLINE_FUNCTION void copy_edge_bytes(const Member& team, std::uint8_t* KOKKOS_RESTRICT dst,
                                            const std::uint8_t* KOKKOS_RESTRICT src, int head, int tail_begin, int n) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, head + (n - tail_begin)), [&](const int i) {
    const int b = i < head ? i : tail_begin + (i - head);
    dst[b] = src[b];
  });
}

// Offsets are 32-bit: a copy is one work-map tile (tile_bytes), and narrower
// indices leave registers for the loads in flight.
template <class Word, int unroll, class Member>
KOKKOS_INLINE_FUNCTION void copy_words(const Member& team, std::uint8_t* KOKKOS_RESTRICT dst,
                                       const std::uint8_t* KOKKOS_RESTRICT src, int n) {
  // Bytes up to the first aligned word of dst (src shares its alignment).
  const WordSpan span = word_span<sizeof(Word)>(dst, n);
  const int head = span.head, words = span.words, tail_begin = span.tail_begin;
  Word* KOKKOS_RESTRICT d = reinterpret_cast<Word*>(dst + head);
  const Word* KOKKOS_RESTRICT s = reinterpret_cast<const Word*>(src + head);
  // Each thread keeps up to `unroll` loads in flight before it stores, the last
  // round too: one load per thread at a time leaves HBM idle between round
  // trips. Thread t of T takes words base + j * T + t, so every load instruction
  // of a warp is contiguous.
  const int threads = team.team_size();
  const int stride = threads * unroll;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, threads), [&](const int t) {
    for (int base = t; base < words; base += stride) {
      Word v[unroll]{};  // the last round loads fewer than unroll
      for (int j = 0; j < unroll; ++j)
        if (base + j * threads < words) v[j] = s[base + j * threads];
      for (int j = 0; j < unroll; ++j)
        if (base + j * threads < words) d[base + j * threads] = v[j];
    }
  });
  copy_edge_bytes(team, dst, src, head, tail_begin, n);
}

template <class Word, class Member>
KOKKOS_INLINE_FUNCTION void zero_words(const Member& team, std::uint8_t* KOKKOS_RESTRICT dst, int n) {
  const WordSpan span = word_span<sizeof(Word)>(dst, n);
  const int head = span.head, words = span.words, tail_begin = span.tail_begin;
  Word* KOKKOS_RESTRICT d = reinterpret_cast<Word*>(dst + head);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, words), [&](const int i) { d[i] = Word{}; });
  const int edge = head + (n - tail_begin);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, edge), [&](const int i) {
    const int b = i < head ? i : tail_begin + (i - head);
    dst[b] = 0;
  });
}

/// Copy n (< 2^31) bytes from src to dst (non-overlapping) with the whole team.
template <int unroll = 4, class Member>
KOKKOS_INLINE_FUNCTION void team_copy_bytes(const Member& team, std::uint8_t* dst, const std::uint8_t* src, int n) {
  const auto shared = reinterpret_cast<std::uintptr_t>(dst) ^ reinterpret_cast<std::uintptr_t>(src);
  if ((shared & 15) == 0)
    copy_words<Word16, unroll>(team, dst, src, n);
  else if ((shared & 7) == 0)
    copy_words<std::uint64_t, unroll>(team, dst, src, n);
  else if ((shared & 3) == 0)
    copy_words<std::uint32_t, unroll>(team, dst, src, n);
  else
    copy_words<std::uint8_t, unroll>(team, dst, src, n);
}

/// Zero n bytes at dst with the whole team.
template <class Member>
KOKKOS_INLINE_FUNCTION void team_zero_bytes(const Member& team, std::uint8_t* dst, int n) {
  zero_words<Word16>(team, dst, n);
}

}  // namespace statexfer::impl

#endif
