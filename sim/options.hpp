#ifndef STATEXFER_SIM_OPTIONS_HPP
#define STATEXFER_SIM_OPTIONS_HPP

// statexfer-sim's command line: the options by group, their checks, and what
// they set. Parsed before MPI and Kokkos start (--help and bad arguments touch
// neither); Kokkos' own arguments (--kokkos-*) are taken out before.

#include <string>

#include "pd.hpp"
#include "sim_config.hpp"
#include "traces.hpp"
#include "workload.hpp"

namespace statexfer::sim {

struct Options {
  SimConfig cfg;
  PdConfig pd;  ///< --pd: prefill/decode disaggregation (pd.hpp)
  SyntheticOptions syn;
  std::string trace;  ///< --trace: replay this file instead of the synthetic workload
  TraceFormat trace_format = TraceFormat::automatic;
  bool requests_given = false;  ///< --requests beside --trace: its first N requests
  std::string dump_trace, json_path, plot_path;
  std::string model_name;  ///< --model (empty: none)
  bool quiet = false, progress_forced = false, no_progress = false;
};

/// Parses `argv` into `out`. Returns -1 when the simulation is to run, else
/// the exit status: 0 after --help, 2 after bad arguments (the message printed).
int parse_options(int argc, const char* const* argv, Options& out);

}  // namespace statexfer::sim

#endif
