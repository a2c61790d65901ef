#ifndef STATEXFER_IMPL_VALIDATE_KERNEL_HPP
#define STATEXFER_IMPL_VALIDATE_KERNEL_HPP

// validate(): the code of every command row (docs/CONTRACT.md §4), main and
// trailing checks in one launch, and the plan apply() follows.
//
// The pair compares (ValidateFunctor; up to 64 commands, 256 on GPUs by
// default, launch_plan.hpp's pairs_capacity): a thread per row loads its row and
// keeps it in registers, and puts only the keys its peers compare against into
// team scratch; after one barrier its thread compares it with every other
// row in a plain loop (scan_peers, validate_pairs.hpp), split over the thread's
// vector lanes at larger capacities, and decides it. One team holds every row,
// or (GPUs, C > 32) each of several teams decides a few rows and loads the
// keys of all. Above that, the large-batch extension
// (validate_sorted_kernel.hpp) finds the same conflicts by sorting, and
// validate_and_apply (fused_kernel.hpp) by a thread per pair. All decide each
// row with row_check() and finish_row() (validate_rows.hpp), so the codes
// cannot drift apart.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

#include <statexfer/host_tier.hpp>
#include <statexfer/speculative.hpp>

#include "device_types.hpp"
#include "move_list.hpp"
#include "row_claims.hpp"
#include "validate_pairs.hpp"
#include "validate_rows.hpp"

namespace statexfer::impl {

template <class ExecutionSpace, int Features = feature_every>
struct ValidateFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  // A thread per row of a team (up to 64), times its vector lanes: a block of at
  // most max_threads on CUDA, whose registers hold a whole row without spilling.
  static constexpr int max_threads = 512;
  // Hosts have no load latency to hide behind the live count: they read it
  // first and load only live rows (skip_row()), so their work follows num_ops.
  static constexpr bool on_host = std::is_same_v<memory_space, Kokkos::HostSpace>;
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
  Kokkos::View<const std::int64_t*, memory_space> prefix_keys;    // read only with a prefix_key region
  Kokkos::View<const std::int32_t*, memory_space> accepted;       // read only with speculative positions
  Kokkos::View<std::int32_t*, memory_space> commit_positions;     // written only with speculative positions
  Kokkos::View<std::int32_t*, memory_space> moves;                // the compact plan (move_list.hpp)
  Kokkos::View<RowPlan*, memory_space> listed;                    // with listed_plans: its rows' plans, in list order
  Kokkos::View<std::int32_t*, memory_space> claims;               // row claims (docs/CONTRACT.md §15); empty: none
  Kokkos::View<std::int64_t*, memory_space> claimed;              // with claims: what each live row holds, [2 C]
  RowBases row_bases;
  TransferShape shape;
  int lanes = 1;                  // the team's vector length (prepare())
  int rows_per_team = INT32_MAX;  // rows a team decides; >= C: one team (prepare())
  int listed_plans = 0;           // one team of a thread a row lists the plans too (LaunchPlan::listed_plans)

  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes(std::int64_t capacity) {
    return static_cast<std::size_t>(capacity) * sizeof(PeerKeys) + alignof(PeerKeys);
  }

  /// An int64 region of a row of the pool or the host tier (`host`).
  KOKKOS_INLINE_FUNCTION std::int64_t row_int64(bool host, std::int64_t row, std::int64_t offset) const {
    return host ? *reinterpret_cast<const std::int64_t*>(&host_backing(row, offset))
                : *reinterpret_cast<const std::int64_t*>(&backing(row, offset));
  }

  /// The row's record: first its command values and the limits they are
  /// checked against, then everything they address (state row, request
  /// consumed tokens, the source's consumed_tokens and prefix key, page and
  /// trailing table entries; a commit's accepted count and position rows),
  /// each level issued as one batch of independent loads. A commit has a third
  /// level: the consumed_tokens of the position row its count selects.
  KOKKOS_INLINE_FUNCTION RowRecord load_row(std::int64_t r) const {
    constexpr bool host_tier = Features & feature_host_tier;
    constexpr bool commits = Features & feature_commit;
    const std::int64_t w = shape.width;
    const bool keys = shape.key_offset >= 0;
    RowRecord q;
    const std::int64_t slot = request_slots(r);
    q.src = source_slots(r);
    q.dst = destination_slots(r);
    q.end = expected_consumed(r);
    q.op = operation(r);
    q.key = keys ? prefix_keys(r) : 0;
    const bool valid_slot = slot >= 0 && slot < shape.capacity;
    q.valid_slot = valid_slot;
    q.slot = valid_slot ? static_cast<std::int32_t>(slot) : -1;
    const bool tier_op = host_tier && shape.host_rows > 0 && q.op >= 2 && q.op <= 4;
    const bool commit = commits && shape.positions > 0 && q.op == 5;
    const bool src_host = tier_op && q.op != 2, dst_host = tier_op && q.op == 2;
    const bool reads = q.op == 0 || tier_op || commit;
    std::int64_t logical = -1, rem = 0;
    if (q.end > 0) divide_tokens(q.end, shape.page_tokens, shape.page_shift, logical, rem);
    const bool part0 = q.end > 1 && logical >= 1, part1 = q.end > 1 && rem >= 2;
    const bool src_row = !commit && q.src > 0 && q.src < (src_host ? shape.host_rows : shape.rows);
    const bool in_table = valid_slot && logical >= 0 && logical < w && !commit;
    const bool trailing = (Features & feature_trailing) && shape.has_trailing && valid_slot && !commit;
    const bool t_used0 = trailing && part0 && logical - 1 < w, t_used1 = trailing && part1 && logical < w;
    // Second level, as soon as its addresses are known. consumed_tokens (and
    // the prefix key) of the source in its own tier (pinned host memory for a
    // host row on CUDA).
    q.state = valid_slot ? state_rows(slot, 0) : 0;
    q.request_consumed = valid_slot ? request_consumed(slot, 0) : -1;
    q.pool_consumed = src_row ? row_int64(src_host, q.src, shape.consumed_offset) : -1;
    const bool key_differs = keys && src_row && row_int64(src_host, q.src, shape.key_offset) != q.key;
    q.table_entry = in_table ? tables(slot, logical) : -1;
    q.tpage[0] = t_used0 ? std::int64_t(trailing_tables(slot, logical - 1)) : trailing_unused;
    q.tpage[1] = t_used1 ? std::int64_t(trailing_tables(slot, logical)) : trailing_unused;
    // A commit: its accepted count and every position row in one round, then
    // a select (indexing by a run-time value would put them in local memory).
    q.accepted = -1;
    std::int64_t position = 0;
    if (commits && commit && valid_slot) {
      q.accepted = accepted(slot);
      for (int j = 1; j <= max_speculative_positions; ++j) {
        const std::int64_t row = j <= shape.positions ? state_rows(slot, j) : 0;
        position = q.accepted == j ? row : position;
      }
    }
    // What needs no second-level value, after those loads are out.
    q.kind = (reads ? row_reads : 0) | (q.op == 0 || (tier_op && q.op == 4) ? row_pages : 0) |
             (src_host ? row_src_host : 0) | (dst_host ? row_dst_host : 0) | (tier_op ? row_tier_op : 0) |
             (slot == -1 ? row_no_slot : 0) | (q.end > 0 && rem != 0 ? row_mid_page : 0) | (part0 ? row_part0 : 0) |
             (part1 ? row_part1 : 0) | (key_differs ? row_key_mismatch : 0);
    if (commits && commit) {
      // Its rows come from the state rows; the third level reads the position's endpoint.
      q.kind |= row_commit | (q.src != -1 || q.dst != -1 ? row_commit_named : 0);
      if (q.accepted == 0) position = q.state;
      q.src = position;
      q.dst = q.state;
      q.pool_consumed = position > 0 && position < shape.rows ? row_int64(false, position, shape.consumed_offset) : -1;
    }
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
                          shape.has_trailing != 0,
                          (Features & feature_commit) ? shape.positions : 0};
  }

  /// Writes what combine() reads of row r beside its code (docs/CONTRACT.md §13).
  KOKKOS_INLINE_FUNCTION void record_commit(std::int64_t r, const RowRecord& q, const ValidateLimits& lim) const {
    if constexpr ((Features & feature_commit) != 0)
      if (shape.positions > 0) commit_positions(r) = !lim.bad_count && r < lim.count ? q.accepted : -1;
  }

  /// Row r's code and plan (finish_row with this transfer's stamp and commit move).
  KOKKOS_INLINE_FUNCTION void finish(const RowRecord& q, const RowCheck& k, int bits, const ValidateLimits& lim,
                                     std::int32_t& code, RowPlan& p) const {
    const bool t_conflict[2] = {(bits & 2) != 0, (bits & 4) != 0};
    finish_row<Features>(q, k, (bits & 1) != 0, t_conflict, lim.pages, row_bases, shape.key_offset >= 0,
                         shape.remap != 0, code, p);
  }

  KOKKOS_INLINE_FUNCTION ValidateLimits limits() const { return limits(limit_inputs()); }

  /// Row r past the live count (every row of a bad count): the code and plan
  /// decide() gives it (0, or 5; no move), without loading it.
  KOKKOS_INLINE_FUNCTION void skip_row(std::int64_t r, const ValidateLimits& lim) const {
    errors(r) = lim.bad_count ? 5 : 0;
    plan(r) = RowPlan{nullptr, nullptr, 0, -1, {-1, -1}, 0, 0, 0, -1, -1};
    record_commit(r, RowRecord{}, lim);
  }

  /// With row claims (§15): live row r's, once its code and plan are known;
  /// code 7 when another batch in flight holds one. Once per row.
  KOKKOS_INLINE_FUNCTION void claim(std::int64_t r, const RowRecord& q, const ValidateLimits& lim, std::int32_t& code,
                                    RowPlan& p) const {
    if (claims.extent(0) == 0 || lim.bad_count || r >= lim.count) return;
    claim_row(claims, claimed, r, q.src_key, q.dst_key, code, p);
  }

  /// The rows the batch makes live: num_ops when it is a count (0..C), else none.
  KOKKOS_INLINE_FUNCTION std::int32_t live_rows(const LimitInputs& in) const {
    return in.count >= 0 && in.count <= shape.capacity ? static_cast<std::int32_t>(in.count) : 0;
  }

  /// After the launch's rows are decided: the compact plan, from the live rows'
  /// codes and plans. When team 0's rows (the first `team0_rows`) hold every
  /// live row, team 0 writes it after its barrier and the others, whose rows
  /// the list does not read, count nothing; else the last team to finish
  /// writes it (a fence and an atomic count a team).
  KOKKOS_INLINE_FUNCTION void list_moves(const member_type& team, const LimitInputs& in, int team0_rows) const {
    const std::int32_t live = live_rows(in);
    if (live <= team0_rows) {
      if (team.league_rank() != 0) return;
      team.team_barrier();  // the team's codes and plans, written by its threads, visible to all of them
    } else if (!last_team(team, &moves(teams_done))) {
      return;
    }
    build_move_list(team, plan, errors, moves, live, static_cast<std::int32_t>(shape.capacity));
  }

  /// A row decided: move_kind() of its code and plan, and the plan.
  struct Decided {
    int kind;
    RowPlan plan;
  };

  /// Row r's code and plan: its own checks, then its comparisons with the
  /// other live rows (a conflict needs only equal keys). Each of the row's
  /// lanes compares it with every lanes-th row; their bits are OR-ed.
  /// Returns what apply() does with the row and its plan, the same on every
  /// lane but where a row claim (lane 0's alone) refused it.
  KOKKOS_INLINE_FUNCTION Decided decide(const member_type& team, int r, const RowRecord& q, const ValidateLimits& lim,
                                        const PeerKeys* peers) const {
    const RowCheck k = row_check<Features>(q, r, lim);
    const OwnKeys own = own_keys(q, k);
    const int count = static_cast<int>(lim.count);                  // 0 <= count <= C when k.check
    const bool narrow = shape.rows + shape.host_rows <= INT32_MAX;  // the same for every thread
    constexpr bool commits = (Features & feature_commit) != 0;
    const auto scan = [&](int lane) { return conflict_bits<commits>(own, peers, r, count, lane, lanes, narrow); };
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
    std::int32_t code;
    RowPlan p;
    finish(q, k, bits, lim, code, p);
    if (lead) {
      claim(r, q, lim, code, p);
      errors(r) = code;
      plan(r) = p;
      record_commit(r, q, lim);
    }
    return {move_kind(code, p.flags), p};
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
    auto* peers = static_cast<PeerKeys*>(
        team.team_scratch(0).get_shmem_aligned(c * sizeof(PeerKeys), static_cast<std::ptrdiff_t>(alignof(PeerKeys))));
    const LimitInputs in = limit_inputs();  // first used after the barrier
    if (rows_per_team < c) {
      // Several teams: team g decides rows [g R, g R + R), a thread each, and
      // shares the keys of all C rows, which its threads' lanes load. Its
      // warps then scan R rows' peers, not C rows', and the teams run on
      // different SMs instead of C rows' warps taking turns on one.
      const TeamRows m = team_rows(team, c);
      const RowRecord q = load_row(m.own);  // in flight with the shared rows' loads
      decide_team_rows(team, m, q, c, in, peers);
    } else if (const Decided own = decide_rows(team, c, in, peers); listed_plans) {
      // One thread a row: thread t holds row t's kind and plan, the list's
      // run of one row it owns (list_rows()); no read back.
      list_rows(
          team, [&](int) { return own.kind; }, moves, live_rows(in), static_cast<std::int32_t>(c),
          [&](int, int k) { listed(k) = own.plan; });
      return;
    }
    list_moves(team, in, rows_per_team < c ? rows_per_team : c);
  }

  /// Team g's rows [g R, g R + R) below `rows` (R: rows_per_team), and the row
  /// its thread decides first (the last of them for threads past it).
  struct TeamRows {
    int begin, end, own;
  };
  KOKKOS_INLINE_FUNCTION TeamRows team_rows(const member_type& team, int rows) const {
    const int begin = team.league_rank() * rows_per_team;
    const int end = begin + rows_per_team < rows ? begin + rows_per_team : rows;
    return {begin, end, begin + team.team_rank() < end ? begin + team.team_rank() : end - 1};
  }

  /// Team rows `m`, a thread each (`q`: its thread's m.own, loaded by the
  /// caller ahead), each compared with the first `peer_rows` rows' keys, which
  /// the team's threads and lanes load into `peers`.
  KOKKOS_INLINE_FUNCTION void decide_team_rows(const member_type& team, const TeamRows& m, const RowRecord& q,
                                               int peer_rows, const LimitInputs& in, PeerKeys* peers) const {
    const int t = team.team_rank(), threads = team.team_size();
    int peers_loaded = peer_rows;  // rows are compared with live rows only
    if constexpr (on_host) peers_loaded = peer_rows < live_rows(in) ? peer_rows : live_rows(in);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, peers_loaded),
                         [&](const int o) { peers[o] = peer_keys<Features>(load_row(o)); });
    team.team_barrier();
    const ValidateLimits lim = limits(in);
    if constexpr (on_host) {
      // A team of fewer threads than rows: the others loaded again, live ones only.
      const int live = live_rows(in);
      for (int r = m.begin + t; r < m.end; r += threads) {
        if (r < live)
          decide(team, r, r == m.own ? q : load_row(r), lim, peers);
        else
          skip_row(r, lim);
      }
    } else {
      if (m.begin + t < m.end) decide(team, m.own, q, lim, peers);
      for (int r = m.begin + t + threads; r < m.end; r += threads) decide(team, r, load_row(r), lim, peers);
    }
  }

  /// Rows [0, n) by one team, their peer keys in `peers` (n rows of team
  /// scratch): a thread a row, its record kept in registers across the barrier
  /// (prepare() asks for C threads; a larger team's extra threads idle), or,
  /// with fewer threads than rows (hosts), each row loaded again after it.
  /// Returns, where a thread decided one row (threads >= n), that row's kind
  /// and plan (kind 0 past the rows), else kind -1 (fewer threads than rows:
  /// LaunchPlan::listed_plans is never set there, and list_moves() reads the
  /// rows' codes and plans back).
  KOKKOS_INLINE_FUNCTION Decided decide_rows(const member_type& team, int n, const LimitInputs& in,
                                             PeerKeys* peers) const {
    const int t = team.team_rank(), threads = team.team_size();
    if (threads >= n) {
      const int r = t < n ? t : n - 1;  // with n > 0 every thread loads (row n - 1 past n); only t < n use it
      RowRecord q{};
      if (n > 0) q = load_row(r);
      if (t < n) share(team, r, q, peers);
      team.team_barrier();
      return t < n ? decide(team, r, q, limits(in), peers) : Decided{0, RowPlan{}};
    } else {
      // Fewer threads than rows (hosts): rows past the live count are not loaded (skip_row()).
      int live = n;
      if constexpr (on_host) live = n < live_rows(in) ? n : live_rows(in);
      for (int r = t; r < live; r += threads) share(team, r, load_row(r), peers);
      team.team_barrier();
      const ValidateLimits lim = limits(in);
      for (int r = t; r < live; r += threads) decide(team, r, load_row(r), lim, peers);
      if constexpr (on_host)
        for (int r = live + t; r < n; r += threads) skip_row(r, lim);
      return {-1, RowPlan{}};
    }
  }
};

}  // namespace statexfer::impl

#endif
