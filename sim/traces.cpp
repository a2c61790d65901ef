// Reading and writing traces (traces.hpp has both formats).

#include "traces.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "content.hpp"

namespace statexfer::sim {
namespace {

// Token counts past this are refused: every later size (pages, tables) stays far from overflow.
constexpr std::int64_t max_tokens = std::int64_t(1) << 30;

struct Line {
  std::int64_t number;
  std::string text;
};

// The request lines of a file (blank and '#' lines skipped), read before anything is parsed.
std::vector<Line> read_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open trace " + path);
  std::vector<Line> lines;
  std::string text;
  for (std::int64_t number = 1; std::getline(in, text); ++number) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string::npos || text[first] == '#') continue;
    lines.push_back({number, std::move(text)});
  }
  if (in.bad()) throw std::runtime_error("error reading trace " + path);
  return lines;
}

nlohmann::json parse_object(const Line& line, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line.text);
  } catch (const std::exception& e) {
    throw std::runtime_error(where + "not JSON: " + e.what());
  }
  if (!j.is_object()) throw std::runtime_error(where + "each line must be a JSON object");
  return j;
}

std::int64_t integer_field(const nlohmann::json& j, const char* key, const std::string& where, std::int64_t min) {
  if (!j.contains(key)) throw std::runtime_error(where + "missing '" + key + "'");
  const auto& v = j[key];
  if (!v.is_number_integer()) throw std::runtime_error(where + "'" + key + "' must be an integer, got " + v.dump());
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max_tokens))
    throw std::runtime_error(where + "'" + key + "' is too large: " + v.dump());
  const auto x = v.get<std::int64_t>();
  if (x < min || x > max_tokens)
    throw std::runtime_error(where + "'" + key + "' must be from " + std::to_string(min) + " to " +
                             std::to_string(max_tokens) + ", got " + std::to_string(x));
  return x;
}

Workload read_sim(const std::vector<Line>& lines, const std::string& path) {
  Workload w;
  w.source = path;
  w.format = "sim";
  std::unordered_map<std::string, std::int64_t> ids;
  for (const Line& line : lines) {
    const std::string where = path + ":" + std::to_string(line.number) + ": ";
    const nlohmann::json j = parse_object(line, where);
    const auto index = static_cast<std::int64_t>(w.requests.size());
    RequestSpec r;
    r.line = line.number;
    if (!j.contains("input") || !j.contains("output"))
      throw std::runtime_error(where + "'input' and 'output' (token counts >= 1) are required");
    r.input_len = integer_field(j, "input", where, 1);
    r.output_len = integer_field(j, "output", where, 1);
    r.prefix = j.contains("prefix") ? integer_field(j, "prefix", where, 0) : -1;
    r.prefix_len = j.contains("prefix_len") ? integer_field(j, "prefix_len", where, 0) : 0;
    if (r.prefix >= 0 && r.prefix_len < 1) throw std::runtime_error(where + "'prefix' needs 'prefix_len' >= 1");
    if (j.contains("seed")) {
      if (!j["seed"].is_number_integer()) throw std::runtime_error(where + "'seed' must be an integer");
      r.seed = j["seed"].get<std::uint64_t>();
    } else {
      r.seed = mix64(0x7ACEULL + static_cast<std::uint64_t>(index));
    }
    if (j.contains("parent")) {
      const auto& p = j["parent"];
      auto it = ids.find(p.dump());
      if (it != ids.end())
        r.parent = it->second;
      else if (p.is_number_integer())
        r.parent = p.get<std::int64_t>();
      else
        throw std::runtime_error(where + "unknown parent " + p.dump());
      if (r.parent < 0 || r.parent >= index) throw std::runtime_error(where + "parent must name an earlier request");
      if (r.prefix >= 0) throw std::runtime_error(where + "'parent' and 'prefix' exclude each other");
    }
    if (j.contains("id")) ids[j["id"].dump()] = index;
    w.requests.push_back(r);
  }
  return w;
}

// Where a hash id was first seen: its block, the id before it, the line.
struct Seen {
  std::int64_t block, previous, line;
};

Workload read_mooncake(const std::vector<Line>& lines, const std::string& path, std::int64_t B) {
  Workload w;
  w.source = path;
  w.format = "mooncake";
  w.timed = true;
  w.hashed = true;
  w.block_tokens = B;
  std::unordered_map<std::int64_t, Seen> seen;
  for (const Line& line : lines) {
    const std::string where = path + ":" + std::to_string(line.number) + ": ";
    const nlohmann::json j = parse_object(line, where);
    RequestSpec r;
    r.line = line.number;
    if (!j.contains("timestamp")) throw std::runtime_error(where + "missing 'timestamp'");
    const auto& t = j["timestamp"];
    if (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() < 0)
      throw std::runtime_error(where + "'timestamp' must be a number of milliseconds >= 0, got " + t.dump());
    r.arrival_ms = t.get<double>();
    r.input_len = integer_field(j, "input_length", where, 1);
    r.output_len = integer_field(j, "output_length", where, 1);
    if (!j.contains("hash_ids")) throw std::runtime_error(where + "missing 'hash_ids'");
    const auto& ids = j["hash_ids"];
    if (!ids.is_array()) throw std::runtime_error(where + "'hash_ids' must be an array of integers");
    const std::int64_t needed = (r.input_len + B - 1) / B;
    if (static_cast<std::int64_t>(ids.size()) > needed)
      throw std::runtime_error(where + std::to_string(ids.size()) + " hash ids, but 'input_length' " +
                               std::to_string(r.input_len) + " needs at most " + std::to_string(needed) +
                               " blocks of " + std::to_string(B) + " tokens (--trace-block-tokens)");
    r.first_block = static_cast<std::int64_t>(w.hash_ids.size());
    std::int64_t previous = -1;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const auto& v = ids[k];
      if (!v.is_number_integer() || (!v.is_number_unsigned() && v.get<std::int64_t>() < 0) ||
          (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
        throw std::runtime_error(where + "hash_ids[" + std::to_string(k) + "] must be an integer >= 0, got " +
                                 v.dump());
      const auto id = v.get<std::int64_t>();
      const auto block = static_cast<std::int64_t>(k);
      // An id names a whole prefix: the same block position after the same id everywhere.
      const auto [it, fresh] = seen.try_emplace(id, Seen{block, previous, line.number});
      if (!fresh && (it->second.block != block || it->second.previous != previous))
        throw std::runtime_error(where + "hash id " + std::to_string(id) + " is block " + std::to_string(block) +
                                 " after id " + std::to_string(previous) + ", but line " +
                                 std::to_string(it->second.line) + " has it as block " +
                                 std::to_string(it->second.block) + " after id " + std::to_string(it->second.previous) +
                                 " (equal ids must be equal prefixes)");
      w.hash_ids.push_back(id);
      previous = id;
    }
    r.blocks = static_cast<std::int64_t>(ids.size());
    r.seed = mix64(0x7ACEULL + static_cast<std::uint64_t>(w.requests.size()));
    w.requests.push_back(r);
  }
  std::stable_sort(w.requests.begin(), w.requests.end(),
                   [](const RequestSpec& a, const RequestSpec& b) { return a.arrival_ms < b.arrival_ms; });
  return w;
}

}  // namespace

TraceFormat parse_trace_format(const std::string& text) {
  if (text == "auto") return TraceFormat::automatic;
  if (text == "sim") return TraceFormat::sim;
  if (text == "mooncake") return TraceFormat::mooncake;
  throw std::invalid_argument("--trace-format: expected auto, sim or mooncake, got '" + text + "'");
}

Workload read_trace(const std::string& path, TraceFormat format, std::int64_t block_tokens) {
  if (block_tokens < 1 || block_tokens > max_tokens)
    throw std::invalid_argument("--trace-block-tokens must be from 1 to " + std::to_string(max_tokens));
  const std::vector<Line> lines = read_lines(path);
  if (format == TraceFormat::automatic) {
    format = TraceFormat::sim;
    if (!lines.empty()) {
      const nlohmann::json j = parse_object(lines.front(), path + ":" + std::to_string(lines.front().number) + ": ");
      if (j.contains("hash_ids") || j.contains("input_length")) format = TraceFormat::mooncake;
    }
  }
  Workload w = format == TraceFormat::mooncake ? read_mooncake(lines, path, block_tokens) : read_sim(lines, path);
  try {
    w.finish();
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  return w;
}

namespace {

void write_sim(const Workload& w, std::ofstream& out) {
  if (w.hashed)
    throw std::invalid_argument(
        "--dump-trace: a block-hashed workload has no form in the sim format; use --trace-format mooncake");
  out << "# statexfer-sim trace: one request per line (parent: 0-based index of an earlier request)\n";
  for (const RequestSpec& r : w.requests) {
    nlohmann::json j;
    if (r.parent >= 0) j["parent"] = r.parent;
    if (r.prefix >= 0) {
      j["prefix"] = r.prefix;
      j["prefix_len"] = r.prefix_len;
    }
    j["input"] = r.input_len;
    j["output"] = r.output_len;
    j["seed"] = r.seed;
    out << j.dump() << '\n';
  }
}

void write_mooncake(const Workload& w, std::ofstream& out, std::int64_t B) {
  if (w.hashed && w.block_tokens != B)
    throw std::invalid_argument("--dump-trace: the trace's blocks are " + std::to_string(w.block_tokens) +
                                " tokens, not " + std::to_string(B));
  std::unordered_map<PrefixKey, std::int64_t, PrefixKeyHash> numbered;
  std::int64_t next = 0;
  for (const std::int64_t id : w.hash_ids) next = std::max(next, id + 1);
  for (std::size_t i = 0; i < w.requests.size(); ++i) {
    const RequestSpec& r = w.requests[i];
    nlohmann::json ids = nlohmann::json::array();
    const std::int64_t blocks = (r.prompt_len + B - 1) / B;
    TokenStream walker(w, static_cast<std::int64_t>(i));
    for (std::int64_t b = 0; b < blocks; ++b) {
      if (w.hashed) {  // its ids, then fresh ones for the blocks of its own
        ids.push_back(b < r.blocks ? w.block_id(static_cast<std::int64_t>(i), b) : next++);
        continue;
      }
      // Numbered by the token prefix at the block's end.
      walker.advance(std::min((b + 1) * B, r.prompt_len) - walker.pos());
      const auto [it, fresh] = numbered.try_emplace(walker.key(), next);
      if (fresh) ++next;
      ids.push_back(it->second);
    }
    nlohmann::json j;
    if (r.arrival_ms == std::floor(r.arrival_ms))
      j["timestamp"] = static_cast<std::int64_t>(r.arrival_ms);
    else
      j["timestamp"] = r.arrival_ms;
    j["input_length"] = r.prompt_len;
    j["output_length"] = r.output_len;
    j["hash_ids"] = ids;
    out << j.dump() << '\n';
  }
}

}  // namespace

void write_trace(const Workload& w, const std::string& path, TraceFormat format, std::int64_t block_tokens) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write trace " + path);
  if (format == TraceFormat::mooncake)
    write_mooncake(w, out, block_tokens);
  else
    write_sim(w, out);
  if (!out) throw std::runtime_error("error writing trace " + path);
}

}  // namespace statexfer::sim
