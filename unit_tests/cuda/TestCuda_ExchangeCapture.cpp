// CUDA graphs of prefill/decode moves (docs/CONTRACT.md §17): in one process,
// a prefill group and a decode group share their wire buffers (SharedWires,
// the in-process transport); every export's validate() + apply() is captured
// into one graph and every import's into another (cudaStreamCaptureModeGlobal,
// which fails on any synchronisation or allocation), then both are replayed
// with new batches: new rows, new counts (1 to C), the commands uploaded by
// asynchronous copies on the same stream. Every replay's imported rows are
// held byte for byte against the oracle's shards (test_common/reshard.hpp),
// the rows past the count stay untouched, and a payload byte flipped between
// the two replays refuses its request (code 10) on the decode rank that reads
// it, which writes nothing there (check_before_write) or leaves the landed
// row unpublished (publish_after_check), both landings in turn.

#include <cuda/TestCuda_Category.hpp>

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <common/exchange_fixture.hpp>

namespace {

using Exec = Kokkos::Cuda;
namespace ft = statexfer::test;

#define STATEXFER_EXCHANGE_CUDA_CHECK(call) ASSERT_EQ((call), cudaSuccess) << #call

// Captures what `body` enqueues on `stream`: only kernels, `kernels` of them.
void capture(cudaStream_t stream, std::size_t kernels, cudaGraphExec_t& instance, const std::function<void()>& body) {
  cudaGraph_t graph;
  STATEXFER_EXCHANGE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  body();
  STATEXFER_EXCHANGE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  std::size_t nodes = 0;
  STATEXFER_EXCHANGE_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT_EQ(nodes, kernels);
  std::vector<cudaGraphNode_t> list(nodes);
  STATEXFER_EXCHANGE_CUDA_CHECK(cudaGraphGetNodes(graph, list.data(), &nodes));
  for (auto n : list) {
    cudaGraphNodeType type;
    STATEXFER_EXCHANGE_CUDA_CHECK(cudaGraphNodeGetType(n, &type));
    EXPECT_EQ(type, cudaGraphNodeTypeKernel) << "export and import enqueue kernels only";
  }
  STATEXFER_EXCHANGE_CUDA_CHECK(cudaGraphInstantiate(&instance, graph, 0));
  STATEXFER_EXCHANGE_CUDA_CHECK(cudaGraphDestroy(graph));
}

void capture_and_replay_exchange(int p, int d, statexfer::ImportLanding landing) {
  const bool lands = landing == statexfer::ImportLanding::publish_after_check;
  SCOPED_TRACE("prefill TP " + std::to_string(p) + ", decode TP " + std::to_string(d) +
               (lands ? ", publish after check" : ", check before write"));
  constexpr int capacity = ft::default_exchange_capacity;
  const statexfer::ModelLayout model(ft::mini_regions(), 2);
  cudaStream_t stream;
  STATEXFER_EXCHANGE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  {
    const Exec exec(stream);
    ft::ExchangeMove<Exec> move(model, p, d, capacity + 2, capacity, landing, exec);  // prepare(exec)

    cudaGraphExec_t exports = nullptr, imports = nullptr;
    capture(stream, static_cast<std::size_t>(2 * p), exports, [&] {
      for (const auto& e : move.exports) {
        e->validate(exec);
        e->apply(exec);
      }
    });
    capture(stream, static_cast<std::size_t>(3 * d), imports, [&] {
      for (const auto& m : move.imports) {
        m->validate(exec);
        m->apply(exec);
      }
    });
    ASSERT_FALSE(::testing::Test::HasFailure());

    const int replays = 24;
    for (int rep = 0; rep < replays; ++rep) {
      SCOPED_TRACE("replay " + std::to_string(rep));
      const int count = 1 + rep % capacity;
      const ft::Wholes w = ft::make_wholes(model, count, 0xca97u + static_cast<std::uint64_t>(rep));
      move.load_sources(w);
      for (auto& pool : move.destinations) Kokkos::deep_copy(pool.backing(), 0);
      // The batches stay alive until the stream has read them.
      std::vector<statexfer::CommandBatch<Exec>> batches;
      const auto upload = [&](const std::vector<statexfer::StateCommands<Exec>>& commands,
                              const std::vector<statexfer::Command>& batch) {
        for (const auto& c : commands) {
          batches.emplace_back(capacity);
          for (const auto& command : batch) batches.back().push_back(command);
          c.upload(exec, batches.back());
        }
      };
      upload(move.export_commands, ft::exports_of(w));
      STATEXFER_EXCHANGE_CUDA_CHECK(cudaGraphLaunch(exports, stream));
      STATEXFER_EXCHANGE_CUDA_CHECK(cudaStreamSynchronize(stream));
      for (const auto& c : move.export_commands)
        EXPECT_EQ(ft::download(c.errors), std::vector<std::int32_t>(capacity, 0)) << "export codes";
      // Every fourth replay: a payload byte of the last command's record from prefill rank 0 flipped in flight.
      const bool fault = rep % 4 == 3;
      int faulty_rank = -1;
      if (fault) {
        for (int j = 0; j < d && faulty_rank < 0; ++j)
          if (statexfer::record_bytes(model, {p, 0}, {d, j}) > 0) faulty_rank = j;
        move.patch_record(0, faulty_rank, count - 1, statexfer::record_header_bytes(model) + 5, 0x40);
      }
      upload(move.import_commands, ft::imports_of(w));
      STATEXFER_EXCHANGE_CUDA_CHECK(cudaGraphLaunch(imports, stream));
      STATEXFER_EXCHANGE_CUDA_CHECK(cudaStreamSynchronize(stream));
      for (int j = 0; j < d; ++j) {
        std::vector<std::int32_t> want(capacity, 0);
        if (j == faulty_rank) want[static_cast<std::size_t>(count - 1)] = 10;
        EXPECT_EQ(ft::download(move.import_commands[static_cast<std::size_t>(j)].errors), want) << "decode rank " << j;
        for (int k = 0; k < capacity; ++k) {
          if (lands && k < count && want[static_cast<std::size_t>(k)] == 10) {  // landed, left unpublished
            EXPECT_EQ(move.destination_endpoint(j, k + 1), -1) << "decode rank " << j << ", row " << k + 1;
            continue;
          }
          const bool written = k < count && want[static_cast<std::size_t>(k)] == 0;
          const auto expected =
              written ? ft::oracle_shard(model.regions(), w.rows[static_cast<std::size_t>(k)], d, j)
                      : std::vector<std::uint8_t>(static_cast<std::size_t>(move.destinations[j].row_bytes()), 0);
          EXPECT_TRUE(move.destination_row(j, k + 1) == expected)
              << "decode rank " << j << ", row " << k + 1 << (written ? ": not the oracle's shard" : ": written");
        }
      }
      ASSERT_FALSE(::testing::Test::HasFailure());
    }
    STATEXFER_EXCHANGE_CUDA_CHECK(cudaGraphExecDestroy(exports));
    STATEXFER_EXCHANGE_CUDA_CHECK(cudaGraphExecDestroy(imports));
  }
  STATEXFER_EXCHANGE_CUDA_CHECK(cudaStreamDestroy(stream));
}

TEST(cuda, exchange_capture_export_and_import) {
  for (const auto landing :
       {statexfer::ImportLanding::publish_after_check, statexfer::ImportLanding::check_before_write}) {
    capture_and_replay_exchange(2, 4, landing);
    capture_and_replay_exchange(4, 1, landing);
    capture_and_replay_exchange(1, 8, landing);
  }
}

}  // namespace
