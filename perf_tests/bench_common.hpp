#ifndef STATEXFER_PERF_TESTS_BENCH_COMMON_HPP
#define STATEXFER_PERF_TESTS_BENCH_COMMON_HPP

// Pieces shared by the benchmarks (BenchTransfer.cpp, BenchValidate.cpp): the
// benchmark workload (an all-valid snapshot batch as the reference module's
// benchmark builds it) and the Replayer that times a step: on CUDA one CUDA
// graph captured once on its own stream and replayed, on host backends the step
// called directly; fence, time, fence around a batch of replays.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
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

/// The transfer options of a benchmark run: the library reads no environment,
/// but the benchmark maps these variables to options so that one binary
/// measures the designs (tools/gpu/apply-variants, device-run sorted-variants):
/// STATEXFER_VALIDATE_AND_APPLY (0 two launches, 1 teams, 2 flat grid, 3 persistent),
/// STATEXFER_APPLY_DESIGN (0 teams, 1 flat grid, 2 persistent, 3 compact),
/// STATEXFER_APPLY_WORDS (0: the teams), STATEXFER_APPLY_TEAMS, STATEXFER_COMPACT_WORDS,
/// STATEXFER_COMPACT_STAGED (1: staged units, -1: registers), STATEXFER_COMPACT_HANDOUT (1: units handed
/// out, -1: strided), STATEXFER_APPLY_TEAM_SIZE,
/// STATEXFER_APPLY_TILE_BYTES, STATEXFER_APPLY_BULK (0: no bulk copies), STATEXFER_VALIDATE_PAIRS_CAPACITY,
/// STATEXFER_VALIDATE_ROWS_PER_TEAM, STATEXFER_VALIDATE_PEERS_PER_LANE, STATEXFER_VALIDATE_CHUNK,
/// STATEXFER_VALIDATE_GROUPS, STATEXFER_FUSED_BLOCK, STATEXFER_FUSED_ROUNDS.
/// The transfer's constructor checks the values' ranges.
inline statexfer::TransferOptions options_from_environment() {
  const auto read = [](const char* name, auto& field) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return;
    char* end = nullptr;
    const long long value = std::strtoll(text, &end, 10);
    if (*end != '\0')
      throw std::invalid_argument(std::string("statexfer-bench: ") + name + "=" + text + " is not an integer");
    field = static_cast<std::remove_reference_t<decltype(field)>>(value);
  };
  statexfer::TransferOptions o;
  int design = -1;
  read("STATEXFER_VALIDATE_AND_APPLY", design);
  if (design == 0) o.validate_and_apply = statexfer::FusedDesign::two_launches;
  if (design == 1) o.validate_and_apply = statexfer::FusedDesign::teams;
  if (design == 2) o.validate_and_apply = statexfer::FusedDesign::flat_grid;
  if (design == 3) o.validate_and_apply = statexfer::FusedDesign::persistent;
  int apply = -1;
  read("STATEXFER_APPLY_DESIGN", apply);
  if (apply == 0) o.apply = statexfer::ApplyDesign::teams;
  if (apply == 1) o.apply = statexfer::ApplyDesign::flat_grid;
  if (apply == 2) o.apply = statexfer::ApplyDesign::persistent;
  if (apply == 3) o.apply = statexfer::ApplyDesign::compact;
  int words = -1;
  read("STATEXFER_APPLY_WORDS", words);
  if (words == 0) o.apply = statexfer::ApplyDesign::teams;  // the former spelling of the teams
  if (words > 0) o.expert.apply_words = words;
  read("STATEXFER_APPLY_TEAMS", o.expert.apply_teams);
  read("STATEXFER_COMPACT_WORDS", o.expert.compact_words);
  read("STATEXFER_COMPACT_STAGED", o.expert.compact_staged);
  read("STATEXFER_COMPACT_HANDOUT", o.expert.compact_handout);
  read("STATEXFER_COMPACT_JOINT_PAGES", o.expert.compact_joint_pages);
  read("STATEXFER_APPLY_TEAM_SIZE", o.expert.apply_team_size);
  read("STATEXFER_APPLY_TILE_BYTES", o.expert.apply_tile_bytes);
  int bulk = -1;
  read("STATEXFER_APPLY_BULK", bulk);
  o.expert.no_bulk_copies = bulk == 0;
  read("STATEXFER_VALIDATE_PAIRS_CAPACITY", o.expert.validate_pairs_capacity);
  read("STATEXFER_VALIDATE_ROWS_PER_TEAM", o.expert.validate_rows_per_team);
  read("STATEXFER_VALIDATE_PEERS_PER_LANE", o.expert.validate_peers_per_lane);
  read("STATEXFER_VALIDATE_CHUNK", o.expert.validate_chunk);
  read("STATEXFER_VALIDATE_GROUPS", o.expert.validate_groups);
  read("STATEXFER_VALIDATE_COUNTED_KEYS", o.expert.validate_counted_keys);
  read("STATEXFER_FUSED_FIRST_UNITS", o.expert.fused_first_units);
  read("STATEXFER_FUSED_BLOCK", o.expert.fused_block);
  read("STATEXFER_FUSED_ROUNDS", o.expert.fused_rounds);
  return o;
}

/// What a Workload binds besides the shape's pool and pages.
struct WorkloadOptions {
  std::int64_t host_rows = 0;  // > 0: a host tier of that many rows (BenchTier.cpp)
  // > 0: snapshot rows in the pool (at least the live commands), else C; a partly
  // filled batch at a large C needs only its own (BenchPartial.cpp)
  std::int64_t snapshot_rows = 0;
  bool claims = false;  // row claims over the pool and host tier (BenchTierStreams.cpp)
  int positions = 0;    // > 0: speculative positions, K position rows a slot (BenchSpeculative.cpp)
  statexfer::CommitMove move = statexfer::CommitMove::remap;
  bool keys = false;                                                            // a prefix_key region
  statexfer::CommandPlacement placement = statexfer::CommandPlacement::device;  // the command arrays (BenchStep.cpp)
};

// consumed_tokens (offset 0 of the workload's rows) of row `row` of `backing`.
template <class Backing>
std::int64_t consumed_of(const Backing& backing, std::int64_t row) {
  std::int64_t value = 0;
  Kokkos::deep_copy(Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                        reinterpret_cast<std::uint8_t*>(&value), sizeof value),
                    Kokkos::subview(backing, row, std::make_pair(std::size_t(0), sizeof value)));
  return value;
}

struct alignas(16) Word16 {
  std::uint64_t lo, hi;
};

// The copy yardstick: a plain kernel copying 16-byte words (a captured
// deep_copy can become a graph memcpy node, which runs slower on the copy
// engines than a kernel does at some sizes).
inline void copy_kernel(const Exec& e, const Kokkos::View<std::uint8_t*, Exec::memory_space>& dst,
                        const Kokkos::View<std::uint8_t*, Exec::memory_space>& src) {
  const std::int64_t words = static_cast<std::int64_t>(src.extent(0) / sizeof(Word16));
  Word16* d = reinterpret_cast<Word16*>(dst.data());
  const Word16* s = reinterpret_cast<const Word16*>(src.data());
  Kokkos::parallel_for(
      "bench::copy_kernel", Kokkos::RangePolicy<Exec>(e, 0, words),
      KOKKOS_LAMBDA(const std::int64_t i) { d[i] = s[i]; });
}

// An all-valid snapshot batch as the reference module's benchmark builds it:
// every live row copies into its own snapshot row and saves its partial pages.
// C = shape.capacity commands are written; num_ops = shape.live() of them run.
// Rows: the null row, C live rows, C * K position rows, `gap` rows, S snapshot
// rows (options.snapshot_rows, else C; command i < S snapshots into the i-th), a spare row.
struct Workload {
  statexfer::StatePool<Exec> pool;
  statexfer::StateCommands<Exec> commands;
  statexfer::PageTable<Exec> tables;
  statexfer::CommandBatch<Exec> batch;  // the snapshot batch; upload() sends what it holds
  std::vector<statexfer::PageBinding<Exec>::cache_view> caches;
  std::unique_ptr<statexfer::PreparedStateTransfer<Exec>> transfer;
  statexfer::HostTier<Exec> host;          // host_rows > 0: bound to the transfer (BenchTier.cpp)
  statexfer::RowClaims<Exec> claims;       // options.claims: bound to the transfer
  statexfer::TransferConfig<Exec> config;  // what the transfer binds (another transfer over the pool copies it)
  statexfer::StateRows<Exec> state_rows;
  Kokkos::View<std::int32_t*, Exec::memory_space> accepted;  // positions > 0
  std::int64_t bytes_written = 0;
  std::int64_t endpoint = 0;        // every live request's consumed tokens
  std::int64_t first_snapshot = 0;  // the snapshot row of command i is first_snapshot + i

  /// Prepares the transfer on `exec`, the instance the benchmark then runs it on.
  Workload(const Shape& s, const Exec& exec, const WorkloadOptions& options = {}) : batch(s.capacity) {
    const std::int64_t c = s.capacity;
    const int k = options.positions;
    std::vector<statexfer::Region> regions{{"consumed_tokens", 0, 8, statexfer::DType::int64}};
    if (options.keys) regions.push_back({"prefix_key", 8, 8, statexfer::DType::int64});
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
    const std::int64_t snapshots = options.snapshot_rows > 0 ? options.snapshot_rows : c;
    if (snapshots < s.live())
      throw std::invalid_argument("statexfer-bench: " + std::to_string(snapshots) + " snapshot rows for " +
                                  std::to_string(s.live()) + " live commands");
    first_snapshot = c + 1 + c * k + s.gap;
    const std::int64_t rows = first_snapshot + snapshots + 1, page_count = c * s.width;
    pool = statexfer::StatePool<Exec>(statexfer::StateLayout(regions, row_bytes), rows, page_count);
    fill_pattern(pool.backing(), 17);
    commands = statexfer::StateCommands<Exec>::allocate(c, options.placement);

    tables = statexfer::PageTable<Exec>("bench::tables", c, s.width);
    state_rows = statexfer::StateRows<Exec>("bench::state_rows", c, 8);
    auto requests = statexfer::RequestState<Exec>::allocate(c);
    endpoint = s.width * s.page_tokens - s.page_tokens / 2 - 1;  // mid-page
    auto tables_h = Kokkos::create_mirror_view(tables);
    auto rows_h = Kokkos::create_mirror_view(state_rows);
    auto consumed_h = Kokkos::create_mirror_view(requests.consumed_tokens);
    for (std::int64_t i = 0; i < c; ++i) {
      for (std::int64_t l = 0; l < s.width; ++l) tables_h(i, l) = static_cast<std::int32_t>(i * s.width + l);
      rows_h(i, 0) = 1 + i;
      for (std::int64_t j = 1; j <= k; ++j) rows_h(i, j) = c + 1 + i * k + j - 1;
      consumed_h(i, 0) = endpoint;
    }
    Kokkos::deep_copy(tables, tables_h);
    Kokkos::deep_copy(state_rows, rows_h);
    Kokkos::deep_copy(requests.consumed_tokens, consumed_h);

    config.page_tokens = s.page_tokens;
    config.options = options_from_environment();
    if (options.host_rows > 0) {
      host = statexfer::HostTier<Exec>(pool.layout(), options.host_rows);
      config.host_tier = host;
    }
    if (options.claims) {
      claims = statexfer::RowClaims<Exec>(pool, host);
      config.claims = claims;
    }
    if (k > 0) {
      accepted = decltype(accepted)("bench::accepted", c);
      config.speculative.positions = k;
      config.speculative.accepted = accepted;
      config.speculative.move = options.move;
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

    for (std::int64_t i = 0; i < std::min(c, snapshots); ++i)
      batch.set(i, statexfer::Command::snapshot(i, 1 + i, first_snapshot + i, endpoint));
    const std::int64_t live = s.live();
    batch.resize(live);
    upload(exec);
    for (auto& cache : caches) fill_pattern(cache, 23);
    bytes_written = live * row_bytes;  // each byte once: the page regions come from the caches (shapes.hpp)

    // One checked run: every command must apply.
    run_checked(exec, "benchmark batch");
  }

  /// The batch's upload on `exec` (one copy).
  void upload(const Exec& exec) const { commands.upload(exec, batch); }

  /// Upload, validate and apply once; throws unless every live command got code 0.
  void run_checked(const Exec& exec, const std::string& what) const {
    upload(exec);
    transfer->validate(exec);
    transfer->apply(exec);
    exec.fence();
    auto errors = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), commands.errors);
    for (std::int64_t i = 0; i < batch.size(); ++i)
      if (errors(i) != 0)
        throw std::runtime_error(what + " is not all-valid: command " + std::to_string(i) + " got code " +
                                 std::to_string(errors(i)));
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

  /// One replay, enqueued (no fence, no timing): a step of a serving loop.
  void launch() {
#ifdef KOKKOS_ENABLE_CUDA
    cudaGraphLaunch(graph_instance_, instance_.stream());
#else
    step_(instance_.exec());
#endif
  }

  double seconds_per_replay(int replays) {
    begin(replays);
    return end();
  }

  /// `replays` replays enqueued between two events and not waited for (on
  /// hosts run at once); done() says whether they have run, end() waits for
  /// them and returns the seconds per replay. Another stream's work can be
  /// enqueued in between (BenchTierStreams.cpp).
  void begin(int replays) {
    replays_ = replays;
#ifdef KOKKOS_ENABLE_CUDA
    const cudaStream_t stream = instance_.stream();
    cudaStreamSynchronize(stream);
    cudaEventRecord(start_, stream);
    for (int i = 0; i < replays; ++i) cudaGraphLaunch(graph_instance_, stream);
    cudaEventRecord(stop_, stream);
#else
    const Exec& exec = instance_.exec();
    exec.fence();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < replays; ++i) step_(exec);
    exec.fence();
    seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
#endif
  }
  /// `replays` replays, each timed alone between events of its own, `before(exec, i)` enqueued ahead of
  /// replay i outside them (BenchPartial.cpp's cold rows: another batch's upload). Returns the mean
  /// seconds of a replay.
  double seconds_per_replay_apart(int replays, const std::function<void(const Exec&, int)>& before) {
    const Exec& exec = instance_.exec();
    exec.fence();
    double total = 0;
#ifdef KOKKOS_ENABLE_CUDA
    const cudaStream_t stream = instance_.stream();
    std::vector<cudaEvent_t> events(2 * static_cast<std::size_t>(replays));
    for (auto& e : events) cudaEventCreate(&e);
    // A few replays at a time behind a host function that holds the stream until they are all enqueued:
    // a replay shorter than its enqueueing would otherwise start late and count the host's latency.
    constexpr int held = 64;
    for (int first = 0; first < replays; first += held) {
      std::atomic<bool> open{false};
      cudaLaunchHostFunc(
          stream,
          [](void* flag) {  // gives up after 10 s: enqueueing that waited for the stream would hang here
            const auto t0 = std::chrono::steady_clock::now();
            while (!static_cast<std::atomic<bool>*>(flag)->load(std::memory_order_acquire) &&
                   std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
              std::this_thread::yield();
          },
          &open);
      for (int i = first; i < std::min(replays, first + held); ++i) {
        before(exec, i);
        cudaEventRecord(events[2 * i], stream);
        cudaGraphLaunch(graph_instance_, stream);
        cudaEventRecord(events[2 * i + 1], stream);
      }
      open.store(true, std::memory_order_release);
      cudaStreamSynchronize(stream);
    }
    for (int i = 0; i < replays; ++i) {
      float ms = 0;
      cudaEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]);
      total += ms * 1e-3;
    }
    for (auto& e : events) cudaEventDestroy(e);
#else
    for (int i = 0; i < replays; ++i) {
      before(exec, i);
      exec.fence();
      const auto t0 = std::chrono::steady_clock::now();
      step_(exec);
      exec.fence();
      total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
#endif
    return total / replays;
  }
  bool done() const {
#ifdef KOKKOS_ENABLE_CUDA
    return cudaEventQuery(stop_) == cudaSuccess;
#else
    return true;
#endif
  }
  double end() {
#ifdef KOKKOS_ENABLE_CUDA
    cudaEventSynchronize(stop_);
    float ms = 0;
    cudaEventElapsedTime(&ms, start_, stop_);
    seconds_ = ms * 1e-3;
#endif
    return seconds_ / replays_;
  }

 private:
  const BenchInstance& instance_;
  std::function<void(const Exec&)> step_;
  int replays_ = 1;
  double seconds_ = 0;
#ifdef KOKKOS_ENABLE_CUDA
  cudaGraph_t graph_{};
  cudaGraphExec_t graph_instance_{};
  cudaEvent_t start_{}, stop_{};
#endif
};

// Registration, called by the main before benchmark::Initialize with the
// shapes the command line selected (register_transfer_shapes takes those of
// Runner::transfer).
void register_transfer_shapes(const std::vector<NamedShape>& shapes);
void register_validate_capacity();
void register_tier_benchmarks();         // --set tiers
void register_speculative_benchmarks();  // --set speculative
void register_step_benchmarks();         // --set steps
// --set partial: the shapes of Runner::partial, and validate() at C = 64..4096 with 4 live commands
void register_partial_benchmarks(const std::vector<NamedShape>& shapes, bool host_backend);
void register_tier_stream_benchmarks();  // --set tier-streams
// --set exchange: prefill/decode export and import, the shapes that fit memory_budget_bytes
void register_exchange_benchmarks(bool host_backend, std::int64_t device_memory);

}  // namespace statexfer::bench

#endif
