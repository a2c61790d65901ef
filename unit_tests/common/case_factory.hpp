#ifndef STATEXFER_TEST_CASE_FACTORY_HPP
#define STATEXFER_TEST_CASE_FACTORY_HPP

// Building stx-case/1 Cases in memory for tests (no Kokkos): a layout helper,
// array accessors, command appenders, and write_case() to save a case folder
// (for replaying a failure outside the test).

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <test_common/case.hpp>

namespace statexfer::test {

template <class T>
constexpr DType dtype_of() {
  static_assert(std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>,
                "cases hold uint8, int32 and int64 arrays only");
  if constexpr (std::is_same_v<T, std::uint8_t>)
    return DType::uint8;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DType::int32;
  else
    return DType::int64;
}

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::uint8: return "uint8";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    default: return "unsupported";
  }
}

/// A C-order array of `shape` filled with `fill`.
template <class T>
NpyArray npy(std::vector<std::int64_t> shape, T fill = T{}) {
  NpyArray a;
  a.dtype = dtype_of<T>();
  a.shape = std::move(shape);
  std::int64_t n = 1;
  for (std::int64_t e : a.shape) n *= e;
  a.bytes.resize(static_cast<std::size_t>(n) * sizeof(T));
  for (std::int64_t i = 0; i < n; ++i) std::memcpy(a.bytes.data() + i * sizeof(T), &fill, sizeof(T));
  return a;
}

template <class T>
T get(const NpyArray& a, std::int64_t i) {
  if (a.dtype != dtype_of<T>() ||
      (i + 1) * static_cast<std::int64_t>(sizeof(T)) > static_cast<std::int64_t>(a.bytes.size()) || i < 0)
    throw std::out_of_range("case_factory::get: bad index or type");
  T v;
  std::memcpy(&v, a.bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}

template <class T>
void put(NpyArray& a, std::int64_t i, T v) {
  if (a.dtype != dtype_of<T>() ||
      (i + 1) * static_cast<std::int64_t>(sizeof(T)) > static_cast<std::int64_t>(a.bytes.size()) || i < 0)
    throw std::out_of_range("case_factory::put: bad index or type");
  std::memcpy(a.bytes.data() + i * sizeof(T), &v, sizeof(T));
}

/// One region to lay out: `align` bytes of alignment for its offset.
struct RegionSpec {
  std::string name;
  std::int64_t nbytes;
  DType dtype = DType::uint8;
  std::int64_t align = 1;
};

struct CaseConfig {
  std::int64_t capacity = 4;
  std::int64_t page_tokens = 4;
  std::int64_t width = 2;           // page table width W
  std::int64_t rows = 0;            // pool rows; 0 means capacity + 2 + capacity (null, live, snapshots)
  std::int64_t cache_pages = 8;     // P
  std::vector<RegionSpec> regions;  // must include consumed_tokens (int64, 8 bytes)
  std::int64_t row_pad = 0;         // extra bytes after the last region (row_bytes rounded up to 8 first)
  std::vector<std::string> pages, trailing_pages, excluded_regions;
  std::int64_t salt = 0;  // varies the position-coded fill
};

/// Lay the regions out in order; row_bytes rounded up to 8, plus `row_pad`.
inline std::vector<Region> lay_out(const std::vector<RegionSpec>& specs, std::int64_t row_pad,
                                   std::int64_t* row_bytes) {
  std::vector<Region> out;
  std::int64_t offset = 0;
  for (const RegionSpec& s : specs) {
    const std::int64_t align = std::max<std::int64_t>(s.align, s.dtype == DType::uint8 ? 1 : 8);
    offset = (offset + align - 1) / align * align;
    out.push_back(Region{s.name, offset, s.nbytes, s.dtype});
    offset += s.nbytes;
  }
  *row_bytes = (offset + 7) / 8 * 8 + row_pad;
  return out;
}

inline const Region& region_of(const Case& c, const std::string& name) {
  for (const Region& r : c.spec.regions)
    if (r.name == name) return r;
  throw std::invalid_argument("case_factory: no region " + name);
}

inline std::uint8_t& pool_byte(Case& c, std::int64_t row, std::int64_t byte) {
  return c.arrays.at("backing").bytes.at(static_cast<std::size_t>(row * c.spec.row_bytes + byte));
}
inline std::uint8_t pool_byte(const Case& c, std::int64_t row, std::int64_t byte) {
  return c.arrays.at("backing").bytes.at(static_cast<std::size_t>(row * c.spec.row_bytes + byte));
}
inline std::int64_t cache_page_bytes(const Case& c, const std::string& binding) {
  return c.arrays.at("cache_" + binding).shape.at(1);
}
inline std::uint8_t& cache_byte(Case& c, const std::string& binding, std::int64_t page, std::int64_t byte) {
  return c.arrays.at("cache_" + binding).bytes.at(static_cast<std::size_t>(page * cache_page_bytes(c, binding) + byte));
}

inline void set_pool_consumed(Case& c, std::int64_t row, std::int64_t value) {
  const std::int64_t off = region_of(c, "consumed_tokens").offset;
  std::memcpy(&pool_byte(c, row, off), &value, sizeof(value));
}
inline std::int64_t pool_consumed(const Case& c, std::int64_t row) {
  const std::int64_t off = region_of(c, "consumed_tokens").offset;
  std::int64_t v;
  std::memcpy(&v, c.arrays.at("backing").bytes.data() + row * c.spec.row_bytes + off, sizeof(v));
  return v;
}

inline std::int64_t width_of(const Case& c) { return c.arrays.at("tables").shape.at(1); }
inline void set_table(Case& c, std::int64_t slot, std::int64_t logical, std::int32_t page) {
  put<std::int32_t>(c.arrays.at("tables"), slot * width_of(c) + logical, page);
}
inline void set_trailing_table(Case& c, std::int64_t slot, std::int64_t logical, std::int32_t page) {
  put<std::int32_t>(c.arrays.at("trailing_tables"), slot * width_of(c) + logical, page);
}
inline void set_state_row(Case& c, std::int64_t slot, std::int64_t row) {
  put<std::int64_t>(c.arrays.at("state_rows"), slot * 8, row);
}
inline std::int64_t state_row(const Case& c, std::int64_t slot) {
  return get<std::int64_t>(c.arrays.at("state_rows"), slot * 8);
}
inline void set_request_consumed(Case& c, std::int64_t slot, std::int64_t v) {
  put<std::int64_t>(c.arrays.at("request_consumed"), slot, v);
}
inline void set_memory_capacity(Case& c, std::int64_t slots, std::int64_t pages) {
  put<std::int64_t>(c.arrays.at("memory_capacity"), 0, slots);
  put<std::int64_t>(c.arrays.at("memory_capacity"), 1, pages);
}
inline void set_num_ops(Case& c, std::int32_t n) { put<std::int32_t>(c.arrays.at("num_ops"), 0, n); }
inline std::int32_t num_ops(const Case& c) { return get<std::int32_t>(c.arrays.at("num_ops"), 0); }

/// Write command row `i` (does not touch num_ops).
inline void set_command(Case& c, std::int64_t i, std::int64_t request, std::int64_t source, std::int64_t destination,
                        std::int32_t op, std::int64_t endpoint) {
  put<std::int64_t>(c.arrays.at("request_slots"), i, request);
  put<std::int64_t>(c.arrays.at("source_slots"), i, source);
  put<std::int64_t>(c.arrays.at("destination_slots"), i, destination);
  put<std::int32_t>(c.arrays.at("operation"), i, op);
  put<std::int64_t>(c.arrays.at("expected_consumed"), i, endpoint);
}

/// Append a command at row num_ops and count it; returns its row.
inline std::int64_t add_command(Case& c, std::int64_t request, std::int64_t source, std::int64_t destination,
                                std::int32_t op, std::int64_t endpoint) {
  const std::int32_t i = num_ops(c);
  set_command(c, i, request, source, destination, op, endpoint);
  set_num_ops(c, i + 1);
  return i;
}

/// Snapshot of request slot `slot` (live row state_rows[slot][0]) into row `dst`
/// at its request endpoint `end` (request_consumed is set to `end`).
inline std::int64_t add_snapshot(Case& c, std::int64_t slot, std::int64_t dst, std::int64_t end) {
  set_request_consumed(c, slot, end);
  return add_command(c, slot, state_row(c, slot), dst, 0, end);
}
/// Restore of snapshot row `src` into slot's live row at `end` (the pool's
/// consumed_tokens of `src` is set to `end`).
inline std::int64_t add_restore(Case& c, std::int64_t slot, std::int64_t src, std::int64_t end) {
  set_pool_consumed(c, src, end);
  return add_command(c, slot, src, state_row(c, slot), 0, end);
}
inline std::int64_t add_reset(Case& c, std::int64_t slot) { return add_command(c, slot, -1, state_row(c, slot), 1, 0); }

/// A case with: position-coded pool bytes and caches (every byte differs from
/// its neighbours), consumed_tokens 0 in every row, memory capacity {rows, P},
/// tables[s][l] = (s * W + l) % P, trailing tables (when trailing bindings
/// exist) = (s * W + l + 1) % P, state_rows[s][0] = 1 + s (other columns 0),
/// request consumed 0, and the commands' initial values (-1, operation 0, num_ops 0).
inline Case make_case(const CaseConfig& cfg) {
  Case c;
  CaseSpec& s = c.spec;
  s.capacity = cfg.capacity;
  s.page_tokens = cfg.page_tokens;
  s.rows = cfg.rows > 0 ? cfg.rows : 2 * cfg.capacity + 2;
  s.regions = lay_out(cfg.regions, cfg.row_pad, &s.row_bytes);
  s.pages = cfg.pages;
  s.trailing_pages = cfg.trailing_pages;
  s.excluded_regions = cfg.excluded_regions;
  s.seed = cfg.salt;
  const std::int64_t C = cfg.capacity, W = cfg.width, P = cfg.cache_pages, N = s.rows, RB = s.row_bytes;

  NpyArray backing = npy<std::uint8_t>({N, RB});
  for (std::int64_t r = 0; r < N; ++r)
    for (std::int64_t b = 0; b < RB; ++b)
      backing.bytes[static_cast<std::size_t>(r * RB + b)] =
          static_cast<std::uint8_t>((b * 31 + r * 17 + cfg.salt * 13) % 251);
  c.arrays["backing"] = std::move(backing);
  for (std::int64_t r = 0; r < N; ++r) set_pool_consumed(c, r, 0);

  auto cache_for = [&](const std::string& name, std::int64_t bytes) {
    NpyArray a = npy<std::uint8_t>({P, bytes});
    for (std::int64_t p = 0; p < P; ++p)
      for (std::int64_t b = 0; b < bytes; ++b)
        a.bytes[static_cast<std::size_t>(p * bytes + b)] =
            static_cast<std::uint8_t>((b * 29 + p * 23 + static_cast<std::int64_t>(name.size()) * 41 +
                                       static_cast<unsigned char>(name.back()) * 7 + 101 + cfg.salt) %
                                      253);
    c.arrays["cache_" + name] = std::move(a);
  };
  for (const std::string& n : cfg.pages) cache_for(n, region_of(c, n).nbytes);
  for (const std::string& n : cfg.trailing_pages) cache_for(n, region_of(c, n).nbytes / 2);

  c.arrays["memory_capacity"] = npy<std::int64_t>({2});
  set_memory_capacity(c, N, P);
  c.arrays["tables"] = npy<std::int32_t>({C, W});
  for (std::int64_t i = 0; i < C * W; ++i)
    put<std::int32_t>(c.arrays["tables"], i, static_cast<std::int32_t>(P > 0 ? i % P : 0));
  if (!cfg.trailing_pages.empty()) {
    c.arrays["trailing_tables"] = npy<std::int32_t>({C, W});
    for (std::int64_t i = 0; i < C * W; ++i)
      put<std::int32_t>(c.arrays["trailing_tables"], i, static_cast<std::int32_t>(P > 0 ? (i + 1) % P : 0));
  }
  c.arrays["state_rows"] = npy<std::int64_t>({C, 8});
  for (std::int64_t i = 0; i < C; ++i) set_state_row(c, i, 1 + i);
  c.arrays["request_consumed"] = npy<std::int64_t>({C, 1});
  c.arrays["request_slots"] = npy<std::int64_t>({C}, -1);
  c.arrays["source_slots"] = npy<std::int64_t>({C}, -1);
  c.arrays["destination_slots"] = npy<std::int64_t>({C}, -1);
  c.arrays["expected_consumed"] = npy<std::int64_t>({C}, -1);
  c.arrays["operation"] = npy<std::int32_t>({C}, 0);
  c.arrays["num_ops"] = npy<std::int32_t>({1}, 0);
  return c;
}

/// The first differences of a comparison, one per line, for failure messages.
inline std::string describe(const Comparison& cmp) {
  std::string out = std::to_string(cmp.total) + " difference(s)";
  for (const Difference& d : cmp.first) {
    out += "\n  " + d.array + "[" + std::to_string(d.index) + "] = " + std::to_string(d.value) + ", expected " +
           std::to_string(d.expected);
    if (!d.detail.empty()) out += " (" + d.detail + ")";
  }
  return out;
}

/// Save `c` as a stx-case/1 folder (case.json and the input arrays; no expected/).
inline void write_case(const Case& c, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  const CaseSpec& s = c.spec;
  auto names = [](const std::vector<std::string>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", \"" : "\"") + v[i] + "\"";
    return out + "]";
  };
  std::ofstream json(dir / "case.json");
  json << "{\n \"format\": \"stx-case/1\",\n \"seed\": " << s.seed << ",\n \"capacity\": " << s.capacity
       << ",\n \"page_tokens\": " << s.page_tokens << ",\n \"rows\": " << s.rows << ",\n \"row_bytes\": " << s.row_bytes
       << ",\n \"regions\": [";
  for (std::size_t i = 0; i < s.regions.size(); ++i) {
    const Region& r = s.regions[i];
    json << (i ? ",\n  " : "\n  ") << "{\"name\": \"" << r.name << "\", \"offset\": " << r.offset
         << ", \"nbytes\": " << r.nbytes << ", \"dtype\": \"" << dtype_name(r.dtype) << "\"}";
  }
  json << "\n ],\n \"pages\": " << names(s.pages) << ",\n \"trailing_pages\": " << names(s.trailing_pages)
       << ",\n \"excluded_regions\": " << names(s.excluded_regions) << "\n}\n";
  for (const auto& [name, array] : c.arrays) write_npy(dir / (name + ".npy"), array);
}

// Seeded draws shared by the randomized tests.
using Rng = std::mt19937_64;
inline std::int64_t uniform(Rng& rng, std::int64_t lo, std::int64_t hi) {  // inclusive
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}
inline double unit(Rng& rng) { return std::uniform_real_distribution<double>(0.0, 1.0)(rng); }
template <class T>
T choice(Rng& rng, std::initializer_list<T> values) {
  return *(values.begin() + uniform(rng, 0, static_cast<std::int64_t>(values.size()) - 1));
}

}  // namespace statexfer::test

#endif
