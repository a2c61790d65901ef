// Host tier moves in statexfer's own batches (--set tiers): how long a batch of
// device snapshots takes alone, a tier move (offload: device row -> host row;
// onload: host row -> device row) alone, and both in one batch, with
// validate_and_apply() captured and replayed as BenchTransfer.cpp does. A mixed
// batch that takes as long as its slower part has moved its device rows in the
// shadow of the host link. On CUDA, pinned cudaMemcpyAsync of one row (eager,
// and captured in a graph) are the yardsticks of the host link.
//
// Batches of capacity 8 over the workload of bench_common.hpp (commands i:
// snapshot of live row 1 + i into row 9 + i, applied once at set-up):
//   snapshots4        commands 0..3
//   offload1          row 16 (command 7's snapshot) -> host row 1
//   snapshots4+offload1
//   onload1           host row 1 (row 16's bytes) -> row 15
//   snapshots4+onload1

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace statexfer::bench {

namespace {

constexpr std::int64_t KiB = 1024, MiB = 1024 * KiB;

enum class Batch { snapshots4, offload1, mixed_offload, onload1, mixed_onload };

void run(benchmark::State& state, const Shape& shape, Batch batch) {
  const BenchInstance instance;
  std::unique_ptr<Workload> workload;
  try {
    workload = std::make_unique<Workload>(shape, instance.exec(), WorkloadOptions{2});
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  Workload& w = *workload;
  const std::int64_t c = shape.capacity, moved = c + 8, onloaded = c + 7, host_row = 1;
  const statexfer::Command snapshot0 = w.batch[0];
  auto offload_at = [&](int i) {
    w.batch.set(i, statexfer::Command::offload(moved, host_row, consumed_of(w.pool.backing(), moved)));
  };
  if (batch == Batch::onload1 || batch == Batch::mixed_onload) {
    // Host row 1 gets row 16's bytes first, eagerly; command 0 is a snapshot again after.
    offload_at(0);
    w.batch.resize(1);
    w.upload(instance.exec());
    w.transfer->validate_and_apply(instance.exec());
    instance.exec().fence();
    w.batch.set(0, snapshot0);
  }
  std::int32_t count = 0;
  const auto onload = statexfer::Command::onload(host_row, onloaded, consumed_of(w.host.backing(), host_row));
  switch (batch) {
    case Batch::snapshots4: count = 4; break;
    case Batch::offload1: offload_at(0), count = 1; break;
    case Batch::mixed_offload: offload_at(4), count = 5; break;
    case Batch::onload1: w.batch.set(0, onload), count = 1; break;
    case Batch::mixed_onload: w.batch.set(4, onload), count = 5; break;
  }
  // Snapshot commands 0..3 keep the workload's values.
  w.batch.resize(count);
  w.upload(instance.exec());
  w.transfer->validate_and_apply();
  instance.exec().fence();
  auto errors = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w.commands.errors);
  for (std::int32_t i = 0; i < count; ++i)
    if (errors(i) != 0) {
      state.SkipWithError(("command " + std::to_string(i) + " got code " + std::to_string(errors(i))).c_str());
      return;
    }
  Replayer replayer(instance, [&](const Exec& e) { w.transfer->validate_and_apply(e); });
  replayer.seconds_per_replay(3);
  for (auto _ : state) state.SetIterationTime(replayer.seconds_per_replay(10));
  const bool snapshots = batch == Batch::snapshots4 || batch == Batch::mixed_offload || batch == Batch::mixed_onload;
  const bool tier = batch != Batch::snapshots4;
  state.counters["row_bytes"] = static_cast<double>(w.pool.row_bytes());
  state.counters["device_bytes_rw"] = snapshots ? 2.0 * 4 * static_cast<double>(w.bytes_written) / shape.live() : 0.0;
  state.counters["host_link_bytes"] = tier ? static_cast<double>(w.pool.row_bytes()) : 0.0;
  state.counters["host_link_GBps"] = benchmark::Counter(tier ? static_cast<double>(w.pool.row_bytes()) * 1e-9 : 0.0,
                                                        benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(w.transfer->launch_summary());
}

#ifdef KOKKOS_ENABLE_CUDA
// One row between device memory and pinned host memory by the copy engines.
void run_memcpy(benchmark::State& state, std::int64_t bytes, bool to_host, bool eager) {
  const BenchInstance instance;
  Kokkos::View<std::uint8_t*, Exec::memory_space> device("bench::tier_device", bytes);
  Kokkos::View<std::uint8_t*, Kokkos::CudaHostPinnedSpace> host("bench::tier_host", bytes);
  const cudaMemcpyKind kind = to_host ? cudaMemcpyDeviceToHost : cudaMemcpyHostToDevice;
  auto copy = [&, bytes](const Exec&) {
    if (to_host)
      cudaMemcpyAsync(host.data(), device.data(), bytes, kind, instance.stream());
    else
      cudaMemcpyAsync(device.data(), host.data(), bytes, kind, instance.stream());
  };
  if (eager) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    copy(instance.exec());
    for (auto _ : state) {
      cudaEventRecord(a, instance.stream());
      for (int i = 0; i < 10; ++i) copy(instance.exec());
      cudaEventRecord(b, instance.stream());
      cudaEventSynchronize(b);
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      state.SetIterationTime(ms * 1e-3 / 10);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  } else {
    Replayer replayer(instance, copy);
    replayer.seconds_per_replay(3);
    for (auto _ : state) state.SetIterationTime(replayer.seconds_per_replay(10));
  }
  state.counters["row_bytes"] = static_cast<double>(bytes);
  state.counters["host_link_GBps"] =
      benchmark::Counter(static_cast<double>(bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
#endif

}  // namespace

void register_tier_benchmarks() {
  std::vector<NamedShape> shapes;
  for (auto& s : builtin_set("models", false))
    if (s.name == "models/qwen3.5-9b/c8") shapes.push_back({"tiers/qwen3.5-9b", s.shape, true});
  shapes.push_back({"tiers/1MiB", {8, MiB, 4, 16 * KiB, 0}, true});
  shapes.push_back({"tiers/8MiB", {8, 8 * MiB, 4, 64 * KiB, 0}, true});
  const std::pair<const char*, Batch> batches[] = {{"snapshots4", Batch::snapshots4},
                                                   {"offload1", Batch::offload1},
                                                   {"snapshots4+offload1", Batch::mixed_offload},
                                                   {"onload1", Batch::onload1},
                                                   {"snapshots4+onload1", Batch::mixed_onload}};
  for (const auto& s : shapes) {
    for (const auto& [name, batch] : batches) {
      const Shape shape = s.shape;
      const Batch b = batch;
      benchmark::RegisterBenchmark((s.name + "/" + name).c_str(),
                                   [shape, b](benchmark::State& st) { run(st, shape, b); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond)
          ->MinTime(0.05);
    }
#ifdef KOKKOS_ENABLE_CUDA
    // The row bytes the workload lays out (its layout rounds nothing up past the shape's row).
    const std::int64_t bytes = s.shape.row_bytes;
    for (const bool to_host : {true, false})
      for (const bool eager : {true, false})
        benchmark::RegisterBenchmark(
            (s.name + "/memcpy_" + (to_host ? "d2h" : "h2d") + (eager ? "_eager" : "_graph")).c_str(),
            [bytes, to_host, eager](benchmark::State& st) { run_memcpy(st, bytes, to_host, eager); })
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond)
            ->MinTime(0.05);
#endif
  }
}

}  // namespace statexfer::bench
