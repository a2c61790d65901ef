#ifndef STATEXFER_TEST_COMMON_RESHARD_HPP
#define STATEXFER_TEST_COMMON_RESHARD_HPP

// The oracle of tensor-parallel reshards (docs/CONTRACT.md §16, §17), read
// from the contract's words alone: the bytes of any rank's row from the whole
// model's row, and the checksum of a record's bytes. It uses the description
// types of <statexfer/sharding.hpp> (plain structs) and calls nothing of the
// library.

#include <cstdint>
#include <utility>
#include <vector>

#include <statexfer/sharding.hpp>

namespace statexfer::test {

/// The global units [first, second) of segment `s` that rank `rank` of `tp` holds.
std::pair<std::int64_t, std::int64_t> oracle_held(const Segment& s, int tp, int rank);

/// Bytes of rank `rank` of `tp`'s row.
std::int64_t oracle_row_bytes(const std::vector<ModelRegion>& regions, int tp, int rank);

/// Rank `rank` of `tp`'s row, cut from `whole` (the row of a group of one).
std::vector<std::uint8_t> oracle_shard(const std::vector<ModelRegion>& regions, const std::vector<std::uint8_t>& whole,
                                       int tp, int rank);

/// A record's checksum from its bytes (`header_bytes` of header, then the payload).
std::uint64_t oracle_checksum(const std::uint8_t* record, std::int64_t header_bytes, std::int64_t payload_bytes);

}  // namespace statexfer::test

#endif
