// The oracle on a case: the case's arrays as the oracle's plain inputs. See reference.hpp.

#include <test_common/reference.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include <test_common/oracle.hpp>

namespace statexfer::test {
namespace {

const NpyArray& array(const Case& c, const std::string& name) {
  auto it = c.arrays.find(name);
  if (it == c.arrays.end()) throw std::invalid_argument("reference: case lacks array '" + name + "'");
  return it->second;
}

template <class T>
T element(const NpyArray& a, std::int64_t i) {
  T value;
  std::memcpy(&value, a.bytes.data() + static_cast<std::size_t>(i) * sizeof(T), sizeof(T));
  return value;
}

const Region& region(const CaseSpec& spec, const std::string& name) {
  for (const Region& r : spec.regions)
    if (r.name == name) return r;
  throw std::invalid_argument("reference: layout lacks region '" + name + "'");
}

bool is_excluded(const CaseSpec& spec, const std::string& name) {
  return std::find(spec.excluded_regions.begin(), spec.excluded_regions.end(), name) != spec.excluded_regions.end();
}

// The case's inputs as the oracle reads them; `out` holds the memory apply() writes.
struct OracleCase {
  OracleGeometry geometry;
  OracleCommands commands;
  OracleMemory memory;
  std::vector<std::string> page_names, trailing_names;  // bindings left after exclusions
};

OracleCase read_case(const Case& c, CaseOutputs& out) {
  const CaseSpec& spec = c.spec;
  OracleCase oc;
  OracleGeometry& g = oc.geometry;
  g.capacity = spec.capacity;
  g.rows = spec.rows;
  g.row_bytes = spec.row_bytes;
  g.page_tokens = spec.page_tokens;
  if (g.page_tokens <= 0) throw std::invalid_argument("reference: page_tokens must be positive");

  if (out.backing->bytes.size() != static_cast<std::size_t>(g.rows * g.row_bytes))
    throw std::invalid_argument("reference: backing size does not match rows * row_bytes");
  const NpyArray& tables = array(c, "tables");
  if (tables.shape.size() != 2 || tables.shape[0] != g.capacity || tables.shape[1] < 1)
    throw std::invalid_argument("reference: tables must be int32 [C, W >= 1]");
  g.width = tables.shape[1];
  g.consumed_offset = region(spec, "consumed_tokens").offset;
  for (const std::string& name : spec.excluded_regions) {
    const Region& reg = region(spec, name);
    g.excluded.emplace_back(reg.offset, reg.offset + reg.nbytes);
  }
  for (const std::string& name : spec.pages)
    if (!is_excluded(spec, name)) oc.page_names.push_back(name);
  for (const std::string& name : spec.trailing_pages)
    if (!is_excluded(spec, name)) oc.trailing_names.push_back(name);
  for (const std::string& name : oc.page_names)
    g.page_bindings.push_back({region(spec, name).offset, region(spec, name).nbytes});
  for (const std::string& name : oc.trailing_names)
    g.trailing_bindings.push_back({region(spec, name).offset, region(spec, name).nbytes});

  // Cache page count: every remaining cache has the same count in a valid
  // configuration; the smallest is taken so that nothing can read past any.
  std::int64_t cache_pages = -1;
  for (const auto* names : {&oc.page_names, &oc.trailing_names})
    for (const std::string& name : *names) {
      const NpyArray& cache = array(c, "cache_" + name);
      const std::int64_t p = cache.shape.empty() ? 0 : cache.shape[0];
      cache_pages = cache_pages < 0 ? p : std::min(cache_pages, p);
      oc.memory.caches.push_back(out.caches[name].bytes.data());
    }
  g.cache_pages = std::max<std::int64_t>(cache_pages, 0);

  OracleMemory& m = oc.memory;
  m.pool = out.backing->bytes.data();
  m.tables = tables.data<std::int32_t>();
  if (!oc.trailing_names.empty()) m.trailing_tables = array(c, "trailing_tables").data<std::int32_t>();
  // Only remapping commits write the state rows, and cases have none.
  m.state_rows = const_cast<std::int64_t*>(array(c, "state_rows").data<std::int64_t>());
  m.state_rows_stride = 8;
  const NpyArray& requested = array(c, "request_consumed");
  m.request_consumed = requested.data<std::int64_t>();
  m.request_stride = requested.shape.size() == 2 ? requested.shape[1] : 1;
  const NpyArray& capacity = array(c, "memory_capacity");
  m.memory_capacity[0] = element<std::int64_t>(capacity, 0);
  m.memory_capacity[1] = element<std::int64_t>(capacity, 1);

  OracleCommands& k = oc.commands;
  k.request_slots = array(c, "request_slots").data<std::int64_t>();
  k.source_slots = array(c, "source_slots").data<std::int64_t>();
  k.destination_slots = array(c, "destination_slots").data<std::int64_t>();
  k.operation = array(c, "operation").data<std::int32_t>();
  k.expected_consumed = array(c, "expected_consumed").data<std::int64_t>();
  k.num_ops = element<std::int32_t>(array(c, "num_ops"), 0);
  return oc;
}

// Outputs start as copies of the inputs.
CaseOutputs initial_outputs(const Case& c) {
  CaseOutputs out;
  out.backing = array(c, "backing");
  for (const auto* names : {&c.spec.pages, &c.spec.trailing_pages})
    for (const std::string& name : *names) out.caches[name] = array(c, "cache_" + name);
  return out;
}

}  // namespace

std::vector<std::int32_t> reference_validate(const Case& c) {
  CaseOutputs out = initial_outputs(c);
  const OracleCase oc = read_case(c, out);
  return ContractOracle(oc.geometry).validate(oc.commands, oc.memory);
}

CaseOutputs reference_run(const Case& c) {
  CaseOutputs out = initial_outputs(c);
  OracleCase oc = read_case(c, out);
  const ContractOracle oracle(oc.geometry);
  const std::vector<std::int32_t> codes = oracle.validate(oc.commands, oc.memory);
  oracle.apply(oc.commands, codes, oc.memory);

  NpyArray errors;
  errors.dtype = DType::int32;
  errors.shape = {oc.geometry.capacity};
  errors.bytes.resize(static_cast<std::size_t>(oc.geometry.capacity) * sizeof(std::int32_t));
  std::memcpy(errors.bytes.data(), codes.data(), errors.bytes.size());
  out.errors = errors;
  return out;
}

}  // namespace statexfer::test
