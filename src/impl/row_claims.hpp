#ifndef STATEXFER_IMPL_ROW_CLAIMS_HPP
#define STATEXFER_IMPL_ROW_CLAIMS_HPP

// Row claims on the device (docs/CONTRACT.md §15): a reader-writer lock per row
// of the pool and the host tier, taken by validate() for each live row with
// code 0 (a read claim on the row it reads, a write claim on the row it
// writes) and released by apply() once its last byte is written. A claim that
// another batch in flight holds gives code 7 and releases what the row took.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "device_types.hpp"

namespace statexfer::impl {

/// A claim's entry: 0 free, n > 0 held by n readers, -1 by a writer.
KOKKOS_INLINE_FUNCTION bool claim_read(std::int32_t* claim) {
  // Bounded: other batches only take and drop claims, a few at a time.
  std::int32_t seen = 0;
  for (int tries = 0; tries < 64; ++tries) {
    const std::int32_t was = Kokkos::atomic_compare_exchange(claim, seen, seen + 1);
    if (was == seen) return true;
    if (was < 0) return false;
    seen = was;
  }
  return false;
}

KOKKOS_INLINE_FUNCTION bool claim_write(std::int32_t* claim) {
  return Kokkos::atomic_compare_exchange(claim, std::int32_t(0), std::int32_t(-1)) == 0;
}

KOKKOS_INLINE_FUNCTION void release_read(std::int32_t* claim) { Kokkos::atomic_fetch_add(claim, std::int32_t(-1)); }
KOKKOS_INLINE_FUNCTION void release_write(std::int32_t* claim) { Kokkos::atomic_exchange(claim, std::int32_t(0)); }

/// Live row r's claims, decided once per row after its code and plan: a row
/// whose code is 0 and which writes claims the row it reads (`read_key`, a
/// row key, or -1) and the row it writes (`write_key`); when either is held
/// by another batch, its code becomes 7 and its plan writes nothing. Records
/// what it holds in `claimed(2 r)` (read) and `claimed(2 r + 1)` (write), -1
/// for none, for apply()'s release.
template <class Claims, class Claimed>
KOKKOS_INLINE_FUNCTION void claim_row(const Claims& claims, const Claimed& claimed, std::int64_t r,
                                      std::int64_t read_key, std::int64_t write_key, std::int32_t& code, RowPlan& p) {
  std::int64_t read = -1, write = -1;
  if (code == 0 && (p.flags & plan_active)) {
    read = (p.flags & (plan_copy | plan_remap)) ? read_key : -1;
    write = write_key;
    bool held = read < 0 || claim_read(&claims(read));
    if (held && !claim_write(&claims(write))) {
      if (read >= 0) release_read(&claims(read));
      held = false;
    }
    if (!held) {
      code = 7;
      p.flags = 0;
      read = write = -1;
    }
  }
  claimed(2 * r) = read;
  claimed(2 * r + 1) = write;
}

/// Every claim the last validate() took, rows [0, live), by the calling team
/// once its batch's bytes are written (its caller's fence orders them before).
template <class Member, class Claims, class Claimed>
KOKKOS_INLINE_FUNCTION void release_claims(const Member& team, const Claims& claims, const Claimed& claimed,
                                           std::int32_t live) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, live), [&](const int r) {
    const std::int64_t read = claimed(2 * r), write = claimed(2 * r + 1);
    if (read >= 0) release_read(&claims(read));
    if (write >= 0) release_write(&claims(write));
  });
}

/// apply()'s designs other than the compact grid: one team, after them on the
/// same instance, releases the claims.
template <class ExecutionSpace>
struct ReleaseClaimsFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace>;
  using member_type = typename policy_type::member_type;

  Kokkos::View<std::int32_t*, memory_space> claims;
  Kokkos::View<const std::int64_t*, memory_space> claimed;
  Kokkos::View<const std::int32_t*, memory_space> moves;  // its live_count

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    release_claims(team, claims, claimed, moves(live_count));
  }
};

}  // namespace statexfer::impl

#endif
