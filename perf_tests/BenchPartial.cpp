// Partly filled batches (--set partial; issue 29): a graph is captured once at
// a capacity C and each step fills a few of its slots. Each shape of the set
// (shapes.cpp: real models' rows and FACTS.md's rows at C = 64, 256, 1024, 4096
// with 1, 2, 4, 16 and C live commands, those that fit the memory) is timed as
//
//   partial/ROW/cC/liveN/memcpy_kernel       the copy kernel of the live commands' bytes
//   partial/ROW/cC/liveN/validate_and_apply  one call
//   partial/ROW/cC/liveN/validate_apply      two calls (validate() then apply())
//
// in that order, each a graph replayed as BenchTransfer.cpp does (fence, time,
// fence around 20 replays). The pool holds the null row, C live rows and the
// live commands' snapshot rows only, as a server's pool at that capacity would.
// Counters of every record: capacity, count (live commands), live_bytes (what
// the live commands write), copy_us (the copy kernel of live_bytes, from the
// memcpy_kernel record of the same bytes in this process), floor_us (3 µs up
// to C = 64, 6 above) and bound_us = 1.03 x copy_us + floor_us, issue 29's
// target for one call; the steps also margin_us = bound_us - their mean time.
//
//   partial-validate/cC/live4/validate       validate() alone, C = 64 to 4096,
//                                            4 live commands (target: C = 4096
//                                            within 3 µs of C = 64)
//
// A server's step moves other rows than the last one did, which the records
// above, replaying one batch, do not: the main job's steps of a row or two
// once ran slower in a design that these records had level
// (perf_tests/RESULTS.md). So GPUs also time, for the shapes at C = 64 with 1,
// 2 and 4 live rows of 1 MiB and more,
//
//   partial-cold/ROW/c64/liveN/memcpy_kernel       the copy kernel of the live bytes into rotating rows
//   partial-cold/ROW/c64/liveN/validate_and_apply  one call whose snapshots go to rotating rows
//
// each replay timed alone with another batch (or destination) uploaded ahead
// of it, the destinations spanning at least 2 GiB (many times a GPU's L2), so
// that each replay writes rows that the replays before it did not touch.

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace statexfer::bench {

namespace {

enum class Step { copy, one_call, two_calls };

constexpr int warm_up = 10, replays = 20;

using Bytes = Kokkos::View<std::uint8_t*, Exec::memory_space>;

// The copy kernel's seconds per replay of a byte count, as the last
// memcpy_kernel record of those bytes measured it (cold: partial-cold's).
std::map<std::int64_t, double>& copy_seconds(bool cold = false) {
  static std::map<std::int64_t, double> seconds[2];
  return seconds[cold ? 1 : 0];
}

// The copy kernel of `bytes` when no record has timed it (a filter left its
// record out): the mean of batches of replays over about 50 ms, at least 3.
double measure_copy(std::int64_t bytes) {
  const BenchInstance instance;
  const Bytes a("bench::partial_copy_src", static_cast<std::size_t>(bytes));
  const Bytes b("bench::partial_copy_dst", static_cast<std::size_t>(bytes));
  Replayer replayer(instance, [&](const Exec& e) { copy_kernel(e, b, a); });
  replayer.seconds_per_replay(warm_up);
  double total = 0;
  int batches = 0;
  while (batches < 3 || (total < 0.05 && batches < 1000)) total += replayer.seconds_per_replay(replays), ++batches;
  return total / batches;
}

double floor_us(const Shape& s) { return s.capacity <= 64 ? 3.0 : 6.0; }

void set_counters(benchmark::State& state, const Shape& shape, std::int64_t bytes, double copy_s) {
  state.counters["capacity"] = static_cast<double>(shape.capacity);
  state.counters["count"] = static_cast<double>(shape.live());
  state.counters["live_bytes"] = static_cast<double>(bytes);
  state.counters["bytes_rw"] = static_cast<double>(2 * bytes);
  state.counters["GB_rw"] =
      benchmark::Counter(static_cast<double>(2 * bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["row_bytes"] = static_cast<double>(shape.row_bytes);
  state.counters["page_regions"] = static_cast<double>(shape.page_regions);
  state.counters["page_bytes"] = static_cast<double>(shape.page_bytes);
  state.counters["trailing"] = static_cast<double>(shape.trailing);
  state.counters["copy_us"] = copy_s * 1e6;
  state.counters["floor_us"] = floor_us(shape);
  state.counters["bound_us"] = 1.03 * copy_s * 1e6 + floor_us(shape);
}

// Iterations of `replayer`, returning their mean seconds per replay.
double time_replays(benchmark::State& state, Replayer& replayer) {
  replayer.seconds_per_replay(warm_up);
  double total = 0;
  std::int64_t n = 0;
  for (auto _ : state) {
    const double s = replayer.seconds_per_replay(replays);
    state.SetIterationTime(s);
    total += s, ++n;
  }
  return n > 0 ? total / static_cast<double>(n) : 0.0;
}

void run_copy(benchmark::State& state, const Shape& shape) {
  const std::int64_t bytes = shape.live() * command_bytes(shape);
  double mean = 0;
  {
    const BenchInstance instance;
    Bytes a, b;
    try {
      a = Bytes("bench::partial_copy_src", static_cast<std::size_t>(bytes));
      b = Bytes("bench::partial_copy_dst", static_cast<std::size_t>(bytes));
    } catch (const std::exception& e) {
      state.SkipWithError(e.what());
      return;
    }
    Replayer replayer(instance, [&](const Exec& e) { copy_kernel(e, b, a); });
    mean = time_replays(state, replayer);
  }
  copy_seconds()[bytes] = mean;
  set_counters(state, shape, bytes, mean);
  state.SetLabel("copy kernel of the live bytes");
}

void run_step(benchmark::State& state, const Shape& shape, Step step) {
  const std::int64_t bytes = shape.live() * command_bytes(shape);
  std::unique_ptr<Workload> workload;
  double copy_s = 0;
  const BenchInstance instance;
  try {
    // The copy first, on its own: its buffers and the workload need not fit together.
    const auto known = copy_seconds().find(bytes);
    copy_s = known != copy_seconds().end() ? known->second : (copy_seconds()[bytes] = measure_copy(bytes));
    WorkloadOptions options;
    options.snapshot_rows = shape.live();
    workload = std::make_unique<Workload>(shape, instance.exec(), options);
    if (workload->bytes_written != bytes) throw std::logic_error("statexfer-bench: partial set's byte count differs");
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  Workload& w = *workload;
  std::function<void(const Exec&)> f;
  if (step == Step::one_call) f = [&](const Exec& e) { w.transfer->validate_and_apply(e); };
  if (step == Step::two_calls)
    f = [&](const Exec& e) {
      w.transfer->validate(e);
      w.transfer->apply(e);
    };
  Replayer replayer(instance, f);
  const double mean = time_replays(state, replayer);
  set_counters(state, shape, bytes, copy_s);
  state.counters["margin_us"] = 1.03 * copy_s * 1e6 + floor_us(shape) - mean * 1e6;
  state.SetLabel(w.transfer->launch_summary());
}

// validate() alone at capacity C with `live` commands (small rows: validation does not touch them).
void run_validate(benchmark::State& state, std::int64_t capacity, std::int64_t live) {
  const Shape shape{capacity, 1024, 1, 64, 1, 16, 16, 0, live};
  const BenchInstance instance;
  std::unique_ptr<Workload> workload;
  try {
    WorkloadOptions options;
    options.snapshot_rows = live;
    workload = std::make_unique<Workload>(shape, instance.exec(), options);  // checks the batch is all-valid
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  Workload& w = *workload;
  Replayer replayer(instance, [&](const Exec& e) { w.transfer->validate(e); });
  time_replays(state, replayer);
  state.counters["capacity"] = static_cast<double>(capacity);
  state.counters["count"] = static_cast<double>(live);
  state.SetLabel(w.transfer->launch_summary());
}

// Cold rows: a rotation of destinations spanning at least cold_span_bytes.
constexpr std::int64_t cold_span_bytes = std::int64_t(2) << 30;
std::int64_t cold_rotations(std::int64_t live_bytes) {
  return std::clamp<std::int64_t>((cold_span_bytes + live_bytes - 1) / live_bytes, 2, 2048);
}

// Iterations of one rotation each (replays timed apart), returning their mean seconds per replay.
double time_rotations(benchmark::State& state, Replayer& replayer, std::int64_t rotations,
                      const std::function<void(const Exec&, int)>& before) {
  const int n = static_cast<int>(rotations);
  replayer.seconds_per_replay_apart(n, before);
  double total = 0;
  std::int64_t iterations = 0;
  for (auto _ : state) {
    const double s = replayer.seconds_per_replay_apart(n, before);
    state.SetIterationTime(s);
    total += s, ++iterations;
  }
  return iterations > 0 ? total / static_cast<double>(iterations) : 0.0;
}

// The copy kernel of `src` into the slice of `dst` at the byte offset `offset` holds (a multiple of 16).
void copy_kernel_at(const Exec& e, const Bytes& dst, const Bytes& src,
                    const Kokkos::View<std::int64_t, Exec::memory_space>& offset) {
  const std::int64_t words = static_cast<std::int64_t>(src.extent(0) / sizeof(Word16));
  Word16* d = reinterpret_cast<Word16*>(dst.data());
  const Word16* s = reinterpret_cast<const Word16*>(src.data());
  Kokkos::parallel_for(
      "bench::copy_kernel_at", Kokkos::RangePolicy<Exec>(e, 0, words),
      KOKKOS_LAMBDA(const std::int64_t i) { d[offset() / std::int64_t(sizeof(Word16)) + i] = s[i]; });
}

// The copy kernel of the live bytes into a rotation of destinations.
void run_cold_copy(benchmark::State& state, const Shape& shape) {
  const std::int64_t bytes = shape.live() * command_bytes(shape), rotations = cold_rotations(bytes);
  const BenchInstance instance;
  Bytes a, b;
  Kokkos::View<std::int64_t, Exec::memory_space> offset("bench::partial_cold_offset");
  try {
    a = Bytes("bench::partial_copy_src", static_cast<std::size_t>(bytes));
    b = Bytes("bench::partial_cold_dst", static_cast<std::size_t>(bytes * rotations));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  Replayer replayer(instance, [&](const Exec& e) { copy_kernel_at(e, b, a, offset); });
  const double mean = time_rotations(state, replayer, rotations,
                                     [&](const Exec& e, int i) { Kokkos::deep_copy(e, offset, i * bytes); });
  copy_seconds(true)[bytes] = mean;
  set_counters(state, shape, bytes, mean);
  state.counters["rotations"] = static_cast<double>(rotations);
  state.SetLabel("copy kernel of the live bytes into rotating rows");
}

// One call whose snapshots go to a rotation of snapshot rows, a batch each, uploaded ahead of its replay.
void run_cold_step(benchmark::State& state, const Shape& shape) {
  const std::int64_t bytes = shape.live() * command_bytes(shape), rotations = cold_rotations(bytes);
  const BenchInstance instance;
  std::unique_ptr<Workload> workload;
  std::vector<statexfer::CommandBatch<Exec>> batches;
  try {
    WorkloadOptions options;
    options.snapshot_rows = rotations * shape.live();
    workload = std::make_unique<Workload>(shape, instance.exec(), options);
    for (std::int64_t r = 0; r < rotations; ++r) {
      batches.emplace_back(shape.capacity);
      for (std::int64_t i = 0; i < shape.live(); ++i)
        batches.back().push_back(statexfer::Command::snapshot(i, 1 + i, workload->first_snapshot + r * shape.live() + i,
                                                              workload->endpoint));
      workload->batch = batches.back();
      workload->run_checked(instance.exec(), "cold rotation " + std::to_string(r));
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  Workload& w = *workload;
  Replayer replayer(instance, [&](const Exec& e) { w.transfer->validate_and_apply(e); });
  const double mean = time_rotations(state, replayer, rotations, [&](const Exec& e, int i) {
    w.commands.upload(e, batches[static_cast<std::size_t>(i)]);
  });
  const auto copy = copy_seconds(true).find(bytes);
  const double copy_s = copy != copy_seconds(true).end() ? copy->second : 0.0;
  set_counters(state, shape, bytes, copy_s);
  if (copy_s > 0)
    state.counters["margin_us"] = 1.03 * copy_s * 1e6 + floor_us(shape) - mean * 1e6;
  else  // the filter left the cold copy out: no bound to read
    for (const char* key : {"copy_us", "bound_us"}) state.counters.erase(key);
  state.counters["rotations"] = static_cast<double>(rotations);
  state.SetLabel(w.transfer->launch_summary());
}

void add(const std::string& name, std::function<void(benchmark::State&)> f) {
  benchmark::RegisterBenchmark(name.c_str(), std::move(f))
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(0.05);
}

}  // namespace

void register_partial_benchmarks(const std::vector<NamedShape>& shapes, bool host_backend) {
  for (std::int64_t c = 64; c <= statexfer::max_extended_capacity; c *= 2)
    add("partial-validate/c" + std::to_string(c) + "/live4/validate",
        [c](benchmark::State& st) { run_validate(st, c, 4); });
  for (const auto& s : shapes) {
    if (s.runner != Runner::partial) continue;
    const Shape shape = s.shape;
    add(s.name + "/memcpy_kernel", [shape](benchmark::State& st) { run_copy(st, shape); });
    add(s.name + "/validate_and_apply", [shape](benchmark::State& st) { run_step(st, shape, Step::one_call); });
    add(s.name + "/validate_apply", [shape](benchmark::State& st) { run_step(st, shape, Step::two_calls); });
  }
  if (host_backend) return;  // caches and TLBs of a GPU's memory are what the cold records are about
  const std::string prefix = "partial/";
  for (const auto& s : shapes) {
    const Shape shape = s.shape;
    if (s.runner != Runner::partial || shape.capacity != 64 || shape.live() > 4 || shape.row_bytes < (1 << 20) ||
        s.name.compare(0, prefix.size(), prefix) != 0)
      continue;
    const std::string name = "partial-cold/" + s.name.substr(prefix.size());
    add(name + "/memcpy_kernel", [shape](benchmark::State& st) { run_cold_copy(st, shape); });
    add(name + "/validate_and_apply", [shape](benchmark::State& st) { run_cold_step(st, shape); });
  }
}

}  // namespace statexfer::bench
