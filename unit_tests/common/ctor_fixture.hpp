#ifndef STATEXFER_TEST_CTOR_FIXTURE_HPP
#define STATEXFER_TEST_CTOR_FIXTURE_HPP

// The constructor tests' fixture (TestConstruction, TestBindingChecks,
// TestMemoryChecks, TestLaunchDesign, TestLifecycle): a valid set of
// PreparedStateTransfer arguments that each test breaks once, and what a failed
// construction must leave alone. Not a feature header (the name does not start
// with "Test").

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <statexfer/statexfer.hpp>

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "batch_fixture.hpp"

namespace statexfer::test {

inline std::vector<std::uint8_t> pattern_bytes(std::size_t n, std::uint8_t salt) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(salt + i * 13);
  return v;
}

/// A valid set of constructor arguments (capacity C, the test layout, C + 4 rows,
/// one page binding "kv" with 16 pages, PT 4, W 4) that each test breaks once.
template <class Exec>
struct CtorArgs {
  using cache_view = typename statexfer::PageBinding<Exec>::cache_view;
  using int64_view = typename statexfer::StateCommands<Exec>::int64_view;
  using int32_view = typename statexfer::StateCommands<Exec>::int32_view;

  std::int64_t c;
  statexfer::StatePool<Exec> pool;
  statexfer::StateCommands<Exec> commands;
  statexfer::PageTable<Exec> tables;
  statexfer::TransferConfig<Exec> config;
  cache_view kv, draft, meta;

  /// A cache of `pages` pages of `bytes` bytes filled with a pattern of `salt`.
  static cache_view cache(const char* label, std::int64_t pages, std::int64_t bytes, std::uint8_t salt) {
    cache_view v(std::string(label), pages, bytes);
    upload(v, pattern_bytes(v.span(), salt));
    return v;
  }

  explicit CtorArgs(std::int64_t capacity = 4, StateLayout layout = test_layout(), std::int64_t rows = -1)
      : c(capacity) {
    pool = statexfer::StatePool<Exec>(layout, rows < 0 ? c + 4 : rows, 16);
    fill_pool();
    commands = statexfer::StateCommands<Exec>::allocate(c);
    tables = statexfer::PageTable<Exec>("tables", c, 4);
    kv = cache("kv", 16, 16, 0x11);
    draft = cache("draft", 16, 8, 0x22);
    meta = cache("meta", 16, 16, 0x33);
    config.pages = {{"kv", kv}};
    config.page_tokens = 4;
    config.state_rows = statexfer::StateRows<Exec>("state_rows", c, 8);
    config.requests = statexfer::RequestState<Exec>::allocate(c);
  }

  void fill_pool() { upload(pool.backing(), pattern_bytes(pool.backing().span(), 0x5a)); }

  void with_trailing() {
    config.trailing_pages = {{"draft", draft}};
    config.trailing_tables = statexfer::PageTable<Exec>("trailing_tables", c, 4);
  }

  statexfer::PreparedStateTransfer<Exec> make() const {
    return statexfer::PreparedStateTransfer<Exec>(pool, commands, tables, config);
  }

  // Hand-made command arrays: StateCommands' arrays are unmanaged views of
  // memory the caller owns, here for as long as these arguments live.
  std::vector<Kokkos::View<std::int64_t*, typename Exec::memory_space>> owned64;
  std::vector<Kokkos::View<std::int32_t*, typename Exec::memory_space>> owned32;
  int64_view own64(std::size_t n) { return owned64.emplace_back("hand_made", n); }
  int32_view own32(std::size_t n) { return owned32.emplace_back("hand_made", n); }

  /// Commands whose every array has `n` elements (num_ops 1): what a caller who
  /// allocates them by hand passes.
  void hand_made_commands(std::size_t n) {
    commands = statexfer::StateCommands<Exec>();
    commands.request_slots = own64(n);
    commands.source_slots = own64(n);
    commands.destination_slots = own64(n);
    commands.operation = own32(n);
    commands.expected_consumed = own64(n);
    commands.num_ops = own32(1);
    commands.errors = own32(n);
  }
};

/// Everything a failed construction must leave alone.
struct Image {
  std::vector<std::uint8_t> pool, kv, draft, meta;
  std::vector<std::int32_t> errors, num_ops;
  std::vector<std::int64_t> request_slots;
  bool operator==(const Image& o) const {
    return pool == o.pool && kv == o.kv && draft == o.draft && meta == o.meta && errors == o.errors &&
           num_ops == o.num_ops && request_slots == o.request_slots;
  }
};

template <class Exec>
Image image_of(const CtorArgs<Exec>& s) {
  Exec().fence();
  return {download(s.pool.backing()),
          download(s.kv),
          download(s.draft),
          download(s.meta),
          download(s.commands.errors),
          download(s.commands.num_ops),
          download(s.commands.request_slots)};
}

/// The constructor throws exactly std::invalid_argument naming `words`, and writes nothing.
template <class Exec>
::testing::AssertionResult rejects(const CtorArgs<Exec>& s, std::initializer_list<std::string> words) {
  try {
    const Image before = image_of(s);
    auto result = throws_naming<std::invalid_argument>([&] { auto t = s.make(); }, words);
    if (!result) return result;
    if (!(image_of(s) == before)) return ::testing::AssertionFailure() << "a failed construction wrote memory";
    return result;
  } catch (const std::exception& e) {  // reading the memory back failed
    return ::testing::AssertionFailure() << "reading the arguments' memory threw: " << e.what();
  }
}

template <class Exec>
::testing::AssertionResult accepts(const CtorArgs<Exec>& s) {
  try {
    auto t = s.make();
    t.prepare(Exec());
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "rejected: " << e.what();
  }
  return ::testing::AssertionSuccess();
}

}  // namespace statexfer::test

#endif
