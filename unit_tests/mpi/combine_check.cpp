// statexfer::ErrorCombiner across MPI ranks: every rank writes its own codes,
// combine() must leave every rank with the code that comes first in the order
// of docs/CONTRACT.md §4: 5, 1, 2, 3, 4, 6 (0 only where all ranks have 0), on every backend.
// Commits (§13): ranks whose accepted counts differ refuse the commit on every
// rank (code 3), through a whole transfer: validate, combine, apply.
//
//   mpirun -np 2 statexfer-combine-check        exit 0: every pair and triple right, moves too

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <statexfer/combine.hpp>
#include <statexfer/transfer.hpp>

namespace {

// Rank `rank`'s code for command i: the digits of i in base 7, one per rank.
std::int32_t code_of(int rank, int i) {
  for (int r = 0; r < rank; ++r) i /= 12;
  return i % 12;  // codes 0..11
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
  // Capacity: all combinations of up to three ranks' codes (12^3 = 1728 -> 2048).
  int combos = 1;
  for (int r = 0; r < ranks && r < 3; ++r) combos *= 12;
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

// A transfer with commits (K = 2, remap and copy) on every rank: slot 0 and 2
// accept the same count everywhere, slot 1 a count that depends on the rank.
// After validate(), combine() and apply(): slot 1's commit has code 3 on every
// rank and wrote nothing; the others applied; commit_positions are each rank's.
template <class Exec>
int check_commits(MPI_Comm comm, int rank, int ranks) {
  using statexfer::DType;
  int failures = 0;
  for (const auto move : {statexfer::CommitMove::remap, statexfer::CommitMove::copy}) {
    const std::int64_t C = 4, rows = 1 + C + 2 * C + 2, row_bytes = 32;
    const statexfer::StateLayout layout({{"consumed_tokens", 0, 8, DType::int64}, {"kv", 8, 16, DType::uint8}},
                                        row_bytes);
    statexfer::StatePool<Exec> pool(layout, rows, 8);
    auto commands = statexfer::StateCommands<Exec>::allocate(C);
    statexfer::PageTable<Exec> tables("tables", C, 2);
    statexfer::StateRows<Exec> state_rows("state_rows", C, 8);
    Kokkos::View<std::int32_t*, typename Exec::memory_space> accepted("accepted", C);
    statexfer::TransferConfig<Exec> config;
    config.pages = {{"kv", typename statexfer::PageBinding<Exec>::cache_view("kv", 8, 16)}};
    config.page_tokens = 4;
    config.state_rows = state_rows;
    config.requests = statexfer::RequestState<Exec>::allocate(C);
    config.speculative.positions = 2;
    config.speculative.accepted = accepted;
    config.speculative.move = move;
    statexfer::PreparedStateTransfer<Exec> transfer(pool, commands, tables, config);
    statexfer::ErrorCombiner<Exec> combiner(commands, comm);
    Exec exec;
    transfer.prepare(exec);
    combiner.prepare(exec);
    // Slot s: live row 1 + s at endpoint 5, position j in row 1 + C + 2 s + j - 1 at 5 + j; row bytes = row number.
    auto backing = Kokkos::create_mirror_view(pool.backing());
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t b = 8; b < row_bytes; ++b) backing(r, b) = static_cast<std::uint8_t>(r);
    auto put = [&](std::int64_t r, std::int64_t v) { std::memcpy(&backing(r, 0), &v, sizeof(v)); };
    auto sr = Kokkos::create_mirror_view(state_rows);
    for (std::int64_t s = 0; s < C; ++s) {
      sr(s, 0) = 1 + s;
      put(1 + s, 5);
      for (std::int64_t j = 1; j <= 2; ++j) {
        sr(s, j) = 1 + C + 2 * s + j - 1;
        put(sr(s, j), 5 + j);
      }
    }
    Kokkos::deep_copy(pool.backing(), backing);
    Kokkos::deep_copy(state_rows, sr);
    const std::vector<std::int32_t> counts = {1, rank % 3, 2, 0};
    auto acc = Kokkos::create_mirror_view(accepted);
    for (std::int64_t s = 0; s < C; ++s) acc(s) = counts[static_cast<std::size_t>(s)];
    Kokkos::deep_copy(accepted, acc);
    auto op = Kokkos::create_mirror_view(commands.operation);
    auto slot = Kokkos::create_mirror_view(commands.request_slots);
    auto end = Kokkos::create_mirror_view(commands.expected_consumed);
    for (std::int64_t i = 0; i < 3; ++i) op(i) = statexfer::op_commit, slot(i) = i, end(i) = 5;
    Kokkos::deep_copy(commands.operation, op);
    Kokkos::deep_copy(commands.request_slots, slot);
    Kokkos::deep_copy(commands.expected_consumed, end);
    Kokkos::deep_copy(commands.num_ops, 3);
    transfer.validate(exec);
    combiner.combine(exec);
    transfer.apply(exec);
    exec.fence();
    auto errors = Kokkos::create_mirror_view(commands.errors);
    auto positions = Kokkos::create_mirror_view(commands.commit_positions);
    Kokkos::deep_copy(errors, commands.errors);
    Kokkos::deep_copy(positions, commands.commit_positions);
    Kokkos::deep_copy(backing, pool.backing());
    Kokkos::deep_copy(sr, state_rows);
    const bool disagree = ranks > 1;
    const std::vector<std::int32_t> want = {0, disagree ? 3 : 0, 0, 0};
    for (std::int64_t i = 0; i < C; ++i) {
      const std::int32_t pos = i < 3 ? counts[static_cast<std::size_t>(i)] : -1;
      if (errors(i) != want[static_cast<std::size_t>(i)] || positions(i) != pos) {
        std::fprintf(stderr, "rank %d, %s, %s commit %lld: code %d (want %d), position %d (want %d)\n", rank,
                     Exec::name(), statexfer::to_string(move), static_cast<long long>(i), errors(i),
                     want[static_cast<std::size_t>(i)], positions(i), pos);
        ++failures;
      }
    }
    // What each slot's live row holds now: the state of its committed position, or (slot 1 refused) its own.
    for (std::int64_t s = 0; s < 3; ++s) {
      const std::int32_t a = s == 1 && disagree ? 0 : counts[static_cast<std::size_t>(s)];
      const std::int64_t source = a == 0 ? 1 + s : 1 + C + 2 * s + a - 1;
      const std::int64_t live = sr(s, 0);
      const bool remapped = move == statexfer::CommitMove::remap;
      if (live != (remapped ? source : 1 + s) || backing(live, 8) != source) {
        std::fprintf(stderr, "rank %d, %s, %s slot %lld: live row %lld holds row %d's bytes, want row %lld\n", rank,
                     Exec::name(), statexfer::to_string(move), static_cast<long long>(s), static_cast<long long>(live),
                     backing(live, 8), static_cast<long long>(source));
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
    failures += check_commits<Kokkos::Serial>(MPI_COMM_WORLD, rank, ranks);
#endif
#ifdef KOKKOS_ENABLE_OPENMP
    failures += check<Kokkos::OpenMP>(MPI_COMM_WORLD, rank, ranks);
    failures += check_commits<Kokkos::OpenMP>(MPI_COMM_WORLD, rank, ranks);
#endif
#ifdef KOKKOS_ENABLE_THREADS
    failures += check<Kokkos::Threads>(MPI_COMM_WORLD, rank, ranks);
    failures += check_commits<Kokkos::Threads>(MPI_COMM_WORLD, rank, ranks);
#endif
#ifdef KOKKOS_ENABLE_CUDA
    failures += check<Kokkos::Cuda>(MPI_COMM_WORLD, rank, ranks);
    failures += check_commits<Kokkos::Cuda>(MPI_COMM_WORLD, rank, ranks);
#endif
#ifdef KOKKOS_ENABLE_HIP
    failures += check<Kokkos::HIP>(MPI_COMM_WORLD, rank, ranks);
    failures += check_commits<Kokkos::HIP>(MPI_COMM_WORLD, rank, ranks);
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
