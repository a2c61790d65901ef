#ifndef STATEXFER_TEST_RUN_CASE_IMPL_HPP
#define STATEXFER_TEST_RUN_CASE_IMPL_HPP

// run_case<ExecutionSpace>: included at the end of run_case.hpp. Only public
// Kokkos API shared by 3.4 and 4.x (Views, deep_copy, fence), so that it builds
// for Serial, OpenMP and, through nvcc, Cuda.

#include <Kokkos_Core.hpp>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <statexfer/statexfer.hpp>

#include "case.hpp"

namespace statexfer::test {

namespace run_case_detail {

template <class T, int Rank>
struct HostViewType;
template <class T>
struct HostViewType<T, 1> {
  using type = Kokkos::View<T*, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
};
template <class T>
struct HostViewType<T, 2> {
  using type = Kokkos::View<T**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
};

inline const NpyArray& input(const Case& c, const std::string& stem) {
  const auto it = c.arrays.find(stem);
  // load_case() guarantees every input; a hand-built Case may lack one.
  if (it == c.arrays.end()) throw CaseError(c.dir.string() + ": the case has no array '" + stem + "'");
  return it->second;
}

inline void require(const Case& c, const std::string& stem, const NpyArray& a, DType dtype, std::size_t rank) {
  if (a.dtype != dtype || a.shape.size() != rank)
    throw CaseError(c.dir.string() + ": array '" + stem + "' must be " + to_string(dtype) + " of rank " +
                    std::to_string(rank));
}

/// A new device View holding a copy of the rank-1 case array `stem` of type T.
template <class T, class MemorySpace>
Kokkos::View<T*, MemorySpace> upload1(const Case& c, const std::string& stem, DType dtype) {
  const NpyArray& a = input(c, stem);
  require(c, stem, a, dtype, 1);
  const auto n = static_cast<std::size_t>(a.shape[0]);
  Kokkos::View<T*, MemorySpace> v(Kokkos::view_alloc(Kokkos::WithoutInitializing, "statexfer::test::" + stem), n);
  Kokkos::deep_copy(v, typename HostViewType<const T, 1>::type(a.data<T>(), n));
  return v;
}

/// A new device View holding a copy of the rank-2 case array `stem` of type T.
template <class T, class MemorySpace>
Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> upload2(const Case& c, const std::string& stem, DType dtype) {
  const NpyArray& a = input(c, stem);
  require(c, stem, a, dtype, 2);
  const auto n0 = static_cast<std::size_t>(a.shape[0]), n1 = static_cast<std::size_t>(a.shape[1]);
  Kokkos::View<T**, Kokkos::LayoutRight, MemorySpace> v(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "statexfer::test::" + stem), n0, n1);
  Kokkos::deep_copy(v, typename HostViewType<const T, 2>::type(a.data<T>(), n0, n1));
  return v;
}

/// Element i of the rank-1 case array `stem` of type T, which must have `extent` elements.
template <class T>
T command_value(const Case& c, const std::string& stem, DType dtype, std::int64_t extent, std::int64_t i) {
  const NpyArray& a = input(c, stem);
  require(c, stem, a, dtype, 1);
  if (a.shape[0] != extent)
    throw CaseError(c.dir.string() + ": array '" + stem + "' has " + std::to_string(a.shape[0]) +
                    " elements, the commands " + std::to_string(extent));
  return a.data<T>()[i];
}

/// The case's command arrays and num_ops as one batch.
template <class ExecutionSpace>
CommandBatch<ExecutionSpace> command_batch(const Case& c, std::int64_t capacity) {
  CommandBatch<ExecutionSpace> batch(capacity);
  for (std::int64_t i = 0; i < capacity; ++i)
    batch.set(i, {command_value<std::int64_t>(c, "request_slots", DType::int64, capacity, i),
                  command_value<std::int64_t>(c, "source_slots", DType::int64, capacity, i),
                  command_value<std::int64_t>(c, "destination_slots", DType::int64, capacity, i),
                  command_value<std::int32_t>(c, "operation", DType::int32, capacity, i),
                  command_value<std::int64_t>(c, "expected_consumed", DType::int64, capacity, i), 0});
  batch.set_num_ops(command_value<std::int32_t>(c, "num_ops", DType::int32, 1, 0));
  return batch;
}

/// A host NpyArray holding a copy of a device View (rank 1 or 2, contiguous).
template <class View>
NpyArray download(const View& v, DType dtype) {
  using T = typename View::non_const_value_type;
  NpyArray a;
  a.dtype = dtype;
  for (unsigned r = 0; r < View::rank; ++r) a.shape.push_back(static_cast<std::int64_t>(v.extent(r)));
  a.bytes.resize(v.size() * sizeof(T));
  if constexpr (View::rank == 1)
    Kokkos::deep_copy(typename HostViewType<T, 1>::type(a.data<T>(), v.extent(0)), v);
  else
    Kokkos::deep_copy(typename HostViewType<T, 2>::type(a.data<T>(), v.extent(0), v.extent(1)), v);
  return a;
}

}  // namespace run_case_detail

template <class ExecutionSpace>
CaseOutputs run_case(const Case& c, Steps steps, const TransferOptions& options) {
  namespace d = run_case_detail;
  using memory_space = typename ExecutionSpace::memory_space;
  const CaseSpec& s = c.spec;
  CaseOutputs out;
  ExecutionSpace exec;

  // The Views the transfer binds; they outlive it (it holds them by reference count anyway).
  auto backing = d::upload2<std::uint8_t, memory_space>(c, "backing", DType::uint8);
  auto capacity = d::upload1<std::int64_t, memory_space>(c, "memory_capacity", DType::int64);
  auto tables = d::upload2<std::int32_t, memory_space>(c, "tables", DType::int32);
  auto state_rows = d::upload2<std::int64_t, memory_space>(c, "state_rows", DType::int64);
  auto consumed = d::upload2<std::int64_t, memory_space>(c, "request_consumed", DType::int64);
  PageTable<ExecutionSpace> trailing_tables;
  if (c.arrays.count("trailing_tables"))
    trailing_tables = d::upload2<std::int32_t, memory_space>(c, "trailing_tables", DType::int32);
  std::map<std::string, typename PageBinding<ExecutionSpace>::cache_view> caches;
  const std::vector<std::string> names = binding_names(s);
  for (const auto& name : names)
    caches[name] = d::upload2<std::uint8_t, memory_space>(c, "cache_" + name, DType::uint8);

  StateCommands<ExecutionSpace> commands;
  std::optional<PreparedStateTransfer<ExecutionSpace>> transfer;
  // Everything the library checks on the host: the layout, the pool, the
  // command capacity, the transfer; std::invalid_argument is the case's answer.
  try {
    StatePool<ExecutionSpace> pool(StateLayout(s.regions, s.row_bytes), backing, capacity);
    commands = StateCommands<ExecutionSpace>::allocate(s.capacity);
    TransferConfig<ExecutionSpace> config;
    config.page_tokens = s.page_tokens;
    config.state_rows = state_rows;
    config.requests.consumed_tokens = consumed;
    config.trailing_tables = trailing_tables;
    config.excluded_regions = s.excluded_regions;
    config.options = options;
    for (const auto& name : s.pages) config.pages.push_back({name, caches.at(name)});
    for (const auto& name : s.trailing_pages) config.trailing_pages.push_back({name, caches.at(name)});
    transfer.emplace(pool, commands, tables, config);
    transfer->prepare(exec);
    out.launch_summary = transfer->launch_summary();
    out.work_items = transfer->work_items_per_command();
  } catch (const std::invalid_argument& e) {
    out.construct_error = e.what();
    return out;
  }

  // The commands arrive after prepare(), which requires num_ops == 0 (as an
  // engine uploads each step's batch into the captured buffers): one batch, one copy.
  const CommandBatch<ExecutionSpace> batch = d::command_batch<ExecutionSpace>(c, s.capacity);
  commands.upload(exec, batch);

  if (steps == Steps::fused) {
    transfer->validate_and_apply(exec);
  } else {
    transfer->validate(exec);
    transfer->apply(exec);
  }
  exec.fence();

  out.errors = d::download(commands.errors, DType::int32);
  out.backing = d::download(backing, DType::uint8);
  for (const auto& name : names) out.caches[name] = d::download(caches.at(name), DType::uint8);
  return out;
}

}  // namespace statexfer::test

#endif
