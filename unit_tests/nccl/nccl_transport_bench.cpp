// statexfer-nccl-transport-bench: prefill/decode moves between two GPUs of one
// host over NCCL (issue 32's bandwidth), beside a plain send/recv of the same
// bytes. Forked ranks, as statexfer-nccl-check: rank 0 is a prefill instance of
// TP 1 on GPU 0, rank 1 a decode instance of TP 1 on GPU 1. For each model's
// rows and capacity C (every command live), each side's step is one captured
// graph (export validate + apply + send of C records; receive + import
// validate + apply), and the plain exchange another (ncclSend/ncclRecv of
// buffers of the wire's size). Each graph is timed two ways, on the decode
// rank, whose receive ends last:
//   one step at a time: an NCCL barrier (a one-int all-reduce, fenced) before
//     each replay, a fence after: what one step's move costs;
//   back to back: `replays` replays and one fence: what the link carries
//     when steps follow each other (a step's export overlaps the previous
//     import).
// Neither hides a copy behind the transfer: a step's send waits for the
// peer's previous import. A third line keeps two steps in flight, as a server
// that pipelines its moves would: two wire sets (commands, wire buffer, export
// or import, transport; rows apart, so that no row is in two batches at
// once), each side's export or import captured on a compute stream and its
// send or receive on a transfer stream, step n on set n % 2, events between
// (a step's transfer after its export, its import after its receive; an
// export or a receive waits for the step two back to be done with its wire
// buffer). Every NCCL call stays on the transfer stream, in the same order on
// both ranks. Timed as back to back, against the plain exchange back to back.
// The codes the replays leave are checked (0 on both sides and both sets; the
// bytes are statexfer-nccl-transport-check's). One line a shape:
// records' GB/s (C x the record's bytes over the time) and the share of the
// plain exchange's.
//
//   statexfer-nccl-transport-bench [replays]   default 20; needs 2 GPUs; exit 0 when every code was 0

#include <Kokkos_Core.hpp>
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <statexfer/statexfer.hpp>
#include <test_common/models.hpp>

#include "nccl_ranks.hpp"

namespace {

using Exec = Kokkos::Cuda;
using Bytes = Kokkos::View<std::uint8_t*, Exec::memory_space>;

struct Timing {
  double one_at_a_time_s = 0, back_to_back_s = 0;  // a replay's
};

/// A failed CUDA or NCCL call ends this rank (run_ranks() then ends its peer, which would wait for it).
void check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "statexfer-nccl-transport-bench: %s failed\n", what);
  std::fflush(stderr);
  std::_Exit(1);
}
void check(cudaError_t e, const char* what) { check(e == cudaSuccess, what); }
void check(ncclResult_t r, const char* what) { check(r == ncclSuccess, what); }

/// The least of the ranks' `value` (an NCCL all-reduce, fenced): they agree before they go on.
int least(int value, const Exec& exec, ncclComm_t comm) {
  Kokkos::View<int*, Exec::memory_space> v("nccl_transport_bench::least", 1);
  Kokkos::deep_copy(exec, v, value);
  check(ncclAllReduce(v.data(), v.data(), 1, ncclInt, ncclMin, comm, exec.cuda_stream()), "ncclAllReduce");
  int out = 0;
  Kokkos::deep_copy(exec, Kokkos::View<int, Kokkos::HostSpace>(&out), Kokkos::subview(v, 0));
  exec.fence();
  return out;
}
/// The ranks wait for each other (a one-int all-reduce, fenced); every stream of theirs is idle before.
void barrier(const Exec& exec, ncclComm_t comm) {
  Kokkos::View<int*, Exec::memory_space> token("nccl_transport_bench::barrier", 1);
  check(ncclAllReduce(token.data(), token.data(), 1, ncclInt, ncclSum, comm, exec.cuda_stream()), "ncclAllReduce");
  exec.fence();
}

void launch(cudaGraphExec_t graph, const Exec& exec) {
  check(cudaGraphLaunch(graph, exec.cuda_stream()), "cudaGraphLaunch");
}

/// One replay of `graph` per step, each after an NCCL barrier; then `replays` back to back.
Timing time_graph(cudaGraphExec_t graph, const Exec& exec, ncclComm_t comm, int replays) {
  using clock = std::chrono::steady_clock;
  Timing t;
  launch(graph, exec);  // warm-up
  exec.fence();
  for (int r = 0; r < replays; ++r) {
    barrier(exec, comm);
    const auto t0 = clock::now();
    launch(graph, exec);
    exec.fence();
    t.one_at_a_time_s += std::chrono::duration<double>(clock::now() - t0).count();
  }
  barrier(exec, comm);
  const auto t0 = clock::now();
  for (int r = 0; r < replays; ++r) launch(graph, exec);
  exec.fence();
  t.back_to_back_s = std::chrono::duration<double>(clock::now() - t0).count();
  t.one_at_a_time_s /= replays;
  t.back_to_back_s /= replays;
  return t;
}

/// A step's two graphs on one wire set: its export or import (`work`, the compute stream's) and its send or
/// receive (`wire`, the transfer stream's).
struct SetGraphs {
  cudaGraphExec_t work = nullptr, wire = nullptr;
};

/// Two steps in flight (the header says how), `replays` steps after two to warm up; a step's time.
double time_in_flight(const SetGraphs (&sets)[2], const Exec& compute, const Exec& transfer, bool prefill,
                      ncclComm_t comm, int replays) {
  // A step's two stages in its order: prefill, the export (compute stream) then the send (transfer stream);
  // decode, the receive then the import. Each stage's end is an event a set.
  struct Stage {
    const Exec& exec;
    cudaGraphExec_t graph[2];  // a set's
    cudaEvent_t done[2];
  };
  Stage work{compute, {sets[0].work, sets[1].work}, {}}, wire{transfer, {sets[0].wire, sets[1].wire}, {}};
  for (Stage* stage : {&work, &wire})
    for (cudaEvent_t& e : stage->done)
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  Stage& first = prefill ? work : wire;
  Stage& second = prefill ? wire : work;
  const auto after = [](const Stage& stage, cudaEvent_t event) {
    check(cudaStreamWaitEvent(stage.exec.cuda_stream(), event, 0), "cudaStreamWaitEvent");
  };
  const auto run = [](Stage& stage, int s) {
    launch(stage.graph[s], stage.exec);
    check(cudaEventRecord(stage.done[s], stage.exec.cuda_stream()), "cudaEventRecord");
  };
  // Step n of a run: its first stage after the second stage of step n - 2 (the same wire buffer), its second
  // after its first; the first two of a run find their wire buffers free.
  const auto step = [&](int n) {
    const int s = n & 1;
    if (n >= 2) after(first, second.done[s]);
    run(first, s);
    after(second, first.done[s]);
    run(second, s);
  };
  using clock = std::chrono::steady_clock;
  step(0);
  step(1);
  compute.fence();
  transfer.fence();
  barrier(compute, comm);
  const auto t0 = clock::now();
  for (int n = 0; n < replays; ++n) step(n);
  compute.fence();
  transfer.fence();
  const double s = std::chrono::duration<double>(clock::now() - t0).count() / replays;
  for (Stage* stage : {&work, &wire})
    for (cudaEvent_t e : stage->done) cudaEventDestroy(e);
  return s;
}

/// `step` captured on `exec`'s stream and instantiated, or null: a failed
/// call, a step that returned false or threw (the capture ended all the same).
cudaGraphExec_t capture(const Exec& exec, const std::function<bool()>& step) {
  if (cudaStreamBeginCapture(exec.cuda_stream(), cudaStreamCaptureModeGlobal) != cudaSuccess) return nullptr;
  bool ok = false;
  try {
    ok = step();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "statexfer-nccl-transport-bench: %s\n", e.what());
  }
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t instance = nullptr;
  if (cudaStreamEndCapture(exec.cuda_stream(), &graph) != cudaSuccess) return nullptr;
  if (!ok || cudaGraphInstantiate(&instance, graph, 0) != cudaSuccess) instance = nullptr;
  cudaGraphDestroy(graph);
  return instance;
}

/// One wire set of a rank: C commands over its own pool rows, its wire buffer, its export (prefill) or
/// import (decode) and its transport.
struct WireSet {
  statexfer::StateCommands<Exec> commands;
  std::vector<statexfer::WireBuffer<Exec>> wires;
  std::unique_ptr<statexfer::PreparedExport<Exec>> exporter;
  std::unique_ptr<statexfer::PreparedImport<Exec>> importer;
  std::unique_ptr<statexfer::WireTransport<Exec>> transport;

  /// Set `set` of a rank: pool rows set x C + 1 .. set x C + C (the export's endpoints and keys written there).
  WireSet(const statexfer::StatePool<Exec>& pool, const statexfer::ModelLayout& model, std::int64_t c,
          std::int64_t record, int set, bool prefill, ncclComm_t comm, const Exec& exec)
      : commands(statexfer::StateCommands<Exec>::allocate(c)),
        wires{statexfer::WireBuffer<Exec>("nccl_transport_bench::wire", c * record)} {
    const statexfer::StateLayout whole = model.whole();
    statexfer::CommandBatch<Exec> batch(c);
    for (std::int64_t k = 0; k < c; ++k) {
      const std::int64_t row = set * c + k + 1, endpoint = 4096 + k, key = 0x32000 + k;
      if (prefill) {
        for (const auto& [region, value] :
             {std::make_pair("consumed_tokens", endpoint), std::make_pair("prefix_key", key)}) {
          Kokkos::View<const std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(&value, 1);
          Kokkos::View<std::int64_t*, Exec::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> d(
              reinterpret_cast<std::int64_t*>(pool.backing().data() + row * whole.row_bytes() +
                                              whole.region(region).offset),
              1);
          Kokkos::deep_copy(exec, d, h);
        }
        batch.push_back(statexfer::Command::export_row(row, k, endpoint, key));
      } else {
        batch.push_back(statexfer::Command::import_row(k, row, endpoint, key));
      }
    }
    if (prefill)
      exporter = std::make_unique<statexfer::PreparedExport<Exec>>(pool, commands, model, statexfer::GroupRank{1, 0}, 1,
                                                                   wires);
    else
      importer = std::make_unique<statexfer::PreparedImport<Exec>>(pool, commands, model, 1, statexfer::GroupRank{1, 0},
                                                                   wires);
    transport = std::make_unique<statexfer::WireTransport<Exec>>(model, c, comm, std::vector<int>{0},
                                                                 std::vector<int>{1}, wires);
    prefill ? exporter->prepare(exec) : importer->prepare(exec);
    transport->prepare(exec);
    commands.upload(exec, batch);
    exec.fence();
  }
  void work(const Exec& exec) const {
    if (exporter) {
      exporter->validate(exec);
      exporter->apply(exec);
    } else {
      importer->validate(exec);
      importer->apply(exec);
    }
  }
  void wire(const Exec& exec, std::int64_t c) const {
    exporter ? transport->send(exec, c) : transport->receive(exec, c);
  }
};

/// The codes set `set`'s last replay left; failures (the first few printed).
int check_codes(const WireSet& w, int set, int rank, const std::string& name, std::int64_t c) {
  int failures = 0;
  auto errors = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w.commands.errors);
  for (std::int64_t k = 0; k < c; ++k)
    if (errors(k) != 0 && failures++ < 4)
      std::fprintf(stderr, "rank %d: %s C = %lld: set %d command %lld has code %d\n", rank, name.c_str(),
                   static_cast<long long>(c), set, static_cast<long long>(k), errors(k));
  return failures;
}

/// One model and capacity on this rank; failures (codes other than 0, a capture that failed).
int shape(ncclComm_t comm, int rank, const std::string& name, std::int64_t c, int replays) {
  const bool prefill = rank == 0;
  const statexfer::ModelLayout model(statexfer::models::model_regions(statexfer::models::find(name), 16, true), 16);
  const std::int64_t record = statexfer::record_bytes(model, {1, 0}, {1, 0});
  statexfer::StatePool<Exec> pool(model.whole(), 2 * c + 1, 1);
  const Bytes plain("nccl_transport_bench::plain", static_cast<std::size_t>(c * record));
  cudaStream_t streams[2];
  for (auto& s : streams) check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  int failures = 0;
  {
    const Exec exec(streams[0]), transfer(streams[1]);
    const WireSet sets[2] = {WireSet(pool, model, c, record, 0, prefill, comm, exec),
                             WireSet(pool, model, c, record, 1, prefill, comm, exec)};
    // One stream (set 0): export + send, or receive + import.
    const cudaGraphExec_t step = capture(exec, [&] {
      if (!prefill) sets[0].wire(exec, c);
      sets[0].work(exec);
      if (prefill) sets[0].wire(exec, c);
      return true;
    });
    const cudaGraphExec_t bare = capture(exec, [&] {
      // Ended whatever failed in it (NCCL pairs every start with an end).
      if (ncclGroupStart() != ncclSuccess) return false;
      const ncclResult_t rc = prefill ? ncclSend(plain.data(), plain.size(), ncclUint8, 1, comm, streams[0])
                                      : ncclRecv(plain.data(), plain.size(), ncclUint8, 0, comm, streams[0]);
      return (ncclGroupEnd() == ncclSuccess) && rc == ncclSuccess;
    });
    SetGraphs in_flight[2];
    bool captured = step != nullptr && bare != nullptr;
    for (int s = 0; s < 2; ++s) {
      in_flight[s].work = capture(exec, [&] {
        sets[s].work(exec);
        return true;
      });
      in_flight[s].wire = capture(transfer, [&] {
        sets[s].wire(transfer, c);
        return true;
      });
      captured = captured && in_flight[s].work != nullptr && in_flight[s].wire != nullptr;
    }
    // Both ranks measure, or neither: one alone would wait in NCCL for the other.
    if (least(captured ? 1 : 0, exec, comm) == 0) {
      std::fprintf(stderr, "rank %d: %s C = %lld: a capture failed (here or on the peer)\n", rank, name.c_str(),
                   static_cast<long long>(c));
      ++failures;
    } else {
      const Timing moved = time_graph(step, exec, comm, replays);
      const Timing sent = time_graph(bare, exec, comm, replays);
      const double pipelined_s = time_in_flight(in_flight, exec, transfer, prefill, comm, replays);
      for (int s = 0; s < 2; ++s) failures += check_codes(sets[s], s, rank, name, c);
      if (!prefill) {
        const double bytes = static_cast<double>(c * record);
        const auto gbps = [&](double s) { return bytes / s / 1e9; };
        std::printf(
            "%-28s C = %3lld  %9.1f MiB  one step at a time: %8.1f us, %6.1f GB/s against plain %6.1f GB/s (%5.1f%%)"
            "  back to back: %8.1f us, %6.1f GB/s against %6.1f GB/s (%5.1f%%)"
            "  two steps in flight: %8.1f us, %6.1f GB/s (%5.1f%%)\n",
            name.c_str(), static_cast<long long>(c), bytes / 1048576.0, 1e6 * moved.one_at_a_time_s,
            gbps(moved.one_at_a_time_s), gbps(sent.one_at_a_time_s), 100 * sent.one_at_a_time_s / moved.one_at_a_time_s,
            1e6 * moved.back_to_back_s, gbps(moved.back_to_back_s), gbps(sent.back_to_back_s),
            100 * sent.back_to_back_s / moved.back_to_back_s, 1e6 * pipelined_s, gbps(pipelined_s),
            100 * sent.back_to_back_s / pipelined_s);
      }
    }
    for (cudaGraphExec_t g : {step, bare, in_flight[0].work, in_flight[0].wire, in_flight[1].work, in_flight[1].wire})
      if (g != nullptr) cudaGraphExecDestroy(g);
  }
  for (auto& s : streams) cudaStreamDestroy(s);
  return failures;
}

}  // namespace

int main(int argc, char* argv[]) {
  const int replays = argc > 1 ? std::atoi(argv[1]) : 20;
  if (replays < 1 || statexfer::test::visible_gpus() < 2) {
    std::fprintf(stderr, "statexfer-nccl-transport-bench: needs 2 GPUs and replays >= 1\n");
    return 2;
  }
  const int failed = statexfer::test::run_ranks(2, argv[0], [&](ncclComm_t comm, int rank) {
    int failures = 0;
    for (const char* name : {"qwen3.5-9b", "nemotron-3-super-120b-a12b"})
      for (const std::int64_t c : {1, 8, 64}) failures += shape(comm, rank, name, c, replays);
    return failures;
  });
  std::printf("statexfer-nccl-transport-bench: %s\n", failed == 0 ? "every code 0" : "FAILED");
  return failed == 0 ? 0 : 1;
}
