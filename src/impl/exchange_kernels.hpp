#ifndef STATEXFER_IMPL_EXCHANGE_KERNELS_HPP
#define STATEXFER_IMPL_EXCHANGE_KERNELS_HPP

// The kernels of prefill/decode moves (docs/CONTRACT.md §17). Export: one team
// decides every command (a slot's users counted in team scratch) and lists the
// rows to pack; a grid of teams takes (listed row, chunk) units as they are
// handed out (unit_tickets.hpp) copying rows into records and summing their
// checksum words, and its last team writes the headers. Import: a grid
// striding over (command, chunk) units sums the checksum words of every live
// command's records and counts each row's and slot's importers; one team then
// checks every record's header, slices and checksum, decides the codes and
// lists the rows to unpack; a grid takes (listed row, chunk) units, handed
// out from the last, copying payload into rows. Checksums add up per
// (command, peer): a team (the sums: a warp) sums its chunk words, carries the
// sum while its chunks stay in one record and adds it atomically.
// A team's word moves and sums: exchange_words.hpp; on Hopper the export's
// and the landing import's chunks go through two staging buffers a team,
// moved by bulk copies and summed from shared memory (exchange_ring.hpp).

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <statexfer/commands.hpp>

#include "exchange_format.hpp"
#include "exchange_ring.hpp"
#include "exchange_words.hpp"
#include "move_list.hpp"
#include "unit_tickets.hpp"

namespace statexfer::impl {

/// A command's row and record slot, as validate() found them.
struct ExchangePlan {
  std::uint8_t* row;  // the pool row read (export) or written (import); null when not a usable row
  std::int64_t slot;  // the record slot, -1 when out of range
  std::int64_t key;
  std::int64_t endpoint;
};

/// One peer (a destination rank of an export, a source rank of an import).
struct PeerEntry {
  std::uint8_t* wire;
  std::int64_t record_bytes;
  std::int64_t header_bytes;
  std::int64_t payload_bytes;
  std::int32_t rank;
  std::int32_t slices_begin;      // its expected slices in the slice table
  std::uint64_t slices_checksum;  // their words' part of the header's checksum (PairTable)
  std::int64_t endpoint_at;       // the record's bytes of the row's endpoint and key, -1: not in this record
  std::int64_t key_at;
};

/// Whether a whole record's payload carries its header's endpoint and key
/// where it holds the row's consumed_tokens and prefix_key regions: a row is
/// published only as the prefix its bytes are (docs/CONTRACT.md §17; a record
/// packed from another row, or edited and its checksum recomputed, is not).
KOKKOS_INLINE_FUNCTION bool payload_names_header(const std::uint8_t* record, const PeerEntry& pe) {
  const auto* h = reinterpret_cast<const RecordHeader*>(record);
  const auto word = [&](std::int64_t at) { return *reinterpret_cast<const std::int64_t*>(record + at); };
  return (pe.endpoint_at < 0 || word(pe.endpoint_at) == h->endpoint) && (pe.key_at < 0 || word(pe.key_at) == h->key);
}

/// What both sides' kernels share.
template <class MemorySpace>
struct ExchangeViews {
  Kokkos::View<const std::int64_t*, MemorySpace> source_slots, destination_slots, expected_consumed, prefix_keys;
  Kokkos::View<const std::int32_t*, MemorySpace> operation, num_ops;
  Kokkos::View<std::int32_t*, MemorySpace> errors;
  Kokkos::View<ExchangePlan*, MemorySpace> plan;
  Kokkos::View<std::int32_t*, MemorySpace> moves;  // the list of rows that move (move_list.hpp)
  Kokkos::View<const PeerEntry*, MemorySpace> peers;
  Kokkos::View<const RecordSlice*, MemorySpace> slices;
  Kokkos::View<const ExchangeChunk*, MemorySpace> chunks;
  Kokkos::View<std::uint64_t*, MemorySpace> sums;    // [C x peers]: checksum words summed so far
  Kokkos::View<std::int64_t*, MemorySpace> tickets;  // (0): the grid's counter (unit_tickets.hpp)
  Kokkos::View<const std::int64_t*, MemorySpace> memory_capacity;
  std::uint8_t* pool = nullptr;  // the pool backing
  std::int64_t capacity = 0, rows = 0, row_bytes = 0, consumed_offset = 0, key_offset = -1;
  std::uint64_t fingerprint = 0;
  std::int32_t peer_count = 0, segments = 0;
  std::int32_t source_tp = 1, source_rank = 0, destination_tp = 1, destination_rank = 0;

  KOKKOS_INLINE_FUNCTION std::int32_t live(bool& bad) const {
    const std::int64_t count = num_ops(0);
    bad = count < 0 || count > capacity;
    return bad ? 0 : static_cast<std::int32_t>(count);
  }
  KOKKOS_INLINE_FUNCTION std::int64_t slots() const { return memory_capacity(0) < rows ? memory_capacity(0) : rows; }
  KOKKOS_INLINE_FUNCTION std::int64_t row_int64(std::int64_t row, std::int64_t offset) const {
    return *reinterpret_cast<const std::int64_t*>(pool + row * row_bytes + offset);
  }
  /// Live command r's plan (its key, endpoint, and the pool `row` and wire
  /// `slot` where in range) and the code of the checks both sides make first
  /// (§17: 1 another operation than `op`, 2 a row or slot out of range).
  KOKKOS_INLINE_FUNCTION std::int32_t plan_command(int r, std::int32_t op, std::int64_t row, std::int64_t slot,
                                                   ExchangePlan& p) const {
    p.key = prefix_keys(r);
    p.endpoint = expected_consumed(r);
    if (slot >= 0 && slot < capacity) p.slot = slot;
    if (row > 0 && row < slots()) p.row = pool + row * row_bytes;
    if (operation(r) != op) return 1;
    if (p.row == nullptr || p.slot < 0) return 2;
    return 0;
  }
  /// Where a grid's (row r, chunk ci) unit moves: its record, the chunk's bytes
  /// in the pool row and in the record's payload, the sums' index and the
  /// chunk's first record word.
  struct Place {
    std::uint8_t* record;
    std::uint8_t* row;
    std::uint8_t* payload;
    ExchangeChunk chunk;
    std::int64_t at, first;
  };
  KOKKOS_INLINE_FUNCTION Place place(std::int32_t r, std::int64_t ci) const {
    const ExchangeChunk ch = chunks(ci);
    const PeerEntry pe = peers(ch.peer);
    const ExchangePlan p = plan(r);
    std::uint8_t* record = pe.wire + p.slot * pe.record_bytes;
    return {record,
            p.row + ch.row_offset,
            record + pe.header_bytes + ch.payload_offset,
            ch,
            std::int64_t(r) * peer_count + ch.peer,
            (pe.header_bytes + ch.payload_offset) / 8};
  }
  /// Unit u of a grid over the listed rows' chunks (`per_row` a row), or none
  /// (u outside [0, total): no load): what a team moving it needs, and
  /// whether it moves (where `vetoed`, its row's code is still 0: not refused
  /// across the group since validate()).
  struct Unit {
    std::uint8_t* row;
    std::uint8_t* payload;
    std::int64_t at, first;
    std::int32_t length, padding;
    bool live;
  };
  KOKKOS_INLINE_FUNCTION Unit unit(std::int64_t u, std::int64_t total, std::int64_t per_row, bool vetoed) const {
    if (u < 0 || u >= total) return {nullptr, nullptr, 0, 0, 0, 0, false};
    const std::int64_t k = u / per_row, ci = u - k * per_row;
    const std::int32_t r = moves(move_rows + k);
    const Place c = place(r, ci);
    return {c.row, c.payload, c.at, c.first, c.chunk.length, c.chunk.padding, !vetoed || errors(r) == 0};
  }
  /// The decision's end: the rows whose command passed, listed for the apply.
  template <class Member>
  KOKKOS_INLINE_FUNCTION void list_passed(const Member& team, std::int32_t live) const {
    const auto passed = [&](const int r) { return errors(r) == 0 ? 1 : 0; };
    list_rows(team, passed, moves, live, static_cast<int>(capacity), [](int, int) {});
  }
};

/// Export, one team: every command's code and plan (docs/CONTRACT.md §17), then the rows to pack.
template <class ExecutionSpace>
struct ExportValidateFunctor {
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace>;
  using member_type = typename policy_type::member_type;
  ExchangeViews<typename ExecutionSpace::memory_space> v;

  KOKKOS_INLINE_FUNCTION static std::size_t scratch_bytes(std::int64_t capacity) {
    return static_cast<std::size_t>(capacity) * sizeof(std::int32_t);
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int c = static_cast<int>(v.capacity);
    bool bad = false;
    const std::int32_t live = v.live(bad);
    auto* users = static_cast<std::int32_t*>(team.team_scratch(0).get_shmem(scratch_bytes(c)));
    // Only the slots live commands name are counted, so only they are cleared:
    // the work follows the live count, not the capacity.
    const auto slot_of = [&](const int r) {
      const std::int64_t slot = v.destination_slots(r);
      return slot >= 0 && slot < c ? static_cast<int>(slot) : -1;
    };
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, live), [&](const int r) {
      if (const int s = slot_of(r); s >= 0) users[s] = 0;
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, live), [&](const int r) {
      if (const int s = slot_of(r); s >= 0) Kokkos::atomic_fetch_add(&users[s], 1);
    });
    team.team_barrier();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, live), [&](const int r) {
      ExchangePlan p{nullptr, -1, 0, 0};
      const std::int64_t src = v.source_slots(r);
      std::int32_t code = v.plan_command(r, op_export, src, v.destination_slots(r), p);
      // A negative endpoint is no row's: an unpublished row's is -1 (import_landing.hpp).
      if (code == 0 && (p.endpoint < 0 || v.row_int64(src, v.consumed_offset) != p.endpoint ||
                        (v.key_offset >= 0 && v.row_int64(src, v.key_offset) != p.key)))
        code = 3;
      if (code == 0 && users[p.slot] > 1) code = 4;
      v.errors(r) = code;
      v.plan(r) = p;
    });
    // Rows past the count get their code only (every row 5 when the count is
    // bad, live then 0): no plan of theirs is read.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, live, c), [&](const int r) { v.errors(r) = bad ? 5 : 0; });
    team.team_barrier();
    v.list_passed(team, live);
  }
};

/// Export's grid: the listed rows' chunks into their records, then (the last
/// team) every live command's headers.
template <class ExecutionSpace>
struct ExportApplyFunctor {
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
      ring_units(v, team, total, chunks, true, carry,
                 [&](const auto& u) { return team_move_sum(team, u.payload, u.row, u.length, u.padding, u.first); });
      units.begin = units.end;  // every unit moved
    }
#endif
    while (units.begin < units.end) {
      const std::int64_t drawn = tickets.ask(team), u = units.begin;
      const std::int64_t k = u / chunks, ci = u - k * chunks;
      const std::int32_t r = v.moves(move_rows + k);
      if (v.errors(r) == 0) {  // not refused across the group since validate()
        const auto c = v.place(r, ci);
        const ExchangeChunk& ch = c.chunk;
        if (team.team_size() < 32) {  // hosts' teams of one: the C library, then the words summed
          team_move(team, c.payload, c.row, ch.length);
          std::memset(c.payload + ch.length, 0, static_cast<std::size_t>(ch.padding));
          carry.add(team, v.sums, c.at, c.record, c.first, (ch.length + ch.padding) / 8);
        } else {
          carry.into(team, v.sums, c.at);
          carry.sum += team_move_sum(team, c.payload, c.row, ch.length, ch.padding, c.first);
        }
      }
      units = tickets.next(team, drawn);
    }
    carry.flush(team, v.sums);
    if (!last_team(team, &v.moves(apply_done))) return;
    const std::int32_t live = v.moves(live_count);
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, live * v.peer_count), [&](const int at) {
      const int r = at / v.peer_count, q = at - r * v.peer_count;
      const ExchangePlan p = v.plan(r);
      const PeerEntry pe = v.peers(q);
      if (p.slot < 0 || pe.record_bytes == 0) return;
      std::uint8_t* record = pe.wire + p.slot * pe.record_bytes;
      const std::int32_t status = v.errors(r);
      RecordHeader h{record_magic,
                     record_version,
                     v.fingerprint,
                     p.key,
                     p.endpoint,
                     v.source_tp,
                     v.source_rank,
                     v.destination_tp,
                     pe.rank,
                     status,
                     v.segments,
                     status == 0 ? pe.payload_bytes : 0,
                     0,
                     p.slot};
      auto* s = reinterpret_cast<RecordSlice*>(record + sizeof(RecordHeader));
      for (int g = 0; g < v.segments; ++g) s[g] = v.slices(pe.slices_begin + g);
      const std::uint64_t payload = v.sums(at);
      v.sums(at) = 0;
      // Summed from the registers, not read back from the record.
      h.checksum = (status == 0 ? payload : 0) + header_fields_checksum(h) + pe.slices_checksum;
      *reinterpret_cast<RecordHeader*>(record) = h;
    });
    Kokkos::single(Kokkos::PerTeam(team), [&] { v.moves(apply_done) = 0; });
  }
};

/// Import's first launch: every live command's records' checksum words, and
/// how many live imports name each row and each slot.
template <class ExecutionSpace>
struct ImportSumFunctor {
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<128, import_sum_teams_per_sm>>;
  using member_type = typename policy_type::member_type;
  ExchangeViews<typename ExecutionSpace::memory_space> v;
  Kokkos::View<std::int32_t*, typename ExecutionSpace::memory_space> row_users, slot_users;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    bool bad = false;
    const std::int32_t live = v.live(bad);
    const std::int64_t slots = v.slots();
    const std::int64_t threads = std::int64_t(team.league_size()) * team.team_size();
    for (std::int64_t r = std::int64_t(team.league_rank()) * team.team_size() + team.team_rank(); r < live;
         r += threads) {
      if (v.operation(r) != op_import) continue;
      const std::int64_t slot = v.source_slots(r), row = v.destination_slots(r);
      if (row > 0 && row < slots) Kokkos::atomic_fetch_add(&row_users(row), 1);
      if (slot >= 0 && slot < v.capacity) Kokkos::atomic_fetch_add(&slot_users(slot), 1);
    }
    const std::int64_t chunks = static_cast<std::int64_t>(v.chunks.extent(0));
    const std::int64_t total = std::int64_t(live) * chunks;
    ChecksumCarry<member_type, decltype(v.sums)> carry;
    // Units strided over the league: no ticket to share, so a team's warps go
    // on to their next unit without waiting for each other (perf_tests/RESULTS.md).
    for (std::int64_t u = team.league_rank(); u < total; u += team.league_size()) {
      const std::int64_t r = u / chunks, ci = u - r * chunks;
      const std::int64_t slot = v.source_slots(r);
      if (v.operation(r) == op_import && slot >= 0 && slot < v.capacity) {
        const ExchangeChunk ch = v.chunks(ci);
        const PeerEntry pe = v.peers(ch.peer);
        carry.into_warps(team, v.sums, r * v.peer_count + ch.peer);
        carry.add_words(team, pe.wire + slot * pe.record_bytes, (pe.header_bytes + ch.payload_offset) / 8,
                        (ch.length + ch.padding) / 8);
      }
    }
    carry.flush_warps(team, v.sums);
  }
};

/// Import's second launch, one team: every command's code (docs/CONTRACT.md
/// §17's order) and plan, the counts and sums set back to 0, the rows to unpack.
/// `Landing` (ImportLanding::publish_after_check, import_landing.hpp): the
/// first launch, which counts each row's and slot's importers itself and
/// leaves the checksums to the landing; it lists the rows to land.
template <class ExecutionSpace, bool Landing = false>
struct ImportDecideFunctor {
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace>;
  using member_type = typename policy_type::member_type;
  ExchangeViews<typename ExecutionSpace::memory_space> v;
  Kokkos::View<std::int32_t*, typename ExecutionSpace::memory_space> row_users, slot_users;

  /// The code of one record of live command r, 0 when it passes, by the
  /// calling thread's vector lanes (GPUs: a warp a command), which split its
  /// slices: one thread reading them in turn took 15 µs for a qwen3.5-9b
  /// record (perf_tests/RESULTS.md). Every lane returns the code.
  KOKKOS_INLINE_FUNCTION std::int32_t check_record(const member_type& team, std::int64_t r, int q,
                                                   const ExchangePlan& p) const {
    const PeerEntry pe = v.peers(q);
    const std::uint8_t* record = pe.wire + p.slot * pe.record_bytes;
    const auto* h = reinterpret_cast<const RecordHeader*>(record);
    if (h->magic != record_magic || h->version != record_version) return 9;
    if (h->fingerprint != v.fingerprint) return 8;
    if (h->status != 0 || h->key != p.key || h->endpoint != p.endpoint || h->source_tp != v.source_tp ||
        h->source_rank != pe.rank || h->destination_tp != v.destination_tp ||
        h->destination_rank != v.destination_rank || h->slot != p.slot || h->segments != v.segments ||
        h->payload_bytes != pe.payload_bytes)
      return 9;
    const auto* s = reinterpret_cast<const RecordSlice*>(record + sizeof(RecordHeader));
    int differs = 0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, v.segments),
        [&](const int g, int& d) {
          const RecordSlice want = v.slices(pe.slices_begin + g);
          d |= s[g].segment != want.segment || s[g].begin != want.begin || s[g].end != want.end || s[g].zero != 0;
        },
        Kokkos::BOr<int>(differs));
    if (differs) return 11;
    if (Landing) return 0;  // the landing sums the payload as it lands, then checks it (import_landing.hpp)
    // The slices are the expected ones: their part of the header's checksum is the pair's.
    const std::uint64_t header = header_fields_checksum(record) + pe.slices_checksum;
    if (v.sums(r * v.peer_count + q) + header != h->checksum) return 10;
    return payload_names_header(record, pe) ? 0 : 9;
  }

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const int c = static_cast<int>(v.capacity);
    bool bad = false;
    const std::int32_t live = v.live(bad);
    const std::int64_t slots = v.slots();
    if (Landing) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, live), [&](const int r) {
        Kokkos::single(Kokkos::PerThread(team), [&] {
          if (v.operation(r) != op_import) return;
          const std::int64_t slot = v.source_slots(r), row = v.destination_slots(r);
          if (row > 0 && row < slots) Kokkos::atomic_fetch_add(&row_users(row), 1);
          if (slot >= 0 && slot < c) Kokkos::atomic_fetch_add(&slot_users(slot), 1);
        });
      });
      team.team_barrier();
    }
    // The live rows, a thread's lanes a row (live is 0 when the count is bad).
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, live), [&](const int r) {
      ExchangePlan p{nullptr, -1, 0, 0};
      const std::int64_t row = v.destination_slots(r);
      std::int32_t code = v.plan_command(r, op_import, row, v.source_slots(r), p);
      for (int q = 0; q < v.peer_count && code == 0; ++q) code = check_record(team, r, q, p);
      if (code == 0 && (row_users(row) > 1 || slot_users(p.slot) > 1)) code = 4;
      Kokkos::single(Kokkos::PerThread(team), [&] {
        v.errors(r) = code;
        v.plan(r) = p;
      });
    });
    // Rows past the count get their code only (every row 5 when the count is
    // bad), by every lane of the team: no plan of theirs is read, and a few
    // live commands at a large capacity cost what they check.
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, live, c), [&](const int r) { v.errors(r) = bad ? 5 : 0; });
    team.team_barrier();
    // Everything counted or summed for this batch back to 0 for the next.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, live), [&](const int r) {
      Kokkos::single(Kokkos::PerThread(team), [&] {
        for (int q = 0; q < v.peer_count; ++q) v.sums(std::int64_t(r) * v.peer_count + q) = 0;
        const std::int64_t slot = v.source_slots(r), row = v.destination_slots(r);
        if (row > 0 && row < slots) row_users(row) = 0;
        if (slot >= 0 && slot < c) slot_users(slot) = 0;
      });
    });
    team.team_barrier();
    v.list_passed(team, live);
  }
};

/// Import's apply: the listed rows' payload chunks into their rows, the last first.
template <class ExecutionSpace>
struct ImportApplyFunctor {
  using policy_type = Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<128, export_teams_per_sm>>;
  using member_type = typename policy_type::member_type;
  ExchangeViews<typename ExecutionSpace::memory_space> v;

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    const std::int64_t chunks = static_cast<std::int64_t>(v.chunks.extent(0));
    const std::int64_t total = std::int64_t(v.moves(move_count)) * chunks;
    const UnitTickets<std::int64_t> tickets{&v.tickets(0), total};
    for (auto units = tickets.first(team); units.begin < units.end;) {
      // Last unit first: the sums read the records in unit order, so their last
      // units are the likeliest still in L2 (perf_tests/RESULTS.md).
      const std::int64_t drawn = tickets.ask(team), u = total - 1 - units.begin;
      const std::int64_t k = u / chunks, ci = u - k * chunks;
      const std::int32_t r = v.moves(move_rows + k);
      if (v.errors(r) == 0) {  // not refused across the group since validate()
        const auto c = v.place(r, ci);
        team_move<export_words_in_flight>(team, c.row, c.payload, c.chunk.length);
      }
      units = tickets.next(team, drawn);
    }
  }
};

}  // namespace statexfer::impl

#endif
