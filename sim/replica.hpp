#ifndef STATEXFER_SIM_REPLICA_HPP
#define STATEXFER_SIM_REPLICA_HPP

// The host replica of one rank's state (--verify): plain host copies of the
// pool, the host tier, the caches and the request state. Every step the verifier applies to it
// what the device should have done: the transfer as the contract's oracle
// (test_common/oracle.hpp) computes it, and the model's fill jobs.

#include <cstdint>
#include <vector>

#include <test_common/oracle.hpp>

#include "content.hpp"
#include "geometry.hpp"

namespace statexfer::sim {

class HostReplica {
 public:
  explicit HostReplica(const Geometry& geometry);

  const test::ContractOracle& oracle() const { return oracle_; }
  /// The replica as the oracle reads and writes it, with these page tables ([C, W]).
  test::OracleMemory memory(const std::int32_t* tables, const std::int32_t* draft_tables);

  /// The model's writes (the same jobs the device kernel runs).
  void run_jobs(const std::vector<FillJob>& jobs);

  const std::vector<std::uint8_t>& pool() const { return pool_; }
  /// The host tier's rows, [host rows, row bytes] (empty without one).
  const std::vector<std::uint8_t>& host() const { return host_; }
  /// Cache `i`: the KV caches, then the draft caches.
  const std::vector<std::uint8_t>& cache(std::size_t i) const { return caches_[i]; }
  std::int64_t cache_page_bytes(std::size_t i) const { return oracle_.cache_page_bytes(i); }
  const std::vector<std::int64_t>& request_consumed() const { return request_consumed_; }

 private:
  std::uint8_t* target(std::int32_t t);

  const Geometry& g_;
  test::ContractOracle oracle_;
  std::vector<std::uint8_t> pool_;
  std::vector<std::uint8_t> host_;
  std::vector<std::vector<std::uint8_t>> caches_;
  std::vector<std::int64_t> request_consumed_;  // column 0 of the [C, 1] request state
  std::vector<std::int64_t> state_rows_;        // column 0 of the state rows
};

}  // namespace statexfer::sim

#endif
