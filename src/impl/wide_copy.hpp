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

template <class Word, class Member>
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
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, words), [&](const std::int64_t i) { d[i] = s[i]; });
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
template <class Member>
KOKKOS_INLINE_FUNCTION void team_copy_bytes(const Member& team, std::uint8_t* dst, const std::uint8_t* src,
                                            std::int64_t n) {
  const auto shared = reinterpret_cast<std::uintptr_t>(dst) ^ reinterpret_cast<std::uintptr_t>(src);
  if ((shared & 15) == 0)
    copy_words<Word16>(team, dst, src, n);
  else if ((shared & 7) == 0)
    copy_words<std::uint64_t>(team, dst, src, n);
  else if ((shared & 3) == 0)
    copy_words<std::uint32_t>(team, dst, src, n);
  else
    copy_words<std::uint8_t>(team, dst, src, n);
}

/// Zero n bytes at dst with the whole team.
template <class Member>
KOKKOS_INLINE_FUNCTION void team_zero_bytes(const Member& team, std::uint8_t* dst, std::int64_t n) {
  zero_words<Word16>(team, dst, n);
}

}  // namespace statexfer::impl

#endif
