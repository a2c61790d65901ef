#ifndef STATEXFER_TEST_BATCH_FIXTURE_HPP
#define STATEXFER_TEST_BATCH_FIXTURE_HPP

// A small hand-built batch for the construction and error-code tests: a pool of
// known byte patterns, one page binding ("kv"), optionally one trailing binding
// ("draft"), page tables, state rows and request state on an execution space;
// the expected bytes come from the oracle (oracle.hpp), one command at a time.
// Not a feature header (the name does not start with "Test").

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <test_common/oracle.hpp>

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <memory>
#include <sstream>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace statexfer::test {

// ---------------------------------------------------------------------------
// Exceptions: exact type and the words the message must contain.

/// Success when `f()` throws exactly `Expected` (not a derived or base type) whose
/// what() contains every one of `words`.
template <class Expected, class F>
::testing::AssertionResult throws_naming(F&& f, std::initializer_list<std::string> words) {
  try {
    f();
  } catch (const std::exception& e) {
    if (typeid(e) != typeid(Expected))
      return ::testing::AssertionFailure()
             << "threw " << typeid(e).name() << " instead of " << typeid(Expected).name() << ": " << e.what();
    const std::string what = e.what();
    for (const auto& w : words)
      if (what.find(w) == std::string::npos)
        return ::testing::AssertionFailure() << "message \"" << what << "\" does not contain \"" << w << "\"";
    return ::testing::AssertionSuccess() << what;
  } catch (...) {
    return ::testing::AssertionFailure() << "threw something that is not a std::exception";
  }
  return ::testing::AssertionFailure() << "did not throw";
}

// ---------------------------------------------------------------------------
// Host <-> device copies of contiguous Views.

template <class View>
std::vector<typename View::non_const_value_type> download(const View& v) {
  using T = typename View::non_const_value_type;
  std::vector<T> h(v.span());
  if (h.empty()) return h;
  Kokkos::View<T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> hv(h.data(), h.size());
  Kokkos::View<const T*, typename View::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dv(v.data(), v.span());
  Kokkos::deep_copy(hv, dv);
  return h;
}

template <class View>
void upload(const View& v, const std::vector<typename View::non_const_value_type>& h) {
  using T = typename View::non_const_value_type;
  ASSERT_EQ(h.size(), v.span());
  if (h.empty()) return;
  Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> hv(h.data(), h.size());
  Kokkos::View<T*, typename View::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>> dv(v.data(), v.span());
  Kokkos::deep_copy(dv, hv);
}

/// First differences between two byte arrays, as (row, byte) of rows of `stride` bytes.
inline ::testing::AssertionResult same_bytes(const std::vector<std::uint8_t>& actual,
                                             const std::vector<std::uint8_t>& expected, const std::string& name,
                                             std::int64_t stride) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure() << name << ": " << actual.size() << " bytes, expected " << expected.size();
  std::ostringstream out;
  std::size_t shown = 0, total = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] == expected[i]) continue;
    if (shown < 8) {
      out << "\n  " << name << "[" << static_cast<std::int64_t>(i) / stride << "]["
          << static_cast<std::int64_t>(i) % stride << "] = " << int(actual[i]) << ", expected " << int(expected[i]);
      ++shown;
    }
    ++total;
  }
  if (total == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << name << ": " << total << " bytes differ" << out.str();
}

// ---------------------------------------------------------------------------
// The test layout: 80-byte rows.

inline constexpr std::int64_t off_consumed = 0;  // int64, 8 bytes
inline constexpr std::int64_t off_conv = 8;      // float32, 24 bytes
inline constexpr std::int64_t off_kv = 32;       // uint8, 16 bytes: the page binding
inline constexpr std::int64_t kv_bytes = 16;
inline constexpr std::int64_t off_draft = 48;  // uint8, 16 bytes: the trailing binding (two 8-byte pages)
inline constexpr std::int64_t draft_bytes = 16;
inline constexpr std::int64_t off_meta = 64;  // uint8, 16 bytes: excluded in some tests
inline constexpr std::int64_t meta_bytes = 16;
inline constexpr std::int64_t test_row_bytes = 80;

inline statexfer::StateLayout test_layout() {
  using statexfer::DType;
  return statexfer::StateLayout({{"consumed_tokens", off_consumed, 8, DType::int64},
                                 {"conv", off_conv, 24, DType::float32},
                                 {"kv", off_kv, kv_bytes, DType::uint8},
                                 {"draft", off_draft, draft_bytes, DType::uint8},
                                 {"meta", off_meta, meta_bytes, DType::uint8}},
                                test_row_bytes);
}

/// test_layout() with a prefix_key region (docs/CONTRACT.md §14) in the last 8
/// bytes of `conv`: the same row size, bindings and offsets otherwise.
inline constexpr std::int64_t off_key = 24;
inline statexfer::StateLayout keyed_test_layout() {
  using statexfer::DType;
  return statexfer::StateLayout({{"consumed_tokens", off_consumed, 8, DType::int64},
                                 {"conv", off_conv, 16, DType::float32},
                                 {"prefix_key", off_key, 8, DType::int64},
                                 {"kv", off_kv, kv_bytes, DType::uint8},
                                 {"draft", off_draft, draft_bytes, DType::uint8},
                                 {"meta", off_meta, meta_bytes, DType::uint8}},
                                test_row_bytes);
}

inline std::uint8_t pool_pattern(std::int64_t row, std::int64_t byte) {
  return static_cast<std::uint8_t>((row * 29 + byte * 7 + 3) & 0xff);
}
inline std::uint8_t cache_pattern(std::int64_t salt, std::int64_t page, std::int64_t byte) {
  return static_cast<std::uint8_t>((salt + page * 5 + byte * 11) & 0xff);
}

// ---------------------------------------------------------------------------
// The batch.

/// A command as the tests write it: the library's own (statexfer::Command, with
/// its field order slot, source, destination, operation, endpoint, key).
using Command = statexfer::Command;

inline Command snapshot_cmd(std::int64_t slot, std::int64_t src, std::int64_t dst, std::int64_t end) {
  return Command::snapshot(slot, src, dst, end);
}
inline Command restore_cmd(std::int64_t slot, std::int64_t src, std::int64_t dst, std::int64_t end) {
  return Command::restore(slot, src, dst, end);
}
inline Command reset_cmd(std::int64_t slot, std::int64_t dst) { return Command::reset(slot, dst); }

struct BatchOptions {
  std::int64_t capacity = 4;
  std::int64_t rows = 12;  // live rows 1..C (state_rows), snapshot rows C+1..rows-1
  std::int64_t page_tokens = 4;
  std::int64_t width = 4;
  std::int64_t cache_pages = 32;
  bool trailing = false;
  std::vector<std::string> excluded;
  /// Request consumed tokens as columns 1..2 of an int64 [C, 3] View (row stride 3),
  /// the other column holding garbage.
  bool strided_requests = false;
  std::int64_t default_consumed = 6;   // request consumed of every slot and consumed_tokens of every row
  statexfer::TransferOptions options;  // the transfer's design choices
};

/// Expected final memory.
struct Memory {
  std::vector<std::uint8_t> pool, kv, draft;
};

/// The TransferConfig of the test fixtures: page binding "kv", trailing binding
/// "draft" (with its tables) when `trailing`, and the excluded regions.
template <class Exec>
statexfer::TransferConfig<Exec> fixture_config(std::int64_t page_tokens, const statexfer::StateRows<Exec>& state_rows,
                                               const statexfer::RequestState<Exec>& requests,
                                               const typename statexfer::PageBinding<Exec>::cache_view& kv,
                                               const typename statexfer::PageBinding<Exec>::cache_view& draft,
                                               bool trailing, const statexfer::PageTable<Exec>& trailing_tables,
                                               const std::vector<std::string>& excluded) {
  statexfer::TransferConfig<Exec> config;
  config.pages = {{"kv", kv}};
  config.page_tokens = page_tokens;
  config.state_rows = state_rows;
  config.requests = requests;
  if (trailing) {
    config.trailing_pages = {{"draft", draft}};
    config.trailing_tables = trailing_tables;
  }
  config.excluded_regions = excluded;
  return config;
}

template <class Exec>
struct Batch {
  using memory_space = typename Exec::memory_space;
  using cache_view = typename statexfer::PageBinding<Exec>::cache_view;

  BatchOptions opt;
  statexfer::StatePool<Exec> pool;
  statexfer::StateCommands<Exec> commands;
  statexfer::PageTable<Exec> tables, trailing_tables;
  statexfer::StateRows<Exec> state_rows;
  statexfer::RequestState<Exec> requests;
  cache_view kv_cache, draft_cache;
  Kokkos::View<std::int64_t**, Kokkos::LayoutRight, memory_space> request_storage;
  std::unique_ptr<statexfer::PreparedStateTransfer<Exec>> transfer;

  // Host state, uploaded by sync() (and at the start of run()).
  std::vector<std::uint8_t> pool_h, kv_h, draft_h;
  std::vector<std::int32_t> tables_h, trailing_h;
  std::vector<std::int64_t> state_h, consumed_h, capacity_h;

  // Device state after the last run.
  std::vector<std::uint8_t> pool_after, kv_after, draft_after;
  std::vector<std::int32_t> errors;

  explicit Batch(BatchOptions o = {}) : opt(std::move(o)) {
    const auto c = opt.capacity, w = opt.width, p = opt.cache_pages, rows = opt.rows;
    pool = statexfer::StatePool<Exec>(test_layout(), rows, p);
    commands = statexfer::StateCommands<Exec>::allocate(c);
    tables = statexfer::PageTable<Exec>("tables", c, w);
    trailing_tables = statexfer::PageTable<Exec>("trailing_tables", c, w);
    state_rows = statexfer::StateRows<Exec>("state_rows", c, 8);
    if (opt.strided_requests) {
      request_storage = decltype(request_storage)("request_storage", c, 3);
      requests.consumed_tokens =
          Kokkos::subview(request_storage, Kokkos::ALL(), std::make_pair(std::int64_t(1), std::int64_t(3)));
    } else {
      requests = statexfer::RequestState<Exec>::allocate(c);
    }
    kv_cache = cache_view("kv_cache", p, kv_bytes);
    draft_cache = cache_view("draft_cache", p, draft_bytes / 2);

    pool_h.resize(rows * test_row_bytes);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t i = 0; i < test_row_bytes; ++i) pool_h[r * test_row_bytes + i] = pool_pattern(r, i);
      set_row_consumed(r, opt.default_consumed);
    }
    kv_h.resize(p * kv_bytes);
    for (std::int64_t pg = 0; pg < p; ++pg)
      for (std::int64_t i = 0; i < kv_bytes; ++i) kv_h[pg * kv_bytes + i] = cache_pattern(0x40, pg, i);
    draft_h.resize(p * draft_bytes / 2);
    for (std::int64_t pg = 0; pg < p; ++pg)
      for (std::int64_t i = 0; i < draft_bytes / 2; ++i) draft_h[pg * draft_bytes / 2 + i] = cache_pattern(0xA1, pg, i);
    tables_h.resize(c * w);
    trailing_h.resize(c * w);
    for (std::int64_t s = 0; s < c; ++s)
      for (std::int64_t l = 0; l < w; ++l) {
        tables_h[s * w + l] = static_cast<std::int32_t>((s * w + l) % p);
        trailing_h[s * w + l] = static_cast<std::int32_t>(p - 1 - (s * w + l) % p);
      }
    state_h.resize(c * 8);
    for (std::int64_t s = 0; s < c; ++s)
      for (std::int64_t col = 0; col < 8; ++col) state_h[s * 8 + col] = col == 0 ? 1 + s : 1000 + s * 8 + col;
    consumed_h.assign(c, opt.default_consumed);
    capacity_h = {rows, p};

    sync();
    auto config = fixture_config<Exec>(opt.page_tokens, state_rows, requests, kv_cache, draft_cache, opt.trailing,
                                       trailing_tables, opt.excluded);
    config.options = opt.options;
    transfer = std::make_unique<statexfer::PreparedStateTransfer<Exec>>(pool, commands, tables, config);
    transfer->prepare(Exec());
  }

  // Host-side accessors.
  std::int32_t& table(std::int64_t slot, std::int64_t logical) { return tables_h[slot * opt.width + logical]; }
  std::int32_t& trailing_table(std::int64_t slot, std::int64_t logical) {
    return trailing_h[slot * opt.width + logical];
  }
  std::int64_t& state_row(std::int64_t slot) { return state_h[slot * 8]; }
  std::int64_t& request_consumed(std::int64_t slot) { return consumed_h[slot]; }
  std::int64_t& slots_capacity() { return capacity_h[0]; }
  std::int64_t& pages_capacity() { return capacity_h[1]; }
  void set_row_consumed(std::int64_t row, std::int64_t value) {
    for (int b = 0; b < 8; ++b)
      pool_h[row * test_row_bytes + off_consumed + b] = static_cast<std::uint8_t>((value >> (8 * b)) & 0xff);
  }

  /// Upload the host state (pool, caches, tables, state rows, request consumed, memory capacity).
  void sync() {
    upload(pool.backing(), pool_h);
    upload(kv_cache, kv_h);
    upload(draft_cache, draft_h);
    upload(tables, tables_h);
    upload(trailing_tables, trailing_h);
    upload(state_rows, state_h);
    if (opt.strided_requests) {
      std::vector<std::int64_t> h(consumed_h.size() * 3);
      for (std::size_t s = 0; s < consumed_h.size(); ++s) {
        h[s * 3] = -5;
        h[s * 3 + 1] = consumed_h[s];
        h[s * 3 + 2] = -7;
      }
      upload(request_storage, h);
    } else {
      upload(requests.consumed_tokens, consumed_h);
    }
    upload(pool.memory_capacity(), capacity_h);
  }

  /// Write `cmds` into rows 0.. of the command arrays (the other rows get the
  /// initial values), num_ops = `count`, and a sentinel (77) in errors so that
  /// every row must be written by validate().
  void upload_commands(const std::vector<Command>& cmds, std::int32_t count) {
    statexfer::CommandBatch<Exec> batch(opt.capacity);
    for (std::size_t i = 0; i < cmds.size() && static_cast<std::int64_t>(i) < opt.capacity; ++i)
      batch.push_back(cmds[i]);
    batch.set_num_ops(count);
    commands.upload(Exec(), batch);
    Exec().fence();  // the batch goes out of scope
    upload(commands.errors, std::vector<std::int32_t>(static_cast<std::size_t>(opt.capacity), 77));
  }

  void read_back() {
    Exec().fence();
    errors = download(commands.errors);
    pool_after = download(pool.backing());
    kv_after = download(kv_cache);
    draft_after = download(draft_cache);
  }

  /// run() enqueues validate_and_apply() instead of validate() and apply().
  bool one_call = false;

  /// sync(), upload the commands, validate(), apply() (unless `apply_too` is
  /// false; validate_and_apply() with `one_call`), read back. Returns the errors.
  std::vector<std::int32_t> run(const std::vector<Command>& cmds, std::int32_t count, bool apply_too = true) {
    sync();
    upload_commands(cmds, count);
    if (one_call && apply_too) {
      transfer->validate_and_apply(Exec());
    } else {
      transfer->validate(Exec());
      if (apply_too) transfer->apply(Exec());
    }
    read_back();
    return errors;
  }
  std::vector<std::int32_t> run(const std::vector<Command>& cmds) {
    return run(cmds, static_cast<std::int32_t>(cmds.size()));
  }

  /// errors vector {codes..., 0, 0...} of the capacity.
  std::vector<std::int32_t> codes(std::vector<std::int32_t> leading) const {
    leading.resize(static_cast<std::size_t>(opt.capacity), 0);
    return leading;
  }

  // ------------------------------------------------------------------ expected memory

  Memory unchanged() const { return {pool_h, kv_h, draft_h}; }

  bool excluded(const std::string& name) const {
    for (const auto& e : opt.excluded)
      if (e == name) return true;
    return false;
  }
  /// docs/CONTRACT.md §5 for one command whose code is 0, on `m`: the oracle's
  /// apply() on the host state with `m`'s pool and caches.
  void apply_model(Memory& m, const Command& cmd) const {
    const statexfer::StateLayout layout = test_layout();
    OracleGeometry g;
    g.capacity = opt.capacity;
    g.rows = opt.rows;
    g.row_bytes = test_row_bytes;
    g.page_tokens = opt.page_tokens;
    g.width = opt.width;
    g.consumed_offset = off_consumed;
    g.cache_pages = opt.cache_pages;
    for (const auto& e : opt.excluded) {
      const auto& r = layout.region(e);
      g.excluded.emplace_back(r.offset, r.offset + r.nbytes);
    }
    OracleMemory memory;
    memory.pool = m.pool.data();
    if (!excluded("kv")) {
      g.page_bindings.push_back({off_kv, kv_bytes});
      memory.caches.push_back(m.kv.data());
    }
    if (opt.trailing && !excluded("draft")) {
      g.trailing_bindings.push_back({off_draft, draft_bytes});
      memory.caches.push_back(m.draft.data());
    }
    memory.tables = tables_h.data();
    memory.trailing_tables = trailing_h.data();
    std::vector<std::int64_t> state_rows_copy = state_h;  // the oracle writes only remapping commits' rows
    memory.state_rows = state_rows_copy.data();
    memory.state_rows_stride = 8;
    memory.request_consumed = consumed_h.data();
    memory.memory_capacity[0] = opt.rows;
    memory.memory_capacity[1] = opt.cache_pages;
    const std::int64_t slot = cmd.request_slot, src = cmd.source, dst = cmd.destination, end = cmd.expected_consumed;
    const std::int32_t op = cmd.operation;
    const OracleCommands one{&slot, &src, &dst, &op, &end, 1};
    ContractOracle(g).apply(one, {0}, memory);
  }

  /// The host state with `applied` applied in order.
  Memory expect(const std::vector<Command>& applied) const {
    Memory m = unchanged();
    for (const auto& c : applied) apply_model(m, c);
    return m;
  }

  /// The device memory after the last run equals `m`.
  ::testing::AssertionResult memory_is(const Memory& m) const {
    auto a = same_bytes(pool_after, m.pool, "pool", test_row_bytes);
    if (!a) return a;
    auto b = same_bytes(kv_after, m.kv, "kv_cache", kv_bytes);
    if (!b) return b;
    return same_bytes(draft_after, m.draft, "draft_cache", draft_bytes / 2);
  }
};

}  // namespace statexfer::test

#endif
