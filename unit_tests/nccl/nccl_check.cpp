// statexfer::ErrorCombiner over NCCL on the GPUs of one host, without MPI: the
// parent forks one rank per GPU; rank 0 makes the ncclUniqueId and hands it to
// the others through a pipe. Every rank
//  1. checks every combination of up to three ranks' codes through combine()
//     (what statexfer-combine-check does over MPI);
//  2. captures validate() + combine() + apply() into one CUDA graph on its
//     Kokkos::Cuda instance's stream and replays it: before each replay one
//     command's partial page is unmapped in one rank's page table only (another
//     command and another rank each time), so that rank alone finds code 6.
//     After the replay every rank must report code 6 for that command and
//     leave its destination row untouched, and every other command must have
//     applied on every rank.
//
//   statexfer-nccl-check [ranks]     default: every visible GPU; exit 0 when all is right

#include <Kokkos_Core.hpp>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <statexfer/combine.hpp>
#include <statexfer/statexfer.hpp>

#include "nccl_ranks.hpp"

namespace {

using Exec = Kokkos::Cuda;

std::int32_t code_of(int rank, int i) {
  for (int r = 0; r < rank; ++r) i /= 12;
  return i % 12;  // codes 0..11
}

int check_combinations(ncclComm_t comm, int rank, int ranks) {
  int combos = 1;
  for (int r = 0; r < ranks && r < 3; ++r) combos *= 12;
  std::int64_t capacity = 1;
  while (capacity < combos) capacity *= 2;
  auto commands = statexfer::StateCommands<Exec>::allocate(capacity);
  statexfer::ErrorCombiner<Exec> combiner(commands, comm);
  Exec exec;
  combiner.prepare(exec);
  int failures = 0;
  if (combiner.backend() != statexfer::CombineBackend::nccl || combiner.ranks() != ranks || combiner.rank() != rank) {
    std::fprintf(stderr, "rank %d: combiner reports rank %d of %d, backend %s\n", rank, combiner.rank(),
                 combiner.ranks(), statexfer::to_string(combiner.backend()));
    ++failures;
  }
  auto h = Kokkos::create_mirror_view(commands.errors);
  for (std::int64_t i = 0; i < capacity; ++i) h(i) = rank < 3 ? code_of(rank, static_cast<int>(i % combos)) : 0;
  Kokkos::deep_copy(commands.errors, h);
  combiner.combine(exec);
  exec.fence();
  Kokkos::deep_copy(h, commands.errors);
  for (std::int64_t i = 0; i < capacity; ++i) {
    std::int32_t want = 0;
    for (int r = 0; r < ranks; ++r)
      want = statexfer::combine_error_codes(want, r < 3 ? code_of(r, static_cast<int>(i % combos)) : 0);
    if (h(i) != want && failures++ < 10)
      std::fprintf(stderr, "rank %d, command %lld: combined %d, want %d\n", rank, static_cast<long long>(i), h(i),
                   want);
  }
  return failures;
}

int check_captured_step(ncclComm_t comm, int rank, int ranks, int replays) {
  constexpr std::int64_t capacity = 4, page_tokens = 4, width = 4, kv_bytes = 16, end = 10;
  constexpr std::int64_t rows = 2 * capacity + 1, pages = capacity * width;
  const auto layout = statexfer::StateLayout::pack({{"consumed_tokens", 8, statexfer::DType::int64},
                                                    {"ssm", 64, statexfer::DType::float32},
                                                    {"kv", kv_bytes, statexfer::DType::uint8}});
  const std::int64_t row_bytes = layout.row_bytes();
  // Rows: 0 null, 1..C live (request s in row 1 + s), C+1..2C snapshots (request s's in row C + 1 + s).
  statexfer::StatePool<Exec> pool(layout, rows, pages);
  statexfer::PageBinding<Exec>::cache_view cache("nccl_check::kv_cache", pages, kv_bytes);
  statexfer::PageTable<Exec> tables("nccl_check::page_tables", capacity, width);
  statexfer::StateRows<Exec> state_rows("nccl_check::state_rows", capacity, 8);
  auto requests = statexfer::RequestState<Exec>::allocate(capacity);
  auto commands = statexfer::StateCommands<Exec>::allocate(capacity);

  auto pool_h = Kokkos::create_mirror_view(pool.backing());
  auto cache_h = Kokkos::create_mirror_view(cache);
  auto tables_h = Kokkos::create_mirror_view(tables);
  auto rows_h = Kokkos::create_mirror_view(state_rows);
  auto consumed_h = Kokkos::create_mirror_view(requests.consumed_tokens);
  const auto live_byte = [&](std::int64_t s, std::int64_t b) {
    return static_cast<std::uint8_t>(31 * rank + 7 * s + b);
  };
  for (std::int64_t s = 0; s < capacity; ++s) {
    for (std::int64_t b = 0; b < row_bytes; ++b) pool_h(1 + s, b) = live_byte(s, b);
    *reinterpret_cast<std::int64_t*>(&pool_h(1 + s, 0)) = end;
    rows_h(s, 0) = 1 + s;
    consumed_h(s, 0) = end;
  }
  for (std::int64_t p = 0; p < pages; ++p)
    for (std::int64_t b = 0; b < kv_bytes; ++b) cache_h(p, b) = static_cast<std::uint8_t>(p ^ (b << 4) ^ rank);
  Kokkos::deep_copy(pool.backing(), pool_h);
  Kokkos::deep_copy(cache, cache_h);
  Kokkos::deep_copy(state_rows, rows_h);
  Kokkos::deep_copy(requests.consumed_tokens, consumed_h);

  statexfer::TransferConfig<Exec> config;
  config.pages = {{"kv", cache}};
  config.page_tokens = page_tokens;
  config.state_rows = state_rows;
  config.requests = requests;
  statexfer::PreparedStateTransfer<Exec> transfer(pool, commands, tables, config);
  statexfer::ErrorCombiner<Exec> combiner(commands, comm);

  cudaStream_t stream;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  int failures = 0;
  {
    Exec exec(stream);
    transfer.prepare(exec);
    combiner.prepare(exec);
    cudaGraph_t graph;
    cudaGraphExec_t instance;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    transfer.validate(exec);
    combiner.combine(exec);
    transfer.apply(exec);
    if (cudaStreamEndCapture(stream, &graph) != cudaSuccess ||
        cudaGraphInstantiate(&instance, graph, 0) != cudaSuccess) {
      std::fprintf(stderr, "rank %d: capture of validate + combine + apply failed\n", rank);
      return 1;
    }

    // Every request snapshots itself; one command's partial page (logical page
    // end / PT) is unmapped on one rank.
    auto slot_h = Kokkos::create_mirror_view(commands.request_slots);
    auto src_h = Kokkos::create_mirror_view(commands.source_slots);
    auto dst_h = Kokkos::create_mirror_view(commands.destination_slots);
    auto op_h = Kokkos::create_mirror_view(commands.operation);
    auto end_h = Kokkos::create_mirror_view(commands.expected_consumed);
    for (std::int64_t s = 0; s < capacity; ++s) {
      slot_h(s) = s;
      src_h(s) = 1 + s;
      dst_h(s) = capacity + 1 + s;
      op_h(s) = 0;
      end_h(s) = end;
    }
    Kokkos::deep_copy(exec, commands.request_slots, slot_h);
    Kokkos::deep_copy(exec, commands.source_slots, src_h);
    Kokkos::deep_copy(exec, commands.destination_slots, dst_h);
    Kokkos::deep_copy(exec, commands.operation, op_h);
    Kokkos::deep_copy(exec, commands.expected_consumed, end_h);
    Kokkos::deep_copy(exec, commands.num_ops, static_cast<std::int32_t>(capacity));
    auto errors_h = Kokkos::create_mirror_view(commands.errors);
    auto snapshots = Kokkos::subview(pool.backing(), Kokkos::make_pair(capacity + 1, rows), Kokkos::ALL());
    for (int k = 0; k < replays; ++k) {
      const std::int64_t faulty = k % capacity;
      const int faulty_rank = (k / capacity) % ranks;
      for (std::int64_t s = 0; s < capacity; ++s)
        for (std::int64_t l = 0; l < width; ++l) tables_h(s, l) = static_cast<std::int32_t>(s * width + l);
      if (rank == faulty_rank) tables_h(faulty, end / page_tokens) = -1;
      Kokkos::deep_copy(exec, tables, tables_h);
      Kokkos::deep_copy(exec, snapshots, std::uint8_t(0xee));
      cudaGraphLaunch(instance, stream);
      Kokkos::deep_copy(exec, errors_h, commands.errors);
      Kokkos::deep_copy(exec, pool_h, pool.backing());
      exec.fence();
      for (std::int64_t s = 0; s < capacity; ++s) {
        const std::int32_t want = s == faulty ? 6 : 0;
        bool right = errors_h(s) == want;
        for (std::int64_t b = 0; b < row_bytes && right; ++b) {
          std::uint8_t expect = 0xee;
          if (s != faulty) {
            const std::int64_t kv = b - layout.region("kv").offset;
            expect = b < 8                        ? pool_h(1 + s, b)
                     : (kv >= 0 && kv < kv_bytes) ? cache_h(s * width + end / page_tokens, kv)
                                                  : live_byte(s, b);
          }
          right = pool_h(capacity + 1 + s, b) == expect;
        }
        if (!right && failures++ < 10)
          std::fprintf(stderr,
                       "rank %d, replay %d (command %lld faulted on rank %d): command %lld has code %d (want %d)%s\n",
                       rank, k, static_cast<long long>(faulty), faulty_rank, static_cast<long long>(s), errors_h(s),
                       want, errors_h(s) == want ? " but its snapshot row is wrong" : "");
      }
    }
    cudaGraphExecDestroy(instance);
    cudaGraphDestroy(graph);
  }
  cudaStreamDestroy(stream);
  return failures;
}

}  // namespace

int main(int argc, char* argv[]) {
  const int ranks = argc > 1 && std::atoi(argv[1]) > 0 ? std::atoi(argv[1]) : statexfer::test::visible_gpus();
  if (ranks < 2) {
    std::fprintf(stderr, "statexfer-nccl-check: needs at least 2 GPUs (found %d)\n", ranks);
    return 2;
  }
  const int failed = statexfer::test::run_ranks(ranks, argv[0], [&](ncclComm_t comm, int rank) {
    int failures = check_combinations(comm, rank, ranks);
    failures += check_captured_step(comm, rank, ranks, 4 * 2 * ranks);
    std::printf("rank %d (GPU %d): %s\n", rank, rank, failures == 0 ? "all right" : "FAILED");
    return failures;
  });
  std::printf("statexfer-nccl-check: %d ranks over NCCL, %s\n", ranks,
              failed == 0 ? "every combination right, faulted commands applied on no rank" : "FAILED");
  return failed == 0 ? 0 : 1;
}
