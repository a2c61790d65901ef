// Shape specs (parse, print) and the built-in sets; see shapes.hpp and MODELS.md.

#include "shapes.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <limits>
#include <sstream>

#include <statexfer/commands.hpp>
#include <test_common/models.hpp>

namespace statexfer::bench {

namespace {

constexpr std::int64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::int64_t parse_count(const std::string& text, const std::string& field) {
  if (text.empty() || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw SpecError(field + ": expected a non-negative integer, got '" + text + "'");
  if (text.size() > 12) throw SpecError(field + ": " + text + " is too large");
  return std::stoll(text);
}

}  // namespace

std::int64_t parse_bytes(const std::string& text, const std::string& field) {
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  const std::string number = text.substr(0, i), unit = lower(trim(text.substr(i)));
  std::int64_t scale = 0;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "kib")
    scale = KiB;
  else if (unit == "mib")
    scale = MiB;
  else if (unit == "gib")
    scale = GiB;
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1 || number.front() == '.' ||
      number.back() == '.' || scale == 0)
    throw SpecError(field + ": expected bytes (a number, optionally with KiB, MiB or GiB), got '" + text + "'");
  const auto dot = number.find('.');
  const std::string whole = number.substr(0, dot), frac = dot == std::string::npos ? "" : number.substr(dot + 1);
  if (whole.size() > 12 || frac.size() > 9) throw SpecError(field + ": '" + text + "' is out of range");
  // whole * scale + frac * scale / 10^digits, exactly
  std::int64_t den = 1;
  for (std::size_t k = 0; k < frac.size(); ++k) den *= 10;
  const std::int64_t w = std::stoll(whole), f = frac.empty() ? 0 : std::stoll(frac);
  if (w > (std::numeric_limits<std::int64_t>::max() / 4) / scale)
    throw SpecError(field + ": '" + text + "' is out of range");
  const std::int64_t frac_bytes = f * scale;  // < 10^9 × 2^30 < 2^60
  if (frac_bytes % den != 0) throw SpecError(field + ": '" + text + "' is not a whole number of bytes");
  return w * scale + frac_bytes / den;
}

std::string format_bytes(std::int64_t bytes) {
  if (bytes > 0 && bytes % GiB == 0) return std::to_string(bytes / GiB) + "GiB";
  if (bytes >= MiB) {  // 49.125MiB: MiB with at most 6 decimals when exact
    std::int64_t rem = bytes % MiB;
    std::string digits;
    while (rem != 0 && digits.size() < 6) {
      rem *= 10;
      digits += static_cast<char>('0' + rem / MiB);
      rem %= MiB;
    }
    if (rem == 0) return std::to_string(bytes / MiB) + (digits.empty() ? "" : "." + digits) + "MiB";
  }
  if (bytes > 0 && bytes % KiB == 0) return std::to_string(bytes / KiB) + "KiB";
  return std::to_string(bytes);
}

NamedShape parse_spec(const std::string& spec_in) {
  const std::string spec = trim(spec_in);
  const std::string where = "shape '" + spec + "': ";
  std::vector<std::string> f;
  std::stringstream in(spec);
  for (std::string part; std::getline(in, part, ':');) f.push_back(trim(part));
  if (!spec.empty() && spec.back() == ':') f.push_back("");
  if (f.size() < 5 || f.size() > 7)
    throw SpecError(where + "expected NAME:C:ROW_BYTES:PAGE_REGIONS:PAGE_BYTES[:TRAILING[:COUNT]], got " +
                    std::to_string(f.size()) + " field(s)");
  try {
    NamedShape s;
    s.name = f[0];
    if (s.name.empty()) throw SpecError("NAME: empty");
    for (char c : s.name)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == '+' || c == '/'))
        throw SpecError("NAME: '" + s.name + "' has '" + std::string(1, c) + "' (allowed: letters, digits, . _ - + /)");
    if (s.name.front() == '/' || s.name.back() == '/' || s.name.find("//") != std::string::npos)
      throw SpecError("NAME: '" + s.name + "' has an empty /-separated part");
    Shape& sh = s.shape;
    sh.capacity = parse_count(f[1], "C");
    if (!statexfer::is_valid_extended_capacity(sh.capacity))
      throw SpecError("C: must be a power of two from 1 to " + std::to_string(statexfer::max_extended_capacity) +
                      ", got " + f[1]);
    sh.row_bytes = parse_bytes(f[2], "ROW_BYTES");
    if (sh.row_bytes < 1) throw SpecError("ROW_BYTES: must be at least 1, got " + f[2]);
    sh.page_regions = parse_count(f[3], "PAGE_REGIONS");
    if (sh.page_regions > 4096) throw SpecError("PAGE_REGIONS: at most 4096, got " + f[3]);
    sh.page_bytes = parse_bytes(f[4], "PAGE_BYTES");
    sh.trailing = f.size() > 5 ? parse_count(f[5], "TRAILING") : 0;
    if (sh.trailing > 4096) throw SpecError("TRAILING: at most 4096, got " + f[5]);
    if (sh.page_bytes < 1 && (sh.page_regions > 0 || sh.trailing > 0))
      throw SpecError("PAGE_BYTES: must be at least 1 when there are page regions or trailing bindings, got " + f[4]);
    sh.count = f.size() > 6 ? parse_count(f[6], "COUNT") : sh.capacity;
    if (sh.count < 1 || sh.count > sh.capacity)
      throw SpecError("COUNT: must be from 1 to C = " + std::to_string(sh.capacity) + ", got " + f[6]);
    if (sh.count == sh.capacity) sh.count = 0;
    return s;
  } catch (const SpecError& e) {
    throw SpecError(where + e.what());
  }
}

std::vector<NamedShape> read_spec_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw SpecError("--shapes " + path + ": cannot be read");
  std::vector<NamedShape> out;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    if (trim(line).empty()) continue;
    try {
      out.push_back(parse_spec(line));
    } catch (const SpecError& e) {
      throw SpecError(path + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  return out;
}

std::int64_t layout_row_bytes(const Shape& s) {
  return std::max(s.row_bytes, 64 + s.page_regions * s.page_bytes + s.trailing * 2 * s.page_bytes);
}

std::int64_t command_bytes(const Shape& s) { return layout_row_bytes(s); }

bool expressible(const NamedShape& s) { return s.shape.gap == 0 && s.shape.page_tokens == 16 && s.shape.width == 16; }

std::string format_spec(const NamedShape& s) {
  const Shape& sh = s.shape;
  std::string out = s.name + ":" + std::to_string(sh.capacity) + ":" + format_bytes(sh.row_bytes) + ":" +
                    std::to_string(sh.page_regions) + ":" + format_bytes(sh.page_bytes);
  if (sh.trailing != 0 || sh.live() != sh.capacity) out += ":" + std::to_string(sh.trailing);
  if (sh.live() != sh.capacity) out += ":" + std::to_string(sh.live());
  return out;
}

const std::vector<std::string>& set_names() {
  static const std::vector<std::string> names{"facts",       "models", "tiers",   "tier-streams",
                                              "speculative", "steps",  "partial", "exchange"};
  return names;
}

namespace {

// The partial set's rows: real models' (MODELS.md) and FACTS.md's shapes' rows.
struct PartialRow {
  std::string name;
  Shape row;  // capacity and count set per shape
};

std::vector<PartialRow> partial_rows() {
  std::vector<PartialRow> out;
  for (const auto& m : models::all())
    if (std::string(m.name) == "qwen3.5-9b" || std::string(m.name) == "nemotron-3-super-120b-a12b")
      out.push_back({m.name, {0, m.row_bytes(), m.attention_layers, m.page_bytes(16), 0}});
  out.push_back({"tiny-16KiB", {0, 16 * KiB, 1, 4 * KiB, 0}});
  out.push_back({"decode-64KiB", {0, 64 * KiB, 4, 16 * KiB, 0}});
  out.push_back({"hybrid-1MiB", {0, MiB, 8, 64 * KiB, 0}});
  out.push_back({"hybrid-8MiB", {0, 8 * MiB, 8, 64 * KiB, 0}});
  out.push_back({"hybrid-32MiB", {0, 32 * MiB, 16, 64 * KiB, 0}});
  out.push_back({"trailing-1MiB", {0, MiB, 4, 64 * KiB, 2}});
  return out;
}

constexpr std::int64_t partial_capacities[] = {64, 256, 1024, 4096};

std::vector<std::int64_t> partial_lives(std::int64_t c) {
  std::vector<std::int64_t> out{1, 2, 4, 16};
  if (c > 16) out.push_back(c);
  return out;
}

Shape with(Shape s, std::int64_t c, std::int64_t live) {
  s.capacity = c;
  s.count = live == c ? 0 : live;
  return s;
}

std::int64_t live_bytes(const Shape& s) { return s.live() * command_bytes(s); }

bool partial_fits(const Shape& s, std::int64_t budget) {
  return partial_workload_bytes(s) <= budget && 2 * live_bytes(s) <= budget;
}

}  // namespace

std::int64_t memory_budget_bytes(bool host_backend, std::int64_t device_memory) {
  if (host_backend) return GiB;
  return device_memory > 0 ? std::clamp(device_memory - 12 * GiB, GiB, 128 * GiB) : 128 * GiB;
}

std::int64_t partial_workload_bytes(const Shape& s) {
  // bench_common.hpp's Workload with snapshot_rows = live: the null row, C live
  // rows, the live commands' snapshot rows and a spare; (regions + trailing)
  // caches of C x width pages.
  const std::int64_t pool = (1 + s.capacity + s.live() + 1) * layout_row_bytes(s);
  const std::int64_t caches = (s.page_regions + s.trailing) * s.capacity * s.width * s.page_bytes;
  return pool + caches;
}

std::vector<std::string> partial_skipped(bool host_backend, std::int64_t device_memory) {
  const std::int64_t budget = memory_budget_bytes(host_backend, device_memory);
  std::vector<std::string> out;
  for (const auto& r : partial_rows())
    for (const std::int64_t c : partial_capacities) {
      std::vector<std::int64_t> left;
      std::int64_t most = 0;
      for (const std::int64_t live : partial_lives(c)) {
        const Shape s = with(r.row, c, live);
        if (!partial_fits(s, budget)) {
          left.push_back(live);
          most = std::max(most, std::max(partial_workload_bytes(s), 2 * live_bytes(s)));
        }
      }
      if (left.empty()) continue;
      std::string lives;
      for (const auto l : left) lives += (lives.empty() ? "" : ",") + std::to_string(l);
      out.push_back(r.name + "/c" + std::to_string(c) + " (live " + lives + "): up to " +
                    std::to_string((most + GiB - 1) / GiB) + " GiB");
    }
  return out;
}

std::vector<NamedShape> builtin_set(const std::string& name, bool host_backend, std::int64_t device_memory) {
  std::vector<NamedShape> out;
  auto add = [&](std::string n, Shape s, bool all_steps) { out.push_back({std::move(n), s, all_steps}); };
  if (name == "facts") {
    // The shapes of shared/docs/FACTS.md, then sweeps of row bytes and capacity.
    add("tiny-c4", {4, 16 * KiB, 1, 4 * KiB, 0}, true);
    add("decode-c64-64KiB", {64, 64 * KiB, 4, 16 * KiB, 0}, true);
    add("hybrid-c64-1MiB", {64, MiB, 8, 64 * KiB, 0}, true);
    add("hybrid-c64-8MiB", {64, 8 * MiB, 8, 64 * KiB, 0}, true);
    add("hybrid-c16-32MiB", {16, 32 * MiB, 16, 64 * KiB, 0}, true);
    add("trailing-c64-1MiB", {64, MiB, 4, 64 * KiB, 2}, true);
    // Source and destination rows 512 MiB apart in the shapes above; one row more apart here.
    add("hybrid-c64-8MiB-gap", {64, 8 * MiB, 8, 64 * KiB, 0, 16, 16, 1}, false);
    // Host sweeps stay short.
    const std::int64_t max_row = host_backend ? 4 * MiB : 64 * MiB;
    for (std::int64_t row = 4 * KiB; row <= max_row; row *= 4)
      add("sweep-rows-c16/" + std::to_string(row / KiB) + "KiB", {16, row, 1, 1 * KiB, 0}, false);
    for (std::int64_t c = 1; c <= 64; c *= 2)
      add("sweep-capacity-1MiB/c" + std::to_string(c), {c, MiB / 4, 2, 16 * KiB, 0}, false);
  } else if (name == "models") {
    // The models' table is shared with statexfer-sim --model (test_common/models.hpp).
    for (const auto& m : models::all())
      for (std::int64_t c : {1, 4, 8, 32})
        add(std::string("models/") + m.name + "/c" + std::to_string(c),
            {c, m.row_bytes(), m.attention_layers, m.page_bytes(16), 0}, true);
  } else if (name == "partial") {
    // Partly filled batches (issue 29): each row at C = 64, 256, 1024, 4096 with
    // 1, 2, 4, 16 and C live commands, where it fits (partial_skipped() says
    // what does not: on the H200 qwen3.5-9b at C = 4096, nemotron at 1024 and
    // 4096, hybrid-32MiB at 4096; on an H100 qwen3.5-9b's full C = 1024 too).
    // BenchPartial.cpp times them.
    const std::int64_t budget = memory_budget_bytes(host_backend, device_memory);
    for (const auto& r : partial_rows())
      for (const std::int64_t c : partial_capacities)
        for (const std::int64_t live : partial_lives(c)) {
          const Shape s = with(r.row, c, live);
          if (partial_fits(s, budget))
            out.push_back({"partial/" + r.name + "/c" + std::to_string(c) + "/live" + std::to_string(live), s, false,
                           Runner::partial});
        }
  } else if (name == "tiers" || name == "tier-streams" || name == "speculative" || name == "steps" ||
             name == "exchange") {
    // No transfer shapes: BenchTier.cpp, BenchTierStreams.cpp, BenchSpeculative.cpp, BenchStep.cpp and
    // BenchExchange.cpp register their own batches.
  } else {
    throw SpecError(
        "--set " + name +
        ": unknown set (known: facts, models, tiers, tier-streams, speculative, steps, partial, exchange, all)");
  }
  return out;
}

}  // namespace statexfer::bench
