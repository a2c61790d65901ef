// statexfer-sim --pd, one rank (pd_rank.hpp): set-up, the steps, the prefill.

#include "pd_rank.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include <test_common/reshard.hpp>

#include "pd_model.hpp"
#include "policy.hpp"

namespace statexfer::sim {

#ifdef STATEXFER_HAVE_NCCL
void nccl_check(ncclResult_t r, const char* call) {
  if (r != ncclSuccess)
    throw std::runtime_error(std::string("--pd-transport nccl: ") + call + " failed: " + ncclGetErrorString(r));
}
#endif

PdState state_at(const Workload& w, std::int64_t request, std::int64_t endpoint) {
  TokenStream ts(w, request);
  if (endpoint > 0) ts.advance(endpoint);
  return {endpoint, pd_key(ts.key()), ts.key(), ts.state_seed()};
}

PdRank::PdRank(const Options& o, const Workload& w, MPI_Comm world)
    : o_(o), w_(w), cfg_(o.pd), world_(world), C_(o.pd.capacity), pcache_(o.pd.cache_rows), dcache_(o.pd.cache_rows) {
  MPI_Comm_rank(world_, &world_rank_);
  p_ = cfg_.prefill_tp, d_ = cfg_.decode_tp;
  prefill_ = world_rank_ < p_;
  me_ = prefill_ ? world_rank_ : world_rank_ - p_;
  tp_ = prefill_ ? p_ : d_;
  MPI_Comm_split(world_, prefill_ ? 0 : 1, world_rank_, &group_);
  model_ = pd_model(o.model_name, cfg_.layers, o.cfg.page_tokens, &description_);
  for (const int t : {p_, d_})
    if (!model_.splits(t))
      throw std::invalid_argument("--prefill-tp/--decode-tp: " + description_ + " does not split at TP " +
                                  std::to_string(t));
  const std::int64_t width = std::max<std::int64_t>(w_.max_total, 1) / model_.page_tokens() + 2;
  side_ = std::make_unique<PdSide<Exec>>(model_, tp_, me_, C_, cfg_.cache_rows, width, Exec());
  if (tp_ > 1) side_->combiner = std::make_unique<statexfer::ErrorCombiner<Exec>>(side_->commands, group_);
  xcmds_ = statexfer::StateCommands<Exec>::allocate(C_);
  xbatch_ = std::make_unique<statexfer::CommandBatch<Exec>>(C_);
  const int peers = prefill_ ? d_ : p_;
  for (int q = 0; q < peers; ++q) {
    const std::int64_t rb = prefill_ ? statexfer::record_bytes(model_, {p_, me_}, {d_, q})
                                     : statexfer::record_bytes(model_, {p_, q}, {d_, me_});
    wires_.push_back(rb > 0 ? statexfer::WireBuffer<Exec>("statexfer::sim::pd_wire", rb * C_)
                            : statexfer::WireBuffer<Exec>());
  }
  const Exec exec;
  if (prefill_) {
    exporter_ = std::make_unique<statexfer::PreparedExport<Exec>>(side_->pool, xcmds_, model_,
                                                                  statexfer::GroupRank{p_, me_}, d_, wires_);
    exporter_->prepare(exec);
  } else {
    importer_ = std::make_unique<statexfer::PreparedImport<Exec>>(side_->pool, xcmds_, model_, p_,
                                                                  statexfer::GroupRank{d_, me_}, wires_);
    importer_->prepare(exec);
  }
  if (tp_ > 1) xcombiner_ = std::make_unique<statexfer::ErrorCombiner<Exec>>(xcmds_, group_);
  std::vector<int> prefill_ranks, decode_ranks;
  for (int r = 0; r < p_; ++r) prefill_ranks.push_back(r);
  for (int r = 0; r < d_; ++r) decode_ranks.push_back(p_ + r);
#ifdef STATEXFER_HAVE_NCCL
  if (cfg_.transport == PdTransport::nccl) {
    // One communicator of the world's ranks (its ranks are theirs), each on the GPU Kokkos took for it:
    // NCCL refuses two ranks on one GPU with a bare "invalid usage", so they are named here first.
    char bus[32] = {};
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess)
      throw std::runtime_error("--pd-transport nccl: this rank's GPU is unknown (cudaGetDevice)");
    int ranks = 0;
    MPI_Comm_size(world_, &ranks);
    std::vector<char> buses(sizeof bus * static_cast<std::size_t>(ranks));
    MPI_Allgather(bus, sizeof bus, MPI_CHAR, buses.data(), sizeof bus, MPI_CHAR, world_);
    for (int r = 0; r < ranks; ++r)
      if (r != world_rank_ && std::strncmp(bus, &buses[sizeof bus * static_cast<std::size_t>(r)], sizeof bus) == 0)
        throw std::runtime_error("--pd-transport nccl needs a GPU a rank: ranks " +
                                 std::to_string(std::min(r, world_rank_)) + " and " +
                                 std::to_string(std::max(r, world_rank_)) + " share GPU " + bus);
    ncclUniqueId id;
    if (world_rank_ == 0) nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, world_);
    nccl_check(ncclCommInitRank(&nccl_, ranks, id, world_rank_), "ncclCommInitRank");
    transport_ =
        std::make_unique<statexfer::WireTransport<Exec>>(model_, C_, nccl_, prefill_ranks, decode_ranks, wires_);
  }
#endif
  if (!transport_)
    transport_ =
        std::make_unique<statexfer::WireTransport<Exec>>(model_, C_, world_, prefill_ranks, decode_ranks, wires_);
  transport_->prepare(exec);
  for (int i = 0; i < p_; ++i)
    for (int j = 0; j < d_; ++j) stats_.record_bytes += statexfer::record_bytes(model_, {p_, i}, {d_, j});
  faults_ = cfg_.faults;
  for (std::int64_t r = 0; r < static_cast<std::int64_t>(w_.requests.size()); ++r) pending_.push_back(r);
}

PdRank::~PdRank() {
#ifdef STATEXFER_HAVE_NCCL
  transport_.reset();  // before its communicator
  if (nccl_ != nullptr) {
    // Unwinding, an operation of this rank may wait for a peer that will not come: destroying would wait for
    // it (and MPI_Abort after it would never run); NCCL's abort does not.
    const bool failed = std::uncaught_exceptions() > 0;
    const ncclResult_t r = failed ? ncclCommAbort(nccl_) : ncclCommDestroy(nccl_);
    if (r != ncclSuccess)
      std::fprintf(stderr, "statexfer-sim: %s failed: %s\n", failed ? "ncclCommAbort" : "ncclCommDestroy",
                   ncclGetErrorString(r));
  }
#endif
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && group_ != MPI_COMM_NULL) MPI_Comm_free(&group_);
}

bool PdRank::refused_once(std::int64_t r) const {
  return std::any_of(faults_.begin(), faults_.end(), [&](const PdFault& f) { return f.request == r; });
}

std::vector<long long> PdRank::decide() {
  std::vector<long long> pulls, hits;
  while (!pending_.empty() && static_cast<std::int64_t>(pulls.size() + hits.size()) < C_) {
    const std::int64_t r = pending_.front();
    pending_.pop_front();
    const PdState s = state_at(w_, r, spec(r).prompt_len);
    (dcache_.holds(s.prefix) && !refused_once(r) ? hits : pulls).push_back(r);
  }
  std::vector<long long> plan(static_cast<std::size_t>(2 + C_), -1);
  plan[0] = static_cast<long long>(pulls.size()), plan[1] = static_cast<long long>(hits.size());
  std::copy(pulls.begin(), pulls.end(), plan.begin() + 2);
  std::copy(hits.begin(), hits.end(), plan.begin() + 2 + static_cast<std::ptrdiff_t>(pulls.size()));
  return plan;
}

void PdRank::run() {
  const double t0 = MPI_Wtime();
  stats_.requests = static_cast<std::int64_t>(w_.requests.size());
  for (;;) {
    // The decode group's pull list, broadcast from decode rank 0: [n, hits, ids of pulls then hits].
    std::vector<long long> plan(static_cast<std::size_t>(2 + C_), -1);
    if (!prefill_) plan = decide();
    MPI_Bcast(plan.data(), static_cast<int>(plan.size()), MPI_LONG_LONG, p_, world_);
    const std::int64_t n = plan[0], hits = plan[1];
    if (n == 0 && hits == 0) break;
    std::vector<std::int64_t> pull(plan.begin() + 2, plan.begin() + 2 + n);
    std::vector<std::int64_t> local(plan.begin() + 2 + n, plan.begin() + 2 + n + hits);
    if (prefill_) prefill(pull);
    if (n > 0) {
      MPI_Barrier(world_);
      const double m0 = MPI_Wtime();
      if (prefill_) {
        transport_->send(Exec(), n);
        stats_.bytes += transport_->bytes(n);
      } else {
        transport_->receive(Exec(), n);
        Exec().fence();
      }
      const double m = MPI_Wtime() - m0;
      double slowest = 0;
      MPI_Allreduce(&m, &slowest, 1, MPI_DOUBLE, MPI_MAX, world_);
      stats_.transfer_s += slowest;
      ++stats_.transfers;
    }
    if (!prefill_) decode(pull, local);
    ++stats_.steps;
  }
  stats_.wall_s = MPI_Wtime() - t0;
  measure_plain();
  gather();
}

void PdRank::prefill(const std::vector<std::int64_t>& pull) {
  const std::int64_t n = static_cast<std::int64_t>(pull.size());
  PdSide<Exec>& s = *side_;
  std::vector<statexfer::Command> list;
  std::vector<std::int64_t> from(static_cast<std::size_t>(n), 0);
  std::vector<std::vector<std::int64_t>> checkpoints(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t r = pull[static_cast<std::size_t>(k)];
    const RequestPoints points = request_points(o_.cfg.policy, w_, r, o_.cfg.block_tokens, true);
    std::int64_t row = -1;
    for (auto e = points.lookups.rbegin(); e != points.lookups.rend() && row < 0; ++e) {
      const PdState st = state_at(w_, r, *e);
      row = pcache_.lookup(st.prefix);
      if (row >= 0) {
        from[static_cast<std::size_t>(k)] = *e;
        list.push_back(statexfer::Command::restore(k, s.cache_row(row), s.live_row(k), *e, st.key));
      }
    }
    if (row < 0) list.push_back(statexfer::Command::reset(k, s.live_row(k)));
    for (const std::int64_t c : points.snapshots)
      if (c > from[static_cast<std::size_t>(k)] && c <= spec(r).prompt_len)
        checkpoints[static_cast<std::size_t>(k)].push_back(c);
    stats_.prompt_tokens += me_ == 0 ? spec(r).prompt_len : 0;
    stats_.restored_tokens += me_ == 0 ? from[static_cast<std::size_t>(k)] : 0;
    stats_.computed_tokens += me_ == 0 ? spec(r).prompt_len - from[static_cast<std::size_t>(k)] : 0;
    stats_.prefill_hits += me_ == 0 && row >= 0 ? 1 : 0;
  }
  expect_zero(s.run(list, {}), "a prefill restore or reset");
  if (verify())
    for (std::int64_t k = 0; k < n; ++k)
      if (from[static_cast<std::size_t>(k)] > 0)
        check_row(s.live_row(k), state_at(w_, pull[static_cast<std::size_t>(k)], from[static_cast<std::size_t>(k)]));
  // Checkpoints, round by round: the model reaches each, then its snapshot.
  for (std::size_t round = 0;; ++round) {
    list.clear();
    std::vector<std::int64_t> consumed(static_cast<std::size_t>(C_), 0), rows;
    std::vector<PrefixKey> keys;
    for (std::int64_t k = 0; k < n; ++k) {
      const auto& cps = checkpoints[static_cast<std::size_t>(k)];
      if (round >= cps.size()) continue;
      const PdState st = state_at(w_, pull[static_cast<std::size_t>(k)], cps[round]);
      model_write(k, st);
      if (pcache_.holds(st.prefix)) continue;
      const std::int64_t row = pcache_.reserve();
      if (row < 0) continue;
      consumed[static_cast<std::size_t>(k)] = st.endpoint;
      list.push_back(statexfer::Command::snapshot(k, s.live_row(k), s.cache_row(row), st.endpoint, st.key));
      rows.push_back(row), keys.push_back(st.prefix);
    }
    if (list.empty() &&
        std::none_of(checkpoints.begin(), checkpoints.end(), [&](const auto& c) { return round < c.size(); }))
      break;
    const auto codes = s.run(list, consumed);
    for (std::size_t q = 0; q < list.size(); ++q) {
      if (codes[q] == 0)
        pcache_.publish(keys[q], rows[q]);
      else
        pcache_.release(rows[q]), ++stats_.unexpected;
      stats_.prefill_snapshots += me_ == 0 && codes[q] == 0 ? 1 : 0;
    }
  }
  stats_.prefill_evictions = me_ == 0 ? pcache_.evictions : 0;
  // The prompt's end, then the export of every pulled row into its slot.
  xbatch_->clear();
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t r = pull[static_cast<std::size_t>(k)];
    const PdState st = state_at(w_, r, spec(r).prompt_len);
    const auto& cps = checkpoints[static_cast<std::size_t>(k)];
    if (cps.empty() || cps.back() != st.endpoint) model_write(k, st);
    xbatch_->push_back(statexfer::Command::export_row(s.live_row(k), k, st.endpoint, st.key));
  }
  const Exec exec;
  xcmds_.upload(exec, *xbatch_);
  exporter_->validate(exec);
  if (xcombiner_) xcombiner_->combine(exec);
  exporter_->apply(exec);
  expect_zero(exchange_codes(n), "an export");
}

void PdRank::model_write(std::int64_t slot, const PdState& st) {
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(side_->layout.row_bytes()), 0);
  write_shard(model_, tp_, me_, st.seed, st.endpoint, st.key, bytes.data());
  side_->write_live(slot, bytes);
}
/// --verify: the row against the oracle's shard (test_common/reshard.hpp) of the whole row of `st`.
void PdRank::check_row(std::int64_t row, const PdState& st) {
  std::vector<std::uint8_t> whole;
  write_whole(model_, st.seed, st.endpoint, st.key, whole);
  const auto want = statexfer::test::oracle_shard(model_.regions(), whole, tp_, me_);
  ++stats_.rows_verified;
  if (side_->read_row(row) != want) {
    if (stats_.mismatches++ == 0)
      std::fprintf(stderr, "statexfer-sim --pd: %s rank %d: row %lld is not the oracle's shard at endpoint %lld\n",
                   prefill_ ? "prefill" : "decode", me_, static_cast<long long>(row),
                   static_cast<long long>(st.endpoint));
  }
}
std::vector<std::int32_t> PdRank::exchange_codes(std::int64_t n) const {
  Exec().fence();
  auto errors = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), xcmds_.errors);
  std::vector<std::int32_t> out(static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) out[static_cast<std::size_t>(k)] = errors(k);
  return out;
}
void PdRank::expect_zero(const std::vector<std::int32_t>& codes, const char* what) {
  for (const std::int32_t c : codes)
    if (c != 0 && stats_.unexpected++ == 0)
      std::fprintf(stderr, "statexfer-sim --pd: %s got code %d\n", what, static_cast<int>(c));
}
}  // namespace statexfer::sim
