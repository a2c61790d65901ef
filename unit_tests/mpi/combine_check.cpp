// statexfer::ErrorCombiner across MPI ranks: every rank writes its own codes,
// combine() must leave every rank with the code that comes first in the order
// of docs/CONTRACT.md §4: 5, 1, 2, 3, 4, 6 (0 only where all ranks have 0), on every backend.
//
//   mpirun -np 2 statexfer-combine-check        exit 0: every pair and triple right, moves too

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <statexfer/combine.hpp>

namespace {

// Rank `rank`'s code for command i: the digits of i in base 7, one per rank.
std::int32_t code_of(int rank, int i) {
  for (int r = 0; r < rank; ++r) i /= 7;
  return i % 7;
}

// A moved MPI combiner: the new owner combines across the ranks, the moved-from
// one reports no ranks and refuses combine() with std::logic_error, and the
// duplicated communicator is freed once (by the owner).
template <class Exec>
int check_moved(MPI_Comm comm, int rank, int ranks) {
  int failures = 0;
  auto commands = statexfer::StateCommands<Exec>::allocate(8);
  statexfer::ErrorCombiner<Exec> moved(commands, comm);
  statexfer::ErrorCombiner<Exec> owner(std::move(moved));
  Exec exec;
  owner.prepare(exec);
  // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is checked.
  if (owner.backend() != statexfer::CombineBackend::mpi || owner.ranks() != ranks || owner.rank() != rank ||
      moved.backend() != statexfer::CombineBackend::none || moved.ranks() != 0 || moved.capturable()) {
    std::fprintf(stderr, "rank %d, %s: moved combiner reports %s %d of %d, moved-from %s, %d ranks\n", rank,
                 Exec::name(), statexfer::to_string(owner.backend()), owner.rank(), owner.ranks(),
                 statexfer::to_string(moved.backend()), moved.ranks());
    ++failures;
  }
  bool refused = false;
  try {
    moved.combine(exec);
  } catch (const std::logic_error& e) {
    refused = std::string(e.what()).find("moved from") != std::string::npos;
  }
  // NOLINTEND(bugprone-use-after-move)
  if (!refused) {
    std::fprintf(stderr, "rank %d, %s: a moved-from combiner's combine() did not refuse\n", rank, Exec::name());
    ++failures;
  }
  // Rank 0 fails command 3 only: every rank must see 1 there, 0 elsewhere.
  auto h = Kokkos::create_mirror_view(commands.errors);
  for (std::int64_t i = 0; i < 8; ++i) h(i) = rank == 0 && i == 3 ? 1 : 0;
  Kokkos::deep_copy(commands.errors, h);
  owner.combine(exec);
  exec.fence();
  Kokkos::deep_copy(h, commands.errors);
  for (std::int64_t i = 0; i < 8; ++i)
    if (h(i) != (i == 3 ? 1 : 0)) {
      std::fprintf(stderr, "rank %d, %s: moved combiner, command %lld: %d\n", rank, Exec::name(),
                   static_cast<long long>(i), h(i));
      ++failures;
    }
  return failures;
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
  return failures + check_moved<Exec>(comm, rank, ranks);
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
#ifdef KOKKOS_ENABLE_HIP
    failures += check<Kokkos::HIP>(MPI_COMM_WORLD, rank, ranks);
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
