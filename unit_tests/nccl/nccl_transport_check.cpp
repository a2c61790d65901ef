// statexfer::WireTransport over NCCL on the GPUs of one host, without MPI
// (forked ranks, as statexfer-nccl-check): rank 0 is a prefill group of one,
// ranks 1..N-1 a decode group of N - 1 (a small model that splits at TP 1,
// 2, 3 and 6), each rank on its own GPU. Each side's whole step is one CUDA
// graph, captured once: export validate + apply + send (count C: the whole
// buffers) on the prefill rank; receive + import validate + the decode group's
// NCCL combine + import apply on each decode rank. Replays carry new rows and
// counts (1 to C); every fourth, one decode rank's import names a stale key
// for one command, which every decode rank must then refuse (code 9) and
// publish on none (written on none, but for the payload the other ranks
// landed before the combine, §17). Every other imported row must be the
// oracle's shard.
//
//   statexfer-nccl-transport-check [ranks]   default: every visible GPU (2, 3, 4 or 7); exit 0 when all is right

#include <Kokkos_Core.hpp>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <statexfer/statexfer.hpp>
#include <test_common/reshard.hpp>

#include "nccl_ranks.hpp"

namespace {

using Exec = Kokkos::Cuda;
using statexfer::Command;
using statexfer::DType;
using statexfer::ModelLayout;
using statexfer::Split;

constexpr std::int64_t capacity = 8, rows = capacity + 2;

ModelLayout model_of() {
  return ModelLayout(
      {{"consumed_tokens", DType::int64, 1, {{"endpoint", 1, 8, Split::replicated}}},
       {"prefix_key", DType::int64, 1, {{"key", 1, 8, Split::replicated}}},
       {"ssm", DType::float32, 3, {{"heads", 6, 16, Split::units}}},
       {"conv", DType::bfloat16, 3, {{"x", 6, 12, Split::units}, {"B", 1, 6, Split::units}, {"C", 1, 6, Split::units}}},
       {"kv", DType::uint8, 4, {{"kv_heads", 6, 8, Split::units}}}},
      2);
}

std::vector<std::uint8_t> whole_row(const ModelLayout& model, int replay, int k, std::int64_t& endpoint,
                                    std::int64_t& key) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(replay * 64 + k));
  const statexfer::StateLayout whole = model.whole();
  std::vector<std::uint8_t> row(static_cast<std::size_t>(whole.row_bytes()));
  for (auto& b : row) b = static_cast<std::uint8_t>(rng());
  endpoint = 100 + replay, key = 0x4e00 + k;
  std::memcpy(row.data() + whole.region("consumed_tokens").offset, &endpoint, 8);
  std::memcpy(row.data() + whole.region("prefix_key").offset, &key, 8);
  return row;
}

int check(ncclComm_t comm, int rank, int ranks, int replays) {
  const ModelLayout model = model_of();
  const int p = 1, d = ranks - 1;
  const bool prefill = rank == 0;
  const int local = prefill ? 0 : rank - 1;
  const statexfer::GroupRank self = prefill ? statexfer::GroupRank{p, 0} : statexfer::GroupRank{d, local};
  std::vector<int> prefill_ranks{0}, decode_ranks;
  for (int r = 1; r < ranks; ++r) decode_ranks.push_back(r);
  // The decode group's communicator for its combiner (the prefill group of one needs none).
  ncclComm_t group = nullptr;
  if (ncclCommSplit(comm, prefill ? 0 : 1, rank, &group, nullptr) != ncclSuccess) {
    std::fprintf(stderr, "rank %d: ncclCommSplit failed\n", rank);
    return 1;
  }

  statexfer::StatePool<Exec> pool(model.local(self.size, self.rank), rows, 1);
  auto commands = statexfer::StateCommands<Exec>::allocate(capacity);
  std::vector<statexfer::WireBuffer<Exec>> wires;
  for (int k = 0; k < (prefill ? d : p); ++k) {
    const std::int64_t rb =
        prefill ? statexfer::record_bytes(model, {p, 0}, {d, k}) : statexfer::record_bytes(model, {p, k}, {d, local});
    wires.push_back(rb > 0 ? statexfer::WireBuffer<Exec>("nccl_transport_check::wire", rb * capacity)
                           : statexfer::WireBuffer<Exec>());
  }
  std::unique_ptr<statexfer::PreparedExport<Exec>> exporter;
  std::unique_ptr<statexfer::PreparedImport<Exec>> importer;
  std::unique_ptr<statexfer::ErrorCombiner<Exec>> combiner;
  if (prefill) {
    exporter = std::make_unique<statexfer::PreparedExport<Exec>>(pool, commands, model, self, d, wires);
    combiner = std::make_unique<statexfer::ErrorCombiner<Exec>>(commands);
  } else {
    importer = std::make_unique<statexfer::PreparedImport<Exec>>(pool, commands, model, p, self, wires);
    combiner = std::make_unique<statexfer::ErrorCombiner<Exec>>(commands, group);
  }
  statexfer::WireTransport<Exec> transport(model, capacity, comm, prefill_ranks, decode_ranks, wires);
  int failures = 0;
  if (!transport.capturable() || transport.path() != statexfer::TransportPath::nccl) {
    std::fprintf(stderr, "rank %d: the NCCL transport reports path %s\n", rank, statexfer::to_string(transport.path()));
    ++failures;
  }

  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  {
    const Exec exec(stream);
    if (prefill)
      exporter->prepare(exec);
    else
      importer->prepare(exec);
    combiner->prepare(exec);
    transport.prepare(exec);
    cudaGraph_t graph;
    cudaGraphExec_t instance;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    if (prefill) {
      exporter->validate(exec);
      combiner->combine(exec);
      exporter->apply(exec);
      transport.send(exec, capacity);  // the whole buffers: any count up to C
    } else {
      transport.receive(exec, capacity);
      importer->validate(exec);
      combiner->combine(exec);
      importer->apply(exec);
    }
    if (cudaStreamEndCapture(stream, &graph) != cudaSuccess ||
        cudaGraphInstantiate(&instance, graph, 0) != cudaSuccess) {
      std::fprintf(stderr, "rank %d: capture of the %s step failed\n", rank, prefill ? "prefill" : "decode");
      return failures + 1;
    }

    for (int rep = 0; rep < replays; ++rep) {
      const int count = 1 + rep % static_cast<int>(capacity);
      // Every fourth replay: decode rank (rep / 4) % d names a stale key for its last command.
      const bool fault = rep % 4 == 3;
      const int faulty_rank = (rep / 4) % d;
      statexfer::CommandBatch<Exec> batch(capacity);
      std::vector<std::vector<std::uint8_t>> wholes;
      auto image = Kokkos::create_mirror_view(pool.backing());
      Kokkos::deep_copy(image, std::uint8_t(0));
      for (int k = 0; k < count; ++k) {
        std::int64_t endpoint, key;
        wholes.push_back(whole_row(model, rep, k, endpoint, key));
        if (prefill) {
          const auto shard = statexfer::test::oracle_shard(model.regions(), wholes.back(), p, 0);
          std::memcpy(&image(k + 1, 0), shard.data(), shard.size());
          batch.push_back(Command::export_row(k + 1, k, endpoint, key));
        } else {
          const bool stale = fault && local == faulty_rank && k == count - 1;
          batch.push_back(Command::import_row(k, k + 1, endpoint, key + (stale ? 1 : 0)));
        }
      }
      Kokkos::deep_copy(exec, pool.backing(), image);
      commands.upload(exec, batch);
      cudaGraphLaunch(instance, stream);
      if (prefill) {
        exec.fence();
        continue;
      }
      auto errors = Kokkos::create_mirror_view(commands.errors);
      Kokkos::deep_copy(exec, errors, commands.errors);
      Kokkos::deep_copy(exec, image, pool.backing());
      exec.fence();
      const std::int64_t endpoint_at = model.local(d, local).region("consumed_tokens").offset;
      for (int k = 0; k < static_cast<int>(capacity); ++k) {
        const std::int32_t want = fault && k == count - 1 ? 9 : 0;
        const bool written = k < count && want == 0;
        const auto expect =
            written ? statexfer::test::oracle_shard(model.regions(), wholes[static_cast<std::size_t>(k)], d, local)
                    : std::vector<std::uint8_t>(static_cast<std::size_t>(pool.row_bytes()), 0);
        // A request the group refused was landed (§17's default) on the ranks whose own checks passed, and
        // must be published on none: there only its endpoint is known (-1).
        const bool landed = want != 0 && local != faulty_rank;
        std::int64_t endpoint = 0;
        std::memcpy(&endpoint, &image(k + 1, 0) + endpoint_at, 8);
        const bool right = landed ? endpoint == -1 : std::memcmp(&image(k + 1, 0), expect.data(), expect.size()) == 0;
        if ((errors(k) != want || !right) && failures++ < 10)
          std::fprintf(stderr, "rank %d, replay %d: command %d has code %d (want %d)%s\n", rank, rep, k, errors(k),
                       want, errors(k) == want ? " but its row is wrong" : "");
      }
    }
    cudaGraphExecDestroy(instance);
    cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(stream);
  ncclCommDestroy(group);
  return failures;
}

}  // namespace

int main(int argc, char* argv[]) {
  int ranks = argc > 1 ? std::atoi(argv[1]) : 0;
  if (ranks <= 0) {
    ranks = statexfer::test::visible_gpus();
    if (ranks > 4 && ranks < 7) ranks = 4;  // a decode group that splits the model: 1, 2, 3 or 6 ranks
    if (ranks > 7) ranks = 7;
  }
  if (ranks < 2 || !model_of().splits(ranks - 1)) {
    std::fprintf(stderr, "statexfer-nccl-transport-check: needs 2, 3, 4 or 7 GPUs (got %d)\n", ranks);
    return 2;
  }
  const int failed = statexfer::test::run_ranks(ranks, argv[0], [&](ncclComm_t comm, int rank) {
    const int failures = check(comm, rank, ranks, 8 * ranks);
    std::printf("rank %d (GPU %d, %s): %s\n", rank, rank, rank == 0 ? "prefill" : "decode",
                failures == 0 ? "all right" : "FAILED");
    return failures;
  });
  std::printf("statexfer-nccl-transport-check: prefill 1, decode %d GPUs over NCCL, %s\n", ranks - 1,
              failed == 0 ? "every row the oracle's, stale keys refused on every decode rank" : "FAILED");
  return failed == 0 ? 0 : 1;
}
