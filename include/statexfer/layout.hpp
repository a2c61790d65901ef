#ifndef STATEXFER_LAYOUT_HPP
#define STATEXFER_LAYOUT_HPP

// Named byte ranges inside every row of a state pool.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace statexfer {

/// Element type of a region. Only the byte size and the uint8/int64 distinction
/// matter to transfers; the other types let a layout describe real model state.
enum class DType : std::uint8_t { uint8, int32, int64, float16, bfloat16, float32 };

/// Size in bytes of one element of `type`.
std::size_t dtype_size(DType type) noexcept;
/// "uint8", "int64", ...
const char* to_string(DType type) noexcept;
/// Inverse of to_string; throws std::invalid_argument naming `name` if unknown.
DType dtype_from_string(std::string_view name);

/// A named byte range [offset, offset + nbytes) of every row.
struct Region {
  std::string name;
  std::int64_t offset = 0;
  std::int64_t nbytes = 0;
  DType dtype = DType::uint8;
};

/// The regions of a row and the row size. Construction checks that names are
/// unique and non-empty, sizes positive, every region inside the row, no two
/// overlapping (std::invalid_argument naming the region otherwise).
class StateLayout {
 public:
  StateLayout() = default;
  StateLayout(std::vector<Region> regions, std::int64_t row_bytes);

  /// Lay regions out in order, each aligned to max(element size, 8 for
  /// non-uint8), the row rounded up to 16 bytes: the reference module's automatic layout.
  struct Field {
    std::string name;
    std::int64_t nbytes;
    DType dtype;
  };
  static StateLayout pack(const std::vector<Field>& fields);

  const std::vector<Region>& regions() const noexcept { return regions_; }
  std::int64_t row_bytes() const noexcept { return row_bytes_; }
  bool contains(std::string_view name) const noexcept;
  /// The region called `name`; std::invalid_argument naming it if absent.
  const Region& region(std::string_view name) const;

 private:
  std::vector<Region> regions_;
  std::int64_t row_bytes_ = 0;
};

}  // namespace statexfer

#endif
