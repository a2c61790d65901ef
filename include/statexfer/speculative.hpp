#ifndef STATEXFER_SPECULATIVE_HPP
#define STATEXFER_SPECULATIVE_HPP

// Speculative decoding (docs/CONTRACT.md §13): the states a verify step leaves
// after each drafted position, and the commit that makes the accepted
// position's state a request slot's live state, chosen on the device from the
// sampler's accepted count.

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace statexfer {

/// Columns of the state rows (TransferConfig::state_rows, int64
/// [C, state_row_columns]): one record per request slot, column 0 its live
/// pool row, columns 1..max_speculative_positions the rows of a verify step's
/// drafted positions (docs/CONTRACT.md §13).
inline constexpr int state_row_columns = 8;

/// Drafted positions a verify step may keep a state for: columns 1..7 of the
/// state rows (column 0 the live row) name their rows.
inline constexpr int max_speculative_positions = state_row_columns - 1;

/// How a commit makes the accepted position's state live (docs/CONTRACT.md §13).
enum class CommitMove : std::uint8_t {
  /// Swap the live row and the accepted position's row in the slot's state
  /// rows: no state bytes move. The caller's model finds the live row in
  /// state_rows[slot][0] on the device, and the host follows the same swap
  /// once it knows the accepted count.
  remap,
  /// Copy the accepted position's row into the live row: the slot's rows keep
  /// their roles, at the cost of one row copy per commit.
  copy,
};

/// "remap", "copy".
const char* to_string(CommitMove move) noexcept;

/// What a transfer needs for commits. `positions == 0` (the default): no
/// speculative decoding, operation 5 is an unknown operation (code 1).
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
struct SpeculativeConfig {
  using accepted_view = Kokkos::View<const std::int32_t*, typename ExecutionSpace::memory_space>;

  /// K, the drafted positions of a verify step: 0, or 1 to max_speculative_positions.
  /// state_rows[slot][j] (1 <= j <= K) is the row holding the state after the
  /// slot's first j + 1 verified tokens; the live row holds the state after the first.
  int positions = 0;
  /// int32 [C], per request slot: the drafts the sampler accepted (0..K),
  /// written on the device and read by validate() at every run.
  accepted_view accepted;
  CommitMove move = CommitMove::remap;
};

}  // namespace statexfer

#endif
