#ifndef STATEXFER_POOL_HPP
#define STATEXFER_POOL_HPP

// A pool of state rows: row 0 is the null row, live rows and snapshot rows follow.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <statexfer/layout.hpp>

namespace statexfer {

/// Byte rows `[rows, row_bytes]` in `ExecutionSpace`'s memory plus the device
/// memory capacity `int64[2]` = {SLOTS, PAGES}. Either allocates both (zeroed
/// rows, capacity {rows, pages}) or wraps the caller's Views (for example
/// unmanaged Views over memory an engine owns).
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class StatePool {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using backing_view = Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, memory_space>;
  using capacity_view = Kokkos::View<std::int64_t*, memory_space>;

  StatePool() = default;

  /// Allocate `rows` zeroed rows of `layout.row_bytes()` and a capacity of {rows, pages}.
  StatePool(StateLayout layout, std::int64_t rows, std::int64_t pages) : layout_(std::move(layout)) {
    if (rows < 0) throw std::invalid_argument("statexfer::StatePool: rows must be >= 0, got " + std::to_string(rows));
    if (pages < 0)
      throw std::invalid_argument("statexfer::StatePool: pages must be >= 0, got " + std::to_string(pages));
    const ExecutionSpace exec;  // initialised on this backend, not the default one
    backing_ = backing_view(Kokkos::view_alloc(exec, "statexfer::pool_backing"), rows, layout_.row_bytes());
    memory_capacity_ = capacity_view(Kokkos::view_alloc(exec, "statexfer::memory_capacity"), 2);
    exec.fence();
    auto host = Kokkos::create_mirror_view(memory_capacity_);
    host(0) = rows;
    host(1) = pages;
    Kokkos::deep_copy(memory_capacity_, host);
  }

  /// Wrap the caller's rows and memory capacity (no copy).
  StatePool(StateLayout layout, backing_view backing, capacity_view memory_capacity)
      : layout_(std::move(layout)), backing_(backing), memory_capacity_(memory_capacity) {
    if (backing_.extent(1) != static_cast<std::size_t>(layout_.row_bytes()))
      throw std::invalid_argument("statexfer::StatePool: backing has " + std::to_string(backing_.extent(1)) +
                                  " bytes per row but the layout has row_bytes " + std::to_string(layout_.row_bytes()));
    if (memory_capacity_.extent(0) != 2)
      throw std::invalid_argument("statexfer::StatePool: memory_capacity must be int64[2], got int64[" +
                                  std::to_string(memory_capacity_.extent(0)) + "]");
  }

  const StateLayout& layout() const noexcept { return layout_; }
  backing_view backing() const noexcept { return backing_; }
  capacity_view memory_capacity() const noexcept { return memory_capacity_; }
  std::int64_t rows() const noexcept { return static_cast<std::int64_t>(backing_.extent(0)); }
  std::int64_t row_bytes() const noexcept { return layout_.row_bytes(); }

  /// The bytes of region `name` in every row, `[rows, nbytes]` (a strided View of the backing).
  Kokkos::View<std::uint8_t**, Kokkos::LayoutStride, memory_space> region_bytes(std::string_view name) const {
    const Region& r = layout_.region(name);
    return Kokkos::subview(backing_, Kokkos::ALL(), std::make_pair(r.offset, r.offset + r.nbytes));
  }

 private:
  StateLayout layout_;
  backing_view backing_;
  capacity_view memory_capacity_;
};

}  // namespace statexfer

#endif
