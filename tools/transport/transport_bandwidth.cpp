// statexfer-transport-bandwidth: a model's rows moved from a prefill rank to a
// decode rank by the MPI wire transport, and beside it, in the same run, a
// plain MPI_Send/MPI_Recv of the same bytes between the same buffers (host
// wires; host memory of the same size for device wires);
// prints both, their ratio (issue 31's host target: the transport at >= 90%
// of the plain send) and the whole step (export + send, receive + import).
// The first move is verified: codes 0 and every imported row the oracle's.
//
//   mpirun -np 2 statexfer-transport-bandwidth [model] [records] [repetitions]
//
// Defaults: qwen3.5-9b, 1 record, 20 repetitions. Times are the decode
// rank's, from a barrier to the last byte received (and, for the whole step,
// unpacked); the two moves alternate which goes first.

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <statexfer/statexfer.hpp>
#include <test_common/models.hpp>
#include <test_common/reshard.hpp>
#include <tools/common/openmp_defaults.hpp>

namespace {

using Exec = Kokkos::DefaultExecutionSpace;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

template <class View>
void copy_bytes(const View& to, const std::vector<std::uint8_t>& from, std::int64_t offset) {
  Kokkos::View<const std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(from.data(),
                                                                                                  from.size());
  Kokkos::View<std::uint8_t*, typename View::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> d(
      to.data() + offset, from.size());
  Kokkos::deep_copy(d, h);
}
template <class View>
std::vector<std::uint8_t> bytes_of(const View& from, std::int64_t offset, std::int64_t n) {
  std::vector<std::uint8_t> out(static_cast<std::size_t>(n));
  Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(out.data(), out.size());
  Kokkos::View<const std::uint8_t*, typename View::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> d(
      from.data() + offset, out.size());
  Kokkos::deep_copy(h, d);
  return out;
}

int run(int rank, const std::string& name, int records, int repetitions) {
  const statexfer::models::HybridModel& hybrid = statexfer::models::find(name);
  const statexfer::ModelLayout model(statexfer::models::model_regions(hybrid, 16, true), 16);
  std::int64_t capacity = 1;
  while (capacity < records) capacity *= 2;
  const bool prefill = rank == 0;
  const statexfer::StateLayout layout = model.whole();
  const std::int64_t rb = statexfer::record_bytes(model, {1, 0}, {1, 0}), bytes = rb * records;

  // The rows: random bytes, an endpoint and a key; the same on both ranks.
  std::vector<std::vector<std::uint8_t>> wholes;
  std::mt19937_64 rng(31);
  for (int k = 0; k < records; ++k) {
    std::vector<std::uint8_t> row(static_cast<std::size_t>(layout.row_bytes()));
    for (std::size_t b = 0; b + 8 <= row.size(); b += 8) {
      const std::uint64_t x = rng();
      std::memcpy(row.data() + b, &x, 8);
    }
    const std::int64_t endpoint = 4096 + k, key = 0x31000 + k;
    std::memcpy(row.data() + layout.region("consumed_tokens").offset, &endpoint, 8);
    std::memcpy(row.data() + layout.region("prefix_key").offset, &key, 8);
    wholes.push_back(std::move(row));
  }

  const Exec exec;
  statexfer::StatePool<Exec> pool(layout, capacity + 1, 1);
  auto commands = statexfer::StateCommands<Exec>::allocate(capacity);
  std::vector<statexfer::WireBuffer<Exec>> wires{
      statexfer::WireBuffer<Exec>("transport_bandwidth::wire", rb * capacity)};
  std::unique_ptr<statexfer::PreparedExport<Exec>> exporter;
  std::unique_ptr<statexfer::PreparedImport<Exec>> importer;
  statexfer::CommandBatch<Exec> batch(capacity);
  for (int k = 0; k < records; ++k) {
    std::int64_t endpoint, key;
    std::memcpy(&endpoint, wholes[static_cast<std::size_t>(k)].data() + layout.region("consumed_tokens").offset, 8);
    std::memcpy(&key, wholes[static_cast<std::size_t>(k)].data() + layout.region("prefix_key").offset, 8);
    batch.push_back(prefill ? statexfer::Command::export_row(k + 1, k, endpoint, key)
                            : statexfer::Command::import_row(k, k + 1, endpoint, key));
  }
  if (prefill) {
    for (int k = 0; k < records; ++k)
      copy_bytes(pool.backing(),
                 statexfer::test::oracle_shard(model.regions(), wholes[static_cast<std::size_t>(k)], 1, 0),
                 (k + 1) * layout.row_bytes());
    exporter =
        std::make_unique<statexfer::PreparedExport<Exec>>(pool, commands, model, statexfer::GroupRank{1, 0}, 1, wires);
    exporter->prepare(exec);
  } else {
    importer =
        std::make_unique<statexfer::PreparedImport<Exec>>(pool, commands, model, 1, statexfer::GroupRank{1, 0}, wires);
    importer->prepare(exec);
  }
  statexfer::WireTransport<Exec> transport(model, capacity, MPI_COMM_WORLD, {0}, {1}, wires);
  transport.prepare(exec);
  commands.upload(exec, batch);
  exec.fence();

  // One step: export + send, or receive + import.
  const auto step = [&] {
    if (prefill) {
      exporter->validate(exec);
      exporter->apply(exec);
      transport.send(exec, records);
    } else {
      transport.receive(exec, records);
      importer->validate(exec);
      importer->apply(exec);
      exec.fence();
    }
  };
  step();
  int failures = 0;
  if (!prefill) {
    const auto errors = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), commands.errors);
    for (int k = 0; k < records; ++k) {
      const std::int32_t code = errors(k);
      const auto row = bytes_of(pool.backing(), (k + 1) * layout.row_bytes(), layout.row_bytes());
      if (code != 0 ||
          row != statexfer::test::oracle_shard(model.regions(), wholes[static_cast<std::size_t>(k)], 1, 0)) {
        std::fprintf(stderr, "statexfer-transport-bandwidth: record %d: code %d, row %s\n", k, code,
                     code == 0 ? "not the oracle's" : "refused");
        ++failures;
      }
    }
  }

  // The plain send moves the same bytes between the same buffers: the wires
  // themselves where they are host memory (a buffer allocated apart, even as a
  // View, read up to 15% faster or slower here, its pages placed otherwise),
  // else host memory of the same size.
  const Kokkos::View<std::uint8_t*, Kokkos::HostSpace> host_plain(
      "transport_bandwidth::plain", std::is_same_v<Exec::memory_space, Kokkos::HostSpace> ? 0 : bytes);
  std::uint8_t* const plain = host_plain.size() > 0 ? host_plain.data() : wires[0].data();
  std::vector<double> moved, sent, steps;
  for (int rep = 0; rep < repetitions; ++rep)
    for (int turn = 0; turn < 2; ++turn) {
      const bool transport_turn = (turn == 0) == (rep % 2 == 0);
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      if (transport_turn) {
        if (prefill)
          transport.send(exec, records);
        else
          transport.receive(exec, records);
        exec.fence();
        moved.push_back(MPI_Wtime() - t0);
      } else {
        // At most 1 GiB a message, as the transport sends.
        for (std::int64_t at = 0; at < bytes; at += std::int64_t(1) << 30) {
          const int n = static_cast<int>(std::min<std::int64_t>(std::int64_t(1) << 30, bytes - at));
          if (prefill)
            MPI_Send(plain + at, n, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
          else
            MPI_Recv(plain + at, n, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        sent.push_back(MPI_Wtime() - t0);
      }
    }
  for (int rep = 0; rep < repetitions; ++rep) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    step();
    steps.push_back(MPI_Wtime() - t0);
  }

  if (!prefill) {
    const double gb = static_cast<double>(bytes) / 1e9;
    const double tm = median(moved), ts = median(sent);
    std::printf("statexfer-transport-bandwidth: %s, %d record(s) of %.2f MiB (%lld bytes), %s path, %d repetitions\n",
                name.c_str(), records, static_cast<double>(rb) / 1048576.0, static_cast<long long>(bytes),
                statexfer::to_string(transport.path()), repetitions);
    std::printf("  plain MPI_Send/MPI_Recv      median %8.3f ms  %6.2f GB/s  (best %.3f ms)\n", ts * 1e3, gb / ts,
                *std::min_element(sent.begin(), sent.end()) * 1e3);
    std::printf("  WireTransport send/receive   median %8.3f ms  %6.2f GB/s  (best %.3f ms)\n", tm * 1e3, gb / tm,
                *std::min_element(moved.begin(), moved.end()) * 1e3);
    std::printf("  transport / plain bandwidth  %.1f%% (medians; target >= 90%%)\n", 100.0 * ts / tm);
    std::printf("  whole step: export + send | receive + import, median %.3f ms\n", median(steps) * 1e3);
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
  const std::string name = argc > 1 ? argv[1] : "qwen3.5-9b";
  const int records = argc > 2 ? std::atoi(argv[2]) : 1;
  const int repetitions = argc > 3 ? std::atoi(argv[3]) : 20;
  if (ranks != 2 || records < 1 || repetitions < 1) {
    if (rank == 0)
      std::fprintf(stderr,
                   "usage: mpirun -np 2 statexfer-transport-bandwidth [model] [records >= 1] [repetitions >= 1]\n");
    MPI_Finalize();
    return 2;
  }
  statexfer::tools::state_openmp_binding();
  Kokkos::initialize(argc, argv);
  int failures = 0;
  try {
    failures = run(rank, name, records, repetitions);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "statexfer-transport-bandwidth: rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Kokkos::finalize();
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
