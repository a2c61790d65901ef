// The progress bar, the text summary and the plot (report.hpp); the JSON
// report is report_json.cpp.

#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <vector>

#include <statexfer/commands.hpp>

#include "faults.hpp"
#include "report_format.hpp"

namespace statexfer::sim {

using namespace report;

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

namespace {

// The speculative decoding lines (--spec-tokens).
void print_speculative(std::FILE* out, const Stats& st, const RunInfo& info) {
  const SimConfig& c = info.config;
  const auto applied = st.applied[kind_commit], refused = st.failed[kind_commit];
  std::string codes;
  for (int code = 1; code < code_slots; ++code)
    if (st.commit_errors[code] > 0)
      codes += std::string(codes.empty() ? "" : ", ") + code_name(code) + " " + grouped(st.commit_errors[code]);
  std::string histogram;
  for (std::int64_t a = 0; a <= c.spec_tokens; ++a)
    histogram += (a > 0 ? " " : "") + grouped(st.accepted_histogram[static_cast<std::size_t>(a)]);
  auto per = [](std::int64_t n, std::int64_t d) {
    return d > 0 ? static_cast<double>(n) / static_cast<double>(d) : 0.0;
  };
  std::fprintf(out,
               "  speculative  K = %lld drafts, accept rate %s, %s commits: %s verifies (%s drafts); commits %s "
               "applied, %s refused%s%s%s, %s fell back to n + 1\n",
               static_cast<long long>(c.spec_tokens), num(c.accept_rate).c_str(),
               c.commit_copy ? "copying" : "remapping", grouped(st.verifies).c_str(),
               grouped(st.drafted_tokens).c_str(), grouped(applied).c_str(), grouped(refused).c_str(),
               codes.empty() ? "" : " (", codes.c_str(), codes.empty() ? "" : ")",
               grouped(st.commit_fallbacks).c_str());
  std::fprintf(out,
               "               accepted drafts %s (%.2f per commit, %s of drafts; by count 0..K: %s); tokens per "
               "step verified %.1f, committed %.1f, accepted drafts per step %.1f (per verify %.2f verified, %.2f "
               "committed); commits moved %s (all ranks); %s verifies paused for a snapshot\n",
               grouped(st.accepted_drafts).c_str(), per(st.accepted_drafts, applied),
               pct(static_cast<double>(st.accepted_drafts), static_cast<double>(st.drafted_tokens)).c_str(),
               histogram.c_str(), per(st.verified_tokens, st.steps_verifying),
               per(st.committed_tokens, st.commit_steps), per(st.accepted_drafts, st.commit_steps),
               per(st.verified_tokens, st.verifies), per(st.committed_tokens, applied + refused),
               bytes(static_cast<double>(st.total_commit_bytes)).c_str(), grouped(st.verify_pauses).c_str());
}

// The limit line (the critical path against the physics of its bytes) and,
// with the tier stream, its line.
void print_limit(std::FILE* out, const Stats& st) {
  const LimitFigures f = limit_figures(st);
  const CopyRates& r = st.rates;
  if (r.measured())
    std::fprintf(
        out,
        "  limit        critical path %s per step (p50 %s, p99 %s), limit %s: efficiency %.1f%% (%s steps with "
        "commands; rates of %s: copy %s, fill %s, to device %s, to host %s; %s)\n",
        us(f.critical.mean).c_str(), us(f.critical.p50).c_str(), us(f.critical.p99).c_str(), us(f.limit).c_str(),
        100 * f.efficiency, grouped(f.steps).c_str(), bytes(static_cast<double>(r.probe_bytes)).c_str(),
        rate(r.copy).c_str(), rate(r.fill).c_str(), rate(r.to_device).c_str(), rate(r.to_host).c_str(),
        st.clock.c_str());
  else
    std::fprintf(out, "  limit        not probed (--probe-mib 0); critical path %s per step (p50 %s, p99 %s; %s)\n",
                 us(f.critical.mean).c_str(), us(f.critical.p50).c_str(), us(f.critical.p99).c_str(), st.clock.c_str());
  if (st.tier_moves != "stream") return;
  const double n = static_cast<double>(std::max<std::int64_t>(st.steps, 1));
  std::fprintf(out,
               "  tier stream  %s launches (onloads, then offloads; apply league %s): %s each (p99 %s), limit %s: "
               "efficiency %.1f%%; the host waited %s per step for them; restores of rows being onloaded %s (steps "
               "that waited for the onloads %s)\n",
               grouped(f.launches).c_str(), st.tier_teams > 0 ? grouped(st.tier_teams).c_str() : "default",
               us(f.tier.mean).c_str(), us(f.tier.p99).c_str(), us(f.tier_limit).c_str(), 100 * f.tier_efficiency,
               us(1e6 * st.tier_wait_s / n).c_str(), grouped(st.restores_after_onload).c_str(),
               grouped(st.steps_after_onload).c_str());
}

}  // namespace

void print_summary(std::FILE* out, const Stats& st, const RunInfo& info) {
  const SimConfig& c = info.config;
  const Workload& w = *info.workload;
  const Summary tr = summarize(transfer_times(st)), sp = summarize(st.step_us);
  const std::int64_t cmds = total_commands(st);
  const double moved = static_cast<double>(st.total_bytes_moved);
  std::fprintf(out, "statexfer-sim: %s, %d rank%s (combiner %s)%s; the step's launches: %s\n", info.kokkos.c_str(),
               st.ranks, st.ranks == 1 ? "" : "s", st.combiner.c_str(), st.graphs ? ", CUDA graphs" : "",
               st.step_launch.c_str());
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
    std::fprintf(out, "  workload     trace %s (%s format%s): %s requests\n", w.source.c_str(), w.format.c_str(),
                 w.hashed ? (", blocks of " + grouped(w.block_tokens) + " tokens").c_str() : "",
                 grouped(st.requests).c_str());
  }
  std::fprintf(out, "  policy       snapshots at %s%s; the model writes %s%s%s\n", c.policy.name().c_str(),
               c.policy.kind == SnapshotPolicy::ends ? "" : (" (blocks of " + grouped(c.block_tokens) + ")").c_str(),
               c.model_writes_all ? "every row and token it advances" : "what later commands read",
               info.model.empty() ? "" : "; model ", info.model.c_str());
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
  const double input = static_cast<double>(st.prompt_tokens);
  const ReuseBound& b = info.bound;
  std::string bound = "attention-only bound n/a (no hash ids)";
  if (b.available)
    bound = "attention-only bound " + pct2(static_cast<double>(b.unbounded_tokens), b.input_tokens) + " (unbounded), " +
            pct2(static_cast<double>(b.budget_tokens), b.input_tokens) + " at " + grouped(b.budget_blocks) +
            " blocks (LRU)";
  std::fprintf(out, "  reuse        token hit ratio %s (restored / input tokens); %s\n",
               pct2(static_cast<double>(st.restored_tokens), input).c_str(), bound.c_str());
  const double snap = static_cast<double>(st.total_snapshot_bytes);
  std::fprintf(out, "  snapshots    %s taken: %s (all ranks), %s per step, %s per restored token\n",
               grouped(st.applied[kind_snapshot]).c_str(), bytes(snap).c_str(),
               bytes(st.steps > 0 ? snap / static_cast<double>(st.steps) : 0).c_str(),
               bytes(st.restored_tokens > 0 ? snap / static_cast<double>(st.restored_tokens) : 0).c_str());
  if (w.timed) {
    const Summary q = summarize(st.queue_ms);
    double last = 0;
    for (const RequestSpec& r : w.requests) last = std::max(last, r.arrival_ms * c.time_scale);
    std::fprintf(out,
                 "  queueing     %s of %s admissions waited: delay mean %s, p50 %s, p99 %s, max %s; simulated %.1f s "
                 "for arrivals over %.1f s (%s tokens/ms, %s ms/step, time scale %s)\n",
                 grouped(st.queued).c_str(), grouped(st.admitted).c_str(), ms(q.mean).c_str(), ms(q.p50).c_str(),
                 ms(q.p99).c_str(), ms(q.max).c_str(), st.sim_ms / 1000, last / 1000, num(c.tokens_per_ms).c_str(),
                 num(c.step_ms).c_str(), num(c.time_scale).c_str());
  }
  if (c.host_snapshot_rows > 0)
    std::fprintf(out,
                 "  host tier    %s rows (%s of host memory per rank), moves %s: hits %s device + %s host; %s demoted "
                 "(offloads), %s promoted (onloads), %s restores from host; %s host evictions, %s published at end; "
                 "this rank %s to host, %s from host\n",
                 grouped(c.host_snapshot_rows).c_str(), bytes(static_cast<double>(st.host_memory_bytes)).c_str(),
                 st.tier_moves == "stream" ? "on the tier stream" : "in the step's batch",
                 grouped(st.device_hits).c_str(), grouped(st.host_hits).c_str(),
                 grouped(st.applied[kind_offload]).c_str(), grouped(st.applied[kind_onload]).c_str(),
                 grouped(st.host_restores).c_str(), grouped(st.host_evictions).c_str(),
                 grouped(st.host_published).c_str(), bytes(static_cast<double>(st.bytes_to_host)).c_str(),
                 bytes(static_cast<double>(st.bytes_from_host)).c_str());
  std::string moves = c.host_snapshot_rows > 0 ? ", offload " + grouped(st.issued[kind_offload]) + ", onload " +
                                                     grouped(st.issued[kind_onload])
                                               : "";
  if (c.spec_tokens > 0) moves += ", commit " + grouped(st.issued[kind_commit]);
  std::fprintf(out,
               "  commands     %s: snapshot %s (%s checkpoint, %s completion), restore %s, reset %s%s; %s commands/s\n",
               grouped(cmds).c_str(), grouped(st.issued[kind_snapshot]).c_str(),
               grouped(st.checkpoint_snapshots).c_str(), grouped(st.completion_snapshots).c_str(),
               grouped(st.issued[kind_restore]).c_str(), grouped(st.issued[kind_reset]).c_str(), moves.c_str(),
               grouped(std::llround(cmds / std::max(st.wall_s, 1e-9))).c_str());
  if (c.spec_tokens > 0) print_speculative(out, st, info);
  std::string errs;
  for (int code = 0; code < code_slots; ++code) {
    if (st.errors[code] == 0 && code != 0) continue;
    if (!errs.empty()) errs += ", ";
    errs += std::string(code_name(code)) + " " + grouped(st.errors[code]);
  }
  std::fprintf(out, "  errors       %s", errs.c_str());
  if (st.faults_injected > 0)
    std::fprintf(out, " (%s injected fault%s; %s refused on every rank, %s restores recomputed)",
                 grouped(st.faults_injected).c_str(), st.faults_injected == 1 ? "" : "s",
                 grouped(st.faults_refused).c_str(), grouped(st.restore_fallbacks).c_str());
  std::fprintf(out, "\n");
  for (const Fault& f : info.faults)
    if (f.injected_step >= 0)
      std::fprintf(out, "  fault        %d:%lld:%s hit step %lld, command %lld (%s, slot %lld; %lld command%s): %s%s\n",
                   f.rank, static_cast<long long>(f.step), fault_kind_name(f).c_str(),
                   static_cast<long long>(f.injected_step), static_cast<long long>(f.command), hit_name(f).c_str(),
                   static_cast<long long>(f.slot), static_cast<long long>(f.commands), f.commands == 1 ? "" : "s",
                   statexfer::command_error_name(f.code),
                   f.refused                                                        ? ", refused on every rank"
                   : FaultInjector::settled(f) && f.type == FaultType::offload_race ? ", applied after the offload"
                                                                                    : ", NOT refused");
  std::fprintf(out, "  bytes moved  %s (all ranks; this rank: rows %s, pages %s)\n", bytes(moved).c_str(),
               bytes(static_cast<double>(st.row_bytes_moved)).c_str(),
               bytes(static_cast<double>(st.page_bytes_moved)).c_str());
  std::fprintf(out,
               "  time/step    transfer (one rank: validate_and_apply; more: validate + combine + apply; the %s steps "
               "with commands) mean %s, p50 %s, p99 %s, max %s; whole step mean %s, p99 %s\n",
               grouped(st.transfer_steps).c_str(), us(tr.mean).c_str(), us(tr.p50).c_str(), us(tr.p99).c_str(),
               us(tr.max).c_str(), us(sp.mean).c_str(), us(sp.p99).c_str());
  print_limit(out, st);
  std::fprintf(
      out, "  bandwidth    %.2f GB/s through the transfers (%.2f s of %.2f s; model writes %.2f s, verify %.2f s)\n",
      st.transfer_s > 0 ? moved / st.transfer_s / 1e9 : 0.0, st.transfer_s, st.wall_s, st.model_s, st.verify_s);
  const double n = static_cast<double>(std::max<std::int64_t>(st.steps, 1));
  const double other = std::max(0.0, st.wall_s - st.verify_s - st.schedule_s - st.upload_s - st.tier_s - st.transfer_s -
                                         st.readback_s - st.fill_s);
  const std::string tier = st.tier_moves == "stream" ? ", tier launches " + us(1e6 * st.tier_s / n) : "";
  std::fprintf(
      out,
      "  host/step    mean over all steps: scheduling %s, uploads %s%s, transfer %s, codes back %s, model fills %s "
      "(%s of state, %s of KV written), other %s\n",
      us(1e6 * st.schedule_s / n).c_str(), us(1e6 * st.upload_s / n).c_str(), tier.c_str(),
      us(1e6 * st.transfer_s / n).c_str(), us(1e6 * st.readback_s / n).c_str(), us(1e6 * st.fill_s / n).c_str(),
      bytes(static_cast<double>(st.model_state_bytes)).c_str(),
      bytes(static_cast<double>(st.model_token_bytes)).c_str(), us(1e6 * other / n).c_str());
  if (c.verify)
    std::fprintf(out,
                 "  verify       %s: %s steps checked against the contract's oracle (%s full cache comparisons)%s%s\n",
                 st.verify_ok ? "OK" : "FAILED", grouped(st.verify_steps).c_str(), grouped(st.verify_full).c_str(),
                 st.verify_ok ? "" : "\n               ", st.verify_ok ? "" : st.verify_message.c_str());
  else
    std::fprintf(out, "  verify       off (--verify checks every step against the contract's oracle)\n");
  if (!st.cross_rank_ok) std::fprintf(out, "  ranks        DIVERGED: the ranks ran different schedules\n");
  if (st.faults_missed > 0)
    std::fprintf(out, "  faults       %s requested fault%s found no command to change\n",
                 grouped(st.faults_missed).c_str(), st.faults_missed == 1 ? "" : "s");
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
  // The run's figures first (# lines), then one row per step.
  const LimitFigures f = limit_figures(st);
  std::fprintf(pipe, "# efficiency=%.6f limit_us=%.3f critical_us=%.3f clock=%s\n", f.efficiency, f.limit,
               f.critical.mean, st.clock.c_str());
  std::fprintf(pipe, "step,transfer_us,step_us,commands,critical_us,limit_us\n");
  for (std::size_t i = 0; i < st.transfer_us.size(); ++i)
    std::fprintf(pipe, "%zu,%.3f,%.3f,%d,%.3f,%.3f\n", i, st.transfer_us[i], st.step_us[i], st.step_commands[i],
                 st.critical_us[i], st.limit_us[i]);
  const int rc = pclose(pipe);
  if (rc != 0) {
    std::fprintf(stderr, "statexfer-sim: warning: %s failed (status %d)\n", cmd.c_str(), rc);
    return false;
  }
  return true;
}

}  // namespace statexfer::sim
