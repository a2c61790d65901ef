// Loading, writing and comparing stx-case/1 folders (shared/conformance/README.md).
//
// load_case() checks the files against each other and against case.json (the
// format), not against the library's rules: a case may describe a transfer that
// the library must refuse (expected/error.json), so those checks are left to the
// library and come back as CaseOutputs::construct_error.

#include <test_common/case.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

namespace statexfer::test {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

[[noreturn]] void fail(const fs::path& file, const std::string& what) { throw CaseError(file.string() + ": " + what); }

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

bool is_dir(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

json read_json(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) fail(file, "no such file");
  if (!is_file(file)) fail(file, "not a regular file");
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(file, "cannot open");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) fail(file, "read error");
  try {
    return json::parse(text.str());
  } catch (const json::exception& e) {
    fail(file, std::string("bad JSON: ") + e.what());
  }
}

const json& member(const json& obj, const std::string& key, const std::string& where, const fs::path& file) {
  const auto it = obj.find(key);
  if (it == obj.end()) fail(file, "missing key '" + where + key + "'");
  return *it;
}

std::int64_t get_int(const json& obj, const std::string& key, const std::string& where, const fs::path& file) {
  const json& v = member(obj, key, where, file);
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(file, "key '" + where + key + "' is out of the int64 range");
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  }
  if (!v.is_number_integer())
    fail(file, "key '" + where + key + "' must be an integer, got " + std::string(v.type_name()) + " " + v.dump());
  return v.get<std::int64_t>();
}

std::string get_string(const json& obj, const std::string& key, const std::string& where, const fs::path& file) {
  const json& v = member(obj, key, where, file);
  if (!v.is_string()) fail(file, "key '" + where + key + "' must be a string, got " + std::string(v.type_name()));
  return v.get<std::string>();
}

std::vector<std::string> get_strings(const json& obj, const std::string& key, const fs::path& file) {
  const json& v = member(obj, key, "", file);
  if (!v.is_array()) fail(file, "key '" + key + "' must be a list of strings, got " + std::string(v.type_name()));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string())
      fail(file, "key '" + key + "[" + std::to_string(i) + "]' must be a string, got " + std::string(v[i].type_name()));
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

// Binding names become file names (cache_<name>.npy): keep them inside the folder.
void check_file_name(const std::string& name, const std::string& key, const fs::path& file) {
  if (name.empty() || name == "." || name == ".." || name.find_first_of(std::string("/\\\0", 3)) != std::string::npos)
    fail(file, "key '" + key + "' holds '" + name + "', which cannot be part of a file name cache_<name>.npy");
}

CaseSpec parse_spec(const fs::path& file) {
  const json j = read_json(file);
  if (!j.is_object()) fail(file, "must hold a JSON object, got " + std::string(j.type_name()));
  if (j.contains("format")) {
    const std::string format = get_string(j, "format", "", file);
    if (format != "stx-case/1") fail(file, "unsupported format '" + format + "' (stx-case/1 only)");
  }
  CaseSpec s;
  s.capacity = get_int(j, "capacity", "", file);
  s.page_tokens = get_int(j, "page_tokens", "", file);
  s.rows = get_int(j, "rows", "", file);
  s.row_bytes = get_int(j, "row_bytes", "", file);
  if (s.capacity < 0) fail(file, "key 'capacity' must be >= 0, got " + std::to_string(s.capacity));
  if (s.rows < 0) fail(file, "key 'rows' must be >= 0, got " + std::to_string(s.rows));
  if (s.row_bytes < 0) fail(file, "key 'row_bytes' must be >= 0, got " + std::to_string(s.row_bytes));
  if (j.contains("seed")) s.seed = get_int(j, "seed", "", file);

  const json& regions = member(j, "regions", "", file);
  if (!regions.is_array()) fail(file, "key 'regions' must be a list, got " + std::string(regions.type_name()));
  for (std::size_t i = 0; i < regions.size(); ++i) {
    const std::string where = "regions[" + std::to_string(i) + "].";
    const json& r = regions[i];
    if (!r.is_object()) fail(file, "key 'regions[" + std::to_string(i) + "]' must be an object");
    Region region;
    region.name = get_string(r, "name", where, file);
    region.offset = get_int(r, "offset", where, file);
    region.nbytes = get_int(r, "nbytes", where, file);
    const std::string dtype = get_string(r, "dtype", where, file);
    try {
      region.dtype = dtype_from_string(dtype);
    } catch (const std::invalid_argument&) {
      fail(file, "key '" + where + "dtype' holds unknown dtype '" + dtype + "'");
    }
    s.regions.push_back(std::move(region));
  }
  s.pages = get_strings(j, "pages", file);
  s.trailing_pages = get_strings(j, "trailing_pages", file);
  s.excluded_regions = get_strings(j, "excluded_regions", file);
  for (const auto& n : s.pages) check_file_name(n, "pages", file);
  for (const auto& n : s.trailing_pages) check_file_name(n, "trailing_pages", file);
  return s;
}

std::string dims_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string array_text(const NpyArray& a) { return std::string(to_string(a.dtype)) + " " + dims_text(a.shape); }

// An expected extent, or any extent (`free` names it in messages).
struct Dim {
  std::int64_t value;
  const char* free = nullptr;
  Dim(std::int64_t v) : value(v) {}  // NOLINT: implicit from an extent on purpose
  Dim(const char* name) : value(-1), free(name) {}
};

void check_array(const fs::path& file, const NpyArray& a, DType dtype, const std::vector<Dim>& dims) {
  bool ok = a.dtype == dtype && a.shape.size() == dims.size();
  for (std::size_t i = 0; ok && i < dims.size(); ++i) ok = dims[i].free || a.shape[i] == dims[i].value;
  if (ok) return;
  std::string want = std::string(to_string(dtype)) + " [";
  for (std::size_t i = 0; i < dims.size(); ++i)
    want += (i ? ", " : "") + (dims[i].free ? std::string(dims[i].free) : std::to_string(dims[i].value));
  fail(file, "expected " + want + "], got " + array_text(a));
}

const Region* find_region(const CaseSpec& s, const std::string& name) {
  for (const auto& r : s.regions)
    if (r.name == name) return &r;
  return nullptr;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// Bytes per cache page that the format fixes for binding `name`, or -1 where the
// library must decide (no such region, odd trailing region, a name in both lists).
std::int64_t page_bytes_of(const CaseSpec& s, const std::string& name) {
  const Region* r = find_region(s, name);
  const bool page = contains(s.pages, name), trailing = contains(s.trailing_pages, name);
  if (!r || r->nbytes <= 0 || (page && trailing)) return -1;
  if (trailing) return r->nbytes % 2 == 0 ? r->nbytes / 2 : -1;
  return r->nbytes;
}

// The caches of `spec`, read from `dir`, checked as uint8 [P, bytes] with one P.
std::map<std::string, NpyArray> read_caches(const fs::path& dir, const CaseSpec& spec) {
  std::map<std::string, NpyArray> caches;
  std::int64_t pages = -1;
  std::string first;
  for (const auto& name : binding_names(spec)) {
    const fs::path file = dir / ("cache_" + name + ".npy");
    NpyArray a = read_npy(file);
    const std::int64_t bytes = page_bytes_of(spec, name);
    check_array(file, a, DType::uint8, {"P", bytes >= 0 ? Dim(bytes) : Dim("bytes")});
    if (pages >= 0 && a.shape[0] != pages)
      fail(file, "has " + std::to_string(a.shape[0]) + " pages, cache_" + first + ".npy has " + std::to_string(pages));
    if (pages < 0) {
      pages = a.shape[0];
      first = name;
    }
    caches.emplace(name, std::move(a));
  }
  return caches;
}

std::int64_t element(const NpyArray& a, std::int64_t i) {
  switch (a.dtype) {
    case DType::uint8: return a.data<std::uint8_t>()[i];
    case DType::int32: return a.data<std::int32_t>()[i];
    case DType::int64: return a.data<std::int64_t>()[i];
    default: {
      // Other dtypes (hand-built outputs): compare their raw bytes, at most 8 per element.
      const auto size = dtype_size(a.dtype);
      std::int64_t v = 0;
      std::memcpy(&v, a.bytes.data() + static_cast<std::size_t>(i) * size, std::min<std::size_t>(size, sizeof v));
      return v;
    }
  }
}

}  // namespace

std::vector<std::string> binding_names(const CaseSpec& spec) {
  std::vector<std::string> names;
  for (const auto* list : {&spec.pages, &spec.trailing_pages})
    for (const auto& n : *list)
      if (!contains(names, n)) names.push_back(n);
  return names;
}

CaseOutputs read_outputs(const fs::path& dir, const CaseSpec& spec) {
  std::error_code exists_ec;
  if (!is_dir(dir)) fail(dir, fs::exists(dir, exists_ec) ? "not a folder" : "no such folder");
  CaseOutputs out;
  const fs::path error_file = dir / "error.json";
  std::error_code ec;
  if (fs::exists(error_file, ec)) {
    const json j = read_json(error_file);
    if (!j.is_object()) fail(error_file, "must hold a JSON object, got " + std::string(j.type_name()));
    // The message is what a port can be compared with; the kind alone will do.
    if (j.contains("message"))
      out.construct_error = get_string(j, "message", "", error_file);
    else if (j.contains("construct_error"))
      out.construct_error = get_string(j, "construct_error", "", error_file);
    else
      fail(error_file, "missing key 'message' (or 'construct_error')");
    if (j.contains("construct_error")) get_string(j, "construct_error", "", error_file);
    return out;
  }
  out.errors = read_npy(dir / "errors.npy");
  check_array(dir / "errors.npy", *out.errors, DType::int32, {spec.capacity});
  out.backing = read_npy(dir / "backing.npy");
  check_array(dir / "backing.npy", *out.backing, DType::uint8, {spec.rows, spec.row_bytes});
  out.caches = read_caches(dir, spec);
  return out;
}

Case load_case(const fs::path& dir) {
  if (!is_dir(dir)) fail(dir, "no such case folder");
  Case c;
  c.dir = dir;
  c.spec = parse_spec(dir / "case.json");
  const CaseSpec& s = c.spec;
  const std::int64_t cap = s.capacity;

  auto load = [&](const std::string& stem, DType dtype, const std::vector<Dim>& dims) -> const NpyArray& {
    const fs::path file = dir / (stem + ".npy");
    NpyArray a = read_npy(file);
    check_array(file, a, dtype, dims);
    return c.arrays[stem] = std::move(a);
  };
  load("backing", DType::uint8, {s.rows, s.row_bytes});
  load("memory_capacity", DType::int64, {2});
  const std::int64_t width = load("tables", DType::int32, {cap, "W"}).shape[1];
  if (!s.trailing_pages.empty()) load("trailing_tables", DType::int32, {cap, width});
  load("state_rows", DType::int64, {cap, 8});
  const NpyArray& consumed = load("request_consumed", DType::int64, {cap, "k"});
  if (consumed.shape[1] < 1)
    fail(dir / "request_consumed.npy", "expected int64 [C, k >= 1], got " + array_text(consumed));
  for (const char* stem : {"request_slots", "source_slots", "destination_slots", "expected_consumed"})
    load(stem, DType::int64, {cap});
  load("operation", DType::int32, {cap});
  load("num_ops", DType::int32, {1});
  for (auto& [name, a] : read_caches(dir, s)) c.arrays["cache_" + name] = std::move(a);

  const fs::path expected = dir / "expected";
  std::error_code ec;
  if (fs::exists(expected, ec)) {
    c.expected = read_outputs(expected, s);
    // The answers keep the inputs' cache shapes.
    for (const auto& [name, a] : c.expected.caches) {
      const NpyArray& in = c.arrays.at("cache_" + name);
      if (a.shape != in.shape)
        fail(expected / ("cache_" + name + ".npy"),
             "expected " + array_text(in) + " (the input cache's shape), got " + array_text(a));
    }
  }
  return c;
}

void write_outputs(const fs::path& dir, const CaseOutputs& outputs) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !is_dir(dir)) fail(dir, "cannot create the folder" + (ec ? ": " + ec.message() : std::string()));
  // Leave no answer of the other kind behind from an earlier run.
  auto remove = [&](const fs::path& p) {
    std::error_code rc;
    fs::remove(p, rc);
  };
  if (outputs.construct_error) {
    remove(dir / "errors.npy");
    remove(dir / "backing.npy");
    const json j = {{"construct_error", "invalid_argument"}, {"message", *outputs.construct_error}};
    const fs::path file = dir / "error.json";
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    if (!out) fail(file, "cannot open for writing");
    out << j.dump(1) << "\n";
    out.close();
    if (!out) fail(file, "write error");
    return;
  }
  remove(dir / "error.json");
  if (outputs.errors) write_npy(dir / "errors.npy", *outputs.errors);
  if (outputs.backing) write_npy(dir / "backing.npy", *outputs.backing);
  for (const auto& [name, a] : outputs.caches) write_npy(dir / ("cache_" + name + ".npy"), a);
}

Comparison compare_outputs(const CaseOutputs& actual, const CaseOutputs& expected, std::size_t limit) {
  Comparison cmp;
  auto add = [&](Difference d) {
    ++cmp.total;
    if (cmp.first.size() < limit) cmp.first.push_back(std::move(d));
  };
  if (actual.construct_error.has_value() != expected.construct_error.has_value()) {
    add({"construct_error", -1, actual.construct_error ? 1 : 0, expected.construct_error ? 1 : 0,
         actual.construct_error ? "construction failed (" + *actual.construct_error + "), expected it to succeed"
                                : "construction succeeded, expected it to fail (" + *expected.construct_error + ")"});
  }
  auto compare = [&](const std::string& name, const NpyArray* a, const NpyArray& e) {
    if (!a) {
      add({name, -1, 0, 0, "missing from the outputs, expected " + array_text(e)});
      return;
    }
    if (a->dtype != e.dtype || a->shape != e.shape) {
      add({name, -1, 0, 0, array_text(*a) + ", expected " + array_text(e)});
      return;
    }
    const std::int64_t n = e.elements();
    if (a->bytes == e.bytes) return;
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t x = element(*a, i), y = element(e, i);
      if (x != y) add({name, i, x, y, ""});
    }
  };
  if (expected.errors) compare("errors", actual.errors ? &*actual.errors : nullptr, *expected.errors);
  if (expected.backing) compare("backing", actual.backing ? &*actual.backing : nullptr, *expected.backing);
  for (const auto& [name, e] : expected.caches) {
    const auto it = actual.caches.find(name);
    compare("cache_" + name, it == actual.caches.end() ? nullptr : &it->second, e);
  }
  return cmp;
}

std::string to_string(const Difference& d) {
  if (d.index < 0) return d.array + ": " + d.detail;
  return d.array + "[" + std::to_string(d.index) + "] = " + std::to_string(d.value) + ", expected " +
         std::to_string(d.expected);
}

std::vector<fs::path> find_cases(const fs::path& root) {
  if (!is_dir(root)) fail(root, "no such folder");
  if (is_file(root / "case.json")) return {root};
  // Any depth, so that the folder an archive was extracted into works too; a
  // case folder is not searched further (its expected/ is no case).
  std::vector<fs::path> cases;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  if (ec) fail(root, "cannot list: " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) break;
    std::error_code dc;
    if (!it->is_directory(dc)) continue;
    if (is_file(it->path() / "case.json")) {
      cases.push_back(it->path());
      it.disable_recursion_pending();
    }
  }
  if (ec) fail(root, "cannot list: " + ec.message());
  std::sort(cases.begin(), cases.end());
  return cases;
}

}  // namespace statexfer::test
