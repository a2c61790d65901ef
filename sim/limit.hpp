#ifndef STATEXFER_SIM_LIMIT_HPP
#define STATEXFER_SIM_LIMIT_HPP

// The physical limit of the state moves: the bytes a batch moves by kind of
// copy, and the rates at which this device moves each kind (probed at
// start-up, rate_probe.hpp): the least time the batch's bytes can take.

#include <cstdint>

namespace statexfer::sim {

/// Bytes of applied commands, by how they move.
struct MovedBytes {
  std::int64_t copy = 0;       ///< device to device (snapshots, restores, copying commits: rows and pages)
  std::int64_t fill = 0;       ///< written without a source (resets)
  std::int64_t to_device = 0;  ///< host tier to device (onloads, restores from host: rows and pages)
  std::int64_t to_host = 0;    ///< device to host tier (offloads)

  MovedBytes& operator+=(const MovedBytes& o) {
    copy += o.copy, fill += o.fill, to_device += o.to_device, to_host += o.to_host;
    return *this;
  }
  std::int64_t total() const { return copy + fill + to_device + to_host; }
};

/// Bytes per second of each kind of move on this device (0: not measured).
struct CopyRates {
  std::int64_t probe_bytes = 0;  ///< bytes of each probe (0: not probed)
  double copy = 0, fill = 0, to_device = 0, to_host = 0;

  bool measured() const { return probe_bytes > 0 && copy > 0 && fill > 0 && to_device > 0 && to_host > 0; }
  /// The least seconds `b` can take: each kind at its rate, one after the other.
  double seconds(const MovedBytes& b) const {
    if (!measured()) return 0;
    return static_cast<double>(b.copy) / copy + static_cast<double>(b.fill) / fill +
           static_cast<double>(b.to_device) / to_device + static_cast<double>(b.to_host) / to_host;
  }
};

}  // namespace statexfer::sim

#endif
