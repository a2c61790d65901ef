#ifndef STATEXFER_IMPL_VALIDATE_PAIRS_HPP
#define STATEXFER_IMPL_VALIDATE_PAIRS_HPP

// The pair compares of validate() (validate_kernel.hpp): the keys a row offers
// the other rows (PeerKeys) and those it compares with theirs (OwnKeys), the
// conflicts of one pair, and a row's scan over its peers in team scratch.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace statexfer::impl {

/// What a row offers the conflict checks of the other rows: keys that a
/// checked row compares with equality only. A checked row has row keys > 0
/// (row_key) and compares pages only when its own is >= 0, so -1 stands for
/// "none" (table entries are int32).
/// The first 32 bytes are what a pair reads in the common case (scan_peers'
/// `Narrow`): the row keys' low 32 bits and the trailing entries with INT32_MIN
/// for an unused part; the exact 64-bit keys follow.
struct alignas(16) PeerKeys {
  std::int32_t dst32;         // low 32 bits of dst
  std::int32_t src32;         // low 32 bits of src
  std::int32_t page_any;      // o_page
  std::int32_t page_restore;  // o_page of a copy into its request's live row (a restore), else -1
  std::int32_t snapshot_row;  // src == state
  std::int32_t tpage32[2];    // tpage, INT32_MIN for trailing_unused
  std::int32_t src_written;   // a commit: its position row (src) counts as written (docs/CONTRACT.md §13)
  std::int64_t dst;           // row_key of its destination
  std::int64_t src;           // row_key of the row it reads, else -1
  std::int64_t tpage[2];      // trailing entries of a copy with a valid slot, else trailing_unused
};

inline constexpr std::int64_t trailing_none = INT64_MAX;  // no peer's trailing entry (int32 or trailing_unused)

/// What a checked row compares with the PeerKeys of the others, from its record
/// and own checks once, so that each pair is a handful of equality tests.
struct OwnKeys {
  std::int64_t dst;       // row_key of its destination
  std::int64_t src;       // row_key of its source when it copies, else -2 (no peer has it)
  std::int64_t tpage[2];  // trailing page of each active part, else trailing_none
  std::int32_t page;      // main partial page
  bool t_active[2];       // trailing part active
  bool has_page;          // page >= 0
  bool restore;           // a restore: any other row's page collides, else only a restore's
  bool snapshot_row;      // trailing: two snapshot rows never collide
  bool trailing;          // a trailing part is active
  bool src_written;       // a commit: a peer reading its src collides too
};

/// Conflicts of a checked row with one other live row, as bits: 1 rows or main
/// pages, 2 trailing part 0, 4 trailing part 1. `Trailing`: k has an active
/// trailing part (else no trailing entry can collide). `Narrow`: 32-bit
/// compares, exact when every row key lies in [-2, 2^31) (rows + host rows <=
/// INT32_MAX: low 32 bits tell such keys apart) and no active part of k has the
/// entry INT32_MIN (which stands for an unused part of p). `Commits`: either
/// row may be a commit, whose source counts as written. Bitwise, not
/// short-circuit, operators, and no branch: a pair is a dozen compares, which
/// a loop over the peers overlaps with the next pair's loads.
template <bool Trailing = true, bool Narrow = false, bool Commits = false>
KOKKOS_INLINE_FUNCTION int pair_conflicts(const OwnKeys& k, const PeerKeys& p) {
  bool rows, part0 = false, part1 = false;
  if constexpr (Narrow) {
    const auto dst = static_cast<std::int32_t>(k.dst), src = static_cast<std::int32_t>(k.src);
    rows = (dst == p.dst32) | (src == p.dst32) | (dst == p.src32);
    if (Commits) rows |= (k.src_written | (p.src_written != 0)) & (src == p.src32);
    if (Trailing) {
      const auto t0 = static_cast<std::int32_t>(k.tpage[0]), t1 = static_cast<std::int32_t>(k.tpage[1]);
      part0 = k.t_active[0] & ((p.tpage32[0] == t0) | (p.tpage32[1] == t0));
      part1 = k.t_active[1] & ((p.tpage32[0] == t1) | (p.tpage32[1] == t1));
    }
  } else {
    rows = (k.dst == p.dst) | (k.src == p.dst) | (k.dst == p.src);
    if (Commits) rows |= (k.src_written | (p.src_written != 0)) & (k.src == p.src);
    if (Trailing) {
      part0 = (p.tpage[0] == k.tpage[0]) | (p.tpage[1] == k.tpage[0]);
      part1 = (p.tpage[0] == k.tpage[1]) | (p.tpage[1] == k.tpage[1]);
    }
  }
  rows |= k.has_page & (k.page == (k.restore ? p.page_any : p.page_restore));
  int bits = rows ? 1 : 0;
  if (Trailing) {
    const bool apart = k.snapshot_row & (p.snapshot_row != 0);  // two snapshot rows only read their pages
    bits |= apart ? 0 : (part0 ? 2 : 0) | (part1 ? 4 : 0);
  }
  return bits;
}

/// The conflict bits of checked row r with the live rows first, first + step,
/// ... below count, other than itself (ValidateFunctor: step is the row's vector
/// lanes, first its lane). Four peers' keys are loaded before any of them is
/// compared, so that their shared-memory loads are in flight together instead
/// of each pair waiting for its own; past count a group reloads its first peer
/// and masks it out.
template <bool Trailing, bool Narrow, bool Commits, int Group = 4>
KOKKOS_INLINE_FUNCTION int scan_peers(const OwnKeys& k, const PeerKeys* peers, int r, int count, int first, int step) {
  constexpr int group = Group;
  int bits = 0;
  for (int o = first; o < count; o += group * step) {
    PeerKeys p[group];
    for (int i = 0; i < group; ++i) p[i] = peers[o + i * step < count ? o + i * step : o];
    for (int i = 0; i < group; ++i) {
      const int e = o + i * step;
      const int counts = (e < count) & (e != r);  // a live row, not itself
      bits |= pair_conflicts<Trailing, Narrow, Commits>(k, p[i]) & -counts;
    }
  }
  return bits;
}

/// scan_peers() in the instantiation a checked row's keys allow: the trailing
/// compares only when a part of it is active, and 32-bit compares when
/// `narrow` (every row key fits: rows + host rows <= INT32_MAX) and no active
/// part has the entry INT32_MIN. `Group` peers' keys in flight at a time (their
/// registers: fewer where a kernel holds other values across the scan).
/// `Commits`: the batch may hold commits (docs/CONTRACT.md §13).
template <bool Commits, int Group = 4>
KOKKOS_INLINE_FUNCTION int conflict_bits(const OwnKeys& k, const PeerKeys* peers, int r, int count, int first, int step,
                                         bool narrow) {
  const bool t_narrow =
      narrow && (!k.t_active[0] || k.tpage[0] != INT32_MIN) && (!k.t_active[1] || k.tpage[1] != INT32_MIN);
  if (k.trailing)
    return t_narrow ? scan_peers<true, true, Commits, Group>(k, peers, r, count, first, step)
                    : scan_peers<true, false, Commits, Group>(k, peers, r, count, first, step);
  return narrow ? scan_peers<false, true, Commits, Group>(k, peers, r, count, first, step)
                : scan_peers<false, false, Commits, Group>(k, peers, r, count, first, step);
}

}  // namespace statexfer::impl

#endif
