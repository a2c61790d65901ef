#ifndef STATEXFER_SHARDING_HPP
#define STATEXFER_SHARDING_HPP

// The whole model's row and how tensor parallelism splits it (docs/CONTRACT.md
// §16): a ModelLayout describes every region of a request's state as blocks
// (layers, tokens) of segments of units (heads, groups), each segment with its
// split rule; each (TP size, rank) then has its local StateLayout, and any two
// layouts of one model, of different TP sizes, know which units each rank of
// one sends each rank of the other. Host code only.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <statexfer/layout.hpp>

namespace statexfer {

/// How a segment's units divide among the `T` ranks of a tensor-parallel group.
enum class Split : std::uint8_t {
  /// Every rank holds every unit (consumed_tokens, the prefix key).
  replicated,
  /// `U` units: where T divides U, rank r holds units [r U / T, (r + 1) U / T);
  /// where U divides T (U < T), rank r holds the one unit r U / T, which T / U
  /// ranks then hold alike (Mamba-2's B and C where groups < TP).
  units,
};
/// "replicated", "units".
const char* to_string(Split split) noexcept;

/// `units` units of `unit_bytes` bytes each, stored one after another.
struct Segment {
  std::string name;  ///< "heads", "x", "B", "C", ...
  std::int64_t units = 1;
  std::int64_t unit_bytes = 0;
  Split split = Split::units;
};

/// A region of the whole model's row: `blocks` repetitions (layers, tokens) of
/// its segments, in order. A rank's region holds, in every block, its units
/// of every segment, in the same order.
struct ModelRegion {
  std::string name;
  DType dtype = DType::uint8;
  std::int64_t blocks = 1;
  std::vector<Segment> segments;
};

/// The global units [begin, end) of one segment (numbered over all regions'
/// segments in order) that a record of a prefill/decode move carries.
struct SliceRange {
  std::int32_t segment = 0;
  std::int32_t begin = 0;
  std::int32_t end = 0;
};

/// A model's per-request state as a whole and as every tensor-parallel rank
/// holds it. The constructor refuses (std::invalid_argument naming the region
/// or segment) an empty region list, an empty or repeated name, a region
/// without segments, a non-positive size or count, and a size that is not a
/// whole number of the region's elements.
class ModelLayout {
 public:
  ModelLayout() = default;
  ModelLayout(std::vector<ModelRegion> regions, std::int64_t page_tokens);

  const std::vector<ModelRegion>& regions() const noexcept { return regions_; }
  std::int64_t page_tokens() const noexcept { return page_tokens_; }
  /// Segments over all regions.
  int segment_count() const noexcept { return static_cast<int>(segments_.size()); }
  /// Segment `s` (numbered over all regions in order) and its region's index.
  const Segment& segment(int s) const;
  int region_of(int s) const;

  /// Whether every split segment divides among `tp` ranks (T divides U or U divides T).
  bool splits(int tp) const noexcept;
  /// The global units [first, second) of segment `s` that rank `rank` of `tp` holds.
  std::pair<std::int64_t, std::int64_t> held(int s, int tp, int rank) const;
  /// Rank `rank` of `tp`'s row: every region in order at a 16-byte-aligned
  /// offset, holding the rank's units of every block; the row rounded up to 16
  /// bytes. std::invalid_argument naming `tp` or `rank` when the layout does not split so.
  StateLayout local(int tp, int rank) const;
  /// The whole model's row: local(1, 0).
  StateLayout whole() const { return local(1, 0); }

  /// The canonical text of the description (regions, dtypes, blocks, segments,
  /// split rules, page tokens) and its 64-bit FNV-1a hash: equal for two
  /// layouts exactly when their descriptions are, whatever TP size each runs.
  std::string describe() const;
  std::uint64_t fingerprint() const;

  /// What rank `src_rank` of a group of `src_tp` sends rank `dst_rank` of a
  /// group of `dst_tp`: one range per segment (empty where it sends none of
  /// it). A unit that several source ranks hold is sent by one of them, chosen
  /// by the destination rank so that replicated bytes spread over the senders:
  /// every unit a destination rank holds comes from exactly one source rank.
  std::vector<SliceRange> slices(int src_tp, int src_rank, int dst_tp, int dst_rank) const;

 private:
  void check_group(int tp, int rank, const char* what) const;

  std::vector<ModelRegion> regions_;
  std::vector<Segment> segments_;
  std::vector<int> segment_region_;
  std::int64_t page_tokens_ = 0;
};

}  // namespace statexfer

#endif
