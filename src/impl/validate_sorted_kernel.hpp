#ifndef STATEXFER_IMPL_VALIDATE_SORTED_KERNEL_HPP
#define STATEXFER_IMPL_VALIDATE_SORTED_KERNEL_HPP

// validate() for the large-batch extension (capacities 128..4096): the same codes
// and plan as ValidateFunctor (docs/CONTRACT.md §4), with the conflict tests done by sorting
// instead of comparing every pair of rows. Two launches:
//
//  1. Pairs or keys (SortedFirstFunctor). Up to `pairs_live` live rows (the
//     pair compares' capacity, launch_plan.hpp): every row's code and plan by
//     comparing every pair of live rows, as ValidateFunctor at that capacity,
//     and the compact plan; launch 2 then returns at once, so a partly filled
//     batch costs one launch's chain of loads and one empty launch (hosts,
//     whose launches have run when they return, leave it out). Rows past the
//     count get their codes; of their plans, only those below the previous
//     batch's live count can be set, and only those are cleared.
//     More live rows: each one's record (load_row) and one uint64 key in each
//     array where another row's key can equal it (absent: all ones, sorted last):
//        0 destinations: the row key of dst (row_key: device and host rows
//                        apart), when it is a row
//        1 sources:      (row key << 1) | written, for src of a copying row
//                        when it is a row; written: a commit's position row
//                        other than its live row, which counts as written
//                        (docs/CONTRACT.md §13)
//        2 pages:        (o_page << 1) | restore, when o_page >= 0 (restore:
//                        a copy into the request's live row)
//        3, 4 trailing:  ((entry + 2^31) << 1) | snapshot, for trailing part 0
//                        or 1 of a copying row with a valid slot, when used
//  2. Sort, look up and decide (SortedLookupFunctor), teams per chunk of an
//     array (chunks of at most 1024 keys, so that C = 4096 spreads over 20 SMs:
//     one team sorting all 4096 keys is issue-bound on one SM,
//     perf_tests/RESULTS.md; several teams per chunk, each answering a slice of
//     the rows): the chunk is copied into team scratch (shared memory on CUDA,
//     8 KiB), sorted there by the team sort (Kokkos 4:
//     Kokkos::Experimental::sort_team; Kokkos 3.4: Kokkos Kernels'
//     TeamBitonicSort; neither: a bitonic network of our own), and then every
//     row's queries into that array are binary searches in the chunk: how many
//     keys equal the row's destination, source, partial page or trailing
//     entries, counted no further than the answer needs, so that the chunks'
//     counts add up to the answer. They are bytes of the row's lookups. (Hosts:
//     a team of one thread sorts with std::sort, whole arrays up to 4096 keys,
//     one team each: launch_plan.hpp's default_sort_chunk.) The
//     last team of a slice's teams (every array and chunk) to finish then
//     decides the slice's rows, a thread a row: the row's own checks, its
//     conflicts from its lookups summed over chunks (more keys than its own:
//     another row), then the code and plan, by row_check() and finish_row() as
//     in ValidateFunctor; the last slice to be decided lists the moves. A
//     third launch for the decisions cost a partly filled batch a graph node
//     (perf_tests/DESIGN-NOTES.md).
//
// Why the keys suffice: a checked row has 0 < dst, src < SLOTS <= rows, and a
// peer's value can only equal such a key when it lies in (0, rows) too; main
// partial pages are >= 0 on both sides; trailing entries are int32 (the
// unused-part query of docs/CONTRACT.md §4 looks up entry -1 the same way). A checked row's
// own keys are in the arrays, so "another row" is "more keys than its own".
// Work: O(C log^2 C) compare-exchanges in O(log^2 C) team steps for the sorts,
// which run side by side on different SMs, and O(log C) per query and chunk
// (at most 4 chunks up to C = 4096); no pair of rows is ever compared.
//
// Memory: work Views allocated with the transfer (never in validate(), which is
// captured in CUDA graphs): records, keys and lookup words, about 150 bytes per
// command, and a count of finished teams a slice. Concurrent validate() calls
// of one transfer on different streams are not supported (as for the plan View
// they already share).

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <statexfer/commands.hpp>
#include <statexfer/launch_plan.hpp>

#include "device_types.hpp"
#include "key_table.hpp"
#include "team_sort.hpp"
#include "validate_kernel.hpp"

namespace statexfer::impl {

/// The key arrays of the sorted validation (see the file comment): keys(array * C + row) before the sort.
enum SortedArray : int { sorted_dst = 0, sorted_src = 1, sorted_page = 2, sorted_trailing0 = 3 };

/// Key of a main partial page or trailing entry with its role bit.
KOKKOS_INLINE_FUNCTION std::uint64_t page_key(std::int64_t page, bool role) {
  return (static_cast<std::uint64_t>(page) << 1) | (role ? 1u : 0u);
}
KOKKOS_INLINE_FUNCTION std::uint64_t trailing_key(std::int64_t entry, bool role) {
  return page_key(entry + (std::int64_t(1) << 31), role);
}

/// A commit's position row other than its live row: counts as written (docs/CONTRACT.md §13).
KOKKOS_INLINE_FUNCTION bool writes_source(const RowRecord& q) {
  return (q.kind & row_commit) && q.src_key != q.dst_key;
}

/// Key of a row in the sources' array, with its written bit.
KOKKOS_INLINE_FUNCTION std::uint64_t source_key(std::int64_t row_key, bool written) {
  return (static_cast<std::uint64_t>(row_key) << 1) | (written ? 1u : 0u);
}

/// The key row `q` (live) puts into array `a`, or sorted_absent.
KOKKOS_INLINE_FUNCTION std::uint64_t sorted_key(const RowRecord& q, int a) {
  const bool pages = (q.kind & row_pages) != 0;
  if (a == sorted_dst) return q.dst_key > 0 ? static_cast<std::uint64_t>(q.dst_key) : sorted_absent;
  if (a == sorted_src) return q.src_key > 0 ? source_key(q.src_key, writes_source(q)) : sorted_absent;
  if (a == sorted_page) {
    const std::int64_t page = peer_page(q);
    return page >= 0 ? page_key(page, pages && q.dst == q.state) : sorted_absent;
  }
  // A select, not an index: indexing the record with a run-time value puts it in local memory.
  const std::int64_t entry = a == sorted_trailing0 ? q.tpage[0] : q.tpage[1];
  return pages && q.valid_slot && entry != trailing_unused ? trailing_key(entry, is_snapshot_row(q)) : sorted_absent;
}

/// First position of `a` (n sorted keys) whose key is not below `key`.
KOKKOS_INLINE_FUNCTION int lower_bound(const std::uint64_t* KOKKOS_RESTRICT a, int n, std::uint64_t key) {
  int first = 0;
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  // CPUs, from 1024 keys: without a branch on the keys (conditional moves), which a CPU mispredicts there;
  // below, neighbouring rows' searches take paths it predicts, and the branches were faster
  // (perf_tests/RESULTS.md).
  if (n >= 1024) {
    while (n > 1) {
      const int half = n >> 1;
      first = a[first + half - 1] < key ? first + half : first;
      n -= half;
    }
    return first + (a[first] < key ? 1 : 0);
  }
#endif
  while (n > 0) {
    const int half = n >> 1;
    if (a[first + half] < key) {
      first += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  return first;
}

/// How many of the sorted keys `a` (n of them) lie in [lo, hi], counting no
/// further than `most`: a search and at most `most` reads.
KOKKOS_INLINE_FUNCTION int count_keys(const std::uint64_t* KOKKOS_RESTRICT a, int n, std::uint64_t lo, std::uint64_t hi,
                                      int most) {
  const int i = lower_bound(a, n, lo);
  int found = 0;
  while (found < most && i + found < n && a[i + found] <= hi) ++found;
  return found;
}

/// The lookups of a row in one chunk (SortedWork::lookups): one byte per query.
enum SortedLookup : int {
  lookup_dst_in_dst = 0,      // destinations equal to its dst (at most 2)
  lookup_src_in_dst = 1,      // destinations equal to its src (at most 2)
  lookup_dst_in_src = 2,      // sources equal to its dst (at most 2)
  lookup_page = 3,            // restore: pages equal to its page (at most 2); else restores' pages (at most 1)
  lookup_trailing = 4,        // + 2 * array + part: trailing keys of array 0/1 equal to its part's entry (at
                              // most 3), of non-snapshot rows only when it is a snapshot
  lookup_src_in_src = 8,      // a commit: sources equal to its position row (at most 2)
  lookup_src_in_written = 9,  // written sources (commits' position rows) equal to its src (at most 2)
  lookup_bytes = 10
};

/// The work Views of the sorted validation, allocated with the transfer.
template <class MemorySpace>
struct SortedWork {
  Kokkos::View<RowRecord*, MemorySpace> records;     // [C]
  Kokkos::View<std::uint64_t*, MemorySpace> keys;    // [arrays * C]: keys(array * C + row) from launch 1 (sorted)
  Kokkos::View<std::uint8_t*, MemorySpace> lookups;  // [(row * chunks + chunk) * lookup_bytes + query]
  Kokkos::View<std::int32_t*, MemorySpace> done;     // [groups]: launch 2's teams of each slice done (then 0)
  Kokkos::View<std::int32_t, MemorySpace> planned;   // rows past it have empty plans (launch 2 sets it)
  int arrays = 3;                                    // 5 with trailing bindings
  int chunk = 1;                                     // keys per chunk (a power of two)
  int chunks = 1;                                    // chunks per array
  int groups = 1;                                    // teams per chunk, each answering a slice of the rows
  int in_scratch = 1;                                // a chunk fits in team scratch level 0
  int pairs_live = 1;                                // live rows up to which launch 1 compares every pair
  KeyTable<MemorySpace> table;                       // the counted variant's (table.bits > 0), else empty
  // validate_and_apply()'s first launch (fused_first_kernel.hpp; there pairs_live is what its teams decide, a
  // row each): up to first_units live work items (rows x first_items) it decides and moves the batch itself;
  // 0: never.
  std::int64_t first_units = 0;
  int first_items = 1;

  KOKKOS_INLINE_FUNCTION bool first_moves(int live) const {
    return first_units > 0 && std::int64_t(live) * first_items <= first_units;
  }
  /// Whether launch 1 decided every row of a batch of `live` rows, so that launch 2 returns at once.
  KOKKOS_INLINE_FUNCTION bool first_decides(int live) const { return live <= pairs_live || first_moves(live); }
};

/// Rows [from, c) split over the league: code 0 (5: `bad_count`), no plan.
/// Only the rows below the last validate()'s live count (`planned`, read
/// beside the count) can hold a plan: the others' plan lines, a cache line
/// a row, are not touched, so that a few live rows at C = 4096 write 16 KiB
/// of codes and not 256 KiB of plans.
template <class Member, class Base>
KOKKOS_INLINE_FUNCTION void clear_past_live(const Member& team, const Base& base, const int from, const int c,
                                            const bool bad_count, const int planned) {
  const int teams = team.league_size(), per = (c - from + teams - 1) / teams;
  const int first = from + team.league_rank() * per, last = first + per < c ? first + per : c;
  Kokkos::parallel_for(Kokkos::TeamVectorRange(team, first, last), [&](const int r) {
    base.errors(r) = bad_count ? 5 : 0;
    if (r < planned) base.plan(r).flags = 0;
    if (base.shape.positions > 0) base.commit_positions(r) = -1;
  });
}

/// Launch 1 with more live rows than it decides: each live row's record and
/// keys, split over the league (launch 2 decides them), then the rows past the
/// count (clear_past_live()). `base`: a ValidateFunctor of any features the
/// transfer has.
template <class Member, class Base, class MemorySpace>
KOKKOS_INLINE_FUNCTION void write_live_keys(const Member& team, const Base& base, const SortedWork<MemorySpace>& work,
                                            const int live, const int c, const int planned) {
  const int g = team.league_rank(), teams = team.league_size();
  const int per = (live + teams - 1) / teams;
  const int first = g * per, last = first + per < live ? first + per : live;
  const int turn = work.table.bits > 0 ? work.table.state(0) : 0;
  Kokkos::parallel_for(Kokkos::TeamVectorRange(team, first, last), [&](const int r) {
    const RowRecord row = base.load_row(r);
    work.records(r) = row;
    // Sorted, the key arrays; counted, the table only.
    for (int a = 0; a < work.arrays; ++a) {
      const std::uint64_t key = sorted_key(row, a);
      if (work.table.bits == 0)
        work.keys(a * std::int64_t(c) + r) = key;
      else if (key != sorted_absent)
        work.table.insert(turn, a, r, key);
    }
  });
  if (work.table.bits > 0 && g == 0 && team.team_rank() == 0) work.table.state(1 + turn) = live;
  clear_past_live(team, base, live, c, false, planned);
}

/// Launch 1: up to work.pairs_live live rows every row's code and plan, by
/// comparing every pair of live rows (`base` holds the pair compares' teams at
/// that capacity: rows_per_team rows a team, its lanes); more, each live row's
/// record and keys. A bad count has no live rows: code 5 on every row here.
template <class ExecutionSpace>
struct SortedFirstFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  using base_type = ValidateFunctor<ExecutionSpace>;
  using policy_type = typename base_type::policy_type;
  using member_type = typename policy_type::member_type;
  base_type base;
  SortedWork<memory_space> work;

  /// Team scratch: the live rows' peer keys (pairs_live of them) and the compact plan's list.
  std::size_t scratch_bytes(int team_size) const {
    return base_type::scratch_bytes(work.pairs_live) + list_scratch_bytes(team_size);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int c = static_cast<int>(base.shape.capacity), pairs = work.pairs_live;
    const typename base_type::TeamRows m = base.team_rows(team, pairs);
    // The count, the mark and this thread's row in flight together; the row is used only when the live rows
    // are few.
    const typename base_type::LimitInputs in = base.limit_inputs();
    const int planned = work.planned();
    const RowRecord q = base.load_row(m.own);
    const int live = base.live_rows(in);
    if (live > pairs) return write_live_keys(team, base, work, live, c, planned);  // launch 2 decides them
    // The pair compares over the live rows' keys (ValidateFunctor's teams): rows [0, pairs) by their teams.
    auto* peers = static_cast<PeerKeys*>(team.team_scratch(0).get_shmem_aligned(
        pairs * sizeof(PeerKeys), static_cast<std::ptrdiff_t>(alignof(PeerKeys))));
    base.decide_team_rows(team, m, q, live, in, peers);
    // Rows [pairs, C), past the live count: code 0 (5 for a bad count) and no plan, with no record read.
    clear_past_live(team, base, pairs, c, base.limits(in).bad_count, planned);
    base.list_moves(team, in, base.rows_per_team);
  }
};

/// Live row r's code and plan (RowCheck k of record q) from its queries' counts
/// `in` (SortedLookup's indices: keys equal to its own, its own included), as
/// ValidateFunctor decides from its pair compares.
template <class ExecutionSpace>
KOKKOS_INLINE_FUNCTION void decide_row(const ValidateFunctor<ExecutionSpace>& base, const RowRecord& q, const int r,
                                       const RowCheck& k, const ValidateLimits& lim, const int* in) {
  bool conflict = false;
  bool t_conflict[2] = {false, false};
  if (k.check) {
    // Rows: another destination on its destination, a copy's source on its
    // destination (its own excepted), another destination on its source (its
    // own excepted). Its own keys are in the arrays (0 < dst, src < rows).
    const int same = q.src_key == q.dst_key ? 1 : 0;
    conflict = in[lookup_dst_in_dst] > 1 || in[lookup_dst_in_src] > (k.copying ? same : 0) ||
               (k.copying && in[lookup_src_in_dst] > same);
    // A commit's position row counts as written (§13): another source on it,
    // or a commit's on its source (its own excepted).
    if (base.shape.positions > 0)
      conflict = conflict || (k.commit && in[lookup_src_in_src] > 1) ||
                 (k.copying && in[lookup_src_in_written] > (writes_source(q) ? 1 : 0));
    // Main partial page: a restore collides with any other row's, the others
    // with a restore's (its own key is one of the first kind).
    if (k.page >= 0) conflict = conflict || in[lookup_page] > (k.restore ? 1 : 0);
    // Trailing pages: any other row's used part with the same entry (an
    // unused part asks for entry -1), unless both rows are snapshots.
    for (int part = 0; part < 2; ++part) {
      if (!k.t_active[part]) continue;
      const int found = in[lookup_trailing + part] + in[lookup_trailing + 2 + part];
      const int own =
          k.snapshot_row ? 0 : (q.tpage[0] == k.t_page[part] ? 1 : 0) + (q.tpage[1] == k.t_page[part] ? 1 : 0);
      t_conflict[part] = found > own;
    }
  }
  std::int32_t code;
  RowPlan p;
  const int bits = (conflict ? 1 : 0) | (t_conflict[0] ? 2 : 0) | (t_conflict[1] ? 4 : 0);
  base.finish(q, k, bits, lim, code, p);
  base.claim(r, q, lim, code, p);
  base.errors(r) = code;
  base.plan(r) = p;
  base.record_commit(r, q, lim);
}

/// Launch 2: a team per chunk of an array sorts it and answers its slice of
/// the rows' queries into it; the slice's last team decides them.
template <class ExecutionSpace>
struct SortedLookupFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  // Up to a block of 512 threads on CUDA (C / 2 compare-exchanges a step, up to the default chunk's),
  // whose registers hold a decision without a stack frame (at 1024, 64 registers did not).
  static constexpr int max_threads = 512;
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<max_threads, 1>>;
  using member_type = typename policy_type::member_type;

  ValidateFunctor<ExecutionSpace> base;
  SortedWork<memory_space> work;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const TransferShape& shape = base.shape;
    const int per_array = work.chunks * work.groups;
    const int a = team.league_rank() / per_array, in_array = team.league_rank() - a * per_array;
    const int chunk = in_array / work.groups, group = in_array - chunk * work.groups;
    const int c = static_cast<int>(shape.capacity);
    const auto in = base.limit_inputs();
    const int live = base.live_rows(in);
    // The live rows' keys are the first `live` of each array: a chunk past them
    // holds none (and its team has nothing to do), the chunk they end in is
    // sorted and searched up to there only. So the work follows num_ops, not C.
    const int start = chunk * work.chunk;
    // Launch 1 has read the mark; plans written by this validate() are the live rows' only.
    if (team.league_rank() == 0 && team.team_rank() == 0) work.planned() = live;
    if (start >= live || work.first_decides(live)) return;  // launch 1 decided a few live rows
    const int n = live - start < work.chunk ? live - start : work.chunk;
    std::uint64_t* keys = work.keys.data() + std::int64_t(a) * c + start;
    std::uint64_t* sorted = keys;
    if (work.in_scratch) {
      sorted = static_cast<std::uint64_t*>(team.team_scratch(0).get_shmem(work.chunk * sizeof(std::uint64_t)));
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int i) { sorted[i] = keys[i]; });
      team.team_barrier();
      if (!host_sort(team, sorted, n)) team_sort_keys<typename ExecutionSpace::scratch_memory_space>(team, sorted, n);
    } else if (!host_sort(team, sorted, n)) {
      team_sort_keys<memory_space>(team, sorted, n);
    }
    // Each of the chunk's teams sorts it (cheap next to the look-ups) and answers a slice of the rows.
    const int first = static_cast<int>(std::int64_t(live) * group / work.groups);
    const int last = static_cast<int>(std::int64_t(live) * (group + 1) / work.groups);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, first, last), [&](const int r) {
      const RowRecord& q = work.records(r);
      std::uint8_t* out = work.lookups.data() + (std::int64_t(r) * work.chunks + chunk) * lookup_bytes;
      if (a == sorted_dst) {
        if (q.dst_key > 0) {
          const auto dst = static_cast<std::uint64_t>(q.dst_key);
          out[lookup_dst_in_dst] = static_cast<std::uint8_t>(count_keys(sorted, n, dst, dst, 2));
        }
        if (q.src_key > 0) {
          const auto src = static_cast<std::uint64_t>(q.src_key);
          out[lookup_src_in_dst] = static_cast<std::uint8_t>(count_keys(sorted, n, src, src, 2));
        }
      } else if (a == sorted_src) {
        if (q.dst_key > 0)
          out[lookup_dst_in_src] = static_cast<std::uint8_t>(
              count_keys(sorted, n, source_key(q.dst_key, false), source_key(q.dst_key, true), 2));
        if (shape.positions > 0 && q.src_key > 0) {
          const std::uint64_t read = source_key(q.src_key, false), written = source_key(q.src_key, true);
          if (q.kind & row_commit)
            out[lookup_src_in_src] = static_cast<std::uint8_t>(count_keys(sorted, n, read, written, 2));
          out[lookup_src_in_written] = static_cast<std::uint8_t>(count_keys(sorted, n, written, written, 2));
        }
      } else if (a == sorted_page) {
        const std::int64_t page = peer_page(q);
        if (page >= 0) {
          const bool restore = (q.kind & row_pages) && q.dst == q.state;
          out[lookup_page] =
              static_cast<std::uint8_t>(restore ? count_keys(sorted, n, page_key(page, false), page_key(page, true), 2)
                                                : count_keys(sorted, n, page_key(page, true), page_key(page, true), 1));
        }
      } else {
        const bool snapshot = is_snapshot_row(q);
        for (int part = 0; part < 2; ++part) {
          const std::int64_t entry = q.tpage[part] != trailing_unused ? q.tpage[part] : -1;
          out[lookup_trailing + 2 * (a - sorted_trailing0) + part] = static_cast<std::uint8_t>(
              count_keys(sorted, n, trailing_key(entry, false), trailing_key(entry, !snapshot), 3));
        }
      }
    });
    // The slice's last team (of every array's chunks that hold live keys) decides its rows, and the
    // last slice decided lists the moves.
    const int chunks = (live + work.chunk - 1) / work.chunk;
    if (!last_team_of(team, &work.done(group), work.arrays * chunks)) return;
    const ValidateLimits lim = base.limits(in);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, first, last), [&](const int r) { decide(r, lim, chunks); });
    Kokkos::single(Kokkos::PerTeam(team), [&] { work.done(group) = 0; });
    if (!last_team_of(team, &base.moves(teams_done), work.groups)) return;
    build_move_list(team, base.plan, base.errors, base.moves, live, c);
  }

  /// A host's team of one thread sorts with std::sort: the team sorts' networks, O(n log^2 n) compare-exchanges
  /// run by one thread, cost it several times more. Whether it did.
  KOKKOS_INLINE_FUNCTION static bool host_sort([[maybe_unused]] const member_type& team,
                                               [[maybe_unused]] std::uint64_t* keys, [[maybe_unused]] int n) {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
    if constexpr (std::is_same_v<memory_space, Kokkos::HostSpace>) {
      if (team.team_size() == 1) {
        std::sort(keys, keys + n);
        return true;
      }
    }
#endif
    return false;
  }

  /// Live row r; `chunks`: the chunks that hold live keys (the look-ups answered in those only).
  KOKKOS_INLINE_FUNCTION void decide(const int r, const ValidateLimits& lim, const int chunks) const {
    const RowRecord q = work.records(r);
    const RowCheck k = row_check(q, r, lim);
    // The chunks' counts of each query, added.
    int in[lookup_bytes] = {};
    if (k.check) {
      // Other teams of this launch wrote them: plain loads after last_team_of()'s fence (an acquire) see them.
      const std::uint8_t* looked = work.lookups.data() + std::int64_t(r) * work.chunks * lookup_bytes;
      for (int chunk = 0; chunk < chunks; ++chunk)
        for (int i = 0; i < lookup_bytes; ++i) in[i] += looked[chunk * lookup_bytes + i];
    }
    decide_row(base, q, r, k, lim, in);
  }
};

}  // namespace statexfer::impl

#endif
