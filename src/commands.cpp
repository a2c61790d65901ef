#include <statexfer/commands.hpp>
#include <statexfer/options.hpp>
#include <statexfer/speculative.hpp>

namespace statexfer {

const char* to_string(CommandError code) noexcept { return command_error_name(static_cast<std::int32_t>(code)); }

const char* command_error_name(std::int32_t code) noexcept {
  switch (code) {
    case 0: return "none";
    case 1: return "invalid_operation";
    case 2: return "invalid_slots";
    case 3: return "invalid_endpoint";
    case 4: return "alias_conflict";
    case 5: return "invalid_count";
    case 6: return "invalid_page";
    case 7: return "row_in_use";
    case 8: return "layout_mismatch";
    case 9: return "record_mismatch";
    case 10: return "checksum_mismatch";
    case 11: return "coverage_mismatch";
  }
  return "unknown";
}

bool is_valid_capacity(std::int64_t capacity) noexcept {
  return capacity >= 1 && capacity <= max_capacity && (capacity & (capacity - 1)) == 0;
}

bool is_valid_extended_capacity(std::int64_t capacity) noexcept {
  return capacity >= 1 && capacity <= max_extended_capacity && (capacity & (capacity - 1)) == 0;
}

const char* to_string(CommitMove move) noexcept {
  switch (move) {
    case CommitMove::remap: return "remap";
    case CommitMove::copy: return "copy";
  }
  return "unknown";
}

const char* to_string(FusedDesign design) noexcept {
  switch (design) {
    case FusedDesign::automatic: return "automatic";
    case FusedDesign::two_launches: return "two_launches";
    case FusedDesign::teams: return "teams";
    case FusedDesign::flat_grid: return "flat_grid";
    case FusedDesign::persistent: return "persistent";
  }
  return "unknown";
}

const char* to_string(ApplyDesign design) noexcept {
  switch (design) {
    case ApplyDesign::automatic: return "automatic";
    case ApplyDesign::teams: return "teams";
    case ApplyDesign::flat_grid: return "flat_grid";
    case ApplyDesign::persistent: return "persistent";
    case ApplyDesign::compact: return "compact";
  }
  return "unknown";
}

}  // namespace statexfer
