// What a user's step costs (--set steps): the batch's upload, the captured
// graph's replay and the stream synchronisation an engine waits on, observed on
// the host from the first enqueue to the end of the synchronisation, beside the
// replay alone. One step is timed at a time; each iteration runs `steps` steps
// and records their median (the time of one step), as a serving loop sees it.
//
//   steps/SHAPE/replay        the graph (validate_and_apply) alone, then synchronise
//   steps/SHAPE/six_uploads   one deep_copy per command array and num_ops, then the replay
//   steps/SHAPE/one_upload    StateCommands::upload() of a CommandBatch (one copy), then the replay
//   steps/SHAPE/mapped        the commands in mapped pinned memory (CommandPlacement::mapped):
//                             upload() writes them with the CPU, the replay's kernels read them
//
// The batch is the workload's snapshot batch, rewritten by the host every step
// (the same values, so that every step is the same work).

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace statexfer::bench {

namespace {

enum class StepKind { replay, six_uploads, one_upload, mapped };

// The six host arrays an engine without CommandBatch keeps (in pinned memory
// on GPUs, so that its copies are asynchronous too).
struct SixArrays {
  using Space = statexfer::CommandBatch<Exec>::memory_space;
  Kokkos::View<std::int64_t*, Space> slot, src, dst, end;
  Kokkos::View<std::int32_t*, Space> op, count;
  explicit SixArrays(const statexfer::CommandBatch<Exec>& b)
      : slot("bench::slot", b.capacity()),
        src("bench::src", b.capacity()),
        dst("bench::dst", b.capacity()),
        end("bench::end", b.capacity()),
        op("bench::op", b.capacity()),
        count("bench::count", 1) {
    for (std::int64_t i = 0; i < b.capacity(); ++i) {
      const statexfer::Command c = b[i];
      slot(i) = c.request_slot, src(i) = c.source, dst(i) = c.destination, end(i) = c.expected_consumed;
      op(i) = c.operation;
    }
    count(0) = static_cast<std::int32_t>(b.size());
  }
  void upload(const Exec& e, const statexfer::StateCommands<Exec>& c) const {
    Kokkos::deep_copy(e, c.request_slots, slot);
    Kokkos::deep_copy(e, c.source_slots, src);
    Kokkos::deep_copy(e, c.destination_slots, dst);
    Kokkos::deep_copy(e, c.expected_consumed, end);
    Kokkos::deep_copy(e, c.operation, op);
    Kokkos::deep_copy(e, c.num_ops, count);
  }
};

void run_step(benchmark::State& state, const Shape& shape, StepKind kind) {
  const BenchInstance instance;
  std::unique_ptr<Workload> workload;
  try {
    WorkloadOptions options;
    if (kind == StepKind::mapped) options.placement = statexfer::CommandPlacement::mapped;
    workload = std::make_unique<Workload>(shape, instance.exec(), options);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  Workload& w = *workload;
  const Exec& exec = instance.exec();
  const SixArrays six(w.batch);
  Replayer replayer(instance, [&](const Exec& e) { w.transfer->validate_and_apply(e); });
  std::function<void()> upload = [] {};
  if (kind == StepKind::six_uploads) upload = [&] { six.upload(exec, w.commands); };
  if (kind == StepKind::one_upload || kind == StepKind::mapped) upload = [&] { w.commands.upload(exec, w.batch); };
  using clock = std::chrono::steady_clock;
  const int steps = 500;
  std::vector<double> times(static_cast<std::size_t>(steps));
  auto one_step = [&] {
    const auto t0 = clock::now();
    // The host writes the step's batch (the same commands) before it goes up.
    if (kind == StepKind::one_upload || kind == StepKind::mapped) w.batch.set(0, w.batch[0]);
    upload();
    replayer.launch();
    exec.fence();
    return std::chrono::duration<double>(clock::now() - t0).count();
  };
  for (int i = 0; i < 50; ++i) one_step();  // warm-up
  for (auto _ : state) {
    for (int i = 0; i < steps; ++i) times[static_cast<std::size_t>(i)] = one_step();
    std::nth_element(times.begin(), times.begin() + steps / 2, times.end());
    state.SetIterationTime(times[static_cast<std::size_t>(steps / 2)]);
  }
  state.counters["capacity"] = static_cast<double>(shape.capacity);
  state.counters["steps_per_iteration"] = steps;
  state.SetLabel(w.transfer->launch_summary());
}

}  // namespace

void register_step_benchmarks() {
  constexpr std::int64_t KiB = 1024;
  std::vector<NamedShape> shapes = {{"tiny-c4", {4, 16 * KiB, 1, 4 * KiB, 0}, true},
                                    {"decode-c64-64KiB", {64, 64 * KiB, 4, 16 * KiB, 0}, true}};
  for (auto& s : builtin_set("models", false))
    if (s.name == "models/qwen3.5-9b/c1" || s.name == "models/qwen3.5-9b/c8") shapes.push_back(s);
  const std::pair<const char*, StepKind> kinds[] = {{"replay", StepKind::replay},
                                                    {"six_uploads", StepKind::six_uploads},
                                                    {"one_upload", StepKind::one_upload},
                                                    {"mapped", StepKind::mapped}};
  for (const auto& s : shapes)
    for (const auto& [name, kind] : kinds)
      benchmark::RegisterBenchmark(("steps/" + s.name + "/" + name).c_str(),
                                   [shape = s.shape, kind = kind](benchmark::State& st) { run_step(st, shape, kind); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond)
          ->Iterations(5);
}

}  // namespace statexfer::bench
