#ifndef STATEXFER_SIM_LIMIT_HPP
#define STATEXFER_SIM_LIMIT_HPP

// The physical limit of the state moves: the bytes a batch moves by kind of
// copy, and the rates at which this device moves each kind (probed at
// start-up, rate_probe.hpp): the least time the batch's bytes can take.

#include <algorithm>
#include <cstdint>

namespace statexfer::sim {

/// The start-up probe's bytes where --probe-mib is -1 (the default). GPUs:
/// 256 MiB, past their L2 as the tens of MiB of a step's rows are. Hosts: a
/// full batch's rows (`capacity` x `row_bytes`), between 1 and 64 MiB, so
/// that the probe's buffers sit where a step's rows do: small rows in the
/// caches (the model has just written them), where a DRAM-sized probe's rate
/// is one a step can beat, large ones in DRAM.
inline std::int64_t default_probe_bytes(bool gpu, std::int64_t capacity, std::int64_t row_bytes) {
  constexpr std::int64_t mib = std::int64_t(1) << 20;
  if (gpu) return 256 * mib;
  const std::int64_t batch = row_bytes > 0 && capacity > 64 * mib / row_bytes ? 64 * mib : capacity * row_bytes;
  return std::clamp(batch, mib, 64 * mib);
}

/// Timed repetitions of a probe of `bytes`: 4 for 256 MiB and more, up to 32
/// for smaller ones, whose short copies vary more with the host's load.
inline int probe_repetitions(std::int64_t bytes) {
  return static_cast<int>(bytes > 0 ? std::clamp<std::int64_t>((std::int64_t(1) << 30) / bytes, 4, 32) : 4);
}

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
  int repetitions = 0;           ///< timed repetitions of each (the best counts)
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
