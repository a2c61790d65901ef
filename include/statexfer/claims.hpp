#ifndef STATEXFER_CLAIMS_HPP
#define STATEXFER_CLAIMS_HPP

// Row claims (docs/CONTRACT.md §15): transfers over one pool and host tier that
// run on different instances (a step's batch on the model's stream, host-tier
// moves on a stream of their own) hold the rows their batch reads and writes
// from validate() to the end of apply(), so that the device refuses a command
// on a row another batch in flight still reads or writes, with code 7.

#include <Kokkos_Core.hpp>

#include <cstdint>

#include <statexfer/host_tier.hpp>
#include <statexfer/pool.hpp>

namespace statexfer {

/// One claim for every row of a pool and of its host tier, shared by the
/// transfers that name it in TransferConfig::claims. Entry `v` is device row
/// `v`, entry `rows() + h` host row `h`; 0 is free, `n > 0` is held by `n`
/// readers, -1 by a writer. A default-constructed RowClaims is empty: a
/// transfer with it claims nothing.
template <class ExecutionSpace = Kokkos::DefaultExecutionSpace>
class RowClaims {
 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using claims_view = Kokkos::View<std::int32_t*, memory_space>;

  RowClaims() = default;

  /// Every row of `pool` and of `host_tier` (none when it is empty) free.
  explicit RowClaims(const StatePool<ExecutionSpace>& pool,
                     const HostTier<ExecutionSpace>& host_tier = HostTier<ExecutionSpace>())
      : pool_data_(pool.backing().data()),
        host_data_(host_tier.empty() ? nullptr : host_tier.backing().data()),
        rows_(pool.rows()),
        host_rows_(host_tier.empty() ? 0 : host_tier.rows()) {
    const ExecutionSpace exec;
    claims_ =
        claims_view(Kokkos::view_alloc(exec, "statexfer::row_claims"), static_cast<std::size_t>(rows_ + host_rows_));
    exec.fence();
  }

  bool empty() const noexcept { return claims_.data() == nullptr; }
  /// The device rows and host rows it holds a claim for.
  std::int64_t rows() const noexcept { return rows_; }
  std::int64_t host_rows() const noexcept { return host_rows_; }
  /// The claims, `[rows() + host_rows()]` in the execution space's memory.
  const claims_view& claims() const noexcept { return claims_; }
  /// The pool and host-tier backings it was made for (a transfer over others refuses it).
  const void* pool_data() const noexcept { return pool_data_; }
  const void* host_data() const noexcept { return host_data_; }

 private:
  claims_view claims_;
  const void* pool_data_ = nullptr;
  const void* host_data_ = nullptr;
  std::int64_t rows_ = 0, host_rows_ = 0;
};

}  // namespace statexfer

#endif
