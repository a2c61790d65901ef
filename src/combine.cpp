// The error combiner's non-template parts.
#include <statexfer/combine.hpp>

namespace statexfer {

const char* to_string(CombineBackend backend) noexcept {
  switch (backend) {
    case CombineBackend::none: return "none";
    case CombineBackend::mpi: return "mpi";
    case CombineBackend::nccl: return "nccl";
  }
  return "unknown";
}

// The order docs/CONTRACT.md §4 and §15 check codes in (5, 1, 2, 3, 4, 6, 7, then 0) is the combined order.
static_assert(combine_error_codes(0, 7) == 7 && combine_error_codes(7, 6) == 6 && combine_error_codes(0, 6) == 6 &&
              combine_error_codes(6, 4) == 4 && combine_error_codes(4, 3) == 3 && combine_error_codes(3, 2) == 2 &&
              combine_error_codes(2, 1) == 1 && combine_error_codes(1, 5) == 5 && combine_error_codes(0, 0) == 0 &&
              combine_error_codes(5, 0) == 5);
static_assert(error_from_priority(error_priority(0)) == 0 && error_from_priority(error_priority(1)) == 1 &&
              error_from_priority(error_priority(2)) == 2 && error_from_priority(error_priority(3)) == 3 &&
              error_from_priority(error_priority(4)) == 4 && error_from_priority(error_priority(5)) == 5 &&
              error_from_priority(error_priority(6)) == 6 && error_from_priority(error_priority(7)) == 7 &&
              error_from_priority(error_priority(9)) == -1);

}  // namespace statexfer
