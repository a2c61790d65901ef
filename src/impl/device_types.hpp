#ifndef STATEXFER_IMPL_DEVICE_TYPES_HPP
#define STATEXFER_IMPL_DEVICE_TYPES_HPP

// Plain records shared by the host set-up and the kernels.

#include <cstdint>

namespace statexfer::impl {

/// One page or trailing binding as the kernels see it.
struct BindingEntry {
  std::uint8_t* cache;         // [pages, page_bytes]
  std::int64_t region_offset;  // in the row
  std::int64_t page_bytes;     // bytes per cache page (half the region for trailing bindings)
  std::int32_t trailing;       // 0: page binding, 1: trailing binding (two parts)
  std::int32_t unused;
};

/// work_key: the row's prefix_key region (docs/CONTRACT.md §14), 8 bytes that a
/// snapshot stamps with its key and every other row copy moves as a row tile.
/// work_joint (the compact grid's work map, options.expert.compact_joint_pages):
/// bytes of a bound region's page `part` in the row and in its cache page at
/// once, so that a snapshot's row tiles under its pages are not units that move
/// nothing and a restore loads the region once for the row and the page.
enum WorkKind : std::int32_t { work_row = 0, work_page = 1, work_key = 2, work_joint = 3 };

/// One tile of apply()'s work, the same for every command row.
/// Row tiles: bytes [offset, offset + length) of the row; `binding`/`part` name the
/// page write that overwrites them in a snapshot (-1: none), so the tile skips
/// them then and the page tile alone writes them.
/// Page tiles: bytes [offset, offset + length) of binding `binding`'s page `part`.
/// `page` is that binding (when `binding` >= 0), held in the item so that a team
/// reaches its bytes with one round of loads (plan, error, item), not two.
struct WorkItem {
  std::int64_t offset;
  std::int64_t length;
  std::int32_t kind;
  std::int32_t binding;
  std::int32_t part;
  std::int32_t unused;
  BindingEntry page;
};

/// What validate() decided for one command row; apply() acts on it when the
/// row's error (possibly combined across ranks since) is still 0. The rows are
/// held as base addresses, in the device pool or the host tier, so that apply()
/// need not know which tier a row is in (null unless the row applies).
struct RowPlan {
  const std::uint8_t* src_row;  // copies: the source row
  std::uint8_t* dst_row;
  std::int32_t flags;
  std::int32_t page;      // main partial page
  std::int32_t tpage[2];  // trailing pages, parts 0 and 1
  std::int64_t key;       // plan_stamp: the prefix key a snapshot writes (docs/CONTRACT.md §14)
  // plan_remap (docs/CONTRACT.md §13): state_rows[slot][0] = position_row,
  // state_rows[slot][accepted] = live_row.
  std::int64_t live_row;
  std::int64_t position_row;
  std::int32_t slot;
  std::int32_t accepted;
};

enum PlanFlag : std::int32_t {
  plan_active = 1,               // live, code 0
  plan_copy = 2,                 // operation 0 (else reset)
  plan_snapshot = 4,             // src is the request's live row
  plan_page = 8,                 // partial page write (end % PT != 0)
  plan_trailing0 = 16,           // trailing part 0 active
  plan_trailing1 = 32,           // trailing part 1 active
  plan_trailing0_shadowed = 64,  // restore: part 1 writes the same cache page after part 0
  plan_host = 128,               // a row is in the host tier: no bulk copies (TMA) on it
  plan_stamp = 256,              // a snapshot writes its prefix key into the key tile
  plan_remap = 512,              // a remapping commit: no bytes, two state-row entries swap
};

/// The compact plan validate() leaves beside the rows' plans (an int32 View of
/// `move_rows + C` entries): the live rows with code 0 that move bytes, in row
/// order from entry `move_rows`, and the remapping commits from the last entry
/// backwards, so that apply() launches a fixed grid over what moves, whatever
/// the capacity; `live_count` the live rows it looked at (the rows whose row
/// claims apply() releases, docs/CONTRACT.md §15). `teams_done` counts the
/// deciding launch's teams that have finished, `apply_done` apply()'s; the last
/// team of each sets it back to 0. `apply_tickets` is the counter apply()'s
/// teams draw units from (unit_tickets.hpp). Beside the list, a View of C
/// RowPlans holds the listed rows' plans in list order (move_list.hpp).
enum MoveListEntry : std::int32_t {
  move_count = 0,
  remap_count = 1,
  live_count = 2,
  teams_done = 3,
  apply_done = 4,
  apply_tickets = 5,
  move_rows = 6
};

/// Device-side constants of a prepared transfer.
struct TransferShape {
  std::int64_t capacity;   // C
  std::int64_t rows;       // pool rows
  std::int64_t host_rows;  // host tier rows (0: no host tier; operations 2..4 are unknown then)
  std::int64_t row_bytes;
  std::int64_t consumed_offset;  // byte offset of consumed_tokens (8-aligned)
  std::int64_t page_tokens;      // PT
  std::int64_t width;            // W
  std::int64_t cache_pages;      // P, the same for every binding
  std::int32_t has_trailing;
  std::int32_t work_items;  // per command row
  std::int32_t page_shift;  // log2(PT) when PT is a power of two, else -1
  std::int32_t positions;   // K, speculative positions (docs/CONTRACT.md §13); 0: operation 5 is unknown
  std::int64_t key_offset;  // byte offset of prefix_key (docs/CONTRACT.md §14); -1: no keys
  std::int32_t remap;       // commits remap the state rows (else they copy)
};

}  // namespace statexfer::impl

#endif
