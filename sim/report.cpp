#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <vector>

#include <statexfer/commands.hpp>

namespace statexfer::sim {
namespace {

std::string grouped(std::int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return buf;
}

std::string pct(double num, double den) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", den > 0 ? 100.0 * num / den : 0.0);
  return buf;
}

struct Summary {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Summary summarize(std::vector<float> v) {
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

std::string us(double v) {
  char buf[32];
  if (v >= 1000)
    std::snprintf(buf, sizeof buf, "%.2f ms", v / 1000);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", v);
  return buf;
}

std::int64_t total_commands(const Stats& st) { return std::accumulate(st.issued.begin(), st.issued.end(), 0LL); }

}  // namespace

void ProgressBar::update(const Stats& st) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(100) && st.completed < st.requests) return;
  last_ = now;
  drawn_ = true;
  const int width = 30;
  const double f = st.requests > 0 ? static_cast<double>(st.completed) / static_cast<double>(st.requests) : 1.0;
  const int fill = static_cast<int>(f * width);
  std::string bar(static_cast<std::size_t>(fill), '#');
  bar += std::string(static_cast<std::size_t>(width - fill), '.');
  std::printf("\r  [%s] %5.1f%%  %s/%s requests  step %s  hits %s  ", bar.c_str(), 100 * f,
              grouped(st.completed).c_str(), grouped(st.requests).c_str(), grouped(st.steps).c_str(),
              pct(static_cast<double>(st.hits), static_cast<double>(st.admitted)).c_str());
  std::fflush(stdout);
}

void ProgressBar::finish() {
  if (!enabled_ || !drawn_) return;
  std::printf("\r%*s\r", 100, "");
  std::fflush(stdout);
}

void print_summary(std::FILE* out, const Stats& st, const RunInfo& info) {
  const SimConfig& c = info.config;
  const Workload& w = *info.workload;
  const Summary tr = summarize(st.transfer_us), sp = summarize(st.step_us);
  const std::int64_t cmds = total_commands(st);
  const double moved = static_cast<double>(st.total_bytes_moved);
  std::fprintf(out, "statexfer-sim: %s, %d rank%s (combiner %s)%s\n", info.kokkos.c_str(), st.ranks,
               st.ranks == 1 ? "" : "s", st.combiner.c_str(), st.graphs ? ", CUDA graphs" : "");
  if (w.source == "synthetic") {
    const SyntheticOptions& s = info.synthetic;
    std::fprintf(
        out,
        "  workload     synthetic, seed %llu: %s requests, %lld prefixes (Zipf %.2f) of %lld-%lld tokens, input "
        "%lld-%lld, output %lld-%lld, follow-ups %.0f%%\n",
        static_cast<unsigned long long>(s.seed), grouped(st.requests).c_str(), static_cast<long long>(s.prefixes),
        s.zipf, static_cast<long long>(s.prefix_len.min), static_cast<long long>(s.prefix_len.max),
        static_cast<long long>(s.input_len.min), static_cast<long long>(s.input_len.max),
        static_cast<long long>(s.output_len.min), static_cast<long long>(s.output_len.max), 100 * s.followup);
  } else {
    std::fprintf(out, "  workload     trace %s: %s requests\n", w.source.c_str(), grouped(st.requests).c_str());
  }
  std::fprintf(out,
               "  pool         %s rows x %s B per rank (%lld live, %lld snapshot), %lld KV + %lld draft planes, %lld "
               "tokens/page, %s pages, %s of device memory per rank\n",
               grouped(st.rows).c_str(), grouped(st.row_bytes).c_str(), static_cast<long long>(c.capacity),
               static_cast<long long>(c.snapshot_rows), static_cast<long long>(c.kv_planes),
               static_cast<long long>(c.draft_planes), static_cast<long long>(c.page_tokens), grouped(st.pages).c_str(),
               bytes(static_cast<double>(st.memory_bytes)).c_str());
  std::fprintf(out, "  requests     %s done in %s steps, %.2f s: %s requests/s\n", grouped(st.completed).c_str(),
               grouped(st.steps).c_str(), st.wall_s,
               grouped(std::llround(st.completed / std::max(st.wall_s, 1e-9))).c_str());
  std::fprintf(out, "  tokens       %s prompt (%s restored, %s), %s prefill computed, %s decoded\n",
               grouped(st.prompt_tokens).c_str(), grouped(st.restored_tokens).c_str(),
               pct(static_cast<double>(st.restored_tokens), static_cast<double>(st.prompt_tokens)).c_str(),
               grouped(st.prefill_tokens).c_str(), grouped(st.decode_tokens).c_str());
  std::fprintf(out, "  prefix cache hits %s of %s admissions (%s); %s published, %s evicted, %s reserved\n",
               grouped(st.hits).c_str(), grouped(st.admitted).c_str(),
               pct(static_cast<double>(st.hits), static_cast<double>(st.admitted)).c_str(),
               grouped(st.cache_published).c_str(), grouped(st.cache_evictions).c_str(),
               grouped(st.cache_reservations).c_str());
  if (c.host_snapshot_rows > 0)
    std::fprintf(out,
                 "  host tier    %s rows (%s of host memory per rank): hits %s device + %s host; %s demoted "
                 "(offloads), %s promoted (onloads), %s restores from host; %s host evictions, %s published at end; "
                 "this rank %s to host, %s from host\n",
                 grouped(c.host_snapshot_rows).c_str(), bytes(static_cast<double>(st.host_memory_bytes)).c_str(),
                 grouped(st.device_hits).c_str(), grouped(st.host_hits).c_str(),
                 grouped(st.applied[kind_offload]).c_str(), grouped(st.applied[kind_onload]).c_str(),
                 grouped(st.host_restores).c_str(), grouped(st.host_evictions).c_str(),
                 grouped(st.host_published).c_str(), bytes(static_cast<double>(st.bytes_to_host)).c_str(),
                 bytes(static_cast<double>(st.bytes_from_host)).c_str());
  const std::string moves = c.host_snapshot_rows > 0 ? ", offload " + grouped(st.issued[kind_offload]) + ", onload " +
                                                           grouped(st.issued[kind_onload])
                                                     : "";
  std::fprintf(out,
               "  commands     %s: snapshot %s (%s checkpoint, %s completion), restore %s, reset %s%s; %s commands/s\n",
               grouped(cmds).c_str(), grouped(st.issued[kind_snapshot]).c_str(),
               grouped(st.checkpoint_snapshots).c_str(), grouped(st.completion_snapshots).c_str(),
               grouped(st.issued[kind_restore]).c_str(), grouped(st.issued[kind_reset]).c_str(), moves.c_str(),
               grouped(std::llround(cmds / std::max(st.wall_s, 1e-9))).c_str());
  std::string errs;
  for (int code = 0; code < 8; ++code) {
    if (st.errors[code] == 0 && code != 0) continue;
    if (!errs.empty()) errs += ", ";
    errs += std::string(code < 7 ? statexfer::command_error_name(code) : "other") + " " + grouped(st.errors[code]);
  }
  std::fprintf(out, "  errors       %s", errs.c_str());
  if (st.faults_injected > 0)
    std::fprintf(out, " (%s injected fault%s; %s refused on every rank, %s restores recomputed)",
                 grouped(st.faults_injected).c_str(), st.faults_injected == 1 ? "" : "s",
                 grouped(st.fault_commands_refused).c_str(), grouped(st.restore_fallbacks).c_str());
  std::fprintf(out, "\n");
  std::fprintf(out, "  bytes moved  %s (all ranks; this rank: rows %s, pages %s)\n", bytes(moved).c_str(),
               bytes(static_cast<double>(st.row_bytes_moved)).c_str(),
               bytes(static_cast<double>(st.page_bytes_moved)).c_str());
  std::fprintf(out,
               "  time/step    transfer (one rank: validate_and_apply; more: validate + combine + apply) mean %s, p50 "
               "%s, p99 %s, max %s; whole step mean %s, p99 %s\n",
               us(tr.mean).c_str(), us(tr.p50).c_str(), us(tr.p99).c_str(), us(tr.max).c_str(), us(sp.mean).c_str(),
               us(sp.p99).c_str());
  std::fprintf(
      out, "  bandwidth    %.2f GB/s through the transfers (%.2f s of %.2f s; model writes %.2f s, verify %.2f s)\n",
      st.transfer_s > 0 ? moved / st.transfer_s / 1e9 : 0.0, st.transfer_s, st.wall_s, st.model_s, st.verify_s);
  if (c.verify)
    std::fprintf(out,
                 "  verify       %s: %s steps checked against the contract's oracle (%s full cache comparisons)%s%s\n",
                 st.verify_ok ? "OK" : "FAILED", grouped(st.verify_steps).c_str(), grouped(st.verify_full).c_str(),
                 st.verify_ok ? "" : "\n               ", st.verify_ok ? "" : st.verify_message.c_str());
  else
    std::fprintf(out, "  verify       off (--verify checks every step against the contract's oracle)\n");
  if (!st.cross_rank_ok) std::fprintf(out, "  ranks        DIVERGED: the ranks ran different schedules\n");
  if (st.faults_missed > 0)
    std::fprintf(out, "  faults       %s requested fault%s found no command with a partial page\n",
                 grouped(st.faults_missed).c_str(), st.faults_missed == 1 ? "" : "s");
}

nlohmann::json report_json(const Stats& st, const RunInfo& info) {
  using nlohmann::json;
  const SimConfig& c = info.config;
  const Summary tr = summarize(st.transfer_us), sp = summarize(st.step_us);
  const std::int64_t cmds = total_commands(st);
  json j;
  j["format"] = "statexfer-sim/1";
  j["backend"] = info.kokkos;
  j["ranks"] = st.ranks;
  j["combiner"] = st.combiner;
  j["cuda_graphs"] = st.graphs;
  j["config"] = {{"capacity", c.capacity},
                 {"snapshot_rows", c.snapshot_rows},
                 {"page_tokens", c.page_tokens},
                 {"row_bytes", c.row_bytes},
                 {"kv_planes", c.kv_planes},
                 {"kv_token_bytes", c.kv_token_bytes},
                 {"draft_planes", c.draft_planes},
                 {"draft_token_bytes", c.draft_token_bytes},
                 {"scratch_bytes", c.scratch_bytes},
                 {"pages", st.pages},
                 {"page_table_width", st.width},
                 {"pool_rows", st.rows},
                 {"pool_row_bytes_per_rank", st.row_bytes},
                 {"chunk", c.chunk},
                 {"step_tokens", c.step_tokens},
                 {"completion_snapshots", c.completion_snapshots},
                 {"verify", c.verify},
                 {"combine", c.combine}};
  if (info.workload->source == "synthetic") {
    const SyntheticOptions& s = info.synthetic;
    j["workload"] = {{"source", "synthetic"},
                     {"seed", s.seed},
                     {"requests", s.requests},
                     {"prefixes", s.prefixes},
                     {"zipf", s.zipf},
                     {"prefix_len", {s.prefix_len.min, s.prefix_len.max}},
                     {"input_len", {s.input_len.min, s.input_len.max}},
                     {"output_len", {s.output_len.min, s.output_len.max}},
                     {"followup", s.followup},
                     {"max_turns", s.max_turns}};
  } else {
    j["workload"] = {{"source", "trace"}, {"path", info.workload->source}, {"requests", st.requests}};
  }
  j["requests"] = {{"total", st.requests}, {"admitted", st.admitted}, {"completed", st.completed}};
  j["steps"] = st.steps;
  j["tokens"] = {{"prompt", st.prompt_tokens},
                 {"restored", st.restored_tokens},
                 {"prefill_computed", st.prefill_tokens},
                 {"decoded", st.decode_tokens}};
  j["prefix_cache"] = {
      {"hits", st.hits},
      {"misses", st.misses},
      {"hit_rate", st.admitted > 0 ? static_cast<double>(st.hits) / static_cast<double>(st.admitted) : 0.0},
      {"token_hit_rate",
       st.prompt_tokens > 0 ? static_cast<double>(st.restored_tokens) / static_cast<double>(st.prompt_tokens) : 0.0},
      {"published_at_end", st.cache_published},
      {"evictions", st.cache_evictions},
      {"reservations", st.cache_reservations},
      {"reservations_refused", st.cache_refused},
      {"released_after_failure", st.cache_releases}};
  const bool tier = c.host_snapshot_rows > 0;
  if (tier) {
    j["config"]["host_snapshot_rows"] = c.host_snapshot_rows;
    j["host_tier"] = {{"rows", c.host_snapshot_rows},
                      {"host_memory_bytes_per_rank", st.host_memory_bytes},
                      {"device_hits", st.device_hits},
                      {"host_hits", st.host_hits},
                      {"offloads", st.applied[kind_offload]},
                      {"onloads", st.applied[kind_onload]},
                      {"host_restores", st.host_restores},
                      {"demotions", st.demotions},
                      {"promotions", st.promotions},
                      {"host_evictions", st.host_evictions},
                      {"host_published_at_end", st.host_published},
                      {"this_rank_bytes_device_to_host", st.bytes_to_host},
                      {"this_rank_bytes_host_to_device", st.bytes_from_host}};
  }
  json kinds;
  for (int k = 0; k < (tier ? kind_count : 3); ++k)
    kinds[kind_name(k)] = {{"issued", st.issued[k]}, {"applied", st.applied[k]}, {"failed", st.failed[k]}};
  j["commands"] = {{"total", cmds},
                   {"by_kind", kinds},
                   {"checkpoint_snapshots", st.checkpoint_snapshots},
                   {"completion_snapshots", st.completion_snapshots},
                   {"restore_fallbacks", st.restore_fallbacks}};
  json errors;
  for (int code = 0; code < 8; ++code)
    errors[code < 7 ? statexfer::command_error_name(code) : "other"] = st.errors[code];
  j["errors_by_code"] = errors;
  json faults = json::array();
  for (const Fault& f : info.faults)
    faults.push_back({{"rank", f.rank},
                      {"from_step", f.step},
                      {"kind", f.kind < 0 ? "any" : kind_name(f.kind)},
                      {"injected_step", f.injected_step},
                      {"command", f.command}});
  j["faults"] = {{"requested", faults},
                 {"injected", st.faults_injected},
                 {"refused_on_every_rank", st.fault_commands_refused},
                 {"missed", st.faults_missed}};
  j["bytes_moved"] = {{"all_ranks", st.total_bytes_moved},
                      {"this_rank_rows", st.row_bytes_moved},
                      {"this_rank_pages", st.page_bytes_moved}};
  auto timing = [](const Summary& s) {
    return json{{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}};
  };
  j["time"] = {{"wall_s", st.wall_s},     {"transfer_s", st.transfer_s},        {"model_s", st.model_s},
               {"verify_s", st.verify_s}, {"transfer_us_per_step", timing(tr)}, {"step_us", timing(sp)}};
  j["throughput"] = {
      {"requests_per_s", st.wall_s > 0 ? static_cast<double>(st.completed) / st.wall_s : 0.0},
      {"commands_per_s", st.wall_s > 0 ? static_cast<double>(cmds) / st.wall_s : 0.0},
      {"steps_per_s", st.wall_s > 0 ? static_cast<double>(st.steps) / st.wall_s : 0.0},
      {"transfer_gb_per_s", st.transfer_s > 0 ? static_cast<double>(st.total_bytes_moved) / st.transfer_s / 1e9 : 0.0}};
  j["verify"] = {{"enabled", c.verify},
                 {"ok", st.verify_ok},
                 {"steps_checked", st.verify_steps},
                 {"full_cache_comparisons", st.verify_full},
                 {"message", st.verify_message}};
  j["ranks_consistent"] = st.cross_rank_ok;
  return j;
}

bool plot_steps(const Stats& st, const std::string& png, const std::string& script) {
  // A Python that has matplotlib: $STATEXFER_PYTHON, python3 on PATH, /usr/bin/python3.
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("STATEXFER_PYTHON")) candidates.emplace_back(p);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  std::string python;
  for (const auto& c : candidates) {
    const std::string probe = "'" + c + "' -c 'import matplotlib' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) {
      python = c;
      break;
    }
  }
  if (python.empty()) {
    std::fprintf(stderr,
                 "statexfer-sim: warning: no Python with matplotlib (tried $STATEXFER_PYTHON, python3, "
                 "/usr/bin/python3); --plot %s skipped\n",
                 png.c_str());
    return false;
  }
  const std::string cmd = "'" + python + "' '" + script + "' '" + png + "'";
  std::FILE* pipe = popen(cmd.c_str(), "w");
  if (!pipe) {
    std::fprintf(stderr, "statexfer-sim: warning: cannot run %s\n", cmd.c_str());
    return false;
  }
  std::fprintf(pipe, "step,transfer_us,step_us,commands\n");
  for (std::size_t i = 0; i < st.transfer_us.size(); ++i)
    std::fprintf(pipe, "%zu,%.3f,%.3f,%d\n", i, st.transfer_us[i], st.step_us[i], st.step_commands[i]);
  const int rc = pclose(pipe);
  if (rc != 0) {
    std::fprintf(stderr, "statexfer-sim: warning: %s failed (status %d)\n", cmd.c_str(), rc);
    return false;
  }
  return true;
}

}  // namespace statexfer::sim
