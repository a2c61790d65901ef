#ifndef STATEXFER_IMPL_IMPORT_LANDING_HPP
#define STATEXFER_IMPL_IMPORT_LANDING_HPP

// The import that lands its payload before the checksum is known and publishes
// the row after (ImportLanding::publish_after_check, docs/CONTRACT.md §17):
// validate() is one team deciding every code but the checksum's
// (ImportDecideFunctor<..., true>) and a grid landing the listed rows, each
// word summed as it is loaded, whose last team compares the sums (code 10) and
// the payload's endpoint and key with the header's (code 9), and leaves every
// landed row unpublished; apply() publishes the rows whose code
// is still 0. The payload is read once and written once, as by a copy.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include "exchange_kernels.hpp"

namespace statexfer::impl {

/// The endpoint of an unpublished row: every command that reads a row through
/// its endpoint refuses it (code 3, docs/CONTRACT.md §4, §12, §13, §17).
inline constexpr std::int64_t unpublished_endpoint = -1;

/// Landing's grid: the listed rows' chunks from their records into their rows,
/// summed as they are loaded; then (the last team) each landed command's
/// checksums checked and its row's endpoint set to unpublished_endpoint.
template <class ExecutionSpace>
struct ImportLandFunctor {
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<128, export_teams_per_sm>>;
  using member_type = typename policy_type::member_type;
  ExchangeViews<typename ExecutionSpace::memory_space> v;
  // Chunks through a ChunkRing (ring_scratch_bytes of team scratch; sm_90 and newer) where the grid draws
  // tickets: with a unit a team, the team's loads and stores were faster (perf_tests/RESULTS.md).
  std::int32_t ring = 0;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const std::int64_t chunks = static_cast<std::int64_t>(v.chunks.extent(0));
    const std::int64_t total = std::int64_t(v.moves(move_count)) * chunks;
    ChecksumCarry<member_type, decltype(v.sums)> carry;
    const UnitTickets<std::int64_t> tickets{&v.tickets(0), total};
    auto units = tickets.first(team);
#if defined(STATEXFER_IMPL_BULK_COPY_DEVICE)
    if (ring && total > team.league_size()) {
      ring_units(v, team, total, chunks, false, carry,
                 [&](const auto& u) { return team_land_sum(team, u.row, u.payload, u.length, u.padding, u.first); });
      units.begin = units.end;  // every unit moved
    }
#endif
    while (units.begin < units.end) {
      const std::int64_t drawn = tickets.ask(team), u = units.begin;
      const std::int64_t k = u / chunks, ci = u - k * chunks;
      const auto c = v.place(v.moves(move_rows + k), ci);
      const ExchangeChunk& ch = c.chunk;
      if (team.team_size() < 32) {  // hosts' teams of one: the C library, then the words summed
        team_move(team, c.row, c.payload, ch.length);
        carry.add(team, v.sums, c.at, c.record, c.first, (ch.length + ch.padding) / 8);
      } else {
        carry.into(team, v.sums, c.at);
        carry.sum += team_land_sum(team, c.row, c.payload, ch.length, ch.padding, c.first);
      }
      units = tickets.next(team, drawn);
    }
    carry.flush(team, v.sums);
    if (!last_team(team, &v.moves(apply_done))) return;
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, v.moves(move_count)), [&](const int k) {
      const std::int32_t r = v.moves(move_rows + k);
      const ExchangePlan p = v.plan(r);
      std::int32_t code = 0;
      for (int q = 0; q < v.peer_count; ++q) {
        const PeerEntry pe = v.peers(q);
        const std::uint8_t* record = pe.wire + p.slot * pe.record_bytes;
        const std::int64_t at = std::int64_t(r) * v.peer_count + q;
        // The slices were checked: their part of the header's checksum is the pair's. The first record
        // (in source-rank order) that is not whole (10) or, whole, names another prefix (9) gives the code.
        const std::uint64_t header = header_fields_checksum(record) + pe.slices_checksum;
        if (code == 0 && v.sums(at) + header != reinterpret_cast<const RecordHeader*>(record)->checksum) code = 10;
        if (code == 0 && !payload_names_header(record, pe)) code = 9;
        v.sums(at) = 0;
      }
      v.errors(r) = code;
      *reinterpret_cast<std::int64_t*>(p.row + v.consumed_offset) = unpublished_endpoint;
    });
    Kokkos::single(Kokkos::PerTeam(team), [&] { v.moves(apply_done) = 0; });
  }
};

/// apply(), one team: the endpoint and key of every landed row whose code is
/// still 0 (not refused across the group since validate()).
template <class ExecutionSpace>
struct ImportPublishFunctor {
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace>;
  using member_type = typename policy_type::member_type;
  ExchangeViews<typename ExecutionSpace::memory_space> v;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, v.moves(move_count)), [&](const int k) {
      const std::int32_t r = v.moves(move_rows + k);
      if (v.errors(r) != 0) return;
      const ExchangePlan p = v.plan(r);
      *reinterpret_cast<std::int64_t*>(p.row + v.consumed_offset) = p.endpoint;
      if (v.key_offset >= 0) *reinterpret_cast<std::int64_t*>(p.row + v.key_offset) = p.key;
    });
  }
};

}  // namespace statexfer::impl

#endif
