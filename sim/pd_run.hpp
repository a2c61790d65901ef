#ifndef STATEXFER_SIM_PD_RUN_HPP
#define STATEXFER_SIM_PD_RUN_HPP

// statexfer-sim --pd: the run on this rank, its verdict and its report.

#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "options.hpp"
#include "pd.hpp"
#include "workload.hpp"

namespace statexfer::sim {

struct PdOutcome {
  PdStats stats;  ///< the totals (world rank 0)
  std::vector<PdFault> faults;
  std::string model, path, kokkos;
  bool ok = false;
};

/// The run on this rank of MPI_COMM_WORLD (P + D ranks); the outcome's totals are world rank 0's.
PdOutcome run_pd(const Options& o, const Workload& w, MPI_Comm world);

/// Every imported row the oracle's, every request served, no code no fault
/// explains, every fault refused on every decode rank, nothing written or published and its
/// request moved again; the failures printed to `err`.
bool pd_verdict(const PdOutcome& out, std::FILE* err);

void print_pd_summary(std::FILE* f, const Options& o, const PdOutcome& out);
nlohmann::json pd_report_json(const Options& o, const PdOutcome& out);

}  // namespace statexfer::sim

#endif
