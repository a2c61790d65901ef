#ifndef STATEXFER_PERF_TESTS_BENCH_COMMON_HPP
#define STATEXFER_PERF_TESTS_BENCH_COMMON_HPP

// Pieces shared by the benchmarks (BenchTransfer.cpp, BenchValidate.cpp): the
// benchmark workload (an all-valid snapshot batch as the reference module's
// benchmark builds it) and the Replayer that times a step: on CUDA one CUDA
// graph captured once on its own stream and replayed, on host backends the step
// called directly; fence, time, fence around a batch of replays.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <statexfer/statexfer.hpp>

#include "shapes.hpp"

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime.h>
#endif

namespace statexfer::bench {

using Exec = Kokkos::DefaultExecutionSpace;

// Never time on zeros: a position-coded byte pattern.
template <class View>
void fill_pattern(const View& v, int salt) {
  Kokkos::parallel_for(
      "bench::fill", Kokkos::MDRangePolicy<Exec, Kokkos::Rank<2>>({0, 0}, {v.extent(0), v.extent(1)}),
      KOKKOS_LAMBDA(const std::int64_t r, const std::int64_t b) {
        v(r, b) = static_cast<std::uint8_t>((b * 31 + r * salt + 7) % 251);
      });
}

// An all-valid snapshot batch as the reference module's benchmark builds it:
// every live row copies into its own snapshot row and saves its partial pages.
// C = shape.capacity commands are written; num_ops = shape.live() of them run.
struct Workload {
  statexfer::StatePool<Exec> pool;
  statexfer::StateCommands<Exec> commands;
  std::vector<statexfer::PageBinding<Exec>::cache_view> caches;
  std::unique_ptr<statexfer::PreparedStateTransfer<Exec>> transfer;
  statexfer::HostTier<Exec> host;  // host_rows > 0: bound to the transfer (BenchTier.cpp)
  std::int64_t bytes_written = 0;

  /// Prepares the transfer on `exec`, the instance the benchmark then runs it
  /// on; with `host_rows` > 0 a host tier of that many rows is bound too.
  Workload(const Shape& s, const Exec& exec, std::int64_t host_rows = 0) {
    const std::int64_t c = s.capacity;
    std::vector<statexfer::Region> regions{{"consumed_tokens", 0, 8, statexfer::DType::int64}};
    std::int64_t offset = 64;
    std::vector<std::string> pages, trailing;
    for (std::int64_t i = 0; i < s.page_regions; ++i, offset += s.page_bytes) {
      pages.push_back("kv" + std::to_string(i));
      regions.push_back({pages.back(), offset, s.page_bytes, statexfer::DType::uint8});
    }
    for (std::int64_t i = 0; i < s.trailing; ++i, offset += 2 * s.page_bytes) {
      trailing.push_back("draft" + std::to_string(i));
      regions.push_back({trailing.back(), offset, 2 * s.page_bytes, statexfer::DType::uint8});
    }
    const std::int64_t row_bytes = std::max(s.row_bytes, offset);
    const std::int64_t rows = 2 * c + 2 + s.gap, page_count = c * s.width;
    pool = statexfer::StatePool<Exec>(statexfer::StateLayout(regions, row_bytes), rows, page_count);
    fill_pattern(pool.backing(), 17);
    commands = statexfer::StateCommands<Exec>::allocate(c);

    statexfer::PageTable<Exec> tables("bench::tables", c, s.width);
    statexfer::StateRows<Exec> state_rows("bench::state_rows", c, 8);
    auto requests = statexfer::RequestState<Exec>::allocate(c);
    const std::int64_t endpoint = s.width * s.page_tokens - s.page_tokens / 2 - 1;  // mid-page
    auto tables_h = Kokkos::create_mirror_view(tables);
    auto rows_h = Kokkos::create_mirror_view(state_rows);
    auto consumed_h = Kokkos::create_mirror_view(requests.consumed_tokens);
    for (std::int64_t i = 0; i < c; ++i) {
      for (std::int64_t l = 0; l < s.width; ++l) tables_h(i, l) = static_cast<std::int32_t>(i * s.width + l);
      rows_h(i, 0) = 1 + i;
      consumed_h(i, 0) = endpoint;
    }
    Kokkos::deep_copy(tables, tables_h);
    Kokkos::deep_copy(state_rows, rows_h);
    Kokkos::deep_copy(requests.consumed_tokens, consumed_h);

    statexfer::TransferConfig<Exec> config;
    config.page_tokens = s.page_tokens;
    if (host_rows > 0) {
      host = statexfer::HostTier<Exec>(pool.layout(), host_rows);
      config.host_tier = host;
    }
    config.state_rows = state_rows;
    config.requests = requests;
    for (const auto& name : pages) {
      caches.emplace_back("bench::cache_" + name, page_count, s.page_bytes);
      config.pages.push_back({name, caches.back()});
    }
    if (!trailing.empty()) {
      config.trailing_tables = statexfer::PageTable<Exec>("bench::trailing_tables", c, s.width);
      Kokkos::deep_copy(config.trailing_tables, tables);
    }
    for (const auto& name : trailing) {
      caches.emplace_back("bench::cache_" + name, page_count, s.page_bytes);
      config.trailing_pages.push_back({name, caches.back()});
    }
    transfer = std::make_unique<statexfer::PreparedStateTransfer<Exec>>(pool, commands, tables, config);
    transfer->prepare(exec);

    auto src_h = Kokkos::create_mirror_view(commands.source_slots);
    auto dst_h = Kokkos::create_mirror_view(commands.destination_slots);
    auto slot_h = Kokkos::create_mirror_view(commands.request_slots);
    auto end_h = Kokkos::create_mirror_view(commands.expected_consumed);
    for (std::int64_t i = 0; i < c; ++i) {
      slot_h(i) = i;
      src_h(i) = 1 + i;
      dst_h(i) = c + 1 + s.gap + i;
      end_h(i) = endpoint;
    }
    Kokkos::deep_copy(commands.request_slots, slot_h);
    Kokkos::deep_copy(commands.source_slots, src_h);
    Kokkos::deep_copy(commands.destination_slots, dst_h);
    Kokkos::deep_copy(commands.expected_consumed, end_h);
    const std::int64_t live = s.live();
    Kokkos::deep_copy(commands.num_ops, static_cast<std::int32_t>(live));
    for (auto& cache : caches) fill_pattern(cache, 23);
    bytes_written = live * (row_bytes + s.page_regions * s.page_bytes + s.trailing * 2 * s.page_bytes);

    // One checked run: every command must apply.
    transfer->validate();
    transfer->apply();
    exec.fence();
    auto errors = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), commands.errors);
    for (std::int64_t i = 0; i < live; ++i)
      if (errors(i) != 0) throw std::runtime_error("benchmark batch is not all-valid: command " + std::to_string(i));
  }
};

/// The execution space instance one benchmark runs on: a stream of its own on
/// CUDA (the Replayer captures it into a graph), the default instance on hosts.
/// Transfers are prepared on it: they refuse any other instance.
class BenchInstance {
 public:
  BenchInstance() {
#ifdef KOKKOS_ENABLE_CUDA
    cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking);
    exec_ = std::make_unique<Exec>(stream_);
#else
    exec_ = std::make_unique<Exec>();
#endif
  }
  ~BenchInstance() {
    exec_.reset();
#ifdef KOKKOS_ENABLE_CUDA
    cudaStreamDestroy(stream_);
#endif
  }
  BenchInstance(const BenchInstance&) = delete;
  BenchInstance& operator=(const BenchInstance&) = delete;
  const Exec& exec() const { return *exec_; }
#ifdef KOKKOS_ENABLE_CUDA
  cudaStream_t stream() const { return stream_; }
#endif

 private:
  std::unique_ptr<Exec> exec_;
#ifdef KOKKOS_ENABLE_CUDA
  cudaStream_t stream_{};
#endif
};

// A step on `instance` run `replays` times back to back; returns seconds per replay.
class Replayer {
 public:
  Replayer(const BenchInstance& instance, std::function<void(const Exec&)> step)
      : instance_(instance), step_(std::move(step)) {
#ifdef KOKKOS_ENABLE_CUDA
    instance_.exec().fence();
    cudaStreamBeginCapture(instance_.stream(), cudaStreamCaptureModeGlobal);
    step_(instance_.exec());
    cudaStreamEndCapture(instance_.stream(), &graph_);
    if (cudaGraphInstantiate(&graph_instance_, graph_, 0) != cudaSuccess)
      throw std::runtime_error("statexfer-bench: graph instantiation failed");
    cudaEventCreate(&start_);
    cudaEventCreate(&stop_);
#endif
  }
  ~Replayer() {
#ifdef KOKKOS_ENABLE_CUDA
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaGraphExecDestroy(graph_instance_);
    cudaGraphDestroy(graph_);
#endif
  }
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;

  double seconds_per_replay(int replays) {
#ifdef KOKKOS_ENABLE_CUDA
    const cudaStream_t stream = instance_.stream();
    cudaStreamSynchronize(stream);
    cudaEventRecord(start_, stream);
    for (int i = 0; i < replays; ++i) cudaGraphLaunch(graph_instance_, stream);
    cudaEventRecord(stop_, stream);
    cudaEventSynchronize(stop_);
    float ms = 0;
    cudaEventElapsedTime(&ms, start_, stop_);
    return ms * 1e-3 / replays;
#else
    const Exec& exec = instance_.exec();
    exec.fence();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < replays; ++i) step_(exec);
    exec.fence();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / replays;
#endif
  }

 private:
  const BenchInstance& instance_;
  std::function<void(const Exec&)> step_;
#ifdef KOKKOS_ENABLE_CUDA
  cudaGraph_t graph_{};
  cudaGraphExec_t graph_instance_{};
  cudaEvent_t start_{}, stop_{};
#endif
};

// Registration (BenchTransfer.cpp, BenchValidate.cpp), called by the main
// before benchmark::Initialize with the shapes the command line selected.
void register_transfer_shapes(const std::vector<NamedShape>& shapes);
void register_validate_capacity();
void register_tier_benchmarks();  // --set tiers

}  // namespace statexfer::bench

#endif
