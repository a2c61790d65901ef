#ifndef STATEXFER_SIM_REPORT_FORMAT_HPP
#define STATEXFER_SIM_REPORT_FORMAT_HPP

// Number formats and summaries shared by the text summary and the JSON report.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include <statexfer/commands.hpp>

#include "stats.hpp"

namespace statexfer::sim::report {

inline std::string grouped(std::int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return v < 0 ? "-" + out : out;
}

inline std::string bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

inline std::string pct(double num, double den) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", den > 0 ? 100.0 * num / den : 0.0);
  return buf;
}

struct Summary {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
inline Summary summarize(std::vector<float> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  auto at = [&](double q) {
    return static_cast<double>(v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))]);
  };
  s.p50 = at(0.5);
  s.p90 = at(0.9);
  s.p99 = at(0.99);
  s.max = v.back();
  return s;
}

/// The transfer times of the steps that had commands (the others launched none).
inline std::vector<float> transfer_times(const Stats& st) {
  std::vector<float> out;
  for (std::size_t i = 0; i < st.transfer_us.size(); ++i)
    if (st.step_commands[i] > 0) out.push_back(st.transfer_us[i]);
  return out;
}

/// The critical path against the limit over the steps with commands (the
/// others launch no transfer), and the tier stream's launches against theirs.
struct LimitFigures {
  std::int64_t steps = 0;
  Summary critical;       ///< the step's stream in its transfer, us per step
  double limit = 0;       ///< the limit's mean, us per step
  double efficiency = 0;  ///< total limit / total critical path (0: no probe)
  std::int64_t launches = 0;
  Summary tier;           ///< the tier stream, us per launch
  double tier_limit = 0;  ///< us per launch
  double tier_efficiency = 0;
};
inline LimitFigures limit_figures(const Stats& st) {
  LimitFigures f;
  std::vector<float> critical;
  double limit = 0, spent = 0;
  for (std::size_t i = 0; i < st.critical_us.size(); ++i)
    if (st.step_commands[i] > 0) {
      critical.push_back(st.critical_us[i]);
      limit += st.limit_us[i];
      spent += st.critical_us[i];
    }
  f.steps = static_cast<std::int64_t>(critical.size());
  f.critical = summarize(critical);
  f.limit = f.steps > 0 ? limit / static_cast<double>(f.steps) : 0;
  f.efficiency = spent > 0 ? limit / spent : 0;
  f.launches = static_cast<std::int64_t>(st.tier_us.size());
  f.tier = summarize(st.tier_us);
  const double tier_limit = std::accumulate(st.tier_limit_us.begin(), st.tier_limit_us.end(), 0.0);
  const double tier_spent = std::accumulate(st.tier_us.begin(), st.tier_us.end(), 0.0);
  f.tier_limit = f.launches > 0 ? tier_limit / static_cast<double>(f.launches) : 0;
  f.tier_efficiency = tier_spent > 0 ? tier_limit / tier_spent : 0;
  return f;
}

/// A rate in bytes per second: "52.3 GB/s", "3.10 TB/s".
inline std::string rate(double bytes_per_s) {
  char buf[32];
  if (bytes_per_s >= 1e12)
    std::snprintf(buf, sizeof buf, "%.2f TB/s", bytes_per_s / 1e12);
  else
    std::snprintf(buf, sizeof buf, "%.1f GB/s", bytes_per_s / 1e9);
  return buf;
}

inline std::string us(double v) {
  char buf[32];
  if (v >= 1000)
    std::snprintf(buf, sizeof buf, "%.2f ms", v / 1000);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", v);
  return buf;
}

/// The name of a code slot (stats.hpp): the library's for 0..7, "other" after.
inline const char* code_name(int slot) { return slot < code_slots - 1 ? statexfer::command_error_name(slot) : "other"; }

inline std::int64_t total_commands(const Stats& st) { return std::accumulate(st.issued.begin(), st.issued.end(), 0LL); }

/// Two decimals: the bound is compared to 0.01%.
inline std::string pct2(double num, double den) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.2f%%", den > 0 ? 100.0 * num / den : 0.0);
  return buf;
}
inline std::string pct2(double num, std::int64_t den) { return pct2(num, static_cast<double>(den)); }

inline std::string ms(double v) {
  char buf[32];
  if (v >= 10000)
    std::snprintf(buf, sizeof buf, "%.1f s", v / 1000);
  else
    std::snprintf(buf, sizeof buf, "%.1f ms", v);
  return buf;
}

inline std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace statexfer::sim::report

#endif
