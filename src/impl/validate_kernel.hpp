#ifndef STATEXFER_IMPL_VALIDATE_KERNEL_HPP
#define STATEXFER_IMPL_VALIDATE_KERNEL_HPP

// validate(): the code of every command row (docs/CONTRACT.md §4), main and
// trailing checks in one launch, and the plan apply() follows.
//
// Capacities up to 64 (ValidateFunctor): a thread per row loads its row and
// keeps it in registers, and puts only the keys its peers compare against into
// team scratch; after one barrier its thread compares it with every other
// row in a plain loop (scan_peers, validate_pairs.hpp), split over the thread's
// vector lanes at larger capacities, and decides it. One team holds every row,
// or (GPUs, C > 32) each of several teams decides a few rows and loads the
// keys of all. The large-batch extension
// (validate_sorted_kernel.hpp) finds the same conflicts by sorting, and
// validate_and_apply (fused_kernel.hpp) by a thread per pair. All decide each
// row with row_check() and finish_row() below, so the codes cannot drift
// apart.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include <statexfer/host_tier.hpp>

#include "device_types.hpp"
#include "validate_pairs.hpp"

namespace statexfer::impl {

/// Everything validation needs of one command row, read from global memory in
/// one pass (two levels of dependent loads), so that the code of each row is
/// then decided from it alone (and the other rows' PeerKeys).
struct RowRecord {
  std::int64_t src;
  std::int64_t dst;
  std::int64_t src_key;  // row_key() of the row it reads (its tier's), -1 when it reads none
  std::int64_t dst_key;  // row_key() of the row it writes
  std::int64_t end;
  std::int64_t state;             // state_rows[slot][0] for a valid slot, else 0
  std::int64_t request_consumed;  // request_consumed[slot][0] for a valid slot, else -1
  std::int64_t pool_consumed;     // consumed_tokens of row src in its tier when it is a row there, else -1
  std::int64_t tpage[2];          // trailing_tables entry of each part when the part is used, else trailing_unused
  std::int32_t table_entry;       // tables[slot][end / PT] when slot, endpoint and page are in range, else -1
  std::int32_t op;
  std::int32_t valid_slot;  // 0 <= slot < C
  std::int32_t kind;        // RowKind bits, with where the endpoint lies in its page
};

/// What a row's operation does (docs/CONTRACT.md §12): operations 2..4 count
/// only with a host tier; without one they are unknown values (code 1) that
/// write a device row and read none, as any other unknown operation.
enum RowKind : std::int32_t {
  row_reads = 1,     // copies a source row: operation 0, or 2..4 with a host tier
  row_pages = 2,     // moves cache pages: operation 0, or 4 (a restore) with a host tier
  row_src_host = 4,  // its source is a host row (3, 4)
  row_dst_host = 8,  // its destination is a host row (2)
  row_tier_op = 16,  // operation 2..4 with a host tier
  row_no_slot = 32,  // request slot -1 (tier moves 2 and 3 need it)
  // Where the endpoint lies (docs/CONTRACT.md §4), decided once when the row is loaded:
  row_mid_page = 64,  // end > 0 and end % PT != 0 (a partial page)
  row_part0 = 128,    // end > 1 and end / PT >= 1: trailing part 0's logical page exists
  row_part1 = 256,    // end > 1 and end % PT >= 2: trailing part 1 counts
};

/// The optional parts of the contract that a kernel instantiation checks: the
/// host tier's operations (docs/CONTRACT.md §12) and the trailing pages.
/// validate() and validate_and_apply() launch the instantiation with only
/// those the transfer has (TransferData::validate_features): at small C each is
/// one warp's dependent chain, and a run-time test of a part the transfer lacks
/// still costs that chain its instructions. The sorted kernels (C > 64) keep
/// both parts and test them at run time.
enum ValidateFeature : int { feature_host_tier = 1, feature_trailing = 2, feature_all = 3 };

/// The record's kind bits that instantiation `Features` can see: without the
/// host tier its bits are never set, and saying so lets the compiler drop their paths.
template <int Features>
KOKKOS_INLINE_FUNCTION std::int32_t row_kind(const RowRecord& q) {
  constexpr std::int32_t host = row_src_host | row_dst_host | row_tier_op;
  return (Features & feature_host_tier) ? q.kind : q.kind & ~host;
}

/// A row of either tier as one int64, so that equal keys mean the same row:
/// device row v in (0, rows) is v, host row h in (0, host_rows) is rows + h,
/// anything else -1 (which no row that reaches the conflict checks has).
KOKKOS_INLINE_FUNCTION std::int64_t row_key(bool host, std::int64_t v, std::int64_t rows, std::int64_t host_rows) {
  if (host) return v > 0 && v < host_rows ? rows + v : -1;
  return v > 0 && v < rows ? v : -1;
}

/// The row's source is the request's live row (a snapshot); never for a host source.
template <int Features = feature_all>
KOKKOS_INLINE_FUNCTION bool is_snapshot_row(const RowRecord& q) {
  return !(row_kind<Features>(q) & row_src_host) && q.src == q.state;
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
};

/// A row's own checks (docs/CONTRACT.md §4 codes 1, 2, 3 and 5) and the keys of its own
/// conflict and page checks, before any other row is looked at.
struct RowCheck {
  std::int64_t t_page[2];  // trailing page of each active part (-1: logical page past W)
  std::int32_t page;       // main partial page, or -1
  std::int32_t code;       // code so far
  bool live;
  bool check;         // live and code 0 so far: conflicts and pages decide
  bool copying;       // copies a row (operation 0, or a tier move)
  bool pages;         // moves cache pages (operation 0, or 4)
  bool restore;       // a valid restore (from a device or a host row)
  bool snapshot_row;  // src is the request's live row (trailing peers skip snapshot pairs)
  bool tail;          // the endpoint ends mid-page
  bool t_active[2];   // trailing part checked and written
  bool t_used[2];     // its logical page lies inside the trailing table
};

template <int Features = feature_all>
KOKKOS_INLINE_FUNCTION RowCheck row_check(const RowRecord& q, std::int64_t r, const ValidateLimits& lim) {
  const std::int64_t pt = lim.page_tokens;
  const std::int32_t kind = row_kind<Features>(q);
  RowCheck k{};
  k.live = r < lim.count;
  const bool valid_row = q.valid_slot && q.state > 0 && q.state < lim.slots;
  const bool src_host = (kind & row_src_host) != 0;
  const bool src_usable = src_host ? q.src > 0 && q.src < lim.host_slots : q.src > 0 && q.src < lim.slots;
  const bool snapshot = valid_row && q.src == q.state && q.dst > 0 && q.dst < lim.slots && q.src != q.dst;
  k.restore = valid_row && q.dst == q.state && src_usable && (src_host || q.src != q.dst);
  const bool reset = valid_row && q.op == 1 && q.src == -1 && q.dst == q.state;
  k.copying = (kind & row_reads) != 0;
  k.pages = (kind & row_pages) != 0;
  k.snapshot_row = is_snapshot_row<Features>(q);
  // Tier moves (§12): no request slot, a row of each tier.
  const bool dst_host = (kind & row_dst_host) != 0;
  const bool moved = (kind & row_no_slot) && src_usable && q.dst > 0 && q.dst < (dst_host ? lim.host_slots : lim.slots);
  bool valid_slots;
  if (q.op == 0)
    valid_slots = snapshot || k.restore;
  else if (q.op == 4)
    valid_slots = k.restore;
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
  const bool valid_endpoint = k.copying ? (q.end > 0 && q.end == consumed && within) : q.end == 0;
  k.tail = k.pages && (kind & row_mid_page);
  k.page = (k.live && k.tail && valid_slots) ? q.table_entry : -1;
  if (lim.bad_count)
    k.code = 5;
  else if (!k.live)
    k.code = 0;
  else if (q.op != 0 && q.op != 1 && !(kind & row_tier_op))
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
template <int Features = feature_all>
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
/// trailing page of each active part).
template <int Features = feature_all>
KOKKOS_INLINE_FUNCTION void finish_row(const RowRecord& q, const RowCheck& k, bool conflict, const bool t_conflict[2],
                                       std::int64_t pages, const RowBases& bases, std::int32_t& code_out,
                                       RowPlan& plan_out) {
  std::int32_t code = k.code;
  if (k.check) {
    if (conflict)
      code = 4;
    else if (k.tail && (k.page < 0 || k.page >= pages))
      code = 6;
  }
  RowPlan p{nullptr, nullptr, 0, static_cast<std::int32_t>(k.page), {-1, -1}};
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
  if (code == 0 && k.live) {
    // Code 0 puts dst (and a copy's src) inside its tier's usable rows.
    const std::int32_t kind = row_kind<Features>(q);
    const bool src_host = (kind & row_src_host) != 0, dst_host = (kind & row_dst_host) != 0;
    p.dst_row = (dst_host ? bases.host : bases.device) + q.dst * bases.row_bytes;
    p.flags |= plan_active;
    if (src_host || dst_host) p.flags |= plan_host;
    if (k.copying) {
      p.src_row = (src_host ? bases.host : bases.device) + q.src * bases.row_bytes;
      p.flags |= plan_copy;
      if (k.snapshot_row) p.flags |= plan_snapshot;
      if (k.tail) p.flags |= plan_page;
    }
  } else {
    p.flags = 0;
  }
  code_out = code;
  plan_out = p;
}

/// Row o's keys for the conflict checks of the other rows.
template <int Features = feature_all>
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
                  0,
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
                 k.t_active[0] || k.t_active[1]};
}

template <class ExecutionSpace, int Features = feature_all>
struct ValidateFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  // A thread per row, up to 64 (max_capacity), times its vector lanes: one block
  // of at most max_threads on CUDA, whose registers hold a whole row without spilling.
  static constexpr int max_threads = 512;
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<max_threads, 1>>;
  using member_type = typename policy_type::member_type;

  Kokkos::View<const std::int64_t*, memory_space> request_slots, source_slots, destination_slots, expected_consumed;
  Kokkos::View<const std::int32_t*, memory_space> operation, num_ops;
  Kokkos::View<std::int32_t*, memory_space> errors;
  Kokkos::View<RowPlan*, memory_space> plan;
  Kokkos::View<const std::int64_t*, memory_space> memory_capacity;
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, memory_space> backing;
  Kokkos::View<const std::int32_t**, Kokkos::LayoutRight, memory_space> tables, trailing_tables;
  Kokkos::View<const std::int64_t**, Kokkos::LayoutRight, memory_space> state_rows;
  Kokkos::View<const std::int64_t**, Kokkos::LayoutStride, memory_space> request_consumed;
  Kokkos::View<const std::uint8_t**, Kokkos::LayoutRight, host_tier_memory_space_t<ExecutionSpace>> host_backing;
  Kokkos::View<const std::int64_t*, memory_space> host_capacity;  // read only with a host tier
  RowBases row_bases;
  TransferShape shape;
  int lanes = 1;                  // the team's vector length (prepare())
  int rows_per_team = INT32_MAX;  // rows a team decides; >= C: one team (prepare())

  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes(std::int64_t capacity) {
    return static_cast<std::size_t>(capacity) * sizeof(PeerKeys) + alignof(PeerKeys);
  }

  /// The row's record: first its command values and the limits they are
  /// checked against, then everything they address (state row, request
  /// consumed tokens, the source's consumed_tokens, page and trailing table
  /// entries), each level issued as one batch of independent loads.
  KOKKOS_INLINE_FUNCTION RowRecord load_row(std::int64_t r) const {
    constexpr bool host_tier = Features & feature_host_tier;
    const std::int64_t w = shape.width;
    RowRecord q;
    const std::int64_t slot = request_slots(r);
    q.src = source_slots(r);
    q.dst = destination_slots(r);
    q.end = expected_consumed(r);
    q.op = operation(r);
    const bool valid_slot = slot >= 0 && slot < shape.capacity;
    q.valid_slot = valid_slot;
    const bool tier_op = host_tier && shape.host_rows > 0 && q.op >= 2 && q.op <= 4;
    const bool src_host = tier_op && q.op != 2, dst_host = tier_op && q.op == 2;
    const bool reads = q.op == 0 || tier_op;
    std::int64_t logical = -1, rem = 0;
    if (q.end > 0) divide_tokens(q.end, shape.page_tokens, shape.page_shift, logical, rem);
    const bool part0 = q.end > 1 && logical >= 1, part1 = q.end > 1 && rem >= 2;
    const bool src_row = q.src > 0 && q.src < (src_host ? shape.host_rows : shape.rows);
    const bool in_table = valid_slot && logical >= 0 && logical < w;
    const bool trailing = (Features & feature_trailing) && shape.has_trailing && valid_slot;
    const bool t_used0 = trailing && part0 && logical - 1 < w, t_used1 = trailing && part1 && logical < w;
    // Second level, as soon as its addresses are known. consumed_tokens of the
    // source in its own tier (pinned host memory for a host row on CUDA).
    q.state = valid_slot ? state_rows(slot, 0) : 0;
    q.request_consumed = valid_slot ? request_consumed(slot, 0) : -1;
    q.pool_consumed = !src_row   ? -1
                      : src_host ? *reinterpret_cast<const std::int64_t*>(&host_backing(q.src, shape.consumed_offset))
                                 : *reinterpret_cast<const std::int64_t*>(&backing(q.src, shape.consumed_offset));
    q.table_entry = in_table ? tables(slot, logical) : -1;
    q.tpage[0] = t_used0 ? std::int64_t(trailing_tables(slot, logical - 1)) : trailing_unused;
    q.tpage[1] = t_used1 ? std::int64_t(trailing_tables(slot, logical)) : trailing_unused;
    // What needs no second-level value, after those loads are out.
    q.kind = (reads ? row_reads : 0) | (q.op == 0 || (tier_op && q.op == 4) ? row_pages : 0) |
             (src_host ? row_src_host : 0) | (dst_host ? row_dst_host : 0) | (tier_op ? row_tier_op : 0) |
             (slot == -1 ? row_no_slot : 0) | (q.end > 0 && rem != 0 ? row_mid_page : 0) | (part0 ? row_part0 : 0) |
             (part1 ? row_part1 : 0);
    q.src_key = reads ? row_key(src_host, q.src, shape.rows, shape.host_rows) : -1;
    q.dst_key = row_key(dst_host, q.dst, shape.rows, shape.host_rows);
    return q;
  }

  /// What limits() reads: loaded with a row's values and used after them (no round trip of its own).
  struct LimitInputs {
    std::int64_t count, pool_rows, pool_pages, host_rows;
  };

  KOKKOS_INLINE_FUNCTION LimitInputs limit_inputs() const {
    return LimitInputs{num_ops(0), memory_capacity(0), memory_capacity(1),
                       (Features & feature_host_tier) && shape.host_rows > 0 ? host_capacity(0) : 0};
  }

  KOKKOS_INLINE_FUNCTION ValidateLimits limits(const LimitInputs& in) const {
    return ValidateLimits{in.count,
                          in.pool_rows < shape.rows ? in.pool_rows : shape.rows,
                          in.host_rows < shape.host_rows ? in.host_rows : shape.host_rows,
                          in.pool_pages < shape.cache_pages ? in.pool_pages : shape.cache_pages,
                          shape.page_tokens,
                          shape.width,
                          in.count < 0 || in.count > shape.capacity,
                          shape.has_trailing != 0};
  }

  KOKKOS_INLINE_FUNCTION ValidateLimits limits() const { return limits(limit_inputs()); }

  /// Row r's code and plan: its own checks, then its comparisons with the
  /// other live rows (a conflict needs only equal keys). Each of the row's
  /// lanes compares it with every lanes-th row; their bits are OR-ed.
  KOKKOS_INLINE_FUNCTION void decide(const member_type& team, int r, const RowRecord& q, const ValidateLimits& lim,
                                     const PeerKeys* peers) const {
    const RowCheck k = row_check<Features>(q, r, lim);
    const OwnKeys own = own_keys(q, k);
    const int count = static_cast<int>(lim.count);                  // 0 <= count <= C when k.check
    const bool narrow = shape.rows + shape.host_rows <= INT32_MAX;  // the same for every thread
    const auto scan = [&](int lane) { return conflict_bits(own, peers, r, count, lane, lanes, narrow); };
    int bits = 0;
    bool lead = false;  // ran lane 0's share: writes the row's code and plan
    if (lanes == 1) {
      // One lane (hosts; GPUs' one team up to 16 rows): no reduction on the chain.
      lead = true;
      if (k.check) bits = scan(0);
    } else {
      // Every lane takes part, checked row or not: the reduction exchanges values between them.
      Kokkos::parallel_reduce(
          Kokkos::ThreadVectorRange(team, lanes),
          [&](int lane, int& found) {
            lead |= lane == 0;
            if (k.check) found |= scan(lane);
          },
          Kokkos::BOr<int>(bits));
    }
    const bool t_conflict[2] = {(bits & 2) != 0, (bits & 4) != 0};
    std::int32_t code;
    RowPlan p;
    finish_row<Features>(q, k, (bits & 1) != 0, t_conflict, lim.pages, row_bases, code, p);
    if (lead) {
      errors(r) = code;
      plan(r) = p;
    }
  }

  /// Row r's keys into team scratch, from one of its lanes.
  KOKKOS_INLINE_FUNCTION void share(const member_type& team, int r, const RowRecord& q, PeerKeys* peers) const {
    if (lanes == 1)
      peers[r] = peer_keys<Features>(q);  // no lane mask to compute
    else
      Kokkos::single(Kokkos::PerThread(team), [&] { peers[r] = peer_keys<Features>(q); });
  }

  /// The team: a thread per row with `lanes` vector lanes (prepare()). The
  /// kernel is one warp's dependent instructions at small C, so nothing is on
  /// that chain that need not be: one lane there (no lane masks), scratch
  /// addressed directly, and a row kept in registers across the barrier, only
  /// its peer keys shared. At larger C a row's lanes split its scan of the
  /// others; every lane loads the row itself (the same addresses, no exchange).
  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int c = static_cast<int>(shape.capacity);
    const int t = team.team_rank(), threads = team.team_size();
    auto* peers = static_cast<PeerKeys*>(
        team.team_scratch(0).get_shmem_aligned(c * sizeof(PeerKeys), static_cast<std::ptrdiff_t>(alignof(PeerKeys))));
    const LimitInputs in = limit_inputs();  // first used after the barrier
    if (rows_per_team < c) {
      // Several teams: team g decides rows [g R, g R + R), a thread each, and
      // shares the keys of all C rows, which its threads' lanes load. Its
      // warps then scan R rows' peers, not C rows', and the teams run on
      // different SMs instead of C rows' warps taking turns on one.
      const int begin = team.league_rank() * rows_per_team;
      const int end = begin + rows_per_team < c ? begin + rows_per_team : c;
      const int own = begin + t < end ? begin + t : end - 1;
      const RowRecord q = load_row(own);  // in flight with the shared rows' loads
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, c),
                           [&](const int o) { peers[o] = peer_keys<Features>(load_row(o)); });
      team.team_barrier();
      const ValidateLimits lim = limits(in);
      if (begin + t < end) decide(team, own, q, lim, peers);
      // A team of fewer threads than rows (hosts): the others loaded again.
      for (int r = begin + t + threads; r < end; r += threads) decide(team, r, load_row(r), lim, peers);
    } else if (threads >= c) {
      // prepare() asks for C threads; the guards keep a larger team's extra threads idle.
      const int r = t < c ? t : c - 1;
      const RowRecord q = load_row(r);
      if (t < c) share(team, r, q, peers);
      team.team_barrier();
      if (t < c) decide(team, r, q, limits(in), peers);
    } else {
      // Fewer threads than rows (host backends): each row loaded again after the barrier.
      for (int r = t; r < c; r += threads) share(team, r, load_row(r), peers);
      team.team_barrier();
      const ValidateLimits lim = limits(in);
      for (int r = t; r < c; r += threads) decide(team, r, load_row(r), lim, peers);
    }
  }
};

}  // namespace statexfer::impl

#endif
