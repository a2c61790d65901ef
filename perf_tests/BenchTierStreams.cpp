// Host-tier moves off the step's critical path (--set tier-streams; issue 29,
// docs/CONTRACT.md §15): two transfers over one pool of qwen3.5-9b rows
// (MODELS.md) and its host tier share one RowClaims, each prepared on its own
// Kokkos::Cuda instance over its own cudaStream (BenchInstance): the model's
// stream runs a device batch (4 snapshots at capacity 64), the tier stream one
// offload (a 49.1 MiB row, device -> pinned host). Each step is a graph
// (validate_and_apply(): two launches with claims) replayed as BenchTransfer.cpp
// does. The tier transfer's compact grid gets options.expert.apply_teams =
// SMs/32, SMs/16, SMs/12, SMs/8, SMs/4, SMs/2, SMs and the default (10 an SM,
// named teams-wave), and SMs/16 and SMs/8 again with 8 KiB units
// (options.expert.compact_words = 4, named teams-T-words-4):
//
//   tier-streams/qwen3.5-9b/memcpy_d2h_eager   the yardstick: cudaMemcpyAsync of the row into pinned memory
//   tier-streams/qwen3.5-9b/memcpy_d2h_graph   the same captured in a graph
//   tier-streams/qwen3.5-9b/device_alone       the device batch alone
//   tier-streams/qwen3.5-9b/teams-T/offload_alone   the offload alone: of_memcpy = memcpy / offload
//   tier-streams/qwen3.5-9b/teams-T/offload_beside  the offload while the model's stream runs device batches
//   tier-streams/qwen3.5-9b/teams-T/device_beside   the device batch while the tier stream runs offloads:
//                                                   beside_over_alone = its time / its time alone
//
// A "beside" iteration times the work alone, then again while the other stream
// replays its own in chunks of about half a millisecond, kept two chunks ahead
// from before the window opens until it closes; `covered` is the share of
// iterations in which the other stream was still busy when the timed one
// finished (1: the overlap held for the whole window). The two-stream records
// need CUDA: on host backends one instance runs one step at a time, so they are
// skipped with a message and the alone records run sequentially.

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <test_common/models.hpp>

#include "bench_common.hpp"

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime.h>
#endif

namespace statexfer::bench {

namespace {

constexpr std::int64_t capacity = 64, device_live = 4, snapshot_rows = 8;
constexpr int device_replays = 20, tier_replays = 5;

enum class Kind { device_alone, offload_alone, offload_beside, device_beside };

Shape qwen_shape() {
  const auto& m = models::find("qwen3.5-9b");
  // Eight live commands at set-up: snapshot rows 0..7 hold rows of a known endpoint.
  return {capacity, m.row_bytes(), m.attention_layers, m.page_bytes(16), 0, 16, 16, 0, snapshot_rows};
}

double eager_memcpy_seconds = 0;  // the memcpy_d2h_eager record's mean, for the offload records

// The device batch on the model's instance and the offload on the tier's, over one pool and claims.
struct TwoStreams {
  BenchInstance model, tier;
  std::unique_ptr<Workload> w;
  statexfer::StateCommands<Exec> tier_commands;
  statexfer::CommandBatch<Exec> tier_batch{capacity};
  std::unique_ptr<statexfer::PreparedStateTransfer<Exec>> tier_transfer;

  TwoStreams(int teams, int words) {
    WorkloadOptions options;
    options.host_rows = 2;
    options.snapshot_rows = snapshot_rows;
    options.claims = true;
    w = std::make_unique<Workload>(qwen_shape(), model.exec(), options);
    w->batch.resize(device_live);
    tier_commands = statexfer::StateCommands<Exec>::allocate(capacity);
    statexfer::TransferConfig<Exec> config = w->config;
    config.options.expert.apply_teams = teams;
    config.options.expert.compact_words = words;
    tier_transfer = std::make_unique<statexfer::PreparedStateTransfer<Exec>>(w->pool, tier_commands, w->tables, config);
    tier_transfer->prepare(tier.exec());
    // Snapshot row 7, which no device command of the timed batch touches, to host row 1.
    const std::int64_t source = w->first_snapshot + snapshot_rows - 1;
    tier_batch.set(0, statexfer::Command::offload(source, 1, consumed_of(w->pool.backing(), source)));
    tier_batch.resize(1);
    w->upload(model.exec());
    tier_commands.upload(tier.exec(), tier_batch);
    // Both batches once, one after the other: every command must apply.
    w->transfer->validate_and_apply(model.exec());
    model.exec().fence();
    tier_transfer->validate_and_apply(tier.exec());
    tier.exec().fence();
    check(w->commands.errors, device_live, "device batch");
    check(tier_commands.errors, 1, "offload");
  }

  static void check(const Kokkos::View<std::int32_t*, Exec::memory_space>& errors, std::int64_t n,
                    const std::string& what) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), errors);
    for (std::int64_t i = 0; i < n; ++i)
      if (h(i) != 0)
        throw std::runtime_error(what + ": command " + std::to_string(i) + " got code " + std::to_string(h(i)));
  }
};

#ifdef KOKKOS_ENABLE_CUDA
bool busy(const BenchInstance& instance) { return cudaStreamQuery(instance.stream()) == cudaErrorNotReady; }

// `timed`'s n replays while `other` replays in chunks of about half a
// millisecond, two chunks ahead of the host, from before the window opens until
// it closes; `covered` says whether `other` was still busy at its end.
double beside(Replayer& timed, int n, Replayer& other, const BenchInstance& other_instance, int chunk, bool& covered) {
  cudaEvent_t marks[2];
  for (auto& m : marks) cudaEventCreateWithFlags(&m, cudaEventDisableTiming);
  const auto enqueue = [&](cudaEvent_t mark) {
    for (int i = 0; i < chunk; ++i) other.launch();
    cudaEventRecord(mark, other_instance.stream());
  };
  enqueue(marks[0]);
  enqueue(marks[1]);
  int oldest = 0;
  timed.begin(n);
  while (!timed.done())
    if (cudaEventQuery(marks[oldest]) == cudaSuccess) enqueue(marks[oldest]), oldest ^= 1;
  const double s = timed.end();
  covered = busy(other_instance);
  other_instance.exec().fence();
  for (auto& m : marks) cudaEventDestroy(m);
  return s;
}
#endif

void run(benchmark::State& state, int teams, int words, Kind kind) {
  std::unique_ptr<TwoStreams> pair;
  try {
    pair = std::make_unique<TwoStreams>(teams, words);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  TwoStreams& p = *pair;
  Replayer device(p.model, [&](const Exec& e) { p.w->transfer->validate_and_apply(e); });
  Replayer offload(p.tier, [&](const Exec& e) { p.tier_transfer->validate_and_apply(e); });
  device.seconds_per_replay(5);
  offload.seconds_per_replay(2);
  const double device_s = device.seconds_per_replay(device_replays);
  const double offload_s = offload.seconds_per_replay(tier_replays);
  const bool timed_device = kind == Kind::device_alone || kind == Kind::device_beside;
  Replayer& timed = timed_device ? device : offload;
  Replayer& other = timed_device ? offload : device;
  const BenchInstance& other_instance = timed_device ? p.tier : p.model;
  const int n = timed_device ? device_replays : tier_replays;
  const double other_s = timed_device ? offload_s : device_s;
  const int chunk = std::max(1, static_cast<int>(std::ceil(0.5e-3 / std::max(other_s, 1e-9))));
  const bool beside_kind = kind == Kind::offload_beside || kind == Kind::device_beside;
  double alone_total = 0, total = 0;
  std::int64_t iterations = 0, covered = 0;
#ifndef KOKKOS_ENABLE_CUDA
  (void)other, (void)other_instance, (void)chunk;  // the beside records need two streams
#endif
  for (auto _ : state) {
    double s = timed.seconds_per_replay(n);
#ifdef KOKKOS_ENABLE_CUDA
    if (beside_kind) {
      alone_total += s;
      bool busy_at_end = false;
      s = beside(timed, n, other, other_instance, chunk, busy_at_end);
      covered += busy_at_end ? 1 : 0;
    }
#endif
    state.SetIterationTime(s);
    total += s, ++iterations;
  }
  const double mean = iterations > 0 ? total / static_cast<double>(iterations) : 0.0;
  // Claims refused between the streams (code 7) would leave a batch moving nothing: the last replays' codes.
  p.model.exec().fence();
  p.tier.exec().fence();
  try {
    TwoStreams::check(p.w->commands.errors, device_live, "device batch after the replays");
    TwoStreams::check(p.tier_commands.errors, 1, "offload after the replays");
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
  const auto plan = p.tier_transfer->launch_plan();
  state.counters["row_bytes"] = static_cast<double>(p.w->pool.row_bytes());
  state.counters["teams"] = static_cast<double>(plan.compact_teams);
  if (!timed_device) {
    state.counters["host_link_GBps"] = benchmark::Counter(static_cast<double>(p.w->pool.row_bytes()) * 1e-9,
                                                          benchmark::Counter::kIsIterationInvariantRate);
    if (eager_memcpy_seconds > 0) {
      state.counters["memcpy_us"] = eager_memcpy_seconds * 1e6;
      state.counters["of_memcpy"] = mean > 0 ? eager_memcpy_seconds / mean : 0.0;
    }
  } else {
    state.counters["device_bytes_rw"] = 2.0 * static_cast<double>(p.w->bytes_written);
  }
  if (beside_kind && iterations > 0) {
    const double alone = alone_total / static_cast<double>(iterations);
    state.counters[timed_device ? "device_alone_us" : "offload_alone_us"] = alone * 1e6;
    state.counters["beside_over_alone"] = alone > 0 ? mean / alone : 0.0;
    state.counters["covered"] = static_cast<double>(covered) / static_cast<double>(iterations);
    state.counters["other_chunk"] = chunk;
  }
  state.SetLabel(timed_device ? p.w->transfer->launch_summary() : p.tier_transfer->launch_summary());
}

#ifdef KOKKOS_ENABLE_CUDA
// The yardstick of the host link: the row into pinned memory by the copy engines.
void run_memcpy(benchmark::State& state, bool eager) {
  const BenchInstance instance;
  const std::int64_t bytes = layout_row_bytes(qwen_shape());
  Kokkos::View<std::uint8_t*, Exec::memory_space> device("bench::tier_streams_device", bytes);
  Kokkos::View<std::uint8_t*, Kokkos::CudaHostPinnedSpace> host("bench::tier_streams_host", bytes);
  auto copy = [&](const Exec&) {
    cudaMemcpyAsync(host.data(), device.data(), bytes, cudaMemcpyDeviceToHost, instance.stream());
  };
  double total = 0;
  std::int64_t iterations = 0;
  if (eager) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    copy(instance.exec());
    for (auto _ : state) {
      cudaEventRecord(a, instance.stream());
      for (int i = 0; i < tier_replays; ++i) copy(instance.exec());
      cudaEventRecord(b, instance.stream());
      cudaEventSynchronize(b);
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      const double s = ms * 1e-3 / tier_replays;
      state.SetIterationTime(s);
      total += s, ++iterations;
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    if (iterations > 0) eager_memcpy_seconds = total / static_cast<double>(iterations);
  } else {
    Replayer replayer(instance, copy);
    replayer.seconds_per_replay(2);
    for (auto _ : state) state.SetIterationTime(replayer.seconds_per_replay(tier_replays));
  }
  state.counters["row_bytes"] = static_cast<double>(bytes);
  state.counters["host_link_GBps"] =
      benchmark::Counter(static_cast<double>(bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
#endif

void add(const std::string& name, std::function<void(benchmark::State&)> f) {
  benchmark::RegisterBenchmark(name.c_str(), std::move(f))
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(0.05);
}

}  // namespace

void register_tier_stream_benchmarks() {
  const std::string prefix = "tier-streams/qwen3.5-9b/";
  std::vector<std::pair<int, int>> teams;  // (teams, words a thread; 0: the default)
#ifdef KOKKOS_ENABLE_CUDA
  add(prefix + "memcpy_d2h_eager", [](benchmark::State& st) { run_memcpy(st, true); });
  add(prefix + "memcpy_d2h_graph", [](benchmark::State& st) { run_memcpy(st, false); });
  cudaDeviceProp prop{};
  int device = 0;
  cudaGetDevice(&device);
  cudaGetDeviceProperties(&prop, device);
  const int sms = prop.multiProcessorCount;
  for (const int share : {32, 16, 12, 8, 4, 2, 1}) teams.emplace_back(std::max(1, sms / share), 0);
  // Units of 8 KiB: twice the bytes a team keeps in flight over the host link.
  for (const int share : {16, 8}) teams.emplace_back(std::max(1, sms / share), 4);
  const bool two_streams = true;
#else
  teams.emplace_back(1, 0);  // one thread of the host's
  const bool two_streams = false;
#endif
  teams.emplace_back(0, 0);  // the default: 10 teams an SM on GPUs, every thread on hosts
  add(prefix + "device_alone", [](benchmark::State& st) { run(st, 0, 0, Kind::device_alone); });
  for (const auto& [t, words] : teams) {
    const std::string name = prefix + (t == 0 ? std::string("teams-wave") : "teams-" + std::to_string(t)) +
                             (words != 0 ? "-words-" + std::to_string(words) : std::string()) + "/";
    add(name + "offload_alone",
        [t = t, words = words](benchmark::State& st) { run(st, t, words, Kind::offload_alone); });
    for (const auto& [step, kind] :
         {std::pair{"offload_beside", Kind::offload_beside}, std::pair{"device_beside", Kind::device_beside}}) {
      if (two_streams)
        add(name + step, [t = t, words = words, kind = kind](benchmark::State& st) { run(st, t, words, kind); });
      else
        add(name + step, [](benchmark::State& st) {
          st.SkipWithError(
              "two streams need CUDA: on host backends one instance runs one step at a time (the alone records ran)");
        });
    }
  }
}

}  // namespace statexfer::bench
