// statexfer-sim --pd, one rank (pd_rank.hpp): the decode instance's step, the
// faults on the wire, the transport beside a plain send/recv, the totals.

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include <test_common/models.hpp>

#include "pd_model.hpp"
#include "pd_rank.hpp"
#include "policy.hpp"

namespace statexfer::sim {

namespace {

template <class View>
void patch(const View& wire, std::int64_t at, const void* bytes, std::size_t n) {
  Kokkos::View<const std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
      static_cast<const std::uint8_t*>(bytes), n);
  Kokkos::deep_copy(Kokkos::subview(wire, std::make_pair(at, at + static_cast<std::int64_t>(n))), h);
}
template <class View>
void peek(const View& wire, std::int64_t at, void* bytes, std::size_t n) {
  Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(
      static_cast<std::uint8_t*>(bytes), n);
  Kokkos::deep_copy(h, Kokkos::subview(wire, std::make_pair(at, at + static_cast<std::int64_t>(n))));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

void PdRank::decode(const std::vector<std::int64_t>& pull, const std::vector<std::int64_t>& local) {
  PdSide<Exec>& s = *side_;
  const std::int64_t n = static_cast<std::int64_t>(pull.size());
  std::vector<std::int64_t> served;  // slots that now hold their request's prompt-end state
  if (n > 0) import(pull, served);
  const std::vector<std::int64_t> received = served;
  // Requests whose prompt's end this instance's cache holds: restored from it, not moved.
  std::vector<statexfer::Command> list;
  std::vector<PdState> states(static_cast<std::size_t>(C_));
  std::vector<std::int64_t> requests(static_cast<std::size_t>(C_), -1);
  for (std::int64_t k = 0; k < n; ++k) requests[static_cast<std::size_t>(k)] = pull[static_cast<std::size_t>(k)];
  for (std::size_t m = 0; m < local.size(); ++m) {
    const std::int64_t k = n + static_cast<std::int64_t>(m), r = local[m];
    const PdState st = state_at(w_, r, spec(r).prompt_len);
    const std::int64_t row = dcache_.lookup(st.prefix);
    list.push_back(statexfer::Command::restore(k, s.cache_row(row), s.live_row(k), st.endpoint, st.key));
    requests[static_cast<std::size_t>(k)] = r;
    served.push_back(k);
    stats_.decode_hits += me_ == 0 ? 1 : 0;
  }
  if (!list.empty()) {
    expect_zero(s.run(list, {}), "a decode restore");
    if (verify())
      for (std::size_t m = 0; m < local.size(); ++m)
        check_row(s.live_row(n + static_cast<std::int64_t>(m)), state_at(w_, local[m], spec(local[m]).prompt_len));
  }
  // What arrived goes into the cache (a later request of the same prompt is served here).
  for (const std::int64_t k : received) {
    const std::int64_t r = requests[static_cast<std::size_t>(k)];
    states[static_cast<std::size_t>(k)] = state_at(w_, r, spec(r).prompt_len);
  }
  snapshot(dcache_, received, states, stats_.decode_snapshots);
  // Decoding: the model writes each request's end; its completion is snapshotted where the policy says.
  std::vector<std::int64_t> completions;
  for (const std::int64_t k : served) {
    const std::int64_t r = requests[static_cast<std::size_t>(k)];
    const PdState st = state_at(w_, r, spec(r).total_len);
    model_write(k, st);
    states[static_cast<std::size_t>(k)] = st;
    const RequestPoints points = request_points(o_.cfg.policy, w_, r, o_.cfg.block_tokens, true);
    if (std::find(points.snapshots.begin(), points.snapshots.end(), st.endpoint) != points.snapshots.end())
      completions.push_back(k);
  }
  snapshot(dcache_, completions, states, stats_.decode_snapshots);
  stats_.decode_evictions = me_ == 0 ? dcache_.evictions : 0;
}

void PdRank::import(const std::vector<std::int64_t>& pull, std::vector<std::int64_t>& served) {
  PdSide<Exec>& s = *side_;
  const std::int64_t n = static_cast<std::int64_t>(pull.size());
  // Faults not yet injected whose step has come take the step's first pulled slots.
  std::vector<std::int64_t> fault_of(static_cast<std::size_t>(n), -1);
  std::int64_t next = 0;
  for (std::size_t f = 0; f < faults_.size() && next < n; ++f)
    if (faults_[f].injected_step < 0 && faults_[f].step <= stats_.steps) {
      faults_[f].injected_step = stats_.steps, faults_[f].request = pull[static_cast<std::size_t>(next)];
      fault_of[static_cast<std::size_t>(next++)] = static_cast<std::int64_t>(f);
    }
  std::vector<std::vector<std::uint8_t>> before(static_cast<std::size_t>(n));
  std::vector<PdState> states;
  xbatch_->clear();
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t r = pull[static_cast<std::size_t>(k)];
    states.push_back(state_at(w_, r, spec(r).prompt_len));
    std::int64_t key = states.back().key;
    if (const std::int64_t f = fault_of[static_cast<std::size_t>(k)]; f >= 0) {
      before[static_cast<std::size_t>(k)] = s.read_row(s.live_row(k));
      if (faults_[static_cast<std::size_t>(f)].rank == me_) inject(faults_[static_cast<std::size_t>(f)], k, r, key);
    }
    xbatch_->push_back(statexfer::Command::import_row(k, s.live_row(k), states.back().endpoint, key));
  }
  const Exec exec;
  xcmds_.upload(exec, *xbatch_);
  importer_->validate(exec);
  if (xcombiner_) xcombiner_->combine(exec);
  importer_->apply(exec);
  const std::vector<std::int32_t> codes = exchange_codes(n);
  std::vector<std::int64_t> requeue;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t r = pull[static_cast<std::size_t>(k)], f = fault_of[static_cast<std::size_t>(k)];
    const std::int32_t code = codes[static_cast<std::size_t>(k)];
    if (code == 0) {
      served.push_back(k);
      s.install_pages(k);
      stats_.moved += me_ == 0 ? 1 : 0;
      if (verify()) check_row(s.live_row(k), states[static_cast<std::size_t>(k)]);
      for (auto& fault : faults_)
        if (fault.request == r && fault.recomputed < 0 && fault.injected_step < stats_.steps)
          fault.recomputed = stats_.steps;
    } else {
      requeue.push_back(r);
      stats_.refused += me_ == 0 ? 1 : 0;
      if (f < 0 && stats_.unexpected++ == 0)
        std::fprintf(stderr, "statexfer-sim --pd: decode rank %d: request %lld refused with code %d\n", me_,
                     static_cast<long long>(r), static_cast<int>(code));
    }
    if (f >= 0) {
      PdFault& fault = faults_[static_cast<std::size_t>(f)];
      // Refused and untouched on every decode rank, the group's minimum: the row
      // unchanged, or landed and left unpublished (endpoint -1, §17).
      const std::vector<std::uint8_t> row = s.read_row(s.live_row(k));
      std::int64_t endpoint = 0;
      std::memcpy(&endpoint, row.data() + model_.local(d_, me_).region("consumed_tokens").offset, 8);
      const bool unseen = row == before[static_cast<std::size_t>(k)] ||
                          (importer_->landing() == statexfer::ImportLanding::publish_after_check && endpoint == -1);
      int flags[2] = {code != 0 ? 1 : 0, unseen ? 1 : 0};
      MPI_Allreduce(MPI_IN_PLACE, flags, 2, MPI_INT, MPI_MIN, group_);
      fault.code = code, fault.refused = flags[0] == 1, fault.untouched = flags[1] == 1;
    }
  }
  for (auto it = requeue.rbegin(); it != requeue.rend(); ++it) pending_.push_front(*it);
}

void PdRank::inject(const PdFault& f, std::int64_t slot, std::int64_t request, std::int64_t& key) {
  if (f.type == PdFaultType::stale_key) {  // the key of the prefix one token shorter
    key = state_at(w_, request, std::max<std::int64_t>(spec(request).prompt_len - 1, 0)).key;
    if (key == state_at(w_, request, spec(request).prompt_len).key) key ^= 2;
    return;
  }
  int q = 0;  // the first prefill rank that sends this rank something
  while (q < p_ && wires_[static_cast<std::size_t>(q)].size() == 0) ++q;
  const std::int64_t rb = statexfer::record_bytes(model_, {p_, q}, {d_, me_}), at = slot * rb;
  const auto& wire = wires_[static_cast<std::size_t>(q)];
  if (f.type == PdFaultType::flipped_byte) {
    std::uint8_t b = 0;
    const std::int64_t byte = at + statexfer::record_header_bytes(model_) + 3;
    peek(wire, byte, &b, 1);
    b ^= 0x20;
    patch(wire, byte, &b, 1);
  } else if (f.type == PdFaultType::other_layout) {
    std::string other;
    for (const auto& m : models::all())
      if (other.empty() && o_.model_name != m.name) other = m.name;
    const std::uint64_t print = pd_model(other, 0, model_.page_tokens(), nullptr).fingerprint();
    patch(wire, at + 8, &print, 8);
  } else {  // missing slice: the first nonempty range of the record's slice table ends where it begins
    const auto slices = model_.slices(p_, q, d_, me_);
    for (std::size_t g = 0; g < slices.size(); ++g)
      if (slices[g].end > slices[g].begin) {
        const std::int32_t end = slices[g].begin;
        patch(wire, at + 80 + 16 * static_cast<std::int64_t>(g) + 8, &end, 4);
        break;
      }
  }
  Exec().fence();
}

void PdRank::snapshot(PdCache& cache, const std::vector<std::int64_t>& slots, const std::vector<PdState>& states,
                      std::int64_t& count) {
  std::vector<statexfer::Command> list;
  std::vector<std::int64_t> consumed(static_cast<std::size_t>(C_), 0), rows;
  std::vector<PrefixKey> keys;
  for (const std::int64_t k : slots) {
    const PdState& st = states[static_cast<std::size_t>(k)];
    if (cache.holds(st.prefix) || std::find(keys.begin(), keys.end(), st.prefix) != keys.end()) continue;
    const std::int64_t row = cache.reserve();
    if (row < 0) continue;
    consumed[static_cast<std::size_t>(k)] = st.endpoint;
    list.push_back(statexfer::Command::snapshot(k, side_->live_row(k), side_->cache_row(row), st.endpoint, st.key));
    rows.push_back(row), keys.push_back(st.prefix);
  }
  if (list.empty()) return;
  const auto codes = side_->run(list, consumed);
  for (std::size_t q = 0; q < list.size(); ++q) {
    if (codes[q] == 0) {
      cache.publish(keys[q], rows[q]);
      count += me_ == 0 ? 1 : 0;
    } else {
      cache.release(rows[q]);
      expect_zero({codes[q]}, "a snapshot");
    }
  }
}

// The transport moving C records of every pair, beside a plain send/recv of
// the same bytes between the same pairs, alternating: MPI_Isend/MPI_Irecv of
// host buffers, or (--pd-transport nccl) ncclSend/ncclRecv of device buffers.
void PdRank::measure_plain() {
  // The plain exchange moves the same bytes between the same buffers: the wires
  // themselves where they are host memory (a buffer allocated apart reads
  // faster or slower, its pages placed otherwise), else memory of their size.
  constexpr bool host_wires = std::is_same_v<Exec::memory_space, Kokkos::HostSpace>;
  const bool nccl = cfg_.transport == PdTransport::nccl;
  std::vector<Kokkos::View<std::uint8_t*, Kokkos::HostSpace>> plain;
  std::vector<Kokkos::View<std::uint8_t*, Exec::memory_space>> plain_device;  // NCCL's
  std::vector<int> peer_rank;
  for (int q = 0; q < static_cast<int>(wires_.size()); ++q)
    if (wires_[static_cast<std::size_t>(q)].size() > 0) {
      const auto& wire = wires_[static_cast<std::size_t>(q)];
      if (nccl)
        plain_device.emplace_back("statexfer::sim::pd_plain", wire.size());
      else if constexpr (host_wires)
        plain.emplace_back(wire.data(), wire.size());
      else
        plain.emplace_back("statexfer::sim::pd_plain", wire.size());
      peer_rank.push_back(prefill_ ? p_ + q : q);
    }
  // MPI counts are int: messages of at most 1 GiB, as the transport sends them.
  constexpr std::size_t piece = std::size_t(1) << 30;
  std::size_t pieces = 0;
  for (const auto& b : plain) pieces += (b.size() + piece - 1) / piece;
  std::vector<MPI_Request> requests(pieces);
  const auto plain_exchange = [&] {
#ifdef STATEXFER_HAVE_NCCL
    if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
      if (nccl) {
        const cudaStream_t stream = Exec().cuda_stream();
        // The group is ended whatever failed in it (NCCL pairs every start with an end), then the first failure.
        nccl_check(ncclGroupStart(), "ncclGroupStart");
        ncclResult_t rc = ncclSuccess;
        for (std::size_t q = 0; q < plain_device.size() && rc == ncclSuccess; ++q) {
          auto& b = plain_device[q];
          rc = prefill_ ? ncclSend(b.data(), b.size(), ncclUint8, peer_rank[q], nccl_, stream)
                        : ncclRecv(b.data(), b.size(), ncclUint8, peer_rank[q], nccl_, stream);
        }
        const ncclResult_t end = ncclGroupEnd();
        nccl_check(rc, prefill_ ? "ncclSend" : "ncclRecv");
        nccl_check(end, "ncclGroupEnd");
        Exec().fence();
        return;
      }
    }
#endif
    std::size_t k = 0;
    for (std::size_t q = 0; q < plain.size(); ++q)
      for (std::size_t at = 0; at < plain[q].size(); at += piece, ++k) {
        const int bytes = static_cast<int>(std::min(piece, plain[q].size() - at));
        if (prefill_)
          MPI_Isend(plain[q].data() + at, bytes, MPI_BYTE, peer_rank[q], 31, world_, &requests[k]);
        else
          MPI_Irecv(plain[q].data() + at, bytes, MPI_BYTE, peer_rank[q], 31, world_, &requests[k]);
      }
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  };
  std::vector<double> moved, sent;
  for (std::int64_t rep = 0; rep < cfg_.plain_reps; ++rep)
    for (int turn = 0; turn < 2; ++turn) {
      const bool transport_turn = (turn == 0) == (rep % 2 == 0);
      MPI_Barrier(world_);
      const double t0 = MPI_Wtime();
      if (transport_turn) {
        if (prefill_)
          transport_->send(Exec(), C_);
        else
          transport_->receive(Exec(), C_);
        Exec().fence();
      } else {
        plain_exchange();
      }
      double t = MPI_Wtime() - t0;
      MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, world_);
      (transport_turn ? moved : sent).push_back(t);
    }
  long long bytes = prefill_ ? transport_->bytes(C_) : 0;
  MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_LONG_LONG, MPI_SUM, world_);
  stats_.probe_bytes = bytes;
  stats_.plain_gbps = static_cast<double>(bytes) / median(sent) / 1e9;
  stats_.transport_gbps = static_cast<double>(bytes) / median(moved) / 1e9;
}

// Counts summed over the ranks (each counted once, by its owner); the run's
// shared figures from world rank 0; the faults' outcomes from decode rank 0.
void PdRank::gather() {
  std::vector<long long> sums = {stats_.moved,
                                 stats_.refused,
                                 stats_.unexpected,
                                 stats_.decode_hits,
                                 stats_.prefill_hits,
                                 stats_.restored_tokens,
                                 stats_.computed_tokens,
                                 stats_.prompt_tokens,
                                 stats_.prefill_snapshots,
                                 stats_.decode_snapshots,
                                 stats_.prefill_evictions,
                                 stats_.decode_evictions,
                                 stats_.bytes,
                                 stats_.rows_verified,
                                 stats_.mismatches};
  MPI_Allreduce(MPI_IN_PLACE, sums.data(), static_cast<int>(sums.size()), MPI_LONG_LONG, MPI_SUM, world_);
  totals_ = stats_;
  std::int64_t* fields[] = {&totals_.moved,
                            &totals_.refused,
                            &totals_.unexpected,
                            &totals_.decode_hits,
                            &totals_.prefill_hits,
                            &totals_.restored_tokens,
                            &totals_.computed_tokens,
                            &totals_.prompt_tokens,
                            &totals_.prefill_snapshots,
                            &totals_.decode_snapshots,
                            &totals_.prefill_evictions,
                            &totals_.decode_evictions,
                            &totals_.bytes,
                            &totals_.rows_verified,
                            &totals_.mismatches};
  for (std::size_t f = 0; f < sums.size(); ++f) *fields[f] = sums[f];
  std::vector<long long> outcome;
  for (const PdFault& f : faults_)
    outcome.insert(outcome.end(),
                   {f.injected_step, f.request, f.code, f.refused ? 1 : 0, f.untouched ? 1 : 0, f.recomputed});
  if (!outcome.empty()) MPI_Bcast(outcome.data(), static_cast<int>(outcome.size()), MPI_LONG_LONG, p_, world_);
  for (std::size_t f = 0; f < faults_.size(); ++f) {
    const long long* o = outcome.data() + 6 * f;
    faults_[f].injected_step = o[0], faults_[f].request = o[1], faults_[f].code = static_cast<std::int32_t>(o[2]);
    faults_[f].refused = o[3] == 1, faults_[f].untouched = o[4] == 1, faults_[f].recomputed = o[5];
  }
}

}  // namespace statexfer::sim
