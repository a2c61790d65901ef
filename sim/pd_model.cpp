// --pd's model: the description of a real model's row (test_common/models.hpp,
// perf_tests/MODELS.md), and the bytes the simulated model writes into it: a
// function of the token prefix's state seed and the byte's place in the
// whole model's row, so that a rank's shard is a literal cut of the whole and
// a restored or imported state is byte for byte what recomputing gives.

#include "pd_model.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <test_common/models.hpp>

namespace statexfer::sim {

namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The 8 bytes of word `w` of the whole row of state `seed`.
std::uint64_t word_of(std::uint64_t seed, std::int64_t w) {
  return mix(seed ^ static_cast<std::uint64_t>(w) * 0xD6E8FEB86659FD93ULL);
}

// Bytes [first, first + n) of the whole row of state `seed` into `out`, a word at a time.
void fill(std::uint64_t seed, std::int64_t first, std::int64_t n, std::uint8_t* out) {
  std::int64_t at = first;
  const std::int64_t end = first + n;
  while (at < end) {
    const std::uint64_t v = word_of(seed, at >> 3);
    std::uint8_t bytes[8];
    std::memcpy(bytes, &v, 8);
    const std::int64_t stop = std::min(end, (at | 7) + 1);
    std::memcpy(out + (at - first), bytes + (at & 7), static_cast<std::size_t>(stop - at));
    at = stop;
  }
}

}  // namespace

const char* to_string(PdFaultType type) {
  switch (type) {
    case PdFaultType::flipped_byte: return "flipped-byte";
    case PdFaultType::other_layout: return "other-layout";
    case PdFaultType::stale_key: return "stale-key";
    case PdFaultType::missing_slice: return "missing-slice";
  }
  return "?";
}

PdFault parse_pd_fault(const std::string& text) {
  const auto bad = [&](const std::string& why) {
    throw std::invalid_argument("--inject-fault '" + text + "' under --pd: " + why +
                                " (RANK:STEP:KIND, KIND flipped-byte, other-layout, stale-key or missing-slice)");
  };
  const auto a = text.find(':'), b = a == std::string::npos ? a : text.find(':', a + 1);
  if (b == std::string::npos) bad("expected three fields");
  PdFault f;
  try {
    std::size_t n = 0;
    f.rank = std::stoi(text.substr(0, a), &n);
    if (n != a) bad("RANK is not a number");
    const std::string step = text.substr(a + 1, b - a - 1);
    f.step = std::stoll(step, &n);
    if (n != step.size()) bad("STEP is not a number");
  } catch (const std::logic_error&) {
    bad("RANK and STEP must be numbers");
  }
  if (f.rank < 0 || f.step < 0) bad("RANK and STEP must be >= 0");
  const std::string kind = text.substr(b + 1);
  if (kind == "flipped-byte")
    f.type = PdFaultType::flipped_byte;
  else if (kind == "other-layout")
    f.type = PdFaultType::other_layout;
  else if (kind == "stale-key")
    f.type = PdFaultType::stale_key;
  else if (kind == "missing-slice")
    f.type = PdFaultType::missing_slice;
  else
    bad("unknown KIND '" + kind + "'");
  return f;
}

statexfer::ModelLayout pd_model(const std::string& name, std::int64_t layers, std::int64_t page_tokens,
                                std::string* description) {
  models::HybridModel m = models::find(name);
  std::string text = name;
  if (layers > 0 && layers < m.recurrent_layers) {
    const std::int64_t attention =
        m.attention_layers == 0 ? 0 : std::max<std::int64_t>(1, m.attention_layers * layers / m.recurrent_layers);
    text += " (stand-in: " + std::to_string(layers) + " of " + std::to_string(m.recurrent_layers) +
            " recurrent layers, " + std::to_string(attention) + " of " + std::to_string(m.attention_layers) +
            " attention layers)";
    m.recurrent_layers = layers;
    m.attention_layers = attention;
  }
  if (description) *description = text;
  return statexfer::ModelLayout(models::model_regions(m, page_tokens, true), page_tokens);
}

std::int64_t pd_key(const PrefixKey& k) {
  const std::uint64_t h = mix(k.h1 ^ mix(k.h2 + static_cast<std::uint64_t>(k.len)));
  return static_cast<std::int64_t>(h >> 1) | 1;  // positive, never 0
}

void write_whole(const statexfer::ModelLayout& model, std::uint64_t seed, std::int64_t endpoint, std::int64_t key,
                 std::vector<std::uint8_t>& out) {
  const statexfer::StateLayout whole = model.whole();
  out.resize(static_cast<std::size_t>(whole.row_bytes()));
  fill(seed, 0, whole.row_bytes(), out.data());
  std::memcpy(out.data() + whole.region("consumed_tokens").offset, &endpoint, 8);
  std::memcpy(out.data() + whole.region("prefix_key").offset, &key, 8);
}

void write_shard(const statexfer::ModelLayout& model, int tp, int rank, std::uint64_t seed, std::int64_t endpoint,
                 std::int64_t key, std::uint8_t* out) {
  const statexfer::StateLayout whole = model.whole(), local = model.local(tp, rank);
  int s0 = 0;  // the region's first segment
  for (const statexfer::ModelRegion& region : model.regions()) {
    const std::int64_t from = whole.region(region.name).offset, to = local.region(region.name).offset;
    std::int64_t whole_block = 0, local_block = 0;
    for (std::size_t s = 0; s < region.segments.size(); ++s) {
      const auto held = model.held(s0 + static_cast<int>(s), tp, rank);
      whole_block += region.segments[s].units * region.segments[s].unit_bytes;
      local_block += (held.second - held.first) * region.segments[s].unit_bytes;
    }
    for (std::int64_t blk = 0; blk < region.blocks; ++blk) {
      std::int64_t w = from + blk * whole_block, l = to + blk * local_block;
      for (std::size_t s = 0; s < region.segments.size(); ++s) {
        const auto& seg = region.segments[s];
        const auto held = model.held(s0 + static_cast<int>(s), tp, rank);
        const std::int64_t first = w + held.first * seg.unit_bytes, n = (held.second - held.first) * seg.unit_bytes;
        fill(seed, first, n, out + l);
        w += seg.units * seg.unit_bytes;
        l += n;
      }
    }
    s0 += static_cast<int>(region.segments.size());
  }
  std::memcpy(out + local.region("consumed_tokens").offset, &endpoint, 8);
  std::memcpy(out + local.region("prefix_key").offset, &key, 8);
}

}  // namespace statexfer::sim
