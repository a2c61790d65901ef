#ifndef STATEXFER_OPTIONS_HPP
#define STATEXFER_OPTIONS_HPP

// The choices a transfer's launches are made of, as API (like a Kokkos
// Kernels handle): TransferOptions, which a caller passes in TransferConfig and
// whose defaults are the measured best, and LaunchPlan, what prepare() chose
// from the shape, the device's limits and the options.

#include <cstdint>
#include <string>

namespace statexfer {

/// How validate_and_apply() runs (docs/CONTRACT.md §10).
enum class FusedDesign : std::uint8_t {
  automatic,  ///< the rule of §10: two launches on hosts; on GPUs the persistent grid with remapping commits, else the
              ///< flat grid or the teams
  two_launches,  ///< validate() then apply()
  teams,         ///< one launch of apply()'s teams, each deciding its row (up to 64 commands)
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

/// Design choices and expert tuning of a transfer's kernels. Every default (0,
/// -1 or automatic) is the measured best (perf_tests/RESULTS.md, and
/// perf_tests/DESIGN-NOTES.md for the designs each choice was measured against); other values
/// are for measuring a machine or testing a design. The constructor refuses a
/// value out of range (std::invalid_argument naming the option); prepare()
/// clamps team sizes to what the device allows.
struct TransferOptions {
  /// validate_and_apply()'s design. A design the shape cannot take (one
  /// launch above 64 commands, on hosts too few threads a team) falls back to
  /// two launches; launch_plan() says what was chosen.
  FusedDesign validate_and_apply = FusedDesign::automatic;
  /// apply()'s design.
  ApplyDesign apply = ApplyDesign::automatic;
  /// apply()'s compact grid: teams of its league (1 to 2^20); 0: about a wave on GPUs (12 teams of 128 threads
  /// an SM), the CPU's threads on hosts. Fewer teams leave SMs to other work (host-tier moves on a stream of
  /// their own).
  int apply_teams = 0;
  /// apply()'s flat grid: 16-byte words a thread (1, 2 or 4); -1: 2.
  int apply_words = -1;
  /// apply()'s team size when it runs as teams (1 to 1024); 0: 128 on GPUs, 1 on hosts.
  int apply_team_size = 0;
  /// Bytes of one work item of a row (a multiple of 16, 256 to 2^30); 0: 64 KiB.
  std::int64_t apply_tile_bytes = 0;
  /// Hopper's bulk copies in apply()'s teams: -1 or 1 where the device has them, 0 never.
  int apply_bulk_copies = -1;
  /// validate() up to 64 commands on GPUs: rows each team decides (1 to 64); 0: 8 above 32 commands, else all.
  int validate_rows_per_team = 0;
  /// The most peers a vector lane of validate() scans (1 to 64); 0: 4 with several teams, 8 in one.
  int validate_peers_per_lane = 0;
  /// The sorted validation above 64 commands: keys per sort chunk (a power of two, 64 to 4096); 0: 1024.
  int validate_chunk = 0;
  /// The sorted validation: look-up teams per chunk (1 to 64); 0: 4.
  int validate_groups = 0;
  /// The flat grid of validate_and_apply(): threads a block on GPUs (32 to 512); 0: 128.
  int fused_block = 0;
  /// The flat grid: chunks each block moves (1 to 64); 0: two where one would leave
  /// the grid between one and two waves of resident blocks, else one.
  int fused_rounds = 0;
};

/// The launches prepare() chose (PreparedStateTransfer::launch_plan()).
struct LaunchPlan {
  // validate()
  bool sorted_validation = false;  ///< above 64 commands: keys, sort and look up, decide (three launches)
  int validate_league = 0;         ///< teams (one kernel up to 64 commands)
  int validate_team_size = 0;      ///< threads a team (sorted: of the sort and look-up launch)
  int validate_vector_length = 0;  ///< vector lanes a thread
  int validate_rows_per_team = 0;  ///< rows a team decides
  int sort_teams = 0;              ///< sorted: teams of the sort and look-up launch
  // apply()
  std::int64_t work_items = 0;             ///< capacity x work items a row
  ApplyDesign apply = ApplyDesign::teams;  ///< what runs (never automatic)
  int apply_words = 0;                     ///< the flat grid: 16-byte words a thread
  std::int64_t apply_item_threads = 0;     ///< the flat grid's threads a work item
  int apply_team_size = 0;                 ///< teams: threads a team
  bool bulk_copies = false;                ///< teams: Hopper's bulk copies
  // validate_and_apply()
  FusedDesign validate_and_apply = FusedDesign::two_launches;  ///< what runs (never automatic)
  int fused_team_size = 0;                                     ///< teams: threads a team
  std::int64_t fused_blocks = 0;                               ///< flat grid: blocks
  int fused_block = 0;                                         ///< flat grid: threads a block
  int fused_chunk_bytes = 0;                                   ///< flat grid: bytes a block moves a round
  int fused_chunk_shift = 0;                                   ///< flat grid: log2 of the blocks a work item has
  int fused_rounds = 1;                                        ///< flat grid: rounds a block
  int fused_words = 0;                                         ///< flat grid: 16-byte words a thread a round
  // The compact grid (apply)
  std::int64_t compact_teams = 0;  ///< its league
  int compact_units = 0;           ///< units (8 KiB on GPUs, a work item on hosts) covering the longest work item
  // The persistent grid (apply or validate_and_apply)
  std::int64_t persistent_teams = 0;  ///< its league
  int persistent_units = 0;           ///< 8 KiB units covering the longest work item
};

}  // namespace statexfer

#endif
