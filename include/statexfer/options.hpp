#ifndef STATEXFER_OPTIONS_HPP
#define STATEXFER_OPTIONS_HPP

// The design choices of a transfer's launches, as API (like a Kokkos Kernels
// handle): TransferOptions, which a caller passes in TransferConfig, holds the
// two designs a user may choose (validated enums whose `automatic` default is
// the measured best) and, apart, the expert launch parameters, for measuring a
// machine or testing a design. What prepare() chose is a read-out of its own
// (LaunchPlan, <statexfer/launch_plan.hpp>).

#include <cstdint>
#include <string>

namespace statexfer {

/// How validate_and_apply() runs (docs/CONTRACT.md §10).
enum class FusedDesign : std::uint8_t {
  automatic,     ///< the rule of §10: two launches on hosts; on GPUs one launch where its grid is small (the
                 ///< persistent grid with remapping commits, the flat grid, the teams), else two (where
                 ///< validate() sorts, its first launch moving a batch of few live rows itself)
  two_launches,  ///< validate() then apply()
  teams,         ///< one launch of apply()'s teams, each deciding its row (up to 64 commands; on GPUs at any
                 ///< capacity, where validate() sorts too)
  flat_grid,     ///< one launch of the flat grid, each block deciding its row (up to 64 commands)
  persistent,    ///< one launch of about a wave of teams, each deciding every row, then moving what moves
};
/// "automatic", "two_launches", "teams", "flat_grid", "persistent".
const char* to_string(FusedDesign design) noexcept;

/// How apply() runs.
enum class ApplyDesign : std::uint8_t {
  automatic,   ///< the compact grid (the teams where its units would not fit 32-bit indices)
  teams,       ///< a team per work item of every row
  flat_grid,   ///< a thread per `apply_words` 16-byte words of every work item of every row
  persistent,  ///< about a wave of teams moving the units of the rows that move bytes (up to 64 commands)
  compact,     ///< a fixed league of teams striding over the units of the rows validate() listed as moving bytes
};
/// "automatic", "teams", "flat_grid", "persistent", "compact".
const char* to_string(ApplyDesign design) noexcept;

/// Expert launch parameters: for measuring a machine or testing a design, not
/// for tuning a deployment (the defaults are the measured best, and a design
/// other than the default ignores what is not its own). Every default is 0 or
/// false; another value out of range makes the transfer's constructor throw
/// std::invalid_argument naming `options.expert.<name>`; prepare() clamps team
/// sizes to what the device allows. Unstable: fields may change with any release.
struct ExpertOptions {
  /// apply()'s compact grid: teams of its league (1 to 2^20); 0: 10 teams of 128 threads an SM on GPUs
  /// (of the 12 that fit), the CPU's threads on hosts. Fewer
  /// teams leave SMs to other work (host-tier moves on a stream of their own).
  int apply_teams = 0;
  /// apply()'s compact grid on GPUs: 16-byte words a thread moves a unit (2 or 4); 0: 2 (4 KiB units) where the
  /// longest work item is 64 KiB or more, else 4 (8 KiB units).
  int compact_words = 0;
  /// apply()'s compact grid on GPUs: 1 hands its units out to the teams as they ask (in 16 KiB tickets, above
  /// 64 units a team; the default league then nine teams an SM, not ten), -1 strides over them; 0: handed out
  /// where the capacity's units exceed 64 a team and either the league is an eighth of the SMs or more (the
  /// default's, or a host tier's offloads beside a device batch) or the capacity is above 64, else strided.
  int compact_handout = 0;
  /// apply()'s compact grid on GPUs with Hopper's bulk copies: 1 moves its units through two staging buffers a
  /// team (16 KiB units handed out; the default league then three teams an SM), thread 0 loading the next unit
  /// with a bulk copy while it stores this one; -1 or 0: in registers (full batches of large rows move faster
  /// staged, a step of one or two such rows slower: perf_tests/RESULTS.md). Ignored on other devices and
  /// with no_bulk_copies.
  int compact_staged = 0;
  /// apply()'s compact grid: 1 moves a bound region's bytes in the row and in its cache page as one work item
  /// (a snapshot's page into the row with no units under it that move nothing, a restore's region loaded once
  /// for the row and the page), where its rows and pages lie at one offset modulo 16; -1 or 0 as a row's tiles
  /// and a page's apart, as the other grids do (joined items speed full batches of small rows and slow some of
  /// 1 MiB rows: perf_tests/RESULTS.md).
  int compact_joint_pages = 0;
  /// apply()'s flat grid: 16-byte words a thread (1, 2 or 4); 0: 2.
  int apply_words = 0;
  /// apply()'s teams: threads a team (1 to 1024); 0: 128 on GPUs, 1 on hosts.
  int apply_team_size = 0;
  /// Bytes of one work item of a row (a multiple of 16, 256 to 2^30); 0: 64 KiB.
  std::int64_t apply_tile_bytes = 0;
  /// apply()'s teams never use Hopper's bulk copies (by default they do where the device has them).
  bool no_bulk_copies = false;
  /// The largest capacity validate() decides in one launch comparing every pair of rows (64, 128, 256 or 512);
  /// above it, the sorted validation's two launches, whose first compares every pair of up to that many live
  /// rows (docs/CONTRACT.md §8). 0: 256 on GPUs, 128 on hosts.
  int validate_pairs_capacity = 0;
  /// validate()'s pair compares on GPUs: rows each team decides (1 to 64); 0: 8 above 32 commands, else all.
  int validate_rows_per_team = 0;
  /// The most peers a vector lane of validate() scans (1 to 64); 0: 4 with several teams, 8 in one.
  int validate_peers_per_lane = 0;
  /// The sorted validation: keys per sort chunk (a power of two, 64 to 4096); 0: 1024 on GPUs, 4096 on hosts.
  int validate_chunk = 0;
  /// The sorted validation: look-up teams per chunk (1 to 64); 0: 4 on GPUs, 1 on hosts.
  int validate_groups = 0;
  /// The sorted validation: 1 counts the keys in a table (a probe a query, no sort; validate_chunk and
  /// validate_groups unused); -1 sorts them in chunks; 0: counted on GPUs from 1024 commands (faster there on
  /// an H100), else sorted (on hosts faster with several threads: perf_tests/RESULTS.md).
  int validate_counted_keys = 0;
  /// validate_and_apply() in validate()'s and the compact apply()'s launches where validate() sorts (the
  /// automatic design above one launch's reach): its first launch is a league of this many teams of apply()'s
  /// threads (1 to 2^20), which decide and move a batch of up to this many live work items (live rows x a row's
  /// work items) themselves, a team an item, and else decide up to a team a row for apply() (at most the pair
  /// compares' capacity); -1 never; 0: a wave of those teams on GPUs (four an SM), never on hosts.
  int fused_first_units = 0;
  /// validate_and_apply()'s flat grid: threads a block on GPUs (32 to 512); 0: 128.
  int fused_block = 0;
  /// validate_and_apply()'s flat grid: chunks each block moves (1 to 64); 0: two where one would leave the grid
  /// between one and two waves of resident blocks, else one.
  int fused_rounds = 0;
};

/// A transfer's design choices (perf_tests/RESULTS.md measures the defaults,
/// perf_tests/DESIGN-NOTES.md the designs each was measured against). The
/// constructor refuses a value that is not an enumerator (std::invalid_argument
/// naming the option); a design the shape cannot take falls back as each says,
/// and launch_plan() says what was chosen.
struct TransferOptions {
  /// validate_and_apply()'s design. A design the shape cannot take (one
  /// launch above 64 commands, on hosts too few threads a team, with row
  /// claims) falls back to two launches.
  FusedDesign validate_and_apply = FusedDesign::automatic;
  /// apply()'s design.
  ApplyDesign apply = ApplyDesign::automatic;
  /// Expert launch parameters (unstable).
  ExpertOptions expert;
};

}  // namespace statexfer

#endif
