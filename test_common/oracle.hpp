#ifndef STATEXFER_TEST_ORACLE_HPP
#define STATEXFER_TEST_ORACLE_HPP

// The oracle: a plain, sequential reading of docs/CONTRACT.md §4 (validate) and
// §5 (apply) on host memory, without Kokkos and without the library. It is the
// one independent second reading the kernels are held against (unit tests,
// fuzzers, statexfer-sim --verify): written from the contract, not from src/,
// and it includes nothing of the library so that it cannot share its mistakes.
//
// The host tier (§12) is read the same way: operations 2..4 when the geometry
// has host rows, HOST_SLOTS = min(host capacity, host rows); commits (§13):
// operation 5 when the geometry has speculative positions; prefix keys (§14)
// when it has a key offset.
//
// Scope: a configuration the library accepts (§3 errors are not modelled). The
// hardening the library shares (§7): the usable rows are min(memory_capacity[0],
// pool rows) and the usable pages min(memory_capacity[1], cache pages), so no
// capacity makes anything read or write outside the arrays.

#include <cstdint>
#include <utility>
#include <vector>

namespace statexfer::test {

/// A row region bound to caches: `nbytes` at `offset`. A trailing binding's
/// region holds two pages of nbytes / 2 (part 0, then part 1).
struct OracleBinding {
  std::int64_t offset = 0;
  std::int64_t nbytes = 0;
};

/// What the transfer was built with, as plain values.
struct OracleGeometry {
  std::int64_t capacity = 0;  ///< C: command rows, request slots
  std::int64_t rows = 0;      ///< pool rows
  std::int64_t row_bytes = 0;
  std::int64_t page_tokens = 1;                                 ///< PT
  std::int64_t width = 1;                                       ///< W: columns of the page (and trailing) tables
  std::int64_t consumed_offset = 0;                             ///< byte offset of consumed_tokens (one int64) in a row
  std::int64_t cache_pages = 0;                                 ///< physical pages of the caches (the smallest count)
  std::vector<std::pair<std::int64_t, std::int64_t>> excluded;  ///< [begin, end) bytes of a row never copied
  std::vector<OracleBinding> page_bindings;                     ///< left after exclusions, in binding order
  std::vector<OracleBinding> trailing_bindings;                 ///< left after exclusions, in binding order
  std::int64_t host_rows = 0;    ///< rows of the host tier (§12); 0: no host tier (operations 2..4 unknown)
  std::int64_t positions = 0;    ///< K, speculative positions (§13); 0: no commits (operation 5 unknown)
  bool remap = true;             ///< commits swap state-row entries (else they copy the position row)
  std::int64_t key_offset = -1;  ///< byte offset of the prefix_key region (§14); -1: none
};

/// The command arrays (each [capacity]) and num_ops, as the device reads them
/// (oracle_commands.hpp makes them from statexfer::Command rows).
struct OracleCommands {
  const std::int64_t* request_slots = nullptr;
  const std::int64_t* source_slots = nullptr;
  const std::int64_t* destination_slots = nullptr;
  const std::int32_t* operation = nullptr;
  const std::int64_t* expected_consumed = nullptr;
  std::int32_t num_ops = 0;
  const std::int64_t* prefix_keys = nullptr;  ///< [C], read only with a key offset
};

/// The memory validate() reads and apply() writes. Integer arrays are read
/// bytewise, so they need no alignment.
struct OracleMemory {
  std::uint8_t* pool = nullptr;          ///< [rows, row_bytes]
  std::vector<std::uint8_t*> caches;     ///< page bindings', then trailing bindings': [cache_pages, page bytes]
  const std::int32_t* tables = nullptr;  ///< [C, W]
  const std::int32_t* trailing_tables = nullptr;  ///< [C, W]; read only with trailing bindings
  /// [C, state_rows_stride]: column 0 the live row of a slot, columns 1..K its
  /// position rows; remapping commits' swaps are written here (§13)
  std::int64_t* state_rows = nullptr;
  std::int64_t state_rows_stride = 8;
  const std::int32_t* accepted = nullptr;          ///< [C]: each slot's accepted count; read only with positions
  const std::int64_t* request_consumed = nullptr;  ///< column 0 of [C, request_stride]
  std::int64_t request_stride = 1;
  std::int64_t memory_capacity[2] = {0, 0};  ///< {rows, pages} as the pool's memory_capacity holds them
  std::uint8_t* host = nullptr;              ///< [host_rows, row_bytes]: the host tier (§12)
  std::int64_t host_capacity = 0;            ///< the host tier's capacity[0]
};

/// A cache page apply() wrote: `cache` indexes OracleMemory::caches.
struct CachePage {
  std::int32_t cache = 0;
  std::int64_t page = 0;
  bool operator<(const CachePage& o) const { return cache != o.cache ? cache < o.cache : page < o.page; }
  bool operator==(const CachePage& o) const { return cache == o.cache && page == o.page; }
};

class ContractOracle {
 public:
  explicit ContractOracle(OracleGeometry geometry);

  const OracleGeometry& geometry() const { return geometry_; }
  /// Bytes of one page of cache `i` (OracleMemory::caches order).
  std::int64_t cache_page_bytes(std::size_t i) const;

  /// §4: the code of every command row (int32 [C]): rows past num_ops get 0,
  /// every row 5 when num_ops is out of [0, C]. `commit_positions`, when given,
  /// receives what §13 says validate() writes there.
  std::vector<std::int32_t> validate(const OracleCommands& commands, const OracleMemory& memory,
                                     std::vector<std::int32_t>* commit_positions = nullptr) const;

  /// §5: the writes of the rows r < num_ops whose code in `codes` is 0: rows,
  /// then the snapshots' prefix keys, then partial pages, then trailing pages
  /// (part 0, then part 1), then remapping commits' state rows. The cache
  /// pages written (restores) are appended to `written` when it is given.
  void apply(const OracleCommands& commands, const std::vector<std::int32_t>& codes, OracleMemory& memory,
             std::vector<CachePage>* written = nullptr) const;

 private:
  OracleGeometry geometry_;
  std::vector<bool> copied_;  // row bytes outside the excluded regions
};

}  // namespace statexfer::test

#endif
