#ifndef STATEXFER_IMPL_VALIDATE_SORTED_KERNEL_HPP
#define STATEXFER_IMPL_VALIDATE_SORTED_KERNEL_HPP

// validate() for the large-batch extension (capacities 128..4096): the same codes
// and plan as ValidateFunctor (SPEC §4), with the conflict tests done by sorting
// instead of comparing every pair of rows. One team, one launch:
//
//  1. Every row is loaded once (ValidateFunctor::load_row) into a work View and
//     contributes up to K tuples (K = 3, or 5 with trailing bindings), one per
//     key that another row can collide with, each packed into one uint64:
//        class 2 bits | key 48 bits | role 1 bit | part 1 bit | row 12 bits
//     class 0, rows:     destination (role 0) of every live row and source
//                        (role 1) of every live copying row, when 0 < key < rows;
//     class 1, page:     the partial page o_page of every live row that has one
//                        (>= 0), role 1 when it is a restore (dst == state);
//     class 2, trailing: every used trailing part of every live copying row with
//                        a valid slot, key = entry + 2^31, role 1 for a
//                        snapshot (src == state).
//     Absent tuples are all ones and sort last.
//  2. The team sorts each class on its own (2C, C and 2C tuples; Kokkos 4:
//     Kokkos::Experimental::sort_team; Kokkos 3.4: Kokkos Kernels'
//     TeamBitonicSort; neither: a bitonic network of our own), in team scratch
//     level 0 (shared memory on CUDA) when the class fits. A class larger than
//     the scratch (2C = 8192 at C = 4096) is sorted there block by block and the
//     blocks merged by the remaining levels of the same bitonic network: the
//     steps that span blocks in the work View, the others again in scratch.
//     Equal (class, key) now form runs, role 0 before role 1.
//  3. A team scan (tiles staged in scratch) numbers the runs and counts role-1
//     tuples before each one, so that every tuple knows how many role-0 and
//     role-1 tuples share its key.
//  4. Each tuple subtracts its own row's contributions to its run and records
//     whether a tuple of another row with a conflicting role is there (a flag per
//     row and tuple slot).
//  5. Each row decides its code and plan exactly as ValidateFunctor does, reading
//     the flags instead of scanning the other rows. The trailing query of a part
//     that is not used (its t_page is -1) is answered from two counts reduced in
//     step 1: used parts whose entry is -1, and those of non-snapshot rows.
//
// Why the keys suffice: a row reaches the conflict test only with
// 0 < dst, src < SLOTS <= rows, and a peer's value can only equal such a key when
// it lies in (0, rows) too; main partial pages must be >= 0 on both sides; trailing
// entries are int32. Work: O(C log^2 C) compare-exchanges in O(log^2 C) team
// steps (bitonic), O(C) for everything else; no pair of rows is ever compared.
// On CUDA the team is one block of 1024 threads (LaunchBounds; a power of two,
// which Kokkos 3.4's team scan requires).
//
// Memory: a work View allocated with the transfer (never in validate(), which is
// captured in CUDA graphs): records, keys, run table and flags, about 200 bytes
// per command at K = 5. Concurrent validate() calls of one transfer on different
// streams are not supported (as for the plan View they already share).

#include <Kokkos_Core.hpp>

#if KOKKOS_VERSION >= 40000
#include <Kokkos_NestedSort.hpp>
#include <Kokkos_Sort.hpp>
#define STATEXFER_IMPL_TEAM_SORT_KOKKOS 1
#elif defined(STATEXFER_HAVE_KOKKOSKERNELS)
#include <KokkosKernels_Sorting.hpp>
#define STATEXFER_IMPL_TEAM_SORT_KOKKOSKERNELS 1
#endif

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <statexfer/commands.hpp>

#include "device_types.hpp"
#include "validate_kernel.hpp"

namespace statexfer::impl {

/// Packing of one sort tuple (see the file comment).
struct SortedKey {
  static constexpr int part_shift = 12;
  static constexpr int role_shift = 13;
  static constexpr int key_shift = 14;
  static constexpr int class_shift = 62;
  static constexpr std::uint64_t row_mask = (std::uint64_t(1) << part_shift) - 1;
  static constexpr std::int64_t key_limit = std::int64_t(1) << (class_shift - key_shift);
  static constexpr std::uint64_t absent = ~std::uint64_t(0);
  static constexpr std::uint64_t rows = 0, page = 1, trailing = 2;  // classes
  static constexpr std::int64_t trailing_bias = std::int64_t(1) << 31;

  KOKKOS_INLINE_FUNCTION static std::uint64_t make(std::uint64_t cls, std::int64_t key, bool role, int part,
                                                   std::int64_t row) {
    return (cls << class_shift) | (static_cast<std::uint64_t>(key) << key_shift) |
           (static_cast<std::uint64_t>(role) << role_shift) | (static_cast<std::uint64_t>(part) << part_shift) |
           static_cast<std::uint64_t>(row);
  }
  /// Class and key: equal groups are the runs that collide.
  KOKKOS_INLINE_FUNCTION static std::uint64_t group(std::uint64_t k) { return k >> key_shift; }
};
static_assert(max_extended_capacity <= (1 << SortedKey::part_shift), "row index must fit the packed tuple");

// Tuple slots of one row: keys(slot * C + row).
enum SortedSlot : int { sorted_dst = 0, sorted_src = 1, sorted_page = 2, sorted_trailing0 = 3, sorted_trailing1 = 4 };

/// One run of equal (class, key) in the sorted tuples: where it starts and how
/// many role-1 tuples come before it. Entry `runs` is the end marker.
struct SortedRun {
  std::int32_t begin;
  std::int32_t ones_before;
};

/// One step of the bitonic network on `values` (n positions, the network over
/// the next power of two; positions >= n act as +infinity): every pair of level
/// `level`, step `step`, by the calling team, then a team barrier. The first
/// step of a level (step == level) compares mirrored positions of each block of
/// 2^(level+1) (two sorted halves then merge), the later ones positions 2^step
/// apart. After the last step of level L every aligned block of 2^(L+1)
/// positions is sorted ascending (the network of Kokkos Kernels' and Kokkos'
/// team sorts).
template <class Member>
KOKKOS_INLINE_FUNCTION void bitonic_step(const Member& team, std::uint64_t* values, int n, int npot, int level,
                                         int step) {
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, npot / 2), [&](const int t) {
    const int half = 1 << step;
    const int block = (t >> step) << (step + 1);
    const int offset = t & (half - 1);
    const int low = block + offset;
    const int high = step == level ? block + 2 * half - 1 - offset : low + half;
    if (high < n && values[high] < values[low]) {
      const std::uint64_t tmp = values[low];
      values[low] = values[high];
      values[high] = tmp;
    }
  });
  team.team_barrier();
}

/// Team sort of `n` uint64 at `values` (in MemorySpace) in ascending order, by
/// the calling team; ends with a team barrier.
template <class MemorySpace, class Member>
KOKKOS_INLINE_FUNCTION void team_sort_keys(const Member& team, std::uint64_t* values, int n) {
#if defined(STATEXFER_IMPL_TEAM_SORT_KOKKOS)
  Kokkos::Experimental::sort_team(
      team, Kokkos::View<std::uint64_t*, MemorySpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(values, n));
  team.team_barrier();
#elif defined(STATEXFER_IMPL_TEAM_SORT_KOKKOSKERNELS)
  KokkosKernels::Impl::TeamBitonicSort<int, std::uint64_t, Member>(values, n, team);
  team.team_barrier();
#else
  int npot = 1, levels = 0;
  while (npot < n) npot <<= 1, ++levels;
  for (int level = 0; level < levels; ++level)
    for (int step = level; step >= 0; --step) bitonic_step(team, values, n, npot, level, step);
#endif
}

/// The work View of the sorted validation, allocated with the transfer.
template <class MemorySpace>
struct SortedWork {
  Kokkos::View<RowRecord*, MemorySpace> records;       // [C]
  Kokkos::View<std::uint64_t*, MemorySpace> keys;      // [K * C]
  Kokkos::View<std::int32_t*, MemorySpace> run_of;     // [K * C]: run of each sorted position
  Kokkos::View<SortedRun*, MemorySpace> runs;          // [K * C + 1]
  Kokkos::View<std::uint8_t*, MemorySpace> conflicts;  // [K * C]: slot * C + row
  int slots = 0;                                       // K
  int shared_keys = 0;                                 // keys sorted in team scratch level 0
};

template <class ExecutionSpace>
struct SortedValidateFunctor {
  using memory_space = typename ExecutionSpace::memory_space;
  // One block of 1024 threads on CUDA: the bounds keep the kernel's registers
  // within what such a block may use. Without them team_size_max returned 736
  // on an H200, which is no power of two, and Kokkos 3.4's team scan then aborts.
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<1024, 1>>;
  using member_type = typename policy_type::member_type;

  ValidateFunctor<ExecutionSpace> base;  // the bound arrays, shape and load_row()
  Kokkos::View<RowRecord*, memory_space> records;
  Kokkos::View<std::uint64_t*, memory_space> keys;
  Kokkos::View<std::int32_t*, memory_space> run_of;
  Kokkos::View<SortedRun*, memory_space> runs;
  Kokkos::View<std::uint8_t*, memory_space> conflicts;
  int slots = 3;
  int shared_keys = 0;  // capacity of the level-0 team scratch, in keys (0: none)

  // Sort keys [begin, begin + len) (len a power of two). In team scratch
  // (shared memory on CUDA) when the class fits; when it is larger, each block
  // of shared_keys is sorted there by the team sort, and the remaining levels of
  // the same bitonic network merge the blocks: the steps that span blocks in
  // place, the steps within a block again in scratch. Only where neither fits,
  // the team sort runs in place.
  KOKKOS_INLINE_FUNCTION void sort_segment(const member_type& team, std::uint64_t* shared, std::int64_t begin,
                                           int len) const {
    std::uint64_t* segment = keys.data() + begin;
    const int block = shared_keys;
    auto stage = [&](int b) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, block), [&](const int i) { shared[i] = segment[b + i]; });
      team.team_barrier();
    };
    auto unstage = [&](int b) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, block), [&](const int i) { segment[b + i] = shared[i]; });
      team.team_barrier();
    };
    if (len <= block) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, len), [&](const int i) { shared[i] = segment[i]; });
      team.team_barrier();
      team_sort_keys<typename ExecutionSpace::scratch_memory_space>(team, shared, len);
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, len), [&](const int i) { segment[i] = shared[i]; });
      team.team_barrier();
      return;
    }
    if (block == 0 || len % block != 0) {
      team_sort_keys<memory_space>(team, segment, len);
      return;
    }
    int block_levels = 0, levels = 0;
    while ((1 << block_levels) < block) ++block_levels;
    while ((1 << levels) < len) ++levels;
    for (int b = 0; b < len; b += block) {
      stage(b);
      team_sort_keys<typename ExecutionSpace::scratch_memory_space>(team, shared, block);
      unstage(b);
    }
    for (int level = block_levels; level < levels; ++level) {
      for (int step = level; step >= block_levels; --step) bitonic_step(team, segment, len, len, level, step);
      for (int b = 0; b < len; b += block) {
        stage(b);
        for (int step = block_levels - 1; step >= 0; --step) bitonic_step(team, shared, block, block, level, step);
        unstage(b);
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const TransferShape& shape = base.shape;
    const std::int64_t c = shape.capacity;
    const int n = static_cast<int>(slots * c);
    const std::int64_t count = base.num_ops(0);
    const bool bad_count = count < 0 || count > c;

    // 1. Rows and their tuples; counts of used trailing parts whose entry is -1
    //    (high half: all, low half: those of non-snapshot rows).
    std::int64_t unmapped_trailing = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, c),
        [&](const std::int64_t r, std::int64_t& acc) {
          const RowRecord q = base.load_row(r);
          records(r) = q;
          std::uint64_t k[5] = {SortedKey::absent, SortedKey::absent, SortedKey::absent, SortedKey::absent,
                                SortedKey::absent};
          if (!bad_count && r < count) {
            const bool copy = q.op == 0;
            if (q.dst > 0 && q.dst < shape.rows) k[sorted_dst] = SortedKey::make(SortedKey::rows, q.dst, false, 0, r);
            if (copy && q.src > 0 && q.src < shape.rows)
              k[sorted_src] = SortedKey::make(SortedKey::rows, q.src, true, 0, r);
            const std::int64_t page = peer_page(q);
            if (page >= 0) k[sorted_page] = SortedKey::make(SortedKey::page, page, copy && q.dst == q.state, 0, r);
            if (copy && q.valid_slot) {
              const bool snapshot = q.src == q.state;
              for (int part = 0; part < 2; ++part) {
                if (q.tpage[part] == trailing_unused) continue;
                k[sorted_trailing0 + part] = SortedKey::make(
                    SortedKey::trailing, q.tpage[part] + SortedKey::trailing_bias, snapshot, part, r);
                if (q.tpage[part] == -1) acc += (std::int64_t(1) << 32) + (snapshot ? 0 : 1);
              }
            }
          }
          for (int j = 0; j < slots; ++j) {
            keys(j * c + r) = k[j];
            conflicts(j * c + r) = 0;
          }
        },
        unmapped_trailing);
    team.team_barrier();

    // 2. Sort each class on its own (runs never cross classes): rows [0, 2C),
    //    main pages [2C, 3C), trailing parts [3C, 5C). Three power-of-two sorts
    //    do about half the compare-exchanges of one sort of 5C, and each class
    //    that fits in team scratch is sorted there.
    std::uint64_t* shared =
        shared_keys > 0
            ? static_cast<std::uint64_t*>(team.team_scratch(0).get_shmem(shared_keys * sizeof(std::uint64_t)))
            : nullptr;
    sort_segment(team, shared, 0, static_cast<int>(2 * c));
    sort_segment(team, shared, 2 * c, static_cast<int>(c));
    if (slots == 5) sort_segment(team, shared, 3 * c, static_cast<int>(2 * c));

    // 3. Runs: index of each position's run, start and role-1 count before each
    //    run. An exclusive team scan of (run heads << 32) + role-1 tuples, each
    //    thread over a contiguous block of positions, tile by tile through team
    //    scratch (coalesced loads) when there is some.
    {
      const int threads = team.team_size();
      const int tile = shared_keys > 0 ? shared_keys : n;
      std::int64_t before = 0;  // (runs << 32) + role-1 tuples before the tile
      for (int t0 = 0; t0 < n; t0 += tile) {
        const int len = n - t0 < tile ? n - t0 : tile;
        const std::uint64_t* tile_keys = keys.data() + t0;
        if (shared_keys > 0) {
          Kokkos::parallel_for(Kokkos::TeamThreadRange(team, len), [&](const int i) { shared[i] = tile_keys[i]; });
          team.team_barrier();
          tile_keys = shared;
        }
        const std::uint64_t previous = t0 > 0 ? keys(t0 - 1) : 0;
        const int per = (len + threads - 1) / threads;
        const int lo = team.team_rank() * per < len ? team.team_rank() * per : len;
        const int hi = lo + per < len ? lo + per : len;
        auto contribution = [&](const int i, bool& head, std::int64_t& role) {
          const std::uint64_t k = tile_keys[i];
          const std::uint64_t prior = i > 0 ? tile_keys[i - 1] : previous;
          head = t0 + i == 0 || SortedKey::group(k) != SortedKey::group(prior);
          role = static_cast<std::int64_t>((k >> SortedKey::role_shift) & 1);
          return (head ? (std::int64_t(1) << 32) : 0) + role;
        };
        std::int64_t local = 0;
        for (int i = lo; i < hi; ++i) {
          bool head;
          std::int64_t role;
          local += contribution(i, head, role);
        }
        std::int64_t acc = before + team.team_scan(local);
        std::int64_t through = acc + local;  // the last thread's is the running total
        team.team_broadcast(through, threads - 1);
        for (int i = lo; i < hi; ++i) {
          bool head;
          std::int64_t role;
          const std::int64_t v = contribution(i, head, role);
          const int p = t0 + i;
          const std::int32_t run = static_cast<std::int32_t>(acc >> 32) + (head ? 1 : 0) - 1;
          const std::int32_t ones = static_cast<std::int32_t>(acc & 0xffffffff);
          run_of(p) = run;
          if (head) runs(run) = SortedRun{p, ones};
          if (p == n - 1) runs(run + 1) = SortedRun{n, ones + static_cast<std::int32_t>(role)};
          acc += v;
        }
        before = through;
        team.team_barrier();
      }
    }

    // 4. Each tuple: does a tuple of another row with a conflicting role share its key?
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, n), [&](const int i) {
      const std::uint64_t k = keys(i);
      if (k == SortedKey::absent) return;
      const std::int32_t run = run_of(i);
      const SortedRun a = runs(run), b = runs(run + 1);
      const std::int64_t len = b.begin - a.begin;
      const std::int64_t ones = b.ones_before - a.ones_before;
      const std::int64_t zeros = len - ones;
      const std::uint64_t cls = k >> SortedKey::class_shift;
      const bool role = (k >> SortedKey::role_shift) & 1;
      const int part = static_cast<int>((k >> SortedKey::part_shift) & 1);
      const std::int64_t row = static_cast<std::int64_t>(k & SortedKey::row_mask);
      bool conflict = false;
      int slot;
      if (cls == SortedKey::rows) {
        const std::int64_t src = records(row).src, dst = records(row).dst;
        const bool copy = records(row).op == 0;
        if (!role) {
          // Its destination: another destination, or another copy's source.
          const std::int64_t own_src = (copy && src == dst) ? 1 : 0;
          conflict = (zeros - 1) + (ones - own_src) > 0;
          slot = sorted_dst;
        } else {
          // Its source: another destination.
          conflict = zeros - (dst == src ? 1 : 0) > 0;
          slot = sorted_src;
        }
      } else if (cls == SortedKey::page) {
        // Only pairs with a restore: a restore collides with any other, the
        // others with a restore.
        conflict = role ? len - 1 > 0 : ones > 0;
        slot = sorted_page;
      } else {
        // Any other row's used part, unless both rows are snapshots.
        if (role) {
          conflict = zeros > 0;
        } else {
          const std::int64_t other = records(row).tpage[1 - part];
          conflict = len - 1 - (other == records(row).tpage[part] ? 1 : 0) > 0;
        }
        slot = sorted_trailing0 + part;
      }
      conflicts(slot * c + row) = conflict ? 1 : 0;
    });
    team.team_barrier();

    // 5. Codes and plan: the row decision ValidateFunctor makes, from the flags.
    const ValidateLimits lim = base.limits();
    const std::int64_t unmapped_all = unmapped_trailing >> 32;
    const std::int64_t unmapped_not_snapshot = unmapped_trailing & 0xffffffff;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, c), [&](const std::int64_t r) {
      const RowRecord q = records(r);
      const RowCheck k = row_check(q, r, lim);
      const bool conflict = conflicts(sorted_dst * c + r) || (k.copying && conflicts(sorted_src * c + r)) ||
                            (k.page >= 0 && conflicts(sorted_page * c + r));
      bool t_conflict[2] = {false, false};
      for (int part = 0; part < 2; ++part) {
        if (!k.t_active[part]) continue;
        if (k.t_used[part]) {
          t_conflict[part] = conflicts((sorted_trailing0 + part) * c + r) != 0;
        } else {
          // t_page -1 (logical page past W): the used parts whose entry is -1.
          const std::int64_t own = (q.tpage[0] == -1 ? 1 : 0) + (q.tpage[1] == -1 ? 1 : 0);
          t_conflict[part] = k.snapshot_row ? unmapped_not_snapshot > 0 : unmapped_all - own > 0;
        }
      }
      std::int32_t code;
      RowPlan p;
      finish_row(q, k, conflict, t_conflict, lim.pages, code, p);
      base.errors(r) = code;
      base.plan(r) = p;
    });
  }
};

/// The sorted validation of one transfer: its work View (allocate() in the
/// constructor), its team size (prepare()) and its launch (validate()).
template <class ExecutionSpace>
struct SortedValidation {
  using memory_space = typename ExecutionSpace::memory_space;
  using functor_type = SortedValidateFunctor<ExecutionSpace>;

  SortedWork<memory_space> work;

  /// Whether validation of this capacity takes the sorted path.
  static bool applies(std::int64_t capacity) noexcept { return capacity > max_capacity; }

  void allocate(const TransferShape& shape) {
    if (shape.rows >= SortedKey::key_limit)
      throw std::invalid_argument("statexfer::PreparedStateTransfer: capacities above " +
                                  std::to_string(max_capacity) + " need a pool of fewer than 2^48 rows, got " +
                                  std::to_string(shape.rows));
    const std::size_t c = static_cast<std::size_t>(shape.capacity);
    work.slots = shape.has_trailing ? 5 : 3;
    const std::size_t n = static_cast<std::size_t>(work.slots) * c;
    using Kokkos::view_alloc;
    using Kokkos::WithoutInitializing;
    work.records = decltype(work.records)(view_alloc(WithoutInitializing, "statexfer::validate_records"), c);
    work.keys = decltype(work.keys)(view_alloc(WithoutInitializing, "statexfer::validate_keys"), n);
    work.run_of = decltype(work.run_of)(view_alloc(WithoutInitializing, "statexfer::validate_run_of"), n);
    work.runs = decltype(work.runs)(view_alloc(WithoutInitializing, "statexfer::validate_runs"), n + 1);
    work.conflicts = decltype(work.conflicts)(view_alloc(WithoutInitializing, "statexfer::validate_conflicts"), n);
    // The largest class (2C or C keys) that team scratch level 0 holds is sorted there.
    const std::int64_t max_keys = functor_type::policy_type::scratch_size_max(0) / std::int64_t(sizeof(std::uint64_t));
    work.shared_keys = static_cast<int>(2 * shape.capacity <= max_keys ? 2 * shape.capacity
                                        : shape.capacity <= max_keys   ? shape.capacity
                                                                       : 0);
  }

  functor_type functor(const ValidateFunctor<ExecutionSpace>& base) const {
    functor_type f;
    f.base = base;
    f.records = work.records;
    f.keys = work.keys;
    f.run_of = work.run_of;
    f.runs = work.runs;
    f.conflicts = work.conflicts;
    f.slots = work.slots;
    f.shared_keys = work.shared_keys;
    return f;
  }

  std::size_t scratch_bytes() const { return static_cast<std::size_t>(work.shared_keys) * sizeof(std::uint64_t); }

  /// The team: as many threads as the policy allows, at most 1024 (a CUDA
  /// block); on devices a power of two, as Kokkos' CUDA team scan requires.
  int team_size(const ExecutionSpace& exec, const ValidateFunctor<ExecutionSpace>& base) const {
    const auto probe =
        typename functor_type::policy_type(exec, 1, 1).set_scratch_size(0, Kokkos::PerTeam(scratch_bytes()));
    const int max = std::max(1, std::min(probe.team_size_max(functor(base), Kokkos::ParallelForTag()), 1024));
    if (std::is_same<memory_space, Kokkos::HostSpace>::value) return max;
    int team = 1;
    while (2 * team <= max) team *= 2;
    return team;
  }

  /// Enqueue the one launch on `exec`: no allocation, no fence (level-0 scratch
  /// is shared memory on CUDA and sized by prepare()'s first launch on hosts).
  void launch(const ExecutionSpace& exec, const ValidateFunctor<ExecutionSpace>& base, int team_size) const {
    auto policy = Kokkos::Experimental::require(
        typename functor_type::policy_type(exec, 1, team_size).set_scratch_size(0, Kokkos::PerTeam(scratch_bytes())),
        Kokkos::Experimental::WorkItemProperty::HintLightWeight);
    Kokkos::parallel_for("statexfer::validate_sorted", policy, functor(base));
  }
};

}  // namespace statexfer::impl

#endif
