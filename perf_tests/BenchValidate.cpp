// validate() time against the command capacity C = 1..4096 (issue 6): up to 64
// the contract's one-team pairwise check (O(C^2)), above 64 the sorted
// validation (team sort of the keys that can collide). Each replay is one
// validate() on the default execution space (a CUDA graph on CUDA), timed as in
// BenchTransfer.cpp: fence, time, fence around a batch of replays.
//
// Batches (small rows: validation does not touch them):
//   valid/cC            all-valid snapshots with a partial page and both trailing
//                       parts per command (5 sort keys per command)
//   valid-notrailing/cC the same without trailing bindings (3 keys per command)
//   collide/cC          every command snapshots into one destination row: one run
//                       of C equal keys, every command gets code 4
// Counters: capacity, and s_per_command (time / C).

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "bench_common.hpp"

namespace statexfer::bench {

namespace {

enum class Batch { valid, valid_notrailing, collide };

void run_validate(benchmark::State& state, std::int64_t capacity, Batch batch) {
  const std::int64_t KiB = 1024;
  const Shape shape{capacity, 1 * KiB, 1, 64, batch == Batch::valid_notrailing ? 0 : 1};
  const BenchInstance instance;
  Workload w(shape, instance.exec());  // checks that the batch is all-valid
  if (batch == Batch::collide) {
    for (std::int64_t i = 0; i < capacity; ++i) {
      statexfer::Command c = w.batch[i];
      c.destination = capacity + 1;
      w.batch.set(i, c);
    }
    w.upload(instance.exec());
    w.transfer->validate(instance.exec());
    instance.exec().fence();
    auto errors = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), w.commands.errors);
    for (std::int64_t i = 0; i < capacity; ++i)
      if (errors(i) != (capacity > 1 ? 4 : 0))
        throw std::runtime_error("collide batch: command " + std::to_string(i) + " has code " +
                                 std::to_string(errors(i)));
  }
  Replayer replayer(instance, [&](const Exec& e) { w.transfer->validate(e); });
  replayer.seconds_per_replay(10);  // warm-up
  const int replays = 20;
  for (auto _ : state) state.SetIterationTime(replayer.seconds_per_replay(replays));
  state.counters["capacity"] = static_cast<double>(capacity);
  state.counters["s_per_command"] = benchmark::Counter(
      static_cast<double>(capacity), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace

void register_validate_capacity() {
  const std::pair<const char*, Batch> batches[] = {
      {"valid", Batch::valid}, {"valid-notrailing", Batch::valid_notrailing}, {"collide", Batch::collide}};
  for (const auto& [name, batch] : batches)
    for (std::int64_t c = 1; c <= statexfer::max_extended_capacity; c *= 2)
      benchmark::RegisterBenchmark(("validate-capacity/" + std::string(name) + "/c" + std::to_string(c)).c_str(),
                                   [c, batch = batch](benchmark::State& st) { run_validate(st, c, batch); })
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond)
          ->MinTime(0.05);
}

}  // namespace statexfer::bench
