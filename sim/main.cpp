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
// See sim/README.md for the model, the options and the trace format. In order:
// the command line (options.cpp), MPI for --tp > 1, Kokkos, the simulation,
// the report; then Kokkos and MPI end in reverse.

#include <Kokkos_Core.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <statexfer/statexfer.hpp>
#include <tools/common/openmp_defaults.hpp>

#include "bound.hpp"
#include "comm.hpp"
#include "engine.hpp"
#include "options.hpp"
#include "report.hpp"
#include "stats.hpp"
#include "traces.hpp"
#include "workload.hpp"
#ifdef STATEXFER_HAVE_MPI
#include "pd_run.hpp"
#endif

#ifndef STATEXFER_SIM_PLOT_SCRIPT
#define STATEXFER_SIM_PLOT_SCRIPT "plot_steps.py"
#endif

namespace {

namespace sim = statexfer::sim;
using Exec = Kokkos::DefaultExecutionSpace;

// --- start-up: arguments, MPI ------------------------------------------------------

/// The simulator's arguments and Kokkos' (--kokkos-*), each after argv[0] and
/// ending in a null pointer, as Kokkos::initialize and CLI11 take them.
struct Arguments {
  std::vector<char*> sim, kokkos;
  std::string num_devices;  // storage of an added --kokkos-num-devices
};

Arguments split_arguments(int argc, char* argv[]) {
  Arguments a;
  a.sim.push_back(argv[0]);
  a.kokkos.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) (std::strncmp(argv[i], "--kokkos-", 9) == 0 ? a.kokkos : a.sim).push_back(argv[i]);
#ifdef KOKKOS_ENABLE_CUDA
  // Several ranks on one node: one GPU each, by local rank, unless chosen already.
  const bool chosen = std::any_of(a.kokkos.begin() + 1, a.kokkos.end(), [](const char* k) {
    return std::strncmp(k, "--kokkos-device", 15) == 0 || std::strncmp(k, "--kokkos-num-devices", 20) == 0;
  });
  int devices = 0;
  if (!chosen && std::getenv("OMPI_COMM_WORLD_LOCAL_RANK") && cudaGetDeviceCount(&devices) == cudaSuccess &&
      devices > 1) {
    a.num_devices = "--kokkos-num-devices=" + std::to_string(devices);
    a.kokkos.push_back(a.num_devices.data());
  }
#endif
  a.sim.push_back(nullptr);
  a.kokkos.push_back(nullptr);
  return a;
}

bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_STEP_NUM_TASKS"})
    if (std::getenv(v)) return true;
  return false;
}

/// MPI for --tp > 1: started before Kokkos (Kokkos' documented order; on
/// CUDA it binds the device by rank), finalized after Kokkos::finalize().
class MpiSession {
 public:
  /// The rank group: `comm` (one rank without --tp); an exit status when the
  /// ranks do not fit the options (printed), else -1.
  int start(const sim::Options& o, int* argc, char*** argv) {
    if (o.cfg.tp > 1 || o.pd.enabled) {
#ifdef STATEXFER_HAVE_MPI
      int provided = 0;
      MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
      started_ = true;
      comm.comm = MPI_COMM_WORLD;
      MPI_Comm_rank(comm.comm, &comm.rank);
      MPI_Comm_size(comm.comm, &comm.size);
      if (o.pd.enabled) {
        const int ranks = o.pd.prefill_tp + o.pd.decode_tp;
        if (comm.size != ranks) {
          if (comm.rank == 0)
            std::fprintf(stderr,
                         "statexfer-sim: --pd --prefill-tp %d --decode-tp %d but %d MPI ranks: run mpirun -np %d\n",
                         o.pd.prefill_tp, o.pd.decode_tp, comm.size, ranks);
          return 2;
        }
        return -1;
      }
      if (comm.size != o.cfg.tp) {
        if (comm.rank == 0)
          std::fprintf(stderr, "statexfer-sim: --tp %d but %d MPI ranks: run mpirun -np %d statexfer-sim --tp %d\n",
                       o.cfg.tp, comm.size, o.cfg.tp, o.cfg.tp);
        return 2;
      }
#else
      (void)argc, (void)argv;
      std::fprintf(stderr, "statexfer-sim: --tp %d or --pd needs MPI: this build has STATEXFER_ENABLE_MPI off\n",
                   o.cfg.tp);
      return 2;
#endif
    } else if (launched_by_mpi() && !o.quiet) {
      std::fprintf(stderr, "statexfer-sim: note: launched by an MPI launcher without --tp; every process runs alone\n");
    }
    for (const auto& f : o.cfg.faults)
      if (f.rank >= comm.size) {
        if (comm.rank == 0)
          std::fprintf(stderr, "statexfer-sim: --inject-fault %d:%lld names a rank outside the %d rank(s)\n", f.rank,
                       static_cast<long long>(f.step), comm.size);
        return 2;
      }
    return -1;
  }

  /// After an error on one rank: the others would wait for it forever.
  void abort(int status) const {
#ifdef STATEXFER_HAVE_MPI
    if (started_) MPI_Abort(MPI_COMM_WORLD, status);
#endif
    (void)status;
  }

  ~MpiSession() {
#ifdef STATEXFER_HAVE_MPI
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (started_ && !finalized) MPI_Finalize();
#endif
  }

  sim::Comm comm;

 private:
  bool started_ = false;
};

#ifdef STATEXFER_HAVE_NCCL
/// NCCL on CUDA across ranks: the communicators of the capturable combiners
/// (one GPU per rank): the step's, and the tier batches' on the tier stream
/// (--tier-moves stream; two streams must not share one), made before the
/// engine and destroyed after it.
class NcclGroup {
 public:
  NcclGroup(const sim::Comm& comm, const sim::SimConfig& cfg) {
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      if (!comm.distributed() || !cfg.combine) return;
      step_ = make(comm);
      if (cfg.host_snapshot_rows > 0 && cfg.tier_stream) tier_ = make(comm);
    }
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  ~NcclGroup() {
    for (ncclComm_t c : {step_, tier_}) {
      if (c == nullptr) continue;
      const ncclResult_t r = ncclCommDestroy(c);
      if (r != ncclSuccess) std::fprintf(stderr, "statexfer-sim: ncclCommDestroy failed: %s\n", ncclGetErrorString(r));
    }
  }
  ncclComm_t step() const { return step_; }
  ncclComm_t tier() const { return tier_; }

 private:
  static ncclComm_t make(const sim::Comm& comm) {
    ncclUniqueId id;
    if (comm.rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm.comm);
    ncclComm_t c = nullptr;
    check(ncclCommInitRank(&c, comm.size, id, comm.rank), "ncclCommInitRank");
    return c;
  }
  static void check(ncclResult_t r, const char* call) {
    if (r != ncclSuccess) throw std::runtime_error(std::string(call) + " failed: " + ncclGetErrorString(r));
  }
  ncclComm_t step_ = nullptr, tier_ = nullptr;
};
#endif

// --- the run -------------------------------------------------------------------------

/// The synthetic workload or the trace (--requests N: its first N); rank 0
/// writes it out with --dump-trace.
sim::Workload load_workload(const sim::Options& o, bool root) {
  sim::Workload w =
      o.trace.empty() ? sim::synthesize(o.syn) : sim::read_trace(o.trace, o.trace_format, o.cfg.block_tokens);
  if (!o.trace.empty() && o.requests_given) w.truncate(o.syn.requests);
  if (root && !o.dump_trace.empty()) {
    const bool mooncake = o.trace_format == sim::TraceFormat::mooncake ||
                          (o.trace_format == sim::TraceFormat::automatic && w.format == "mooncake");
    sim::write_trace(w, o.dump_trace, mooncake ? sim::TraceFormat::mooncake : sim::TraceFormat::sim,
                     o.cfg.block_tokens);
  }
  return w;
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

/// Every rank's verdict counts: an injected fault must have been refused on
/// every rank (the combined code; an offload-race refused with code 7 or
/// applied after the offload, faults.hpp), and no run restores more than the
/// attention-only bound lets any prefix cache reuse.
bool verdict(const sim::Stats& stats, const sim::ReuseBound& bound, const sim::Comm& comm) {
  const bool root = comm.rank == 0;
  const bool within_bound = !bound.available || stats.restored_tokens <= bound.unbounded_tokens;
  if (!within_bound && root)
    std::fprintf(stderr, "statexfer-sim: %lld restored tokens exceed the attention-only bound of %lld\n",
                 static_cast<long long>(stats.restored_tokens), static_cast<long long>(bound.unbounded_tokens));
  const bool ok_here = stats.verify_ok && stats.cross_rank_ok && stats.faults_missed == 0 &&
                       stats.faults_settled == stats.faults_injected && within_bound;
  if (root && stats.faults_settled != stats.faults_injected)
    std::fprintf(stderr, "statexfer-sim: %lld injected fault(s) were not refused on every rank\n",
                 static_cast<long long>(stats.faults_injected - stats.faults_settled));
  if (!stats.verify_ok && !root) std::fprintf(stderr, "statexfer-sim: %s\n", stats.verify_message.c_str());
  return comm.min(ok_here ? 1 : 0) == 1;
}

/// Rank 0: the summary, the JSON report, the plot, the failure line.
void report(const sim::Options& o, const sim::Stats& stats, const sim::RunInfo& info, bool ok, const char* argv0) {
  if (!o.quiet) sim::print_summary(stdout, stats, info);
  if (!o.json_path.empty()) {
    std::ofstream out(o.json_path);
    out << sim::report_json(stats, info).dump(2) << '\n';
    if (!out) std::fprintf(stderr, "statexfer-sim: cannot write %s\n", o.json_path.c_str());
  }
  if (!o.plot_path.empty() && sim::plot_steps(stats, o.plot_path, plot_script(argv0)) && !o.quiet)
    std::printf("  plot         %s\n", o.plot_path.c_str());
  if (!ok)
    std::fprintf(stderr, "statexfer-sim: FAILED%s%s\n", stats.verify_message.empty() ? "" : ": ",
                 stats.verify_message.c_str());
}

/// The simulation on this rank; the exit status (0 success, 1 a failed check).
int simulate(const sim::Options& o, const sim::Comm& comm, const char* argv0) {
  const bool root = comm.rank == 0;
  const sim::Workload workload = load_workload(o, root);
  const sim::ReuseBound bound = sim::attention_bound(workload, o.cfg.snapshot_rows + o.cfg.host_snapshot_rows);
#ifdef STATEXFER_HAVE_NCCL
  const NcclGroup nccl(comm, o.cfg);
#endif
  sim::Engine<Exec> engine(o.cfg, workload, comm);
#ifdef STATEXFER_HAVE_NCCL
  if (nccl.step() != nullptr) engine.set_nccl(nccl.step(), nccl.tier());
#endif
  engine.prepare();

  sim::ProgressBar bar(root && !o.quiet && !o.no_progress && (o.progress_forced || isatty(STDOUT_FILENO)));
  const sim::Stats& stats = engine.run([&](const sim::Stats& st) { bar.update(st); });
  bar.finish();

  sim::RunInfo info;
  info.config = o.cfg;
  info.synthetic = o.syn;
  info.workload = &workload;
  info.width = engine.width();
  info.faults = engine.faults();
  info.kokkos = std::string(Exec::name()) + " (concurrency " + std::to_string(Exec().concurrency()) + ")";
  info.model = o.model_name;
  info.bound = bound;
  const bool ok = verdict(stats, bound, comm);
  if (root) report(o, stats, info, ok, argv0);
  return ok ? 0 : 1;
}

/// --pd: the prefill and decode instances (pd_run.hpp); world rank 0 reports.
int simulate_pd(const sim::Options& o, const sim::Comm& comm) {
#ifdef STATEXFER_HAVE_MPI
  const sim::Workload workload = load_workload(o, comm.rank == 0);
  const sim::PdOutcome out = sim::run_pd(o, workload, comm.comm);
  if (comm.rank == 0) {
    if (!o.quiet) sim::print_pd_summary(stdout, o, out);
    if (!o.json_path.empty()) {
      std::ofstream file(o.json_path);
      file << sim::pd_report_json(o, out).dump(2) << '\n';
      if (!file) std::fprintf(stderr, "statexfer-sim: cannot write %s\n", o.json_path.c_str());
    }
    if (!out.ok) std::fprintf(stderr, "statexfer-sim: FAILED\n");
  }
  return out.ok ? 0 : 1;
#else
  (void)o, (void)comm;
  return 2;
#endif
}

}  // namespace

int main(int argc, char* argv[]) {
  Arguments args = split_arguments(argc, argv);
  sim::Options options;
  // --help and bad arguments end here, before MPI and Kokkos start.
  if (const int status = sim::parse_options(static_cast<int>(args.sim.size()) - 1, args.sim.data(), options);
      status >= 0)
    return status;
  MpiSession mpi;
  if (const int status = mpi.start(options, &argc, &argv); status >= 0) return status;

  statexfer::tools::state_openmp_binding();  // no OMP_PROC_BIND advice from Kokkos
  int kokkos_argc = static_cast<int>(args.kokkos.size()) - 1;
  Kokkos::initialize(kokkos_argc, args.kokkos.data());
  int rc = 0;
  try {
    rc = options.pd.enabled ? simulate_pd(options, mpi.comm) : simulate(options, mpi.comm, argv[0]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "statexfer-sim: error: %s\n", e.what());
    mpi.abort(2);
    rc = 2;
  }
  Kokkos::finalize();
  return rc;  // ~MpiSession finalizes MPI
}
