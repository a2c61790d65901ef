#ifndef STATEXFER_IMPL_LAUNCH_PLAN_HPP
#define STATEXFER_IMPL_LAUNCH_PLAN_HPP

// The choice of a transfer's launches (LaunchPlan) from its shape, the
// device's limits and the caller's TransferOptions: a pure function, so that
// every design is reachable from options and checked on any backend. prepare()
// asks the device for the limits and keeps the plan; the constructor checks
// the options' ranges.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include <statexfer/commands.hpp>
#include <statexfer/launch_plan.hpp>
#include <statexfer/options.hpp>

#include "argument_checks.hpp"

namespace statexfer::impl {

/// What the plan needs of the transfer.
struct PlanShape {
  std::int64_t capacity = 1;
  std::int64_t work_items = 1;    // a row's
  std::int64_t longest_item = 0;  // bytes
  std::int64_t row_bytes = 0;
  bool remapping_commits = false;  // speculative positions whose commits remap (docs/CONTRACT.md §13)
  bool claims = false;             // row claims (docs/CONTRACT.md §15): a row is claimed once, by validate()
  // The compact grid's work map (work_joint tiles: options.expert.compact_joint_pages); 0: work_items'.
  std::int64_t compact_work_items = 0;
  std::int64_t compact_longest_item = 0;
};

/// What the plan needs of the device and the kernels' policies (prepare() asks them).
struct DeviceLimits {
  bool host = true;     // a host backend: a CPU's threads
  bool kokkos4 = true;  // the flat grid of validate_and_apply() is the default on Kokkos 4 only
  bool bulk = false;    // the code that runs has Hopper's bulk copies
  std::int64_t concurrency = 1;
  int vector_length_max = 1;
  int validate_threads_max[7] = {1, 1, 1, 1, 1, 1, 1};  // validate()'s team_size_max at 1, 2, 4, ..., 64 lanes
  int validate_max_threads = 512;                       // its launch bounds
  int apply_team_max = 1;
  int fused_team_max = 1;       // validate_and_apply()'s teams, with their scratch
  int fused_flat_team_max = 1;  // the flat grid's blocks, with their scratch
  int fused_flat_words = 4;     // 16-byte words a thread of the flat grid moves a round
  int sort_team_max = 1;        // the sorted validation's sort and look-up launch
  int sort_teams = 0;
  int sort_chunk = 1024;        // keys per chunk
  int persistent_team_max = 1;  // the persistent grid's teams, with their scratch
};

/// Bytes of one unit of the persistent grid (PersistentFunctor::unit_bytes) and of the compact grid on GPUs
/// (CompactApplyFunctor::unit_bytes).
inline constexpr std::int64_t persistent_unit_bytes = 128 * 4 * 16;
/// The compact grid on GPUs (CompactApplyFunctor): 16-byte words a thread a unit, and its teams of 128
/// threads an SM, of the 2048 an SM holds, when it strides over its units (its launch bounds: 40
/// registers; handed out, bounds of ten teams an SM, 48 registers). Work items of a whole tile
/// (rows from 64 KiB) move fastest in 4 KiB units (two words); shorter ones in 8 KiB units (four), which
/// leave fewer empty units where items are shorter than the longest (perf_tests/DESIGN-NOTES.md).
inline constexpr int compact_teams_per_sm = 12;
/// Teams the compact grid launches an SM by default, two fewer than fit: a kernel on another stream (the
/// host tier's offloads) finds room beside it instead of waiting for a team of a league that stops only
/// when its units are done, and large rows moved faster at 10 than at 8, 11 or 12 on the H200
/// (perf_tests/DESIGN-NOTES.md). Prefill/decode's export and import grids take the same.
inline constexpr int compact_league_per_sm = 10;
/// The default league handed out (48 registers a thread): nine teams an SM leave room for an offload's team.
inline constexpr int compact_handed_out_league_per_sm = 9;
/// Teams an SM of validate_and_apply()'s first launch where it moves a few live rows (fused_first_kernel.hpp).
inline constexpr int fused_first_teams_per_sm = 4;
/// Units a team of the compact grid strides over at most: past that, handed out, the teams draw tickets.
inline constexpr std::int32_t compact_strided_rounds = 64;
inline int default_compact_words(std::int64_t longest_item) { return longest_item >= 64 * 1024 ? 2 : 4; }
/// The compact grid's staged units (bulk copies through two 16 KiB buffers a team): words a thread a unit
/// (128 x 8 x 16 bytes: a buffer), and the default league an SM, at which they were fastest on the H200
/// (perf_tests/RESULTS.md; their 33 KiB of shared memory a team allow six).
inline constexpr int compact_staged_words = 8;
inline constexpr int compact_staged_league_per_sm = 3;

/// The largest capacity validate() compares every pair of rows at by default:
/// the pair compares' one launch decided 128 commands faster than the sorted
/// validation's launches on GPUs and hosts, 256 on GPUs only, where its teams
/// spread over the SMs; hosts' teams of one thread scan every peer alone
/// (perf_tests/RESULTS.md).
inline std::int64_t pairs_capacity(const ExpertOptions& o, bool host) {
  return o.validate_pairs_capacity > 0 ? o.validate_pairs_capacity : host ? 128 : 256;
}
/// Whether validate() at capacity c takes the sorted validation (docs/CONTRACT.md §8).
inline bool sorts_validation(std::int64_t c, const ExpertOptions& o, bool host) { return c > pairs_capacity(o, host); }

/// Defaults of TransferOptions that the constructor needs before prepare().
inline constexpr std::int64_t default_tile_bytes = 64 * 1024;
/// The sorted validation's keys per sort chunk and look-up teams per chunk (validate_sorted_kernel.hpp).
/// GPUs: chunks of 1024 spread C = 4096 over 5 x 4 chunks (times the look-up teams of each) and keep each row's
/// searches to at most 4 chunks; four teams a chunk, each sorting it and answering a quarter of the rows, were
/// faster at every sorted capacity on the H200 than one answering all of them, eight at C = 4096 slower (two
/// waves). Hosts: a team is one thread, so chunks only multiply a row's searches and more teams a chunk its
/// sorts: whole arrays (up to 4096 keys) and one team each were faster from C = 1024 on OpenMP
/// (perf_tests/RESULTS.md).
inline std::int64_t default_sort_chunk(bool host) { return host ? 4096 : 1024; }
inline int default_sort_groups(bool host) { return host ? 1 : 4; }
/// Whether the sorted validation of `capacity` commands counts its keys in a table
/// (validate_counted_kernel.hpp) instead of sorting them: by default on GPUs from 1024 commands, where full
/// batches validated 7-20% faster on an H100 and a few live rows level to 5% faster (full batches of 512
/// commands: level to 2% slower), and not on hosts, where two OpenMP threads sorted faster
/// (perf_tests/RESULTS.md).
inline bool counts_keys(const ExpertOptions& o, bool host, std::int64_t capacity) {
  return o.validate_counted_keys == 1 || (o.validate_counted_keys == 0 && !host && capacity >= 1024);
}

/// The constructor's check of the options (docs/CONTRACT.md §3): the designs
/// are enumerators, every expert parameter 0 (the default) or in its range.
inline void check_options(const TransferOptions& options) {
  const ExpertOptions& o = options.expert;
  const auto range = [](const char* name, std::int64_t v, std::int64_t lo, std::int64_t hi, const char* more = "") {
    if (v != 0 && (v < lo || v > hi))
      reject(std::string("options.expert.") + name + " must be 0 (the default) or " + std::to_string(lo) + ".." +
             std::to_string(hi) + more + ", got " + std::to_string(v));
  };
  const auto apply = static_cast<int>(options.apply);
  if (apply < 0 || apply > static_cast<int>(ApplyDesign::compact))
    reject("options.apply is not an ApplyDesign, got " + std::to_string(apply));
  const auto design = static_cast<int>(options.validate_and_apply);
  if (design < 0 || design > static_cast<int>(FusedDesign::persistent))
    reject("options.validate_and_apply is not a FusedDesign, got " + std::to_string(design));
  if (o.compact_words != 0 && o.compact_words != 2 && o.compact_words != 4)
    reject("options.expert.compact_words must be 0 (the default), 2 or 4, got " + std::to_string(o.compact_words));
  range("apply_teams", o.apply_teams, 1, 1 << 20);
  if (o.compact_handout < -1 || o.compact_handout > 1)
    reject("options.expert.compact_handout must be 0 (the default), 1 or -1, got " + std::to_string(o.compact_handout));
  if (o.compact_staged < -1 || o.compact_staged > 1)
    reject("options.expert.compact_staged must be 0 (the default), 1 or -1, got " + std::to_string(o.compact_staged));
  if (o.compact_joint_pages < -1 || o.compact_joint_pages > 1)
    reject("options.expert.compact_joint_pages must be 0 (the default), 1 or -1, got " +
           std::to_string(o.compact_joint_pages));
  if (o.apply_words != 0 && o.apply_words != 1 && o.apply_words != 2 && o.apply_words != 4)
    reject("options.expert.apply_words must be 0 (the default), 1, 2 or 4, got " + std::to_string(o.apply_words));
  range("apply_team_size", o.apply_team_size, 1, 1024);
  range("apply_tile_bytes", o.apply_tile_bytes, 256, std::int64_t(1) << 30, ", a multiple of 16");
  if (o.apply_tile_bytes % 16 != 0)
    reject("options.expert.apply_tile_bytes must be a multiple of 16, got " + std::to_string(o.apply_tile_bytes));
  const int pairs = o.validate_pairs_capacity;
  if (pairs != 0 && pairs != 64 && pairs != 128 && pairs != 256 && pairs != 512)
    reject("options.expert.validate_pairs_capacity must be 0 (the default), 64, 128, 256 or 512, got " +
           std::to_string(pairs));
  range("validate_rows_per_team", o.validate_rows_per_team, 1, 64);
  range("validate_peers_per_lane", o.validate_peers_per_lane, 1, 64);
  range("validate_chunk", o.validate_chunk, 64, 4096, ", a power of two");
  if ((o.validate_chunk & (o.validate_chunk - 1)) != 0)
    reject("options.expert.validate_chunk must be a power of two, got " + std::to_string(o.validate_chunk));
  range("validate_groups", o.validate_groups, 1, 64);
  if (o.validate_counted_keys < -1 || o.validate_counted_keys > 1)
    reject("options.expert.validate_counted_keys must be 0 (the default), 1 or -1, got " +
           std::to_string(o.validate_counted_keys));
  if (o.fused_first_units != -1) range("fused_first_units", o.fused_first_units, 1, 1 << 20, " or -1");
  range("fused_block", o.fused_block, 32, 512);
  range("fused_rounds", o.fused_rounds, 1, 64);
}

/// Threads of apply()'s flat grid per work item, as a shift: a power of two
/// covering the longest item at `words` 16-byte words a thread, at least a warp
/// so that the edge bytes (fewer than 32) have a thread each.
inline std::int32_t flat_thread_shift(std::int64_t longest_item, int words) {
  std::int32_t shift = 5;
  while ((std::int64_t(16) * words << shift) < longest_item) ++shift;
  return shift;
}

inline std::int32_t log2_exact(std::int64_t power) {
  std::int32_t shift = 0;
  while ((std::int64_t(1) << shift) < power) ++shift;
  return shift;
}

/// The launches of one transfer. The defaults are the best of the sittings in
/// perf_tests/RESULTS.md and DESIGN-NOTES.md: apply() the compact grid (a
/// partly filled batch costs what it moves, its units in registers); validate() up to 64 commands one
/// team of a thread a row (its barrier, not the last team's fence and count,
/// then publishes the rows to the compact plan), above that teams of 8 rows,
/// each row's vector lanes splitting its scan of the others where it has more
/// than 8 (4 with several teams) peers to scan, at most 4 lanes in one team
/// (there all C rows' warps share one SM);
/// validate_and_apply() one launch only where its grid is small (below: the
/// flat grid on Kokkos 4, which was 10-15% slower than two launches on Kokkos
/// 3.4's build, the teams, or the persistent grid where commits remap), else
/// two launches.
inline LaunchPlan choose_launch_plan(const PlanShape& s, const DeviceLimits& d, const TransferOptions& options) {
  const ExpertOptions& o = options.expert;
  LaunchPlan p;
  const bool host = d.host;
  const std::int64_t c = s.capacity;
  p.sorted_validation = sorts_validation(c, o, host);
  p.work_items = c * s.work_items;
  // apply()
  p.bulk_copies = !host && d.bulk && !o.no_bulk_copies;
  const int team = o.apply_team_size > 0 ? o.apply_team_size : 128;
  p.apply_team_size = host ? 1 : std::max(1, std::min(team, d.apply_team_max));  // hosts: a memcpy per tile
  p.apply_words = o.apply_words > 0 ? o.apply_words : 2;
  p.apply_item_threads = std::int64_t(1) << flat_thread_shift(s.longest_item, p.apply_words);
  // The persistent grid: a wave of its teams (4 of 128 threads an SM, what its
  // launch bounds hold: a quarter of the device's concurrency), never more than
  // there are units; hosts a team of one a thread. Up to 64 commands (a team
  // holds every row's plan).
  p.persistent_units = static_cast<int>((s.longest_item + persistent_unit_bytes - 1) / persistent_unit_bytes);
  const std::int64_t units = p.work_items * std::max(p.persistent_units, 1);
  const std::int64_t persistent_resident = host ? d.concurrency : d.concurrency / 4 / 128;
  p.persistent_teams = std::max<std::int64_t>(1, std::min(units, persistent_resident));
  const bool persistent_fits = c <= max_capacity && (host || d.persistent_team_max >= 128);
  // The compact grid: a fixed league striding over the units of the rows that
  // validate() listed as moving bytes, so that a step costs what it moves at
  // every capacity and live count (the flat grid and the teams launch every
  // work item of every row, live or not). GPUs: 4 or 8 KiB units
  // (default_compact_words), about a wave of teams; hosts: a work item a unit,
  // a team of one a thread. Its unit indices are 32-bit: past that, the teams.
  // Staged units (compact_apply_kernel.hpp) only where asked for and the device has bulk copies: full
  // batches of large rows move faster so, but a step of a row or two of a real workload (the main job's
  // replay of a production trace, rows cold) moved slower (perf_tests/RESULTS.md), and a step mostly
  // carries a row or two.
  p.compact_staged = p.bulk_copies && o.compact_staged == 1;
  const std::int64_t compact_longest = s.compact_work_items > 0 ? s.compact_longest_item : s.longest_item;
  p.compact_words = p.compact_staged      ? compact_staged_words
                    : o.compact_words > 0 ? o.compact_words
                                          : default_compact_words(compact_longest);
  const std::int64_t compact_unit_bytes = 128 * 16 * std::int64_t(p.compact_words);
  p.compact_units = host ? 1
                         : static_cast<int>(std::max<std::int64_t>(
                               1, (compact_longest + compact_unit_bytes - 1) / compact_unit_bytes));
  p.compact_work_items = c * (s.compact_work_items > 0 ? s.compact_work_items : s.work_items);
  const std::int64_t compact_units = p.compact_work_items * p.compact_units;
  // Its unit indices are int32, a unit plus the league (at most 2^20 teams) too.
  const bool compact_fits = compact_units <= std::numeric_limits<std::int32_t>::max() - (std::int64_t(1) << 20);
  const auto league = [&](int per_sm) {
    const std::int64_t resident = host ? d.concurrency : d.concurrency * per_sm / 2048;
    return std::max<std::int64_t>(1, std::min(compact_units, o.apply_teams > 0 ? std::int64_t(o.apply_teams)
                                                                               : std::max<std::int64_t>(1, resident)));
  };
  p.compact_teams = league(compact_league_per_sm);
  // Units handed out (unit_tickets.hpp) where tickets can be drawn at all (the
  // capacity's units exceed 64 a team; else striding, without the tickets'
  // code, whose presence costs a few rows): a host tier's offloads, full
  // batches and batches of two or more rows of megabytes moved faster so, and
  // the main job's steps too. Up to 64 commands a league under an eighth of
  // the SMs (a caller's: a host tier's offloads of 4-11 teams) strides: such
  // offloads moved slower handed out (perf_tests/RESULTS.md). Handed out, the
  // default league is nine teams an SM: at the kernel's 48 registers an SM
  // then keeps room for an offload's team.
  const std::int64_t sms = d.concurrency / 2048;
  const bool tickets_drawn = compact_units > compact_strided_rounds * p.compact_teams;
  const bool small_league = p.compact_teams < std::max<std::int64_t>(1, sms / 8);
  p.compact_handed_out = !host && (p.compact_staged || o.compact_handout == 1 ||
                                   (o.compact_handout == 0 && tickets_drawn && (!small_league || c > max_capacity)));
  if (p.compact_handed_out)
    p.compact_teams = league(p.compact_staged ? compact_staged_league_per_sm : compact_handed_out_league_per_sm);
  // validate_and_apply()'s persistent grid where commits remap (measured: a
  // remapping step moves no bytes, and its one launch saves validate()'s).
  const bool prefer_persistent = !host && s.remapping_commits && persistent_fits;
  ApplyDesign apply = options.apply != ApplyDesign::automatic ? options.apply : ApplyDesign::compact;
  if (apply == ApplyDesign::persistent && !persistent_fits) apply = ApplyDesign::compact;
  if (apply == ApplyDesign::compact && !compact_fits) apply = ApplyDesign::teams;
  p.apply = apply;
  // validate(): the pair compares at capacity c, or where it sorts, its first launch's at the pairs
  // capacity (up to that many live rows it compares every pair; SortedFirstFunctor).
  const int ci = static_cast<int>(p.sorted_validation ? pairs_capacity(o, host) : c);
  const int rows = std::min(ci, o.validate_rows_per_team > 0 ? o.validate_rows_per_team : !host && ci > 64 ? 8 : 64);
  const int per_lane = o.validate_peers_per_lane > 0 ? o.validate_peers_per_lane : rows < ci ? 4 : 8;
  const auto threads_max = [&](int lanes) { return d.validate_threads_max[log2_exact(lanes)]; };
  const int max_lanes = std::min(rows < ci ? 64 : 4, std::min(d.vector_length_max, 64));
  int lanes = 1;
  while (!host && lanes * per_lane < ci && (rows < ci || ci > 2 * per_lane) && 2 * lanes <= max_lanes &&
         2 * lanes * rows <= d.validate_max_threads && threads_max(2 * lanes) >= rows)
    lanes *= 2;
  p.validate_vector_length = lanes;
  p.validate_rows_per_team = rows;
  p.validate_league = (ci + rows - 1) / rows;
  p.validate_team_size = host ? 1 : std::max(1, std::min(threads_max(lanes), rows));
  // One team of a thread a row lists the rows' plans from its registers (move_list.hpp); a row claim,
  // written by lane 0 alone, and read back ones cost more than apply() gains.
  p.listed_plans = !p.sorted_validation && p.validate_league == 1 && p.validate_team_size >= c && !s.claims;
  if (p.sorted_validation) {
    p.sort_teams = d.sort_teams;
    p.sort_team_size = host ? 1 : std::min(std::max(1, std::min(d.sort_team_max, 1024)), std::max(1, d.sort_chunk / 2));
  }
  // validate_and_apply(): on hosts every team or block would repeat the loads
  // of every row on the CPU. On GPUs one launch saves validate()'s ahead of
  // apply(), but its grid launches every work item of every row whether the
  // batch fills the row or not: the flat grid only while its blocks are at
  // most two waves (a partly filled batch then costs at most a wave of
  // deciding blocks more than it moves) or the capacity is 1 (always full),
  // the teams while they are one wave (below); else validate() and the
  // compact apply().
  const std::int64_t flat_blocks = p.work_items * ((s.longest_item + 128 * d.fused_flat_words * 16 - 1) /
                                                   (128 * std::int64_t(d.fused_flat_words) * 16));
  const bool flat_fits = c == 1 || (c <= 8 && flat_blocks <= 2 * (d.concurrency / 2 / 128));
  // One launch decides every row in each of its teams or blocks: the teams on GPUs (each compares its row
  // with every live one), the other designs up to 64 commands. Where validate() sorts, the teams by default
  // up to 512 commands while a wave holds teams of 128 (a full batch: 4 rows a thread to compare); at 1024
  // and more a full batch lost to two launches (perf_tests/RESULTS.md).
  const bool large = c > max_capacity;
  const int team_threads = std::min(d.fused_team_max, p.apply_team_size);
  const bool sorted_teams_fit = team_threads >= 128 && c <= 512 && p.work_items <= d.concurrency / team_threads;
  const bool beyond_teams = host ? large : c > pairs_capacity(o, host) && !sorted_teams_fit;
  const FusedDesign automatic = host || beyond_teams     ? FusedDesign::two_launches
                                : prefer_persistent      ? FusedDesign::persistent
                                : d.kokkos4 && flat_fits ? FusedDesign::flat_grid
                                                         : FusedDesign::teams;
  const bool chosen = options.validate_and_apply != FusedDesign::automatic;
  const FusedDesign design = chosen ? options.validate_and_apply : automatic;
  p.validate_and_apply = FusedDesign::two_launches;
  // Where validate() sorts and the automatic design takes validate()'s launches and the compact apply() (which
  // reads the move list alone: the other designs read every plan and would move the rows again), the first
  // launch moves a batch of few live work items itself (fused_first_kernel.hpp): a wave of apply()'s teams,
  // four an SM (their 80-106 registers a thread), whose rows past the count cost a store each.
  if (p.sorted_validation && !chosen && automatic == FusedDesign::two_launches && p.apply == ApplyDesign::compact &&
      !s.claims && o.fused_first_units != -1 && (o.fused_first_units > 0 || !host)) {
    p.fused_first_units =
        o.fused_first_units > 0 ? o.fused_first_units : std::max<std::int64_t>(1, sms * fused_first_teams_per_sm);
    p.fused_team_size = host ? 1 : std::max(1, team_threads);
  }
  // One launch decides a row in each of its blocks: no block could claim its rows for the others.
  if ((beyond_teams && (host || design != FusedDesign::teams)) || s.claims) return p;
  if (design == FusedDesign::persistent) {
    if (persistent_fits) p.validate_and_apply = FusedDesign::persistent;
  } else if (design == FusedDesign::teams) {
    // A thread per command row in the load phase up to 128 commands (hosts' teams of one have too few: two
    // launches).
    // Above 128 commands teams of apply's threads (at least 128), each thread comparing several rows:
    // at 256 commands teams of 256 threads were 2-3 µs slower than teams of 128 (perf_tests/RESULTS.md).
    const int threads = team_threads;
    int fused = c <= 128 ? (d.fused_team_max >= c ? std::max<int>(static_cast<int>(c), threads) : 0)
                         : (threads >= 128 ? threads : 0);
    // Past about one wave every wave pays the validation again: above 128 commands teams of 64 threads where a
    // wave holds those (decode-64KiB's rows at 256 commands, perf_tests/RESULTS.md), else two launches, unless
    // asked for.
    if (fused > 0 && p.work_items > d.concurrency / fused)
      fused = c > 128 && fused > 64 && p.work_items <= d.concurrency / 64 ? 64 : chosen ? fused : 0;
    if (fused > 0) {
      p.validate_and_apply = FusedDesign::teams;
      p.fused_team_size = fused;
    }
  } else if (design == FusedDesign::flat_grid && !large) {
    // Blocks of 128 threads (256 was level, 512 slower) moving 4 words each a
    // round (2 were 20-40% slower on rows of tens of MiB: fewer bytes in
    // flight); hosts: a team of one per work item.
    const int block = host ? 1 : std::min(o.fused_block > 0 ? o.fused_block : 128, d.fused_flat_team_max);
    const std::int64_t chunk = host ? (s.longest_item + 15) / 16 * 16 : std::int64_t(block) * d.fused_flat_words * 16;
    const auto chunk_shift = [&](int rounds) {
      std::int32_t shift = 0;
      while ((chunk * rounds << shift) < s.longest_item) ++shift;
      return shift;
    };
    // A grid of one round a block between one and two waves of resident blocks
    // leaves most SMs idle in its second: two rounds make it one wave (the
    // launch bounds hold 1024 threads an SM, half the device's concurrency).
    const std::int64_t blocks = p.work_items << chunk_shift(1);
    const std::int64_t resident = d.concurrency / 2 / block;
    const int rounds = host                                          ? 1
                       : o.fused_rounds > 0                          ? o.fused_rounds
                       : blocks > resident && blocks <= 2 * resident ? 2
                                                                     : 1;
    const std::int32_t shift = chunk_shift(rounds);
    // A GPU block needs a thread per edge byte of its chunk (fewer than 32).
    if ((host || block >= 32) && p.work_items <= (std::numeric_limits<std::int32_t>::max() >> shift)) {
      p.validate_and_apply = FusedDesign::flat_grid;
      p.fused_block = block;
      p.fused_blocks = p.work_items << shift;
      p.fused_chunk_bytes = static_cast<int>(chunk);
      p.fused_chunk_shift = shift;
      p.fused_rounds = rounds;
      p.fused_words = d.fused_flat_words;
    }
  }
  return p;
}

}  // namespace statexfer::impl

#endif
