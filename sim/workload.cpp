#include "workload.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "content.hpp"

namespace statexfer::sim {

void Workload::finish() {
  max_total = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    RequestSpec& r = requests[i];
    if (r.input_len < 1 || r.output_len < 1)
      throw std::runtime_error("request " + std::to_string(i) + ": input and output must be at least 1 token");
    if (r.parent >= static_cast<std::int64_t>(i))
      throw std::runtime_error("request " + std::to_string(i) + ": parent " + std::to_string(r.parent) +
                               " is not an earlier request");
    std::int64_t base = 0;
    if (r.parent >= 0) {
      base = requests[static_cast<std::size_t>(r.parent)].total_len;
      r.prefix = -1;
      r.prefix_len = 0;
    } else if (r.prefix >= 0) {
      if (r.prefix_len < 1) throw std::runtime_error("request " + std::to_string(i) + ": prefix_len must be >= 1");
      base = r.prefix_len;
    } else {
      r.prefix_len = 0;
    }
    r.prompt_len = base + r.input_len;
    r.total_len = r.prompt_len + r.output_len;
    max_total = std::max(max_total, r.total_len);
  }
}

Workload synthesize(const SyntheticOptions& o) {
  if (o.requests < 0) throw std::runtime_error("--requests must be >= 0");
  if (o.prefix_len.min < 1 || o.prefix_len.max < o.prefix_len.min) throw std::runtime_error("bad --prefix-len range");
  if (o.input_len.min < 1 || o.input_len.max < o.input_len.min) throw std::runtime_error("bad --input-len range");
  if (o.output_len.min < 1 || o.output_len.max < o.output_len.min) throw std::runtime_error("bad --output-len range");
  if (o.prefix_len.max + o.input_len.max + o.output_len.max > o.max_context)
    throw std::runtime_error("--max-context " + std::to_string(o.max_context) +
                             " is smaller than the longest first turn (prefix + input + output maxima, " +
                             std::to_string(o.prefix_len.max + o.input_len.max + o.output_len.max) + ")");
  std::mt19937_64 rng(o.seed);
  auto uniform = [&](const Range& r) { return std::uniform_int_distribution<std::int64_t>(r.min, r.max)(rng); };
  std::uniform_real_distribution<double> unit(0.0, 1.0);

  // Zipf popularity of the prefix documents, and their lengths.
  std::vector<double> cdf;
  std::vector<std::int64_t> doc_len;
  double sum = 0;
  for (std::int64_t k = 0; k < o.prefixes; ++k) {
    sum += 1.0 / std::pow(static_cast<double>(k + 1), o.zipf);
    cdf.push_back(sum);
    doc_len.push_back(uniform(o.prefix_len));
  }

  Workload w;
  w.source = "synthetic";
  w.requests.resize(static_cast<std::size_t>(o.requests));
  std::vector<std::int64_t> turns(static_cast<std::size_t>(o.requests), 1);
  for (std::int64_t i = 0; i < o.requests; ++i) {
    RequestSpec& r = w.requests[static_cast<std::size_t>(i)];
    r.seed = rng();
    r.input_len = uniform(o.input_len);
    r.output_len = uniform(o.output_len);
    if (i > 0 && unit(rng) < o.followup) {
      const std::int64_t lo = std::max<std::int64_t>(0, i - o.followup_window);
      const std::int64_t p = std::uniform_int_distribution<std::int64_t>(lo, i - 1)(rng);
      const RequestSpec& parent = w.requests[static_cast<std::size_t>(p)];
      if (turns[static_cast<std::size_t>(p)] < o.max_turns &&
          parent.total_len + r.input_len + r.output_len <= o.max_context) {
        r.parent = p;
        turns[static_cast<std::size_t>(i)] = turns[static_cast<std::size_t>(p)] + 1;
      }
    }
    if (r.parent < 0 && o.prefixes > 0) {
      const double u = unit(rng) * sum;
      r.prefix = std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
      if (r.prefix >= o.prefixes) r.prefix = o.prefixes - 1;
      r.prefix_len = doc_len[static_cast<std::size_t>(r.prefix)];
    }
    // Lengths of this request, for the next ones' parent checks.
    const std::int64_t base = r.parent >= 0 ? w.requests[static_cast<std::size_t>(r.parent)].total_len : r.prefix_len;
    r.prompt_len = base + r.input_len;
    r.total_len = r.prompt_len + r.output_len;
  }
  w.finish();
  return w;
}

Workload read_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open trace " + path);
  Workload w;
  w.source = path;
  std::unordered_map<std::string, std::int64_t> ids;
  std::string line;
  std::int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      throw std::runtime_error(where + e.what());
    }
    if (!j.is_object()) throw std::runtime_error(where + "each line must be a JSON object");
    const auto index = static_cast<std::int64_t>(w.requests.size());
    RequestSpec r;
    auto integer = [&](const char* key, std::int64_t fallback) -> std::int64_t {
      if (!j.contains(key)) return fallback;
      if (!j[key].is_number_integer()) throw std::runtime_error(where + "'" + key + "' must be an integer");
      return j[key].get<std::int64_t>();
    };
    r.input_len = integer("input", -1);
    r.output_len = integer("output", -1);
    if (r.input_len < 1 || r.output_len < 1)
      throw std::runtime_error(where + "'input' and 'output' (token counts >= 1) are required");
    r.prefix = integer("prefix", -1);
    r.prefix_len = integer("prefix_len", 0);
    if (r.prefix >= 0 && r.prefix_len < 1) throw std::runtime_error(where + "'prefix' needs 'prefix_len' >= 1");
    r.seed = j.contains("seed") ? j["seed"].get<std::uint64_t>() : mix64(0x7ACEULL + static_cast<std::uint64_t>(index));
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
  try {
    w.finish();
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
  return w;
}

void write_trace(const Workload& w, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write trace " + path);
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
  if (!out) throw std::runtime_error("error writing trace " + path);
}

TokenStream::TokenStream(const Workload& w, std::int64_t request) {
  std::vector<std::int64_t> chain;
  for (std::int64_t i = request; i >= 0; i = w.requests[static_cast<std::size_t>(i)].parent) chain.push_back(i);
  std::reverse(chain.begin(), chain.end());
  const RequestSpec& root = w.requests[static_cast<std::size_t>(chain.front())];
  std::int64_t end = 0;
  if (root.prefix >= 0) {
    segments_.push_back({mix64(0xD0C5EEDULL ^ (static_cast<std::uint64_t>(root.prefix) << 20)), root.prefix_len});
    end += root.prefix_len;
    boundaries_.push_back(end);
  }
  for (std::int64_t i : chain) {
    const RequestSpec& r = w.requests[static_cast<std::size_t>(i)];
    segments_.push_back({mix64(r.seed ^ 0x1A1A1A1AULL), r.input_len});
    segments_.push_back({mix64(r.seed ^ 0x2B2B2B2BULL), r.output_len});
    end += r.input_len + r.output_len;
    boundaries_.push_back(end);
  }
}

void TokenStream::advance() {
  while (segment_ < segments_.size() && offset_ >= segments_[segment_].len) {
    ++segment_;
    offset_ = 0;
  }
  if (segment_ >= segments_.size()) throw std::logic_error("TokenStream: advanced past the end of the request");
  const std::uint64_t token = mix64(segments_[segment_].seed + static_cast<std::uint64_t>(offset_)) & 0x1FFFFu;
  ++offset_;
  key_.h1 = (key_.h1 + token + 1) * 0x100000001B3ULL;
  key_.h2 = mix64(key_.h2 ^ (token * 0x9E3779B97F4A7C15ULL));
  ++key_.len;
}

std::uint64_t TokenStream::state_seed() const {
  return mix64(key_.h1 ^ (key_.h2 << 1) ^ static_cast<std::uint64_t>(key_.len));
}

}  // namespace statexfer::sim
