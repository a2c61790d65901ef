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

// The combined order (docs/CONTRACT.md §9): 5, 1, 2, 3, 8, 9, 11, 10, 4, 6, 7, then 0.
static_assert(combine_error_codes(0, 7) == 7 && combine_error_codes(7, 6) == 6 && combine_error_codes(0, 6) == 6 &&
              combine_error_codes(6, 4) == 4 && combine_error_codes(4, 10) == 10 && combine_error_codes(10, 11) == 11 &&
              combine_error_codes(11, 9) == 9 && combine_error_codes(9, 8) == 8 && combine_error_codes(8, 3) == 3 &&
              combine_error_codes(4, 3) == 3 && combine_error_codes(3, 2) == 2 && combine_error_codes(2, 1) == 1 &&
              combine_error_codes(1, 5) == 5 && combine_error_codes(0, 0) == 0 && combine_error_codes(5, 0) == 5);
constexpr bool every_code_round_trips() {
  for (std::int32_t code = 0; code <= 11; ++code)
    if (error_from_priority(error_priority(code)) != code) return false;
  return error_from_priority(error_priority(12)) == -1 && error_from_priority(error_priority(-1)) == -1;
}
static_assert(every_code_round_trips());

}  // namespace statexfer
