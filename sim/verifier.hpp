#ifndef STATEXFER_SIM_VERIFIER_HPP
#define STATEXFER_SIM_VERIFIER_HPP

// --verify: after every transfer, the codes the ranks must hold (the contract's
// oracle on each rank's view, its faults included, combined as the error
// combiner does, commits whose ranks read different accepted counts refused)
// against the device's, and the accepted counts validate() read for commits;
// then the oracle's writes and the model's on the host replica, and the
// device's request state, state rows, every row range of the pool and the host
// tier that a command or the model wrote (or was to write) and every cache page
// written since the last comparison, byte for byte; the whole pool, host tier
// and caches every --verify-full-every steps and at the end (rows of tens of
// MiB make a whole comparison per step the run's cost). The scheduler's mirror
// of the state rows is held against the replica's after it took the codes.

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <statexfer/combine.hpp>
#include <test_common/oracle_commands.hpp>

#include "batch.hpp"
#include "comm.hpp"
#include "device_state.hpp"
#include "faults.hpp"
#include "geometry.hpp"
#include "replica.hpp"
#include "sim_config.hpp"
#include "state_rows.hpp"

namespace statexfer::sim {

template <class Exec>
class Verifier {
 public:
  Verifier(const SimConfig& cfg, const Geometry& geometry, const Comm& comm, const DeviceState<Exec>& device)
      : cfg_(cfg), g_(geometry), comm_(comm), device_(device), replica_(geometry) {}

  /// The tier batches of step `step` (--tier-moves stream), which run before
  /// its batch (on hosts; on GPUs the step waits for what it reads of them, and
  /// nothing else touches their rows): the device's codes against the
  /// oracle's, then their writes on the replica (compared with the step's).
  void check_tier(std::int64_t step, const Batch& onloads, const Batch& offloads,
                  const std::vector<std::int32_t>& onload_codes, const std::vector<std::int32_t>& offload_codes,
                  const std::vector<std::int32_t>& tables, const std::vector<std::int32_t>& draft_tables) {
    step_ = step;
    for (int part = 0; part < 2; ++part) {
      const Batch& batch = part == 0 ? onloads : offloads;
      if (batch.empty()) continue;  // alike on every rank (check_codes is a collective)
      const test::OracleCommandRows commands = oracle_rows(batch);
      const std::vector<std::int32_t> expected =
          replica_.oracle().validate(commands.view(), replica_.memory(tables.data(), draft_tables.data()));
      check_codes(batch, part == 0 ? onload_codes : offload_codes, expected, StepFaults{});
      for (const BatchEntry& b : batch)
        dirty_rows_.push_back({b.cmd.operation == statexfer::op_offload, b.cmd.destination, 0, g_.row_bytes});
      test::OracleMemory memory = replica_.memory(tables.data(), draft_tables.data());
      replica_.oracle().apply(commands.view(), expected, memory);
    }
  }

  /// The transfer of step `step`: `codes` are the device's (combined) codes of
  /// `batch`, `positions` its commit_positions (this rank's). A snapshot of an
  /// offload-race may hold code 7 (refused while the offload held its row) or
  /// 0 (validated after the offload): the replica follows the device's.
  void check_transfer(std::int64_t step, const Batch& batch, const std::vector<std::int32_t>& codes,
                      const std::vector<std::int32_t>& positions, const StepFaults& faults,
                      const std::vector<std::int32_t>& tables, const std::vector<std::int32_t>& draft_tables) {
    step_ = step;
    std::vector<std::int32_t> mine;
    std::vector<std::int32_t> expected = expected_codes(batch, faults, tables, draft_tables, mine);
    for (std::size_t i = 0; i < batch.size(); ++i)
      if (faults.raced(static_cast<std::int64_t>(i)) && expected[i] == 0 && codes[i] == 7) expected[i] = 7;
    check_codes(batch, codes, expected, faults);
    for (std::size_t i = 0; i < batch.size() && ok_ && g_.positions > 0; ++i)
      if (positions[i] != mine[i])
        fail("command " + std::to_string(i) + " (" + kind_name(batch[i].kind) + ", slot " +
             std::to_string(batch[i].cmd.request_slot) + "): the device read accepted count " +
             std::to_string(positions[i]) + ", the oracle " + std::to_string(mine[i]));
    const test::OracleCommandRows commands = oracle_rows(batch);
    for (const BatchEntry& b : batch) {  // the rows every command writes if it applies (and must not otherwise)
      if (b.cmd.destination >= 0)
        dirty_rows_.push_back({b.cmd.operation == statexfer::op_offload, b.cmd.destination, 0, g_.row_bytes});
      if (b.cmd.operation == statexfer::op_commit)  // a copying commit writes the slot's live row
        dirty_rows_.push_back({false, replica_.state_rows().live(b.cmd.request_slot), 0, g_.row_bytes});
    }
    test::OracleMemory memory = replica_.memory(tables.data(), draft_tables.data());
    std::vector<test::CachePage> written;
    replica_.oracle().apply(commands.view(), expected, memory, &written);
    dirty_.insert(dirty_.end(), written.begin(), written.end());
    const bool full = cfg_.verify_full_every > 0 && (step + 1) % cfg_.verify_full_every == 0;
    compare_pool(full);
    compare_state_rows();
    compare_dirty_pages();
    if (full) compare_caches();
    steps_checked_++;
    if (comm_.distributed() && comm_.min(ok_ ? 1 : 0) == 0 && ok_) fail("stopped: another rank's comparison failed");
  }

  /// The scheduler's mirror of the state rows after it took the codes: the
  /// rows it names in its commands and the model's writes.
  void check_mirror(const HostStateRows& mirror) {
    if (g_.positions == 0 || !ok_) return;
    const HostStateRows& want = replica_.state_rows();
    for (std::int64_t s = 0; s < want.capacity(); ++s)
      for (std::int64_t j = 0; j < HostStateRows::columns; ++j)
        if (mirror(s, j) != want(s, j)) {
          fail("the scheduler's state row [" + std::to_string(s) + "][" + std::to_string(j) + "] is " +
               std::to_string(mirror(s, j)) + ", the oracle's " + std::to_string(want(s, j)));
          return;
        }
  }

  /// The model's writes of this step and the sampler's counts, on the replica.
  void run_model(const std::vector<FillJob>& jobs, const std::vector<std::int32_t>& accepted) {
    replica_.run_jobs(jobs);
    replica_.set_accepted(accepted);
    const std::int64_t A = g_.kv_planes, D = g_.draft_planes, RB = g_.row_bytes;
    for (const FillJob& j : jobs) {
      if (j.target >= 1 && j.target <= A + D)
        dirty_.push_back({j.target - 1, j.offset / (j.target <= A ? g_.kv_page_bytes : g_.draft_page_bytes)});
      if (j.target == 0) {  // a range inside one row
        const std::int64_t end = j.offset + (j.set64 ? 8 : j.hi - j.lo);
        dirty_rows_.push_back({false, j.offset / RB, j.offset % RB, (end - 1) % RB + 1});
      }
    }
  }

  /// After the last step: the pool and every cache, on every rank.
  void check_final(std::int64_t step) {
    step_ = step;
    compare_pool(true);
    if (ok_) compare_caches();
    if (comm_.distributed() && comm_.min(ok_ ? 1 : 0) == 0 && ok_) {
      ok_ = false;
      message_ = "another rank's final comparison failed";
    }
  }

  bool ok() const { return ok_; }
  const std::string& message() const { return message_; }
  std::int64_t steps_checked() const { return steps_checked_; }
  std::int64_t full_checks() const { return full_checks_; }

 private:
  // The batch's commands as the oracle reads them.
  static test::OracleCommandRows oracle_rows(const Batch& batch) {
    test::OracleCommandRows rows;
    for (const BatchEntry& b : batch) rows.push_back(b.cmd);
    return rows;
  }

  void fail(const std::string& what) {
    if (!ok_) return;
    ok_ = false;
    message_ = "rank " + std::to_string(comm_.rank) + ", step " + std::to_string(step_) + ": " + what;
  }

  // The combination of the codes of every rank's view (its faults' changes
  // made for the oracle's validation and undone after it), as the error
  // combiner computes it: code 3 joins a commit whose ranks read different
  // accepted counts. `mine`: this rank's commit_positions.
  std::vector<std::int32_t> expected_codes(const Batch& batch, const StepFaults& faults,
                                           const std::vector<std::int32_t>& tables,
                                           const std::vector<std::int32_t>& draft_tables,
                                           std::vector<std::int32_t>& mine) {
    const test::OracleCommandRows commands = oracle_rows(batch);
    const auto count = batch.size();
    std::vector<int> faulted_ranks;
    for (const FaultPatch& p : faults.patches)
      if (std::find(faulted_ranks.begin(), faulted_ranks.end(), p.rank) == faulted_ranks.end())
        faulted_ranks.push_back(p.rank);
    const bool me_faulted = std::find(faulted_ranks.begin(), faulted_ranks.end(), comm_.rank) != faulted_ranks.end();
    std::vector<std::int32_t> expected(count, 0), first_positions;
    std::vector<char> disagree(count, 0);
    bool first = true;
    auto fold = [&](int rank) {  // -1: a rank without faults
      std::vector<std::int32_t> t = tables, accepted = replica_.accepted();
      std::vector<std::pair<const FaultPatch*, std::int64_t>> words;  // patched words and their replica values
      for (const FaultPatch& p : faults.patches) {
        if (p.rank != rank) continue;
        if (p.target == FaultPatch::page) {
          t[static_cast<std::size_t>(p.index * g_.table_width + p.at)] = static_cast<std::int32_t>(p.value);
        } else if (p.target == FaultPatch::accepted) {
          accepted[static_cast<std::size_t>(p.index)] = static_cast<std::int32_t>(p.value);
        } else {
          const bool host = p.target == FaultPatch::host_word;
          words.emplace_back(&p, replica_.word(host, p.index, p.at));
          replica_.set_word(host, p.index, p.at, p.value);
        }
      }
      std::vector<std::int32_t> positions;
      const std::vector<std::int32_t> v = replica_.oracle().validate(
          commands.view(), replica_.memory(t.data(), draft_tables.data(), accepted.data()), &positions);
      for (auto it = words.rbegin(); it != words.rend(); ++it)
        replica_.set_word(it->first->target == FaultPatch::host_word, it->first->index, it->first->at, it->second);
      for (std::size_t i = 0; i < count; ++i) {
        expected[i] = first ? v[i] : statexfer::combine_error_codes(expected[i], v[i]);
        if (!first && positions[i] != first_positions[i]) disagree[i] = 1;
      }
      if (first) first_positions = positions;
      if (rank == comm_.rank || (rank < 0 && !me_faulted)) mine = positions;
      first = false;
    };
    if (static_cast<int>(faulted_ranks.size()) < comm_.size) fold(-1);
    for (int r : faulted_ranks) fold(r);
    for (std::size_t i = 0; i < count; ++i)
      if (disagree[i]) expected[i] = statexfer::combine_error_codes(expected[i], 3);
    return expected;
  }

  void check_codes(const Batch& batch, const std::vector<std::int32_t>& codes,
                   const std::vector<std::int32_t>& expected, const StepFaults& faults) {
    const std::size_t count = batch.size();
    for (std::size_t i = 0; i < count && ok_; ++i) {
      if (codes[i] == expected[i]) continue;
      const Command& c = batch[i].cmd;
      fail("command " + std::to_string(i) + " (" + kind_name(batch[i].kind) + ", slot " +
           std::to_string(c.request_slot) + ", end " + std::to_string(c.expected_consumed) + "): device code " +
           std::to_string(codes[i]) + " (" + statexfer::command_error_name(codes[i]) + "), the oracle expects " +
           std::to_string(expected[i]) + " (" + statexfer::command_error_name(expected[i]) + ")");
    }
    for (std::size_t i = 0; i < count; ++i)
      if (expected[i] != 0 && !faults.hit(static_cast<std::int64_t>(i)))
        fail("command " + std::to_string(i) + " was refused with code " + std::to_string(expected[i]) +
             " although the scheduler built it valid");
    // Every rank must hold the same codes.
    if (comm_.distributed()) {
      std::uint64_t u = 0;  // unsigned: the hash wraps by design
      for (std::size_t i = 0; i < count; ++i) u = u * 31 + static_cast<std::uint64_t>(codes[i] + 1);
      const auto h = static_cast<std::int64_t>(u);
      if (comm_.min(h) != comm_.max(h)) fail("the ranks hold different error codes for the batch");
    }
  }

  template <class V>
  static auto host_copy(const V& v) {
    auto h = Kokkos::create_mirror_view(v);
    Kokkos::deep_copy(h, v);
    return h;
  }

  std::string region_at(std::int64_t b) const {
    for (const auto& r : g_.layout.regions())
      if (b >= r.offset && b < r.offset + r.nbytes) return r.name;
    return "padding";
  }

  // Bytes [lo, hi) of `row` of one tier: false at the first difference.
  template <class Backing>
  bool compare_range(const char* tier, const Backing& backing, const std::uint8_t* want, std::int64_t row,
                     std::int64_t lo, std::int64_t hi) {
    const std::int64_t RB = g_.row_bytes;
    const auto n = static_cast<std::size_t>(hi - lo);
    const std::uint8_t* dev;
    if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Backing::memory_space>::accessible) {
      dev = backing.data() + row * RB + lo;
    } else {
      buffer_.resize(n);
      Kokkos::deep_copy(
          Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(buffer_.data(), n),
          Kokkos::subview(backing, row, std::make_pair(lo, hi)));
      dev = buffer_.data();
    }
    want += row * RB + lo;
    if (std::memcmp(dev, want, n) == 0) return true;
    std::int64_t b = 0;
    while (dev[b] == want[b]) ++b;
    fail(std::string(tier) + " row " + std::to_string(row) + " byte " + std::to_string(lo + b) + " (region " +
         region_at(lo + b) + "): device " + std::to_string(dev[b]) + ", oracle " + std::to_string(want[b]));
    return false;
  }

  // The dirty row ranges (`full`: every row of both tiers), then the request state.
  void compare_pool(bool full) {
    const auto& pool = device_.pool().backing();
    const auto& host = device_.host_tier().backing();
    if (full) {
      dirty_rows_.clear();
      for (std::int64_t r = 0; r < g_.rows; ++r) dirty_rows_.push_back({false, r, 0, g_.row_bytes});
      for (std::int64_t r = 0; r < g_.host_rows; ++r) dirty_rows_.push_back({true, r, 0, g_.row_bytes});
    }
    std::sort(dirty_rows_.begin(), dirty_rows_.end());
    for (std::size_t i = 0; i < dirty_rows_.size() && ok_;) {
      RowRange r = dirty_rows_[i++];
      for (; i < dirty_rows_.size() && dirty_rows_[i].host == r.host && dirty_rows_[i].row == r.row &&
             dirty_rows_[i].lo <= r.hi;
           ++i)
        r.hi = std::max(r.hi, dirty_rows_[i].hi);
      if (r.host)
        compare_range("host", host, replica_.host().data(), r.row, r.lo, r.hi);
      else
        compare_range("pool", pool, replica_.pool().data(), r.row, r.lo, r.hi);
    }
    dirty_rows_.clear();
    if (!ok_) return;
    auto consumed = host_copy(device_.requests().consumed_tokens);
    const auto& expected = replica_.request_consumed();
    for (std::int64_t slot = 0; slot < g_.capacity; ++slot)
      if (consumed(slot, 0) != expected[static_cast<std::size_t>(slot)]) {
        fail("request consumed of slot " + std::to_string(slot) + ": device " + std::to_string(consumed(slot, 0)) +
             ", oracle " + std::to_string(expected[static_cast<std::size_t>(slot)]));
        return;
      }
  }

  void compare_state_rows() {
    if (g_.positions == 0 || !ok_) return;
    auto rows = host_copy(device_.state_rows());
    const HostStateRows& want = replica_.state_rows();
    for (std::int64_t s = 0; s < g_.capacity; ++s)
      for (std::int64_t j = 0; j < HostStateRows::columns; ++j)
        if (rows(s, j) != want(s, j)) {
          fail("state row [" + std::to_string(s) + "][" + std::to_string(j) + "]: device " +
               std::to_string(rows(s, j)) + ", oracle " + std::to_string(want(s, j)));
          return;
        }
  }

  void compare_dirty_pages() {
    std::sort(dirty_.begin(), dirty_.end());
    dirty_.erase(std::unique(dirty_.begin(), dirty_.end()), dirty_.end());
    constexpr bool host = Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename Exec::memory_space>::accessible;
    std::vector<std::uint8_t> buffer;
    for (const test::CachePage& d : dirty_) {
      const auto i = static_cast<std::size_t>(d.cache);
      const std::int64_t pb = replica_.cache_page_bytes(i);
      const auto& v = device_.cache(d.cache);
      const std::uint8_t* dev;
      if constexpr (host) {
        dev = v.data() + d.page * pb;
      } else {
        buffer.resize(static_cast<std::size_t>(pb));
        Kokkos::deep_copy(Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                              buffer.data(), static_cast<std::size_t>(pb)),
                          Kokkos::subview(v, d.page, Kokkos::ALL()));
        dev = buffer.data();
      }
      if (!compare_page(d.cache, d.page, dev, replica_.cache(i).data() + d.page * pb, pb)) break;
    }
    dirty_.clear();
  }

  bool compare_page(std::int32_t cache, std::int64_t page, const std::uint8_t* dev, const std::uint8_t* want,
                    std::int64_t pb) {
    if (std::memcmp(dev, want, static_cast<std::size_t>(pb)) == 0) return true;
    std::int64_t b = 0;
    while (dev[b] == want[b]) ++b;
    const bool kv = cache < g_.kv_planes;
    fail(std::string(kv ? "kv" : "draft") + std::to_string(kv ? cache : cache - g_.kv_planes) + " page " +
         std::to_string(page) + " byte " + std::to_string(b) + ": device " + std::to_string(dev[b]) + ", oracle " +
         std::to_string(want[b]));
    return false;
  }

  void compare_caches() {
    for (std::int32_t c = 0; c < g_.kv_planes + g_.draft_planes && ok_; ++c) {
      auto h = host_copy(device_.cache(c));
      const std::int64_t pb = replica_.cache_page_bytes(static_cast<std::size_t>(c));
      const std::uint8_t* want = replica_.cache(static_cast<std::size_t>(c)).data();
      for (std::int64_t p = 0; p < g_.pages; ++p)
        if (!compare_page(c, p, h.data() + p * pb, want + p * pb, pb)) break;
    }
    full_checks_++;
  }

  const SimConfig& cfg_;
  const Geometry& g_;
  Comm comm_;
  const DeviceState<Exec>& device_;
  HostReplica replica_;
  std::vector<test::CachePage> dirty_;  // cache pages written since the last comparison
  struct RowRange {
    bool host;
    std::int64_t row, lo, hi;
    bool operator<(const RowRange& o) const {
      return host != o.host ? host < o.host : row != o.row ? row < o.row : lo < o.lo;
    }
  };
  std::vector<RowRange> dirty_rows_;  // row ranges written (or to be written) since the last comparison
  std::vector<std::uint8_t> buffer_;
  std::int64_t step_ = 0;
  bool ok_ = true;
  std::string message_;
  std::int64_t steps_checked_ = 0, full_checks_ = 0;
};

}  // namespace statexfer::sim

#endif
