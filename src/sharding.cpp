#include <statexfer/sharding.hpp>

#include <algorithm>
#include <stdexcept>

namespace statexfer {

namespace {

[[noreturn]] void refuse(const std::string& what) { throw std::invalid_argument("statexfer::ModelLayout: " + what); }

std::int64_t align16(std::int64_t n) { return (n + 15) / 16 * 16; }

}  // namespace

const char* to_string(Split split) noexcept {
  switch (split) {
    case Split::replicated: return "replicated";
    case Split::units: return "units";
  }
  return "unknown";
}

ModelLayout::ModelLayout(std::vector<ModelRegion> regions, std::int64_t page_tokens)
    : regions_(std::move(regions)), page_tokens_(page_tokens) {
  if (regions_.empty()) refuse("regions must not be empty");
  if (page_tokens_ <= 0) refuse("page_tokens must be positive, got " + std::to_string(page_tokens_));
  std::vector<std::string> names;
  for (std::size_t r = 0; r < regions_.size(); ++r) {
    const ModelRegion& region = regions_[r];
    if (region.name.empty()) refuse("region " + std::to_string(r) + " has no name");
    if (std::find(names.begin(), names.end(), region.name) != names.end())
      refuse("region '" + region.name + "' is named twice");
    names.push_back(region.name);
    if (region.blocks <= 0)
      refuse("region '" + region.name + "' must have a positive block count, got " + std::to_string(region.blocks));
    if (region.segments.empty()) refuse("region '" + region.name + "' has no segments");
    const auto element = static_cast<std::int64_t>(dtype_size(region.dtype));
    for (const Segment& s : region.segments) {
      const std::string where = "segment '" + s.name + "' of region '" + region.name + "'";
      if (s.units <= 0 || s.units > INT32_MAX)
        refuse(where + " must have 1.." + std::to_string(INT32_MAX) + " units, got " + std::to_string(s.units));
      if (s.unit_bytes <= 0) refuse(where + " must have a positive unit size, got " + std::to_string(s.unit_bytes));
      if (s.unit_bytes % element != 0)
        refuse(where + ": its unit of " + std::to_string(s.unit_bytes) + " bytes is not a whole number of " +
               to_string(region.dtype) + " elements");
      segments_.push_back(s);
      segment_region_.push_back(static_cast<int>(r));
    }
  }
}

const Segment& ModelLayout::segment(int s) const {
  if (s < 0 || s >= segment_count()) refuse("no segment " + std::to_string(s));
  return segments_[static_cast<std::size_t>(s)];
}

int ModelLayout::region_of(int s) const {
  (void)segment(s);
  return segment_region_[static_cast<std::size_t>(s)];
}

bool ModelLayout::splits(int tp) const noexcept {
  if (tp <= 0) return false;
  for (const Segment& s : segments_)
    if (s.split == Split::units && s.units % tp != 0 && tp % s.units != 0) return false;
  return true;
}

void ModelLayout::check_group(int tp, int rank, const char* what) const {
  if (tp <= 0) refuse(std::string(what) + " size must be positive, got " + std::to_string(tp));
  if (rank < 0 || rank >= tp)
    refuse(std::string(what) + " rank must be in 0.." + std::to_string(tp - 1) + ", got " + std::to_string(rank));
  for (const Segment& s : segments_)
    if (s.split == Split::units && s.units % tp != 0 && tp % s.units != 0)
      refuse(std::string(what) + " size " + std::to_string(tp) + " does not split segment '" + s.name + "' of " +
             std::to_string(s.units) + " units (neither divides the other)");
}

std::pair<std::int64_t, std::int64_t> ModelLayout::held(int s, int tp, int rank) const {
  check_group(tp, rank, "tp");
  const Segment& g = segment(s);
  if (g.split == Split::replicated) return {0, g.units};
  if (g.units % tp == 0) return {rank * g.units / tp, (rank + 1) * g.units / tp};
  const std::int64_t u = std::int64_t(rank) * g.units / tp;
  return {u, u + 1};
}

StateLayout ModelLayout::local(int tp, int rank) const {
  check_group(tp, rank, "tp");
  std::vector<Region> out;
  std::int64_t offset = 0;
  int s = 0;
  for (const ModelRegion& region : regions_) {
    std::int64_t block = 0;
    for (std::size_t k = 0; k < region.segments.size(); ++k, ++s) {
      const auto [begin, end] = held(s, tp, rank);
      block += (end - begin) * region.segments[k].unit_bytes;
    }
    offset = align16(offset);
    out.push_back({region.name, offset, region.blocks * block, region.dtype});
    offset += region.blocks * block;
  }
  return StateLayout(std::move(out), std::max<std::int64_t>(align16(offset), 16));
}

std::string ModelLayout::describe() const {
  std::string text = "stx-model/1 page_tokens=" + std::to_string(page_tokens_) + "\n";
  for (const ModelRegion& region : regions_) {
    text += "region " + region.name + " dtype=" + to_string(region.dtype) + " blocks=" + std::to_string(region.blocks) +
            "\n";
    for (const Segment& s : region.segments)
      text += " segment " + s.name + " units=" + std::to_string(s.units) +
              " unit_bytes=" + std::to_string(s.unit_bytes) + " split=" + to_string(s.split) + "\n";
  }
  return text;
}

std::uint64_t ModelLayout::fingerprint() const {
  std::uint64_t h = 14695981039346656037ULL;  // FNV-1a 64
  for (const unsigned char c : describe()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

std::vector<SliceRange> ModelLayout::slices(int src_tp, int src_rank, int dst_tp, int dst_rank) const {
  check_group(src_tp, src_rank, "source tp");
  check_group(dst_tp, dst_rank, "destination tp");
  std::vector<SliceRange> out;
  for (int s = 0; s < segment_count(); ++s) {
    const Segment& g = segments_[static_cast<std::size_t>(s)];
    const auto [a, b] = held(s, dst_tp, dst_rank);
    std::int64_t begin = a, end = a;
    if (g.split == Split::replicated) {
      // Every source rank holds it: the destination rank's turn among them sends it.
      if (src_rank == dst_rank % src_tp) end = b;
    } else if (g.units % src_tp == 0) {
      // One holder a unit: the source rank's own units among those wanted.
      begin = std::max(a, std::int64_t(src_rank) * g.units / src_tp);
      end = std::min(b, std::int64_t(src_rank + 1) * g.units / src_tp);
      if (end < begin) end = begin;
    } else {
      // Unit u is held by the k = src_tp / U ranks u k .. u k + k - 1; the destination rank's turn sends it.
      const std::int64_t k = src_tp / g.units, turn = dst_rank % k;
      if ((src_rank - turn) % k == 0) {
        const std::int64_t u = (src_rank - turn) / k;
        if (u >= a && u < b) begin = u, end = u + 1;
      }
    }
    out.push_back({s, static_cast<std::int32_t>(begin), static_cast<std::int32_t>(end)});
  }
  return out;
}

}  // namespace statexfer
