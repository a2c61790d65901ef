#ifndef STATEXFER_IMPL_KEY_TABLE_HPP
#define STATEXFER_IMPL_KEY_TABLE_HPP

// The counted keys of the sorted validation's counted variant
// (options.expert.validate_counted_keys, validate_counted_kernel.hpp): for each
// key array, an open-addressing table of (key, count) that launch 1 fills with
// one atomic a key and launch 2 reads with a probe a query, in place of the
// chunks' sorts and binary searches. Every conflict of docs/CONTRACT.md §4 is a
// count of equal keys, so the counts answer what the searches answer.
//
// Two tables a array, taken in turn: a batch fills the one `state(0)` names;
// its launch 2 empties the other (the slots the batch before filled, recorded
// a row and array) and names it for the next batch. So no launch ever clears a
// whole table, and a batch's work follows its live rows. A batch that launch 1
// decides alone (few live rows) touches neither.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace statexfer::impl {

/// A key no row has (all ones, sorted last): a key array's absent key and an empty slot of the table.
inline constexpr std::uint64_t sorted_absent = ~std::uint64_t(0);

template <class MemorySpace>
struct KeyTable {
  Kokkos::View<std::uint64_t*, MemorySpace> keys;   // [(turn * arrays + array) << bits]
  Kokkos::View<std::int32_t*, MemorySpace> counts;  // as keys
  Kokkos::View<std::int32_t*, MemorySpace> slots;   // [(turn * arrays + array) * C + row]: its key's slot, or -1
  Kokkos::View<std::int32_t*, MemorySpace> state;   // [3]: the turn, then each turn's rows with keys
  int bits = 0;                                     // slots a table: 1 << bits (0: no table)
  int arrays = 0;
  int capacity = 0;

  /// Tables of at least twice the capacity's keys a array (at most half full).
  void allocate(int array_count, int c) {
    arrays = array_count;
    capacity = c;
    bits = 1;
    while ((1 << bits) < 2 * c) ++bits;
    const std::size_t n = std::size_t(2) * arrays << bits;
    keys = decltype(keys)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "statexfer::validate_key_table"), n);
    Kokkos::deep_copy(keys, sorted_absent);
    counts = decltype(counts)("statexfer::validate_key_counts", n);
    slots = decltype(slots)(Kokkos::view_alloc(Kokkos::WithoutInitializing, "statexfer::validate_key_slots"),
                            std::size_t(2) * arrays * c);
    Kokkos::deep_copy(slots, -1);
    state = decltype(state)("statexfer::validate_key_turn", 3);
  }

  KOKKOS_INLINE_FUNCTION std::int64_t base(int turn, int a) const { return (std::int64_t(turn) * arrays + a) << bits; }
  KOKKOS_INLINE_FUNCTION std::int64_t home(std::uint64_t key) const {
    return static_cast<std::int64_t>((key * 0x9e3779b97f4a7c15ULL) >> (64 - bits));
  }

  /// Launch 1: row r's key of array a counted in turn `turn`'s table (`key` not empty).
  KOKKOS_INLINE_FUNCTION void insert(int turn, int a, int r, std::uint64_t key) const {
    const std::int64_t b = base(turn, a), mask = (std::int64_t(1) << bits) - 1;
    const std::uint64_t empty = sorted_absent;  // a copy: the atomic takes it by reference, in device code
    std::int64_t s = home(key);
    for (;;) {
      const std::uint64_t was = Kokkos::atomic_compare_exchange(&keys(b + s), empty, key);
      if (was == empty || was == key) break;
      s = (s + 1) & mask;
    }
    Kokkos::atomic_add(&counts(b + s), 1);
    slots((std::int64_t(turn) * arrays + a) * capacity + r) = static_cast<std::int32_t>(s);
  }

  /// Launch 2: how many rows put `key` in array a (turn's table, filled by the launch before).
  KOKKOS_INLINE_FUNCTION int count(int turn, int a, std::uint64_t key) const {
    const std::int64_t b = base(turn, a), mask = (std::int64_t(1) << bits) - 1;
    for (std::int64_t s = home(key);; s = (s + 1) & mask) {
      const std::uint64_t k = keys(b + s);
      if (k == key) return counts(b + s);
      if (k == sorted_absent) return 0;
    }
  }

  /// Launch 2: row r's slots of turn `turn` emptied (the rows past the turn's count hold none).
  KOKKOS_INLINE_FUNCTION void clear_row(int turn, int r) const {
    for (int a = 0; a < arrays; ++a) {
      std::int32_t& slot = slots((std::int64_t(turn) * arrays + a) * capacity + r);
      if (slot < 0) continue;
      keys(base(turn, a) + slot) = sorted_absent;
      counts(base(turn, a) + slot) = 0;
      slot = -1;
    }
  }
};

}  // namespace statexfer::impl

#endif
