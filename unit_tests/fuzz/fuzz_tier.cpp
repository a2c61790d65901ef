// libFuzzer target: batches mixing device commands with host tier moves
// (docs/CONTRACT.md §12: offload, onload, restore from the host tier) and
// commits of speculative decoding (§13) on fixed transfers with a host tier on
// Kokkos::Serial (capacity 4 with a trailing binding, an excluded region and
// remapping commits; capacity 8 with prefix keys (§14) and copying commits of
// up to 7 positions; capacity 128, the sorted validation, with keys and
// remapping commits), held against the contract's oracle
// (test_common/oracle.hpp): codes, commit positions, the pool, the host tier,
// both caches and the state rows byte for byte; any difference aborts, and
// ASan, UBSan and the Kokkos bounds checks catch any access outside the Views.
//
// The input drives, through FuzzedDataProvider: the transfer; the capacities
// (device rows, pages, host rows: exact, reduced, larger than the Views);
// edits of the consumed tokens and keys of device and host rows, the state
// rows (live and position columns), the accepted counts and the tables; then
// each command row as a well-formed snapshot, restore, reset, offload, onload,
// restore from host or commit (rows in or near range, so batches apply and
// collide) or as raw values, with the key of the row it reads or another;
// then num_ops.

#include <fuzzer/FuzzedDataProvider.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <test_common/oracle.hpp>

namespace {

namespace ft = statexfer::test;
using Exec = Kokkos::Serial;
using statexfer::DType;

// A transfer with a host tier and its host images (what the oracle reads).
struct Rig {
  std::int64_t C, K, N, H, PT, W, P, row_bytes = 64;
  bool keys;
  statexfer::StatePool<Exec> pool;
  statexfer::HostTier<Exec> host;
  statexfer::StateCommands<Exec> commands;
  statexfer::PageTable<Exec> tables, trailing_tables;
  statexfer::StateRows<Exec> state_rows;
  statexfer::RequestState<Exec> requests;
  statexfer::PageBinding<Exec>::cache_view kv, draft;
  Kokkos::View<std::int32_t*, Exec::memory_space> accepted;
  std::unique_ptr<statexfer::PreparedStateTransfer<Exec>> transfer;
  ft::OracleGeometry geometry;

  // `k` positions (commits by `move`), prefix keys at byte 8 when `with_keys`.
  Rig(std::int64_t c, std::int64_t h, bool trailing, int k, statexfer::CommitMove move, bool with_keys)
      : C(c), K(k), N(3 * c + 3 + c * k), H(h), PT(4), W(3), P(2 * c + 4), keys(with_keys) {
    // consumed_tokens, (prefix_key,) a state region, kv page (12 bytes), draft (2 x 6 bytes), excluded meta (4 bytes)
    const statexfer::StateLayout layout = keys ? statexfer::StateLayout({{"consumed_tokens", 0, 8, DType::int64},
                                                                         {"prefix_key", 8, 8, DType::int64},
                                                                         {"ssm", 16, 20, DType::uint8},
                                                                         {"kv", 36, 12, DType::uint8},
                                                                         {"draft", 48, 12, DType::uint8},
                                                                         {"meta", 60, 4, DType::uint8}},
                                                                        row_bytes)
                                               : statexfer::StateLayout({{"consumed_tokens", 0, 8, DType::int64},
                                                                         {"ssm", 8, 28, DType::uint8},
                                                                         {"kv", 36, 12, DType::uint8},
                                                                         {"draft", 48, 12, DType::uint8},
                                                                         {"meta", 60, 4, DType::uint8}},
                                                                        row_bytes);
    pool = statexfer::StatePool<Exec>(layout, N, P);
    host = statexfer::HostTier<Exec>(layout, H);
    commands = statexfer::StateCommands<Exec>::allocate(C);
    tables = statexfer::PageTable<Exec>("tables", C, W);
    trailing_tables = statexfer::PageTable<Exec>("trailing_tables", C, W);
    state_rows = statexfer::StateRows<Exec>("state_rows", C, 8);
    requests = statexfer::RequestState<Exec>::allocate(C);
    kv = decltype(kv)("kv", P, 12);
    draft = decltype(draft)("draft", P, 6);
    statexfer::TransferConfig<Exec> config;
    config.pages = {{"kv", kv}};
    config.page_tokens = PT;
    config.state_rows = state_rows;
    config.requests = requests;
    if (trailing) {
      config.trailing_pages = {{"draft", draft}};
      config.trailing_tables = trailing_tables;
    }
    config.excluded_regions = {"meta"};
    config.host_tier = host;
    if (K > 0) {
      accepted = decltype(accepted)("accepted", C);
      config.speculative = {static_cast<int>(K), accepted, move};
    }
    transfer = std::make_unique<statexfer::PreparedStateTransfer<Exec>>(pool, commands, tables, config);
    transfer->prepare();
    geometry.capacity = C, geometry.rows = N, geometry.row_bytes = row_bytes, geometry.page_tokens = PT;
    geometry.width = W, geometry.consumed_offset = 0, geometry.cache_pages = P, geometry.host_rows = H;
    geometry.positions = K, geometry.remap = move == statexfer::CommitMove::remap;
    geometry.key_offset = keys ? 8 : -1;
    geometry.excluded = {{60, 64}};
    geometry.page_bindings = {{36, 12}};
    if (trailing) geometry.trailing_bindings = {{48, 12}};
  }
};

std::vector<std::unique_ptr<Rig>>& rigs() {
  static std::vector<std::unique_ptr<Rig>> all;
  return all;
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_tier: %s\n", what.c_str());
  std::abort();
}

// Serial Views live in host memory: copies through flat unmanaged Views.
template <class View, class T>
void put(const View& v, const std::vector<T>& h) {
  if (h.size() != v.span()) fail("put: sizes differ");
  Kokkos::deep_copy(
      Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(reinterpret_cast<T*>(v.data()),
                                                                                   v.span()),
      Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(h.data(), h.size()));
}
template <class T, class View>
std::vector<T> get(const View& v) {
  std::vector<T> h(v.span());
  Kokkos::deep_copy(
      Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(h.data(), h.size()),
      Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(v.data(), v.span()));
  return h;
}

std::int64_t near(FuzzedDataProvider& in, std::int64_t lo, std::int64_t hi) {
  return in.ConsumeIntegralInRange<std::int64_t>(lo, hi);
}

void set_consumed(std::vector<std::uint8_t>& image, std::int64_t row_bytes, std::int64_t row, std::int64_t v) {
  std::memcpy(image.data() + row * row_bytes, &v, 8);
}
std::int64_t consumed(const std::vector<std::uint8_t>& image, std::int64_t row_bytes, std::int64_t row) {
  std::int64_t v;
  std::memcpy(&v, image.data() + row * row_bytes, 8);
  return v;
}
// The prefix key at byte 8 of a keyed rig's rows.
void set_key(std::vector<std::uint8_t>& image, std::int64_t row_bytes, std::int64_t row, std::int64_t v) {
  std::memcpy(image.data() + row * row_bytes + 8, &v, 8);
}
std::int64_t key(const std::vector<std::uint8_t>& image, std::int64_t row_bytes, std::int64_t row) {
  std::int64_t v;
  std::memcpy(&v, image.data() + row * row_bytes + 8, 8);
  return v;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Kokkos::initialize();
  rigs();  // constructed before the handler is registered, so destroyed after it runs
  std::atexit([] {
    rigs().clear();
    Kokkos::finalize();
  });
  using statexfer::CommitMove;
  rigs().push_back(std::make_unique<Rig>(4, 5, true, 3, CommitMove::remap, false));
  rigs().push_back(std::make_unique<Rig>(8, 6, true, 7, CommitMove::copy, true));
  rigs().push_back(std::make_unique<Rig>(128, 40, false, 2, CommitMove::remap, true));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  Rig& rig = *rigs()[in.ConsumeIntegralInRange<std::size_t>(0, rigs().size() - 1)];
  const std::int64_t C = rig.C, K = rig.K, N = rig.N, H = rig.H, RB = rig.row_bytes, end_max = rig.W * rig.PT + 2;

  // Memory: a byte pattern from the input's seed, consumed tokens 0..end_max.
  const std::uint32_t seed = in.ConsumeIntegral<std::uint32_t>();
  std::vector<std::uint8_t> pool_h(static_cast<std::size_t>(N * RB)), host_h(static_cast<std::size_t>(H * RB));
  std::vector<std::uint8_t> kv_h(static_cast<std::size_t>(rig.P * 12)), draft_h(static_cast<std::size_t>(rig.P * 6));
  std::uint32_t x = seed | 1;
  for (auto* image : {&pool_h, &host_h, &kv_h, &draft_h})
    for (auto& b : *image) b = static_cast<std::uint8_t>((x = x * 1664525u + 1013904223u) >> 24);
  for (std::int64_t r = 0; r < N; ++r) set_consumed(pool_h, RB, r, 1 + (r * 7 + seed) % end_max);
  for (std::int64_t r = 0; r < H; ++r) set_consumed(host_h, RB, r, 1 + (r * 5 + seed) % end_max);
  std::vector<std::int32_t> tables_h(static_cast<std::size_t>(C * rig.W)), trailing_h(tables_h.size());
  for (std::size_t i = 0; i < tables_h.size(); ++i) {
    tables_h[i] = static_cast<std::int32_t>(i % static_cast<std::size_t>(rig.P));
    trailing_h[i] = static_cast<std::int32_t>(rig.P - 1 - static_cast<std::int64_t>(i) % rig.P);
  }
  std::vector<std::int64_t> state_h(static_cast<std::size_t>(C * 8), 0), requested_h(static_cast<std::size_t>(C), 3);
  // Slot s: live row 1 + s; position j in row C + 1 + s K + j - 1 at the live row's endpoint + j.
  std::vector<std::int32_t> accepted_h(static_cast<std::size_t>(C), 0);
  for (std::int64_t s = 0; s < C; ++s) {
    state_h[static_cast<std::size_t>(s * 8)] = 1 + s;
    for (std::int64_t j = 1; j <= K; ++j) {
      const std::int64_t row = C + 1 + s * K + j - 1;
      state_h[static_cast<std::size_t>(s * 8 + j)] = row;
      set_consumed(pool_h, RB, row, consumed(pool_h, RB, 1 + s) + j);
    }
    accepted_h[static_cast<std::size_t>(s)] = static_cast<std::int32_t>((seed + s) % (K + 1));
  }
  if (rig.keys)
    for (auto* image : {&pool_h, &host_h})
      for (std::int64_t r = 0; r < static_cast<std::int64_t>(image->size()) / RB; ++r)
        set_key(*image, RB, r, (r + seed) % 3);
  std::int64_t slots_cap = N, pages_cap = rig.P, host_cap = H;
  switch (in.ConsumeIntegralInRange<int>(0, 5)) {
    case 0: host_cap = near(in, -1, H + 3); break;
    case 1: slots_cap = near(in, -1, N + 3); break;
    case 2: pages_cap = near(in, -1, rig.P + 3); break;
    case 3: host_cap = in.ConsumeIntegral<std::int64_t>(); break;
    default: break;
  }
  const int edits = in.ConsumeIntegralInRange<int>(0, 8);
  for (int e = 0; e < edits; ++e) {
    switch (in.ConsumeIntegralInRange<int>(0, 7)) {
      case 5: accepted_h[static_cast<std::size_t>(near(in, 0, C - 1))] = in.ConsumeIntegral<std::int32_t>(); break;
      case 6: state_h[static_cast<std::size_t>(near(in, 0, C - 1) * 8 + near(in, 1, 7))] = near(in, -1, N + 1); break;
      case 7:
        if (rig.keys) set_key(pool_h, RB, near(in, 0, N - 1), in.ConsumeIntegral<std::int64_t>());
        break;
      case 0: set_consumed(host_h, RB, near(in, 0, H - 1), near(in, -1, end_max + 40)); break;
      case 1: set_consumed(pool_h, RB, near(in, 0, N - 1), near(in, -1, end_max + 40)); break;
      case 2: state_h[static_cast<std::size_t>(near(in, 0, C - 1) * 8)] = near(in, -1, N + 1); break;
      case 3:
        tables_h[static_cast<std::size_t>(near(in, 0, C * rig.W - 1))] =
            in.ConsumeIntegralInRange<std::int32_t>(-2, 40);
        break;
      default:
        trailing_h[static_cast<std::size_t>(near(in, 0, C * rig.W - 1))] =
            in.ConsumeIntegralInRange<std::int32_t>(-2, 40);
    }
  }

  std::vector<std::int64_t> slot(static_cast<std::size_t>(C), -1), src(slot), dst(slot), end(slot), keys(slot);
  std::vector<std::int32_t> op(static_cast<std::size_t>(C), 0);
  const std::int64_t written = near(in, 0, C);
  for (std::int64_t i = 0; i < written; ++i) {
    const auto at = static_cast<std::size_t>(i);
    const std::int64_t s = near(in, 0, C - 1), live = state_h[static_cast<std::size_t>(s * 8)];
    const std::int64_t h = near(in, 0, H), d = near(in, 0, N);
    const auto pool_end = [&](std::int64_t r) { return r >= 0 && r < N ? consumed(pool_h, RB, r) : 1; };
    const auto host_end = [&](std::int64_t r) { return r >= 0 && r < H ? consumed(host_h, RB, r) : 1; };
    switch (in.ConsumeIntegralInRange<int>(0, 8)) {
      case 8: slot[at] = s, src[at] = -1, dst[at] = -1, op[at] = 5, end[at] = pool_end(live); break;
      case 0:
        slot[at] = s, src[at] = live, dst[at] = d, op[at] = 0, end[at] = requested_h[static_cast<std::size_t>(s)];
        break;
      case 1: slot[at] = s, src[at] = d, dst[at] = live, op[at] = 0, end[at] = pool_end(d); break;
      case 2: slot[at] = s, src[at] = -1, dst[at] = live, op[at] = 1, end[at] = 0; break;
      case 3: slot[at] = -1, src[at] = d, dst[at] = h, op[at] = 2, end[at] = pool_end(d); break;
      case 4: slot[at] = -1, src[at] = h, dst[at] = d, op[at] = 3, end[at] = host_end(h); break;
      case 5: slot[at] = s, src[at] = h, dst[at] = live, op[at] = 4, end[at] = host_end(h); break;
      case 6:
        slot[at] = near(in, -2, C), src[at] = near(in, -2, N + 1), dst[at] = near(in, -2, N + 1);
        op[at] = in.ConsumeIntegralInRange<std::int32_t>(-1, 6), end[at] = near(in, -1, end_max + 1);
        break;
      default:
        slot[at] = in.ConsumeIntegral<std::int64_t>(), src[at] = in.ConsumeIntegral<std::int64_t>();
        dst[at] = in.ConsumeIntegral<std::int64_t>(), op[at] = in.ConsumeIntegral<std::int32_t>();
        end[at] = in.ConsumeIntegral<std::int64_t>();
    }
    // The key of the row it reads (in its tier), or another.
    const bool host_src = op[at] == 3 || op[at] == 4;
    const bool readable = src[at] >= 0 && src[at] < (host_src ? H : N);
    keys[at] =
        rig.keys && readable && in.ConsumeBool() ? key(host_src ? host_h : pool_h, RB, src[at]) : near(in, -1, 3);
  }
  std::int32_t count = static_cast<std::int32_t>(written);
  if (in.ConsumeIntegralInRange<int>(0, 7) == 7) count = in.ConsumeIntegral<std::int32_t>();

  put(rig.pool.backing(), pool_h);
  put(rig.host.backing(), host_h);
  put(rig.kv, kv_h);
  put(rig.draft, draft_h);
  put(rig.tables, tables_h);
  put(rig.trailing_tables, trailing_h);
  put(rig.state_rows, state_h);
  put(rig.requests.consumed_tokens, requested_h);
  put(rig.pool.memory_capacity(), std::vector<std::int64_t>{slots_cap, pages_cap});
  put(rig.host.capacity(), std::vector<std::int64_t>{host_cap});
  put(rig.commands.request_slots, slot);
  put(rig.commands.source_slots, src);
  put(rig.commands.destination_slots, dst);
  put(rig.commands.operation, op);
  put(rig.commands.expected_consumed, end);
  put(rig.commands.prefix_keys, keys);
  put(rig.commands.num_ops, std::vector<std::int32_t>{count});
  if (K > 0) put(rig.accepted, accepted_h);
  if (in.ConsumeBool()) {
    rig.transfer->validate_and_apply();
  } else {
    rig.transfer->validate();
    rig.transfer->apply();
  }
  Kokkos::fence();

  ft::OracleMemory m;
  m.pool = pool_h.data();
  m.host = host_h.data();
  m.host_capacity = host_cap;
  m.caches = {kv_h.data()};
  if (!rig.geometry.trailing_bindings.empty()) m.caches.push_back(draft_h.data());
  m.tables = tables_h.data();
  m.trailing_tables = trailing_h.data();
  m.state_rows = state_h.data();
  m.accepted = accepted_h.data();
  m.request_consumed = requested_h.data();
  m.memory_capacity[0] = slots_cap;
  m.memory_capacity[1] = pages_cap;
  const ft::OracleCommands k{slot.data(), src.data(), dst.data(), op.data(), end.data(), count, keys.data()};
  const ft::ContractOracle oracle(rig.geometry);
  std::vector<std::int32_t> positions;
  const std::vector<std::int32_t> codes = oracle.validate(k, m, &positions);
  oracle.apply(k, codes, m);

  if (get<std::int32_t>(rig.commands.errors) != codes) fail("codes differ from the oracle's");
  if (K > 0 && get<std::int32_t>(rig.commands.commit_positions) != positions)
    fail("commit positions differ from the oracle's");
  if (get<std::int64_t>(rig.state_rows) != state_h) fail("state rows differ from the oracle's");
  if (get<std::uint8_t>(rig.pool.backing()) != pool_h) fail("pool bytes differ from the oracle's");
  if (get<std::uint8_t>(rig.host.backing()) != host_h) fail("host tier bytes differ from the oracle's");
  if (get<std::uint8_t>(rig.kv) != kv_h) fail("kv cache bytes differ from the oracle's");
  if (!rig.geometry.trailing_bindings.empty() && get<std::uint8_t>(rig.draft) != draft_h)
    fail("draft cache bytes differ from the oracle's");
  return 0;
}
