#include "impl/work_map.hpp"

#include <algorithm>
#include <map>

namespace statexfer::impl {

namespace {

void push_tiles(std::vector<WorkItem>& out, WorkKind kind, std::int64_t begin, std::int64_t end, std::int32_t binding,
                std::int32_t part, std::int64_t tile) {
  for (std::int64_t at = begin; at < end; at += tile)
    out.push_back({at, std::min(tile, end - at), kind, binding, part, 0, BindingEntry{}});
}

}  // namespace

std::vector<WorkItem> build_work_map(std::int64_t row_bytes,
                                     const std::vector<std::pair<std::int64_t, std::int64_t>>& excluded,
                                     const std::vector<BindingSpan>& bindings, std::int64_t tile,
                                     std::int64_t key_offset) {
  // Owner of each byte range: -3 the prefix key, -2 excluded, -1 plain, else
  // (binding, part) encoded as 2 * binding + part.
  std::map<std::int64_t, std::int64_t> cuts{{0, -1}, {row_bytes, -1}};
  auto paint = [&](std::int64_t begin, std::int64_t end, std::int64_t owner) {
    if (begin >= end) return;
    // Value in force at `end` before painting, then overwrite [begin, end).
    auto after = std::prev(cuts.upper_bound(end))->second;
    cuts.erase(cuts.lower_bound(begin), cuts.upper_bound(end));
    cuts[begin] = owner;
    cuts[end] = after;
  };
  for (const auto& b : bindings)
    for (std::int32_t part = 0; part < b.parts; ++part)
      paint(b.offset + part * b.page_bytes, b.offset + (part + 1) * b.page_bytes, 2 * b.binding + part);
  for (const auto& [begin, end] : excluded) paint(begin, end, -2);
  if (key_offset >= 0) paint(key_offset, key_offset + 8, -3);

  // Neighbouring ranges of one owner are one range.
  for (auto it = std::next(cuts.begin()); it != cuts.end() && it->first < row_bytes;)
    it = std::prev(it)->second == it->second ? cuts.erase(it) : std::next(it);

  std::vector<WorkItem> items;
  for (auto it = cuts.begin(); it != cuts.end() && it->first < row_bytes; ++it) {
    const auto next = std::next(it);
    const std::int64_t owner = it->second;
    if (owner == -2) continue;
    if (owner == -3) {
      push_tiles(items, work_key, it->first, next->first, -1, 0, tile);
      continue;
    }
    const std::int32_t binding = owner < 0 ? -1 : static_cast<std::int32_t>(owner / 2);
    const std::int32_t part = owner < 0 ? 0 : static_cast<std::int32_t>(owner % 2);
    const auto joint = [&](const BindingSpan& b) { return b.binding == binding && b.joint; };
    if (binding >= 0 && std::any_of(bindings.begin(), bindings.end(), joint)) continue;  // its work_joint tiles
    push_tiles(items, work_row, it->first, std::min(next->first, row_bytes), binding, part, tile);
  }
  for (const auto& b : bindings)
    for (std::int32_t part = 0; part < b.parts; ++part)
      push_tiles(items, b.joint ? work_joint : work_page, 0, b.page_bytes, b.binding, part, tile);
  return items;
}

}  // namespace statexfer::impl
