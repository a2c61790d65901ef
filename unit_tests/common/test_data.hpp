#ifndef STATEXFER_TEST_TEST_DATA_HPP
#define STATEXFER_TEST_TEST_DATA_HPP

// Where the conformance cases are: $STATEXFER_CASES_ROOT when set (a test binary
// copied to a GPU machine), else the folder the build extracted them into.

#include <cstdlib>
#include <filesystem>

namespace statexfer::test {

inline std::filesystem::path cases_root() {
  if (const char* env = std::getenv("STATEXFER_CASES_ROOT")) return env;
  return STATEXFER_CASES_ROOT;
}

}  // namespace statexfer::test

#endif
