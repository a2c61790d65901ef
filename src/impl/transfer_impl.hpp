#ifndef STATEXFER_IMPL_TRANSFER_IMPL_HPP
#define STATEXFER_IMPL_TRANSFER_IMPL_HPP

// PreparedStateTransfer's definitions (its launches in transfer_launch_impl.hpp);
// included by one translation unit per execution space (explicit instantiation).

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <statexfer/transfer.hpp>

#include "argument_checks.hpp"
#include "host_tier_checks.hpp"
#include "instance_setup.hpp"
#include "speculative_checks.hpp"
#include "transfer_data.hpp"
#include "transfer_launch_impl.hpp"
#include "work_map.hpp"

namespace statexfer {

template <class ExecutionSpace>
const impl::TransferData<ExecutionSpace>& PreparedStateTransfer<ExecutionSpace>::ready(
    const char* call, const ExecutionSpace* exec) const {
  // Messages are built only on failure: a call that goes through does no host allocation.
  const auto message = [call](const char* what) {
    return std::string("statexfer::PreparedStateTransfer::") + call + ": " + what;
  };
  if (!data_) throw std::logic_error(message("the transfer was moved from"));
  const auto& d = *data_;
  if (!d.prepared) throw std::logic_error(message("prepare() must complete first"));
  if (exec != nullptr && !impl::same_instance(*exec, d.exec))
    throw std::invalid_argument(
        message("exec is not the execution space instance prepare() bound the transfer to "
                "(one transfer serves one stream; call prepare(exec) to rebind)"));
  return d;
}

template <class ExecutionSpace>
PreparedStateTransfer<ExecutionSpace>::PreparedStateTransfer(const StatePool<ExecutionSpace>& pool,
                                                             const StateCommands<ExecutionSpace>& commands,
                                                             const PageTable<ExecutionSpace>& tables,
                                                             const TransferConfig<ExecutionSpace>& config)
    : data_(std::make_unique<impl::TransferData<ExecutionSpace>>()) {
  using impl::reject;
  using impl::shape_string;
  auto& d = *data_;
  const std::int64_t c = commands.capacity();
  if (!is_valid_extended_capacity(c))
    reject("command capacity (extent of commands.source_slots) must be a power of two through " +
           std::to_string(max_extended_capacity) + " (1.." + std::to_string(max_capacity) + " the contract, " +
           std::to_string(2 * max_capacity) + ".." + std::to_string(max_extended_capacity) + " the extension), got " +
           std::to_string(c));
  const auto cu = static_cast<std::size_t>(c);
  if (pool.rows() < c + 2)
    reject("pool must have at least capacity + 2 = " + std::to_string(c + 2) +
           " rows (null row, live rows, a snapshot row), got " + std::to_string(pool.rows()));
  if (pool.memory_capacity().extent(0) != 2)
    reject("pool memory_capacity must be int64 [2], got " + shape_string(pool.memory_capacity().extent(0)));
  if (config.page_tokens <= 0) reject("page_tokens must be positive, got " + std::to_string(config.page_tokens));
  impl::check_memory(pool.backing(), "pool backing");
  impl::check_memory(pool.memory_capacity(), "pool memory_capacity");
  impl::check_vector(commands.request_slots, cu, "commands.request_slots", "int64");
  impl::check_vector(commands.source_slots, cu, "commands.source_slots", "int64");
  impl::check_vector(commands.destination_slots, cu, "commands.destination_slots", "int64");
  impl::check_vector(commands.operation, cu, "commands.operation", "int32");
  impl::check_vector(commands.expected_consumed, cu, "commands.expected_consumed", "int64");
  impl::check_vector(commands.num_ops, 1, "commands.num_ops", "int32");
  impl::check_vector(commands.errors, cu, "commands.errors", "int32");
  if (tables.extent(0) != cu || tables.extent(1) < 1)
    reject("page_tables must be int32 [" + std::to_string(c) + ", W >= 1], got " +
           shape_string(tables.extent(0), tables.extent(1)));
  impl::check_memory(tables, "page_tables");
  // The largest endpoint, W * page_tokens, is computed on the device in int64.
  if (static_cast<std::int64_t>(tables.extent(1)) > std::numeric_limits<std::int64_t>::max() / config.page_tokens)
    reject("page_tokens (" + std::to_string(config.page_tokens) + ") times the page table width W (" +
           std::to_string(tables.extent(1)) + ") must fit in int64");
  if (config.state_rows.extent(0) != cu || config.state_rows.extent(1) != 8)
    reject("state_rows must be int64 [" + std::to_string(c) + ", 8], got " +
           shape_string(config.state_rows.extent(0), config.state_rows.extent(1)));
  impl::check_memory(config.state_rows, "state_rows");
  if (config.requests.capacity() != c)
    reject("requests must have the command capacity " + std::to_string(c) + ", got " +
           std::to_string(config.requests.capacity()));
  if (config.requests.consumed_tokens.extent(1) < 1)
    reject("requests.consumed_tokens must have at least one column, got " +
           shape_string(config.requests.consumed_tokens.extent(0), config.requests.consumed_tokens.extent(1)));
  impl::check_memory(config.requests.consumed_tokens, "requests.consumed_tokens");

  const StateLayout& layout = pool.layout();
  if (!layout.contains("consumed_tokens")) reject("the pool layout has no consumed_tokens region");
  const Region& consumed = layout.region("consumed_tokens");
  if (consumed.dtype != DType::int64 || consumed.nbytes != 8)
    reject("consumed_tokens must be one int64 (8 bytes), got " + std::to_string(consumed.nbytes) + " bytes of " +
           to_string(consumed.dtype));
  if (consumed.offset % 8 != 0 || layout.row_bytes() % 8 != 0 ||
      reinterpret_cast<std::uintptr_t>(pool.backing().data()) % 8 != 0)
    reject("consumed_tokens must be 8-byte aligned in every row (offset " + std::to_string(consumed.offset) +
           ", row_bytes " + std::to_string(layout.row_bytes()) + ")");

  std::vector<std::string> excluded;
  for (const auto& name : config.excluded_regions) {
    if (!layout.contains(name)) reject("excluded region '" + name + "' is not in the pool layout");
    if (std::find(excluded.begin(), excluded.end(), name) == excluded.end()) excluded.push_back(name);
  }
  auto is_excluded = [&](const std::string& n) {
    return std::find(excluded.begin(), excluded.end(), n) != excluded.end();
  };
  const std::int64_t key_offset = impl::check_prefix_key(layout, excluded, commands);
  impl::check_speculative(config.speculative, commands);

  std::vector<std::string> bound;
  std::int64_t cache_pages = -1;
  for (const auto& b : config.pages) {
    if (is_excluded(b.region)) continue;
    if (!layout.contains(b.region)) reject("page binding region '" + b.region + "' is not in the pool layout");
    const Region& r = layout.region(b.region);
    if (std::find(bound.begin(), bound.end(), b.region) != bound.end())
      reject("region '" + b.region + "' has two bindings");
    if (r.dtype != DType::uint8)
      reject("page binding region '" + b.region + "' must be uint8, got " + to_string(r.dtype));
    if (static_cast<std::int64_t>(b.cache.extent(1)) != r.nbytes)
      reject("cache of page binding '" + b.region + "' must have " + std::to_string(r.nbytes) +
             " bytes per page (the region's size), got " + shape_string(b.cache.extent(0), b.cache.extent(1)));
    const auto p = static_cast<std::int64_t>(b.cache.extent(0));
    if (p <= 0) reject("cache of page binding '" + b.region + "' has no pages");
    impl::check_memory(b.cache, "cache of page binding '" + b.region + "'");
    // apply() addresses page `page` at data() + page * nbytes.
    if (!b.cache.span_is_contiguous())
      reject("cache of page binding '" + b.region + "' must be contiguous (no row padding), got a row stride of " +
             std::to_string(b.cache.stride(0)) + " bytes for " + std::to_string(r.nbytes) + "-byte pages");
    if (cache_pages >= 0 && p != cache_pages)
      reject("caches must share one page count: '" + b.region + "' has " + std::to_string(p) + ", others " +
             std::to_string(cache_pages));
    cache_pages = p;
    bound.push_back(b.region);
    d.pages.push_back(b);
  }
  if (d.pages.empty()) reject("no page binding is left after exclusions (at least one is required)");

  for (const auto& b : config.trailing_pages) {
    if (is_excluded(b.region)) continue;
    if (!layout.contains(b.region)) reject("trailing binding region '" + b.region + "' is not in the pool layout");
    const Region& r = layout.region(b.region);
    if (std::find(bound.begin(), bound.end(), b.region) != bound.end())
      reject("region '" + b.region + "' has two bindings");
    if (r.dtype != DType::uint8)
      reject("trailing binding region '" + b.region + "' must be uint8, got " + to_string(r.dtype));
    if (r.nbytes % 2 != 0)
      reject("trailing binding region '" + b.region + "' must have an even size (two pages), got " +
             std::to_string(r.nbytes));
    if (static_cast<std::int64_t>(b.cache.extent(0)) != cache_pages ||
        static_cast<std::int64_t>(b.cache.extent(1)) != r.nbytes / 2)
      reject("cache of trailing binding '" + b.region + "' must be uint8 " +
             shape_string(static_cast<std::size_t>(cache_pages), static_cast<std::size_t>(r.nbytes / 2)) +
             " (page count of the page caches, half the region per page), got " +
             shape_string(b.cache.extent(0), b.cache.extent(1)));
    impl::check_memory(b.cache, "cache of trailing binding '" + b.region + "'");
    if (!b.cache.span_is_contiguous())
      reject("cache of trailing binding '" + b.region + "' must be contiguous (no row padding), got a row stride of " +
             std::to_string(b.cache.stride(0)) + " bytes for " + std::to_string(r.nbytes / 2) + "-byte pages");
    bound.push_back(b.region);
    d.trailing_pages.push_back(b);
  }
  if (!d.trailing_pages.empty()) {
    if (config.trailing_tables.extent(0) != tables.extent(0) || config.trailing_tables.extent(1) != tables.extent(1) ||
        config.trailing_tables.data() == nullptr)
      reject("trailing bindings need trailing_tables of the page tables' shape int32 " +
             shape_string(tables.extent(0), tables.extent(1)) + ", got " +
             shape_string(config.trailing_tables.extent(0), config.trailing_tables.extent(1)));
  }

  // Memory the kernels write must not alias: every cache apart from the others and from the pool.
  std::vector<std::pair<std::string, typename PageBinding<ExecutionSpace>::cache_view>> caches;
  for (const auto& b : d.pages) caches.emplace_back(b.region, b.cache);
  for (const auto& b : d.trailing_pages) caches.emplace_back(b.region, b.cache);
  for (std::size_t i = 0; i < caches.size(); ++i) {
    if (impl::views_overlap(caches[i].second, pool.backing()))
      reject("cache of binding '" + caches[i].first + "' overlaps the pool backing");
    for (std::size_t j = 0; j < i; ++j)
      if (impl::views_overlap(caches[i].second, caches[j].second))
        reject("caches of bindings '" + caches[j].first + "' and '" + caches[i].first + "' overlap");
  }

  // Memory the kernels read must not alias memory they write. apply() writes the
  // pool and the caches; validate_and_apply() decides a row in every team of it
  // while other teams write, so an input inside the pool or a cache (say request
  // consumed tokens as a strided View of the pool's consumed_tokens column) could
  // give teams of one row different codes and tear the row. validate() writes
  // errors while it reads the other inputs.
  std::vector<std::pair<std::string, impl::ByteRange>> inputs = {
      {"commands.request_slots", impl::byte_range(commands.request_slots)},
      {"commands.source_slots", impl::byte_range(commands.source_slots)},
      {"commands.destination_slots", impl::byte_range(commands.destination_slots)},
      {"commands.operation", impl::byte_range(commands.operation)},
      {"commands.expected_consumed", impl::byte_range(commands.expected_consumed)},
      {"commands.num_ops", impl::byte_range(commands.num_ops)},
      {"pool memory_capacity", impl::byte_range(pool.memory_capacity())},
      {"page_tables", impl::byte_range(tables)},
      {"state_rows", impl::byte_range(config.state_rows)},
      {"requests.consumed_tokens", impl::byte_range(config.requests.consumed_tokens)}};
  if (!d.trailing_pages.empty()) inputs.emplace_back("trailing_tables", impl::byte_range(config.trailing_tables));
  std::vector<std::pair<std::string, impl::ByteRange>> written = {
      {"the pool backing", impl::byte_range(pool.backing())}};
  for (const auto& [region, cache] : caches)
    written.emplace_back("the cache of binding '" + region + "'", impl::byte_range(cache));
  if (!config.host_tier.empty()) impl::check_host_tier(pool, config.host_tier, caches, inputs, written);
  impl::check_speculative_ranges(config, commands, key_offset >= 0, inputs, written);
  const impl::ByteRange errors = impl::byte_range(commands.errors);
  for (const auto& [name, range] : written)
    if (impl::ranges_overlap(errors, range))
      reject("commands.errors overlaps " + name + " (validate() writes the one, apply() the other)");
  for (const auto& [name, range] : inputs) {
    for (const auto& [written_name, written_range] : written)
      if (impl::ranges_overlap(range, written_range))
        reject(name + " overlaps " + written_name + ": validation reads memory that apply() writes");
    if (impl::ranges_overlap(range, errors))
      reject(name + " overlaps commands.errors: validation reads memory that it writes");
  }

  d.pool = pool;
  d.commands = commands;
  d.tables = tables;
  d.trailing_tables = config.trailing_tables;
  d.state_rows = config.state_rows;
  d.requests = config.requests;
  d.host_tier = config.host_tier;
  d.speculative = config.speculative;

  d.shape.capacity = c;
  d.shape.rows = pool.rows();
  d.shape.host_rows = config.host_tier.empty() ? 0 : config.host_tier.rows();
  d.shape.row_bytes = layout.row_bytes();
  d.shape.consumed_offset = consumed.offset;
  d.shape.page_tokens = config.page_tokens;
  d.shape.page_shift = -1;
  if ((config.page_tokens & (config.page_tokens - 1)) == 0)
    for (std::int32_t b = 0; b < 63; ++b)
      if ((std::int64_t(1) << b) == config.page_tokens) d.shape.page_shift = b;
  d.shape.width = static_cast<std::int64_t>(tables.extent(1));
  d.shape.cache_pages = cache_pages;
  d.shape.has_trailing = d.trailing_pages.empty() ? 0 : 1;
  d.shape.positions = config.speculative.positions;
  d.shape.key_offset = key_offset;
  d.shape.remap = config.speculative.move == CommitMove::remap ? 1 : 0;

  // Bindings and the work map, built once on the host.
  std::vector<impl::BindingEntry> entries;
  std::vector<impl::BindingSpan> spans;
  for (const auto& b : d.pages) {
    const Region& r = layout.region(b.region);
    spans.push_back({static_cast<std::int32_t>(entries.size()), r.offset, r.nbytes, 1});
    entries.push_back({b.cache.data(), r.offset, r.nbytes, 0, 0});
  }
  for (const auto& b : d.trailing_pages) {
    const Region& r = layout.region(b.region);
    spans.push_back({static_cast<std::int32_t>(entries.size()), r.offset, r.nbytes / 2, 2});
    entries.push_back({b.cache.data(), r.offset, r.nbytes / 2, 1, 0});
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> excluded_ranges;
  for (const auto& name : excluded) {
    const Region& r = layout.region(name);
    excluded_ranges.emplace_back(r.offset, r.offset + r.nbytes);
  }
  const std::int64_t tile =
      impl::env_integer("STATEXFER_APPLY_TILE_BYTES", impl::tile_bytes, 256, std::int64_t(1) << 30);
  if (tile % 16 != 0) reject("STATEXFER_APPLY_TILE_BYTES must be a multiple of 16, got " + std::to_string(tile));
  std::vector<impl::WorkItem> work = impl::build_work_map(layout.row_bytes(), excluded_ranges, spans, tile, key_offset);
  for (impl::WorkItem& item : work)
    if (item.binding >= 0) item.page = entries[static_cast<std::size_t>(item.binding)];
  if (static_cast<std::int64_t>(work.size()) * c > std::numeric_limits<std::int32_t>::max())
    reject("apply() would need " + std::to_string(work.size()) + " work items per command (row_bytes " +
           std::to_string(layout.row_bytes()) + "), times capacity " + std::to_string(c) + " over 2^31 - 1");
  d.shape.work_items = static_cast<std::int32_t>(work.size());
  for (const impl::WorkItem& item : work) d.longest_item = std::max(d.longest_item, item.length);

  d.items = Kokkos::View<impl::WorkItem*, memory_space>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "statexfer::work_items"), work.size());
  d.plan = Kokkos::View<impl::RowPlan*, memory_space>(Kokkos::view_alloc(ExecutionSpace(), "statexfer::plan"), cu);
  if (impl::SortedValidation<ExecutionSpace>::applies(c)) {
    // Tuning diagnostics (README): keys per sort chunk and look-up teams per chunk.
    const std::int64_t chunk =
        impl::env_integer("STATEXFER_VALIDATE_CHUNK", impl::SortedValidation<ExecutionSpace>::default_chunk, 64, 4096);
    if ((chunk & (chunk - 1)) != 0)
      reject("STATEXFER_VALIDATE_CHUNK must be a power of two, got " + std::to_string(chunk));
    const auto groups = static_cast<int>(
        impl::env_integer("STATEXFER_VALIDATE_GROUPS", impl::SortedValidation<ExecutionSpace>::default_groups, 1, 64));
    d.sorted.allocate(d.shape, chunk, groups);
  }
  Kokkos::deep_copy(d.items,
                    Kokkos::View<const impl::WorkItem*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                        work.data(), work.size()));
}

template <class ExecutionSpace>
PreparedStateTransfer<ExecutionSpace>::~PreparedStateTransfer() = default;
template <class ExecutionSpace>
PreparedStateTransfer<ExecutionSpace>::PreparedStateTransfer(PreparedStateTransfer&&) noexcept = default;
template <class ExecutionSpace>
PreparedStateTransfer<ExecutionSpace>& PreparedStateTransfer<ExecutionSpace>::operator=(
    PreparedStateTransfer&&) noexcept = default;

template <class ExecutionSpace>
void PreparedStateTransfer<ExecutionSpace>::prepare(const ExecutionSpace& exec) {
  if (!data_) throw std::logic_error("statexfer::PreparedStateTransfer::prepare: the transfer was moved from");
  auto& d = *data_;
  std::int32_t count = 0;
  Kokkos::deep_copy(exec,
                    Kokkos::View<std::int32_t, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(&count),
                    Kokkos::subview(d.commands.num_ops, 0));
  exec.fence();
  if (count != 0)
    throw std::invalid_argument("statexfer::PreparedStateTransfer::prepare: requires zero live commands (num_ops is " +
                                std::to_string(count) + ")");
  constexpr bool host = std::is_same_v<memory_space, Kokkos::HostSpace>;
  // Bulk copies where the code that runs has them (Hopper and newer).
  if constexpr (!host)
    d.bulk = impl::device_has_bulk_copy(exec) && impl::env_integer("STATEXFER_APPLY_BULK", 1, 0, 1) == 1;
  // Apply's team: 128 threads on a GPU (the best of 128, 256 and 512 in the
  // sittings of perf_tests/RESULTS.md), never more than the policy allows.
  using apply_functor = impl::ApplyFunctor<ExecutionSpace>;
  const typename apply_functor::policy_type probe(exec, 1, 1);
  const int team = static_cast<int>(impl::env_integer("STATEXFER_APPLY_TEAM_SIZE", 128, 1, 1024));
  d.apply_team_size = std::max(1, std::min(team, probe.team_size_max(d.apply_functor(), Kokkos::ParallelForTag())));
  // Host backends: a team of one. Teams of several OpenMP threads only add
  // rendezvous to work that is one memcpy per tile.
  if (host) d.apply_team_size = 1;
  // GPUs: the flat grid, two 16-byte words a thread (the best of 1, 2 and 4 in
  // perf_tests/RESULTS.md); 0 asks for the teams (and works on hosts too, slowly).
  d.flat_words = static_cast<int>(impl::env_integer("STATEXFER_APPLY_WORDS", host ? 0 : 2, 0, 4));
  if (d.flat_words == 3)
    throw std::invalid_argument("statexfer: the environment variable STATEXFER_APPLY_WORDS=3 must be 0, 1, 2 or 4");
  d.flat_shift = impl::flat_thread_shift(d.longest_item, std::max(d.flat_words, 1));
  using validate_functor = impl::ValidateFunctor<ExecutionSpace>;
  if (impl::SortedValidation<ExecutionSpace>::applies(d.shape.capacity)) {
    d.validate_team_size = d.sorted.team_size(exec, d.validate_functor());
  } else {
    // A thread per command row, in one team or, on GPUs above 32 commands,
    // several (STATEXFER_VALIDATE_ROWS_PER_TEAM rows each, default 8; every
    // team shares all C rows' keys, ValidateFunctor). A row's vector lanes
    // split its scan of the others when it has more than
    // STATEXFER_VALIDATE_PEERS_PER_LANE to scan (default 4 with several teams,
    // 8 in one): the fewest lanes (a power of two) that leave each at most that
    // many, while the team fits the block (ValidateFunctor::max_threads, the
    // policy's team_size_max). In one team at most 4 lanes: there all C rows'
    // warps share one SM. The defaults are the best of the sittings in
    // perf_tests/RESULTS.md (sessions 13 and 14); at C = 32 one team and
    // several were level.
    const int c = static_cast<int>(d.shape.capacity);
    const auto rows = std::min<int>(
        c, static_cast<int>(impl::env_integer("STATEXFER_VALIDATE_ROWS_PER_TEAM", !host && c > 32 ? 8 : 64, 1, 64)));
    const auto per_lane =
        static_cast<int>(impl::env_integer("STATEXFER_VALIDATE_PEERS_PER_LANE", rows < c ? 4 : 8, 1, 64));
    const auto threads_max = [&](int lanes) {
      return typename validate_functor::policy_type(exec, 1, 1, lanes)
          .set_scratch_size(0, Kokkos::PerTeam(validate_functor::scratch_bytes(d.shape.capacity)))
          .team_size_max(d.validate_functor(), Kokkos::ParallelForTag());
    };
    const int max_lanes = std::min(rows < c ? INT32_MAX : 4, validate_functor::policy_type::vector_length_max());
    int lanes = 1;
    while (!host && lanes * per_lane < c && (rows < c || c > 2 * per_lane) && 2 * lanes <= max_lanes &&
           2 * lanes * rows <= validate_functor::max_threads && threads_max(2 * lanes) >= rows)
      lanes *= 2;
    d.validate_vector_length = lanes;
    d.validate_rows_per_team = rows;
    d.validate_league = (c + rows - 1) / rows;
    d.validate_team_size = host ? 1 : std::max(1, std::min<int>(threads_max(lanes), rows));
  }
  // validate_and_apply() in one launch on GPUs up to 64 commands (on hosts
  // every team or block would repeat the loads of every row on the CPU: two
  // launches). Up to 8 commands (Kokkos 4) the flat grid's blocks decide their
  // rows (FusedFlatFunctor), else the teams do (FusedFunctor) while their league is
  // about one wave of the device's threads. STATEXFER_VALIDATE_AND_APPLY (0 two
  // launches, 1 the teams, 2 the flat grid) overrides the rule, for tuning and tests.
  d.fused_team_size = 0;
  d.fused_flat = false;
  const bool sorted = impl::SortedValidation<ExecutionSpace>::applies(d.shape.capacity);
  // The flat grid saves validate()'s launch (about 3 µs on an H200) but its
  // blocks' decisions cost 1-3% of the copy: by default up to 256 MiB a batch,
  // and on Kokkos 4 only (on Kokkos 3.4 it was 10-15% slower than two launches
  // on rows of tens of MiB; perf_tests/RESULTS.md).
  constexpr bool flat_default = KOKKOS_VERSION >= 40000;
  const bool flat_fits = d.shape.capacity <= 8 && d.shape.capacity * d.shape.row_bytes <= (std::int64_t(256) << 20);
  const int fallback = host || sorted ? 0 : flat_default && flat_fits ? 2 : 1;
  const int design = static_cast<int>(impl::env_integer("STATEXFER_VALIDATE_AND_APPLY", fallback, 0, 2));
  if (design == 1 && !sorted) {
    using fused_functor = impl::FusedFunctor<ExecutionSpace>;
    const auto fprobe =
        typename fused_functor::policy_type(exec, 1, 1)
            .set_scratch_size(0, Kokkos::PerTeam(fused_functor::scratch_bytes(d.shape.capacity, d.bulk)));
    const int fmax = fprobe.team_size_max(d.fused_functor(), Kokkos::ParallelForTag());
    // A thread per command row in the load phase (hosts' teams of one have too few: two launches).
    if (fmax >= d.shape.capacity)
      d.fused_team_size = std::max<int>(static_cast<int>(d.shape.capacity), std::min(fmax, d.apply_team_size));
    // Every team validates its row again: worth saving a launch only while the
    // league is about one wave of the device's threads; past that every wave
    // pays the validation again and two launches are faster (RESULTS.md).
    if (d.fused_team_size > 0 && !impl::env_is_set("STATEXFER_VALIDATE_AND_APPLY") &&
        d.shape.capacity * d.shape.work_items > std::int64_t(exec.concurrency()) / d.fused_team_size)
      d.fused_team_size = 0;
  } else if (design == 2 && !sorted) {
    // Blocks of STATEXFER_FUSED_BLOCK threads (default 128; 256 was level,
    // 512 slower) moving 4 16-byte words each of a chunk (2 were 20-40%
    // slower on rows of tens of MiB: fewer bytes in flight); hosts: a team of
    // one per work item.
    using flat_functor = impl::FusedFlatFunctor<ExecutionSpace>;
    const int asked = static_cast<int>(impl::env_integer("STATEXFER_FUSED_BLOCK", 128, 32, 512));
    const int block =
        host ? 1
             : std::min(asked, typename flat_functor::policy_type(exec, 1, 1)
                                   .set_scratch_size(0, Kokkos::PerTeam(flat_functor::scratch_bytes(d.shape.capacity)))
                                   .team_size_max(d.template fused_flat_functor<impl::feature_all>(),
                                                  Kokkos::ParallelForTag()));
    const std::int64_t chunk =
        host ? (d.longest_item + 15) / 16 * 16 : std::int64_t(block) * flat_functor::words_per_thread * 16;
    const auto chunk_shift = [&](int rounds) {
      std::int32_t shift = 0;
      while ((chunk * rounds << shift) < d.longest_item) ++shift;
      return shift;
    };
    // Chunks a block moves, its decision's first and then the others
    // (STATEXFER_FUSED_ROUNDS). A grid of one round a block that is one to two
    // waves of resident blocks leaves most SMs idle in its second: there two
    // rounds a block make it one wave (jamba-v0.1 C = 1: 8.3 to 7.0 µs on the
    // H200, RESULTS.md); longer grids gained nothing from more rounds. The
    // launch bounds hold 1024 threads an SM, half of the device's concurrency.
    const std::int64_t blocks = d.shape.capacity * d.shape.work_items << chunk_shift(1);
    const std::int64_t resident = std::int64_t(exec.concurrency()) / 2 / block;
    // Read on hosts too (a value out of range is refused everywhere); they move an item a block.
    const auto asked_rounds = static_cast<int>(
        impl::env_integer("STATEXFER_FUSED_ROUNDS", blocks > resident && blocks <= 2 * resident ? 2 : 1, 1, 64));
    const int rounds = host ? 1 : asked_rounds;
    const std::int32_t shift = chunk_shift(rounds);
    // A GPU block needs a thread per edge byte of its chunk (fewer than 32).
    if ((host || block >= 32) &&
        d.shape.capacity * d.shape.work_items <= (std::numeric_limits<std::int32_t>::max() >> shift)) {
      d.fused_flat = true;
      d.fused_flat_team = block;
      d.fused_chunk_shift = shift;
      d.fused_chunk_bytes = static_cast<std::int32_t>(chunk);
      d.fused_rounds = rounds;
    }
  }
  // First launches with an empty batch: validate writes zeros, apply writes nothing.
  d.exec = exec;
  d.prepared = true;
  impl::prime_team_scratch(exec);
  validate(exec);
  apply(exec);
  validate_and_apply(exec);
  exec.fence();
}

template <class ExecutionSpace>
bool PreparedStateTransfer<ExecutionSpace>::prepared() const noexcept {
  return data_ && data_->prepared;
}

template <class ExecutionSpace>
const ExecutionSpace& PreparedStateTransfer<ExecutionSpace>::execution_space_instance() const {
  return ready("execution_space_instance", nullptr).exec;
}

template <class ExecutionSpace>
std::int64_t PreparedStateTransfer<ExecutionSpace>::capacity() const noexcept {
  return data_ ? data_->shape.capacity : 0;
}

template <class ExecutionSpace>
std::vector<std::string> PreparedStateTransfer<ExecutionSpace>::page_regions() const {
  std::vector<std::string> names;
  if (data_)
    for (const auto& b : data_->pages) names.push_back(b.region);
  return names;
}

template <class ExecutionSpace>
std::vector<std::string> PreparedStateTransfer<ExecutionSpace>::trailing_regions() const {
  std::vector<std::string> names;
  if (data_)
    for (const auto& b : data_->trailing_pages) names.push_back(b.region);
  return names;
}

template <class ExecutionSpace>
std::int64_t PreparedStateTransfer<ExecutionSpace>::work_items_per_command() const noexcept {
  return data_ ? data_->shape.work_items : 0;
}

}  // namespace statexfer

#endif
