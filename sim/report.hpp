#ifndef STATEXFER_SIM_REPORT_HPP
#define STATEXFER_SIM_REPORT_HPP

// Output: the terminal progress bar, the summary, the JSON report and the plot.

#include <chrono>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "bound.hpp"
#include "sim_config.hpp"
#include "stats.hpp"
#include "workload.hpp"

namespace statexfer::sim {

/// A one-line progress bar on a terminal, redrawn at most ten times a second.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled) {}
  void update(const Stats& st);
  void finish();

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
};

struct RunInfo {
  SimConfig config;
  SyntheticOptions synthetic;
  const Workload* workload = nullptr;
  std::string kokkos;      ///< backend and concurrency
  std::int64_t width = 0;  ///< page-table width W
  std::vector<Fault> faults;
  std::string model;  ///< --model (empty: none)
  ReuseBound bound;   ///< the attention-only reuse bound (block-hashed traces)
};

/// The human-readable summary (printed by rank 0).
void print_summary(std::FILE* out, const Stats& st, const RunInfo& info);
nlohmann::json report_json(const Stats& st, const RunInfo& info);
/// Plot transfer time per step into `png` with sim/plot_steps.py (false
/// and a warning when no Python with matplotlib is found).
bool plot_steps(const Stats& st, const std::string& png, const std::string& script);

}  // namespace statexfer::sim

#endif
