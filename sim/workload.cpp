#include "workload.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

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
  prompt_ends.clear();
  if (!hashed) return;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const RequestSpec& r = requests[i];
    const std::int64_t last = (r.input_len - 1) / block_tokens;  // the block of the prompt's last token
    if (last < r.blocks) prompt_ends[block_id(static_cast<std::int64_t>(i), last)].push_back(r.input_len);
  }
  for (auto& [id, ends] : prompt_ends) {
    std::sort(ends.begin(), ends.end());
    ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  }
}

void Workload::truncate(std::int64_t n) {
  if (n < 0 || n >= static_cast<std::int64_t>(requests.size())) return;
  requests.resize(static_cast<std::size_t>(n));
  finish();
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

std::vector<std::int64_t> structural_endpoints(const Workload& w, std::int64_t request) {
  const RequestSpec& spec = w.requests[static_cast<std::size_t>(request)];
  if (w.hashed) {
    return {spec.prompt_len, spec.total_len};
  }
  std::vector<std::int64_t> chain;
  for (std::int64_t i = request; i >= 0; i = w.requests[static_cast<std::size_t>(i)].parent) chain.push_back(i);
  std::reverse(chain.begin(), chain.end());
  const RequestSpec& root = w.requests[static_cast<std::size_t>(chain.front())];
  std::vector<std::int64_t> out;
  std::int64_t end = 0;
  if (root.prefix >= 0) out.push_back(end += root.prefix_len);
  for (std::int64_t i : chain) {
    const RequestSpec& r = w.requests[static_cast<std::size_t>(i)];
    out.push_back(end += r.input_len + r.output_len);
  }
  return out;
}

namespace {

// A block's tokens depend on its hash id alone (and the position in the block),
// so equal ids give equal tokens in every request.
std::uint64_t block_seed(std::int64_t id) { return mix64(0xB10C5EEDULL ^ mix64(static_cast<std::uint64_t>(id))); }

}  // namespace

TokenStream::TokenStream(const Workload& w, std::int64_t request) {
  const RequestSpec& spec = w.requests[static_cast<std::size_t>(request)];
  if (w.hashed) {
    hashed_ = true;
    const std::int64_t B = w.block_tokens;
    std::int64_t j = 0;
    for (; j < spec.blocks; ++j)
      segments_.push_back({block_seed(w.block_id(request, j)), std::min(B, spec.input_len - j * B)});
    if (j * B < spec.input_len) segments_.push_back({mix64(spec.seed ^ 0x1A1A1A1AULL), spec.input_len - j * B});
    segments_.push_back({mix64(spec.seed ^ 0x2B2B2B2BULL), spec.output_len});
    return;
  }
  std::vector<std::int64_t> chain;
  for (std::int64_t i = request; i >= 0; i = w.requests[static_cast<std::size_t>(i)].parent) chain.push_back(i);
  std::reverse(chain.begin(), chain.end());
  const RequestSpec& root = w.requests[static_cast<std::size_t>(chain.front())];
  if (root.prefix >= 0)
    segments_.push_back({mix64(0xD0C5EEDULL ^ (static_cast<std::uint64_t>(root.prefix) << 20)), root.prefix_len});
  for (std::int64_t i : chain) {
    const RequestSpec& r = w.requests[static_cast<std::size_t>(i)];
    segments_.push_back({mix64(r.seed ^ 0x1A1A1A1AULL), r.input_len});
    segments_.push_back({mix64(r.seed ^ 0x2B2B2B2BULL), r.output_len});
  }
}

void TokenStream::advance(std::int64_t n) {
  if (hashed_ && n > 0) {
    // The segment (block) of the new last token, and a key of (its seed, the length).
    while (segment_ < segments_.size() && offset_ + n > segments_[segment_].len) {
      n -= segments_[segment_].len - offset_;
      key_.len += segments_[segment_].len - offset_;
      ++segment_;
      offset_ = 0;
    }
    if (segment_ >= segments_.size()) throw std::logic_error("TokenStream: advanced past the end of the request");
    offset_ += n;
    key_.len += n;
    const std::uint64_t seed = segments_[segment_].seed, len = static_cast<std::uint64_t>(key_.len);
    key_.h1 = mix64(seed + len * 0x9E3779B97F4A7C15ULL);
    key_.h2 = mix64(key_.h1 ^ (seed * 0xD1B54A32D192ED03ULL) ^ len);
    return;
  }
  while (n > 0) {
    while (segment_ < segments_.size() && offset_ >= segments_[segment_].len) {
      ++segment_;
      offset_ = 0;
    }
    if (segment_ >= segments_.size()) throw std::logic_error("TokenStream: advanced past the end of the request");
    const Segment& sg = segments_[segment_];
    const std::int64_t take = std::min(n, sg.len - offset_);
    std::uint64_t h1 = key_.h1, h2 = key_.h2;
    for (std::int64_t k = 0; k < take; ++k) {
      const std::uint64_t token = mix64(sg.seed + static_cast<std::uint64_t>(offset_ + k)) & 0x1FFFFu;
      h1 = (h1 + token + 1) * 0x100000001B3ULL;
      h2 = mix64(h2 ^ (token * 0x9E3779B97F4A7C15ULL));
    }
    key_.h1 = h1;
    key_.h2 = h2;
    key_.len += take;
    offset_ += take;
    n -= take;
  }
}

std::uint64_t TokenStream::state_seed() const {
  return mix64(key_.h1 ^ (key_.h2 << 1) ^ static_cast<std::uint64_t>(key_.len));
}

}  // namespace statexfer::sim
