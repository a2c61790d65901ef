#ifndef STATEXFER_IMPL_EXCHANGE_WORDS_HPP
#define STATEXFER_IMPL_EXCHANGE_WORDS_HPP

// What a team of the prefill/decode kernels (exchange_kernels.hpp) does with
// one chunk's words: the import's checksum sums (ChecksumCarry), carried per
// (command, peer) and added atomically, and the moves of the export's and the
// import's applies (team_move_sum stores and sums at once; team_move copies;
// team_land_sum sums and stores a landing import's chunk),
// with the words each thread keeps in flight.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>

#include "exchange_format.hpp"
#include "flat_apply_kernel.hpp"
#include "wide_copy.hpp"

namespace statexfer::impl {

/// The import's sums: chunks of 16 16-byte words a thread of 128 (32 KiB), all
/// loaded before any is summed, at 4 teams an SM, whose 128 registers a thread
/// hold them beside a chunk's addresses without a spill. The sums are bound by
/// the words an SM has in flight (perf_tests/RESULTS.md: 4, 8, 16 and 32 KiB
/// chunks, the import 2.1x, 1.93x, 1.84x and 1.81x the copy kernel at C = 64).
inline constexpr int import_words_in_flight = 16;
inline constexpr int import_sum_teams_per_sm = 4;

/// The export's and the import's applies: 8 16-byte words a thread of 128 (16
/// KiB) loaded before any is stored (and summed), at 5 teams an SM, whose
/// registers hold them without a spill (4 KiB at 10 teams an SM were up to 11%
/// slower on the export of small rows, the import's apply 1.5-1.7% slower:
/// perf_tests/RESULTS.md).
inline constexpr int export_words_in_flight = 8;
inline constexpr int export_teams_per_sm = 5;

/// A team's checksum words of the chunks it handles, added to sums(index) once its chunks leave that record.
template <class Member, class Sums>
struct ChecksumCarry {
  std::uint64_t sum = 0;
  std::int64_t index = -1;

  KOKKOS_INLINE_FUNCTION void flush(const Member& team, const Sums& sums) {
    if (index < 0) return;
    std::uint64_t total = sum;
    team.team_reduce(Kokkos::Sum<std::uint64_t>(total));
    if (team.team_rank() == 0) Kokkos::atomic_fetch_add(&sums(index), total);
    sum = 0;
  }
  /// From here on the team sums into sums(at): what it summed for another index is added there first.
  KOKKOS_INLINE_FUNCTION void into(const Member& team, const Sums& sums, std::int64_t at) {
    if (at != index) {  // the same for every thread of the team
      flush(team, sums);
      index = at;
    }
  }
  /// flush() without the team's barrier, where the team's threads reach it
  /// together: CUDA sums each warp's threads by shuffles and adds a warp's
  /// total atomically; elsewhere flush().
  KOKKOS_INLINE_FUNCTION void flush_warps(const Member& team, const Sums& sums) {
#if defined(__CUDA_ARCH__)
    if (index < 0) return;
    std::uint64_t total = sum;
    for (int lanes = 16; lanes > 0; lanes /= 2) total += __shfl_xor_sync(0xffffffffu, total, lanes);
    if (team.team_rank() % 32 == 0) Kokkos::atomic_fetch_add(&sums(index), total);
    sum = 0;
#else
    flush(team, sums);
#endif
  }
  /// into() with flush_warps().
  KOKKOS_INLINE_FUNCTION void into_warps(const Member& team, const Sums& sums, std::int64_t at) {
    if (at != index) {
      flush_warps(team, sums);
      index = at;
    }
  }
  /// Chunk words [first, first + words) of the record at `record`, read by the team's threads (hosts'
  /// one thread a word; GPUs' 16-byte words, import_words_in_flight a thread).
  KOKKOS_INLINE_FUNCTION void add(const Member& team, const Sums& sums, std::int64_t at, const std::uint8_t* record,
                                  std::int64_t first, std::int64_t words) {
    into(team, sums, at);
    add_words(team, record, first, words);
  }
  /// add() without into(): the words into this thread's sum.
  KOKKOS_INLINE_FUNCTION void add_words(const Member& team, const std::uint8_t* record, std::int64_t first,
                                        std::int64_t words) {
    const auto* w = reinterpret_cast<const std::uint64_t*>(record) + first;
    const int t = team.team_rank(), threads = team.team_size();
    if (threads < 32) {
      for (std::int64_t k = t; k < words; k += threads) sum += checksum_word(w[k], first + k);
      return;
    }
    // A word before the first 16-byte boundary, then pairs, then a last odd word.
    const std::int64_t head = (reinterpret_cast<std::uintptr_t>(w) & 15) != 0 && words > 0 ? 1 : 0;
    const std::int64_t pairs = (words - head) / 2;
    const auto* p = reinterpret_cast<const Word16*>(w + head);
    // An import's chunk is import_words_in_flight pairs a thread of 128, all in flight at once.
    constexpr int ahead = import_words_in_flight;
    for (std::int64_t base = t; base < pairs; base += std::int64_t(threads) * ahead) {
      Word16 v[ahead];
      for (int j = 0; j < ahead; ++j) {
        const std::int64_t q = base + std::int64_t(j) * threads;
        v[j] = q < pairs ? p[q] : Word16{};
      }
      for (int j = 0; j < ahead; ++j) {
        const std::int64_t q = base + std::int64_t(j) * threads;
        if (q < pairs)
          sum += checksum_word(v[j].lo, first + head + 2 * q) + checksum_word(v[j].hi, first + head + 2 * q + 1);
      }
    }
    const std::int64_t last = head + 2 * pairs;  // words [last, words): at most one
    if (t == 0 && head) sum += checksum_word(w[0], first);
    if (t == threads - 1 && last < words) sum += checksum_word(w[last], first + last);
  }
};

/// Bytes [0, n) from src to dst (zeros where src is null) by the team.
template <int Words = 4, class Member>
KOKKOS_INLINE_FUNCTION void team_move(const Member& team, std::uint8_t* dst, const std::uint8_t* src, int n) {
  if (team.team_size() < 32) {  // hosts' teams of one: the C library
    if (team.team_rank() == 0) std::memcpy(dst, src, static_cast<std::size_t>(n));
    return;
  }
  flat_move_widest<Words>(dst, src, n, team.team_rank(), team.team_size());
}

/// 16-byte words [0, pairs) from s16 to d16 by thread t of `threads`, each
/// summed as record words first + 2q and first + 2q + 1 (the export's and the
/// landing import's moves: the same words, stored on either side):
/// export_words_in_flight a thread loaded before any is stored, a 16 KiB chunk
/// a round of a team of 128. Returns the thread's sum.
KOKKOS_INLINE_FUNCTION std::uint64_t move_sum_pairs(int t, int threads, Word16* d16, const Word16* s16, int pairs,
                                                    std::int64_t first) {
  std::uint64_t sum = 0;
  constexpr int ahead = export_words_in_flight;
  for (int base = t; base < pairs; base += threads * ahead) {
    Word16 v[ahead];
    for (int j = 0; j < ahead; ++j) v[j] = base + j * threads < pairs ? s16[base + j * threads] : Word16{};
    for (int j = 0; j < ahead; ++j) {
      const int q = base + j * threads;
      if (q >= pairs) continue;
      d16[q] = v[j];
      sum += checksum_word(v[j].lo, first + 2 * q) + checksum_word(v[j].hi, first + 2 * q + 1);
    }
  }
  return sum;
}

/// GPUs' export of one chunk: `length` bytes from src then `padding` zeros to
/// dst, the record's words `first`.. (dst is 8-byte aligned), each summed as
/// it is stored, so the record is not read back. Returns the thread's sum.
/// Source and destination 16 bytes apart move in 16-byte words, else a word
/// at a time (8 bytes apart) or assembled byte by byte.
template <class Member>
KOKKOS_INLINE_FUNCTION std::uint64_t team_move_sum(const Member& team, std::uint8_t* dst, const std::uint8_t* src,
                                                   int length, int padding, std::int64_t first) {
  const int t = team.team_rank(), threads = team.team_size();
  const int words = (length + padding) / 8, full = length / 8;
  const auto shared = reinterpret_cast<std::uintptr_t>(dst) ^ reinterpret_cast<std::uintptr_t>(src);
  auto* d = reinterpret_cast<std::uint64_t*>(dst);
  // Word k of the record: from the source, zeros past `length`.
  const auto word = [&](int k) {
    if (k < full && (shared & 7) == 0) return reinterpret_cast<const std::uint64_t*>(src)[k];
    std::uint64_t v = 0;
    for (int b = 0; b < 8 && 8 * k + b < length; ++b) v |= std::uint64_t(src[8 * k + b]) << (8 * b);
    return v;
  };
  std::uint64_t sum = 0;
  int pairs = 0, head = 0;
  if ((shared & 15) == 0) {
    head = (reinterpret_cast<std::uintptr_t>(dst) & 15) != 0 && full > 0 ? 1 : 0;
    pairs = (full - head) / 2;
    sum += move_sum_pairs(t, threads, reinterpret_cast<Word16*>(dst + 8 * head),
                          reinterpret_cast<const Word16*>(src + 8 * head), pairs, first + head);
  }
  // What the pairs left: the head word, then words [head + 2 pairs, words), a thread each.
  const int rest = head + (words - head - 2 * pairs);
  for (int i = t; i < rest; i += threads) {
    const int k = i < head ? i : head + 2 * pairs + (i - head);
    const std::uint64_t v = word(k);
    d[k] = v;
    sum += checksum_word(v, first + k);
  }
  return sum;
}

/// GPUs' landing import of one chunk (ImportLanding::publish_after_check): the
/// record's words `first`.. at src (8-byte aligned: `length` bytes of payload,
/// then `padding`), each summed as it is loaded, and the first `length` bytes
/// stored at dst, the row. Returns the thread's sum. The mirror of
/// team_move_sum(): the padding is read and summed, never stored.
template <class Member>
KOKKOS_INLINE_FUNCTION std::uint64_t team_land_sum(const Member& team, std::uint8_t* dst, const std::uint8_t* src,
                                                   int length, int padding, std::int64_t first) {
  const int t = team.team_rank(), threads = team.team_size();
  const int words = (length + padding) / 8, full = length / 8;
  const auto shared = reinterpret_cast<std::uintptr_t>(dst) ^ reinterpret_cast<std::uintptr_t>(src);
  const auto* s = reinterpret_cast<const std::uint64_t*>(src);
  std::uint64_t sum = 0;
  int pairs = 0, head = 0;
  if ((shared & 15) == 0) {
    head = (reinterpret_cast<std::uintptr_t>(src) & 15) != 0 && full > 0 ? 1 : 0;
    pairs = (full - head) / 2;
    sum += move_sum_pairs(t, threads, reinterpret_cast<Word16*>(dst + 8 * head),
                          reinterpret_cast<const Word16*>(src + 8 * head), pairs, first + head);
  }
  // What the pairs left: the head word, then words [head + 2 pairs, words), a thread each; a word
  // the payload ends in, or one the row holds 8-byte misaligned, is stored byte by byte.
  const int rest = words - 2 * pairs;
  for (int i = t; i < rest; i += threads) {
    const int k = i < head ? i : head + 2 * pairs + (i - head);
    const std::uint64_t v = s[k];
    sum += checksum_word(v, first + k);
    if (k < full && (shared & 7) == 0) {
      reinterpret_cast<std::uint64_t*>(dst)[k] = v;
    } else {
      for (int b = 0; b < 8 && 8 * k + b < length; ++b) dst[8 * k + b] = static_cast<std::uint8_t>(v >> (8 * b));
    }
  }
  return sum;
}

}  // namespace statexfer::impl

#endif
