// Sequential host reading of SPEC.md sections 4 and 5. See host_reference.hpp.
//
// Deliberately simple: every quantity is named as in the specification and
// computed the way the specification writes it, one command row at a time.

#include "reference/host_reference.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace statexfer::reference {
namespace {

using tools::Case;
using tools::NpyArray;

const NpyArray& array(const Case& c, const std::string& name) {
  auto it = c.arrays.find(name);
  if (it == c.arrays.end()) throw std::invalid_argument("reference: case lacks array '" + name + "'");
  return it->second;
}

bool has_array(const Case& c, const std::string& name) { return c.arrays.count(name) != 0; }

// Element `i` of a little-endian integer array of element type T (read bytewise
// so that alignment never matters).
template <class T>
T element(const NpyArray& a, std::int64_t i) {
  T value;
  std::memcpy(&value, a.bytes.data() + static_cast<std::size_t>(i) * sizeof(T), sizeof(T));
  return value;
}

const Region& region(const tools::CaseSpec& spec, const std::string& name) {
  for (const Region& r : spec.regions)
    if (r.name == name) return r;
  throw std::invalid_argument("reference: layout lacks region '" + name + "'");
}

bool is_excluded(const tools::CaseSpec& spec, const std::string& name) {
  return std::find(spec.excluded_regions.begin(), spec.excluded_regions.end(), name) != spec.excluded_regions.end();
}

// Everything validate() and apply() read, as plain host values.
struct Inputs {
  std::int64_t C = 0;   // capacity
  std::int64_t PT = 0;  // page_tokens
  std::int64_t W = 0;   // page table width
  std::int64_t rows = 0;
  std::int64_t row_bytes = 0;
  std::int64_t SLOTS = 0;  // min(memory_capacity[0], rows)
  std::int64_t PAGES = 0;  // min(memory_capacity[1], cache page count)
  std::int32_t count = 0;

  std::vector<std::int64_t> request_slots, source_slots, destination_slots, expected_consumed;
  std::vector<std::int32_t> operation;

  const NpyArray* tables = nullptr;
  const NpyArray* trailing_tables = nullptr;
  const NpyArray* state_rows = nullptr;
  const NpyArray* request_consumed = nullptr;
  std::int64_t request_stride = 1;  // elements per row of request_consumed
  std::int64_t consumed_offset = 0;  // byte offset of consumed_tokens in a row

  std::vector<std::string> page_names;      // page bindings left after exclusions
  std::vector<std::string> trailing_names;  // trailing bindings left after exclusions

  std::int32_t table(std::int64_t slot, std::int64_t logical) const {
    return element<std::int32_t>(*tables, slot * W + logical);
  }
  std::int32_t trailing_table(std::int64_t slot, std::int64_t logical) const {
    return element<std::int32_t>(*trailing_tables, slot * W + logical);
  }
  std::int64_t state_row(std::int64_t slot) const { return element<std::int64_t>(*state_rows, slot * 8 + 0); }
  std::int64_t requested(std::int64_t slot) const {
    return element<std::int64_t>(*request_consumed, slot * request_stride + 0);
  }
};

Inputs read_inputs(const Case& c) {
  const tools::CaseSpec& spec = c.spec;
  Inputs in;
  in.C = spec.capacity;
  in.PT = spec.page_tokens;
  in.rows = spec.rows;
  in.row_bytes = spec.row_bytes;
  if (in.PT <= 0) throw std::invalid_argument("reference: page_tokens must be positive");

  const NpyArray& backing = array(c, "backing");
  if (backing.bytes.size() != static_cast<std::size_t>(in.rows * in.row_bytes))
    throw std::invalid_argument("reference: backing size does not match rows * row_bytes");

  in.tables = &array(c, "tables");
  if (in.tables->shape.size() != 2 || in.tables->shape[0] != in.C || in.tables->shape[1] < 1)
    throw std::invalid_argument("reference: tables must be int32 [C, W >= 1]");
  in.W = in.tables->shape[1];
  in.state_rows = &array(c, "state_rows");
  in.request_consumed = &array(c, "request_consumed");
  in.request_stride = in.request_consumed->shape.size() == 2 ? in.request_consumed->shape[1] : 1;

  in.consumed_offset = region(spec, "consumed_tokens").offset;

  for (const std::string& name : spec.pages)
    if (!is_excluded(spec, name)) in.page_names.push_back(name);
  for (const std::string& name : spec.trailing_pages)
    if (!is_excluded(spec, name)) in.trailing_names.push_back(name);
  if (!in.trailing_names.empty()) in.trailing_tables = &array(c, "trailing_tables");

  // Cache page count: every remaining cache has the same count in a valid
  // configuration; the smallest is taken so that nothing can read past any.
  std::int64_t cache_pages = -1;
  for (const auto* names : {&in.page_names, &in.trailing_names})
    for (const std::string& name : *names) {
      const NpyArray& cache = array(c, "cache_" + name);
      const std::int64_t p = cache.shape.empty() ? 0 : cache.shape[0];
      cache_pages = cache_pages < 0 ? p : std::min(cache_pages, p);
    }
  if (cache_pages < 0) cache_pages = 0;

  const NpyArray& capacity = array(c, "memory_capacity");
  in.SLOTS = std::min(element<std::int64_t>(capacity, 0), in.rows);
  in.PAGES = std::min(element<std::int64_t>(capacity, 1), cache_pages);

  in.count = element<std::int32_t>(array(c, "num_ops"), 0);
  for (std::int64_t r = 0; r < in.C; ++r) {
    in.request_slots.push_back(element<std::int64_t>(array(c, "request_slots"), r));
    in.source_slots.push_back(element<std::int64_t>(array(c, "source_slots"), r));
    in.destination_slots.push_back(element<std::int64_t>(array(c, "destination_slots"), r));
    in.expected_consumed.push_back(element<std::int64_t>(array(c, "expected_consumed"), r));
    in.operation.push_back(element<std::int32_t>(array(c, "operation"), r));
  }
  return in;
}

// The pool's consumed_tokens of row `row` (0 <= row < rows), as validate() reads it.
std::int64_t pool_consumed(const Case& c, const Inputs& in, std::int64_t row) {
  const NpyArray& backing = array(c, "backing");
  std::int64_t value;
  std::memcpy(&value, backing.bytes.data() + row * in.row_bytes + in.consumed_offset, sizeof(value));
  return value;
}

// SPEC section 4, first part, for command row r.
struct RowView {
  std::int64_t slot, src, dst, end;
  std::int32_t op;
  bool live, valid_slot, valid_row, snapshot, restore, reset, copying, valid_slots, valid_endpoint, tail;
  std::int64_t state, consumed, logical, page;
};

RowView row_view(const Case& c, const Inputs& in, std::int64_t r) {
  RowView v{};
  v.slot = in.request_slots[r];
  v.src = in.source_slots[r];
  v.dst = in.destination_slots[r];
  v.op = in.operation[r];
  v.end = in.expected_consumed[r];
  v.live = r < in.count;
  const std::int64_t SLOTS = in.SLOTS, PT = in.PT, W = in.W;

  v.valid_slot = 0 <= v.slot && v.slot < in.C;
  v.state = v.valid_slot ? in.state_row(v.slot) : 0;
  v.valid_row = v.valid_slot && 0 < v.state && v.state < SLOTS;
  v.snapshot = v.valid_row && v.src == v.state && 0 < v.dst && v.dst < SLOTS && v.src != v.dst;
  v.restore = v.valid_row && v.dst == v.state && 0 < v.src && v.src < SLOTS && v.src != v.dst;
  v.reset = v.valid_row && v.op == 1 && v.src == -1 && v.dst == v.state;
  v.copying = v.op == 0;
  v.valid_slots = (v.copying && (v.snapshot || v.restore)) || v.reset;
  if (v.snapshot)
    v.consumed = in.requested(v.slot);
  else if (v.live && v.copying && 0 < v.src && v.src < SLOTS)
    v.consumed = pool_consumed(c, in, v.src);
  else
    v.consumed = -1;
  v.valid_endpoint = v.copying ? (v.end > 0 && v.end == v.consumed && v.end <= W * PT) : v.end == 0;
  v.tail = v.copying && v.end > 0 && v.end % PT != 0;
  v.logical = v.tail ? v.end / PT : -1;  // only used where the endpoint is positive
  v.page = (v.live && v.tail && v.valid_slots && 0 <= v.logical && v.logical < W) ? in.table(v.slot, v.logical) : -1;
  return v;
}

// SPEC section 4, the values of another row o as the conflict test sees them.
struct OtherView {
  std::int64_t src, dst;
  bool copy, restore, tail;
  std::int64_t page;
};

OtherView other_view(const Inputs& in, std::int64_t o) {
  OtherView v{};
  const std::int64_t slot = in.request_slots[o];
  v.src = in.source_slots[o];
  v.dst = in.destination_slots[o];
  const std::int64_t end = in.expected_consumed[o];
  v.copy = in.operation[o] == 0;
  const bool slot_ok = 0 <= slot && slot < in.C;
  const std::int64_t state = slot_ok ? in.state_row(slot) : 0;
  const bool snapshot = v.copy && v.src == state;
  v.restore = v.copy && v.dst == state;
  v.tail = (snapshot || v.restore) && end > 0 && end % in.PT != 0;
  const std::int64_t logical = v.tail ? end / in.PT : -1;
  v.page = (v.tail && slot_ok && 0 <= logical && logical < in.W) ? in.table(slot, logical) : -1;
  return v;
}

std::vector<std::int32_t> validate(const Case& c, const Inputs& in) {
  const std::int64_t C = in.C, count = in.count;
  std::vector<std::int32_t> codes(static_cast<std::size_t>(C), 0);

  // --- main rules -----------------------------------------------------------
  for (std::int64_t r = 0; r < C; ++r) {
    std::int32_t code = 0;
    if (count < 0 || count > C) {
      code = 5;
    } else if (r < count) {
      const RowView v = row_view(c, in, r);
      bool conflict = false;
      for (std::int64_t o = 0; o < count; ++o) {
        if (o == r) continue;
        const OtherView w = other_view(in, o);
        if (v.dst == w.dst || (v.copying && v.src == w.dst) || (w.copy && v.dst == w.src) ||
            (v.tail && w.tail && v.page >= 0 && v.page == w.page && (v.restore || w.restore)))
          conflict = true;
      }

      if (v.op != 0 && v.op != 1)
        code = 1;
      else if (!v.valid_slots)
        code = 2;
      else if (!v.valid_endpoint)
        code = 3;
      else if (conflict)
        code = 4;
      else if (v.tail && (v.page < 0 || v.page >= in.PAGES))
        code = 6;
      else
        code = 0;
    }
    codes[static_cast<std::size_t>(r)] = code;
  }

  // --- trailing (draft) pages -------------------------------------------------
  if (in.trailing_names.empty()) return codes;
  const std::vector<std::int32_t> main_codes = codes;
  const std::int64_t PT = in.PT, W = in.W;
  for (std::int64_t r = 0; r < C; ++r) {
    if (!(main_codes[static_cast<std::size_t>(r)] == 0 && r < count && in.operation[r] == 0)) continue;
    const std::int64_t slot = in.request_slots[r];
    const std::int64_t end = in.expected_consumed[r];
    const std::int64_t state = (0 <= slot && slot < C) ? in.state_row(slot) : 0;
    const bool snapshot = in.source_slots[r] == state;
    std::int32_t code = codes[static_cast<std::size_t>(r)];
    for (int part = 0; part < 2; ++part) {
      const std::int64_t t_logical = (end > 0 ? end / PT : 0) - 1 + part;
      const bool t_tail = end > 1 && t_logical >= 0 && (part == 0 || end % PT >= 2);
      const std::int64_t t_page = (t_tail && t_logical < W) ? in.trailing_table(slot, t_logical) : -1;

      bool conflict = false;
      for (std::int64_t o = 0; o < count; ++o) {
        if (o == r || in.operation[o] != 0) continue;
        const std::int64_t o_slot = in.request_slots[o];
        if (!(0 <= o_slot && o_slot < C)) continue;
        const std::int64_t o_end = in.expected_consumed[o];
        const bool o_snapshot = in.source_slots[o] == in.state_row(o_slot);
        for (int o_part = 0; o_part < 2; ++o_part) {
          if (!(o_end > 1)) continue;
          const std::int64_t o_logical = o_end / PT - 1 + o_part;  // o_end / PT may be INT64_MAX
          if (!(0 <= o_logical && o_logical < W)) continue;
          if (o_part == 1 && !(o_end % PT >= 2)) continue;
          if (in.trailing_table(o_slot, o_logical) == t_page && !(snapshot && o_snapshot)) conflict = true;
        }
      }
      if (t_tail && (t_page < 0 || t_page >= in.PAGES)) code = 6;
      if (t_tail && conflict) code = 4;
    }
    codes[static_cast<std::size_t>(r)] = code;
  }
  return codes;
}

}  // namespace

std::vector<std::int32_t> reference_validate(const tools::Case& c) { return validate(c, read_inputs(c)); }

tools::CaseOutputs reference_run(const tools::Case& c) {
  const Inputs in = read_inputs(c);
  const tools::CaseSpec& spec = c.spec;
  const std::vector<std::int32_t> codes = validate(c, in);

  // Outputs start as copies of the inputs.
  tools::CaseOutputs out;
  NpyArray errors;
  errors.dtype = DType::int32;
  errors.shape = {in.C};
  errors.bytes.resize(static_cast<std::size_t>(in.C) * sizeof(std::int32_t));
  std::memcpy(errors.bytes.data(), codes.data(), errors.bytes.size());
  out.errors = errors;
  out.backing = array(c, "backing");
  for (const auto* names : {&spec.pages, &spec.trailing_pages})
    for (const std::string& name : *names) out.caches[name] = array(c, "cache_" + name);

  std::vector<std::uint8_t>& pool = out.backing->bytes;
  const std::int64_t RB = in.row_bytes, PT = in.PT;
  auto at = [&](std::int64_t row, std::int64_t byte) -> std::uint8_t& {
    return pool[static_cast<std::size_t>(row * RB + byte)];
  };

  // Bytes a row copy or reset touches: all but the excluded regions.
  std::vector<bool> copied(static_cast<std::size_t>(RB), true);
  for (const std::string& name : spec.excluded_regions) {
    const Region& reg = region(spec, name);
    for (std::int64_t b = reg.offset; b < reg.offset + reg.nbytes; ++b) copied[static_cast<std::size_t>(b)] = false;
  }

  std::vector<std::int64_t> acting;  // rows r < count with code 0
  for (std::int64_t r = 0; r < in.C; ++r)
    if (r < in.count && codes[static_cast<std::size_t>(r)] == 0) acting.push_back(r);

  // 1. Rows.
  for (std::int64_t r : acting) {
    const std::int64_t src = in.source_slots[r], dst = in.destination_slots[r];
    if (in.operation[r] == 0) {
      for (std::int64_t b = 0; b < RB; ++b)
        if (copied[static_cast<std::size_t>(b)]) at(dst, b) = at(src, b);
    } else if (in.operation[r] == 1) {
      for (std::int64_t b = 0; b < RB; ++b)
        if (copied[static_cast<std::size_t>(b)]) at(dst, b) = 0;
    }
  }

  auto is_snapshot = [&](std::int64_t r) { return in.source_slots[r] == in.state_row(in.request_slots[r]); };

  // Copy `nbytes` between a cache page and a row's region bytes at `offset`.
  auto transfer = [&](std::int64_t r, const std::string& name, std::int64_t page, std::int64_t offset,
                      std::int64_t nbytes) {
    std::vector<std::uint8_t>& cache = out.caches[name].bytes;
    const std::int64_t src = in.source_slots[r], dst = in.destination_slots[r];
    for (std::int64_t b = 0; b < nbytes; ++b) {
      std::uint8_t& cell = cache[static_cast<std::size_t>(page * nbytes + b)];
      if (is_snapshot(r))
        at(dst, offset + b) = cell;  // snapshot: cache page -> row dst
      else
        cell = at(src, offset + b);  // restore: row src -> cache page
    }
  };

  // 2. Partial pages.
  for (std::int64_t r : acting) {
    if (in.operation[r] != 0) continue;
    const std::int64_t end = in.expected_consumed[r];
    if (end % PT == 0) continue;
    const std::int64_t page = in.table(in.request_slots[r], end / PT);
    for (const std::string& name : in.page_names) {
      const Region& reg = region(spec, name);
      transfer(r, name, page, reg.offset, reg.nbytes);
    }
  }

  // 3. Trailing pages, part 0 then part 1 (only with trailing bindings left).
  for (int part = 0; part < 2 && !in.trailing_names.empty(); ++part) {
    for (std::int64_t r : acting) {
      if (in.operation[r] != 0) continue;
      const std::int64_t end = in.expected_consumed[r];
      const std::int64_t t_logical = end / PT - 1 + part;
      const bool t_tail = end > 1 && t_logical >= 0 && (part == 0 || end % PT >= 2);
      if (!t_tail) continue;
      const std::int64_t page = in.trailing_table(in.request_slots[r], t_logical);
      for (const std::string& name : in.trailing_names) {
        const Region& reg = region(spec, name);
        const std::int64_t half = reg.nbytes / 2;
        transfer(r, name, page, reg.offset + part * half, half);
      }
    }
  }
  return out;
}

}  // namespace statexfer::reference
