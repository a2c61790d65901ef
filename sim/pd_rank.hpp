#ifndef STATEXFER_SIM_PD_RANK_HPP
#define STATEXFER_SIM_PD_RANK_HPP

// One rank of the prefill or the decode instance under --pd (pd.hpp). Every
// step: the decode group picks the requests it pulls (those its own prefix
// cache does not hold, refused ones first) and broadcasts them; the prefill
// group prefills them (restoring and snapshotting its prefix cache) and
// exports their rows into slots 0..n-1; the WireTransport moves the records;
// the decode group imports them (a fault injected on the wire or in the
// command first), combines the codes, re-queues what was refused, restores
// its own hits, decodes, and snapshots what it received and completed.
// pd_run.cpp: set-up, the steps, the prefill; pd_decode.cpp: the decode, the
// faults, the bandwidth measurement and the totals.

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <statexfer/statexfer.hpp>

#include "options.hpp"
#include "pd.hpp"
#include "pd_cache.hpp"
#include "pd_side.hpp"
#include "workload.hpp"

namespace statexfer::sim {

/// A state of one request's token prefix at an endpoint: its keys and seed.
struct PdState {
  std::int64_t endpoint = 0, key = 0;
  PrefixKey prefix;
  std::uint64_t seed = 0;
};
PdState state_at(const Workload& w, std::int64_t request, std::int64_t endpoint);

#ifdef STATEXFER_HAVE_NCCL
/// std::runtime_error naming the call and NCCL's message unless `r` is ncclSuccess.
void nccl_check(ncclResult_t r, const char* call);
#endif

class PdRank {
 public:
  using Exec = Kokkos::DefaultExecutionSpace;

  PdRank(const Options& o, const Workload& w, MPI_Comm world);
  ~PdRank();
  PdRank(const PdRank&) = delete;
  PdRank& operator=(const PdRank&) = delete;

  /// The whole run; then the totals, valid on world rank 0.
  void run();
  const PdStats& totals() const { return totals_; }
  /// Every fault's outcome (every rank: the decode group's view).
  const std::vector<PdFault>& faults() const { return faults_; }
  const std::string& description() const { return description_; }
  statexfer::TransportPath path() const { return transport_->path(); }
  int world_rank() const { return world_rank_; }

 private:
  bool verify() const { return o_.cfg.verify; }
  const RequestSpec& spec(std::int64_t r) const { return w_.requests[static_cast<std::size_t>(r)]; }
  bool refused_once(std::int64_t r) const;
  std::vector<long long> decide();
  void prefill(const std::vector<std::int64_t>& pull);
  void decode(const std::vector<std::int64_t>& pull, const std::vector<std::int64_t>& local);
  void import(const std::vector<std::int64_t>& pull, std::vector<std::int64_t>& served);
  void inject(const PdFault& f, std::int64_t slot, std::int64_t request, std::int64_t& key);
  /// Snapshots of the served slots' current states (at endpoint_of(k)) into this side's cache.
  void snapshot(PdCache& cache, const std::vector<std::int64_t>& slots, const std::vector<PdState>& states,
                std::int64_t& count);
  /// The model reaches `st` in slot `slot`: its live row and KV pages.
  void model_write(std::int64_t slot, const PdState& st);
  void check_row(std::int64_t row, const PdState& st);
  std::vector<std::int32_t> exchange_codes(std::int64_t n) const;
  void expect_zero(const std::vector<std::int32_t>& codes, const char* what);
  void measure_plain();
  void gather();

  const Options& o_;
  const Workload& w_;
  const PdConfig& cfg_;
  MPI_Comm world_, group_ = MPI_COMM_NULL;
  int world_rank_ = 0, p_ = 1, d_ = 1, me_ = 0, tp_ = 1;
  bool prefill_ = true;
  std::int64_t C_;
  statexfer::ModelLayout model_;
  std::string description_;
  std::unique_ptr<PdSide<Exec>> side_;
  statexfer::StateCommands<Exec> xcmds_;
  std::unique_ptr<statexfer::CommandBatch<Exec>> xbatch_;
  std::vector<statexfer::WireBuffer<Exec>> wires_;
  std::unique_ptr<statexfer::PreparedExport<Exec>> exporter_;
  std::unique_ptr<statexfer::PreparedImport<Exec>> importer_;
  std::unique_ptr<statexfer::ErrorCombiner<Exec>> xcombiner_;
  std::unique_ptr<statexfer::WireTransport<Exec>> transport_;
#ifdef STATEXFER_HAVE_NCCL
  ncclComm_t nccl_ = nullptr;  ///< --pd-transport nccl: every rank of the world, one GPU each (the transport's)
#endif
  PdCache pcache_, dcache_;
  std::deque<std::int64_t> pending_;
  std::vector<PdFault> faults_;
  PdStats stats_, totals_;
};

}  // namespace statexfer::sim

#endif
