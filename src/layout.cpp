#include <statexfer/layout.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace statexfer {

std::size_t dtype_size(DType type) noexcept {
  switch (type) {
    case DType::uint8: return 1;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::float16: return 2;
    case DType::bfloat16: return 2;
    case DType::float32: return 4;
  }
  return 0;
}

const char* to_string(DType type) noexcept {
  switch (type) {
    case DType::uint8: return "uint8";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
    case DType::float32: return "float32";
  }
  return "unknown";
}

DType dtype_from_string(std::string_view name) {
  for (DType t : {DType::uint8, DType::int32, DType::int64, DType::float16, DType::bfloat16, DType::float32})
    if (name == to_string(t)) return t;
  throw std::invalid_argument("statexfer: unknown dtype '" + std::string(name) + "'");
}

StateLayout::StateLayout(std::vector<Region> regions, std::int64_t row_bytes)
    : regions_(std::move(regions)), row_bytes_(row_bytes) {
  const std::string who = "statexfer::StateLayout: ";
  if (row_bytes_ <= 0)
    throw std::invalid_argument(who + "row_bytes must be positive, got " + std::to_string(row_bytes_));
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    const Region& r = regions_[i];
    if (r.name.empty()) throw std::invalid_argument(who + "region " + std::to_string(i) + " has an empty name");
    if (r.nbytes <= 0)
      throw std::invalid_argument(who + "region '" + r.name + "' must have a positive size, got " +
                                  std::to_string(r.nbytes));
    if (r.offset < 0 || r.offset > row_bytes_ - r.nbytes)
      throw std::invalid_argument(who + "region '" + r.name + "' [" + std::to_string(r.offset) + ", " +
                                  std::to_string(r.offset + r.nbytes) + ") is not inside the row of " +
                                  std::to_string(row_bytes_) + " bytes");
    if (r.nbytes % static_cast<std::int64_t>(dtype_size(r.dtype)) != 0)
      throw std::invalid_argument(who + "region '" + r.name + "' size " + std::to_string(r.nbytes) +
                                  " is not a multiple of its " + to_string(r.dtype) + " elements");
    for (std::size_t j = 0; j < i; ++j) {
      const Region& o = regions_[j];
      if (o.name == r.name) throw std::invalid_argument(who + "region name '" + r.name + "' appears twice");
      if (r.offset < o.offset + o.nbytes && o.offset < r.offset + r.nbytes)
        throw std::invalid_argument(who + "regions '" + o.name + "' and '" + r.name + "' overlap");
    }
  }
}

StateLayout StateLayout::pack(const std::vector<Field>& fields) {
  std::vector<Region> regions;
  std::int64_t offset = 0;
  for (const Field& f : fields) {
    const auto size = static_cast<std::int64_t>(dtype_size(f.dtype));
    const std::int64_t align = f.dtype == DType::uint8 ? 1 : std::max<std::int64_t>(size, 8);
    offset = (offset + align - 1) / align * align;
    regions.push_back({f.name, offset, f.nbytes, f.dtype});
    offset += f.nbytes;
  }
  return StateLayout(std::move(regions), std::max<std::int64_t>((offset + 15) / 16 * 16, 16));
}

bool StateLayout::contains(std::string_view name) const noexcept {
  return std::any_of(regions_.begin(), regions_.end(), [&](const Region& r) { return r.name == name; });
}

const Region& StateLayout::region(std::string_view name) const {
  for (const Region& r : regions_)
    if (r.name == name) return r;
  throw std::invalid_argument("statexfer::StateLayout: no region named '" + std::string(name) + "'");
}

}  // namespace statexfer
