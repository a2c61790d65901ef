#ifndef STATEXFER_TEST_EXCHANGE_FIXTURE_HPP
#define STATEXFER_TEST_EXCHANGE_FIXTURE_HPP

// A prefill group and a decode group over one model in one process, wired by
// the in-process transport (SharedWires: a source rank's wire buffer for a
// destination rank is the destination rank's buffer from it), with whole rows
// loaded as the oracle's shards (test_common/reshard.hpp): the fixture of
// TestExchange.hpp and of the CUDA capture test of export and import. Not a
// feature header (the name does not start with "Test").

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <statexfer/statexfer.hpp>
#include <test_common/reshard.hpp>

#include "batch_fixture.hpp"

namespace statexfer::test {

/// A small Mamba-2-like model: 8 heads, 2 groups (B and C replicated above TP 2), 4 KV heads.
inline std::vector<ModelRegion> mini_regions(std::int64_t ssm_unit = 16) {
  return {
      {"consumed_tokens", DType::int64, 1, {{"endpoint", 1, 8, Split::replicated}}},
      {"prefix_key", DType::int64, 1, {{"key", 1, 8, Split::replicated}}},
      {"ssm", DType::float32, 3, {{"heads", 8, ssm_unit, Split::units}}},
      {"conv", DType::bfloat16, 3, {{"x", 8, 12, Split::units}, {"B", 2, 6, Split::units}, {"C", 2, 6, Split::units}}},
      {"kv", DType::uint8, 4, {{"kv_heads", 4, 8, Split::units}}}};
}

inline constexpr int default_exchange_capacity = 8;

/// The whole rows of a batch: random bytes, the endpoint and key of command k.
struct Wholes {
  std::vector<std::vector<std::uint8_t>> rows;
  std::vector<std::int64_t> endpoints, keys;
};

inline Wholes make_wholes(const ModelLayout& model, int n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Wholes w;
  const StateLayout whole = model.whole();
  for (int k = 0; k < n; ++k) {
    std::vector<std::uint8_t> row(static_cast<std::size_t>(whole.row_bytes()));
    for (auto& b : row) b = static_cast<std::uint8_t>(rng());
    const std::int64_t endpoint = 17 + 5 * k, key = 0x5eed0000 + k;
    std::memcpy(row.data() + whole.region("consumed_tokens").offset, &endpoint, 8);
    std::memcpy(row.data() + whole.region("prefix_key").offset, &key, 8);
    w.rows.push_back(std::move(row));
    w.endpoints.push_back(endpoint);
    w.keys.push_back(key);
  }
  return w;
}

/// Command k exports source row k + 1 into record slot k.
inline std::vector<Command> exports_of(const Wholes& w) {
  std::vector<Command> batch;
  for (std::size_t k = 0; k < w.rows.size(); ++k)
    batch.push_back(
        Command::export_row(static_cast<std::int64_t>(k) + 1, static_cast<std::int64_t>(k), w.endpoints[k], w.keys[k]));
  return batch;
}
/// Command k imports record slot k into destination row k + 1.
inline std::vector<Command> imports_of(const Wholes& w) {
  std::vector<Command> batch;
  for (std::size_t k = 0; k < w.rows.size(); ++k)
    batch.push_back(
        Command::import_row(static_cast<std::int64_t>(k), static_cast<std::int64_t>(k) + 1, w.endpoints[k], w.keys[k]));
  return batch;
}

/// One prefill group (p ranks) and one decode group (d ranks) over one model, wired in process.
template <class Exec>
struct ExchangeMove {
  ModelLayout model;
  int p, d;
  std::vector<StatePool<Exec>> sources, destinations;
  std::vector<StateCommands<Exec>> export_commands, import_commands;
  SharedWires<Exec> wires;
  std::vector<std::unique_ptr<PreparedExport<Exec>>> exports;
  std::vector<std::unique_ptr<PreparedImport<Exec>>> imports;
  std::int64_t rows;
  int capacity;

  ExchangeMove(const ModelLayout& m, int p_, int d_, std::int64_t rows_ = default_exchange_capacity + 2,
               int capacity_ = default_exchange_capacity, ImportLanding landing = ImportLanding::publish_after_check,
               const Exec& exec = Exec())
      : model(m), p(p_), d(d_), wires(m, p_, d_, capacity_), rows(rows_), capacity(capacity_) {
    for (int i = 0; i < p; ++i) {
      sources.emplace_back(model.local(p, i), rows, 1);
      export_commands.push_back(StateCommands<Exec>::allocate(capacity));
      exports.push_back(std::make_unique<PreparedExport<Exec>>(sources.back(), export_commands.back(), model,
                                                               GroupRank{p, i}, d, wires.exporter(i)));
      exports.back()->prepare(exec);
    }
    for (int j = 0; j < d; ++j) {
      destinations.emplace_back(model.local(d, j), rows, 1);
      import_commands.push_back(StateCommands<Exec>::allocate(capacity));
      imports.push_back(std::make_unique<PreparedImport<Exec>>(destinations.back(), import_commands.back(), model, p,
                                                               GroupRank{d, j}, wires.importer(j), landing));
      imports.back()->prepare(exec);
    }
  }

  /// Source rows 1..n hold the shards of the whole rows.
  void load_sources(const Wholes& w) {
    for (int i = 0; i < p; ++i) {
      auto& pool = sources[static_cast<std::size_t>(i)];
      auto image = download(pool.backing());
      const std::int64_t rb = pool.row_bytes();
      for (std::size_t k = 0; k < w.rows.size(); ++k) {
        const auto shard = oracle_shard(model.regions(), w.rows[k], p, i);
        std::memcpy(image.data() + (k + 1) * rb, shard.data(), shard.size());
      }
      upload(pool.backing(), image);
    }
  }

  void run(const StateCommands<Exec>& commands, const std::vector<Command>& batch, int count,
           const std::function<void()>& validate, const std::function<void()>& apply) const {
    CommandBatch<Exec> b(capacity);
    for (std::size_t k = 0; k < batch.size(); ++k) b.set(static_cast<std::int64_t>(k), batch[k]);
    b.set_num_ops(count);
    commands.upload(Exec(), b);
    validate();
    apply();
    Exec().fence();
  }

  /// Every source rank exports `batch`; returns each rank's codes.
  std::vector<std::vector<std::int32_t>> export_all(const std::vector<Command>& batch, int count) {
    std::vector<std::vector<std::int32_t>> codes;
    for (int i = 0; i < p; ++i) {
      auto& e = *exports[static_cast<std::size_t>(i)];
      run(
          export_commands[static_cast<std::size_t>(i)], batch, count, [&] { e.validate(Exec()); },
          [&] { e.apply(Exec()); });
      codes.push_back(download(export_commands[static_cast<std::size_t>(i)].errors));
    }
    return codes;
  }
  /// Every destination rank imports `batch`; returns each rank's codes.
  std::vector<std::vector<std::int32_t>> import_all(const std::vector<Command>& batch, int count) {
    std::vector<std::vector<std::int32_t>> codes;
    for (int j = 0; j < d; ++j) {
      auto& m = *imports[static_cast<std::size_t>(j)];
      run(
          import_commands[static_cast<std::size_t>(j)], batch, count, [&] { m.validate(Exec()); },
          [&] { m.apply(Exec()); });
      codes.push_back(download(import_commands[static_cast<std::size_t>(j)].errors));
    }
    return codes;
  }

  std::vector<std::uint8_t> destination_row(int j, std::int64_t row) const {
    const auto& pool = destinations[static_cast<std::size_t>(j)];
    const auto all = download(pool.backing());
    return {all.begin() + row * pool.row_bytes(), all.begin() + (row + 1) * pool.row_bytes()};
  }
  /// Row `row`'s consumed_tokens on decode rank j: -1 while unpublished (§17).
  std::int64_t destination_endpoint(int j, std::int64_t row) const {
    const auto bytes = destination_row(j, row);
    std::int64_t endpoint;
    std::memcpy(&endpoint, bytes.data() + model.local(d, j).region("consumed_tokens").offset, 8);
    return endpoint;
  }
  std::vector<std::uint8_t> record(int i, int j, std::int64_t slot) const {
    const auto all = download(wires.wire(i, j));
    const std::int64_t rb = record_bytes(model, {p, i}, {d, j});
    return {all.begin() + slot * rb, all.begin() + (slot + 1) * rb};
  }
  void patch_record(int i, int j, std::int64_t slot, std::int64_t offset, std::uint8_t x) {
    const auto& w = wires.wire(i, j);
    auto all = download(w);
    all[static_cast<std::size_t>(slot * record_bytes(model, {p, i}, {d, j}) + offset)] ^= x;
    upload(w, all);
  }
};

}  // namespace statexfer::test

#endif
