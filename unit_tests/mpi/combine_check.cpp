// statexfer::ErrorCombiner across MPI ranks: every rank writes its own codes,
// combine() must leave every rank with the code that comes first in the order
// of docs/CONTRACT.md §4: 5, 1, 2, 3, 4, 6 (0 only where all ranks have 0), on every backend.
//
//   mpirun -np 2 statexfer-combine-check        exit 0: every pair and triple right

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdio>
#include <vector>

#include <statexfer/combine.hpp>

namespace {

// Rank `rank`'s code for command i: the digits of i in base 7, one per rank.
std::int32_t code_of(int rank, int i) {
  for (int r = 0; r < rank; ++r) i /= 7;
  return i % 7;
}

template <class Exec>
int check(MPI_Comm comm, int rank, int ranks) {
  // Capacity: all combinations of up to three ranks' codes (7^3 = 343 -> 512).
  int combos = 1;
  for (int r = 0; r < ranks && r < 3; ++r) combos *= 7;
  std::int64_t capacity = 1;
  while (capacity < combos) capacity *= 2;
  int failures = 0;
  for (std::int64_t cap = capacity; cap >= 1; cap /= 8) {
    statexfer::StateCommands<Exec> commands;
    try {
      commands = statexfer::StateCommands<Exec>::allocate(cap);
    } catch (const std::invalid_argument&) {
      continue;  // a capacity beyond what this build accepts
    }
    statexfer::ErrorCombiner<Exec> combiner(commands, comm);
    Exec exec;
    combiner.prepare(exec);
    if (combiner.ranks() != ranks || combiner.rank() != rank || combiner.backend() != statexfer::CombineBackend::mpi) {
      std::fprintf(stderr, "rank %d: combiner reports rank %d of %d, backend %s\n", rank, combiner.rank(),
                   combiner.ranks(), statexfer::to_string(combiner.backend()));
      ++failures;
    }
    auto h = Kokkos::create_mirror_view(commands.errors);
    for (std::int64_t i = 0; i < cap; ++i) h(i) = rank < 3 ? code_of(rank, static_cast<int>(i % combos)) : 0;
    Kokkos::deep_copy(commands.errors, h);
    combiner.combine(exec);
    exec.fence();
    Kokkos::deep_copy(h, commands.errors);
    for (std::int64_t i = 0; i < cap; ++i) {
      std::int32_t want = 0;
      for (int r = 0; r < ranks; ++r)
        want = statexfer::combine_error_codes(want, r < 3 ? code_of(r, static_cast<int>(i % combos)) : 0);
      if (h(i) != want) {
        if (failures < 10)
          std::fprintf(stderr, "rank %d, %s, capacity %lld, command %lld: combined %d, want %d\n", rank, Exec::name(),
                       static_cast<long long>(cap), static_cast<long long>(i), h(i), want);
        ++failures;
      }
    }
  }
  return failures;
}

}  // namespace

int main(int argc, char* argv[]) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  Kokkos::initialize(argc, argv);
  int failures = 0;
  {
#ifdef KOKKOS_ENABLE_SERIAL
    failures += check<Kokkos::Serial>(MPI_COMM_WORLD, rank, ranks);
#endif
#ifdef KOKKOS_ENABLE_OPENMP
    failures += check<Kokkos::OpenMP>(MPI_COMM_WORLD, rank, ranks);
#endif
#ifdef KOKKOS_ENABLE_CUDA
    failures += check<Kokkos::Cuda>(MPI_COMM_WORLD, rank, ranks);
#endif
  }
  Kokkos::finalize();
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("statexfer-combine-check: %d ranks, %s\n", ranks, total == 0 ? "every combination right" : "FAILED");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
