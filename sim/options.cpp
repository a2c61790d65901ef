#include "options.hpp"

#include <CLI/CLI.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <statexfer/config.hpp>
#include <statexfer/speculative.hpp>
#include <test_common/models.hpp>

#include "faults.hpp"
#include "geometry.hpp"
#include "policy.hpp"

namespace statexfer::sim {
namespace {

// What the command line gives as text or flags before it is checked and turned into Options.
struct Text {
  std::string prefix_len = "256:1024", input_len = "16:256", output_len = "8:48";
  std::string trace_format = "auto", policy = "ends", model_writes = "read", commit_move = "remap";
  std::string tier_moves = "stream";
  std::string staged_units = "auto", handed_out_units = "auto";
  std::vector<std::string> faults;
  bool no_graphs = false, no_combine = false, no_completion = false;
};

Range parse_range(const std::string& text, const char* option) {
  Range r;
  try {
    const auto colon = text.find(':');
    std::size_t used = 0;
    if (colon == std::string::npos) {
      r.min = r.max = std::stoll(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
    } else {
      r.min = std::stoll(text.substr(0, colon), &used);
      if (used != colon) throw std::invalid_argument(text);
      r.max = std::stoll(text.substr(colon + 1), &used);
      if (used != text.size() - colon - 1) throw std::invalid_argument(text);
    }
  } catch (const std::exception&) {
    throw CLI::ValidationError(option, "expected N or MIN:MAX, got '" + text + "'");
  }
  return r;
}

void add_workload(CLI::App& app, Options& o, Text& t) {
  auto* wl = "Workload (synthetic unless --trace)";
  SyntheticOptions& syn = o.syn;
  app.add_option("--requests,-n", syn.requests, "requests to simulate")->group(wl)->capture_default_str();
  app.add_option("--seed", syn.seed, "seed of the synthetic workload")->group(wl)->capture_default_str();
  app.add_option("--prefixes", syn.prefixes, "shared prefix documents (0: none)")->group(wl)->capture_default_str();
  app.add_option("--zipf", syn.zipf, "Zipf exponent of prefix popularity")->group(wl)->capture_default_str();
  app.add_option("--prefix-len", t.prefix_len, "prefix document length in tokens, N or MIN:MAX")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--input-len", t.input_len, "own prompt tokens per request, N or MIN:MAX")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--output-len", t.output_len, "generated tokens per request, N or MIN:MAX")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--followup", syn.followup, "probability that a request continues an earlier conversation")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--max-turns", syn.max_turns, "turns per conversation")->group(wl)->capture_default_str();
  app.add_option("--max-context", syn.max_context, "tokens per request at most (synthetic)")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--trace", o.trace, "JSON-lines trace to replay instead (see README; --requests N: its first N)")
      ->group(wl)
      ->check(CLI::ExistingFile);
  app.add_option("--trace-format", t.trace_format,
                 "auto (Mooncake's when the first line has hash_ids or input_length), sim or mooncake; also "
                 "--dump-trace's format")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--trace-block-tokens", o.cfg.block_tokens,
                 "tokens per block of a Mooncake trace's hash_ids and of the block snapshot policies")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--time-scale", o.cfg.time_scale, "a trace's arrival = its timestamp (ms) x this (0: all at once)")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--dump-trace", o.dump_trace, "write the workload as a JSON-lines trace")->group(wl);
}

void add_geometry(CLI::App& app, Options& o, Text& t) {
  auto* geo = "Pool and model (whole model; each rank holds a shard)";
  SimConfig& cfg = o.cfg;
  app.add_option("--model", o.model_name,
                 "a hybrid model's state (perf_tests/MODELS.md): row bytes, attention planes, KV bytes per token, no "
                 "draft planes; options given beside it win. Known: " +
                     statexfer::models::names())
      ->group(geo);
  app.add_option("--capacity,-C", cfg.capacity, "request slots = command batch capacity (power of two)")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--snapshot-rows", cfg.snapshot_rows, "prefix-cache snapshot rows")->group(geo)->capture_default_str();
  app.add_option("--host-snapshot-rows", cfg.host_snapshot_rows,
                 "host-tier snapshot rows: LRU device snapshots are demoted there instead of evicted (0: none)")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--tier-moves", t.tier_moves,
                 "stream: offloads and onloads in batches of their own on a stream of their own, sharing row claims "
                 "with the step's batch; step: in the step's batch")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--tier-teams", cfg.tier_teams,
                 "the tier batches' apply() league (0: 1/12 of the SMs on GPUs, the library's default on hosts)")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--staged-units", t.staged_units,
                 "the step's apply() on GPUs with bulk copies (options.expert.compact_staged): auto (the library's "
                 "default: registers), on (staged units) or off (registers); the tier batches keep the default")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--handed-out-units", t.handed_out_units,
                 "the step's apply() on GPUs (options.expert.compact_handout): auto (the library's default: handed "
                 "out where the units exceed 64 a team), on (units handed out to the teams) or off (each team "
                 "strides over its own); the tier batches keep the default")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--page-tokens", cfg.page_tokens, "tokens per KV page")->group(geo)->capture_default_str();
  app.add_option("--row-bytes", cfg.row_bytes, "recurrent (SSM + conv) state bytes per row")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--kv-planes", cfg.kv_planes, "attention planes whose partial page a snapshot saves")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--kv-token-bytes", cfg.kv_token_bytes, "KV bytes per token and attention plane")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--draft-planes", cfg.draft_planes, "draft-model planes (trailing pages; 0: none)")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--draft-token-bytes", cfg.draft_token_bytes, "KV bytes per token and draft plane")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--scratch-bytes", cfg.scratch_bytes, "excluded region per row (never copied; 0: none)")
      ->group(geo)
      ->capture_default_str();
  app.add_option("--pages", cfg.pages, "physical pages per cache (0: capacity x page-table width)")
      ->group(geo)
      ->capture_default_str();
}

void add_scheduling(CLI::App& app, Options& o, Text& t) {
  auto* sch = "Scheduling";
  SimConfig& cfg = o.cfg;
  app.add_option("--chunk", cfg.chunk, "prefill tokens per request and step")->group(sch)->capture_default_str();
  app.add_option("--step-tokens", cfg.step_tokens, "tokens per step over all requests")
      ->group(sch)
      ->capture_default_str();
  app.add_option("--lookahead", cfg.lookahead, "queued requests scanned for one whose parent is done")
      ->group(sch)
      ->capture_default_str();
  app.add_flag("--no-completion-snapshots", t.no_completion, "do not snapshot finished requests")->group(sch);
  app.add_option("--snapshot-policy", t.policy,
                 "where prefixes are snapshotted: ends (exact endpoints), all (every block boundary), last (the "
                 "prompt's last block boundary), every:N (every N-th)")
      ->group(sch)
      ->capture_default_str();
  app.add_option("--model-writes", t.model_writes,
                 "read: the model writes the bytes later commands read (a row at its snapshot points, the pages a "
                 "snapshot saves); all: every row it advances and every token's KV entries")
      ->group(sch)
      ->capture_default_str();
  app.add_option("--tokens-per-ms", cfg.tokens_per_ms, "simulated time: tokens computed per millisecond")
      ->group(sch)
      ->capture_default_str();
  app.add_option("--step-ms", cfg.step_ms, "simulated time: milliseconds per step beside its tokens")
      ->group(sch)
      ->capture_default_str();
  app.add_option("--max-steps", cfg.max_steps, "stop after N steps (0: run every request)")->group(sch);
}

void add_speculative(CLI::App& app, Options& o, Text& t) {
  auto* spd = "Speculative decoding (sim/README.md)";
  SimConfig& cfg = o.cfg;
  app.add_option("--spec-tokens", cfg.spec_tokens,
                 "drafts K a decode step verifies (1..7): K position rows per slot, the accepted one committed in "
                 "the next batch (0: plain decoding)")
      ->group(spd)
      ->capture_default_str();
  app.add_option("--accept-rate", cfg.accept_rate,
                 "each draft is accepted with this probability until the first rejection (seeded by --seed)")
      ->group(spd)
      ->capture_default_str();
  app.add_option("--commit-move", t.commit_move,
                 "remap: a commit swaps the live and the accepted position row in the state rows (no bytes); "
                 "copy: it copies the accepted row into the live row")
      ->group(spd)
      ->capture_default_str();
  app.add_flag("--prefix-keys", cfg.prefix_keys,
               "a prefix_key region in every row without --spec-tokens too: restores, offloads and onloads prove "
               "their row's prefix (always on with --spec-tokens)")
      ->group(spd);
}

void add_checking(CLI::App& app, Options& o, Text& t) {
  auto* chk = "Checking and tensor parallelism";
  SimConfig& cfg = o.cfg;
  app.add_flag("--verify,!--no-verify", cfg.verify,
               "check every row and saved page against the contract's oracle after every step")
      ->group(chk);
  app.add_option("--verify-full-every", cfg.verify_full_every, "compare whole caches every N steps (and at the end)")
      ->group(chk)
      ->capture_default_str();
  app.add_option("--tp", cfg.tp, "tensor-parallel ranks (run under mpirun -np N)")->group(chk)->capture_default_str();
  app.add_option(
         "--inject-fault", t.faults,
         "RANK:STEP[:KIND]: from STEP on, the first command (KIND: snapshot, restore, host-restore, any) with a "
         "partial page finds it unmapped in RANK's page table only; or, on RANK only, the first commit's accepted "
         "position row at a stale endpoint (stale-position), its accepted count K + 1 (accepted-range) or another "
         "valid count (accepted-disagree, --tp 2 or more), the first restore's row holding another prefix's key "
         "(recycled-key); or, on every rank, the first snapshot into a row being offloaded issued without waiting "
         "for the offload (offload-race: code 7); with --pd, RANK:STEP:KIND on decode rank RANK, KIND flipped-byte, "
         "other-layout, stale-key or missing-slice (sim/README.md \"Prefill/decode\") (repeatable)")
      ->group(chk);
  app.add_flag("--no-combine", t.no_combine, "skip the error combiner (shows why it is needed; needs --verify)")
      ->group(chk);
  app.add_flag("--no-graphs", t.no_graphs, "CUDA: launch validate and apply directly instead of replaying graphs")
      ->group(chk);
}

void add_pd(CLI::App& app, Options& o) {
  auto* pdg = "Prefill/decode (--pd; sim/README.md \"Prefill/decode\")";
  PdConfig& pd = o.pd;
  auto* enabled =
      app.add_flag("--pd", pd.enabled,
                   "prefill and decode instances as two groups of MPI ranks (mpirun -np P+D): state exported, moved by "
                   "the wire transport (MPI, or NCCL: --pd-transport), imported; --model (default qwen3.5-9b) shards "
                   "the rows")
          ->group(pdg);
  app.add_option("--prefill-tp", pd.prefill_tp, "--pd: the prefill instance's TP (MPI ranks 0..P-1)")
      ->group(pdg)
      ->needs(enabled)
      ->capture_default_str();
  app.add_option("--decode-tp", pd.decode_tp, "--pd: the decode instance's TP (the next D ranks)")
      ->group(pdg)
      ->needs(enabled)
      ->capture_default_str();
  app.add_option("--pd-layers", pd.layers,
                 "--pd: keep this many recurrent layers of the model and the same share of attention layers (a "
                 "stand-in for hosts; 0: the model's own)")
      ->group(pdg)
      ->needs(enabled)
      ->capture_default_str();
  app.add_option("--pd-capacity", pd.capacity, "--pd: requests moved per step (power of two, 1 to 4096)")
      ->group(pdg)
      ->needs(enabled)
      ->capture_default_str();
  app.add_option("--pd-cache-rows", pd.cache_rows, "--pd: prefix-cache rows of each instance")
      ->group(pdg)
      ->needs(enabled)
      ->capture_default_str();
  app.add_option("--pd-bandwidth-reps", pd.plain_reps,
                 "--pd: repetitions of the transport and of a plain send/recv of the same bytes (MPI's, or NCCL's "
                 "with --pd-transport nccl) at the end")
      ->group(pdg)
      ->needs(enabled)
      ->capture_default_str();
  app.add_option("--pd-transport", pd.transport,
                 "--pd: what moves the records: mpi (default), or nccl (a CUDA build with NCCL, one GPU a rank)")
      ->group(pdg)
      ->needs(enabled)
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, PdTransport>{{"mpi", PdTransport::mpi}, {"nccl", PdTransport::nccl}}));
}

void add_output(CLI::App& app, Options& o) {
  auto* outg = "Output";
  app.add_option("--json", o.json_path, "write the JSON report here")->group(outg);
  app.add_option("--plot", o.plot_path, "plot time per step into this PNG (needs Python with matplotlib)")->group(outg);
  app.add_flag("--progress", o.progress_forced, "draw the progress bar even when stdout is not a terminal")
      ->group(outg);
  app.add_flag("--no-progress", o.no_progress, "no progress bar")->group(outg);
  app.add_option("--probe-mib", o.cfg.probe_mib,
                 "MiB of the start-up probe of this device's copy, fill and host-tier rates, which give the report's "
                 "limit (-1: 256 on GPUs; on hosts a full batch's rows, 1 to 64 MiB; 0: no probe, no limit)")
      ->group(outg)
      ->capture_default_str();
  app.add_flag("--quiet,-q", o.quiet, "no summary (the JSON report and the exit status remain)")->group(outg);
}

// --inject-fault: each parsed, and what each kind needs of the other options.
void check_faults(Options& o, const Text& t) {
  SimConfig& cfg = o.cfg;
  if (o.pd.enabled) {  // the wire's faults (pd.hpp)
    for (const auto& f : t.faults) {
      try {
        o.pd.faults.push_back(parse_pd_fault(f));
      } catch (const std::invalid_argument& e) {
        throw CLI::ValidationError("--inject-fault", e.what());
      }
      if (o.pd.faults.back().rank >= o.pd.decode_tp)
        throw CLI::ValidationError("--inject-fault", "'" + f + "': RANK is a decode rank, 0 to --decode-tp - 1");
    }
    return;
  }
  for (const auto& f : t.faults) {
    try {
      cfg.faults.push_back(parse_fault(f));
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError("--inject-fault", e.what());
    }
  }
  for (const auto& f : cfg.faults) {
    const bool commit = f.type == FaultType::stale_position || f.type == FaultType::accepted_range ||
                        f.type == FaultType::accepted_disagree;
    if (commit && cfg.spec_tokens == 0)
      throw CLI::ValidationError("--inject-fault", fault_kind_name(f) + " needs --spec-tokens");
    if (f.type == FaultType::recycled_key && cfg.spec_tokens == 0 && !cfg.prefix_keys)
      throw CLI::ValidationError("--inject-fault", "recycled-key needs prefix keys (--spec-tokens or --prefix-keys)");
    // One rank's accepted count is the acceptance: a different valid count is
    // a different acceptance, which applies (the position row holds the state
    // at that endpoint too); only ranks that read different counts disagree.
    if (f.type == FaultType::offload_race && (cfg.host_snapshot_rows == 0 || !cfg.tier_stream))
      throw CLI::ValidationError("--inject-fault",
                                 "offload-race needs a host tier (--host-snapshot-rows) with its moves on their own "
                                 "stream (--tier-moves stream)");
    if (f.type == FaultType::accepted_disagree && cfg.tp < 2)
      throw CLI::ValidationError("--inject-fault",
                                 "accepted-disagree needs --tp 2 or more: with one rank a different count is "
                                 "simply the acceptance, and it commits");
  }
}

// The checks between options, and what the text options set.
void check(const CLI::App& app, Options& o, const Text& t) {
  SimConfig& cfg = o.cfg;
  o.syn.prefix_len = parse_range(t.prefix_len, "--prefix-len");
  o.syn.input_len = parse_range(t.input_len, "--input-len");
  o.syn.output_len = parse_range(t.output_len, "--output-len");
  if (cfg.tp < 1) throw CLI::ValidationError("--tp", "must be >= 1");
  if (t.no_combine && !cfg.verify) throw CLI::ValidationError("--no-combine", "needs --verify");
  if (t.model_writes != "read" && t.model_writes != "all")
    throw CLI::ValidationError("--model-writes", "expected read or all, got '" + t.model_writes + "'");
  if (t.tier_moves != "stream" && t.tier_moves != "step")
    throw CLI::ValidationError("--tier-moves", "expected stream or step, got '" + t.tier_moves + "'");
  cfg.tier_stream = t.tier_moves == "stream";
  // An expert option of the library: auto 0 (its default), on 1, off -1.
  const auto auto_on_off = [](const char* option, const std::string& text) {
    if (text != "auto" && text != "on" && text != "off")
      throw CLI::ValidationError(option, "expected auto, on or off, got '" + text + "'");
    return text == "on" ? 1 : text == "off" ? -1 : 0;
  };
  cfg.staged_units = auto_on_off("--staged-units", t.staged_units);
  cfg.handed_out_units = auto_on_off("--handed-out-units", t.handed_out_units);
  if (cfg.tier_teams < 0 || cfg.tier_teams > (1 << 20))
    throw CLI::ValidationError("--tier-teams", "must be 0 (default) to 2^20");
  if (cfg.probe_mib < -1 || cfg.probe_mib > 65536)
    throw CLI::ValidationError("--probe-mib", "must be -1 (default), 0 (none) or up to 65536");
  if (t.commit_move != "remap" && t.commit_move != "copy")
    throw CLI::ValidationError("--commit-move", "expected remap or copy, got '" + t.commit_move + "'");
  if (cfg.spec_tokens < 0 || cfg.spec_tokens > statexfer::max_speculative_positions)
    throw CLI::ValidationError(spec_tokens_range());
  if (!(cfg.accept_rate >= 0 && cfg.accept_rate <= 1)) throw CLI::ValidationError("--accept-rate", "must be in [0, 1]");
  if (o.pd.enabled) {
    if (cfg.tp != 1) throw CLI::ValidationError("--tp", "not with --pd (--prefill-tp and --decode-tp)");
    if (o.pd.prefill_tp < 1 || o.pd.decode_tp < 1)
      throw CLI::ValidationError("--prefill-tp/--decode-tp", "must be >= 1");
    const std::int64_t c = o.pd.capacity;
    if (c < 1 || c > 4096 || (c & (c - 1)) != 0)
      throw CLI::ValidationError("--pd-capacity", "must be a power of two from 1 to 4096");
    if (o.pd.cache_rows < 1) throw CLI::ValidationError("--pd-cache-rows", "must be >= 1");
    if (o.pd.layers < 0) throw CLI::ValidationError("--pd-layers", "must be >= 0");
    if (o.pd.plain_reps < 1) throw CLI::ValidationError("--pd-bandwidth-reps", "must be >= 1");
#ifndef STATEXFER_HAVE_NCCL
    if (o.pd.transport == PdTransport::nccl)
      throw CLI::ValidationError("--pd-transport",
                                 "nccl needs a CUDA build with NCCL (STATEXFER_ENABLE_NCCL); this "
                                 "build has none");
#endif
    if (o.model_name.empty()) o.model_name = "qwen3.5-9b";
  }
  check_faults(o, t);
  try {
    o.trace_format = parse_trace_format(t.trace_format);
    cfg.policy = SnapshotPolicy::parse(t.policy);
    if (!o.model_name.empty()) {
      // The model's sizes, unless given beside it (a host run scales the rows down).
      const auto& m = statexfer::models::find(o.model_name);
      if (app.count("--row-bytes") == 0) cfg.row_bytes = m.row_bytes();
      if (app.count("--kv-planes") == 0) cfg.kv_planes = m.attention_layers;
      if (app.count("--kv-token-bytes") == 0) cfg.kv_token_bytes = m.kv_token_bytes();
      if (app.count("--draft-planes") == 0) cfg.draft_planes = 0;
    }
  } catch (const std::invalid_argument& e) {
    throw CLI::ValidationError(e.what());
  }
  o.requests_given = app.count("--requests") > 0;
  cfg.model_writes_all = t.model_writes == "all";
  cfg.commit_copy = t.commit_move == "copy";
  cfg.accept_seed = o.syn.seed;
  cfg.graphs = !t.no_graphs;
  cfg.combine = !t.no_combine;
  cfg.completion_snapshots = !t.no_completion;
}

}  // namespace

int parse_options(int argc, const char* const* argv, Options& out) {
  Text text;
  CLI::App app{
      "statexfer-sim: simulate a hybrid-model server's prefix-cache state management with statexfer "
      "(snapshot / restore / reset batches through one prepared transfer per step). Options starting with "
      "--kokkos- are passed to Kokkos::initialize."};
  app.get_formatter()->column_width(34);
  add_workload(app, out, text);
  add_geometry(app, out, text);
  add_scheduling(app, out, text);
  add_speculative(app, out, text);
  add_checking(app, out, text);
  add_pd(app, out);
  add_output(app, out);
  try {
    app.parse(argc, argv);
    check(app, out, text);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0; bad arguments: 2
  }
  return -1;
}

}  // namespace statexfer::sim
