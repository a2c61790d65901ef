// Commits of speculative decoding and prefix keys (--set speculative;
// docs/CONTRACT.md §13, §14), captured and replayed as BenchTransfer.cpp does.
//
//   spec/MODEL/cC/MOVE/STEP     C commits of real models' rows (MODELS.md), every
//                               slot accepting 3 of K = 4 drafts; STEP is
//                               validate_and_apply (one call), validate_apply
//                               (two calls) or validate; MOVE remap or copy
//   spec/MODEL/cC/memcpy_kernel the copy kernel of a copying commit's bytes
//   spec-step/MODEL/MOVE/with_commits|without_commits
//                               a decode step's batch at C = 64: 60 running
//                               requests commit, 2 finished ones are snapshotted
//                               and 2 new ones restored; without the commits the
//                               same 4 commands on the same transfer
//   spec-step/MODEL/memcpy_kernel_commits  the copy kernel of 60 rows
//   spec-keys/SHAPE/keys|nokeys/STEP  a snapshot batch with and without a
//                               prefix_key region (validate reads the key of
//                               every row it reads; a snapshot stamps it)
// Counters as BenchTransfer.cpp's: bytes_rw counts a copying commit's row read
// and written, 0 for a remap.

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

constexpr int positions = 4;  // K: an MTP head of 4 drafts
constexpr int accepted = 3;

enum class Step { validate_and_apply, validate_apply, validate };

// consumed_tokens (offset 0) of rows [first, first + n) set to value + (row - first) * step.
void set_consumed(const statexfer::StatePool<Exec>& pool, std::int64_t first, std::int64_t n, std::int64_t value,
                  std::int64_t step, std::int64_t period) {
  auto backing = pool.backing();
  Kokkos::parallel_for(
      "bench::set_consumed", Kokkos::RangePolicy<Exec>(0, n), KOKKOS_LAMBDA(const std::int64_t i) {
        *reinterpret_cast<std::int64_t*>(&backing(first + i, 0)) = value + (i % period) * step;
      });
}

// A workload with K position rows a slot, every slot accepting 3: position j
// at endpoint + j, as a verify from `endpoint` leaves it, and the live rows at
// endpoint + 3 too, so that a commit stays valid when replayed: after a remap
// the old live row is position 3, after a copy the live row holds position 3.
std::unique_ptr<Workload> speculative_workload(const Shape& shape, const Exec& exec, statexfer::CommitMove move) {
  WorkloadOptions options;
  options.positions = positions;
  options.move = move;
  auto w = std::make_unique<Workload>(shape, exec, options);
  const std::int64_t c = shape.capacity;
  set_consumed(w->pool, 1, c, w->endpoint + accepted, 0, 1);
  // Position j of slot i is row c + 1 + i K + j - 1: endpoint + 1 .. endpoint + K in turn.
  set_consumed(w->pool, c + 1, c * positions, w->endpoint + 1, 1, positions);
  set_consumed(w->pool, w->first_snapshot, c, w->endpoint, 0, 1);
  Kokkos::deep_copy(w->accepted, accepted);
  Kokkos::fence();
  (void)exec;
  return w;
}

struct Timing {
  std::function<void(const Exec&)> step;
  std::int64_t bytes = 0;
};

void time_step(benchmark::State& state, const BenchInstance& instance, const Timing& t, const std::string& label) {
  Replayer replayer(instance, t.step);
  replayer.seconds_per_replay(5);  // warm-up
  for (auto _ : state) state.SetIterationTime(replayer.seconds_per_replay(20));
  state.counters["bytes_rw"] = static_cast<double>(2 * t.bytes);
  state.counters["GB_rw"] =
      benchmark::Counter(static_cast<double>(2 * t.bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(label);
}

std::function<void(const Exec&)> transfer_step(const Workload& w, Step step) {
  switch (step) {
    case Step::validate_and_apply: return [&w](const Exec& e) { w.transfer->validate_and_apply(e); };
    case Step::validate_apply:
      return [&w](const Exec& e) {
        w.transfer->validate(e);
        w.transfer->apply(e);
      };
    case Step::validate: break;
  }
  return [&w](const Exec& e) { w.transfer->validate(e); };
}

void run_commits(benchmark::State& state, const Shape& shape, statexfer::CommitMove move, Step step) {
  const BenchInstance instance;
  std::unique_ptr<Workload> workload;
  try {
    workload = speculative_workload(shape, instance.exec(), move);
    Workload& w = *workload;
    for (std::int64_t i = 0; i < shape.capacity; ++i) w.batch.set(i, statexfer::Command::commit(i, w.endpoint));
    w.batch.resize(shape.capacity);
    w.run_checked(instance.exec(), "commit batch");
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  Workload& w = *workload;
  Timing t;
  t.step = transfer_step(w, step);
  t.bytes = move == statexfer::CommitMove::copy && step != Step::validate ? shape.capacity * w.pool.row_bytes() : 0;
  time_step(state, instance, t, w.transfer->launch_summary());
}

void run_copy(benchmark::State& state, std::int64_t bytes) {
  const BenchInstance instance;
  Kokkos::View<std::uint8_t*, Exec::memory_space> a, b;
  try {
    a = decltype(a)("bench::copy_src", static_cast<std::size_t>(bytes));
    b = decltype(b)("bench::copy_dst", static_cast<std::size_t>(bytes));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  Timing t;
  t.step = [=](const Exec& e) { copy_kernel(e, b, a); };
  t.bytes = bytes;
  time_step(state, instance, t, "copy kernel");
}

// A decode step of C = 64: slots 0..59 commit, 60 and 61 are snapshotted, 62 and
// 63 restore a snapshot row; `commits` false: only the last four.
void run_decode_step(benchmark::State& state, const Shape& shape, statexfer::CommitMove move, bool commits) {
  const BenchInstance instance;
  std::unique_ptr<Workload> workload;
  const std::int64_t c = shape.capacity, committing = c - 4;
  try {
    workload = speculative_workload(shape, instance.exec(), move);
    Workload& w = *workload;
    std::int64_t n = 0;
    if (commits)
      for (std::int64_t i = 0; i < committing; ++i) w.batch.set(n++, statexfer::Command::commit(i, w.endpoint));
    for (std::int64_t i = committing; i < committing + 2; ++i)
      w.batch.set(n++, statexfer::Command::snapshot(i, 1 + i, w.first_snapshot + i, w.endpoint));
    for (std::int64_t i = committing + 2; i < c; ++i)
      w.batch.set(n++, statexfer::Command::restore(i, w.first_snapshot + i, 1 + i, w.endpoint));
    w.batch.resize(n);
    w.run_checked(instance.exec(), "decode step batch");
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  Workload& w = *workload;
  Timing t;
  t.step = transfer_step(w, Step::validate_and_apply);
  const std::int64_t pages = shape.page_regions * shape.page_bytes;
  t.bytes = 4 * (w.pool.row_bytes() + pages) +
            (commits && move == statexfer::CommitMove::copy ? committing * w.pool.row_bytes() : 0);
  time_step(state, instance, t, w.transfer->launch_summary());
}

void run_keys(benchmark::State& state, const Shape& shape, bool keys, Step step) {
  const BenchInstance instance;
  std::unique_ptr<Workload> workload;
  try {
    WorkloadOptions options;
    options.keys = keys;
    workload = std::make_unique<Workload>(shape, instance.exec(), options);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  Workload& w = *workload;
  Timing t;
  t.step = transfer_step(w, step);
  t.bytes = step == Step::validate ? 0 : w.bytes_written;
  time_step(state, instance, t, w.transfer->launch_summary());
}

void add(const std::string& name, std::function<void(benchmark::State&)> f) {
  benchmark::RegisterBenchmark(name.c_str(), std::move(f))
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(0.05);
}

}  // namespace

void register_speculative_benchmarks() {
  const std::pair<const char*, Step> steps[] = {{"validate_and_apply", Step::validate_and_apply},
                                                {"validate_apply", Step::validate_apply},
                                                {"validate", Step::validate}};
  const std::pair<const char*, statexfer::CommitMove> moves[] = {{"remap", statexfer::CommitMove::remap},
                                                                 {"copy", statexfer::CommitMove::copy}};
  for (const char* model : {"qwen3.5-9b", "nemotron-3-super-120b-a12b"}) {
    Shape row{};
    for (const auto& s : builtin_set("models", false))
      if (s.name == std::string("models/") + model + "/c1") row = s.shape;
    for (const std::int64_t c : {1, 8, 64}) {
      Shape shape = row;
      shape.capacity = c;
      const std::string base = std::string("spec/") + model + "/c" + std::to_string(c);
      for (const auto& [move_name, move] : moves)
        for (const auto& [step_name, step] : steps)
          add(base + "/" + move_name + "/" + step_name,
              [shape, move = move, step = step](benchmark::State& st) { run_commits(st, shape, move, step); });
      const std::int64_t bytes = c * row.row_bytes / 16 * 16;
      add(base + "/memcpy_kernel", [bytes](benchmark::State& st) { run_copy(st, bytes); });
    }
    Shape step_shape = row;
    step_shape.capacity = 64;
    for (const auto& [move_name, move] : moves)
      for (const bool commits : {true, false})
        add(std::string("spec-step/") + model + "/" + move_name + (commits ? "/with_commits" : "/without_commits"),
            [step_shape, move = move, commits](benchmark::State& st) {
              run_decode_step(st, step_shape, move, commits);
            });
    const std::int64_t commit_bytes = 60 * row.row_bytes / 16 * 16;
    add(std::string("spec-step/") + model + "/memcpy_kernel_commits",
        [commit_bytes](benchmark::State& st) { run_copy(st, commit_bytes); });
  }
  constexpr std::int64_t KiB = 1024;
  const NamedShape key_shapes[] = {{"tiny-c4", {4, 16 * KiB, 1, 4 * KiB, 0}},
                                   {"decode-c16-64KiB", {16, 64 * KiB, 4, 16 * KiB, 0}},
                                   {"decode-c64-64KiB", {64, 64 * KiB, 4, 16 * KiB, 0}}};
  for (const auto& s : key_shapes)
    for (const bool keys : {false, true})
      for (const auto& [step_name, step] : steps)
        add("spec-keys/" + s.name + (keys ? "/keys/" : "/nokeys/") + step_name,
            [shape = s.shape, keys, step = step](benchmark::State& st) { run_keys(st, shape, keys, step); });
}

}  // namespace statexfer::bench
