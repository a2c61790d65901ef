// The one Google Benchmark main: reads the shape options (before Kokkos and
// Google Benchmark see argv), initialises Kokkos, registers the selected shapes
// and records the configuration (backend, device, Kokkos version, statexfer
// version, shape sets) in the JSON context.
//
//   --set NAME          a built-in set: facts (the default: FACTS.md's shapes, the
//                       sweeps, validate-capacity), models (MODELS.md), tiers
//                       (host tier moves beside device commands, BenchTier.cpp),
//                       tier-streams (an offload on its own stream beside a device
//                       batch, BenchTierStreams.cpp), speculative (commits and
//                       prefix keys, BenchSpeculative.cpp), steps (upload + replay
//                       + synchronisation, BenchStep.cpp), partial (partly filled
//                       batches, BenchPartial.cpp), exchange (prefill/decode
//                       export and import beside the copy kernel, BenchExchange.cpp), all
//   --shape SPEC        NAME:C:ROW_BYTES:PAGE_REGIONS:PAGE_BYTES[:TRAILING[:COUNT]]
//   --shapes FILE       one SPEC a line, # comments
//   --list-shapes       print the selected transfer shapes as SPEC lines and exit
// Any of --set/--shape/--shapes replaces the default set; they add up.

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <statexfer/version.hpp>

#include "bench_common.hpp"

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime.h>
#elif defined(KOKKOS_ENABLE_HIP)
#include <hip/hip_runtime.h>
#endif

namespace {

using namespace statexfer::bench;

const char* const usage =
    "statexfer-bench shape options (before Google Benchmark's):\n"
    "  --set NAME       built-in shapes: facts (default: FACTS.md shapes, sweeps, validate-capacity),\n"
    "                   models (hybrid models' per-request state, perf_tests/MODELS.md),\n"
    "                   tiers (host tier moves beside device commands), tier-streams (an offload\n"
    "                   on its own stream beside a device batch), speculative (commits, prefix\n"
    "                   keys), steps (upload + replay + synchronisation), partial (partly filled\n"
    "                   batches at C = 64..4096 beside the copy of the live bytes), exchange\n"
    "                   (prefill/decode export and import beside the copy kernel), all\n"
    "  --shape SPEC     NAME:C:ROW_BYTES:PAGE_REGIONS:PAGE_BYTES[:TRAILING[:COUNT]], repeatable;\n"
    "                   C a power of two 1..4096, COUNT live commands 1..C (default C),\n"
    "                   TRAILING trailing bindings (default 0); bytes as 4096, 64KiB, 50MiB, 1GiB\n"
    "  --shapes FILE    one SPEC a line, # comments\n"
    "  --list-shapes    print the selected shapes as SPEC lines (the input of\n"
    "                   perf_tests/reference_shapes.py) and exit\n"
    "Any of --set/--shape/--shapes replaces the default set; they add up.\n\n";

struct Selection {
  std::vector<std::string> sets;
  std::vector<NamedShape> shapes;  // --shape and --shapes, in order
  bool list = false;
};

// Removes the shape options from argv; throws SpecError.
Selection take_shape_options(int& argc, char* argv[]) {
  Selection sel;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string opt, value;
    for (const char* name : {"--set", "--shape", "--shapes"}) {
      const std::string n = name;
      if (arg == n) {
        if (i + 1 >= argc) throw SpecError(n + ": missing value");
        opt = n, value = argv[++i];
      } else if (arg.compare(0, n.size() + 1, n + "=") == 0) {
        opt = n, value = arg.substr(n.size() + 1);
      }
    }
    if (opt == "--set") {
      if (value == "all") {
        for (const auto& s : set_names()) sel.sets.push_back(s);
      } else {
        builtin_set(value, true);  // throws for an unknown set
        sel.sets.push_back(value);
      }
    } else if (opt == "--shape") {
      sel.shapes.push_back(parse_spec(value));
    } else if (opt == "--shapes") {
      for (auto& s : read_spec_file(value)) sel.shapes.push_back(std::move(s));
    } else if (arg == "--list-shapes") {
      sel.list = true;
    } else {
      if (arg == "--help" || arg == "-h") std::fputs(usage, stdout);
      argv[out++] = argv[i];
    }
  }
  argc = out;
  argv[argc] = nullptr;
  if (sel.sets.empty() && sel.shapes.empty()) sel.sets.push_back("facts");
  return sel;
}

// The device's memory in bytes (0 on hosts and where it cannot be read): the partial and exchange sets' budget.
std::int64_t device_memory_bytes() {
#ifdef KOKKOS_ENABLE_CUDA
  std::size_t free = 0, total = 0;
  if (!std::is_same_v<Exec::memory_space, Kokkos::HostSpace> && cudaMemGetInfo(&free, &total) == cudaSuccess)
    return static_cast<std::int64_t>(total);
#elif defined(KOKKOS_ENABLE_HIP)
  std::size_t free = 0, total = 0;
  if (!std::is_same_v<Exec::memory_space, Kokkos::HostSpace> && hipMemGetInfo(&free, &total) == hipSuccess)
    return static_cast<std::int64_t>(total);
#endif
  return 0;
}

// The selected sets' shapes and the user's, each name once (SpecError otherwise).
std::vector<NamedShape> selected_shapes(const Selection& sel, bool host, std::int64_t device_memory) {
  std::vector<NamedShape> shapes;
  std::set<std::string> seen;
  for (const auto& name : sel.sets)
    if (seen.insert(name).second)
      for (auto& s : builtin_set(name, host, device_memory)) shapes.push_back(std::move(s));
  for (auto& s : sel.shapes) shapes.push_back(s);
  std::set<std::string> names;
  for (const auto& s : shapes)
    if (!names.insert(s.name).second) throw SpecError("shape name '" + s.name + "' is given twice");
  return shapes;
}

}  // namespace

int main(int argc, char* argv[]) {
  Selection sel;
  std::vector<NamedShape> shapes;
  const bool host = std::is_same_v<Exec::memory_space, Kokkos::HostSpace>;
  try {
    sel = take_shape_options(argc, argv);
    // Before Kokkos starts the sets take the budget of an unknown device; checked again below with the device's.
    shapes = selected_shapes(sel, host, 0);
  } catch (const SpecError& e) {
    std::cerr << "statexfer-bench: " << e.what() << "\n";
    return 2;
  }
  if (sel.list) {
    std::cout << "# statexfer-bench --list-shapes: NAME:C:ROW_BYTES:PAGE_REGIONS:PAGE_BYTES[:TRAILING[:COUNT]]\n";
    for (const auto& s : shapes)
      std::cout << (expressible(s) ? "" : "# not expressible as a spec (page tokens, width or gap): ") << format_spec(s)
                << "\n";
    return 0;
  }

  Kokkos::initialize(argc, argv);
  {
    const std::int64_t device_memory = device_memory_bytes();
    shapes = selected_shapes(sel, host, device_memory);  // the same names: no SpecError now
    const std::set<std::string> sets(sel.sets.begin(), sel.sets.end());
    register_transfer_shapes(shapes);
    if (sets.count("facts")) register_validate_capacity();
    if (sets.count("tiers")) register_tier_benchmarks();
    if (sets.count("speculative")) register_speculative_benchmarks();
    if (sets.count("steps")) register_step_benchmarks();
    if (sets.count("partial")) register_partial_benchmarks(shapes, host);
    if (sets.count("tier-streams")) register_tier_stream_benchmarks();
    if (sets.count("exchange")) register_exchange_benchmarks(host, device_memory);
    benchmark::Initialize(&argc, argv);
    benchmark::AddCustomContext("statexfer_version", STATEXFER_VERSION_STRING);
    benchmark::AddCustomContext("kokkos_version", std::to_string(KOKKOS_VERSION));
    benchmark::AddCustomContext("execution_space", Kokkos::DefaultExecutionSpace::name());
    benchmark::AddCustomContext("concurrency", std::to_string(Kokkos::DefaultExecutionSpace().concurrency()));
    std::string set_list;
    for (const auto& name : sets) set_list += (set_list.empty() ? "" : ",") + name;
    benchmark::AddCustomContext("shape_sets", set_list);
    benchmark::AddCustomContext("user_shapes", std::to_string(sel.shapes.size()));
    if (sets.count("partial")) {
      std::string skipped;
      for (const auto& s : partial_skipped(host, device_memory)) skipped += (skipped.empty() ? "" : "; ") + s;
      benchmark::AddCustomContext("partial_budget_GiB", std::to_string(memory_budget_bytes(host, device_memory) >> 30));
      benchmark::AddCustomContext("partial_skipped", skipped.empty() ? "none" : skipped);
    }
#ifdef KOKKOS_ENABLE_CUDA
    cudaDeviceProp prop{};
    int device = 0;
    cudaGetDevice(&device);
    cudaGetDeviceProperties(&prop, device);
    benchmark::AddCustomContext("device", prop.name);
    benchmark::AddCustomContext("device_sms", std::to_string(prop.multiProcessorCount));
#endif
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  }
  Kokkos::finalize();
  return 0;
}
