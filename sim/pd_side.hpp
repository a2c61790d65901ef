#ifndef STATEXFER_SIM_PD_SIDE_HPP
#define STATEXFER_SIM_PD_SIDE_HPP

// One rank of one instance under --pd: its pool of the model's local rows
// (row 0 null, rows 1..C the live rows of the step's slots, then the prefix
// cache's rows), a KV cache per attention layer whose page s is slot s's
// partial page (bound to the row's saved page region "kv<i>"), the prepared
// transfer of its prefix cache (restores, resets, snapshots), and the
// combiner of its group. The export or import is pd_run.cpp's.

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include <statexfer/statexfer.hpp>

namespace statexfer::sim {

template <class Exec>
struct PdSide {
  using memory_space = typename Exec::memory_space;

  /// `width`: pages a request's endpoint may reach (the page tables' width;
  /// slot s's entries are all page s, one of the pool's C pages, which no
  /// binding reads: two slots' partial pages never alias).
  PdSide(const statexfer::ModelLayout& model, int tp, int rank, std::int64_t capacity, std::int64_t cache_rows,
         std::int64_t width, const Exec& exec_)
      : exec(exec_),
        layout(model.local(tp, rank)),
        C(capacity),
        pool(layout, 1 + capacity + cache_rows, capacity),
        commands(statexfer::StateCommands<Exec>::allocate(capacity)),
        batch(capacity),
        tables("statexfer::sim::pd_tables", capacity, width),
        state_rows("statexfer::sim::pd_state_rows", capacity, statexfer::state_row_columns),
        requests(statexfer::RequestState<Exec>::allocate(capacity)) {
    auto rows_h = Kokkos::create_mirror_view(state_rows);
    for (std::int64_t s = 0; s < capacity; ++s) rows_h(s, 0) = live_row(s);
    Kokkos::deep_copy(state_rows, rows_h);
    auto tables_h = Kokkos::create_mirror_view(tables);
    for (std::int64_t s = 0; s < capacity; ++s)
      for (std::int64_t l = 0; l < width; ++l) tables_h(s, l) = static_cast<std::int32_t>(s);
    Kokkos::deep_copy(tables, tables_h);
    consumed_h = Kokkos::create_mirror_view(requests.consumed_tokens);
    statexfer::TransferConfig<Exec> config;
    for (const auto& region : layout.regions())
      if (region.name.rfind("kv", 0) == 0) {
        config.pages.push_back({region.name, typename statexfer::PageBinding<Exec>::cache_view(
                                                 "statexfer::sim::pd_kv_cache", capacity, region.nbytes)});
        kv.push_back(region);
      }
    pages = config.pages;
    config.page_tokens = model.page_tokens();
    config.state_rows = state_rows;
    config.requests = requests;
    transfer = std::make_unique<statexfer::PreparedStateTransfer<Exec>>(pool, commands, tables, config);
    transfer->prepare();
  }

  std::int64_t live_row(std::int64_t slot) const { return 1 + slot; }
  std::int64_t cache_row(std::int64_t i) const { return 1 + C + i; }

  /// One batch of the prefix cache's commands (consumed[k]: slot k's consumed
  /// tokens, which a snapshot checks): validate, combine, apply; the codes.
  std::vector<std::int32_t> run(const std::vector<statexfer::Command>& list,
                                const std::vector<std::int64_t>& consumed) {
    for (std::int64_t s = 0; s < C; ++s)
      consumed_h(s, 0) = s < static_cast<std::int64_t>(consumed.size()) ? consumed[static_cast<std::size_t>(s)] : 0;
    Kokkos::deep_copy(exec, requests.consumed_tokens, consumed_h);
    batch.clear();
    for (const auto& c : list) batch.push_back(c);
    commands.upload(exec, batch);
    transfer->validate(exec);
    if (combiner) combiner->combine(exec);
    transfer->apply(exec);
    return codes(static_cast<std::int64_t>(list.size()));
  }

  std::vector<std::int32_t> codes(std::int64_t n) const {
    exec.fence();
    auto errors = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), commands.errors);
    std::vector<std::int32_t> out(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) out[static_cast<std::size_t>(k)] = errors(k);
    return out;
  }

  /// The model's state in slot `slot`: its live row, and its KV entries of the
  /// partial page in the slot's cache pages (what a snapshot saves of them).
  void write_live(std::int64_t slot, const std::vector<std::uint8_t>& bytes) const {
    Kokkos::View<const std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(bytes.data(),
                                                                                                    bytes.size());
    Kokkos::deep_copy(exec, Kokkos::subview(pool.backing(), live_row(slot), Kokkos::ALL), h);
    for (std::size_t b = 0; b < kv.size(); ++b)
      Kokkos::deep_copy(exec, Kokkos::subview(pages[b].cache, slot, Kokkos::ALL),
                        Kokkos::subview(h, std::make_pair(kv[b].offset, kv[b].offset + kv[b].nbytes)));
    exec.fence();
  }
  /// An imported row's saved pages into the slot's cache pages, as a restore installs them.
  void install_pages(std::int64_t slot) const {
    for (std::size_t b = 0; b < kv.size(); ++b)
      Kokkos::deep_copy(
          exec, Kokkos::subview(pages[b].cache, slot, Kokkos::ALL),
          Kokkos::subview(pool.backing(), live_row(slot), std::make_pair(kv[b].offset, kv[b].offset + kv[b].nbytes)));
  }
  std::vector<std::uint8_t> read_row(std::int64_t row) const {
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(layout.row_bytes()));
    Kokkos::View<std::uint8_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> h(bytes.data(),
                                                                                              bytes.size());
    Kokkos::deep_copy(exec, h, Kokkos::subview(pool.backing(), row, Kokkos::ALL));
    exec.fence();
    return bytes;
  }

  Exec exec;
  statexfer::StateLayout layout;
  std::int64_t C;
  statexfer::StatePool<Exec> pool;
  statexfer::StateCommands<Exec> commands;
  statexfer::CommandBatch<Exec> batch;
  statexfer::PageTable<Exec> tables;
  statexfer::StateRows<Exec> state_rows;
  statexfer::RequestState<Exec> requests;
  typename statexfer::RequestState<Exec>::consumed_view::HostMirror consumed_h;
  std::vector<statexfer::Region> kv;                ///< the saved page regions
  std::vector<statexfer::PageBinding<Exec>> pages;  ///< their caches: page s is slot s's
  std::unique_ptr<statexfer::PreparedStateTransfer<Exec>> transfer;
  std::unique_ptr<statexfer::ErrorCombiner<Exec>> combiner;  ///< the group's, TP > 1
};

}  // namespace statexfer::sim

#endif
