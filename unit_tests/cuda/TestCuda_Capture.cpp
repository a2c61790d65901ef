// CUDA graphs: validate() + apply() (two kernels) and validate_and_apply() (one)
// captured once from a Kokkos::Cuda instance on the caller's stream (cudaStreamCaptureModeGlobal, which fails on any
// synchronisation or allocation), then replayed with new commands uploaded by
// asynchronous copies on the same stream; every replay is held against the host
// reference.

#include <cuda/TestCuda_Category.hpp>

#include <cuda_runtime.h>

#include <cstring>
#include <random>

#include <test_common/reference.hpp>
#include <test_common/run_case.hpp>
#include <common/test_data.hpp>

namespace {

using Exec = Kokkos::Cuda;
using Mem = Exec::memory_space;
namespace ft = statexfer::test;

#define STATEXFER_CUDA_CHECK(call) ASSERT_EQ((call), cudaSuccess) << #call

template <class T>
T* array_data(ft::Case& c, const std::string& name) {
  return c.arrays.at(name).data<T>();
}

// A conformance case with trailing bindings and the largest capacity: every
// kind of work item is in its graph.
ft::Case pick_case() {
  ft::Case best;
  for (const auto& dir : ft::find_cases(statexfer::test::cases_root())) {
    ft::Case c = ft::load_case(dir);
    if (c.spec.trailing_pages.empty() || c.expected.construct_error) continue;
    if (best.spec.capacity < c.spec.capacity ||
        (best.spec.capacity == c.spec.capacity && best.spec.excluded_regions.empty() &&
         !c.spec.excluded_regions.empty()))
      best = std::move(c);
  }
  return best;
}

// Random commands in the shape an engine sends: snapshots, restores, resets,
// some noise, a random count; consumed endpoints read from the current pool.
void random_commands(ft::Case& c, std::mt19937_64& rng) {
  const std::int64_t cap = c.spec.capacity, rows = c.spec.rows, row_bytes = c.spec.row_bytes;
  std::int64_t consumed_offset = 0;
  for (const auto& r : c.spec.regions)
    if (r.name == "consumed_tokens") consumed_offset = r.offset;
  const auto* pool = array_data<std::uint8_t>(c, "backing");
  const auto* state_rows = array_data<std::int64_t>(c, "state_rows");
  const auto* request_consumed = array_data<std::int64_t>(c, "request_consumed");
  auto* slots = array_data<std::int64_t>(c, "request_slots");
  auto* src = array_data<std::int64_t>(c, "source_slots");
  auto* dst = array_data<std::int64_t>(c, "destination_slots");
  auto* op = array_data<std::int32_t>(c, "operation");
  auto* end = array_data<std::int64_t>(c, "expected_consumed");
  auto uniform = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  std::vector<std::int64_t> perm(cap);
  for (std::int64_t i = 0; i < cap; ++i) perm[i] = i;
  std::shuffle(perm.begin(), perm.end(), rng);
  for (std::int64_t i = 0; i < cap; ++i) {
    const std::int64_t slot = perm[i];
    const std::int64_t live = state_rows[slot * 8];
    const std::int64_t snap = uniform(cap + 1, rows - 1);
    slots[i] = slot;
    const auto kind = uniform(0, 9);
    if (kind < 4) {
      src[i] = live, dst[i] = snap, op[i] = 0, end[i] = request_consumed[slot];
    } else if (kind < 8) {
      std::int64_t e;
      std::memcpy(&e, pool + snap * row_bytes + consumed_offset, 8);
      src[i] = snap, dst[i] = live, op[i] = 0, end[i] = e;
    } else if (kind < 9) {
      src[i] = -1, dst[i] = live, op[i] = 1, end[i] = 0;
    } else {
      src[i] = uniform(-2, rows + 1), dst[i] = uniform(-2, rows + 1), op[i] = static_cast<std::int32_t>(uniform(-1, 2));
      end[i] = uniform(-1, 40);
    }
  }
  array_data<std::int32_t>(c, "num_ops")[0] = static_cast<std::int32_t>(uniform(0, 3) == 0 ? uniform(0, cap) : cap);
}

template <class View>
void async_upload(const View& v, const ft::NpyArray& a, cudaStream_t s) {
  ASSERT_EQ(a.bytes.size(), v.span() * sizeof(typename View::value_type));
  ASSERT_EQ(cudaMemcpyAsync(v.data(), a.bytes.data(), a.bytes.size(), cudaMemcpyHostToDevice, s), cudaSuccess);
}

template <class View>
void async_download(ft::NpyArray& a, const View& v, cudaStream_t s) {
  ASSERT_EQ(a.bytes.size(), v.span() * sizeof(typename View::value_type));
  ASSERT_EQ(cudaMemcpyAsync(a.bytes.data(), v.data(), a.bytes.size(), cudaMemcpyDeviceToHost, s), cudaSuccess);
}

struct DeviceCase {
  statexfer::StatePool<Exec> pool;
  statexfer::StateCommands<Exec> commands;
  std::map<std::string, statexfer::PageBinding<Exec>::cache_view> caches;
  std::optional<statexfer::PreparedStateTransfer<Exec>> transfer;

  explicit DeviceCase(const ft::Case& c) {
    namespace d = ft::run_case_detail;
    const auto& s = c.spec;
    auto backing = d::upload2<std::uint8_t, Mem>(c, "backing", statexfer::DType::uint8);
    auto capacity = d::upload1<std::int64_t, Mem>(c, "memory_capacity", statexfer::DType::int64);
    pool = statexfer::StatePool<Exec>(statexfer::StateLayout(s.regions, s.row_bytes), backing, capacity);
    commands = statexfer::StateCommands<Exec>::allocate(s.capacity);
    statexfer::TransferConfig<Exec> config;
    config.page_tokens = s.page_tokens;
    config.state_rows = d::upload2<std::int64_t, Mem>(c, "state_rows", statexfer::DType::int64);
    config.requests.consumed_tokens = d::upload2<std::int64_t, Mem>(c, "request_consumed", statexfer::DType::int64);
    config.trailing_tables = d::upload2<std::int32_t, Mem>(c, "trailing_tables", statexfer::DType::int32);
    config.excluded_regions = s.excluded_regions;
    for (const auto& n : s.pages) {
      caches[n] = d::upload2<std::uint8_t, Mem>(c, "cache_" + n, statexfer::DType::uint8);
      config.pages.push_back({n, caches[n]});
    }
    for (const auto& n : s.trailing_pages) {
      caches[n] = d::upload2<std::uint8_t, Mem>(c, "cache_" + n, statexfer::DType::uint8);
      config.trailing_pages.push_back({n, caches[n]});
    }
    transfer.emplace(pool, commands, d::upload2<std::int32_t, Mem>(c, "tables", statexfer::DType::int32), config);
  }
};

// Captures validate() + apply(), or validate_and_apply() when `fused`, and
// replays it 120 times with new commands.
void capture_and_replay(bool fused) {
  ft::Case c = pick_case();
  ASSERT_GT(c.spec.capacity, 0) << "no conformance case with trailing bindings";
  DeviceCase dev(c);

  cudaStream_t stream;
  STATEXFER_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    Exec exec(stream);
    dev.transfer->prepare(exec);

    // Capture in global mode: any synchronisation or allocation inside validate()
    // or apply() would end the capture with an error.
    cudaGraph_t graph;
    STATEXFER_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    if (fused) {
      dev.transfer->validate_and_apply(exec);
    } else {
      dev.transfer->validate(exec);
      dev.transfer->apply(exec);
    }
    STATEXFER_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    std::size_t nodes = 0;
    STATEXFER_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
    std::vector<cudaGraphNode_t> list(nodes);
    STATEXFER_CUDA_CHECK(cudaGraphGetNodes(graph, list.data(), &nodes));
    if (fused)
      EXPECT_EQ(nodes, 1u) << "validate_and_apply is one kernel up to 64 commands";
    else
      EXPECT_EQ(nodes, 2u) << "validate and apply are one kernel each";
    for (auto n : list) {
      cudaGraphNodeType type;
      STATEXFER_CUDA_CHECK(cudaGraphNodeGetType(n, &type));
      EXPECT_EQ(type, cudaGraphNodeTypeKernel) << "only kernels: no copies, memsets, events or host nodes";
    }
    cudaGraphExec_t instance;
    STATEXFER_CUDA_CHECK(cudaGraphInstantiate(&instance, graph, 0));

    // Each replay: upload the commands, replay, copy the results back, all in
    // stream order; the host waits once per replay to compare.
    std::mt19937_64 rng(20261129);
    std::int64_t applied = 0, refused = 0;
    const int replays = 120;
    for (int rep = 0; rep < replays; ++rep) {
      random_commands(c, rng);
      async_upload(dev.commands.request_slots, c.arrays.at("request_slots"), stream);
      async_upload(dev.commands.source_slots, c.arrays.at("source_slots"), stream);
      async_upload(dev.commands.destination_slots, c.arrays.at("destination_slots"), stream);
      async_upload(dev.commands.operation, c.arrays.at("operation"), stream);
      async_upload(dev.commands.expected_consumed, c.arrays.at("expected_consumed"), stream);
      async_upload(dev.commands.num_ops, c.arrays.at("num_ops"), stream);
      STATEXFER_CUDA_CHECK(cudaGraphLaunch(instance, stream));

      const ft::CaseOutputs want = statexfer::test::reference_run(c);
      ft::CaseOutputs have = want;  // same shapes; bytes overwritten below
      async_download(*have.errors, dev.commands.errors, stream);
      async_download(*have.backing, dev.pool.backing(), stream);
      for (auto& [name, cache] : dev.caches) async_download(have.caches.at(name), cache, stream);
      STATEXFER_CUDA_CHECK(cudaStreamSynchronize(stream));

      const ft::Comparison cmp = ft::compare_outputs(have, want);
      ASSERT_TRUE(cmp.identical()) << "replay " << rep << ": " << cmp.total << " differences, first in "
                                   << cmp.first.front().array << "[" << cmp.first.front().index << "] "
                                   << cmp.first.front().value << " vs " << cmp.first.front().expected;
      const auto* e = want.errors->data<std::int32_t>();
      for (std::int64_t i = 0; i < c.spec.capacity; ++i) (e[i] == 0 ? applied : refused)++;
      // The next replay starts from this one's memory.
      c.arrays["backing"] = *want.backing;
      for (const auto& [name, cache] : want.caches) c.arrays["cache_" + name] = cache;
    }
    EXPECT_GT(applied, replays) << "too few commands applied to exercise the copies";
    EXPECT_GT(refused, 0);
    std::printf("graph replays%s: %d, commands applied %lld, refused %lld (case %s, C=%lld)\n",
                fused ? " (validate_and_apply)" : "", replays, static_cast<long long>(applied),
                static_cast<long long>(refused), c.dir.filename().c_str(), static_cast<long long>(c.spec.capacity));
    STATEXFER_CUDA_CHECK(cudaGraphExecDestroy(instance));
    STATEXFER_CUDA_CHECK(cudaGraphDestroy(graph));
  }
  STATEXFER_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST(TEST_CATEGORY, graph_capture_replays_match_reference) { capture_and_replay(false); }

TEST(TEST_CATEGORY, graph_capture_validate_and_apply_replays_match_reference) { capture_and_replay(true); }

TEST(TEST_CATEGORY, validate_before_prepare_is_refused_outside_capture) {
  ft::Case c = pick_case();
  ASSERT_GT(c.spec.capacity, 0);
  DeviceCase dev(c);
  EXPECT_THROW(dev.transfer->validate(), std::logic_error);
  EXPECT_THROW(dev.transfer->apply(), std::logic_error);
  EXPECT_THROW(dev.transfer->validate_and_apply(), std::logic_error);
}

}  // namespace
