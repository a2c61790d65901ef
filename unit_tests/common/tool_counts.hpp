#ifndef STATEXFER_TEST_TOOL_COUNTS_HPP
#define STATEXFER_TEST_TOOL_COUNTS_HPP

// Kokkos Tools counters for the launch tests (large batches, host tier): what a
// call launched, allocated, fenced or copied. Not a feature header.

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace statexfer::test {

/// validate()'s launches at capacity c with `count` in num_ops and the default
/// options (docs/CONTRACT.md §8): one comparing every pair of rows up to 256
/// commands on GPUs and 128 on hosts, the sorted validation's two above, where
/// hosts leave out the second while the first decided every row (at most 128
/// live; a bad count has none).
inline int default_validate_launches(std::int64_t c, std::int64_t count, bool device) {
  const std::int64_t pairs = device ? 256 : 128, live = count >= 0 && count <= c ? count : 0;
  return c <= pairs ? 1 : device || live > pairs ? 2 : 1;
}

// Kokkos Tools counters for the launch tests, with the names of what was
// allocated or fenced (UnitTestMain.cpp tells Kokkos the tool needs no fences).
struct ToolCounts {
  static inline int parallel_for = 0, allocations = 0, fences = 0, deep_copies = 0;
  static inline std::string names;
  static void reset() {
    parallel_for = allocations = fences = deep_copies = 0;
    names.clear();
  }
  static void on_for(const char*, std::uint32_t, std::uint64_t* id) { ++parallel_for, *id = 0; }
  static void on_allocate(Kokkos_Profiling_SpaceHandle, const char* label, const void*, std::uint64_t bytes) {
    ++allocations;
    names += std::string(" allocate '") + label + "' (" + std::to_string(bytes) + " bytes);";
  }
  static void on_fence(const char* name, std::uint32_t, std::uint64_t* id) {
    *id = 0;
    // Kokkos' Threads backend ends every parallel dispatch with a fence of its
    // own under this name (Kokkos_Threads_Parallel*.hpp: its kernels complete
    // before the dispatch returns). That is the backend's, not the library's:
    // a fence the library asked for has another name.
    if (std::string(name) == "Kokkos::ThreadsInternal::fence: Unnamed Instance Fence") return;
    ++fences;
    names += std::string(" fence '") + name + "';";
  }
  static void on_deep_copy(Kokkos_Profiling_SpaceHandle, const char* dst, const void*, Kokkos_Profiling_SpaceHandle,
                           const char*, const void*, std::uint64_t) {
    ++deep_copies;
    names += std::string(" deep_copy to '") + dst + "';";
  }
  /// Runs `body` with the counters, from zero, installed as Kokkos Tools callbacks.
  template <class Body>
  static void count(Body&& body) {
    namespace kt = Kokkos::Tools::Experimental;
    const auto saved = kt::get_callbacks();
    reset();
    kt::set_begin_parallel_for_callback(&on_for);
    kt::set_allocate_data_callback(&on_allocate);
    kt::set_begin_fence_callback(&on_fence);
    kt::set_begin_deep_copy_callback(&on_deep_copy);
    body();
    kt::set_callbacks(saved);
  }
  /// What stream capture needs: no allocation, no fence, no deep copy.
  static void expect_capturable() {
    EXPECT_EQ(allocations, 0) << names;
    EXPECT_EQ(fences, 0) << names;
    EXPECT_EQ(deep_copies, 0) << names;
  }
};

/// validate() then apply() of `transfer` on `exec`, counted: validate()'s default
/// launches at capacity c with `count` in num_ops, apply()'s one, and nothing
/// that stops a stream capture.
template <class Transfer, class Exec>
void expect_default_launches(const Transfer& transfer, const Exec& exec, std::int64_t c, std::int64_t count,
                             bool device) {
  int validate_launches = 0;
  ToolCounts::count([&] {
    transfer.validate(exec);
    validate_launches = ToolCounts::parallel_for;
    transfer.apply(exec);
  });
  exec.fence();
  EXPECT_EQ(validate_launches, default_validate_launches(c, count, device));
  EXPECT_EQ(ToolCounts::parallel_for, validate_launches + 1);
  ToolCounts::expect_capturable();
}

}  // namespace statexfer::test

#endif
