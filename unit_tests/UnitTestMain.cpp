#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

namespace {

// The launch tests count launches, allocations and fences through Kokkos Tools
// callbacks. A tool that does not say otherwise makes Kokkos fence globally
// around every kernel it is told of; this one says it needs no such fence, so
// the fences counted are the library's own. Kokkos asks at initialisation.
void request_tool_settings(const std::uint32_t, Kokkos_Tools_ToolSettings* settings) {
  settings->requires_global_fencing = false;
}

}  // namespace

int main(int argc, char* argv[]) {
  auto callbacks = Kokkos::Tools::Experimental::get_callbacks();
  callbacks.request_tool_settings = &request_tool_settings;
  Kokkos::Tools::Experimental::set_callbacks(callbacks);
  Kokkos::initialize(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int result = RUN_ALL_TESTS();
  Kokkos::finalize();
  return result;
}
