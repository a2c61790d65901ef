// The sequential host reading of docs/CONTRACT.md §4 and §5. See oracle.hpp.
//
// Deliberately simple: every quantity is named as in the contract and computed
// the way the contract writes it, one command row at a time.

#include <test_common/oracle.hpp>

#include <algorithm>
#include <cstring>
#include <utility>

namespace statexfer::test {
namespace {

// Element `i` of an integer array, read bytewise so that alignment never matters.
template <class T>
T load(const T* base, std::int64_t i) {
  T value;
  std::memcpy(&value, reinterpret_cast<const unsigned char*>(base) + i * static_cast<std::int64_t>(sizeof(T)),
              sizeof(T));
  return value;
}

// Everything validate() and apply() read, as plain host values.
struct Inputs {
  std::int64_t C = 0, PT = 1, W = 1, row_bytes = 0;
  std::int64_t SLOTS = 0;       // min(memory_capacity[0], rows)
  std::int64_t PAGES = 0;       // min(memory_capacity[1], cache pages)
  bool tier = false;            // a host tier is bound (§12)
  std::int64_t HOST_SLOTS = 0;  // min(host capacity, host rows)
  std::int32_t count = 0;
  const OracleCommands* cmd = nullptr;
  const OracleMemory* mem = nullptr;
  std::int64_t consumed_offset = 0;
  bool trailing = false;         // trailing bindings left after exclusions
  std::int64_t K = 0;            // speculative positions (§13)
  std::int64_t key_offset = -1;  // prefix_key (§14)

  std::int64_t slot(std::int64_t r) const { return load(cmd->request_slots, r); }
  std::int64_t src(std::int64_t r) const { return load(cmd->source_slots, r); }
  std::int64_t dst(std::int64_t r) const { return load(cmd->destination_slots, r); }
  std::int32_t op(std::int64_t r) const { return load(cmd->operation, r); }
  std::int64_t end(std::int64_t r) const { return load(cmd->expected_consumed, r); }
  std::int32_t table(std::int64_t slot, std::int64_t logical) const { return load(mem->tables, slot * W + logical); }
  std::int32_t trailing_table(std::int64_t slot, std::int64_t logical) const {
    return load(mem->trailing_tables, slot * W + logical);
  }
  std::int64_t state_row(std::int64_t slot) const { return load(mem->state_rows, slot * mem->state_rows_stride); }
  // Column j of a slot's state rows: its position row j (§13).
  std::int64_t state_column(std::int64_t slot, std::int64_t j) const {
    return load(mem->state_rows, slot * mem->state_rows_stride + j);
  }
  std::int32_t accepted(std::int64_t slot) const { return load(mem->accepted, slot); }
  std::int64_t command_key(std::int64_t r) const { return load(cmd->prefix_keys, r); }
  std::int64_t requested(std::int64_t slot) const { return load(mem->request_consumed, slot * mem->request_stride); }
  // The pool's consumed_tokens of row `row` (0 <= row < SLOTS).
  std::int64_t pool_consumed(std::int64_t row) const {
    std::int64_t value;
    std::memcpy(&value, mem->pool + row * row_bytes + consumed_offset, sizeof(value));
    return value;
  }
  // The host tier's consumed_tokens of host row `row` (0 <= row < HOST_SLOTS).
  std::int64_t host_consumed(std::int64_t row) const {
    std::int64_t value;
    std::memcpy(&value, mem->host + row * row_bytes + consumed_offset, sizeof(value));
    return value;
  }
  // The prefix key (§14) of row `row` of the pool or the host tier.
  std::int64_t row_key(bool host, std::int64_t row) const {
    std::int64_t value;
    std::memcpy(&value, (host ? mem->host : mem->pool) + row * row_bytes + key_offset, sizeof(value));
    return value;
  }
  // §12, §13: which operations exist, and in which tier each reads and writes.
  bool commit(std::int32_t op) const { return K > 0 && op == 5; }
  bool known(std::int32_t op) const { return op == 0 || op == 1 || (tier && op >= 2 && op <= 4) || commit(op); }
  bool reads(std::int32_t op) const { return op == 0 || (tier && op >= 2 && op <= 4) || commit(op); }
  bool moves_pages(std::int32_t op) const { return op == 0 || (tier && op == 4); }
  bool src_in_host(std::int32_t op) const { return tier && (op == 3 || op == 4); }
  bool dst_in_host(std::int32_t op) const { return tier && op == 2; }
};

Inputs read_inputs(const OracleGeometry& g, const OracleCommands& commands, const OracleMemory& memory) {
  Inputs in;
  in.C = g.capacity;
  in.PT = g.page_tokens;
  in.W = g.width;
  in.row_bytes = g.row_bytes;
  in.SLOTS = std::min(memory.memory_capacity[0], g.rows);
  in.PAGES = std::min(memory.memory_capacity[1], g.cache_pages);
  in.count = commands.num_ops;
  in.cmd = &commands;
  in.mem = &memory;
  in.consumed_offset = g.consumed_offset;
  in.trailing = !g.trailing_bindings.empty();
  in.tier = g.host_rows > 0;
  in.HOST_SLOTS = in.tier ? std::min(memory.host_capacity, g.host_rows) : 0;
  in.K = g.positions;
  in.key_offset = g.key_offset;
  return in;
}

// §13: the rows a commit names through its slot's state rows.
struct CommitView {
  std::int64_t a = -1;        // accepted[slot], -1 for an invalid slot
  bool valid_count = false;   // 0 <= a <= K
  std::int64_t position = 0;  // its position row, 0 when slot or count is invalid
  std::int64_t state = 0;     // its live row, 0 for an invalid slot
};

CommitView commit_view(const Inputs& in, std::int64_t r) {
  CommitView c;
  const std::int64_t slot = in.slot(r);
  const bool valid_slot = 0 <= slot && slot < in.C;
  if (!valid_slot) return c;
  c.state = in.state_row(slot);
  c.a = in.accepted(slot);
  c.valid_count = 0 <= c.a && c.a <= in.K;
  if (c.valid_count) c.position = c.a == 0 ? c.state : in.state_column(slot, c.a);
  return c;
}

// §4, first part, for command row r. For a commit (§13) src and dst are the
// position row and the live row its slot names.
struct RowView {
  std::int64_t slot, src, dst, end;
  std::int32_t op;
  bool valid_slot, valid_row, snapshot, restore, reset, copying, valid_slots, valid_endpoint, tail, commit;
  std::int64_t state, consumed, logical, page;
};

RowView row_view(const Inputs& in, std::int64_t r) {
  RowView v{};
  v.slot = in.slot(r);
  v.src = in.src(r);
  v.dst = in.dst(r);
  v.op = in.op(r);
  v.end = in.end(r);
  const std::int64_t SLOTS = in.SLOTS, PT = in.PT, W = in.W;

  const std::int64_t HOST_SLOTS = in.HOST_SLOTS;
  v.valid_slot = 0 <= v.slot && v.slot < in.C;
  v.state = v.valid_slot ? in.state_row(v.slot) : 0;
  v.valid_row = v.valid_slot && 0 < v.state && v.state < SLOTS;
  v.copying = in.reads(v.op);
  if (v.op == 0) {
    v.snapshot = v.valid_row && v.src == v.state && 0 < v.dst && v.dst < SLOTS && v.src != v.dst;
    v.restore = v.valid_row && v.dst == v.state && 0 < v.src && v.src < SLOTS && v.src != v.dst;
    v.valid_slots = v.snapshot || v.restore;
    if (v.snapshot)
      v.consumed = in.requested(v.slot);
    else
      v.consumed = 0 < v.src && v.src < SLOTS ? in.pool_consumed(v.src) : -1;
  } else if (v.op == 1) {
    v.reset = v.valid_row && v.src == -1 && v.dst == v.state;
    v.valid_slots = v.reset;
    v.consumed = -1;
  } else if (in.tier && v.op == 2) {  // offload: device row src -> host row dst
    v.valid_slots = v.slot == -1 && 0 < v.src && v.src < SLOTS && 0 < v.dst && v.dst < HOST_SLOTS;
    v.consumed = 0 < v.src && v.src < SLOTS ? in.pool_consumed(v.src) : -1;
  } else if (in.tier && v.op == 3) {  // onload: host row src -> device row dst
    v.valid_slots = v.slot == -1 && 0 < v.src && v.src < HOST_SLOTS && 0 < v.dst && v.dst < SLOTS;
    v.consumed = 0 < v.src && v.src < HOST_SLOTS ? in.host_consumed(v.src) : -1;
  } else if (in.tier && v.op == 4) {  // restore from host row src into the live row
    v.restore = v.valid_row && v.dst == v.state && 0 < v.src && v.src < HOST_SLOTS;
    v.valid_slots = v.restore;
    v.consumed = 0 < v.src && v.src < HOST_SLOTS ? in.host_consumed(v.src) : -1;
  } else if (in.commit(v.op)) {  // §13: the accepted position's row into the live row
    v.commit = true;
    const CommitView c = commit_view(in, r);
    v.valid_slots = v.valid_row && v.src == -1 && v.dst == -1 && c.valid_count && 0 < c.position &&
                    c.position < SLOTS && (c.a == 0 || c.position != v.state);
    v.consumed = 0 < c.position && c.position < SLOTS ? in.pool_consumed(c.position) : -1;
    v.src = c.position;
    v.dst = c.state;
    v.valid_endpoint = c.valid_count && v.end > 0 && v.end <= W * PT - c.a && v.consumed == v.end + c.a;
  } else {
    v.consumed = -1;
  }
  if (v.commit)
    ;  // decided above
  else if (!v.copying)
    v.valid_endpoint = v.end == 0;
  else if (in.moves_pages(v.op))
    v.valid_endpoint = v.end > 0 && v.end == v.consumed && v.end <= W * PT;
  else
    v.valid_endpoint = v.end > 0 && v.end == v.consumed;
  // §14: a restore, an offload, an onload and a restore from the host read a
  // snapshot row, which must hold the command's prefix key.
  if (in.key_offset >= 0 && v.copying && !v.commit && !(v.op == 0 && v.snapshot)) {
    const bool host = in.src_in_host(v.op);
    const bool in_tier = 0 < v.src && v.src < (host ? HOST_SLOTS : SLOTS);
    v.valid_endpoint = v.valid_endpoint && in_tier && in.row_key(host, v.src) == in.command_key(r);
  }
  v.tail = in.moves_pages(v.op) && v.end > 0 && v.end % PT != 0;
  v.logical = v.tail ? v.end / PT : -1;  // only used where the endpoint is positive
  v.page = (v.tail && v.valid_slots && 0 <= v.logical && v.logical < W) ? in.table(v.slot, v.logical) : -1;
  return v;
}

// §4, the values of another row o as the conflict test sees them.
struct OtherView {
  std::int64_t src, dst;
  bool copy, restore, tail, commit;
  bool src_host, dst_host;  // the tier of the rows it reads and writes (§12)
  std::int64_t page;
};

OtherView other_view(const Inputs& in, std::int64_t o) {
  OtherView v{};
  const std::int64_t slot = in.slot(o);
  v.src = in.src(o);
  v.dst = in.dst(o);
  const std::int64_t end = in.end(o);
  const std::int32_t op = in.op(o);
  v.copy = in.reads(op);
  if (in.commit(op)) {  // §13: its position row and live row, no page
    const CommitView c = commit_view(in, o);
    v.commit = true;
    v.src = c.position;
    v.dst = c.state;
    v.page = -1;
    return v;
  }
  v.src_host = in.src_in_host(op);
  v.dst_host = in.dst_in_host(op);
  const bool slot_ok = 0 <= slot && slot < in.C;
  const std::int64_t state = slot_ok ? in.state_row(slot) : 0;
  // Only a copy between device rows (0) or a restore from the host tier (4) moves pages.
  const bool pages = in.moves_pages(op);
  const bool snapshot = pages && !v.src_host && v.src == state;
  v.restore = pages && v.dst == state;
  v.tail = (snapshot || v.restore) && end > 0 && end % in.PT != 0;
  const std::int64_t logical = v.tail ? end / in.PT : -1;
  v.page = (v.tail && slot_ok && 0 <= logical && logical < in.W) ? in.table(slot, logical) : -1;
  return v;
}

// §4, trailing (draft) pages of a row whose main code is 0: part 1's code
// overrides part 0's.
std::int32_t trailing_code(const Inputs& in, std::int64_t r, std::int32_t code) {
  const std::int64_t PT = in.PT, W = in.W;
  const std::int64_t slot = in.slot(r);
  const std::int64_t end = in.end(r);
  const std::int64_t state = (0 <= slot && slot < in.C) ? in.state_row(slot) : 0;
  const bool snapshot = !in.src_in_host(in.op(r)) && in.src(r) == state;
  for (int part = 0; part < 2; ++part) {
    const std::int64_t t_logical = (end > 0 ? end / PT : 0) - 1 + part;
    const bool t_tail = end > 1 && t_logical >= 0 && (part == 0 || end % PT >= 2);
    const std::int64_t t_page = (t_tail && t_logical < W) ? in.trailing_table(slot, t_logical) : -1;

    bool conflict = false;
    for (std::int64_t o = 0; o < in.count; ++o) {
      if (o == r || !in.moves_pages(in.op(o))) continue;
      const std::int64_t o_slot = in.slot(o);
      if (!(0 <= o_slot && o_slot < in.C)) continue;
      const std::int64_t o_end = in.end(o);
      const bool o_snapshot = !in.src_in_host(in.op(o)) && in.src(o) == in.state_row(o_slot);
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
  return code;
}

}  // namespace

ContractOracle::ContractOracle(OracleGeometry geometry)
    : geometry_(std::move(geometry)), copied_(static_cast<std::size_t>(geometry_.row_bytes), true) {
  for (const auto& [begin, end] : geometry_.excluded)
    for (std::int64_t b = begin; b < end; ++b) copied_[static_cast<std::size_t>(b)] = false;
}

std::int64_t ContractOracle::cache_page_bytes(std::size_t i) const {
  const std::size_t pages = geometry_.page_bindings.size();
  return i < pages ? geometry_.page_bindings[i].nbytes : geometry_.trailing_bindings[i - pages].nbytes / 2;
}

std::vector<std::int32_t> ContractOracle::validate(const OracleCommands& commands, const OracleMemory& memory,
                                                   std::vector<std::int32_t>* commit_positions) const {
  const Inputs in = read_inputs(geometry_, commands, memory);
  const std::int64_t C = in.C, count = in.count;
  std::vector<std::int32_t> codes(static_cast<std::size_t>(C), 0);
  if (commit_positions != nullptr) {
    // §13: a live commit's accepted count as read, -1 for every other row.
    commit_positions->assign(static_cast<std::size_t>(C), -1);
    for (std::int64_t r = 0; r < count && count <= C; ++r)
      if (in.commit(in.op(r)))
        (*commit_positions)[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(commit_view(in, r).a);
  }
  if (count < 0 || count > C) {
    std::fill(codes.begin(), codes.end(), 5);
    return codes;
  }

  // Main rules, on rows r < count (the others keep 0).
  for (std::int64_t r = 0; r < count; ++r) {
    const RowView v = row_view(in, r);
    // Rows are (tier, row): equal numbers in different tiers are different rows.
    const bool v_src_host = in.src_in_host(v.op), v_dst_host = in.dst_in_host(v.op);
    bool conflict = false;
    for (std::int64_t o = 0; o < count; ++o) {
      if (o == r) continue;
      const OtherView w = other_view(in, o);
      if ((v.dst == w.dst && v_dst_host == w.dst_host) || (v.copying && v.src == w.dst && v_src_host == w.dst_host) ||
          (w.copy && v.dst == w.src && v_dst_host == w.src_host) ||
          (v.tail && w.tail && v.page >= 0 && v.page == w.page && (v.restore || w.restore)) ||
          ((v.commit || w.commit) && v.copying && w.copy && v.src == w.src && v_src_host == w.src_host))
        conflict = true;
    }
    std::int32_t code = 0;
    if (!in.known(v.op))
      code = 1;
    else if (!v.valid_slots)
      code = 2;
    else if (!v.valid_endpoint)
      code = 3;
    else if (conflict)
      code = 4;
    else if (v.tail && (v.page < 0 || v.page >= in.PAGES))
      code = 6;
    codes[static_cast<std::size_t>(r)] = code;
  }

  // Trailing pages, checked last, on the copies the main rules accepted.
  if (!in.trailing) return codes;
  for (std::int64_t r = 0; r < count; ++r)
    if (codes[static_cast<std::size_t>(r)] == 0 && in.moves_pages(in.op(r)))
      codes[static_cast<std::size_t>(r)] = trailing_code(in, r, 0);
  return codes;
}

void ContractOracle::apply(const OracleCommands& commands, const std::vector<std::int32_t>& codes, OracleMemory& memory,
                           std::vector<CachePage>* written) const {
  const Inputs in = read_inputs(geometry_, commands, memory);
  const OracleGeometry& g = geometry_;
  const std::int64_t RB = g.row_bytes, PT = in.PT;
  std::uint8_t* pool = memory.pool;

  std::vector<std::int64_t> acting;  // rows r < count with code 0
  for (std::int64_t r = 0; r < in.count && r < in.C; ++r)
    if (codes[static_cast<std::size_t>(r)] == 0) acting.push_back(r);

  // The row `row` of the tier `host` names.
  auto row_at = [&](bool host, std::int64_t row) { return (host ? memory.host : pool) + row * RB; };

  // §13: commits, decided on the state rows as validate() read them.
  std::vector<std::pair<std::int64_t, CommitView>> commits;
  for (std::int64_t r : acting)
    if (in.commit(in.op(r))) commits.emplace_back(r, commit_view(in, r));

  // 1. Rows: all bytes but the excluded regions (page regions included for tier
  //    moves); a copying commit copies its position row into its live row.
  for (std::int64_t r : acting) {
    const std::int32_t op = in.op(r);
    if (in.commit(op)) continue;
    std::uint8_t* dst = row_at(in.dst_in_host(op), in.dst(r));
    const std::uint8_t* src = in.reads(op) ? row_at(in.src_in_host(op), in.src(r)) : nullptr;
    for (std::int64_t b = 0; b < RB; ++b)
      if (copied_[static_cast<std::size_t>(b)]) dst[b] = src != nullptr ? src[b] : 0;
  }
  for (const auto& [r, c] : commits) {
    if (g.remap || c.a == 0) continue;
    for (std::int64_t b = 0; b < RB; ++b)
      if (copied_[static_cast<std::size_t>(b)]) pool[c.state * RB + b] = pool[c.position * RB + b];
  }

  // §14: a snapshot writes its prefix key into the destination row.
  if (g.key_offset >= 0)
    for (std::int64_t r : acting)
      if (in.op(r) == 0 && in.src(r) == in.state_row(in.slot(r))) {
        const std::int64_t key = in.command_key(r);
        std::memcpy(pool + in.dst(r) * RB + g.key_offset, &key, sizeof(key));
      }

  // A snapshot moves cache page -> destination row; a restore, source row -> cache page.
  auto move = [&](std::int64_t r, std::size_t cache, std::int64_t page, std::int64_t offset, std::int64_t nbytes) {
    std::uint8_t* cell = memory.caches[cache] + page * nbytes;
    const bool host = in.src_in_host(in.op(r));  // a restore from the host tier
    if (!host && in.src(r) == in.state_row(in.slot(r))) {
      std::memcpy(pool + in.dst(r) * RB + offset, cell, static_cast<std::size_t>(nbytes));
    } else {
      std::memcpy(cell, row_at(host, in.src(r)) + offset, static_cast<std::size_t>(nbytes));
      if (written != nullptr) written->push_back({static_cast<std::int32_t>(cache), page});
    }
  };

  // 2. Partial pages.
  for (std::int64_t r : acting) {
    const std::int64_t end = in.end(r);
    if (!in.moves_pages(in.op(r)) || end % PT == 0) continue;
    const std::int64_t page = in.table(in.slot(r), end / PT);
    for (std::size_t i = 0; i < g.page_bindings.size(); ++i)
      move(r, i, page, g.page_bindings[i].offset, g.page_bindings[i].nbytes);
  }

  // 3. Trailing pages, part 0 then part 1.
  for (int part = 0; part < 2 && in.trailing; ++part) {
    for (std::int64_t r : acting) {
      if (!in.moves_pages(in.op(r))) continue;
      const std::int64_t end = in.end(r);
      const std::int64_t t_logical = end / PT - 1 + part;
      if (!(end > 1 && t_logical >= 0 && (part == 0 || end % PT >= 2))) continue;
      const std::int64_t page = in.trailing_table(in.slot(r), t_logical);
      for (std::size_t i = 0; i < g.trailing_bindings.size(); ++i) {
        const OracleBinding& b = g.trailing_bindings[i];
        const std::int64_t half = b.nbytes / 2;
        move(r, g.page_bindings.size() + i, page, b.offset + part * half, half);
      }
    }
  }

  // §13: a remapping commit makes its position row the live row.
  for (const auto& [r, c] : commits) {
    if (!g.remap || c.a == 0) continue;
    const std::int64_t slot = in.slot(r);
    std::int64_t* rows = memory.state_rows + slot * memory.state_rows_stride;
    std::memcpy(rows, &c.position, sizeof(std::int64_t));
    std::memcpy(rows + c.a, &c.state, sizeof(std::int64_t));
  }
}

}  // namespace statexfer::test
