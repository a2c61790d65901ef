#ifndef STATEXFER_SIM_STATE_ROWS_HPP
#define STATEXFER_SIM_STATE_ROWS_HPP

// The state rows on the host: the scheduler's mirror of the device's and the
// replica's, [C, statexfer::state_row_columns] int64 row-major as the oracle
// and the device's StateRows hold them.

#include <cstdint>
#include <vector>

#include <statexfer/speculative.hpp>

namespace statexfer::sim {

/// One record per request slot: column 0 its live row, columns 1..K its
/// position rows (docs/CONTRACT.md §13), the rest 0.
class HostStateRows {
 public:
  static constexpr std::int64_t columns = statexfer::state_row_columns;

  HostStateRows() = default;
  explicit HostStateRows(std::int64_t capacity) : cells_(static_cast<std::size_t>(capacity * columns), 0) {}

  std::int64_t capacity() const { return static_cast<std::int64_t>(cells_.size()) / columns; }
  std::int64_t& operator()(std::int64_t slot, std::int64_t column) { return cells_[at(slot, column)]; }
  std::int64_t operator()(std::int64_t slot, std::int64_t column) const { return cells_[at(slot, column)]; }
  std::int64_t live(std::int64_t slot) const { return (*this)(slot, 0); }

  /// The cells, row-major (capacity() x columns).
  std::int64_t* data() { return cells_.data(); }
  const std::int64_t* data() const { return cells_.data(); }

  bool operator==(const HostStateRows& o) const { return cells_ == o.cells_; }
  bool operator!=(const HostStateRows& o) const { return !(*this == o); }

 private:
  static std::size_t at(std::int64_t slot, std::int64_t column) {
    return static_cast<std::size_t>(slot * columns + column);
  }
  std::vector<std::int64_t> cells_;
};

}  // namespace statexfer::sim

#endif
