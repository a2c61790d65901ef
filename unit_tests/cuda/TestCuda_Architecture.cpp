// Hopper's bulk copies (src/impl/bulk_copy.hpp) exist only in device code
// compiled for sm_90 or newer. An sm_80 (A100) build takes the portable copies
// on every device, an H200 included, where its PTX is compiled at load time;
// an sm_90 build takes the bulk copies on sm_90 and newer devices.
// launch_plan().bulk_copies says what prepare() found.

#include <cuda/TestCuda_Category.hpp>

#include <cuda_runtime.h>

#include <common/ctor_fixture.hpp>

namespace {

#if defined(KOKKOS_ARCH_HOPPER90)
constexpr int compiled_arch = 90;
#elif defined(KOKKOS_ARCH_AMPERE80)
constexpr int compiled_arch = 80;
#else
constexpr int compiled_arch = 0;  // a build for another architecture: not checked here
#endif

TEST(TEST_CATEGORY, cuda_bulk_copies_follow_the_compiled_architecture) {
  if (compiled_arch == 0) GTEST_SKIP() << "built for an architecture other than sm_80 and sm_90";
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, device), cudaSuccess);
  statexfer::test::CtorArgs<Kokkos::Cuda> s;
  auto t = s.make();
  t.prepare(Kokkos::Cuda());
  const bool expected = compiled_arch >= 90 && prop.major >= 9;
  EXPECT_EQ(t.launch_plan().bulk_copies, expected)
      << "compiled for sm_" << compiled_arch << ", running on sm_" << prop.major << prop.minor << " (" << prop.name
      << "): " << t.launch_summary();
}

}  // namespace
