#ifndef STATEXFER_IMPL_COMPACT_APPLY_KERNEL_HPP
#define STATEXFER_IMPL_COMPACT_APPLY_KERNEL_HPP

// apply() over the compact plan validate() left (move_list.hpp): a fixed
// league of teams, 10 an SM on GPUs (9 handed out; launch_plan.hpp), moves the units of the
// rows that move bytes (a unit: what a team moves at once, 128 threads x
// `Words` 16-byte words on GPUs, a work item on hosts), and team 0 swaps the
// remapping commits' state-row entries. A row past num_ops, refused, a remap
// or an empty slot adds no unit, so a partly filled batch costs what it moves.
// A unit's addresses come from one round of loads that need only its index
// (the list entry, the row's plan listed beside it, the work item; a team's
// first unit beside the counts), its words from the next, beside the row's
// code, which vetoes only the stores: the flat grid's two rounds, not four.
// Without listed plans (validate() in several teams, row claims, handed out) a
// unit reads its row, then the row's plan, code and work item, then its words.
//
// On GPUs the teams stride over the units, or (`HandedOut`, the launch plan's
// compact_handed_out) stride where the batch holds at most
// `compact_strided_rounds` units a team and else draw 16 KiB tickets (unit_tickets.hpp): striding
// teams drift apart over many rounds, and the last ones then hold the launch,
// while a few rounds striding cost no ask.
//
// Its work map joins a bound region's bytes in the row and its cache page
// (work_joint, where options.expert.compact_joint_pages is 1): a snapshot
// that writes a page then has no units under it that move nothing, and a
// restore loads the region once and stores it twice (joint_item_move()).
//
// Units of 4 KiB (two words a thread) for work items of a whole tile, 8 KiB
// (four) for shorter ones (launch_plan.hpp); fetching the next unit's
// addresses or words before the current unit's stores was no faster on the
// H200 (perf_tests/DESIGN-NOTES.md).
//
// `Staged` (GPUs with Hopper's bulk copies, options.expert.compact_staged):
// 16 KiB units handed out, each through one of the team's two staging buffers
// (exchange_ring.hpp's ChunkRing): thread 0 loads the team's next unit with a
// bulk copy while it stores this one, so the copy engine keeps two units a
// team in flight and registers none. Every thread computes every unit, so the
// team agrees on which ones a buffer takes; zeros, ragged or unaligned units
// and host-tier rows (no bulk copies on mapped host memory) move by the
// team's loads and stores. A unit's code is read with its addresses, before
// its load: a row refused since validate() is neither loaded nor stored.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "apply_kernel.hpp"
#include "device_types.hpp"
#include "exchange_ring.hpp"
#include "flat_apply_kernel.hpp"
#include "launch_plan.hpp"
#include "move_list.hpp"
#include "row_claims.hpp"
#include "unit_tickets.hpp"

namespace statexfer::impl {

/// One unit as a thread of its team sees it: n bytes from src (null: zeros) to dst, and to `also` when not
/// null (a restore's cache page); n = 0: nothing.
struct CompactUnit {
  std::uint8_t* dst;
  const std::uint8_t* src;
  std::int32_t n;
  std::uint8_t* also;
};

/// Work item `item` of a row whose plan is `p` and error `error`, work_joint items included: the page
/// region's bytes in the destination row, from the snapshot's cache page where it writes one, else from
/// the source row (a reset: zeros), and a restore's to the cache page it writes too (`also`), as a row
/// tile and a page tile of item_move() would move them.
struct JointMove : ItemMove {
  std::uint8_t* also;  // the same bytes to here too; null: nowhere else
};
KOKKOS_INLINE_FUNCTION JointMove joint_item_move(const RowPlan& p, std::int32_t error, const WorkItem& item) {
  if (item.kind != work_joint) return {item_move(p, error, item), nullptr};
  JointMove m{{nullptr, nullptr, 0, 0}, nullptr};
  if (!(p.flags & plan_active) || error != 0 || (p.flags & plan_remap)) return m;
  const BindingEntry& b = item.page;
  const std::int64_t in_row = b.region_offset + item.part * b.page_bytes + item.offset;
  m.dst = p.dst_row + in_row;
  m.length = item.length;
  if (!(p.flags & plan_copy)) return m;
  m.src = p.src_row + in_row;
  if (!page_moves(p, b, item.part)) return m;
  std::uint8_t* cache = cache_page(p, b, item.part, item.offset);
  if (p.flags & plan_snapshot)
    m.src = cache;
  else
    m.also = cache;
  return m;
}

template <class ExecutionSpace, int Words, bool HandedOut = false, bool Listed = false, bool Staged = false>
struct CompactApplyFunctor {
  static_assert(!(Listed && HandedOut), "listed plans are read by the striding teams only");
  using memory_space = typename ExecutionSpace::memory_space;
  static constexpr bool host = std::is_same_v<memory_space, Kokkos::HostSpace>;
  static constexpr int team_threads = 128;
  static constexpr std::int64_t unit_bytes = team_threads * Words * 16;
  static_assert(!Staged || (HandedOut && unit_bytes == ring_chunk_bytes), "staged units: handed out, a buffer each");
  // Units a ticket holds: 16 KiB.
  static constexpr int ticket_units = 8 / Words;
  // Team scratch of a team: the staged units' two buffers.
  static constexpr std::size_t team_scratch_bytes = Staged && !host ? ring_scratch_bytes : 0;
  // Striding, twelve teams an SM fit 40 registers a thread (sixteen, 32, spill); handed out, bounds of ten
  // fit 48, which the tickets need (at 40 they spill), and the league of nine leaves an offload's team room.
  // Staged, the league's three.
  using policy_type =
      Kokkos::TeamPolicy<ExecutionSpace, Kokkos::LaunchBounds<team_threads, Staged      ? compact_staged_league_per_sm
                                                                            : HandedOut ? compact_league_per_sm
                                                                                        : compact_teams_per_sm>>;
  using member_type = typename policy_type::member_type;

  Kokkos::View<const std::int32_t*, memory_space> errors;
  Kokkos::View<const RowPlan*, memory_space> plan;
  Kokkos::View<const WorkItem*, memory_space> items;
  Kokkos::View<std::int32_t*, memory_space> moves;                             // the compact plan
  Kokkos::View<const RowPlan*, memory_space> listed;                           // Listed: its rows' plans
  Kokkos::View<std::int32_t*, memory_space> claims;                            // row claims (§15); empty: none
  Kokkos::View<const std::int64_t*, memory_space> claimed;                     // what validate() claimed
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, memory_space> state_rows;  // written by remapping commits
  std::int32_t capacity = 1;
  std::int32_t items_per_row = 1;
  std::int32_t units_per_item = 1;  // units covering the longest work item (1 on hosts: a unit is an item)

  /// A unit with listed plans, and the row whose code vetoes its stores.
  struct ListedUnit {
    CompactUnit u;
    std::int32_t row;
    std::int32_t stamp;  // the key tile of a snapshot: the row's key into u.dst (its plan's, read then)
  };
  /// With listed plans: unit v of the listed rows (v below the league, or
  /// below the listed rows' units) as its row's plan makes it, before the
  /// row's code is read, or a key stamp (n 0). Its loads (list entry, listed
  /// plan, work item) need nothing but v.
  KOKKOS_INLINE_FUNCTION ListedUnit listed_unit(std::int32_t v, std::int32_t per_row) const {
    const std::int32_t k = v / per_row, rest = v - k * per_row;
    const std::int32_t item_index = rest / units_per_item, part = rest - item_index * units_per_item;
    const JointMove m = joint_item_move(listed(k), 0, items(item_index));
    ListedUnit l{{nullptr, nullptr, 0, nullptr}, moves(move_rows + k), m.stamp};
    const std::int64_t at = host ? 0 : std::int64_t(part) * unit_bytes;
    if (at >= m.length) {
      l.stamp = 0;
      return l;
    }
    if (m.stamp) {
      l.u.dst = m.dst;
      return l;
    }
    l.u.dst = m.dst + at;
    l.u.src = m.src == nullptr ? nullptr : m.src + at;
    l.u.also = m.also == nullptr ? nullptr : m.also + at;
    const std::int64_t left = m.length - at;
    l.u.n = static_cast<std::int32_t>(host || left < unit_bytes ? left : unit_bytes);  // hosts: the whole item
    return l;
  }

  /// Unit v of the listed rows, or nothing (v >= total): its row, then its
  /// plan, code and work item (without listed plans). A key stamp is written
  /// here, by thread 0.
  KOKKOS_INLINE_FUNCTION CompactUnit unit(std::int32_t v, std::int32_t total, std::int32_t per_row, int t) const {
    CompactUnit u{nullptr, nullptr, 0, nullptr};
    if (v >= total) return u;
    const std::int32_t k = v / per_row, rest = v - k * per_row;
    const std::int32_t item_index = rest / units_per_item, part = rest - item_index * units_per_item;
    const std::int32_t r = moves(move_rows + k);
    const JointMove m = joint_item_move(plan(r), errors(r), items(item_index));
    const std::int64_t at = host ? 0 : std::int64_t(part) * unit_bytes;
    if (at >= m.length) return u;
    if (m.stamp) {
      if (t == 0) stamp_key(m.dst, plan(r).key);
      return u;
    }
    u.dst = m.dst + at;
    u.src = m.src == nullptr ? nullptr : m.src + at;
    u.also = m.also == nullptr ? nullptr : m.also + at;
    const std::int64_t left = m.length - at;
    u.n = static_cast<std::int32_t>(host || left < unit_bytes ? left : unit_bytes);  // hosts: the whole item
    return u;
  }

  /// Staged: whether unit v (below total) moves through a staging buffer: whole aligned 16-byte words of a
  /// copy (ring_fits()) to one destination of a row outside the host tier (no bulk copies on mapped host
  /// memory).
  KOKKOS_INLINE_FUNCTION bool buffered(const CompactUnit& u, std::int32_t v, std::int32_t per_row) const {
    return u.src != nullptr && u.also == nullptr && ring_fits(u.dst, u.src, u.n, 0) &&
           !(plan(moves(move_rows + v / per_row)).flags & plan_host);
  }

  /// Zeros, or source and destination 16-byte words apart: the unit moves in 16-byte words.
  KOKKOS_INLINE_FUNCTION static bool wide(const CompactUnit& u) {
    return u.src == nullptr ||
           ((reinterpret_cast<std::uintptr_t>(u.dst) ^ reinterpret_cast<std::uintptr_t>(u.src)) & 15) == 0;
  }

  /// Thread t's 16-byte words of a wide unit (one round: a unit is the team's words); zeros otherwise.
  KOKKOS_INLINE_FUNCTION static void load(const CompactUnit& u, int t, Word16 (&v)[Words]) {
    const WordSpan span = word_span<16>(u.dst, u.n);
    const bool words = u.n > 0 && u.src != nullptr && wide(u);
    const Word16* s = words ? reinterpret_cast<const Word16*>(u.src + span.head) : nullptr;
    for (int j = 0; j < Words; ++j) {
      const int w = t + j * team_threads;
      v[j] = words && w < span.words ? s[w] : Word16{};
    }
  }

  /// A wide unit's stores from `v` to `dst` (u.dst or u.also, 16-byte words apart) and its edge bytes.
  KOKKOS_INLINE_FUNCTION static void store_words(const CompactUnit& u, std::uint8_t* dst, int t,
                                                 const Word16 (&v)[Words]) {
    const WordSpan span = word_span<16>(u.dst, u.n);
    Word16* d = reinterpret_cast<Word16*>(dst + span.head);
    for (int j = 0; j < Words; ++j) {
      const int w = t + j * team_threads;
      if (w < span.words) d[w] = v[j];
    }
    const int edge = span.head + (u.n - span.tail_begin);
    if (t < edge) {
      const int b = t < span.head ? t : span.tail_begin + (t - span.head);
      dst[b] = u.src == nullptr ? std::uint8_t(0) : u.src[b];
    }
  }

  /// A wide unit's stores from `v`, to `also` too, or a narrower unit's whole move.
  KOKKOS_INLINE_FUNCTION static void store(const CompactUnit& u, int t, const Word16 (&v)[Words]) {
    if (u.n == 0) return;
    // A unit with `also` is wide, its three addresses 16-byte words apart: transfer_impl.hpp joins only such.
    if (!wide(u)) return flat_move_widest<Words>(u.dst, u.src, u.n, t, team_threads);
    store_words(u, u.dst, t, v);
    if (u.also != nullptr) store_words(u, u.also, t, v);
  }

  /// Thread t's share of one unit (GPUs): its words, then its stores.
  KOKKOS_INLINE_FUNCTION static void move_unit(const CompactUnit& u, int t) {
    Word16 a[Words];
    load(u, t, a);
    store(u, t, a);
  }

  /// Hosts: a unit is a whole work item, moved by the C library (teams of one).
  KOKKOS_INLINE_FUNCTION static void host_move(const CompactUnit& u) {
    if (u.n <= 0) return;
    u.src == nullptr ? (void)std::memset(u.dst, 0, static_cast<std::size_t>(u.n))
                     : (void)std::memcpy(u.dst, u.src, static_cast<std::size_t>(u.n));
    if (u.also != nullptr) std::memcpy(u.also, u.src, static_cast<std::size_t>(u.n));
  }

  /// The remaps, by team 0: `errors` still vetoes (combined across ranks since validate()).
  KOKKOS_INLINE_FUNCTION void remap_rows(const member_type& team, std::int32_t n_remap) const {
    if (team.league_rank() == 0)
      for (int j = team.team_rank(); j < n_remap; j += team.team_size()) {
        const std::int32_t r = moves(move_rows + capacity - 1 - j);
        if (errors(r) == 0) remap_state_rows(state_rows, plan(r));
      }
  }

  /// With listed plans: the team's first unit loaded beside the counts (the
  /// league is at most the capacity's units, so its entry is in range), and
  /// each unit's words beside its row's code (validate() listed the row with
  /// code 0, so its addresses are valid; a code combined since vetoes the
  /// stores). The remaps after the units: nothing held across them.
  KOKKOS_INLINE_FUNCTION void move_listed_units(const member_type& team) const {
    const int t = team.team_rank();
    const std::int32_t per_row = items_per_row * units_per_item, first = team.league_rank();
    const ListedUnit first_unit = listed_unit(first, per_row);
    const std::int32_t total = moves(move_count) * per_row;
    const auto move = [&](const ListedUnit& l) {
      if constexpr (host) {
        if (errors(l.row) != 0) return;
        if (l.stamp) stamp_key(l.u.dst, plan(l.row).key);
        host_move(l.u);
      } else {
        Word16 a[Words];
        load(l.u, t, a);
        if (errors(l.row) != 0) return;
        if (l.stamp && t == 0) stamp_key(l.u.dst, plan(l.row).key);
        store(l.u, t, a);
      }
    };
    // The first unit apart, so that nothing of it is held across the others.
    if (first < total) move(first_unit);
    for (std::int32_t v = first + team.league_size(); v < total; v += team.league_size()) move(listed_unit(v, per_row));
    remap_rows(team, moves(remap_count));
  }

  /// Without: each unit's row, then its plan, code and work item.
  KOKKOS_INLINE_FUNCTION void move_row_units(const member_type& team) const {
    const int t = team.team_rank();
    const std::int32_t n_move = moves(move_count);
    remap_rows(team, moves(remap_count));
    // Units and the league fit int32 together: prepare() takes another design where they would not.
    const std::int32_t per_row = items_per_row * units_per_item;
    const std::int32_t total = n_move * per_row, stride = team.league_size();
    if constexpr (host) {
      for (std::int32_t v = team.league_rank(); v < total; v += stride) host_move(unit(v, total, per_row, t));
    } else {
#if defined(STATEXFER_IMPL_BULK_COPY_DEVICE)
      if constexpr (Staged) return move_staged_units(team, total, per_row);
#endif
      // (Staged on a device without bulk copies: the handed-out units in registers.)
      const auto move = [&](const std::int32_t v) { move_unit(unit(v, total, per_row, t), t); };
      if (!HandedOut || total <= compact_strided_rounds * stride) {
        for (std::int32_t v = team.league_rank(); v < total; v += stride) move(v);
      } else {
        const UnitTickets<std::int32_t, ticket_units> tickets{&moves(apply_tickets), total};
        for (auto units = tickets.first(team); units.begin < units.end;) {
          const std::int32_t drawn = tickets.ask(team);
          for (std::int32_t v = units.begin; v < units.end; ++v) move(v);
          units = tickets.next(team, drawn);
        }
      }
    }
  }

#if defined(STATEXFER_IMPL_BULK_COPY_DEVICE)
  /// Staged (GPUs with bulk copies): the units handed out, each through a
  /// staging buffer where it fits, the next one loading while this one is stored.
  __device__ void move_staged_units(const member_type& team, std::int32_t total, std::int32_t per_row) const {
    const int t = team.team_rank();
    const UnitTickets<std::int32_t, ticket_units> tickets{&moves(apply_tickets), total};
    ChunkRing ring =
        ChunkRing::make(team.team_scratch(0).get_shmem(static_cast<std::ptrdiff_t>(ring_scratch_bytes)), t);
    team.team_barrier();  // the ring's barriers, set up
    auto units = tickets.first(team);
    CompactUnit next = unit(units.begin, total, per_row, t);
    bool staged = next.n > 0 && buffered(next, units.begin, per_row);
    if (staged && t == 0) ring.load(0, next.src, next.n);
    for (int s = 0; units.begin < units.end; s ^= 1) {
      const CompactUnit u = next;
      const bool held = staged;
      // Only thread 0 reads the buffers (its stores), and load() first waits until they have.
      units = tickets.next(team, tickets.ask(team));
      next = unit(units.begin, total, per_row, t);
      staged = next.n > 0 && buffered(next, units.begin, per_row);
      if (staged && t == 0) ring.load(s ^ 1, next.src, next.n);
      if (held) {
        ring.wait(s);
        if (t == 0) ring.store(s, u.dst, u.n);
      } else {
        move_unit(u, t);
      }
    }
    // With row claims, every store written and ordered before their release (a fence and an atomic);
    // without, the buffers read is enough: the launch's end waits for the writes.
    if (t == 0) ring.finish(claims.extent(0) > 0);
  }
#endif

  KOKKOS_INLINE_FUNCTION void operator()(const member_type& team) const {
    if constexpr (Listed)
      move_listed_units(team);
    else
      move_row_units(team);
    // With row claims, the last team releases them once every team's bytes are written.
    if (claims.extent(0) > 0 && last_team(team, &moves(apply_done))) {
      release_claims(team, claims, claimed, moves(live_count));
      Kokkos::single(Kokkos::PerTeam(team), [&] { moves(apply_done) = 0; });
    }
  }
};

}  // namespace statexfer::impl

#endif
