#ifndef STATEXFER_HOST_TIER_HPP
#define STATEXFER_HOST_TIER_HPP

// A second tier of state rows in host memory (docs/CONTRACT.md §12): snapshots
// too many for the device pool are offloaded to it and onloaded or restored
// from it by the same validated, capturable batches as the device commands.

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <statexfer/layout.hpp>

namespace statexfer {

namespace impl {
template <class ExecutionSpace>
struct HostTierMemorySpace {
  // Host backends: a second pool in host memory, through the same code paths.
  using type = typename ExecutionSpace::memory_space;
};
#ifdef KOKKOS_ENABLE_CUDA
template <>
struct HostTierMemorySpace<Kokkos::Cuda> {
  // Pinned host memory: the kernels reach it through its device-accessible address.
  using type = Kokkos::CudaHostPinnedSpace;
};
#endif
#ifdef KOKKOS_ENABLE_HIP
template <>
struct HostTierMemorySpace<Kokkos::HIP> {
  // The same on HIP. Kokkos allocates it non-coherent: a kernel's writes reach
  // the host by the kernel's end, so they are visible after the fence that follows.
  using type = Kokkos::HIPHostPinnedSpace;
};
#endif
}  // namespace impl

/// Where a host tier's rows live for transfers on `ExecutionSpace`: pinned host
/// memory on GPUs (Kokkos::CudaHostPinnedSpace, Kokkos::HIPHostPinnedSpace), the
/// execution space's memory elsewhere.
template <class ExecutionSpace>
using host_tier_memory_space_t = typename impl::HostTierMemorySpace<ExecutionSpace>::type;

/// Host rows `[rows, row_bytes]` plus the usable row count `int64[1]` (in the
/// execution space's memory, read on the device at every run like the pool's
/// memory capacity). Row 0 is the tier's null row; usable host rows are
/// 1..HOST_SLOTS-1 with HOST_SLOTS = min(capacity[0], rows). A
/// default-constructed tier is empty: no host tier.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class HostTier {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = host_tier_memory_space_t<ExecutionSpace>;
  using backing_view = Kokkos::View<std::uint8_t**, Kokkos::LayoutRight, memory_space>;
  using capacity_view = Kokkos::View<std::int64_t*, typename ExecutionSpace::memory_space>;

  HostTier() = default;

  /// Allocate `rows` zeroed host rows of `layout.row_bytes()` and a capacity of {rows}.
  HostTier(StateLayout layout, std::int64_t rows) : layout_(std::move(layout)) {
    if (rows < 0) throw std::invalid_argument("statexfer::HostTier: rows must be >= 0, got " + std::to_string(rows));
    const ExecutionSpace exec;
    backing_ = backing_view(Kokkos::view_alloc(exec, "statexfer::host_tier_backing"), rows, layout_.row_bytes());
    capacity_ = capacity_view(Kokkos::view_alloc(exec, "statexfer::host_tier_capacity"), 1);
    exec.fence();
    auto host = Kokkos::create_mirror_view(capacity_);
    host(0) = rows;
    Kokkos::deep_copy(capacity_, host);
  }

  /// Wrap the caller's host rows and capacity (no copy). The backing's extent is
  /// what counts: a capacity above it is clamped on the device.
  HostTier(StateLayout layout, backing_view backing, capacity_view capacity)
      : layout_(std::move(layout)), backing_(backing), capacity_(capacity) {
    if (backing_.extent(1) != static_cast<std::size_t>(layout_.row_bytes()))
      throw std::invalid_argument("statexfer::HostTier: backing has " + std::to_string(backing_.extent(1)) +
                                  " bytes per row but the layout has row_bytes " + std::to_string(layout_.row_bytes()));
    if (capacity_.extent(0) != 1)
      throw std::invalid_argument("statexfer::HostTier: capacity must be int64[1], got int64[" +
                                  std::to_string(capacity_.extent(0)) + "]");
  }

  /// No tier: nothing was allocated or wrapped.
  bool empty() const noexcept {
    return backing_.data() == nullptr && capacity_.data() == nullptr && backing_.extent(0) == 0 &&
           capacity_.extent(0) == 0;
  }
  const StateLayout& layout() const noexcept { return layout_; }
  backing_view backing() const noexcept { return backing_; }
  capacity_view capacity() const noexcept { return capacity_; }
  std::int64_t rows() const noexcept { return static_cast<std::int64_t>(backing_.extent(0)); }
  std::int64_t row_bytes() const noexcept { return layout_.row_bytes(); }

 private:
  StateLayout layout_;
  backing_view backing_;
  capacity_view capacity_;
};

}  // namespace statexfer

#endif
