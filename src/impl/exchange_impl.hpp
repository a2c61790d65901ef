#ifndef STATEXFER_IMPL_EXCHANGE_IMPL_HPP
#define STATEXFER_IMPL_EXCHANGE_IMPL_HPP

// PreparedExport's and PreparedImport's definitions; included by one
// translation unit per execution space (explicit instantiation).

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <statexfer/exchange.hpp>

#include "apply_kernel.hpp"
#include "argument_checks.hpp"
#include "exchange_kernels.hpp"
#include "import_landing.hpp"

namespace statexfer::impl {

/// What both sides hold: the Views their kernels read, the tables, the launch shapes.
template <class ExecutionSpace>
struct ExchangeData {
  using memory_space = typename ExecutionSpace::memory_space;
  static constexpr bool host = std::is_same_v<memory_space, Kokkos::HostSpace>;

  StatePool<ExecutionSpace> pool;
  StateCommands<ExecutionSpace> commands;
  std::vector<WireBuffer<ExecutionSpace>> wires;
  ExchangeViews<memory_space> views;
  Kokkos::View<std::int32_t*, memory_space> row_users, slot_users;  // import
  int move_league = 1, sum_league = 1, team = 1, decide_team = 1, check_team = 1, check_lanes = 1;
  bool ring = false;  // the applies' chunks through a ChunkRing (exchange_ring.hpp): the device code has bulk copies
  bool prepared = false;

  /// Checks and sets up everything but the peers (`what`: "PreparedExport" or "PreparedImport").
  ExchangeData(const char* what, const StatePool<ExecutionSpace>& p, const StateCommands<ExecutionSpace>& c,
               const ModelLayout& model, GroupRank local)
      : pool(p), commands(c) {
    const auto refuse = [&](const std::string& why) {
      throw std::invalid_argument(std::string("statexfer::") + what + ": " + why);
    };
    const std::int64_t cap = c.capacity();
    if (!is_valid_extended_capacity(cap))
      refuse("command capacity must be a power of two through " + std::to_string(max_extended_capacity) + ", got " +
             std::to_string(cap));
    StateLayout want;
    try {
      want = model.local(local.size, local.rank);
    } catch (const std::invalid_argument& e) {
      refuse(std::string("the model does not split as asked: ") + e.what());
    }
    const StateLayout& have = p.layout();
    bool same = have.row_bytes() == want.row_bytes() && have.regions().size() == want.regions().size();
    for (std::size_t r = 0; same && r < want.regions().size(); ++r) {
      const Region &a = have.regions()[r], &b = want.regions()[r];
      same = a.name == b.name && a.offset == b.offset && a.nbytes == b.nbytes;
    }
    if (!same)
      refuse("the pool's layout is not model.local(" + std::to_string(local.size) + ", " + std::to_string(local.rank) +
             ") (regions, offsets, sizes)");
    if (!have.contains("consumed_tokens") || have.region("consumed_tokens").nbytes != 8)
      refuse("the model has no consumed_tokens region of one int64");
    if (p.rows() < 2) refuse("the pool must have at least 2 rows, got " + std::to_string(p.rows()));
    const std::size_t n = static_cast<std::size_t>(cap);
    try {  // the transfer's checks, under this class's name
      check_memory(p.backing(), "pool backing");
      check_memory(p.memory_capacity(), "pool memory_capacity");
      check_vector(c.source_slots, n, "commands.source_slots", "int64");
      check_vector(c.destination_slots, n, "commands.destination_slots", "int64");
      check_vector(c.operation, n, "commands.operation", "int32");
      check_vector(c.expected_consumed, n, "commands.expected_consumed", "int64");
      check_vector(c.prefix_keys, n, "commands.prefix_keys", "int64");
      check_vector(c.num_ops, 1, "commands.num_ops", "int32");
      check_vector(c.errors, n, "commands.errors", "int32");
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what(), prefix = "statexfer::PreparedStateTransfer: ";
      refuse(message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message);
    }
    if (p.memory_capacity().extent(0) != 2) refuse("pool memory_capacity must be int64 [2]");
    if (views_overlap(c.errors, p.backing())) refuse("commands.errors overlaps the pool backing");

    auto& v = views;
    v.source_slots = c.source_slots;
    v.destination_slots = c.destination_slots;
    v.expected_consumed = c.expected_consumed;
    v.prefix_keys = c.prefix_keys;
    v.operation = c.operation;
    v.num_ops = c.num_ops;
    v.errors = c.errors;
    v.memory_capacity = p.memory_capacity();
    v.pool = p.backing().data();
    v.capacity = cap;
    v.rows = p.rows();
    v.row_bytes = have.row_bytes();
    v.consumed_offset = have.region("consumed_tokens").offset;
    v.key_offset = have.contains("prefix_key") ? have.region("prefix_key").offset : -1;
    v.fingerprint = model.fingerprint();
    v.segments = model.segment_count();
    v.plan = Kokkos::View<ExchangePlan*, memory_space>("statexfer::exchange_plan", n);
    v.moves = Kokkos::View<std::int32_t*, memory_space>("statexfer::exchange_list", move_rows + n);
    v.tickets = Kokkos::View<std::int64_t*, memory_space>("statexfer::exchange_tickets", 1);
    const ExecutionSpace exec;
    // Teams of 128 moving chunks on GPUs (chunk_bytes), a wave of as many as their launch bounds fit: the
    // export's and the import's applies (export_teams_per_sm), the import's sums; hosts a team of one a thread.
    team = host ? 1 : 128;
    decide_team = host ? 1 : 256;
    // The import's decision: a warp a command on GPUs, its lanes splitting the record's checks.
    check_team = host ? 1 : 16;
    check_lanes = host ? 1 : 32;
    const auto wave = [&](std::int64_t teams_per_sm) {
      return static_cast<int>(host ? exec.concurrency()
                                   : std::max<std::int64_t>(1, exec.concurrency() * teams_per_sm / 2048));
    };
    move_league = wave(export_teams_per_sm);
    if constexpr (!host) ring = device_has_bulk_copy(exec);
    sum_league = wave(import_sum_teams_per_sm);
  }

  /// Bytes of a payload chunk, a team's unit of work: hosts 64 KiB; GPUs 16 KiB where a chunk is stored and
  /// summed at once (the export, a landing import: export_words_in_flight 16-byte words a thread of 128),
  /// 32 KiB where it is only summed (an import checking before it writes: import_words_in_flight words).
  static std::int64_t chunk_bytes(bool sums_only) {
    return host ? 64 * 1024 : 128 * 16 * (sums_only ? import_words_in_flight : export_words_in_flight);
  }

  /// Peer tables into device Views (chunks of every peer, concatenated).
  void set_peers(const std::vector<PeerEntry>& peers, const std::vector<RecordSlice>& slices,
                 const std::vector<ExchangeChunk>& chunks) {
    const auto upload = [](auto& view, const auto& host_vector, const char* label) {
      using T = typename std::decay_t<decltype(host_vector)>::value_type;
      Kokkos::View<T*, memory_space> d(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)),
                                       host_vector.size());
      Kokkos::deep_copy(d, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                               host_vector.data(), host_vector.size()));
      view = d;
    };
    upload(views.peers, peers, "statexfer::exchange_peers");
    upload(views.slices, slices, "statexfer::exchange_slices");
    upload(views.chunks, chunks, "statexfer::exchange_chunks");
    views.peer_count = static_cast<std::int32_t>(peers.size());
    views.sums = Kokkos::View<std::uint64_t*, memory_space>("statexfer::exchange_sums",
                                                            static_cast<std::size_t>(views.capacity) * peers.size());
  }

  template <class Functor>
  void launch(const char* label, const ExecutionSpace& exec, int league_size, int team_size, std::size_t scratch,
              const Functor& f, int vector_length = 1) const {
    auto policy =
        Kokkos::Experimental::require(typename Functor::policy_type(exec, league_size, team_size, vector_length)
                                          .set_scratch_size(0, Kokkos::PerTeam(scratch)),
                                      Kokkos::Experimental::WorkItemProperty::HintLightWeight);
    Kokkos::parallel_for(label, policy, f);
  }

  void require_prepared(const char* what, const char* call) const {
    if (!prepared)
      throw std::logic_error(std::string("statexfer::") + what + "::" + call + ": prepare() must complete first");
  }
};

template <class ExecutionSpace>
struct ExportData : ExchangeData<ExecutionSpace> {
  using ExchangeData<ExecutionSpace>::ExchangeData;
};
template <class ExecutionSpace>
struct ImportData : ExchangeData<ExecutionSpace> {
  ImportData(const StatePool<ExecutionSpace>& p, const StateCommands<ExecutionSpace>& c, const ModelLayout& model,
             GroupRank local, ImportLanding l)
      : ExchangeData<ExecutionSpace>("PreparedImport", p, c, model, local), landing(l) {}
  ImportLanding landing;
  bool lands() const { return landing == ImportLanding::publish_after_check; }
};

}  // namespace statexfer::impl

namespace statexfer {

template <class ExecutionSpace>
PreparedExport<ExecutionSpace>::PreparedExport(const StatePool<ExecutionSpace>& pool,
                                               const StateCommands<ExecutionSpace>& commands, const ModelLayout& model,
                                               GroupRank source, int destination_tp,
                                               std::vector<WireBuffer<ExecutionSpace>> wires)
    : data_(std::make_unique<impl::ExportData<ExecutionSpace>>("PreparedExport", pool, commands, model, source)) {
  auto& d = *data_;
  if (destination_tp <= 0 || !model.splits(destination_tp))
    throw std::invalid_argument("statexfer::PreparedExport: destination_tp " + std::to_string(destination_tp) +
                                " does not split the model");
  if (static_cast<int>(wires.size()) != destination_tp)
    throw std::invalid_argument("statexfer::PreparedExport: wires must hold one buffer per destination rank (" +
                                std::to_string(destination_tp) + "), got " + std::to_string(wires.size()));
  std::vector<impl::PeerEntry> peers;
  std::vector<impl::RecordSlice> slices;
  std::vector<impl::ExchangeChunk> chunks;
  for (int j = 0; j < destination_tp; ++j) {
    const impl::PairTable t =
        impl::pair_table(model, source.size, source.rank, destination_tp, j, true, d.chunk_bytes(false), j);
    const std::int64_t need = t.record_bytes * d.views.capacity;
    const auto& w = wires[static_cast<std::size_t>(j)];
    if (static_cast<std::int64_t>(w.extent(0)) < need || (need > 0 && w.data() == nullptr))
      throw std::invalid_argument("statexfer::PreparedExport: wires[" + std::to_string(j) + "] must hold " +
                                  std::to_string(need) + " bytes (C x record_bytes), got " +
                                  std::to_string(w.extent(0)));
    if (reinterpret_cast<std::uintptr_t>(w.data()) % 16 != 0)
      throw std::invalid_argument("statexfer::PreparedExport: wires[" + std::to_string(j) +
                                  "] must be 16-byte aligned");
    if (need > 0 && impl::views_overlap(w, pool.backing()))
      throw std::invalid_argument("statexfer::PreparedExport: wires[" + std::to_string(j) +
                                  "] overlaps the pool backing");
    peers.push_back({w.data(), t.record_bytes, t.header_bytes, t.payload_bytes, j,
                     static_cast<std::int32_t>(slices.size()), t.slices_checksum,
                     t.endpoint_at < 0 ? -1 : t.header_bytes + t.endpoint_at,
                     t.key_at < 0 ? -1 : t.header_bytes + t.key_at});
    slices.insert(slices.end(), t.slices.begin(), t.slices.end());
    chunks.insert(chunks.end(), t.chunks.begin(), t.chunks.end());
  }
  d.wires = std::move(wires);
  d.views.source_tp = source.size;
  d.views.source_rank = source.rank;
  d.views.destination_tp = destination_tp;
  d.set_peers(peers, slices, chunks);
}

template <class ExecutionSpace>
PreparedExport<ExecutionSpace>::~PreparedExport() = default;
template <class ExecutionSpace>
PreparedExport<ExecutionSpace>::PreparedExport(PreparedExport&&) noexcept = default;
template <class ExecutionSpace>
PreparedExport<ExecutionSpace>& PreparedExport<ExecutionSpace>::operator=(PreparedExport&&) noexcept = default;

template <class ExecutionSpace>
void PreparedExport<ExecutionSpace>::prepare(const ExecutionSpace& exec) {
  if (!data_) throw std::logic_error("statexfer::PreparedExport::prepare: the export was moved from");
  data_->prepared = true;
  validate(exec);
  apply(exec);
  exec.fence();
}

template <class ExecutionSpace>
void PreparedExport<ExecutionSpace>::validate(const ExecutionSpace& exec) const {
  if (!data_) throw std::logic_error("statexfer::PreparedExport::validate: the export was moved from");
  const auto& d = *data_;
  d.require_prepared("PreparedExport", "validate");
  using functor = impl::ExportValidateFunctor<ExecutionSpace>;
  d.launch("statexfer::export_validate", exec, 1, d.decide_team,
           functor::scratch_bytes(d.views.capacity) + impl::list_scratch_bytes(d.decide_team), functor{d.views});
}

template <class ExecutionSpace>
void PreparedExport<ExecutionSpace>::apply(const ExecutionSpace& exec) const {
  if (!data_) throw std::logic_error("statexfer::PreparedExport::apply: the export was moved from");
  const auto& d = *data_;
  d.require_prepared("PreparedExport", "apply");
  d.launch("statexfer::export_apply", exec, d.move_league, d.team, d.ring ? impl::ring_scratch_bytes : 0,
           impl::ExportApplyFunctor<ExecutionSpace>{d.views, d.ring ? 1 : 0});
}

template <class ExecutionSpace>
std::int64_t PreparedExport<ExecutionSpace>::capacity() const noexcept {
  return data_ ? data_->views.capacity : 0;
}

template <class ExecutionSpace>
PreparedImport<ExecutionSpace>::PreparedImport(const StatePool<ExecutionSpace>& pool,
                                               const StateCommands<ExecutionSpace>& commands, const ModelLayout& model,
                                               int source_tp, GroupRank destination,
                                               std::vector<WireBuffer<ExecutionSpace>> wires, ImportLanding landing)
    : data_(std::make_unique<impl::ImportData<ExecutionSpace>>(pool, commands, model, destination, landing)) {
  auto& d = *data_;
  if (landing != ImportLanding::publish_after_check && landing != ImportLanding::check_before_write)
    throw std::invalid_argument("statexfer::PreparedImport: landing " + std::to_string(static_cast<int>(landing)) +
                                " is not an ImportLanding");
  if (source_tp <= 0 || !model.splits(source_tp))
    throw std::invalid_argument("statexfer::PreparedImport: source_tp " + std::to_string(source_tp) +
                                " does not split the model");
  if (static_cast<int>(wires.size()) != source_tp)
    throw std::invalid_argument("statexfer::PreparedImport: wires must hold one buffer per source rank (" +
                                std::to_string(source_tp) + "), got " + std::to_string(wires.size()));
  std::vector<impl::PeerEntry> peers;
  std::vector<impl::RecordSlice> slices;
  std::vector<impl::ExchangeChunk> chunks;
  for (int i = 0; i < source_tp; ++i) {
    const int peer = static_cast<int>(peers.size());
    impl::PairTable t = impl::pair_table(model, source_tp, i, destination.size, destination.rank, false,
                                         d.chunk_bytes(!d.lands()), peer);
    if (t.record_bytes == 0) continue;  // rank i sends this rank nothing
    const std::int64_t need = t.record_bytes * d.views.capacity;
    const auto& w = wires[static_cast<std::size_t>(i)];
    if (static_cast<std::int64_t>(w.extent(0)) < need || w.data() == nullptr)
      throw std::invalid_argument("statexfer::PreparedImport: wires[" + std::to_string(i) + "] must hold " +
                                  std::to_string(need) + " bytes (C x record_bytes), got " +
                                  std::to_string(w.extent(0)));
    if (reinterpret_cast<std::uintptr_t>(w.data()) % 16 != 0)
      throw std::invalid_argument("statexfer::PreparedImport: wires[" + std::to_string(i) +
                                  "] must be 16-byte aligned");
    if (impl::views_overlap(w, pool.backing()))
      throw std::invalid_argument("statexfer::PreparedImport: wires[" + std::to_string(i) +
                                  "] overlaps the pool backing");
    peers.push_back({w.data(), t.record_bytes, t.header_bytes, t.payload_bytes, i,
                     static_cast<std::int32_t>(slices.size()), t.slices_checksum,
                     t.endpoint_at < 0 ? -1 : t.header_bytes + t.endpoint_at,
                     t.key_at < 0 ? -1 : t.header_bytes + t.key_at});
    slices.insert(slices.end(), t.slices.begin(), t.slices.end());
    chunks.insert(chunks.end(), t.chunks.begin(), t.chunks.end());
  }
  d.wires = std::move(wires);
  d.views.source_tp = source_tp;
  d.views.destination_tp = destination.size;
  d.views.destination_rank = destination.rank;
  d.set_peers(peers, slices, chunks);
  using memory_space = typename ExecutionSpace::memory_space;
  d.row_users = Kokkos::View<std::int32_t*, memory_space>("statexfer::import_row_users", pool.rows());
  d.slot_users = Kokkos::View<std::int32_t*, memory_space>("statexfer::import_slot_users", d.views.capacity);
}

template <class ExecutionSpace>
PreparedImport<ExecutionSpace>::~PreparedImport() = default;
template <class ExecutionSpace>
PreparedImport<ExecutionSpace>::PreparedImport(PreparedImport&&) noexcept = default;
template <class ExecutionSpace>
PreparedImport<ExecutionSpace>& PreparedImport<ExecutionSpace>::operator=(PreparedImport&&) noexcept = default;

template <class ExecutionSpace>
void PreparedImport<ExecutionSpace>::prepare(const ExecutionSpace& exec) {
  if (!data_) throw std::logic_error("statexfer::PreparedImport::prepare: the import was moved from");
  data_->prepared = true;
  validate(exec);
  apply(exec);
  exec.fence();
}

template <class ExecutionSpace>
void PreparedImport<ExecutionSpace>::validate(const ExecutionSpace& exec) const {
  if (!data_) throw std::logic_error("statexfer::PreparedImport::validate: the import was moved from");
  const auto& d = *data_;
  d.require_prepared("PreparedImport", "validate");
  if (d.lands()) {
    d.launch("statexfer::import_check", exec, 1, d.check_team, impl::list_scratch_bytes(d.check_team),
             impl::ImportDecideFunctor<ExecutionSpace, true>{d.views, d.row_users, d.slot_users}, d.check_lanes);
    d.launch("statexfer::import_land", exec, d.move_league, d.team, d.ring ? impl::ring_scratch_bytes : 0,
             impl::ImportLandFunctor<ExecutionSpace>{d.views, d.ring ? 1 : 0});
    return;
  }
  d.launch("statexfer::import_sums", exec, d.sum_league, d.team, 0,
           impl::ImportSumFunctor<ExecutionSpace>{d.views, d.row_users, d.slot_users});
  d.launch("statexfer::import_decide", exec, 1, d.check_team, impl::list_scratch_bytes(d.check_team),
           impl::ImportDecideFunctor<ExecutionSpace>{d.views, d.row_users, d.slot_users}, d.check_lanes);
}

template <class ExecutionSpace>
void PreparedImport<ExecutionSpace>::apply(const ExecutionSpace& exec) const {
  if (!data_) throw std::logic_error("statexfer::PreparedImport::apply: the import was moved from");
  const auto& d = *data_;
  d.require_prepared("PreparedImport", "apply");
  if (d.lands()) {
    d.launch("statexfer::import_publish", exec, 1, d.decide_team, 0,
             impl::ImportPublishFunctor<ExecutionSpace>{d.views});
    return;
  }
  d.launch("statexfer::import_apply", exec, d.move_league, d.team, 0,
           impl::ImportApplyFunctor<ExecutionSpace>{d.views});
}

template <class ExecutionSpace>
std::int64_t PreparedImport<ExecutionSpace>::capacity() const noexcept {
  return data_ ? data_->views.capacity : 0;
}

template <class ExecutionSpace>
ImportLanding PreparedImport<ExecutionSpace>::landing() const noexcept {
  return data_ ? data_->landing : ImportLanding::publish_after_check;
}

}  // namespace statexfer

#endif
