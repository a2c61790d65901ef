#ifndef STATEXFER_SIM_REPORT_FORMAT_HPP
#define STATEXFER_SIM_REPORT_FORMAT_HPP

// Number formats and summaries shared by the text summary and the JSON report.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

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

inline std::string us(double v) {
  char buf[32];
  if (v >= 1000)
    std::snprintf(buf, sizeof buf, "%.2f ms", v / 1000);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", v);
  return buf;
}

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
