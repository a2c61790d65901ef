#ifndef STATEXFER_IMPL_VALIDATE_ROWS_HPP
#define STATEXFER_IMPL_VALIDATE_ROWS_HPP

// The per-row functions every validation shares (docs/CONTRACT.md §4, §12-§14):
// a row's record, its own checks (row_check), its keys for the conflict tests
// (peer_keys, own_keys) and its code and plan (finish_row). ValidateFunctor
// (validate_kernel.hpp), the sorted validation (validate_sorted_kernel.hpp) and
// both one-launch designs (fused_kernel.hpp, fused_flat_kernel.hpp) decide each
// row with them, so that the codes cannot drift apart.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "device_types.hpp"
#include "validate_pairs.hpp"

namespace statexfer::impl {

/// Everything validation needs of one command row, read from global memory in
/// one pass (two levels of dependent loads, three for a commit), so that the
/// code of each row is then decided from it alone (and the other rows' PeerKeys).
struct RowRecord {
  std::int64_t src;      // the row it reads: the command's; a commit's position row (0: none)
  std::int64_t dst;      // the row it writes: the command's; a commit's live row
  std::int64_t src_key;  // row_key() of the row it reads (its tier's), -1 when it reads none
  std::int64_t dst_key;  // row_key() of the row it writes
  std::int64_t end;
  std::int64_t state;             // state_rows[slot][0] for a valid slot, else 0
  std::int64_t request_consumed;  // request_consumed[slot][0] for a valid slot, else -1
  std::int64_t pool_consumed;     // consumed_tokens of row src in its tier when it is a row there, else -1
  std::int64_t tpage[2];          // trailing_tables entry of each part when the part is used, else trailing_unused
  std::int64_t key;               // prefix_keys[r] with a prefix_key region, else 0
  std::int32_t table_entry;       // tables[slot][end / PT] when slot, endpoint and page are in range, else -1
  std::int32_t op;
  std::int32_t valid_slot;  // 0 <= slot < C
  std::int32_t kind;        // RowKind bits, with where the endpoint lies in its page
  std::int32_t accepted;    // a commit with a valid slot: accepted[slot]; else -1
  std::int32_t slot;        // the request slot when valid, else -1
};

/// What a row's operation does (docs/CONTRACT.md §12, §13): operations 2..4
/// count only with a host tier, 5 only with speculative positions; without
/// them they are unknown values (code 1) that write a device row and read
/// none, as any other unknown operation.
enum RowKind : std::int32_t {
  row_reads = 1,     // copies a source row: operation 0, 2..4 with a host tier, 5 with positions
  row_pages = 2,     // moves cache pages: operation 0, or 4 (a restore) with a host tier
  row_src_host = 4,  // its source is a host row (3, 4)
  row_dst_host = 8,  // its destination is a host row (2)
  row_tier_op = 16,  // operation 2..4 with a host tier
  row_no_slot = 32,  // request slot -1 (tier moves 2 and 3 need it)
  // Where the endpoint lies (docs/CONTRACT.md §4), decided once when the row is loaded:
  row_mid_page = 64,        // end > 0 and end % PT != 0 (a partial page)
  row_part0 = 128,          // end > 1 and end / PT >= 1: trailing part 0's logical page exists
  row_part1 = 256,          // end > 1 and end % PT >= 2: trailing part 1 counts
  row_commit = 512,         // operation 5 with speculative positions (§13)
  row_commit_named = 1024,  // a commit whose command names a source or destination row
  row_key_mismatch = 2048,  // with prefix keys: the source row's key is not the command's (§14)
};

/// The optional parts of the contract that a kernel instantiation checks: the
/// host tier's operations (docs/CONTRACT.md §12), the trailing pages and the
/// commits (§13). validate() and validate_and_apply() launch the instantiation
/// with only those the transfer has (TransferData::validate_features): at small
/// C each is one warp's dependent chain, and a run-time test of a part the
/// transfer lacks still costs that chain its instructions. A transfer with
/// commits runs feature_every and tests the other two at run time, as the
/// sorted kernels (C > 64) do for all three. Prefix keys (§14) are a run-time
/// test everywhere: one more load beside consumed_tokens and one compare.
enum ValidateFeature : int {
  feature_host_tier = 1,
  feature_trailing = 2,
  feature_all = 3,
  feature_commit = 4,
  feature_every = 7
};

/// The record's kind bits that instantiation `Features` can see: without the
/// host tier or commits their bits are never set, and saying so lets the
/// compiler drop their paths.
template <int Features>
KOKKOS_INLINE_FUNCTION std::int32_t row_kind(const RowRecord& q) {
  constexpr std::int32_t host = row_src_host | row_dst_host | row_tier_op;
  constexpr std::int32_t commit = row_commit | row_commit_named;
  return q.kind & ~((Features & feature_host_tier) ? 0 : host) & ~((Features & feature_commit) ? 0 : commit);
}

/// A row of either tier as one int64, so that equal keys mean the same row:
/// device row v in (0, rows) is v, host row h in (0, host_rows) is rows + h,
/// anything else -1 (which no row that reaches the conflict checks has).
KOKKOS_INLINE_FUNCTION std::int64_t row_key(bool host, std::int64_t v, std::int64_t rows, std::int64_t host_rows) {
  if (host) return v > 0 && v < host_rows ? rows + v : -1;
  return v > 0 && v < rows ? v : -1;
}

/// The row's source is the request's live row (a snapshot); never for a host
/// source or a commit.
template <int Features = feature_every>
KOKKOS_INLINE_FUNCTION bool is_snapshot_row(const RowRecord& q) {
  return !(row_kind<Features>(q) & (row_src_host | row_commit)) && q.src == q.state;
}

inline constexpr std::int64_t trailing_unused = INT64_MIN;

/// end / PT and end % PT for end > 0. A 64-bit division is a long dependent
/// chain on a GPU (the biggest part of validate()'s time when every row did
/// several): a shift when PT is a power of two (`shift` >= 0), else 32-bit
/// division when both fit, else 64-bit.
KOKKOS_INLINE_FUNCTION void divide_tokens(std::int64_t end, std::int64_t pt, std::int32_t shift, std::int64_t& logical,
                                          std::int64_t& rem) {
  if (shift >= 0) {
    logical = end >> shift;
    rem = end & (pt - 1);
  } else if (end <= 0xffffffffLL && pt <= 0xffffffffLL) {
    const auto e = static_cast<std::uint32_t>(end), p = static_cast<std::uint32_t>(pt);
    logical = e / p;
    rem = e - static_cast<std::uint32_t>(logical) * p;
  } else {
    logical = end / pt;
    rem = end - logical * pt;
  }
}

/// Limits of one validation: the batch's live count and the usable rows and
/// pages (memory_capacity, never past what the Views hold).
struct ValidateLimits {
  std::int64_t count;
  std::int64_t slots;
  std::int64_t host_slots;  // HOST_SLOTS: min(host capacity, host rows); 0 without a host tier
  std::int64_t pages;
  std::int64_t page_tokens;
  std::int64_t width;
  bool bad_count;
  bool has_trailing;
  std::int32_t positions;  // K: speculative positions, 0 without commits
};

/// A row's own checks (docs/CONTRACT.md §4 codes 1, 2, 3 and 5) and the keys of its own
/// conflict and page checks, before any other row is looked at.
struct RowCheck {
  std::int64_t t_page[2];  // trailing page of each active part (-1: logical page past W)
  std::int32_t page;       // main partial page, or -1
  std::int32_t code;       // code so far
  bool live;
  bool check;         // live and code 0 so far: conflicts and pages decide
  bool copying;       // copies a row (operation 0, a tier move, a commit)
  bool pages;         // moves cache pages (operation 0, or 4)
  bool restore;       // a valid restore (from a device or a host row)
  bool snapshot_row;  // src is the request's live row (trailing peers skip snapshot pairs)
  bool commit;        // a commit (§13): its position row counts as written
  bool tail;          // the endpoint ends mid-page
  bool t_active[2];   // trailing part checked and written
  bool t_used[2];     // its logical page lies inside the trailing table
};

template <int Features = feature_every>
KOKKOS_INLINE_FUNCTION RowCheck row_check(const RowRecord& q, std::int64_t r, const ValidateLimits& lim) {
  const std::int64_t pt = lim.page_tokens;
  const std::int32_t kind = row_kind<Features>(q);
  RowCheck k{};
  k.live = r < lim.count;
  const bool valid_row = q.valid_slot && q.state > 0 && q.state < lim.slots;
  const bool src_host = (kind & row_src_host) != 0;
  const bool src_usable = src_host ? q.src > 0 && q.src < lim.host_slots : q.src > 0 && q.src < lim.slots;
  k.commit = (kind & row_commit) != 0;
  const bool snapshot = valid_row && q.src == q.state && q.dst > 0 && q.dst < lim.slots && q.src != q.dst;
  k.restore = valid_row && q.dst == q.state && src_usable && (src_host || q.src != q.dst) && !k.commit;
  const bool reset = valid_row && q.op == 1 && q.src == -1 && q.dst == q.state;
  k.copying = (kind & row_reads) != 0;
  k.pages = (kind & row_pages) != 0;
  k.snapshot_row = is_snapshot_row<Features>(q);
  // Tier moves (§12): no request slot, a row of each tier.
  const bool dst_host = (kind & row_dst_host) != 0;
  const bool moved = (kind & row_no_slot) && src_usable && q.dst > 0 && q.dst < (dst_host ? lim.host_slots : lim.slots);
  // A commit (§13): its src is the position row its accepted count names, its dst the live row.
  const bool counted = q.accepted >= 0 && q.accepted <= lim.positions;
  const bool committed =
      valid_row && !(kind & row_commit_named) && counted && src_usable && (q.accepted == 0 || q.src != q.state);
  bool valid_slots;
  if (q.op == 0)
    valid_slots = snapshot || k.restore;
  else if (q.op == 4)
    valid_slots = k.restore;
  else if (k.commit)
    valid_slots = committed;
  else if (k.copying)
    valid_slots = moved;  // 2, 3
  else
    valid_slots = reset;
  std::int64_t consumed = -1;
  if (q.op == 0 && snapshot)
    consumed = q.request_consumed;
  else if (k.copying && src_usable)
    consumed = q.pool_consumed;
  // The largest endpoint bounds what may meet a page table: not for 2, 3.
  const bool within = !k.pages || q.end <= lim.width * pt;
  // A row read as a snapshot must hold the command's prefix key (§14): not a snapshot's live row, not a commit's.
  const bool key_ok = !(kind & row_key_mismatch) || (q.op == 0 && snapshot) || k.commit;
  bool valid_endpoint = k.copying ? (q.end > 0 && q.end == consumed && within && key_ok) : q.end == 0;
  // A commit's state is at end + accepted; the bound first, so that the sum cannot overflow.
  if (k.commit)
    valid_endpoint = counted && q.end > 0 && q.end <= lim.width * pt - q.accepted && consumed == q.end + q.accepted;
  k.tail = k.pages && (kind & row_mid_page);
  k.page = (k.live && k.tail && valid_slots) ? q.table_entry : -1;
  if (lim.bad_count)
    k.code = 5;
  else if (!k.live)
    k.code = 0;
  else if (q.op != 0 && q.op != 1 && !(kind & (row_tier_op | row_commit)))
    k.code = 1;
  else if (!valid_slots)
    k.code = 2;
  else if (!valid_endpoint)
    k.code = 3;
  k.check = !lim.bad_count && k.live && k.code == 0;
  // Trailing pages: copies only, logical pages end/PT - 1 and end/PT (the
  // latter when at least two tokens of the last page are filled).
  for (int part = 0; part < 2; ++part) {
    k.t_active[part] = (Features & feature_trailing) && lim.has_trailing && k.check && k.pages &&
                       (kind & (part == 0 ? row_part0 : row_part1));
    k.t_used[part] = q.tpage[part] != trailing_unused;
    k.t_page[part] = k.t_used[part] ? q.tpage[part] : -1;
  }
  return k;
}

/// o_page of docs/CONTRACT.md §4: the partial page another row's conflict check sees, or -1.
template <int Features = feature_every>
KOKKOS_INLINE_FUNCTION std::int64_t peer_page(const RowRecord& o) {
  const bool pages = (o.kind & row_pages) != 0;
  const bool tail = pages && (is_snapshot_row<Features>(o) || o.dst == o.state) && (o.kind & row_mid_page);
  return tail ? o.table_entry : -1;
}

/// Where the rows of each tier start, for the plan's row addresses.
struct RowBases {
  std::uint8_t* device;  // the pool backing
  std::uint8_t* host;    // the host tier backing (null without one)
  std::int64_t row_bytes;
};

/// Code and plan of one row from its own checks and the conflicts found with the
/// other live rows: `conflict` (rows, main partial pages) and `t_conflict` (the
/// trailing page of each active part). `remap`: commits remap the state rows.
template <int Features = feature_every>
KOKKOS_INLINE_FUNCTION void finish_row(const RowRecord& q, const RowCheck& k, bool conflict, const bool t_conflict[2],
                                       std::int64_t pages, const RowBases& bases, bool stamp, bool remap,
                                       std::int32_t& code_out, RowPlan& plan_out) {
  std::int32_t code = k.code;
  if (k.check) {
    if (conflict)
      code = 4;
    else if (k.tail && (k.page < 0 || k.page >= pages))
      code = 6;
  }
  RowPlan p{nullptr, nullptr, 0, static_cast<std::int32_t>(k.page), {-1, -1}, 0, 0, 0, -1, -1};
  if (code == 0 && k.check) {
    // Part 1 is checked after part 0, so its code wins, as in docs/CONTRACT.md §4's order.
    for (int part = 0; part < 2; ++part) {
      if (!k.t_active[part]) continue;
      if (k.t_page[part] < 0 || k.t_page[part] >= pages) code = 6;
      if (t_conflict[part]) code = 4;
      p.tpage[part] = static_cast<std::int32_t>(k.t_page[part]);
      p.flags |= part == 0 ? plan_trailing0 : plan_trailing1;
    }
    // A restore writes part 1's cache page after part 0's: the later write wins.
    if (!k.snapshot_row && k.t_active[0] && k.t_active[1] && k.t_page[0] == k.t_page[1])
      p.flags |= plan_trailing0_shadowed;
  }
  if (code == 0 && k.live && k.commit) {
    // §13: accepted 0 leaves the live row as it is; else a swap of two state-row entries, or a row copy.
    p.flags = 0;
    if (q.accepted > 0 && remap) {
      p.flags = plan_active | plan_remap;
      p.live_row = q.dst;
      p.position_row = q.src;
      p.slot = q.slot;
      p.accepted = q.accepted;
    } else if (q.accepted > 0) {
      p.flags = plan_active | plan_copy;
      p.src_row = bases.device + q.src * bases.row_bytes;
      p.dst_row = bases.device + q.dst * bases.row_bytes;
    }
  } else if (code == 0 && k.live) {
    // Code 0 puts dst (and a copy's src) inside its tier's usable rows.
    const std::int32_t kind = row_kind<Features>(q);
    const bool src_host = (kind & row_src_host) != 0, dst_host = (kind & row_dst_host) != 0;
    p.dst_row = (dst_host ? bases.host : bases.device) + q.dst * bases.row_bytes;
    p.flags |= plan_active;
    if (src_host || dst_host) p.flags |= plan_host;
    if (k.copying) {
      p.src_row = (src_host ? bases.host : bases.device) + q.src * bases.row_bytes;
      p.flags |= plan_copy;
      if (k.snapshot_row) p.flags |= plan_snapshot | (stamp ? plan_stamp : 0);
      if (k.tail) p.flags |= plan_page;
      p.key = q.key;
    }
  } else {
    p.flags = 0;
  }
  code_out = code;
  plan_out = p;
}

/// Row o's keys for the conflict checks of the other rows.
template <int Features = feature_every>
KOKKOS_INLINE_FUNCTION PeerKeys peer_keys(const RowRecord& o) {
  const bool pages = (o.kind & row_pages) != 0;
  const auto page = static_cast<std::int32_t>(peer_page<Features>(o));
  const bool trailing = (Features & feature_trailing) && pages && o.valid_slot;
  const std::int64_t t0 = trailing ? o.tpage[0] : trailing_unused, t1 = trailing ? o.tpage[1] : trailing_unused;
  return PeerKeys{static_cast<std::int32_t>(o.dst_key),
                  static_cast<std::int32_t>(o.src_key),
                  page,
                  pages && o.dst == o.state ? page : -1,
                  is_snapshot_row<Features>(o),
                  {t0 == trailing_unused ? INT32_MIN : static_cast<std::int32_t>(t0),
                   t1 == trailing_unused ? INT32_MIN : static_cast<std::int32_t>(t1)},
                  (row_kind<Features>(o) & row_commit) ? 1 : 0,
                  o.dst_key,
                  o.src_key,
                  {t0, t1}};
}

/// A checked row's keys for its compares with the PeerKeys of the others.
KOKKOS_INLINE_FUNCTION OwnKeys own_keys(const RowRecord& q, const RowCheck& k) {
  return OwnKeys{q.dst_key,
                 k.copying ? q.src_key : -2,
                 {k.t_active[0] ? k.t_page[0] : trailing_none, k.t_active[1] ? k.t_page[1] : trailing_none},
                 k.page,
                 {k.t_active[0], k.t_active[1]},
                 k.page >= 0,
                 k.restore,
                 k.snapshot_row,
                 k.t_active[0] || k.t_active[1],
                 k.commit};
}

}  // namespace statexfer::impl

#endif
