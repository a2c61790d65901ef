// The one Google Benchmark main: initialises Kokkos and records the configuration
// (backend, device, Kokkos version, statexfer version) in the JSON context.

#include <Kokkos_Core.hpp>
#include <benchmark/benchmark.h>

#include <sstream>

#include <statexfer/version.hpp>

#ifdef KOKKOS_ENABLE_CUDA
#include <cuda_runtime.h>
#endif

int main(int argc, char* argv[]) {
  Kokkos::initialize(argc, argv);
  {
    benchmark::Initialize(&argc, argv);
    benchmark::AddCustomContext("statexfer_version", STATEXFER_VERSION_STRING);
    benchmark::AddCustomContext("kokkos_version", std::to_string(KOKKOS_VERSION));
    benchmark::AddCustomContext("execution_space", Kokkos::DefaultExecutionSpace::name());
    benchmark::AddCustomContext("concurrency", std::to_string(Kokkos::DefaultExecutionSpace().concurrency()));
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
