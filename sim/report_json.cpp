// The JSON report (report.hpp): "format": "statexfer-sim/1".

#include <algorithm>

#include <statexfer/commands.hpp>

#include "faults.hpp"
#include "report.hpp"
#include "report_format.hpp"

namespace statexfer::sim {

using namespace report;

namespace {

nlohmann::json timing(const Summary& s) {
  return {{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}};
}

nlohmann::json moved_json(const MovedBytes& m) {
  return {
      {"device_copy", m.copy}, {"device_fill", m.fill}, {"host_to_device", m.to_device}, {"device_to_host", m.to_host}};
}

// The physical limit of the step's transfers against their critical path.
nlohmann::json limit_json(const Stats& st) {
  using nlohmann::json;
  const LimitFigures f = limit_figures(st);
  const CopyRates& r = st.rates;
  json j = {{"definition",
             "per step with commands: the limit is the least time its applied commands' bytes take at this device's "
             "rates (device copies at the copy rate, resets at the fill rate, host-tier bytes at the rates to and "
             "from the device), probed at start-up; the critical path is the time the step's stream spent in its "
             "transfer, waits for tier batches included; efficiency = total limit / total critical path"},
            {"clock", st.clock},
            {"steps", f.steps},
            {"critical_path_us_per_step", timing(f.critical)},
            {"bytes_this_rank", moved_json(st.step_moved)}};
  if (!r.measured()) {
    j["probe"] = nullptr;
    j["limit_us_per_step"] = nullptr;
    j["efficiency"] = nullptr;
    return j;
  }
  j["probe"] = {{"bytes", r.probe_bytes},
                {"method",
                 "Kokkos::deep_copy between two device buffers (copy), of a value into one (fill), and between one "
                 "and a buffer in the host tier's memory space both ways; the best of the repetitions after an "
                 "untimed one"},
                {"repetitions", r.repetitions},
                {"copy_gb_per_s", r.copy / 1e9},
                {"fill_gb_per_s", r.fill / 1e9},
                {"host_to_device_gb_per_s", r.to_device / 1e9},
                {"device_to_host_gb_per_s", r.to_host / 1e9}};
  j["limit_us_per_step"] = f.limit;
  j["efficiency"] = f.efficiency;
  return j;
}

// The tier stream's launches (--tier-moves stream).
nlohmann::json tier_json(const Stats& st) {
  const LimitFigures f = limit_figures(st);
  const double n = static_cast<double>(std::max<std::int64_t>(st.steps, 1));
  nlohmann::json j = {{"apply_teams", st.tier_teams},
                      {"launches", f.launches},
                      {"time_us_per_launch", timing(f.tier)},
                      {"host_wait_us_per_step", 1e6 * st.tier_wait_s / n},
                      {"restores_after_onload", st.restores_after_onload},
                      {"steps_waiting_for_onloads", st.steps_after_onload},
                      {"bytes_this_rank", moved_json(st.tier_moved)}};
  if (st.rates.measured()) {
    j["limit_us_per_launch"] = f.tier_limit;
    j["efficiency"] = f.tier_efficiency;
  }
  return j;
}

}  // namespace

nlohmann::json report_json(const Stats& st, const RunInfo& info) {
  using nlohmann::json;
  const SimConfig& c = info.config;
  const Summary tr = summarize(transfer_times(st)), sp = summarize(st.step_us);
  const std::int64_t cmds = total_commands(st);
  json j;
  j["format"] = "statexfer-sim/1";
  j["backend"] = info.kokkos;
  j["ranks"] = st.ranks;
  j["combiner"] = st.combiner;
  j["cuda_graphs"] = st.graphs;
  j["step_launch"] = st.step_launch;
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
                 {"snapshot_policy", c.policy.name()},
                 {"block_tokens", c.block_tokens},
                 {"model", info.model},
                 {"model_writes", c.model_writes_all ? "all" : "read"},
                 {"tokens_per_ms", c.tokens_per_ms},
                 {"step_ms", c.step_ms},
                 {"time_scale", c.time_scale},
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
    const Workload& w = *info.workload;
    j["workload"] = {{"source", "trace"},       {"path", w.source}, {"format", w.format},
                     {"requests", st.requests}, {"timed", w.timed}, {"hashed", w.hashed}};
    if (w.hashed) j["workload"]["block_tokens"] = w.block_tokens;
  }
  const ReuseBound& b = info.bound;
  auto ratio = [](double num, double den) { return den > 0 ? num / den : 0.0; };
  j["reuse"] = {
      {"input_tokens", st.prompt_tokens},
      {"restored_tokens", st.restored_tokens},
      {"token_hit_ratio", ratio(static_cast<double>(st.restored_tokens), static_cast<double>(st.prompt_tokens))}};
  if (b.available) {
    const auto in = static_cast<double>(b.input_tokens);
    j["reuse"]["attention_bound"] = {
        {"definition",
         "requests in arrival order, one at a time: each reuses its longest run of leading cached hash ids x "
         "block_tokens, capped at input_length; then its ids are cached (budget: at most budget_blocks ids, LRU, "
         "inserted last block first)"},
        {"block_tokens", b.block_tokens},
        {"input_tokens", b.input_tokens},
        {"unbounded_tokens", b.unbounded_tokens},
        {"unbounded_ratio", ratio(static_cast<double>(b.unbounded_tokens), in)},
        {"budget_blocks", b.budget_blocks},
        {"budget_tokens", b.budget_tokens},
        {"budget_ratio", ratio(static_cast<double>(b.budget_tokens), in)}};
  }
  const auto snap = static_cast<double>(st.total_snapshot_bytes);
  j["snapshots"] = {{"policy", c.policy.name()},
                    {"issued", st.issued[kind_snapshot]},
                    {"taken", st.applied[kind_snapshot]},
                    {"checkpoint", st.checkpoint_snapshots},
                    {"completion", st.completion_snapshots},
                    {"bytes_all_ranks", st.total_snapshot_bytes},
                    {"bytes_per_step", ratio(snap, static_cast<double>(st.steps))},
                    {"bytes_per_restored_token", ratio(snap, static_cast<double>(st.restored_tokens))}};
  {
    const Summary q = summarize(st.queue_ms);
    j["queueing"] = {{"timed", info.workload->timed},
                     {"waited", st.queued},
                     {"delay_ms", {{"mean", q.mean}, {"p50", q.p50}, {"p90", q.p90}, {"p99", q.p99}, {"max", q.max}}},
                     {"simulated_ms", st.sim_ms}};
  }
  j["model_writes"] = {{"this_rank_state_bytes", st.model_state_bytes},
                       {"this_rank_token_bytes", st.model_token_bytes}};
  j["requests"] = {{"total", st.requests}, {"admitted", st.admitted}, {"completed", st.completed}};
  j["steps"] = st.steps;
  j["transfer_steps"] = st.transfer_steps;
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
  const bool tier = c.host_snapshot_rows > 0, spec = c.spec_tokens > 0;
  if (spec || c.prefix_keys) j["config"]["prefix_keys"] = true;
  if (spec) {
    auto per = [](std::int64_t n, std::int64_t d) {
      return d > 0 ? static_cast<double>(n) / static_cast<double>(d) : 0.0;
    };
    const auto applied = st.applied[kind_commit], refused = st.failed[kind_commit];
    j["config"]["spec_tokens"] = c.spec_tokens;
    j["config"]["accept_rate"] = c.accept_rate;
    j["config"]["commit_move"] = c.commit_copy ? "copy" : "remap";
    json by_code;
    for (int code = 0; code < code_slots; ++code) by_code[code_name(code)] = st.commit_errors[code];
    json histogram = json::array();
    for (std::int64_t a = 0; a <= c.spec_tokens; ++a)
      histogram.push_back(st.accepted_histogram[static_cast<std::size_t>(a)]);
    j["speculative"] = {{"spec_tokens", c.spec_tokens},
                        {"accept_rate", c.accept_rate},
                        {"commit_move", c.commit_copy ? "copy" : "remap"},
                        {"verifies", st.verifies},
                        {"steps_verifying", st.steps_verifying},
                        {"verify_pauses", st.verify_pauses},
                        {"commits",
                         {{"issued", st.issued[kind_commit]},
                          {"applied", applied},
                          {"refused", refused},
                          {"by_code", by_code},
                          {"fallbacks_to_n_plus_1", st.commit_fallbacks},
                          {"steps", st.commit_steps}}},
                        {"accepted_drafts",
                         {{"total", st.accepted_drafts},
                          {"per_commit", per(st.accepted_drafts, applied)},
                          {"per_step", per(st.accepted_drafts, st.commit_steps)},
                          {"of_drafted", per(st.accepted_drafts, st.drafted_tokens)},
                          {"by_count", histogram}}},
                        {"tokens",
                         {{"drafted", st.drafted_tokens},
                          {"verified", st.verified_tokens},
                          {"committed", st.committed_tokens},
                          {"verified_per_step", per(st.verified_tokens, st.steps_verifying)},
                          {"committed_per_step", per(st.committed_tokens, st.commit_steps)},
                          {"verified_per_verify", per(st.verified_tokens, st.verifies)},
                          {"committed_per_commit", per(st.committed_tokens, applied + refused)}}},
                        {"commit_bytes", {{"this_rank", st.commit_bytes}, {"all_ranks", st.total_commit_bytes}}}};
  }
  if (tier) {
    j["config"]["host_snapshot_rows"] = c.host_snapshot_rows;
    j["config"]["tier_moves"] = st.tier_moves;
    j["host_tier"] = {{"rows", c.host_snapshot_rows},
                      {"moves", st.tier_moves},
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
  for (int k = 0; k < kind_count; ++k)
    if (k < 3 || (tier && k < kind_commit) || (spec && k == kind_commit))
      kinds[kind_name(k)] = {{"issued", st.issued[k]}, {"applied", st.applied[k]}, {"failed", st.failed[k]}};
  j["commands"] = {{"total", cmds},
                   {"by_kind", kinds},
                   {"checkpoint_snapshots", st.checkpoint_snapshots},
                   {"completion_snapshots", st.completion_snapshots},
                   {"restore_fallbacks", st.restore_fallbacks}};
  json errors;
  for (int code = 0; code < code_slots; ++code) errors[code_name(code)] = st.errors[code];
  j["errors_by_code"] = errors;
  json faults = json::array();
  for (const Fault& f : info.faults)
    faults.push_back({{"rank", f.rank},
                      {"from_step", f.step},
                      {"kind", fault_kind_name(f)},
                      {"injected_step", f.injected_step},
                      {"command", f.command},
                      {"command_kind", hit_name(f)},
                      {"slot", f.slot},
                      {"commands", f.commands},
                      {"code", f.code},
                      {"code_name", f.code < 0 ? "not injected" : statexfer::command_error_name(f.code)},
                      {"refused", f.refused}});
  j["faults"] = {{"requested", faults},
                 {"injected", st.faults_injected},
                 {"refused_on_every_rank", st.faults_refused},
                 {"settled", st.faults_settled},
                 {"missed", st.faults_missed}};
  j["bytes_moved"] = {{"all_ranks", st.total_bytes_moved},
                      {"this_rank_rows", st.row_bytes_moved},
                      {"this_rank_pages", st.page_bytes_moved}};
  j["time"] = {{"wall_s", st.wall_s},         {"transfer_s", st.transfer_s},
               {"model_s", st.model_s},       {"verify_s", st.verify_s},
               {"schedule_s", st.schedule_s}, {"upload_s", st.upload_s},
               {"readback_s", st.readback_s}, {"fill_s", st.fill_s},
               {"tier_s", st.tier_s},         {"transfer_us_per_step", timing(tr)},
               {"step_us", timing(sp)}};
  j["limit"] = limit_json(st);
  if (st.tier_moves == "stream") j["tier_stream"] = tier_json(st);
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

}  // namespace statexfer::sim
