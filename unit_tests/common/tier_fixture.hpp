#ifndef STATEXFER_TEST_TIER_FIXTURE_HPP
#define STATEXFER_TEST_TIER_FIXTURE_HPP

// A transfer with a host tier (docs/CONTRACT.md §12), and optionally
// speculative positions (§13) and prefix keys (§14), on an execution space;
// its host images, random batches mixing device, tier and commit commands, and
// the check of one run against the oracle: codes, commit positions, the pool,
// the host tier, both caches and the state rows byte for byte. Used by
// TestHostTier.hpp, TestSpeculative.hpp and the CUDA capture tests. Not a
// feature header (the name does not start with "Test").

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include "common/batch_fixture.hpp"
#include <test_common/oracle.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace statexfer::test {

struct TierOptions {
  std::int64_t capacity = 8;
  std::int64_t rows = 0;       // 0: capacity + 1 + 2 * capacity + 2
  std::int64_t host_rows = 6;  // 0: no host tier (operations 2..4 are unknown)
  std::int64_t page_tokens = 4;
  std::int64_t width = 4;
  std::int64_t cache_pages = 24;
  bool trailing = true;
  std::vector<std::string> excluded;
  int positions = 0;  // speculative positions K (0: no commits, operation 5 unknown)
  statexfer::CommitMove move = statexfer::CommitMove::remap;
  bool keys = false;                                                            // the layout has a prefix_key region
  statexfer::CommandPlacement placement = statexfer::CommandPlacement::device;  // where the command arrays live
  statexfer::TransferOptions options;                                           // the kernels' designs
};

/// The commands of one batch as host arrays of the capacity.
struct TierCommands {
  std::vector<std::int64_t> slot, src, dst, end, key;
  std::vector<std::int32_t> op;
  std::int32_t count = 0;
  explicit TierCommands(std::int64_t c = 0)
      : slot(static_cast<std::size_t>(c), -1),
        src(static_cast<std::size_t>(c), -1),
        dst(static_cast<std::size_t>(c), -1),
        end(static_cast<std::size_t>(c), -1),
        key(static_cast<std::size_t>(c), 0),
        op(static_cast<std::size_t>(c), 0) {}
  void set(std::size_t i, std::int64_t s, std::int64_t from, std::int64_t to, std::int32_t o, std::int64_t e) {
    slot[i] = s, src[i] = from, dst[i] = to, op[i] = o, end[i] = e;
  }
};

template <class Exec>
struct TierRig {
  using cache_view = typename statexfer::PageBinding<Exec>::cache_view;

  TierOptions opt;
  std::int64_t rows = 0;
  statexfer::StatePool<Exec> pool;
  statexfer::HostTier<Exec> host;
  statexfer::StateCommands<Exec> commands;
  statexfer::PageTable<Exec> tables, trailing_tables;
  statexfer::StateRows<Exec> state_rows;
  statexfer::RequestState<Exec> requests;
  cache_view kv_cache, draft_cache;
  Kokkos::View<std::int32_t*, typename Exec::memory_space> accepted;
  std::unique_ptr<statexfer::PreparedStateTransfer<Exec>> transfer;

  // Host images: uploaded before each run, and the expected memory after it.
  std::vector<std::uint8_t> pool_h, host_h, kv_h, draft_h;
  std::vector<std::int32_t> tables_h, trailing_h, accepted_h;
  std::vector<std::int64_t> state_h, consumed_h;
  std::int64_t slots_capacity = 0, pages_capacity = 0, host_capacity = 0;

  statexfer::StateLayout layout() const { return opt.keys ? keyed_test_layout() : test_layout(); }

  explicit TierRig(TierOptions o, const Exec& exec = Exec()) : opt(std::move(o)) {
    const std::int64_t c = opt.capacity, w = opt.width, p = opt.cache_pages;
    // Null row, live rows, K position rows a slot, snapshot rows.
    rows = opt.rows > 0 ? opt.rows : 3 * c + 3 + c * opt.positions;
    pool = statexfer::StatePool<Exec>(layout(), rows, p);
    if (opt.host_rows > 0) host = statexfer::HostTier<Exec>(layout(), opt.host_rows);
    commands = statexfer::StateCommands<Exec>::allocate(c, opt.placement);
    tables = statexfer::PageTable<Exec>("tables", c, w);
    trailing_tables = statexfer::PageTable<Exec>("trailing_tables", c, w);
    state_rows = statexfer::StateRows<Exec>("state_rows", c, 8);
    requests = statexfer::RequestState<Exec>::allocate(c);
    kv_cache = cache_view("kv_cache", p, kv_bytes);
    draft_cache = cache_view("draft_cache", p, draft_bytes / 2);
    pool_h.assign(static_cast<std::size_t>(rows * test_row_bytes), 0);
    host_h.assign(static_cast<std::size_t>(opt.host_rows * test_row_bytes), 0);
    kv_h.assign(static_cast<std::size_t>(p * kv_bytes), 0);
    draft_h.assign(static_cast<std::size_t>(p * draft_bytes / 2), 0);
    tables_h.assign(static_cast<std::size_t>(c * w), 0);
    trailing_h.assign(static_cast<std::size_t>(c * w), 0);
    state_h.assign(static_cast<std::size_t>(c * 8), 0);
    consumed_h.assign(static_cast<std::size_t>(c), 0);
    accepted_h.assign(static_cast<std::size_t>(c), 0);
    for (std::int64_t s = 0; s < c; ++s) {
      state_h[s * 8] = 1 + s;
      for (int j = 1; j <= opt.positions; ++j) state_h[s * 8 + j] = c + 1 + s * opt.positions + (j - 1);
    }
    slots_capacity = rows, pages_capacity = p, host_capacity = opt.host_rows;

    auto config = fixture_config<Exec>(opt.page_tokens, state_rows, requests, kv_cache, draft_cache, opt.trailing,
                                       trailing_tables, opt.excluded);
    config.host_tier = host;
    config.options = opt.options;
    if (opt.positions > 0) {
      accepted = Kokkos::View<std::int32_t*, typename Exec::memory_space>("accepted", c);
      config.speculative.positions = opt.positions;
      config.speculative.accepted = accepted;
      config.speculative.move = opt.move;
    }
    transfer = std::make_unique<statexfer::PreparedStateTransfer<Exec>>(pool, commands, tables, config);
    transfer->prepare(exec);
  }

  static void put_consumed(std::vector<std::uint8_t>& image, std::int64_t row, std::int64_t value) {
    std::memcpy(image.data() + row * test_row_bytes + off_consumed, &value, sizeof(value));
  }
  static std::int64_t consumed_of(const std::vector<std::uint8_t>& image, std::int64_t row) {
    std::int64_t value;
    std::memcpy(&value, image.data() + row * test_row_bytes + off_consumed, sizeof(value));
    return value;
  }
  static void put_key(std::vector<std::uint8_t>& image, std::int64_t row, std::int64_t value) {
    std::memcpy(image.data() + row * test_row_bytes + off_key, &value, sizeof(value));
  }
  static std::int64_t key_of(const std::vector<std::uint8_t>& image, std::int64_t row) {
    std::int64_t value;
    std::memcpy(&value, image.data() + row * test_row_bytes + off_key, sizeof(value));
    return value;
  }

  /// Upload every host image (memory and commands); errors get a sentinel (77)
  /// that validate() must overwrite.
  void upload_all(const TierCommands& k) {
    upload(pool.backing(), pool_h);
    if (opt.host_rows > 0) {
      upload(host.backing(), host_h);
      upload(host.capacity(), std::vector<std::int64_t>{host_capacity});
    }
    upload(kv_cache, kv_h);
    upload(draft_cache, draft_h);
    upload(tables, tables_h);
    upload(trailing_tables, trailing_h);
    upload(state_rows, state_h);
    upload(requests.consumed_tokens, consumed_h);
    upload(pool.memory_capacity(), std::vector<std::int64_t>{slots_capacity, pages_capacity});
    statexfer::CommandBatch<Exec> batch(opt.capacity);
    for (std::int64_t i = 0; i < opt.capacity; ++i) {
      const auto at = static_cast<std::size_t>(i);
      batch.set(i, {k.slot[at], k.src[at], k.dst[at], k.op[at], k.end[at], k.key[at]});
    }
    batch.set_num_ops(k.count);
    commands.upload(transfer->execution_space_instance(), batch);
    transfer->execution_space_instance().fence();
    upload(commands.errors, std::vector<std::int32_t>(static_cast<std::size_t>(opt.capacity), 77));
    upload(commands.commit_positions, std::vector<std::int32_t>(static_cast<std::size_t>(opt.capacity), 77));
    if (opt.positions > 0) upload(accepted, accepted_h);
  }

  OracleGeometry geometry() const {
    const statexfer::StateLayout layout = this->layout();
    OracleGeometry g;
    g.positions = opt.positions;
    g.remap = opt.move == statexfer::CommitMove::remap;
    g.key_offset = opt.keys ? off_key : -1;
    g.capacity = opt.capacity;
    g.rows = rows;
    g.row_bytes = test_row_bytes;
    g.page_tokens = opt.page_tokens;
    g.width = opt.width;
    g.consumed_offset = off_consumed;
    g.cache_pages = opt.cache_pages;
    g.host_rows = opt.host_rows;
    for (const auto& e : opt.excluded) {
      const auto& r = layout.region(e);
      g.excluded.emplace_back(r.offset, r.offset + r.nbytes);
    }
    const auto excluded = [&](const char* n) {
      return std::find(opt.excluded.begin(), opt.excluded.end(), n) != opt.excluded.end();
    };
    if (!excluded("kv")) g.page_bindings.push_back({off_kv, kv_bytes});
    if (opt.trailing && !excluded("draft")) g.trailing_bindings.push_back({off_draft, draft_bytes});
    return g;
  }

  /// The oracle on the host images: codes, and the images updated to the expected memory.
  /// `raised`: codes another rank raised between the calls (0: none), which apply() obeys.
  std::vector<std::int32_t> oracle_run(const TierCommands& k, const std::vector<std::int32_t>* raised = nullptr) {
    const OracleGeometry g = geometry();
    OracleMemory m;
    m.pool = pool_h.data();
    m.host = host_h.data();
    m.host_capacity = host_capacity;
    if (!g.page_bindings.empty()) m.caches.push_back(kv_h.data());
    if (!g.trailing_bindings.empty()) m.caches.push_back(draft_h.data());
    m.tables = tables_h.data();
    m.trailing_tables = trailing_h.data();
    m.state_rows = state_h.data();
    m.accepted = accepted_h.data();
    m.request_consumed = consumed_h.data();
    m.memory_capacity[0] = slots_capacity;
    m.memory_capacity[1] = pages_capacity;
    const OracleCommands cmd{k.slot.data(), k.src.data(), k.dst.data(), k.op.data(),
                             k.end.data(),  k.count,      k.key.data()};
    const ContractOracle oracle(g);
    std::vector<std::int32_t> codes = oracle.validate(cmd, m, &oracle_positions);
    if (raised != nullptr)
      for (std::size_t r = 0; r < codes.size(); ++r)
        if ((*raised)[r] != 0) codes[r] = (*raised)[r];
    oracle.apply(cmd, codes, m);
    return codes;
  }

  /// commit_positions as the oracle's last validate() gave them.
  std::vector<std::int32_t> oracle_positions;

  /// Runs `k` on the device (validate + apply, or validate_and_apply when
  /// `fused`) and on the oracle; the device's codes and bytes of the pool, the
  /// host tier and both caches must equal the oracle's. The host images are then
  /// the memory after the batch, so runs chain. Returns the codes.
  std::vector<std::int32_t> run_and_check(const TierCommands& k, bool fused, const std::string& what) {
    upload_all(k);
    const Exec& exec = transfer->execution_space_instance();
    if (fused) {
      transfer->validate_and_apply(exec);
    } else {
      transfer->validate(exec);
      transfer->apply(exec);
    }
    exec.fence();
    return check(k, what);
  }

  /// Runs `k` as tensor-parallel ranks do: validate(), then every `every`-th
  /// row whose code is 0 raised to 8 (another rank refused it), then apply().
  /// The raised rows write nothing: the oracle applies the raised codes.
  std::vector<std::int32_t> run_raised_and_check(const TierCommands& k, int every, const std::string& what) {
    upload_all(k);
    const Exec& exec = transfer->execution_space_instance();
    transfer->validate(exec);
    exec.fence();
    std::vector<std::int32_t> codes = download(commands.errors), raised(codes.size(), 0);
    for (std::size_t r = 0; r < codes.size(); ++r)
      if (codes[r] == 0 && static_cast<std::int64_t>(r) < k.count && r % static_cast<std::size_t>(every) == 0)
        codes[r] = raised[r] = 8;
    upload(commands.errors, codes);
    transfer->apply(exec);
    exec.fence();
    return check(k, what, &raised);
  }

  /// After the device ran `k` (and was fenced): the oracle on the host images
  /// must give the device's codes and bytes; the images become the expected
  /// memory. Returns the codes.
  std::vector<std::int32_t> check(const TierCommands& k, const std::string& what,
                                  const std::vector<std::int32_t>* raised = nullptr) {
    const std::vector<std::int32_t> codes = oracle_run(k, raised);
    EXPECT_EQ(download(commands.errors), codes) << what;
    // Without commits nothing writes commit_positions: the sentinel stays.
    if (opt.positions > 0) {
      EXPECT_EQ(download(commands.commit_positions), oracle_positions) << what;
    }
    EXPECT_EQ(download(state_rows), state_h) << what << " (state rows)";
    EXPECT_TRUE(same_bytes(download(pool.backing()), pool_h, "pool", test_row_bytes)) << what;
    if (opt.host_rows > 0) {
      EXPECT_TRUE(same_bytes(download(host.backing()), host_h, "host tier", test_row_bytes)) << what;
    }
    EXPECT_TRUE(same_bytes(download(kv_cache), kv_h, "kv_cache", kv_bytes)) << what;
    EXPECT_TRUE(same_bytes(download(draft_cache), draft_h, "draft_cache", draft_bytes / 2)) << what;
    return codes;
  }
};

using TierRng = std::mt19937_64;

inline std::int64_t tier_uniform(TierRng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}
inline double tier_unit(TierRng& rng) { return std::uniform_real_distribution<double>(0, 1)(rng); }

/// New random memory for the rig (bytes, consumed endpoints, tables, state rows,
/// capacities; with positions their rows and accepted counts; with keys the
/// rows' keys) and a random batch mixing snapshots, restores, resets, offloads,
/// onloads, restores from the host tier, commits and noise. `collide` draws
/// rows and pages from few values so that conflicts (code 4) are common.
template <class Exec>
TierCommands random_tier_batch(TierRng& rng, TierRig<Exec>& rig, bool collide) {
  const std::int64_t C = rig.opt.capacity, N = rig.rows, H = rig.opt.host_rows, W = rig.opt.width;
  const std::int64_t PT = rig.opt.page_tokens, P = rig.opt.cache_pages, K = rig.opt.positions;
  const std::int64_t first_snapshot = C + 1 + C * K;
  const std::int64_t max_end = W * PT + 1;
  for (auto* image : {&rig.pool_h, &rig.host_h, &rig.kv_h, &rig.draft_h})
    for (auto& b : *image) b = static_cast<std::uint8_t>(rng());
  auto endpoint = [&] {
    const double u = tier_unit(rng);
    return u < 0.03 ? std::int64_t(-1) : u < 0.08 ? W * PT + tier_uniform(rng, 1, 5) : tier_uniform(rng, 0, max_end);
  };
  for (std::int64_t r = 0; r < N; ++r) rig.put_consumed(rig.pool_h, r, endpoint());
  for (std::int64_t r = 0; r < H; ++r) rig.put_consumed(rig.host_h, r, endpoint());
  for (auto* table : {&rig.tables_h, &rig.trailing_h})
    for (auto& e : *table) {
      const double u = tier_unit(rng);
      e = static_cast<std::int32_t>(u < 0.04   ? -1
                                    : u < 0.07 ? P + tier_uniform(rng, 0, 2)
                                               : tier_uniform(rng, 0, collide ? 2 : P - 1));
    }
  std::vector<std::int64_t> live(static_cast<std::size_t>(C));
  std::iota(live.begin(), live.end(), 1);
  std::shuffle(live.begin(), live.end(), rng);
  for (std::int64_t s = 0; s < C; ++s) {
    rig.state_h[s * 8] = tier_unit(rng) < 0.03 ? tier_uniform(rng, -1, N + 1) : live[static_cast<std::size_t>(s)];
    rig.consumed_h[static_cast<std::size_t>(s)] = endpoint();
  }
  // Position rows (§13): mostly the slot's own, at the endpoints a verify from
  // the live row's endpoint leaves; sometimes stale, shared, the live row, the
  // null row or past the pool. Accepted counts mostly in range.
  std::vector<std::int64_t> positions(static_cast<std::size_t>(C * K));
  std::iota(positions.begin(), positions.end(), C + 1);
  std::shuffle(positions.begin(), positions.end(), rng);
  for (std::int64_t s = 0; s < C && K > 0; ++s) {
    const std::int64_t state = rig.state_h[s * 8];
    const std::int64_t base = state > 0 && state < N ? rig.consumed_of(rig.pool_h, state) : 1;
    for (std::int64_t j = 1; j <= K; ++j) {
      const double u = tier_unit(rng);
      std::int64_t row = positions[static_cast<std::size_t>(s * K + j - 1)];
      if (u < 0.03)
        row = state;
      else if (u < 0.05)
        row = tier_uniform(rng, -1, N + 2);
      else if (u < 0.08 || (collide && u < 0.2))
        row = tier_uniform(rng, collide ? first_snapshot : 1, collide ? first_snapshot + 1 : N - 1);
      rig.state_h[s * 8 + j] = row;
      if (row > 0 && row < N && row != state)
        rig.put_consumed(rig.pool_h, row, tier_unit(rng) < 0.9 ? base + j : base + j - 1);
    }
    const double u = tier_unit(rng);
    rig.accepted_h[static_cast<std::size_t>(s)] = static_cast<std::int32_t>(u < 0.9    ? tier_uniform(rng, 0, K)
                                                                            : u < 0.95 ? -tier_uniform(rng, 1, 3)
                                                                                       : K + tier_uniform(rng, 1, 9));
  }
  // Prefix keys (§14): few values, so that equal keys are common and a differing one is a real check.
  if (rig.opt.keys) {
    for (std::int64_t r = 0; r < N; ++r) rig.put_key(rig.pool_h, r, tier_uniform(rng, 0, 3));
    for (std::int64_t r = 0; r < H; ++r) rig.put_key(rig.host_h, r, tier_uniform(rng, 0, 3));
  }
  auto capacity = [&](std::int64_t real) -> std::int64_t {
    const double u = tier_unit(rng);
    return u < 0.7    ? real
           : u < 0.82 ? std::max<std::int64_t>(real - tier_uniform(rng, 1, 3), 0)
           : u < 0.94 ? real + tier_uniform(rng, 1, 50)
                      : std::numeric_limits<std::int64_t>::max();
  };
  rig.slots_capacity = capacity(N);
  rig.pages_capacity = capacity(P);
  rig.host_capacity = H > 0 ? capacity(H) : 0;

  TierCommands k(C);
  const double u = tier_unit(rng);
  k.count = static_cast<std::int32_t>(u < 0.5 ? C : u < 0.96 ? tier_uniform(rng, 0, C) : C + 1);
  auto snap = [&] {
    return collide ? first_snapshot + tier_uniform(rng, 0, 1) : tier_uniform(rng, first_snapshot, N - 1);
  };
  auto host_row = [&] {
    if (H == 0) return tier_uniform(rng, 1, 4);
    return collide ? 1 + tier_uniform(rng, 0, std::min<std::int64_t>(H - 2, 1)) : tier_uniform(rng, 1, H - 1);
  };
  auto host_consumed = [&](std::int64_t h) { return h < H ? rig.consumed_of(rig.host_h, h) : 3; };
  std::vector<std::int64_t> slots(static_cast<std::size_t>(C));
  std::iota(slots.begin(), slots.end(), 0);
  std::shuffle(slots.begin(), slots.end(), rng);
  for (std::int64_t i = 0; i < C; ++i) {
    const std::int64_t slot = collide && tier_unit(rng) < 0.3 ? tier_uniform(rng, 0, C - 1) : slots[i];
    const std::int64_t state = rig.state_h[slot * 8];
    const auto at = static_cast<std::size_t>(i);
    const double kind = tier_unit(rng);
    if (kind < 0.18) {  // snapshot
      k.set(at, slot, state, snap(), 0, rig.consumed_h[static_cast<std::size_t>(slot)]);
    } else if (kind < 0.32) {  // restore
      const std::int64_t s = snap();
      k.set(at, slot, s, state, 0, rig.consumed_of(rig.pool_h, s));
    } else if (kind < 0.4) {  // reset
      k.set(at, slot, -1, state, 1, 0);
    } else if (kind < 0.56) {  // offload a snapshot row (or the live row) to the host tier
      const std::int64_t s = tier_unit(rng) < 0.8 ? snap() : state;
      k.set(at, -1, s, host_row(), 2, s > 0 && s < N ? rig.consumed_of(rig.pool_h, s) : 1);
    } else if (kind < 0.72) {  // onload into a snapshot row
      const std::int64_t h = host_row();
      k.set(at, -1, h, snap(), 3, host_consumed(h));
    } else if (kind < 0.9) {  // restore from the host tier
      const std::int64_t h = host_row();
      k.set(at, slot, h, state, 4, host_consumed(h));
    } else if (kind < 0.97 && K > 0) {  // commit, at the live row's endpoint (sometimes naming rows)
      const std::int64_t base = state > 0 && state < N ? rig.consumed_of(rig.pool_h, state) : 1;
      const double v = tier_unit(rng);
      k.set(at, slot, v < 0.04 ? state : -1, v > 0.96 ? state : -1, 5, base);
    } else {  // noise: any operation, rows of either tier or out of range
      k.set(at, tier_uniform(rng, -2, C), tier_uniform(rng, -2, std::max(N, H) + 2),
            tier_uniform(rng, -2, std::max(N, H) + 2), static_cast<std::int32_t>(tier_uniform(rng, -1, 6)),
            tier_uniform(rng, -1, max_end + 1));
    }
    if (tier_unit(rng) < 0.03 && k.op[at] >= 2 && k.op[at] <= 3) k.slot[at] = tier_uniform(rng, 0, C - 1);
    if (tier_unit(rng) < 0.03) k.end[at] += 1;
    // The key of the row it reads (in its tier), mostly; a snapshot stamps any.
    if (rig.opt.keys) {
      const std::int64_t from = k.src[at];
      const bool host = k.op[at] == 3 || k.op[at] == 4;
      const bool row = from > 0 && from < (host ? H : N);
      k.key[at] =
          row && tier_unit(rng) < 0.85 ? rig.key_of(host ? rig.host_h : rig.pool_h, from) : tier_uniform(rng, 0, 3);
    }
  }
  return k;
}

}  // namespace statexfer::test

#endif
