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
#include "claims_checks.hpp"
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
  impl::check_options(config.options);
  d.options = config.options;
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
  if (config.state_rows.extent(0) != cu || config.state_rows.extent(1) != static_cast<std::size_t>(state_row_columns))
    reject("state_rows must be int64 [" + std::to_string(c) + ", " + std::to_string(state_row_columns) + "], got " +
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
  if (!config.claims.empty()) impl::check_claims(pool, config.host_tier, config.claims, inputs, written, errors);
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
  d.claims = config.claims;

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

  // Bindings and the work map, built once on the host. The compact grid's map joins a binding's row bytes
  // and cache pages (work_joint tiles) where every row and page of it lies at one offset modulo 16: a
  // restore's region then moves to both in the same 16-byte words (compact_apply_kernel.hpp).
  const auto mod16 = [](const void* p) { return static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(p) % 16); };
  const std::int64_t rows_mod16 = mod16(pool.backing().data());
  const bool joins = config.options.expert.compact_joint_pages == 1 && layout.row_bytes() % 16 == 0 &&
                     (config.host_tier.empty() || mod16(config.host_tier.backing().data()) == rows_mod16);
  std::vector<impl::BindingEntry> entries;
  std::vector<impl::BindingSpan> spans;
  for (const auto& b : d.pages) {
    const Region& r = layout.region(b.region);
    spans.push_back({static_cast<std::int32_t>(entries.size()), r.offset, r.nbytes, 1, false});
    entries.push_back({b.cache.data(), r.offset, r.nbytes, 0, 0});
  }
  for (const auto& b : d.trailing_pages) {
    const Region& r = layout.region(b.region);
    spans.push_back({static_cast<std::int32_t>(entries.size()), r.offset, r.nbytes / 2, 2, false});
    entries.push_back({b.cache.data(), r.offset, r.nbytes / 2, 1, 0});
  }
  std::vector<impl::BindingSpan> joint_spans = spans;
  bool any_joint = false;
  for (impl::BindingSpan& s : joint_spans) {
    const std::uint8_t* cache = entries[static_cast<std::size_t>(s.binding)].cache;
    s.joint = joins && s.page_bytes % 16 == 0 && mod16(cache) == (rows_mod16 + s.offset) % 16;
    any_joint = any_joint || s.joint;
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> excluded_ranges;
  for (const auto& name : excluded) {
    const Region& r = layout.region(name);
    excluded_ranges.emplace_back(r.offset, r.offset + r.nbytes);
  }
  const std::int64_t tile =
      config.options.expert.apply_tile_bytes > 0 ? config.options.expert.apply_tile_bytes : impl::tile_bytes;
  // A work map whose items hold their binding.
  const auto work_map = [&](const std::vector<impl::BindingSpan>& bindings) {
    std::vector<impl::WorkItem> w =
        impl::build_work_map(layout.row_bytes(), excluded_ranges, bindings, tile, key_offset);
    for (impl::WorkItem& item : w)
      if (item.binding >= 0) item.page = entries[static_cast<std::size_t>(item.binding)];
    return w;
  };
  const std::vector<impl::WorkItem> work = work_map(spans);
  if (static_cast<std::int64_t>(work.size()) * c > std::numeric_limits<std::int32_t>::max())
    reject("apply() would need " + std::to_string(work.size()) + " work items per command (row_bytes " +
           std::to_string(layout.row_bytes()) + "), times capacity " + std::to_string(c) + " over 2^31 - 1");
  d.shape.work_items = static_cast<std::int32_t>(work.size());
  for (const impl::WorkItem& item : work) d.longest_item = std::max(d.longest_item, item.length);

  d.items = Kokkos::View<impl::WorkItem*, memory_space>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "statexfer::work_items"), work.size());
  // The compact grid's map: fewer items where it joins a region's row bytes and page (never more).
  const std::vector<impl::WorkItem> joint_work = any_joint ? work_map(joint_spans) : std::vector<impl::WorkItem>{};
  const std::vector<impl::WorkItem>& compact = joint_work.empty() ? work : joint_work;
  d.compact_work_items = static_cast<std::int32_t>(compact.size());
  for (const impl::WorkItem& item : compact) d.compact_longest_item = std::max(d.compact_longest_item, item.length);
  d.compact_items =
      joint_work.empty()
          ? d.items
          : Kokkos::View<impl::WorkItem*, memory_space>(
                Kokkos::view_alloc(Kokkos::WithoutInitializing, "statexfer::compact_work_items"), joint_work.size());
  d.plan = Kokkos::View<impl::RowPlan*, memory_space>(Kokkos::view_alloc(ExecutionSpace(), "statexfer::plan"), cu);
  d.moves = Kokkos::View<std::int32_t*, memory_space>(Kokkos::view_alloc(ExecutionSpace(), "statexfer::move_list"),
                                                      impl::move_rows + cu);
  d.listed =
      Kokkos::View<impl::RowPlan*, memory_space>(Kokkos::view_alloc(ExecutionSpace(), "statexfer::listed_plans"), cu);
  if (!d.claims.empty())
    d.claimed =
        Kokkos::View<std::int64_t*, memory_space>(Kokkos::view_alloc(ExecutionSpace(), "statexfer::claimed"), 2 * cu);
  constexpr bool host = std::is_same_v<memory_space, Kokkos::HostSpace>;
  if (impl::sorts_validation(c, config.options.expert, host)) {
    const auto& o = config.options.expert;
    d.sorted.allocate(d.shape, static_cast<int>(impl::pairs_capacity(o, host)),
                      o.validate_chunk > 0 ? o.validate_chunk : impl::default_sort_chunk(host),
                      o.validate_groups > 0 ? o.validate_groups : impl::default_sort_groups(host),
                      impl::counts_keys(o, host, c));
  }
  using HostItems = Kokkos::View<const impl::WorkItem*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  Kokkos::deep_copy(d.items, HostItems(work.data(), work.size()));
  if (!joint_work.empty()) Kokkos::deep_copy(d.compact_items, HostItems(joint_work.data(), joint_work.size()));
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
  // What the device allows, then the plan (impl::choose_launch_plan, a pure function).
  impl::DeviceLimits limits;
  limits.host = host;
  limits.kokkos4 = KOKKOS_VERSION >= 40000;
  if constexpr (!host) limits.bulk = impl::device_has_bulk_copy(exec);  // Hopper and newer
  limits.concurrency = exec.concurrency();
  using validate_functor = impl::ValidateFunctor<ExecutionSpace>;
  limits.vector_length_max = validate_functor::policy_type::vector_length_max();
  limits.validate_max_threads = validate_functor::max_threads;
  // The pair compares' rows: the capacity's, or where validate() sorts, its first launch's (SortedFirstFunctor).
  const bool sorts = impl::sorts_validation(d.shape.capacity, d.options.expert, host);
  const std::int64_t pair_rows = sorts ? impl::pairs_capacity(d.options.expert, host) : d.shape.capacity;
  for (int i = 0, lanes = 1; i < 7 && lanes <= limits.vector_length_max; ++i, lanes *= 2)
    limits.validate_threads_max[i] =
        typename validate_functor::policy_type(exec, 1, 1, lanes)
            .set_scratch_size(0, Kokkos::PerTeam(validate_functor::scratch_bytes(pair_rows) +
                                                 impl::list_scratch_bytes(validate_functor::max_threads)))
            .team_size_max(d.validate_functor(), Kokkos::ParallelForTag());
  using apply_functor = impl::ApplyFunctor<ExecutionSpace>;
  limits.apply_team_max =
      typename apply_functor::policy_type(exec, 1, 1).team_size_max(d.apply_functor(), Kokkos::ParallelForTag());
  const bool bulk = !host && limits.bulk && !d.options.expert.no_bulk_copies;
  using fused_functor = impl::FusedFunctor<ExecutionSpace>;
  limits.fused_team_max = typename fused_functor::policy_type(exec, 1, 1)
                              .set_scratch_size(0, Kokkos::PerTeam(fused_functor::scratch_bytes(bulk)))
                              .team_size_max(d.fused_functor(), Kokkos::ParallelForTag());
  using flat_functor = impl::FusedFlatFunctor<ExecutionSpace, impl::feature_all>;
  limits.fused_flat_words = flat_functor::words_per_thread;
  limits.fused_flat_team_max =
      typename flat_functor::policy_type(exec, 1, 1)
          .set_scratch_size(0, Kokkos::PerTeam(flat_functor::scratch_bytes(d.shape.capacity)))
          .team_size_max(d.template fused_flat_functor<impl::feature_all>(), Kokkos::ParallelForTag());
  using persistent_functor = impl::PersistentFunctor<ExecutionSpace, impl::feature_every>;
  if (d.shape.capacity <= max_capacity)
    limits.persistent_team_max =
        typename persistent_functor::policy_type(exec, 1, 1)
            .set_scratch_size(0, Kokkos::PerTeam(persistent_functor::scratch_bytes(d.shape.capacity)))
            .team_size_max(d.template persistent_functor<impl::feature_every>(true), Kokkos::ParallelForTag());
  if (sorts) {
    limits.sort_team_max = d.sorted.team_size_max(exec, d.validate_functor());
    limits.sort_teams = d.sorted.teams();
    limits.sort_chunk = d.sorted.work.chunk;
  }
  impl::PlanShape plan_shape;
  plan_shape.capacity = d.shape.capacity;
  plan_shape.work_items = d.shape.work_items;
  plan_shape.longest_item = d.longest_item;
  plan_shape.compact_work_items = d.compact_work_items;
  plan_shape.compact_longest_item = d.compact_longest_item;
  plan_shape.row_bytes = d.shape.row_bytes;
  plan_shape.remapping_commits = d.shape.positions > 0 && d.shape.remap != 0;
  plan_shape.claims = !d.claims.empty();
  d.launches = impl::choose_launch_plan(plan_shape, limits, d.options);
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
