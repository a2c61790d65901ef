#ifndef STATEXFER_SIM_REPLICA_HPP
#define STATEXFER_SIM_REPLICA_HPP

// The host replica of one rank's state (--verify): plain host copies of the
// pool, the host tier, the caches, the request state, the state rows and the
// sampler's accepted counts. Every step the verifier applies to it what the
// device should have done: the transfer as the contract's oracle
// (test_common/oracle.hpp) computes it (remapping commits swap its state
// rows), and the model's fill jobs.

#include <cstdint>
#include <vector>

#include <test_common/oracle.hpp>

#include "content.hpp"
#include "geometry.hpp"
#include "state_rows.hpp"

namespace statexfer::sim {

class HostReplica {
 public:
  explicit HostReplica(const Geometry& geometry);

  const test::ContractOracle& oracle() const { return oracle_; }
  /// The replica as the oracle reads and writes it, with these page tables
  /// ([C, W]) and accepted counts ([C]; null: the replica's own).
  test::OracleMemory memory(const std::int32_t* tables, const std::int32_t* draft_tables,
                            const std::int32_t* accepted = nullptr);

  /// The model's writes (the same jobs the device kernel runs) and the sampler's counts.
  void run_jobs(const std::vector<FillJob>& jobs);
  void set_accepted(const std::vector<std::int32_t>& accepted) { accepted_ = accepted; }
  const std::vector<std::int32_t>& accepted() const { return accepted_; }

  /// The state rows as the oracle left them.
  const HostStateRows& state_rows() const { return state_rows_; }
  /// One int64 of a row of the pool (`host`: of the host tier) at byte `offset`.
  std::int64_t word(bool host, std::int64_t row, std::int64_t offset) const;
  void set_word(bool host, std::int64_t row, std::int64_t offset, std::int64_t value);

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
  HostStateRows state_rows_;                    // live rows, position rows
  std::vector<std::int32_t> accepted_;          // [C]
};

}  // namespace statexfer::sim

#endif
