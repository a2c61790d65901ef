#ifndef STATEXFER_SIM_SHADOW_HPP
#define STATEXFER_SIM_SHADOW_HPP

// The host shadow of one rank's state (--verify): plain host copies of the pool,
// the caches and the request state, to which the simulator applies every step
// what the device should have done: SPEC §4 (the expected code of each command,
// read from the shadow's own state) and SPEC §5 (the writes of the commands
// whose code is 0), written here from the specification, sequentially, without
// Kokkos; and the model's fill jobs. The device is then compared with it byte
// for byte.

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "content.hpp"

namespace sim {

/// One command as the host builds it.
struct Command {
  std::int64_t slot = -1, src = -1, dst = -1;
  std::int32_t op = 0;
  std::int64_t end = -1;
};

struct ShadowGeometry {
  std::int64_t capacity = 0, rows = 0, row_bytes = 0, page_tokens = 1, width = 1;
  std::int64_t slots = 0, pages = 0;  // memory capacity {SLOTS, PAGES}
  std::int64_t consumed_offset = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> excluded;  // [begin, end) byte ranges of a row
  struct Binding {
    std::int64_t offset, nbytes;  // region in the row (trailing: two pages of nbytes / 2)
  };
  std::vector<Binding> pages_bound;     // cache i <-> page binding i
  std::vector<Binding> trailing_bound;  // cache pages_bound.size() + i <-> trailing binding i
  std::int64_t cache_pages = 0;
};

class Shadow {
 public:
  Shadow() = default;
  explicit Shadow(ShadowGeometry g) : g_(std::move(g)) {
    pool_.assign(static_cast<std::size_t>(g_.rows * g_.row_bytes), 0);
    for (const auto& b : g_.pages_bound) caches_.emplace_back(static_cast<std::size_t>(g_.cache_pages * b.nbytes), 0);
    for (const auto& b : g_.trailing_bound)
      caches_.emplace_back(static_cast<std::size_t>(g_.cache_pages * (b.nbytes / 2)), 0);
    request_consumed_.assign(static_cast<std::size_t>(g_.capacity), 0);
    state_rows_.assign(static_cast<std::size_t>(g_.capacity), 0);
    copied_.assign(static_cast<std::size_t>(g_.row_bytes), 1);
    for (const auto& [b, e] : g_.excluded)
      for (std::int64_t i = b; i < e; ++i) copied_[static_cast<std::size_t>(i)] = 0;
  }

  const ShadowGeometry& geometry() const { return g_; }
  std::vector<std::uint8_t>& pool() { return pool_; }
  std::vector<std::uint8_t>& cache(std::size_t i) { return caches_[i]; }
  std::size_t caches() const { return caches_.size(); }
  std::int64_t cache_page_bytes(std::size_t i) const {
    return i < g_.pages_bound.size() ? g_.pages_bound[i].nbytes : g_.trailing_bound[i - g_.pages_bound.size()].nbytes / 2;
  }
  std::vector<std::int64_t>& state_rows() { return state_rows_; }
  const std::vector<std::int64_t>& request_consumed() const { return request_consumed_; }

  /// SPEC §4: the code of every command row. `tables` and `trailing` are int32
  /// [C, W] row-major (trailing may be null without trailing bindings).
  std::vector<std::int32_t> validate(const std::vector<Command>& cmds, std::int32_t count, const std::int32_t* tables,
                                     const std::int32_t* trailing) const {
    const std::int64_t C = g_.capacity, PT = g_.page_tokens, W = g_.width, SLOTS = g_.slots, PAGES = g_.pages;
    std::vector<std::int32_t> codes(static_cast<std::size_t>(C), 0);
    auto cmd = [&](std::int64_t r) { return r < static_cast<std::int64_t>(cmds.size()) ? cmds[r] : Command{}; };
    auto state_of = [&](std::int64_t slot) { return (0 <= slot && slot < C) ? state_rows_[slot] : 0; };
    auto table = [&](const std::int32_t* t, std::int64_t slot, std::int64_t logical) { return t[slot * W + logical]; };
    if (count < 0 || count > C) {
      for (auto& c : codes) c = 5;
      return codes;
    }
    struct Other {
      std::int64_t src, dst, page;
      bool copy, restore, tail;
    };
    std::vector<Other> others(static_cast<std::size_t>(count));
    for (std::int64_t o = 0; o < count; ++o) {
      const Command c = cmd(o);
      Other& w = others[o];
      w.src = c.src;
      w.dst = c.dst;
      w.copy = c.op == 0;
      const bool slot_ok = 0 <= c.slot && c.slot < C;
      const std::int64_t state = state_of(c.slot);
      const bool snapshot = w.copy && c.src == state;
      w.restore = w.copy && c.dst == state;
      w.tail = (snapshot || w.restore) && c.end > 0 && c.end % PT != 0;
      const std::int64_t logical = w.tail ? c.end / PT : -1;
      w.page = (w.tail && slot_ok && 0 <= logical && logical < W) ? table(tables, c.slot, logical) : -1;
    }
    for (std::int64_t r = 0; r < count; ++r) {
      const Command c = cmd(r);
      const bool valid_slot = 0 <= c.slot && c.slot < C;
      const std::int64_t state = valid_slot ? state_rows_[c.slot] : 0;
      const bool valid_row = valid_slot && 0 < state && state < SLOTS;
      const bool snapshot = valid_row && c.src == state && 0 < c.dst && c.dst < SLOTS && c.src != c.dst;
      const bool restore = valid_row && c.dst == state && 0 < c.src && c.src < SLOTS && c.src != c.dst;
      const bool reset = valid_row && c.op == 1 && c.src == -1 && c.dst == state;
      const bool copying = c.op == 0;
      const bool valid_slots = (copying && (snapshot || restore)) || reset;
      const std::int64_t consumed = snapshot ? request_consumed_[c.slot]
                                    : (copying && 0 < c.src && c.src < SLOTS) ? row_consumed(c.src)
                                                                              : -1;
      const bool valid_endpoint = copying ? (c.end > 0 && c.end == consumed && c.end <= W * PT) : c.end == 0;
      const bool tail = copying && c.end > 0 && c.end % PT != 0;
      const std::int64_t logical = tail ? c.end / PT : -1;
      const std::int64_t page = (tail && valid_slots && 0 <= logical && logical < W) ? table(tables, c.slot, logical) : -1;
      bool conflict = false;
      for (std::int64_t o = 0; o < count && !conflict; ++o) {
        if (o == r) continue;
        const Other& w = others[o];
        conflict = c.dst == w.dst || (copying && c.src == w.dst) || (w.copy && c.dst == w.src) ||
                   (tail && w.tail && page >= 0 && page == w.page && (restore || w.restore));
      }
      std::int32_t code = 0;
      if (c.op != 0 && c.op != 1)
        code = 1;
      else if (!valid_slots)
        code = 2;
      else if (!valid_endpoint)
        code = 3;
      else if (conflict)
        code = 4;
      else if (tail && (page < 0 || page >= PAGES))
        code = 6;
      codes[r] = code;
    }
    if (g_.trailing_bound.empty() || trailing == nullptr) return codes;
    const std::vector<std::int32_t> main = codes;
    for (std::int64_t r = 0; r < count; ++r) {
      const Command c = cmd(r);
      if (main[r] != 0 || c.op != 0) continue;
      const bool snapshot = c.src == state_of(c.slot);
      for (int part = 0; part < 2; ++part) {
        const std::int64_t t_logical = c.end / PT + part - 1;
        const bool t_tail = c.end > 1 && t_logical >= 0 && (part == 0 || c.end % PT >= 2);
        const std::int64_t t_page = (t_tail && t_logical < W) ? table(trailing, c.slot, t_logical) : -1;
        bool conflict = false;
        for (std::int64_t o = 0; o < count; ++o) {
          const Command d = cmd(o);
          if (o == r || d.op != 0 || !(0 <= d.slot && d.slot < C)) continue;
          const bool o_snapshot = d.src == state_rows_[d.slot];
          for (int o_part = 0; o_part < 2; ++o_part) {
            if (d.end <= 1) continue;
            const std::int64_t o_logical = d.end / PT + o_part - 1;
            if (o_logical < 0 || o_logical >= W || (o_part == 1 && d.end % PT < 2)) continue;
            if (table(trailing, d.slot, o_logical) == t_page && !(snapshot && o_snapshot)) conflict = true;
          }
        }
        if (t_tail && (t_page < 0 || t_page >= PAGES)) codes[r] = 6;
        if (t_tail && conflict) codes[r] = 4;
      }
    }
    return codes;
  }

  /// SPEC §5: the writes of the commands whose code is 0, in order. Pages of
  /// the caches it writes (restores) are added to `touched` as (cache, page).
  void apply(const std::vector<Command>& cmds, std::int32_t count, const std::vector<std::int32_t>& codes,
             const std::int32_t* tables, const std::int32_t* trailing,
             std::vector<std::pair<std::int32_t, std::int64_t>>* touched) {
    const std::int64_t RB = g_.row_bytes, PT = g_.page_tokens, W = g_.width;
    std::vector<std::int64_t> acting;
    for (std::int64_t r = 0; r < count && r < static_cast<std::int64_t>(cmds.size()); ++r)
      if (codes[r] == 0) acting.push_back(r);
    // 1. Rows.
    for (std::int64_t r : acting) {
      const Command& c = cmds[r];
      std::uint8_t* dst = &pool_[c.dst * RB];
      for (std::int64_t b = 0; b < RB; ++b)
        if (copied_[b]) dst[b] = c.op == 0 ? pool_[c.src * RB + b] : 0;
    }
    auto move = [&](const Command& c, std::size_t cache, std::int64_t page, std::int64_t offset, std::int64_t nbytes) {
      std::uint8_t* cell = &caches_[cache][page * nbytes];
      if (c.src == state_rows_[c.slot]) {
        std::memcpy(&pool_[c.dst * RB + offset], cell, static_cast<std::size_t>(nbytes));
      } else {
        std::memcpy(cell, &pool_[c.src * RB + offset], static_cast<std::size_t>(nbytes));
        if (touched) touched->emplace_back(static_cast<std::int32_t>(cache), page);
      }
    };
    // 2. Partial pages.
    for (std::int64_t r : acting) {
      const Command& c = cmds[r];
      if (c.op != 0 || c.end % PT == 0) continue;
      const std::int64_t page = tables[c.slot * W + c.end / PT];
      for (std::size_t i = 0; i < g_.pages_bound.size(); ++i)
        move(c, i, page, g_.pages_bound[i].offset, g_.pages_bound[i].nbytes);
    }
    // 3. Trailing pages, part 0 then part 1.
    for (int part = 0; part < 2 && !g_.trailing_bound.empty(); ++part)
      for (std::int64_t r : acting) {
        const Command& c = cmds[r];
        if (c.op != 0) continue;
        const std::int64_t t_logical = c.end / PT + part - 1;
        if (!(c.end > 1 && t_logical >= 0 && (part == 0 || c.end % PT >= 2))) continue;
        const std::int64_t page = trailing[c.slot * W + t_logical];
        for (std::size_t i = 0; i < g_.trailing_bound.size(); ++i) {
          const auto& b = g_.trailing_bound[i];
          move(c, g_.pages_bound.size() + i, page, b.offset + part * (b.nbytes / 2), b.nbytes / 2);
        }
      }
  }

  /// The model's writes (the same jobs the device kernel runs).
  void run_jobs(const FillJob* jobs, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      const FillJob& j = jobs[i];
      std::uint8_t* base = target(j.target);
      if (j.set64) {
        set_int64(base, j);
      } else {
        const std::int64_t words = fill_words(j);
        for (std::int64_t k = 0; k < words; ++k) fill_word(base, j, k);
      }
    }
  }

  std::int64_t row_consumed(std::int64_t row) const {
    std::int64_t v;
    std::memcpy(&v, &pool_[row * g_.row_bytes + g_.consumed_offset], sizeof v);
    return v;
  }

 private:
  std::uint8_t* target(std::int32_t t) {
    if (t == 0) return pool_.data();
    if (t <= static_cast<std::int32_t>(caches_.size())) return caches_[t - 1].data();
    return reinterpret_cast<std::uint8_t*>(request_consumed_.data());
  }

  ShadowGeometry g_;
  std::vector<std::uint8_t> pool_;
  std::vector<std::vector<std::uint8_t>> caches_;
  std::vector<std::int64_t> request_consumed_;  // column 0 of the [C, 1] request state
  std::vector<std::int64_t> state_rows_;        // column 0 of state_rows
  std::vector<std::uint8_t> copied_;             // row bytes outside the excluded regions
};

}  // namespace sim

#endif
