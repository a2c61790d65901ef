// validate / apply / validate+apply (two calls) / validate_and_apply (one call,
// one kernel on GPUs up to 64 commands) per replay on the default execution
// space, with a device copy of the same byte count as the bandwidth yardstick.
//
// On CUDA every measured step is one CUDA graph, captured once from a
// Kokkos::Cuda instance on its own stream and replayed: that is how an engine
// runs it. On host backends the step is called directly. Each figure is
// fence, time, fence around a batch of replays (UseManualTime).
//
// The shapes come from the main (shapes.hpp: the built-in sets and --shape);
// every benchmark is SHAPE/STEP, with counters capacity, count (live commands),
// row_bytes, page_regions, page_bytes, trailing and bytes_rw.

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace statexfer::bench {

namespace {

enum class Step { validate, apply, validate_apply, validate_and_apply, memcpy, memcpy_kernel };

void run(benchmark::State& state, const Shape& shape, Step which) {
  const BenchInstance instance;
  std::unique_ptr<Workload> workload;
  Kokkos::View<std::uint8_t*, Exec::memory_space> a, b;
  try {
    workload = std::make_unique<Workload>(shape, instance.exec());
    a = decltype(a)("bench::memcpy_src", static_cast<std::size_t>(workload->bytes_written));
    b = decltype(b)("bench::memcpy_dst", static_cast<std::size_t>(workload->bytes_written));
  } catch (const std::exception& e) {  // a user's shape the library refuses, or out of memory
    state.SkipWithError(e.what());
    return;
  }
  Workload& w = *workload;
  std::function<void(const Exec&)> step;
  switch (which) {
    case Step::validate: step = [&](const Exec& e) { w.transfer->validate(e); }; break;
    case Step::apply: step = [&](const Exec& e) { w.transfer->apply(e); }; break;
    case Step::validate_apply:
      step = [&](const Exec& e) {
        w.transfer->validate(e);
        w.transfer->apply(e);
      };
      break;
    case Step::validate_and_apply: step = [&](const Exec& e) { w.transfer->validate_and_apply(e); }; break;
    case Step::memcpy: step = [&](const Exec& e) { Kokkos::deep_copy(e, b, a); }; break;
    case Step::memcpy_kernel: step = [&](const Exec& e) { copy_kernel(e, b, a); }; break;
  }
  Replayer replayer(instance, step);
  replayer.seconds_per_replay(10);  // warm-up
  const int replays = 20;
  for (auto _ : state) state.SetIterationTime(replayer.seconds_per_replay(replays));
  state.counters["bytes_rw"] = static_cast<double>(2 * w.bytes_written);
  state.counters["GB_rw"] = benchmark::Counter(static_cast<double>(2 * w.bytes_written) * 1e-9,
                                               benchmark::Counter::kIsIterationInvariantRate);
  state.counters["capacity"] = static_cast<double>(shape.capacity);
  state.counters["count"] = static_cast<double>(shape.live());
  state.SetLabel(w.transfer->launch_summary());
  state.counters["row_bytes"] = static_cast<double>(shape.row_bytes);
  state.counters["page_regions"] = static_cast<double>(shape.page_regions);
  state.counters["page_bytes"] = static_cast<double>(shape.page_bytes);
  state.counters["trailing"] = static_cast<double>(shape.trailing);
}

void register_shape(const std::string& name, const Shape& s, bool all_steps) {
  auto add = [&](const char* step_name, Step step) {
    benchmark::RegisterBenchmark((name + "/" + step_name).c_str(),
                                 [s, step](benchmark::State& st) { run(st, s, step); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond)
        ->MinTime(0.05);
  };
  add("validate_apply", Step::validate_apply);
  add("validate_and_apply", Step::validate_and_apply);
  add("memcpy", Step::memcpy);
  add("memcpy_kernel", Step::memcpy_kernel);
  if (all_steps) {
    add("validate", Step::validate);
    add("apply", Step::apply);
  }
}

}  // namespace

void register_transfer_shapes(const std::vector<NamedShape>& shapes) {
  for (const auto& s : shapes)
    if (s.runner == Runner::transfer) register_shape(s.name, s.shape, s.all_steps);
}

}  // namespace statexfer::bench
