#ifndef STATEXFER_LAUNCH_PLAN_HPP
#define STATEXFER_LAUNCH_PLAN_HPP

// LaunchPlan: what a transfer's prepare() chose from the shape, the device's
// limits and its TransferOptions (PreparedStateTransfer::launch_plan()). A
// read-out for logs, tests and benchmark records. Unstable: its fields are the
// kernels' internals and change with any release; choose designs through
// TransferOptions, never by reading these back.

#include <cstdint>

#include <statexfer/options.hpp>

namespace statexfer {

/// The launches prepare() chose (unstable).
struct LaunchPlan {
  // validate()
  bool sorted_validation = false;  ///< pairs or keys, then sort, look up and decide (two launches), else the pairs
  int validate_league = 0;         ///< teams of the pair compares (sorted: of its first launch)
  int validate_team_size = 0;      ///< threads a team of the pair compares
  int validate_vector_length = 0;  ///< vector lanes a thread of the pair compares
  int validate_rows_per_team = 0;  ///< rows a team of the pair compares decides
  int sort_teams = 0;              ///< sorted: teams of the sort and look-up launch
  int sort_team_size = 0;          ///< sorted: threads a team of the sort and look-up launch
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
  /// two launches where validate() sorts: up to this many live work items (live rows x a row's) its first
  /// launch decides and moves the batch itself, teams of fused_team_size; 0: never
  std::int64_t fused_first_units = 0;
  // The compact grid (apply)
  std::int64_t compact_teams = 0;       ///< its league
  std::int64_t compact_work_items = 0;  ///< capacity x its work items a row (a region's row bytes and page one)
  int compact_units = 0;            ///< units (on GPUs 128 threads x compact_words, a work item on hosts) a work item
  int compact_words = 0;            ///< 16-byte words a thread moves a unit (GPUs)
  bool compact_handed_out = false;  ///< its units handed out to the teams as they ask (GPUs), else strided
  bool compact_staged = false;      ///< its units through two bulk-copy staging buffers a team (GPUs, handed out)
  bool listed_plans = false;        ///< validate() lists the moving rows' plans too (one team, a thread a row)
  // The persistent grid (apply or validate_and_apply)
  std::int64_t persistent_teams = 0;  ///< its league
  int persistent_units = 0;           ///< 8 KiB units covering the longest work item
};

}  // namespace statexfer

#endif
