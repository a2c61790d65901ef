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

// Word loads and stores; with `streaming`, CUDA's evict-first hints (the bytes are
// touched once, so they need not displace what the step's other work caches).
template <bool streaming, class Word>
KOKKOS_FORCEINLINE_FUNCTION Word load_word(const Word* p) {
#if defined(__CUDA_ARCH__)
  if constexpr (streaming && sizeof(Word) == 16) {
    const int4 v = __ldcs(reinterpret_cast<const int4*>(p));
    Word w;
    static_assert(sizeof(w) == sizeof(v), "16-byte words");
    memcpy(&w, &v, sizeof(w));
    return w;
  }
#endif
  return *p;
}

template <bool streaming, class Word>
KOKKOS_FORCEINLINE_FUNCTION void store_word(Word* p, const Word& w) {
#if defined(__CUDA_ARCH__)
  if constexpr (streaming && sizeof(Word) == 16) {
    int4 v;
    memcpy(&v, &w, sizeof(v));
    __stcs(reinterpret_cast<int4*>(p), v);
    return;
  }
#endif
  *p = w;
}

template <class Word, int unroll, bool streaming = false, class Member>
KOKKOS_INLINE_FUNCTION void copy_words(const Member& team, std::uint8_t* KOKKOS_RESTRICT dst,
                                       const std::uint8_t* KOKKOS_RESTRICT src, std::int64_t n) {
  constexpr std::int64_t w = sizeof(Word);
  // Bytes up to the first aligned word of dst (src shares its alignment).
  std::int64_t head = static_cast<std::int64_t>((w - (reinterpret_cast<std::uintptr_t>(dst) & (w - 1))) & (w - 1));
  if (head > n) head = n;
  const std::int64_t words = (n - head) / w;
  const std::int64_t tail_begin = head + words * w;
  Word* KOKKOS_RESTRICT d = reinterpret_cast<Word*>(dst + head);
  const Word* KOKKOS_RESTRICT s = reinterpret_cast<const Word*>(src + head);
  // Each thread keeps `unroll` loads in flight before it stores: one load per
  // thread at a time leaves HBM idle between round trips. Thread t of T takes
  // words base + j * T + t, so every load instruction of a warp is contiguous.
  const std::int64_t threads = team.team_size();
  const std::int64_t stride = threads * unroll;
  const std::int64_t full = words / stride * stride;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, threads), [&](const std::int64_t t) {
    for (std::int64_t base = t; base < full; base += stride) {
      Word v[unroll];
      for (int j = 0; j < unroll; ++j) v[j] = load_word<streaming>(s + base + j * threads);
      for (int j = 0; j < unroll; ++j) store_word<streaming>(d + base + j * threads, v[j]);
    }
  });
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, full, words), [&](const std::int64_t i) { d[i] = s[i]; });
  // Head and tail bytes: at most 2 * (w - 1), one thread each.
  const std::int64_t edge = head + (n - tail_begin);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, edge), [&](const std::int64_t i) {
    const std::int64_t b = i < head ? i : tail_begin + (i - head);
    dst[b] = src[b];
  });
}

template <class Word, class Member>
KOKKOS_INLINE_FUNCTION void zero_words(const Member& team, std::uint8_t* KOKKOS_RESTRICT dst, std::int64_t n) {
  constexpr std::int64_t w = sizeof(Word);
  std::int64_t head = static_cast<std::int64_t>((w - (reinterpret_cast<std::uintptr_t>(dst) & (w - 1))) & (w - 1));
  if (head > n) head = n;
  const std::int64_t words = (n - head) / w;
  const std::int64_t tail_begin = head + words * w;
  Word* KOKKOS_RESTRICT d = reinterpret_cast<Word*>(dst + head);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, words), [&](const std::int64_t i) { d[i] = Word{}; });
  const std::int64_t edge = head + (n - tail_begin);
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, edge), [&](const std::int64_t i) {
    const std::int64_t b = i < head ? i : tail_begin + (i - head);
    dst[b] = 0;
  });
}

/// Copy n bytes from src to dst (non-overlapping) with the whole team.
template <int unroll = 4, bool streaming = false, class Member>
KOKKOS_INLINE_FUNCTION void team_copy_bytes(const Member& team, std::uint8_t* dst, const std::uint8_t* src,
                                            std::int64_t n) {
  const auto shared = reinterpret_cast<std::uintptr_t>(dst) ^ reinterpret_cast<std::uintptr_t>(src);
  if ((shared & 15) == 0)
    copy_words<Word16, unroll, streaming>(team, dst, src, n);
  else if ((shared & 7) == 0)
    copy_words<std::uint64_t, unroll>(team, dst, src, n);
  else if ((shared & 3) == 0)
    copy_words<std::uint32_t, unroll>(team, dst, src, n);
  else
    copy_words<std::uint8_t, unroll>(team, dst, src, n);
}

/// Zero n bytes at dst with the whole team.
template <class Member>
KOKKOS_INLINE_FUNCTION void team_zero_bytes(const Member& team, std::uint8_t* dst, std::int64_t n) {
  zero_words<Word16>(team, dst, n);
}

}  // namespace statexfer::impl

#endif
