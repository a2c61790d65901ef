// statexfer::WireTransport over MPI between a prefill group of p ranks and a
// decode group of d ranks (p + d = the world's size), each with its own
// ErrorCombiner (MPI, over a communicator of its group), on every backend:
//  1. every prefill rank exports rows (a small model that splits at TP 1, 2,
//     3 and 6, with one group of B and C: replicated on every rank), the
//     transport moves them, every decode rank imports: every imported row is
//     test_common/reshard.hpp's oracle_shard of the whole row;
//  2. faults sent to one decode rank (a flipped payload byte to the last, a
//     record of another model's layout to the first) refuse those requests on
//     every decode rank (codes 10 and 8 after the decode group's combine):
//     the corrupted payload, landed before its checksum failed, is published
//     on none (§17's default landing), the other record written on none;
//  3. a partial batch moves only its live records (the wire bytes past them
//     keep what they held), and an empty one moves nothing;
//  4. the constructor names what it refuses; send() on a decode rank and a
//     count outside [0, C] are refused; a receive of more records than were
//     sent is an error that says so.
// Both numberings: prefill ranks first, then decode ranks first.
//
//   mpirun -np 4 statexfer-transport-check 1 3     exit 0 when all is right

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <vector>

#include <statexfer/statexfer.hpp>
#include <test_common/reshard.hpp>

namespace {

using statexfer::Command;
using statexfer::DType;
using statexfer::ModelLayout;
using statexfer::Split;

constexpr std::int64_t capacity = 8, rows = capacity + 2;

// 6 heads (TP 1, 2, 3, 6), one group of B and C (replicated on every rank: vLLM #55208's case), 6 KV heads.
ModelLayout model_of(std::int64_t heads = 6) {
  return ModelLayout({{"consumed_tokens", DType::int64, 1, {{"endpoint", 1, 8, Split::replicated}}},
                      {"prefix_key", DType::int64, 1, {{"key", 1, 8, Split::replicated}}},
                      {"ssm", DType::float32, 3, {{"heads", heads, 16, Split::units}}},
                      {"conv",
                       DType::bfloat16,
                       3,
                       {{"x", heads, 12, Split::units}, {"B", 1, 6, Split::units}, {"C", 1, 6, Split::units}}},
                      {"kv", DType::uint8, 4, {{"kv_heads", 6, 8, Split::units}}}},
                     2);
}

struct Wholes {
  std::vector<std::vector<std::uint8_t>> rows;
  std::vector<std::int64_t> endpoints, keys;
};

// The same on every rank: a seed.
Wholes make_wholes(const ModelLayout& model, int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Wholes w;
  const statexfer::StateLayout whole = model.whole();
  for (int k = 0; k < n; ++k) {
    std::vector<std::uint8_t> row(static_cast<std::size_t>(whole.row_bytes()));
    for (auto& b : row) b = static_cast<std::uint8_t>(rng());
    const std::int64_t endpoint = 11 + 3 * k + static_cast<std::int64_t>(seed), key = 0x7a000 + k;
    std::memcpy(row.data() + whole.region("consumed_tokens").offset, &endpoint, 8);
    std::memcpy(row.data() + whole.region("prefix_key").offset, &key, 8);
    w.rows.push_back(std::move(row));
    w.endpoints.push_back(endpoint);
    w.keys.push_back(key);
  }
  return w;
}

template <class View>
std::vector<std::uint8_t> download(const View& v) {
  std::vector<std::uint8_t> h(v.span() * sizeof(typename View::value_type));
  if (h.empty()) return h;
  Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> hv(h.data(), h.size());
  Kokkos::View<const std::uint8_t*, typename View::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dv(
      reinterpret_cast<const std::uint8_t*>(v.data()), h.size());
  Kokkos::deep_copy(hv, dv);
  return h;
}
template <class View>
void upload(const View& v, const std::vector<std::uint8_t>& h) {
  if (h.empty()) return;
  Kokkos::View<const std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> hv(h.data(), h.size());
  Kokkos::View<std::uint8_t*, typename View::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dv(
      reinterpret_cast<std::uint8_t*>(v.data()), h.size());
  Kokkos::deep_copy(dv, hv);
}
template <class View>
std::vector<std::int32_t> codes_of(const View& errors) {
  const auto bytes = download(errors);
  std::vector<std::int32_t> c(bytes.size() / 4);
  std::memcpy(c.data(), bytes.data(), bytes.size());
  return c;
}

// Whether `f()` throws exactly `Expected` whose message holds every word.
template <class Expected, class F>
bool throws_naming(F&& f, std::initializer_list<const char*> words, std::string& what) {
  try {
    f();
  } catch (const std::exception& e) {
    what = e.what();
    if (typeid(e) != typeid(Expected)) return false;
    for (const char* w : words)
      if (what.find(w) == std::string::npos) return false;
    return true;
  }
  what = "did not throw";
  return false;
}

struct Report {
  int rank;
  const char* backend;
  const char* numbering;
  int failures = 0;
  void fail(const std::string& what) {
    if (failures++ < 20) std::fprintf(stderr, "rank %d, %s, %s: %s\n", rank, backend, numbering, what.c_str());
  }
};

template <class Exec>
int check(int p, int d, bool decode_first) {
  int me = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Report report{me, Exec::name(), decode_first ? "decode ranks first" : "prefill ranks first"};
  const ModelLayout model = model_of();
  std::vector<int> prefill_ranks, decode_ranks;
  for (int r = 0; r < p + d; ++r) {
    const bool prefill = decode_first ? r >= d : r < p;
    (prefill ? prefill_ranks : decode_ranks).push_back(r);
  }
  const bool prefill = decode_first ? me >= d : me < p;
  const int local = prefill ? me - (decode_first ? d : 0) : me - (decode_first ? 0 : p);
  // The group's communicator for its error combiner: world order is group order.
  MPI_Comm group_comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, prefill ? 0 : 1, me, &group_comm);

  const statexfer::GroupRank self = prefill ? statexfer::GroupRank{p, local} : statexfer::GroupRank{d, local};
  const Exec exec;
  statexfer::StatePool<Exec> pool(model.local(self.size, self.rank), rows, 1);
  auto commands = statexfer::StateCommands<Exec>::allocate(capacity);
  std::vector<statexfer::WireBuffer<Exec>> wires;
  std::vector<std::int64_t> peer_bytes;  // record bytes per peer
  for (int k = 0; k < (prefill ? d : p); ++k) {
    const std::int64_t rb = prefill ? statexfer::record_bytes(model, {p, local}, {d, k})
                                    : statexfer::record_bytes(model, {p, k}, {d, local});
    peer_bytes.push_back(rb);
    wires.push_back(rb > 0 ? statexfer::WireBuffer<Exec>("transport_check::wire", rb * capacity)
                           : statexfer::WireBuffer<Exec>());
  }
  std::unique_ptr<statexfer::PreparedExport<Exec>> exporter;
  std::unique_ptr<statexfer::PreparedImport<Exec>> importer;
  if (prefill)
    exporter = std::make_unique<statexfer::PreparedExport<Exec>>(pool, commands, model, self, d, wires);
  else
    importer = std::make_unique<statexfer::PreparedImport<Exec>>(pool, commands, model, p, self, wires);
  statexfer::ErrorCombiner<Exec> combiner(commands, group_comm);
  statexfer::WireTransport<Exec> transport(model, capacity, MPI_COMM_WORLD, prefill_ranks, decode_ranks, wires);
  if (prefill)
    exporter->prepare(exec);
  else
    importer->prepare(exec);
  combiner.prepare(exec);
  transport.prepare(exec);

  // What it says of itself.
  std::int64_t want_bytes = 0;
  for (const std::int64_t rb : peer_bytes) want_bytes += 3 * rb;
  const auto want_path = std::is_same_v<typename Exec::memory_space, Kokkos::HostSpace>
                             ? statexfer::TransportPath::host_memory
                             : transport.path();  // device wires: staged or direct, as detected
  if (transport.backend() != statexfer::TransportBackend::mpi || transport.path() != want_path ||
      transport.capturable() ||
      transport.role() != (prefill ? statexfer::TransportRole::prefill : statexfer::TransportRole::decode) ||
      transport.group_rank().size != self.size || transport.group_rank().rank != self.rank ||
      transport.source_tp() != p || transport.destination_tp() != d || transport.capacity() != capacity ||
      transport.bytes(3) != want_bytes)
    report.fail(std::string("the transport reports ") + statexfer::to_string(transport.backend()) + ", " +
                statexfer::to_string(transport.path()) + ", " + statexfer::to_string(transport.role()) + " rank " +
                std::to_string(transport.group_rank().rank) + " of " + std::to_string(transport.group_rank().size) +
                ", " + std::to_string(transport.bytes(3)) + " bytes for 3 records (want " + std::to_string(want_bytes) +
                ")");
  if (me == 0 && !decode_first)
    std::printf("statexfer-transport-check: %s, p %d, d %d, path %s\n", Exec::name(), p, d,
                statexfer::to_string(transport.path()));

  const std::int64_t header = statexfer::record_header_bytes(model);
  // One batch of `count` commands: export, (patch,) send; or receive, import, check.
  const auto batch = [&](const Wholes& w, int count, const std::vector<std::int32_t>& want_codes, bool faults,
                         const char* what) {
    statexfer::CommandBatch<Exec> b(capacity);
    for (int k = 0; k < count; ++k)
      b.set(k, prefill ? Command::export_row(k + 1, k, w.endpoints[static_cast<std::size_t>(k)],
                                             w.keys[static_cast<std::size_t>(k)])
                       : Command::import_row(k, k + 1, w.endpoints[static_cast<std::size_t>(k)],
                                             w.keys[static_cast<std::size_t>(k)]));
    b.set_num_ops(count);
    if (prefill) {
      auto image = download(pool.backing());
      for (int k = 0; k < count; ++k) {
        const auto shard =
            statexfer::test::oracle_shard(model.regions(), w.rows[static_cast<std::size_t>(k)], p, local);
        std::memcpy(image.data() + (k + 1) * pool.row_bytes(), shard.data(), shard.size());
      }
      upload(pool.backing(), image);
      commands.upload(exec, b);
      exporter->validate(exec);
      combiner.combine(exec);
      exporter->apply(exec);
      exec.fence();
      const auto codes = codes_of(commands.errors);
      for (int k = 0; k < count; ++k)
        if (codes[static_cast<std::size_t>(k)] != 0)
          report.fail(std::string(what) + ": export code " + std::to_string(codes[static_cast<std::size_t>(k)]) +
                      " for command " + std::to_string(k));
      if (faults) {
        // The lowest prefill rank that sends decode rank j something patches slot `slot` of its record to j.
        const auto patch = [&](int j, std::int64_t slot, std::int64_t offset) {
          int sender = 0;
          while (statexfer::record_bytes(model, {p, sender}, {d, j}) == 0) ++sender;
          if (sender != local) return;
          auto bytes = download(wires[static_cast<std::size_t>(j)]);
          bytes[static_cast<std::size_t>(slot * peer_bytes[static_cast<std::size_t>(j)] + offset)] ^= 0x20;
          upload(wires[static_cast<std::size_t>(j)], bytes);
        };
        patch(d - 1, 1, header + 3);  // a payload byte flipped in flight: code 10
        patch(0, 3, 8);               // the fingerprint of another model's layout: code 8
      }
      transport.send(exec, count);
      return;
    }
    Kokkos::deep_copy(pool.backing(), 0);
    // Past the live records the wires keep their bytes: marked before, compared after.
    std::vector<std::vector<std::uint8_t>> before;
    for (std::size_t k = 0; k < wires.size(); ++k) {
      auto bytes = download(wires[k]);
      for (std::size_t at = static_cast<std::size_t>(count * peer_bytes[k]); at < bytes.size(); ++at)
        bytes[at] = static_cast<std::uint8_t>(0xA5 ^ at);
      upload(wires[k], bytes);
      before.push_back(bytes);
    }
    transport.receive(exec, count);
    commands.upload(exec, b);
    importer->validate(exec);
    combiner.combine(exec);
    importer->apply(exec);
    exec.fence();
    for (std::size_t k = 0; k < wires.size(); ++k) {
      const auto after = download(wires[k]);
      for (std::size_t at = static_cast<std::size_t>(count * peer_bytes[k]); at < after.size(); ++at)
        if (after[at] != before[k][at]) {
          report.fail(std::string(what) + ": byte " + std::to_string(at) + " of the wire from prefill rank " +
                      std::to_string(k) + ", past the live records, changed");
          break;
        }
    }
    const auto codes = codes_of(commands.errors);
    auto want = want_codes;
    want.resize(static_cast<std::size_t>(capacity), 0);
    if (codes != want) {
      std::string got;
      for (const auto c : codes) got += std::to_string(c) + " ";
      report.fail(std::string(what) + ": import codes " + got);
    }
    const auto image = download(pool.backing());
    const std::int64_t rb = pool.row_bytes();
    const std::int64_t endpoint_at = model.local(d, local).region("consumed_tokens").offset;
    for (int k = 0; k < static_cast<int>(capacity); ++k) {
      // A refused request lands (§17's default) where its records pass every check but the checksums: the
      // damaged payload (10) on every decode rank, the other model's record (8, sent to decode rank 0) on the
      // other ranks; landed, it must be published on none, its endpoint -1.
      const std::int32_t code = k < count ? want[static_cast<std::size_t>(k)] : 0;
      if (code == 10 || (code == 8 && local != 0)) {
        std::int64_t endpoint = 0;
        std::memcpy(&endpoint, image.data() + (k + 1) * rb + endpoint_at, 8);
        if (endpoint != -1) report.fail(std::string(what) + ": row " + std::to_string(k + 1) + " was published");
        continue;
      }
      const bool written = k < count && want[static_cast<std::size_t>(k)] == 0;
      const auto want_row =
          written ? statexfer::test::oracle_shard(model.regions(), w.rows[static_cast<std::size_t>(k)], d, local)
                  : std::vector<std::uint8_t>(static_cast<std::size_t>(rb), 0);
      if (std::memcmp(image.data() + (k + 1) * rb, want_row.data(), want_row.size()) != 0)
        report.fail(std::string(what) + ": row " + std::to_string(k + 1) +
                    (written ? " is not the oracle's shard" : " was written"));
    }
  };

  batch(make_wholes(model, 5, 1), 5, {0, 0, 0, 0, 0}, false, "whole batch");
  batch(make_wholes(model, 5, 2), 5, {0, 10, 0, 8, 0}, true, "faults");
  batch(make_wholes(model, 3, 3), 3, {0, 0, 0}, false, "partial batch");
  batch(make_wholes(model, 0, 4), 0, {}, false, "empty batch");

  // Refusals: local checks before any collective, so each rank tries them alone.
  std::string what;
  const auto refused = [&](bool ok, const char* name) {
    if (!ok) report.fail(std::string(name) + ": " + what);
  };
  refused(throws_naming<std::invalid_argument>(
              [&] { statexfer::WireTransport<Exec>(model, 0, MPI_COMM_WORLD, prefill_ranks, decode_ranks, wires); },
              {"WireTransport", "capacity"}, what),
          "capacity 0");
  auto outside = prefill_ranks;
  outside.push_back(size);
  refused(throws_naming<std::invalid_argument>(
              [&] { statexfer::WireTransport<Exec>(model, capacity, MPI_COMM_WORLD, outside, decode_ranks, wires); },
              {"prefill_ranks holds rank", std::to_string(size).c_str()}, what),
          "a rank outside comm");
  auto both = decode_ranks;
  both.push_back(prefill_ranks[0]);
  refused(throws_naming<std::invalid_argument>(
              [&] { statexfer::WireTransport<Exec>(model, capacity, MPI_COMM_WORLD, prefill_ranks, both, wires); },
              {"listed twice"}, what),
          "a rank in both lists");
  refused(throws_naming<std::invalid_argument>(
              [&] { statexfer::WireTransport<Exec>(model, capacity, MPI_COMM_WORLD, prefill_ranks, decode_ranks, {}); },
              {"wires must hold one buffer per"}, what),
          "no wires");
  auto small = wires;
  for (std::size_t k = 0; k < small.size(); ++k)
    if (peer_bytes[k] > 0) {
      small[k] = statexfer::WireBuffer<Exec>("transport_check::small", peer_bytes[k] * capacity - 1);
      refused(throws_naming<std::invalid_argument>(
                  [&] {
                    statexfer::WireTransport<Exec>(model, capacity, MPI_COMM_WORLD, prefill_ranks, decode_ranks, small);
                  },
                  {("wires[" + std::to_string(k) + "]").c_str(), "capacity x record_bytes"}, what),
              "a wire too small");
      break;
    }
  if (p == 3 || d == 3)
    refused(throws_naming<std::invalid_argument>(
                [&] {
                  statexfer::WireTransport<Exec>(model_of(4), capacity, MPI_COMM_WORLD, prefill_ranks, decode_ranks,
                                                 wires);
                },
                {p == 3 ? "prefill_ranks: a group of 3" : "decode_ranks: a group of 3", "does not split"}, what),
            "a group that does not split the model");
  if (me >= 2)
    refused(throws_naming<std::invalid_argument>(
                [&] { statexfer::WireTransport<Exec>(model, capacity, MPI_COMM_WORLD, {0}, {1}, wires); },
                {"neither prefill_ranks nor decode_ranks"}, what),
            "a process in neither group");
  if (prefill)
    refused(throws_naming<std::logic_error>([&] { transport.receive(exec, 1); }, {"prefill rank"}, what),
            "receive() on a prefill rank");
  else
    refused(throws_naming<std::logic_error>([&] { transport.send(exec, 1); }, {"decode rank"}, what),
            "send() on a decode rank");
  refused(throws_naming<std::invalid_argument>(
              [&] {
                if (prefill)
                  transport.send(exec, capacity + 1);
                else
                  transport.receive(exec, -1);
              },
              {"count", "is not in [0, 8]"}, what),
          "a count outside [0, C]");
  // Each side passes the batch's count: a decode rank that posts more records
  // than were sent is told so (every message is still matched and consumed).
  if (prefill)
    transport.send(exec, 1);
  else
    refused(throws_naming<std::runtime_error>([&] { transport.receive(exec, 2); },
                                              {"receive(2)", "another count of records"}, what),
            "a receive of more records than were sent");
  MPI_Comm_free(&group_comm);
  return report.failures;
}

}  // namespace

int main(int argc, char* argv[]) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int p = argc > 1 ? std::atoi(argv[1]) : 1;
  const int d = argc > 2 ? std::atoi(argv[2]) : ranks - p;
  if (p < 1 || d < 1 || p + d != ranks) {
    if (rank == 0) std::fprintf(stderr, "usage: mpirun -np P+D statexfer-transport-check P D (got %d ranks)\n", ranks);
    MPI_Finalize();
    return 2;
  }
  Kokkos::initialize(argc, argv);
  int failures = 0;
  {
    for (const bool decode_first : {false, true}) {
#ifdef KOKKOS_ENABLE_SERIAL
      failures += check<Kokkos::Serial>(p, d, decode_first);
#endif
#ifdef KOKKOS_ENABLE_OPENMP
      failures += check<Kokkos::OpenMP>(p, d, decode_first);
#endif
#ifdef KOKKOS_ENABLE_CUDA
      failures += check<Kokkos::Cuda>(p, d, decode_first);
#endif
#ifdef KOKKOS_ENABLE_HIP
      failures += check<Kokkos::HIP>(p, d, decode_first);
#endif
    }
  }
  Kokkos::finalize();
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("statexfer-transport-check: prefill %d, decode %d ranks: %s\n", p, d,
                total == 0 ? "every row the oracle's, every fault refused on every decode rank" : "FAILED");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
