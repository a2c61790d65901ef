// statexfer-sim: a hybrid-model server's state management over a stream of
// requests with shared prefixes, driving statexfer the way an engine would.
//
//   statexfer-sim                             default synthetic workload (seeded)
//   statexfer-sim --verify                    check every step against the contract's oracle
//   statexfer-sim --trace FILE.jsonl          replay a JSON-lines trace (own or Mooncake format)
//   statexfer-sim --trace mooncake.jsonl --model qwen3.5-9b --snapshot-policy all
//   mpirun -np 2 statexfer-sim --tp 2 --verify --inject-fault 1:40
//                                             tensor parallel, a rank-local fault
//
// See sim/README.md for the model, the options and the trace format.

#include <Kokkos_Core.hpp>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <statexfer/statexfer.hpp>
#include <test_common/models.hpp>
#include <tools/common/openmp_defaults.hpp>

#include "bound.hpp"
#include "comm.hpp"
#include "engine.hpp"
#include "faults.hpp"
#include "policy.hpp"
#include "report.hpp"
#include "sim_config.hpp"
#include "stats.hpp"
#include "traces.hpp"
#include "workload.hpp"

#ifndef STATEXFER_SIM_PLOT_SCRIPT
#define STATEXFER_SIM_PLOT_SCRIPT "plot_steps.py"
#endif

namespace {

namespace sim = statexfer::sim;
using Exec = Kokkos::DefaultExecutionSpace;

sim::Range parse_range(const std::string& text, const char* option) {
  sim::Range r;
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

std::string plot_script(const char* argv0) {
  // Beside the executable (the build copies it there), else the source tree.
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : std::string(argv0);
  dir = dir.substr(0, dir.find_last_of('/') + 1);
  const std::string beside = dir + "plot_steps.py";
  if (std::ifstream(beside)) return beside;
  return STATEXFER_SIM_PLOT_SCRIPT;
}

#ifdef STATEXFER_HAVE_MPI
bool mpi_running() {
  int started = 0, finished = 0;
  MPI_Initialized(&started);
  MPI_Finalized(&finished);
  return started && !finished;
}
#endif

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"})
    if (std::getenv(v)) return true;
  return false;
}

int run(int argc, char* argv[]) {
  sim::SimConfig cfg;
  sim::SyntheticOptions syn;
  std::string trace, dump_trace, json_path, plot_path, trace_format = "auto", policy = "ends", model_name,
                                                       model_writes = "read";
  std::string prefix_len = "256:1024", input_len = "16:256", output_len = "8:48";
  std::vector<std::string> faults;
  std::string commit_move = "remap";
  bool quiet = false, no_progress = false, progress_forced = false, no_graphs = false, no_combine = false,
       no_completion = false;

  CLI::App app{
      "statexfer-sim: simulate a hybrid-model server's prefix-cache state management with statexfer "
      "(snapshot / restore / reset batches through one prepared transfer per step)"};
  app.get_formatter()->column_width(34);
  auto* wl = "Workload (synthetic unless --trace)";
  app.add_option("--requests,-n", syn.requests, "requests to simulate")->group(wl)->capture_default_str();
  app.add_option("--seed", syn.seed, "seed of the synthetic workload")->group(wl)->capture_default_str();
  app.add_option("--prefixes", syn.prefixes, "shared prefix documents (0: none)")->group(wl)->capture_default_str();
  app.add_option("--zipf", syn.zipf, "Zipf exponent of prefix popularity")->group(wl)->capture_default_str();
  app.add_option("--prefix-len", prefix_len, "prefix document length in tokens, N or MIN:MAX")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--input-len", input_len, "own prompt tokens per request, N or MIN:MAX")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--output-len", output_len, "generated tokens per request, N or MIN:MAX")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--followup", syn.followup, "probability that a request continues an earlier conversation")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--max-turns", syn.max_turns, "turns per conversation")->group(wl)->capture_default_str();
  app.add_option("--max-context", syn.max_context, "tokens per request at most (synthetic)")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--trace", trace, "JSON-lines trace to replay instead (see README; --requests N: its first N)")
      ->group(wl)
      ->check(CLI::ExistingFile);
  app.add_option("--trace-format", trace_format,
                 "auto (Mooncake's when the first line has hash_ids or input_length), sim or mooncake; also "
                 "--dump-trace's format")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--trace-block-tokens", cfg.block_tokens,
                 "tokens per block of a Mooncake trace's hash_ids and of the block snapshot policies")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--time-scale", cfg.time_scale, "a trace's arrival = its timestamp (ms) x this (0: all at once)")
      ->group(wl)
      ->capture_default_str();
  app.add_option("--dump-trace", dump_trace, "write the workload as a JSON-lines trace")->group(wl);

  auto* geo = "Pool and model (whole model; each rank holds a shard)";
  app.add_option("--model", model_name,
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

  auto* sch = "Scheduling";
  app.add_option("--chunk", cfg.chunk, "prefill tokens per request and step")->group(sch)->capture_default_str();
  app.add_option("--step-tokens", cfg.step_tokens, "tokens per step over all requests")
      ->group(sch)
      ->capture_default_str();
  app.add_option("--lookahead", cfg.lookahead, "queued requests scanned for one whose parent is done")
      ->group(sch)
      ->capture_default_str();
  app.add_flag("--no-completion-snapshots", no_completion, "do not snapshot finished requests")->group(sch);
  app.add_option("--snapshot-policy", policy,
                 "where prefixes are snapshotted: ends (exact endpoints), all (every block boundary), last (the "
                 "prompt's last block boundary), every:N (every N-th)")
      ->group(sch)
      ->capture_default_str();
  app.add_option("--model-writes", model_writes,
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

  auto* spd = "Speculative decoding (sim/README.md)";
  app.add_option("--spec-tokens", cfg.spec_tokens,
                 "drafts K a decode step verifies (1..7): K position rows per slot, the accepted one committed in "
                 "the next batch (0: plain decoding)")
      ->group(spd)
      ->capture_default_str();
  app.add_option("--accept-rate", cfg.accept_rate,
                 "each draft is accepted with this probability until the first rejection (seeded by --seed)")
      ->group(spd)
      ->capture_default_str();
  app.add_option("--commit-move", commit_move,
                 "remap: a commit swaps the live and the accepted position row in the state rows (no bytes); "
                 "copy: it copies the accepted row into the live row")
      ->group(spd)
      ->capture_default_str();
  app.add_flag("--prefix-keys", cfg.prefix_keys,
               "a prefix_key region in every row without --spec-tokens too: restores, offloads and onloads prove "
               "their row's prefix (always on with --spec-tokens)")
      ->group(spd);

  auto* chk = "Checking and tensor parallelism";
  app.add_flag("--verify,!--no-verify", cfg.verify,
               "check every row and saved page against the contract's oracle after every step")
      ->group(chk);
  app.add_option("--verify-full-every", cfg.verify_full_every, "compare whole caches every N steps (and at the end)")
      ->group(chk)
      ->capture_default_str();
  app.add_option("--tp", cfg.tp, "tensor-parallel ranks (run under mpirun -np N)")->group(chk)->capture_default_str();
  app.add_option(
         "--inject-fault", faults,
         "RANK:STEP[:KIND]: from STEP on, the first command (KIND: snapshot, restore, host-restore, any) with a "
         "partial page finds it unmapped in RANK's page table only; or, on RANK only, the first commit's accepted "
         "position row at a stale endpoint (stale-position), its accepted count K + 1 (accepted-range) or another "
         "valid count (accepted-disagree, --tp 2 or more), the first restore's row holding another prefix's key "
         "(recycled-key) (repeatable)")
      ->group(chk);
  app.add_flag("--no-combine", no_combine, "skip the error combiner (shows why it is needed; needs --verify)")
      ->group(chk);
  app.add_flag("--no-graphs", no_graphs, "CUDA: launch validate and apply directly instead of replaying graphs")
      ->group(chk);

  auto* outg = "Output";
  app.add_option("--json", json_path, "write the JSON report here")->group(outg);
  app.add_option("--plot", plot_path, "plot time per step into this PNG (needs Python with matplotlib)")->group(outg);
  app.add_flag("--progress", progress_forced, "draw the progress bar even when stdout is not a terminal")->group(outg);
  app.add_flag("--no-progress", no_progress, "no progress bar")->group(outg);
  app.add_flag("--quiet,-q", quiet, "no summary (the JSON report and the exit status remain)")->group(outg);

  try {
    app.parse(argc, argv);
    syn.prefix_len = parse_range(prefix_len, "--prefix-len");
    syn.input_len = parse_range(input_len, "--input-len");
    syn.output_len = parse_range(output_len, "--output-len");
    for (const auto& f : faults) {
      try {
        cfg.faults.push_back(sim::parse_fault(f));
      } catch (const std::invalid_argument& e) {
        throw CLI::ValidationError("--inject-fault", e.what());
      }
    }
    if (cfg.tp < 1) throw CLI::ValidationError("--tp", "must be >= 1");
    if (no_combine && !cfg.verify) throw CLI::ValidationError("--no-combine", "needs --verify");
    if (model_writes != "read" && model_writes != "all")
      throw CLI::ValidationError("--model-writes", "expected read or all, got '" + model_writes + "'");
    if (commit_move != "remap" && commit_move != "copy")
      throw CLI::ValidationError("--commit-move", "expected remap or copy, got '" + commit_move + "'");
    if (cfg.spec_tokens < 0 || cfg.spec_tokens > statexfer::max_speculative_positions)
      throw CLI::ValidationError("--spec-tokens", "must be 0 (off) to " +
                                                      std::to_string(statexfer::max_speculative_positions) +
                                                      " (the free columns of the [C, 8] state rows)");
    if (!(cfg.accept_rate >= 0 && cfg.accept_rate <= 1))
      throw CLI::ValidationError("--accept-rate", "must be in [0, 1]");
    for (const auto& f : cfg.faults) {
      const bool commit = f.type == sim::FaultType::stale_position || f.type == sim::FaultType::accepted_range ||
                          f.type == sim::FaultType::accepted_disagree;
      if (commit && cfg.spec_tokens == 0)
        throw CLI::ValidationError("--inject-fault", sim::fault_kind_name(f) + " needs --spec-tokens");
      if (f.type == sim::FaultType::recycled_key && cfg.spec_tokens == 0 && !cfg.prefix_keys)
        throw CLI::ValidationError("--inject-fault", "recycled-key needs prefix keys (--spec-tokens or --prefix-keys)");
      // One rank's accepted count is the acceptance: a different valid count is
      // a different acceptance, which applies (the position row holds the state
      // at that endpoint too); only ranks that read different counts disagree.
      if (f.type == sim::FaultType::accepted_disagree && cfg.tp < 2)
        throw CLI::ValidationError("--inject-fault",
                                   "accepted-disagree needs --tp 2 or more: with one rank a different count is "
                                   "simply the acceptance, and it commits");
    }
    try {
      cfg.policy = sim::SnapshotPolicy::parse(policy);
      if (!model_name.empty()) {
        // The model's sizes, unless given beside it (a host run scales the rows down).
        const auto& m = statexfer::models::find(model_name);
        if (app.count("--row-bytes") == 0) cfg.row_bytes = m.row_bytes();
        if (app.count("--kv-planes") == 0) cfg.kv_planes = m.attention_layers;
        if (app.count("--kv-token-bytes") == 0) cfg.kv_token_bytes = m.kv_token_bytes();
        if (app.count("--draft-planes") == 0) cfg.draft_planes = 0;
      }
    } catch (const std::invalid_argument& e) {
      throw CLI::ValidationError(e.what());
    }
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help: 0; bad arguments: 2
  }
  cfg.model_writes_all = model_writes == "all";
  cfg.commit_copy = commit_move == "copy";
  cfg.accept_seed = syn.seed;
  cfg.graphs = !no_graphs;
  cfg.combine = !no_combine;
  cfg.completion_snapshots = !no_completion;

  sim::Comm comm;
  if (cfg.tp > 1) {
#ifdef STATEXFER_HAVE_MPI
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    comm.comm = MPI_COMM_WORLD;
    MPI_Comm_rank(comm.comm, &comm.rank);
    MPI_Comm_size(comm.comm, &comm.size);
    if (comm.size != cfg.tp) {
      if (comm.rank == 0)
        std::fprintf(stderr, "statexfer-sim: --tp %d but %d MPI ranks: run mpirun -np %d statexfer-sim --tp %d\n",
                     cfg.tp, comm.size, cfg.tp, cfg.tp);
      return 2;
    }
#else
    std::fprintf(stderr, "statexfer-sim: --tp %d needs MPI: this build has STATEXFER_ENABLE_MPI off\n", cfg.tp);
    return 2;
#endif
  } else if (launched_by_mpi() && !quiet) {
    std::fprintf(stderr, "statexfer-sim: note: launched by an MPI launcher without --tp; every process runs alone\n");
  }
  for (const auto& f : cfg.faults)
    if (f.rank >= comm.size) {
      if (comm.rank == 0)
        std::fprintf(stderr, "statexfer-sim: --inject-fault %d:%lld names a rank outside the %d rank(s)\n", f.rank,
                     static_cast<long long>(f.step), comm.size);
      return 2;
    }
  const bool root = comm.rank == 0;

  const sim::TraceFormat format = sim::parse_trace_format(trace_format);
  sim::Workload workload = trace.empty() ? sim::synthesize(syn) : sim::read_trace(trace, format, cfg.block_tokens);
  if (!trace.empty() && app.count("--requests") > 0) workload.truncate(syn.requests);
  if (root && !dump_trace.empty()) {
    const bool mooncake = format == sim::TraceFormat::mooncake ||
                          (format == sim::TraceFormat::automatic && workload.format == "mooncake");
    sim::write_trace(workload, dump_trace, mooncake ? sim::TraceFormat::mooncake : sim::TraceFormat::sim,
                     cfg.block_tokens);
  }
  const sim::ReuseBound bound = sim::attention_bound(workload, cfg.snapshot_rows + cfg.host_snapshot_rows);

  sim::Engine<Exec> engine(cfg, workload, comm);
#ifdef STATEXFER_HAVE_NCCL
  // NCCL on CUDA: the capturable combiner (one GPU per rank).
  ncclComm_t nccl = nullptr;
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
    if (comm.distributed() && cfg.combine) {
      ncclUniqueId id;
      if (root) ncclGetUniqueId(&id);
      MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm.comm);
      if (ncclCommInitRank(&nccl, comm.size, id, comm.rank) != ncclSuccess)
        throw std::runtime_error("ncclCommInitRank failed");
      engine.set_nccl(nccl);
    }
  }
#endif
  engine.prepare();

  sim::ProgressBar bar(root && !quiet && !no_progress && (progress_forced || isatty(STDOUT_FILENO)));
  const sim::Stats& stats = engine.run([&](const sim::Stats& st) { bar.update(st); });
  bar.finish();

  sim::RunInfo info;
  info.config = cfg;
  info.synthetic = syn;
  info.workload = &workload;
  info.width = engine.width();
  info.faults = engine.faults();
  info.kokkos = std::string(Exec::name()) + " (concurrency " + std::to_string(Exec().concurrency()) + ")";
  info.model = model_name;
  info.bound = bound;

  // Every rank's verdict counts.
  // An injected fault must have been refused on every rank (the combined code);
  // no run restores more than the attention-only bound lets any prefix cache reuse.
  const bool within_bound = !bound.available || stats.restored_tokens <= bound.unbounded_tokens;
  if (!within_bound && root)
    std::fprintf(stderr, "statexfer-sim: %lld restored tokens exceed the attention-only bound of %lld\n",
                 static_cast<long long>(stats.restored_tokens), static_cast<long long>(bound.unbounded_tokens));
  const bool ok_here = stats.verify_ok && stats.cross_rank_ok && stats.faults_missed == 0 &&
                       stats.faults_refused == stats.faults_injected && within_bound;
  if (root && stats.faults_refused != stats.faults_injected)
    std::fprintf(stderr, "statexfer-sim: %lld injected fault(s) were not refused on every rank\n",
                 static_cast<long long>(stats.faults_injected - stats.faults_refused));
  const bool ok = comm.min(ok_here ? 1 : 0) == 1;
  if (!stats.verify_ok && !root) std::fprintf(stderr, "statexfer-sim: %s\n", stats.verify_message.c_str());
  if (root) {
    if (!quiet) sim::print_summary(stdout, stats, info);
    if (!json_path.empty()) {
      std::ofstream out(json_path);
      out << sim::report_json(stats, info).dump(2) << '\n';
      if (!out) std::fprintf(stderr, "statexfer-sim: cannot write %s\n", json_path.c_str());
    }
    if (!plot_path.empty() && sim::plot_steps(stats, plot_path, plot_script(argv[0])) && !quiet)
      std::printf("  plot         %s\n", plot_path.c_str());
    if (!ok)
      std::fprintf(stderr, "statexfer-sim: FAILED%s%s\n", stats.verify_message.empty() ? "" : ": ",
                   stats.verify_message.c_str());
  }
#ifdef STATEXFER_HAVE_NCCL
  if (nccl) ncclCommDestroy(nccl);
#endif
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char* argv[]) {
  // --help before Kokkos, which would print its own help for a plain --help.
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0)
      return run(argc, argv);  // prints the help and returns before any Kokkos call
  std::vector<char*> args(argv, argv + argc);
#ifdef KOKKOS_ENABLE_CUDA
  // Several ranks on one node: one GPU each, by local rank, unless chosen already.
  static std::string num_devices;
  const bool chosen = std::any_of(args.begin(), args.end(), [](const char* a) {
    return std::strncmp(a, "--kokkos-device", 15) == 0 || std::strncmp(a, "--kokkos-num-devices", 20) == 0;
  });
  int devices = 0;
  if (!chosen && std::getenv("OMPI_COMM_WORLD_LOCAL_RANK") && cudaGetDeviceCount(&devices) == cudaSuccess &&
      devices > 1) {
    num_devices = "--kokkos-num-devices=" + std::to_string(devices);
    args.push_back(num_devices.data());
  }
#endif
  args.push_back(nullptr);
  argc = static_cast<int>(args.size()) - 1;
  argv = args.data();
  statexfer::tools::state_openmp_binding();  // no OMP_PROC_BIND advice from Kokkos
  Kokkos::initialize(argc, argv);            // takes its --kokkos-* arguments out of argv
  int rc = 0;
  try {
    rc = run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "statexfer-sim: error: %s\n", e.what());
#ifdef STATEXFER_HAVE_MPI
    if (mpi_running()) MPI_Abort(MPI_COMM_WORLD, 2);
#endif
    rc = 2;
  }
  Kokkos::finalize();
#ifdef STATEXFER_HAVE_MPI
  if (mpi_running()) MPI_Finalize();  // run() started MPI for --tp > 1
#endif
  return rc;
}
